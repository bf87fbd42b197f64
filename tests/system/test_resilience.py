"""No datagram lost, no row leaked: more accelerated sockets than ICT rows,
a link that goes down and up under traffic, churn of sockets and processes
killed mid-send. Peers are the NIC model's own echo peer (virtual clock)."""
import os
import re
import statistics
import sys
import time

import pytest

import accio

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "eval"))
import wirecap  # noqa: E402

TIMEOUT = 400
# `make soak` runs these tests at SOAK times their counts
SOAK = int(os.environ.get("ACCIO_SOAK", "1"))
PRELOAD = "LD_PRELOAD=/usr/lib/libaccio.so"
SYSFS = "/sys/bus/platform/drivers/accio-uncore/11000000.accio"


def kv(text):
    return dict(re.findall(r"(\w+)=(-?\d+)", text))


def test_4096_connections_on_64_rows_with_content_checks():
    """4096 connected sockets in one process, accelerated by libaccio, on an
    ICT of 64 rows: rows change hands thousands of times, every datagram
    comes back intact on its own socket, and afterwards every row and every
    connection is gone."""
    rounds = 2 * SOAK
    cmd = (f"{PRELOAD} ACCIO_RING_BYTES=4096 udp_conns -p 7 -N 4096 -r {rounds} -w 256 -S 7;"
           f" echo rc=$?; for f in rows rows_used connections installs evictions; do"
           f" echo $f=$(cat {SYSFS}/$f); done")
    r = accio.run(cmd, icount=4, wire="echo:20000", timeout=TIMEOUT * SOAK)
    assert r.rc == 0, r.output + r.console[-2000:]
    d = 4096 * rounds
    assert f"sockets=4096 rounds={rounds} datagrams={d} ok={d} bad=0 lost=0" in r.output, \
        r.output
    res = kv(r.output)
    assert res["rc"] == "0" and res["rows"] == "64", r.output
    # every socket had a row at some point, most of them several times
    assert int(res["installs"]) >= 4096 and int(res["evictions"]) >= 4096 - 64, r.output
    assert res["rows_used"] == "0" and res["connections"] == "0", r.output


def test_more_sockets_than_rows_in_several_processes():
    """Four processes of 100 sockets each share 64 rows: the ASID check
    still tells them apart (a row that changes hands admits only its new
    owner), and nobody's datagrams are lost or mixed up."""
    cmd = (f"for i in 1 2 3 4; do {PRELOAD} ACCIO_RING_BYTES=4096 "
           f"udp_conns -p 7 -N 100 -r 3 -w 50 -S $i > /tmp/c.$i 2>&1 & done; wait;"
           f" cat /tmp/c.*; echo prot=$(grep -o 'protection [0-9]*' {SYSFS}/events);"
           f" echo rows_used=$(cat {SYSFS}/rows_used) connections=$(cat {SYSFS}/connections)")
    r = accio.run(cmd, icount=4, wire="echo:20000", timeout=TIMEOUT)
    assert r.rc == 0, r.output + r.console[-2000:]
    assert r.output.count("sockets=100 rounds=3 datagrams=300 ok=300 bad=0 lost=0") == 4, \
        r.output
    assert "prot=protection 0" in r.output, r.output
    assert "rows_used=0 connections=0" in r.output, r.output


def test_idle_receivers_beyond_the_rows_do_not_churn_them():
    """128 receivers poll 128 accelerated sockets on 64 rows with nothing on
    the wire: a receiver whose row was taken waits on its socket instead of
    taking a row back at once, which evicted another waiting receiver, which
    did the same (about 12,000 evictions a second before). Once all are up,
    no row changes hands, and a datagram to any of them still arrives."""
    cmd = ("for i in $(seq 128); do "
           f"{PRELOAD} udp_sink -p $((9000 + i)) -n 1 -t 20000 > /tmp/s.$i 2>&1 & done; "
           f"sleep 4; echo a=$(cat {SYSFS}/evictions) conns=$(cat {SYSFS}/connections); "
           f"sleep 2; echo b=$(cat {SYSFS}/evictions) installs=$(cat {SYSFS}/installs); "
           # one datagram each, from a socket of the kernel's: every sink ends
           "for i in $(seq 128); do udp_sink -c 10.0.2.15 -p $((9000 + i)) -n 1 -s 8 "
           "> /dev/null; done; wait; cat /tmp/s.* | grep -c '^datagrams=1 '")
    r = accio.run(cmd, icount=4, wire="echo:20000", timeout=TIMEOUT)
    assert r.rc == 0, r.output + r.console[-2000:]
    res = kv(r.output)
    assert res["conns"] == "128", r.output
    # 64 connections lost their row once, to the other 64; none since
    assert int(res["a"]) <= 128 and res["b"] == res["a"], r.output
    assert int(res["installs"]) <= 256, r.output
    assert re.search(r"^128$", r.output, re.M), r.output


