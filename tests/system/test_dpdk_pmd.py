"""DPDK's own poll-mode driver of the Accio NIC (net_accio, apps/dpdk/net_accio)
on DPDK 22.11 built from Debian's source (scripts/build-dpdk.sh): the NIC is
handed to user space through UIO (the kernel's accio-nic-uio, bound with
driver_override by accio-nic-uio.sh), DPDK posts its hugepage mbufs to the
NIC by physical address, and no kernel is on the data path. Between two
SoCs on one wire; the other SoC runs Linux sockets."""
import os
import re

import pytest

import sys

import accio
from conftest import ROOT, part_unavailable, run_breakdown
from dpdkcommon import echo_client, run_dispatcher

sys.path.insert(0, os.path.join(ROOT, "eval"))
import wirecap  # noqa: E402

TIMEOUT = 500
TREE = os.path.join(ROOT, "build", "apps", "dpdk-pmd", "opt", "dpdk")
ADD = [(TREE, "/opt/dpdk")]
PKGS = accio.read_pkg_list(os.path.join(ROOT, "buildroot-config", "dpdk-pmd-packages.txt"))
BIN = "/opt/dpdk/bin"
PMD = "-d /opt/dpdk/lib/accio/librte_net_accio.so"
EAL = f"--no-pci --in-memory {PMD} --vdev net_accio0"
EAL_SHARED = f"{PMD} --vdev net_accio0"      # multi-process: no --in-memory
HUGE = ("mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages && "
        "echo 64 > /proc/sys/vm/nr_hugepages")
# the NIC to user space: prints its UIO device
TO_UIO = f"{BIN}/accio-nic-uio.sh uio"
CTRL = "devmem 0x10200008 64"      # the NIC's CTRL register (bit 0: ENABLE)


def pmd_unavailable():
    """Why the DPDK tree with net_accio was not built, or None."""
    why = part_unavailable("dpdk-pmd-unavailable",
                           "DPDK 22.11 could not be built from Debian's source: ")
    if why is None and not os.path.exists(os.path.join(TREE, "lib", "accio",
                                                       "librte_net_accio.so")):
        why = "build/apps/dpdk-pmd has no net_accio (make image)"
    return why


pytestmark = pytest.mark.skipif(pmd_unavailable() is not None, reason=str(pmd_unavailable()))


def test_pmd_testpmd_forwards_between_two_socs():
    """dpdk-testpmd on net_accio swaps each frame's addresses and ports
    (5tswap) and sends it back; the other SoC's Linux echo client checks
    every byte of 300 datagrams of 16..1472 B; testpmd's port statistics
    come from the PMD (RX and TX counted, no error, nothing missed)."""
    server = (f"{HUGE} && {TO_UIO} && sleep 1000 | LD_LIBRARY_PATH=/opt/dpdk/lib "
              f"{BIN}/dpdk-testpmd -l 0,1 {EAL} -- --forward-mode=5tswap --auto-start "
              "--rxd=64 --txd=64 --total-num-mbufs=4096 --stats-period 1")
    client = "arp -s 10.0.3.1 52:54:00:ac:c1:01 && " + echo_client(300)
    rs, rc = accio.run_pair(server, client, pkgs=PKGS, add=ADD, timeout=TIMEOUT, grace=3)
    assert rc.rc == 0 and "echo_rc=0" in rc.output, rc.output + "\n--server--\n" + rs.output
    assert "ok=300" in rc.output and "bad=0" in rc.output, rc.output
    out = rs.output
    assert "/dev/uio0" in out, out
    assert re.search(r"Port 0: .*52:54:00:AC:C1:01", out, re.I), out
    rx = [int(x) for x in re.findall(r"RX-packets:\s*(\d+)", out)]
    tx = [int(x) for x in re.findall(r"TX-packets:\s*(\d+)", out)]
    assert rx and tx and max(rx) >= 301 and max(tx) >= 301, out[-3000:]
    missed = [int(x) for x in re.findall(r"RX-missed:\s*(\d+)", out)]
    errs = [int(x) for x in re.findall(r"TX-errors:\s*(\d+)", out)]
    assert missed and max(missed) == 0 and errs and max(errs) == 0, out[-3000:]


def test_pmd_pingpong_with_nic_timestamps_then_the_kernel_takes_the_nic_back():
    """dpdk_pingpong on net_accio against a Linux udp_echo on the other SoC:
    every echo checked, and each round trip has both NIC timestamps (RX
    offload and timesync's TX stamp), so the client's processing time is
    exact. Then the NIC goes back to the kernel's netdev driver and Linux
    sockets on it work again."""
    server = "udp_echo -p 7000"
    pp = f"{BIN}/dpdk_pingpong -l 1 {EAL} -- -s 10.0.3.1 -l 10.0.3.2 -p 7000"
    client = (f"{HUGE} && {TO_UIO} && {pp} -m 64 -n 300 -q; echo pp64_rc=$?; "
              f"{pp} -m 1400 -n 100 -q; echo pp1400_rc=$?; "
              f"echo ctrl_after=$({CTRL}); "
              f"{BIN}/accio-nic-uio.sh kernel && ip addr add 10.0.3.2/24 dev eth0 && "
              "ip link set eth0 up && sleep 1 && "
              "udp_echo_client -s 10.0.3.1 -p 7000 -n 50 -m 16 -M 1472 -t 2000 -r 2 -q; "
              "echo kernel_rc=$?")
    rs, rc = accio.run_pair(server, client, pkgs=PKGS, add=ADD, timeout=TIMEOUT)
    out = rc.output
    assert rc.rc == 0, out + rc.console[-2000:]
    assert "pp64_rc=0" in out and "pp1400_rc=0" in out, out
    assert "size=64 datagrams=300 bad=0" in out and "size=1400 datagrams=100 bad=0" in out, out
    # every round trip had both NIC stamps; processing is RTT_sw - RTT_hw
    samples = [int(x) for x in re.findall(r"^hw_samples=(\d+)", out, re.M)]
    assert samples == [300, 100], out
    p50 = [float(x) for x in re.findall(r"^proc_p50_us=(\S+)", out, re.M)]
    hw = [float(x) for x in re.findall(r"^rtt_hw_avg_us=(\S+)", out, re.M)]
    rtt = [float(x) for x in re.findall(r"^rtt_p50_us=(\S+)", out, re.M)]
    assert all(0 < x for x in p50) and all(0 < x for x in hw), out
    assert all(p < r for p, r in zip(p50, rtt)), out
    # the PMD stopped the NIC when it closed the port
    assert re.search(r"^ctrl_after=0x0+$", out, re.M), out
    assert "kernel_rc=0" in out and "ok=50" in out, out


def test_pmd_dispatcher_hands_datagrams_to_four_worker_processes():
    """The multiplexing design on net_accio: the dispatcher (EAL primary)
    owns the NIC, hands datagrams round-robin to 4 worker processes through
    rte_rings in shared hugepage memory (the workers attach to the port as
    secondaries but move no frame); every byte of 400 datagrams checked by
    the other SoC's Linux echo client, each worker echoed its quarter."""
    run_dispatcher(f"{HUGE} && {TO_UIO}", f"{BIN}/dpdk_dispatch", f"--no-pci {EAL_SHARED}",
                   f"--no-pci {PMD}", PKGS, ADD, TIMEOUT)