# The fair share of a turn: T clients with one request each on H harts, a
# round trip costing C instructions of the whole SoC (both sides of the
# client, wake-up, switch, the row's install and the victim's eviction),
# at 16 ns an instruction (icount shift 4). C = 40,000 bounds what a round
# trip costs with 256 clients on 64 rows (eval/breakdown.py --multi 256:
# about 23,000 with one row mutex, fewer with a lock per connection).
FAIR_C, FAIR_H, NS_PER_INSN = 40000, 4, 16


def fair_turn_ms(t):
    return t * FAIR_C / FAIR_H * NS_PER_INSN / 1e6


def test_256_clients_on_64_rows_share_the_harts_fairly(tmp_path):
    """256 blocking ping-pong clients, 64 per hart (udp_multi -a), on 64
    rows: nearly every round trip installs its connection's row and evicts
    another's. Nothing is lost and every reply is checked; the clients share
    the harts (Jain's index over their round trips while all ran >= 0.9);
    the turnaround on the wire (a reply's arrival to the same client's next
    request) stays within 1.25 fair-share turns (T x C / H, above) for 99 %
    of the round trips and within 8 for every one. With a remote TLB fence
    and one mutex for every install (no local victims first, no lock per
    connection) the p99 was 1.57 turns and the longest 5.55, at 7,448 round
    trips a second (with them: 0.68 and 4.86, at 15,897).
    Every third client starts on another hart and moves to its own at the
    release (udp_multi --move 3), as a process the kernel migrated once:
    its row would need a remote TLB flush to take. Its round trips must
    cost as much CPU time as the others' (>= 0.8x the median). A clock
    that never took such a row while a local one was left let the moved
    clients keep their rows, 240 against 369 us of CPU per round trip
    (0.65x), Jain 0.865 at 11,568 round trips a second (passing over it
    once per install: 258 and 257 us, 0.966, 15,823)."""
    t, n, move = 256, 40, 3
    pcap = str(tmp_path / "wire.pcap")
    cmd = (f"{PRELOAD} udp_multi -a --move {move} -T {t} -o /tmp/pp -n {n} -m 64 -p 7 -t 1000; "
           f"echo rc=$?; echo evictions=$(cat {SYSFS}/evictions); "
           f"echo checked=$(cat /tmp/pp.* | grep -c 'datagrams={n} bad=0$') "
           f"clean=$(cat /tmp/pp.* | grep -c '^lost=0$'); grep -H cpu_self_us /tmp/pp.*")
    r = accio.run(cmd, icount=4, wire="echo:20000", timeout=TIMEOUT, pcap=pcap)
    assert r.rc == 0, r.output + r.console[-2000:]
    res = kv(r.output)
    assert res["rc"] == "0" and res["checked"] == str(t) and res["clean"] == str(t), r.output
    # the rows changed hands about once per round trip (warm-up included)
    assert int(res["evictions"]) >= t * n // 2, r.output
    frames = wirecap.read_pcap(pcap)
    fair = wirecap.fairness(frames, skip=10)
    assert fair["flows"] == t and fair["jain"] >= 0.9, fair
    turn = sorted(x for f in wirecap.flows(frames, skip=10).values() for x in f["turn"])
    assert len(turn) == t * (n - 1), len(turn)
    share = fair_turn_ms(t)
    p99, worst = turn[len(turn) * 99 // 100] / 1e6, turn[-1] / 1e6
    assert p99 <= 1.25 * share and worst <= 8 * share, (p99, worst, share, fair)
    # every client's round trips cost about the same CPU time, the moved
    # ones' too (CFS shares CPU time: a cheaper round trip is a more
    # frequent one)
    cpu = {int(i): float(us) / n for i, us in
           re.findall(r"^/tmp/pp\.(\d+):cpu_self_us=([\d.]+)$", r.output, re.M)}
    assert len(cpu) == t, r.output
    moved = statistics.median(v for i, v in cpu.items() if i % move == 0)
    rest = statistics.median(v for i, v in cpu.items() if i % move)
    assert moved >= 0.8 * rest, (moved, rest)


@pytest.mark.slow
def test_a_starved_client_still_takes_the_reply_its_timeout_outlived():
    """1,024 ping-pong clients on 4 harts and 64 rows, each receive with a
    timeout of 20 ms (SO_RCVTIMEO), about one client's fair turn (1,024 x
    1,250 instructions / 4 harts at 62.5 MIPS): a client that did not run
    for longer than its timeout (a busy hart) must still take the reply
    that came meanwhile, as a receive on Linux sockets does, instead of
    reporting it lost. The run shows that clients did wait that long:
    at least half of them had a round trip over the timeout (in one run
    all 1,024, their longest 62 to 775 ms), every reply taken. (Before
    libaccio took a last look past the deadline, one client of a run with
    a 1 s timeout reported lost a reply that had sat in its ring for 7 s;
    since the wake-ups are fair, the longest round trip of this run is
    under 1 s, so the 20 ms timeout.)"""
    timeout_ms = 20
    cmd = (f"{PRELOAD} udp_multi -T 1024 -o /tmp/pp -n 100 -m 64 -p 7 -t {timeout_ms}; "
           "cat /tmp/pp.* | grep -c '^lost=0$'; cat /tmp/pp.* | grep '^rtt_max_us='; "
           "cat /tmp/pp.* | grep -E '^(lost=[1-9]|diag )' | head -40")
    # about 150 s of wall time on an idle host core, in virtual time: the
    # limit is there for a hang, not as a speed bound
    r = accio.run(cmd, icount=4, wire="echo:20000", timeout=3 * TIMEOUT)
    assert r.rc == 0, r.output + r.console[-2000:]
    assert re.search(r"^1024$", r.output, re.M), r.output
    worst = [float(x) for x in re.findall(r"^rtt_max_us=([\d.]+)$", r.output, re.M)]
    assert len(worst) == 1024, r.output[-3000:]
    # clients whose longest round trip outlived the receive's timeout
    late = sum(w > timeout_ms * 1000 for w in worst)
    assert late >= 512, (late, sorted(worst)[:10])


def nic_client(qmp):
    m = re.search(r"(\S+): index=\d+,type=nic", qmp.hmp("info network"))
    assert m, qmp.hmp("info network")
    return m.group(1)


def test_link_flap_during_a_pingpong_loses_nothing():
    """The link goes down and up three times (QMP set_link) while an
    accelerated ping-pong runs: the engine holds the row's TX ring while
    the link is down and the peer keeps its answers; every round trip
    completes, none is lost or counted as dropped for a down link, and all
    traffic stays on the row's rings (nothing fell back to the kernel)."""
    # No receive timeout: while the guest idles with the link down, its
    # virtual clock runs far ahead of real time (icount), so any timeout
    # would expire; a datagram really lost hangs the run and fails it.
    n, flaps_wanted = 40000 * SOAK, 3 * SOAK
    cmd = (f"echo PP-GO; ACCIO_STATS=1 {PRELOAD} udp_pingpong -n {n} -w 0 -p 7 -m 64 2>&1;"
           f" echo PP-DONE; ethstat eth0 | grep -i link; grep -o 'link_[a-z]* [0-9]*' {SYSFS}/events")
    s = accio.Session(cmd, icount=4, wire="echo:20000")
    flaps = 0
    try:
        assert s.started(), s.guest.console()[-3000:]
        assert s.guest.wait_console("PP-GO", 0, 60)
        q = accio.QMP(s.guest.qmp_path)
        try:
            name = nic_client(q)
            for _ in range(flaps_wanted):
                time.sleep(0.3)
                if "PP-DONE" in s.guest.console():
                    break
                q.cmd("set_link", name=name, up=False)
                time.sleep(0.3)
                q.cmd("set_link", name=name, up=True)
                flaps += 1
        finally:
            q.close()
    finally:
        r = s.finish(timeout=180 * SOAK, log_name="link-flap.log")
    assert r.rc == 0, r.output + r.console[-2000:]
    assert flaps == flaps_wanted, "the ping-pong ended before three flaps: make it longer\n" + r.output
    # the flaps fell inside the run: three round trips waited for the link
    # (the virtual clock runs ahead while the guest idles, hence seconds)
    held = sum(int(c) for b, c in re.findall(r"hist_us_(\d+)=(\d+)", r.output)
               if int(b) >= 1 << 20)
    assert held >= flaps_wanted, r.output
    assert f"size=64 datagrams={n} bad=0" in r.output, r.output
    st = kv(r.output)
    assert st["rx_ring"] == str(n) and st["tx_ring"] == str(n), r.output
    assert st["rx_kernel"] == "0" and st["tx_kernel"] == "0", r.output
    assert f"link_down {flaps}" in r.output and f"link_up {flaps}" in r.output, r.output
    assert re.search(r"tx_drop_linkdown\D+0\b", r.output), r.output


def test_socket_churn_and_kills_leak_nothing():
    """1000 sockets opened, accelerated, used and closed one after another,
    then 20 processes killed with SIGKILL while sending: every echo comes
    back, and afterwards no row, no connection and no ring memory is left."""
    cycles, kills = 1000 * SOAK, 20 * SOAK
    cmd = f"accio_selftest churn 10.0.2.2 7 {cycles} {kills}"
    r = accio.run(cmd, icount=4, wire="echo:20000", timeout=TIMEOUT * SOAK)
    assert r.rc == 0, r.output + r.console[-2000:]
    assert (f"cycles={cycles} accelerate_failed=0 echoed={cycles} kills={kills} "
            f"killed={kills}") in r.output, r.output
    assert "before rows_used=0 connections=0" in r.output, r.output
    assert "after rows_used=0 connections=0" in r.output, r.output
    res = kv(r.output)
    # rings are 128 KiB a socket: 32 sockets' worth leaked in 1000 cycles
    # would show (a per-cycle leak of anything a page or larger, too)
    leaked = int(res["mem_free_kb_before"]) - int(res["mem_free_kb_after"])
    assert leaked < 4096, r.output


def test_ioctl_and_mmap_surface_fuzzed_from_the_guest():
    """accio_fuzz: a fixed-seed random sequence of SIOCACCIO with good and
    bad structures, mmap of good and bad offsets and sizes, loads and stores
    to the row page (kernel-only fields included), waits, routes, unknown
    ioctls, poll, a thread closing a row fd while another waits on it, and
    forked children using inherited row fds or killed mid-call. The kernel
    refuses what is wrong, stays up, logs no warning, and leaks no row."""
    cmd = (f"accio_fuzz -n {3000 * SOAK} -s 1; echo rc=$?; sleep 1;"
           f" echo rows_used=$(cat {SYSFS}/rows_used) connections=$(cat {SYSFS}/connections)")
    r = accio.run(cmd, icount=4, wire="echo:20000", timeout=TIMEOUT * SOAK)
    assert r.rc == 0, r.output + r.console[-2000:]
    m = re.search(r"ops=(\d+) ok=(\d+) refused=(\d+)", r.output)
    assert m and int(m.group(1)) == 3000 * SOAK, r.output
    # both kinds of outcome occurred: the sequence reached the kernel's checks
    assert int(m.group(2)) > 200 * SOAK and int(m.group(3)) > 200 * SOAK, r.output
    assert "rc=0" in r.output and "rows_used=0 connections=0" in r.output, r.output
    bad = re.findall(r"(BUG|Oops|WARNING|Call Trace|Unable to handle).*", r.console)
    assert not bad, r.console[-4000:]