def test_pmd_dispatcher_with_four_client_workers_measured_on_the_wire(tmp_path):
    """The multiplexing design as clients (eval's multiplexing experiment):
    the dispatcher owns net_accio, resolves the server by ARP and hands
    each reply to the worker whose port it is for; 4 worker processes each
    make 100 checked round trips to the NIC model's wire peer (deterministic
    time). The wire capture shows 4 client flows, each request answered
    after the peer's 20 µs, and each client's turnaround. Workers wait for
    their replies asleep (a futex the dispatcher wakes)."""
    pcap = str(tmp_path / "wire.pcap")
    d = f"{BIN}/dpdk_dispatch"
    cmd = (f"{HUGE} && {TO_UIO} > /dev/null && "
           f"({d} -l 0 --no-pci {EAL_SHARED} -- -T 4 -l 10.0.2.15 -c 10.0.2.2 > /tmp/d.out 2>&1;"
           " echo dispatch_rc=$? >> /tmp/d.out) & "
           "for i in $(seq 100); do grep -q 'dispatcher ready' /tmp/d.out && break; sleep 0.2; done; "
           f"for w in 0 1 2 3; do {d} --proc-type=secondary --no-pci {PMD} "
           "--lcores=$((w + 1))@$((w % 3 + 1)) -- -w $w -p 7 -n 100 -m 64 > /tmp/w$w.out 2>&1 & "
           "done; wait; grep -hv '^EAL:\\|^TELEMETRY:' /tmp/d.out /tmp/w*.out")
    r = accio.run(cmd, icount=4, wire="echo:20000", pkgs=PKGS, add=ADD, timeout=TIMEOUT,
                  pcap=pcap)
    out = r.output
    assert r.rc == 0 and "dispatch_rc=0" in out and "workers_ready=4" in out, out
    for w in range(4):
        assert re.search(rf"^worker={w} size=64 datagrams=100 bad=0\nlost=0$", out, re.M), out
    # each worker's 100 replies handed to it, 400 requests sent for them
    handed = [int(x) for x in re.findall(r"^handed_w\d=(\d+) ", out, re.M)]
    assert handed == [100] * 4 and "sent=400 other=0 ring_full=0" in out, out
    # a worker waiting for its reply sleeps on its futex: the dispatcher
    # woke each one for most of its replies (a reply can come while the
    # worker is still about to sleep), never more often than it handed one
    wakeups = [int(x) for x in re.findall(r" wakeups_w\d=(\d+)$", out, re.M)]
    assert len(wakeups) == 4 and all(50 <= x <= 100 for x in wakeups), out
    fl = wirecap.flows(wirecap.read_pcap(pcap))
    assert sorted(fl) == [20000, 20001, 20002, 20003], sorted(fl)
    for port, f in fl.items():
        hw = wirecap.summary(f["rtt"])
        assert hw["n"] == 100 and 20.0 <= hw["p50"] and hw["p99"] < 200, (port, hw)
        turn = wirecap.summary(f["turn"])
        assert turn["n"] == 99 and turn["p50"] > 0, (port, turn)


def test_pmd_round_trip_breakdown_counts_the_driver_and_skips_the_empty_polls(tmp_path):
    """eval/breakdown.py --modes dpdk: dpdk_pingpong -W on net_accio against
    the wire peer (virtual time). Each round trip is one counted window; the
    empty polls are left out (one pause per round trip, on
    rte_eth_rx_queue_count, which the PMD answers from the NIC's count of
    waiting completions), the poll that takes the reply is counted. The work
    is user space's: the PMD's bursts, the program's frame building, no
    system call and no socket layer; the NIC's registers are reached
    directly, two stores per round trip (the send request and the receive
    buffer posted again), nothing of the uncore."""
    d = run_breakdown(tmp_path, "--count", "40", "--modes", "dpdk",
                      "--peer", "wire:20000")["results"]["dpdk"]
    assert d["windows"] == 40 and d["busy_waits_skipped"] >= 40, d
    st = d["stages"]
    assert st["DPDK PMD (net_accio)"] > 20 and st["app"] > 20, st
    assert st["libaccio send"] == 0 and st["libaccio receive"] == 0
    assert st["socket layer"] == 0 and st["UDP/IP"] == 0, st
    assert st["syscall/trap entry+exit"] < 20, st
    # without the pause every empty poll (a register read and a few dozen
    # instructions, hundreds per 20 us wait) would count
    assert d["instructions_per_round_trip"] < 2000, d["instructions_per_round_trip"]
    nic = {k: v for k, v in d["mmio"].items() if k.startswith("nic ")}
    assert nic and not any(k.startswith("uncore ") for k in d["mmio"]), d["mmio"]
    assert round(sum(v[1] for v in nic.values()), 6) == 2, nic
    # the wait ends when the reply is there: a count stuck at 0 would wait
    # out dpdk_pingpong's 2 s reply timeout every time
    assert 0 < float(d["measured"]["proc_p50_us"]) < 100, d["measured"]


def test_pmd_bad_input_gives_clear_errors_and_a_killed_process_stops_the_nic():
    """net_accio's refusals name the problem and nothing hangs: no NIC bound
    to UIO, a bad uio= argument, no hugepages (IOVAs are not physical). A
    DPDK process killed with SIGKILL while the NIC is enabled leaves it
    disabled (the UIO driver's release), and the next run works."""
    pp = f"{BIN}/dpdk_pingpong -l 1"
    args = "-- -s 10.0.2.2 -l 10.0.2.15 -n 5"
    client = (
        f"{HUGE}; "
        f"{pp} {EAL} {args}; echo nouio_rc=$?; "
        f"{TO_UIO}; "
        f"{pp} --no-pci --in-memory {PMD} --vdev net_accio0,uio=/etc/passwd {args}; "
        "echo badarg_rc=$?; "
        f"{pp} --no-pci --in-memory {PMD} --vdev net_accio0,uio=/dev/uio7 {args}; "
        "echo nodev_rc=$?; "
        f"{pp} --no-huge --no-pci {PMD} --vdev net_accio0 {args}; echo nohuge_rc=$?; "
        # a run that spins waiting for ARP replies that never come (no peer
        # on this wire at 10.0.2.99), killed while the NIC is enabled
        f"({pp} {EAL} -- -s 10.0.2.99 -l 10.0.2.15 > /tmp/k.out 2>&1 &); "
        f"for i in $(seq 50); do v=$({CTRL}); [ \"$v\" != 0x0000000000000000 ] && break; "
        "sleep 0.1; done; echo ctrl_running=$v; "
        "pkill -9 dpdk_pingpong; sleep 1; "
        f"echo ctrl_killed=$({CTRL}); "
        f"{pp} {EAL} -- -s 10.0.2.2 -l 10.0.2.15 -n 20 -q; echo again_rc=$?")
    r = accio.run(client, pkgs=PKGS, add=ADD, timeout=TIMEOUT)
    out = r.output
    assert r.rc == 0, out
    assert "nouio_rc=2" in out and "no Accio NIC is bound to UIO" in out, out
    assert "badarg_rc=2" in out and "uio= takes a /dev/uioN path" in out, out
    assert "nodev_rc=2" in out and "/dev/uio7 is not the UIO device of an Accio NIC" in out, out
    assert "nohuge_rc=2" in out and "IOVAs are not physical" in out, out
    assert re.search(r"^ctrl_running=0x0*[1-9a-f][0-9a-f]*$", out, re.M), out
    assert re.search(r"^ctrl_killed=0x0+$", out, re.M), out
    # the user-mode network's gateway answers ARP but has no echo server:
    # the port came up again and resolved the peer
    assert "again_rc=2" in out and "no echo from the server" in out, out


def test_pmd_dispatcher_serves_four_clients_faster_than_one(tmp_path):
    """The paper's dispatcher design (dispatcher + rings + sleeping worker
    processes, eval's multiplexing experiment): four clients get more
    round trips a second, all together, than one. The dispatcher's wake-up
    of a sleeping worker is a system call that wakes a task on another
    hart; with IPIs through the firmware (ACCIO_IPI=sbi) each one cost the
    dispatcher thousands of instructions (measured: 5,086 round trips/s at
    T=1, 9,047 at T=4, 9,320 at T=16); with the SSWI it is a store (7,735,
    20,466, 23,087)."""
    import experiments
    rates = {}
    for t in (1, 4):
        pcap = str(tmp_path / f"t{t}.pcap")
        r = accio.run(experiments.pmd_dispatch_clients(t, 100), icount=4, wire="echo:20000",
                      pkgs=PKGS, add=ADD, timeout=TIMEOUT, pcap=pcap)
        assert r.rc == 0 and "dispatch_rc=0" in r.output, r.output[-3000:]
        assert len(re.findall(r"^worker=\d+ size=64 datagrams=100 bad=0$", r.output, re.M)) == t
        fair = wirecap.fairness(wirecap.read_pcap(pcap))
        assert fair["flows"] == t, fair
        rates[t] = fair["round_trips_per_s"]
    assert rates[4] > 2.2 * rates[1], rates
