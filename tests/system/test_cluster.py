"""N SoCs on a switched network (accio cluster, tools/cluster/): a 4-node
star repeats byte for byte, on one host and on two hosts (network
namespaces joined by a bridge, mpirun between them); bad topology files are
refused with a clear message before anything starts."""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

import cluster
from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "eval"))
import wirecap  # noqa: E402

LAT, DELAY, N = 10000, 500, 30
PRELOAD = "LD_PRELOAD=/usr/lib/libaccio.so"
STAR = f"""
[defaults]
latency_ns = {LAT}
gbps = 10
smp = 2

[[switch]]
name = "tor"
delay_ns = {DELAY}

[[node]]
name = "server"
service = true
command = "udp_echo -p 7000 & {PRELOAD} udp_echo -p 7001; wait"

[[node]]
name = "client"
count = 3
command = '''
for k in $(seq 100); do udp_pingpong -s {{ip:server}} -p 7000 -n 1 -t 100 -q >/dev/null 2>&1 && break; done
udp_pingpong -s {{ip:server}} -p 7000 -n {N} -q | grep -E 'bad='
{PRELOAD} udp_pingpong -s {{ip:server}} -p 7001 -n {N} -q | grep -E 'bad='
'''
"""


# a barrier's slack (accio_lockstep.h, ls_slack_ns), and the furthest one
# load from the uncore carries a hart past a timer (its calibrated cycles
# less the instruction's own, 16 ns each)
SLACK_NS = min(2 * LAT // 16, 2000)
with open(os.path.join(ROOT, "hardware", "qemu", "accio", "accio_uncore_dev.h")) as _f:
    CHARGE_NS = 16 * (int(re.search(r"#define ACCIO_UNCORE_LOAD_CYCLES_CAL (\d+)",
                                    _f.read()).group(1)) - 1)


def mac(n):
    return bytes.fromhex(f"525400acc2{n:02x}")


@pytest.mark.long(1.5)
def test_four_socs_repeat_exactly_on_one_host_and_on_two(tmp_path):
    """3 clients and a server behind one switch, once on this host and once
    on two hosts (namespaces; mpirun places the ranks, TCP between them
    carries frames and barriers): every round trip checked, the same
    outputs and byte-identical captures at every port (the one-host run's
    barrier waits look before they sleep, the two-host run's block at once,
    spin_us=0: how a side waits does not change what the SoCs do). Every
    frame a client sent reached the server's port two link latencies, the switch's delay
    and its serialisation at 10 Gb/s later, and nothing was dropped."""
    topo = cluster.parse(STAR)
    if os.geteuid() != 0:
        pytest.skip("namespaces as hosts need root")
    runs = []
    for name, kw in (("one", {}), ("two", {"ns_hosts": 2, "spin_us": 0})):
        d = tmp_path / name
        r = cluster.run(topo, pcap_dir=str(d), **kw)
        assert r.ranks == (2 if kw else 1)
        if kw:
            assert r.stats["spin_ns"] == 0, r.stats
        for c in ("client1", "client2", "client3"):
            res = r.results[c]
            assert res.rc == 0, res.console[-3000:]
            assert res.output.count(f"datagrams={N} bad=0") == 2, res.output
        assert r.results["server"].stopped
        assert all(lk["drops"] == 0 for lk in r.stats["links"]), r.stats
        runs.append(({c: r.results[c].output for c in r.results if c != "server"},
                     {p: (d / p).read_bytes() for p in sorted(os.listdir(d))}, r.stats))
    assert runs[0][0] == runs[1][0]
    assert sorted(runs[0][1]) == ["client1.pcap", "client2.pcap", "client3.pcap",
                                  "server.pcap"]
    assert runs[0][1] == runs[1][1]
    assert runs[0][2]["end_ns"] == runs[1][2]["end_ns"]

    srv = wirecap.read_pcap(str(tmp_path / "one" / "server.pcap"))
    at_server = {}
    for t, f, _ in srv:
        at_server.setdefault(f, []).append(t)
    for k in (2, 3, 4):
        cli = wirecap.read_pcap(str(tmp_path / "one" / f"client{k - 1}.pcap"))
        sent = [(t, f) for t, f, _ in cli if f[6:12] == mac(k) and f[0:6] == mac(1)]
        # ARP, 101 round trips through each path at least
        assert len(sent) >= 2 * N + 2, len(sent)
        for t, f in sent:
            ser = len(f) * 8 * 1e9 / 10e9
            ts = at_server.get(f, [])
            assert any(2 * LAT + DELAY <= u - t <= 2 * LAT + DELAY + ser + 1 for u in ts), \
                (t, f[:42].hex(), ts[:4])
        got = [f for _, f, _ in cli if f[0:6] == mac(k)]
        assert len(got) >= 2 * N + 2
    st = runs[0][2]["nodes"]
    assert st["server"]["received"] == sum(st[f"client{k}"]["sent"] for k in (1, 2, 3))


def check(tmp_path, text):
    p = tmp_path / "t.toml"
    p.write_text(text)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "accio.py"), "cluster",
                        "--check", str(p)], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


SW = '[[switch]]\nname = "tor"\n'
NODE = '[[node]]\nname = "{n}"\ncommand = "true"\n'


@pytest.mark.parametrize("text,message", [
    (SW + NODE.format(n="a") + '[[link]]\nbetween = ["tor", "x"]\n',
     "link 1: 'x' is unknown; links join switches"),
    (SW + NODE.format(n="a") + '[[link]]\nbetween = ["tor", "a"]\n',
     "link 1: 'a' is a node"),
    (SW + NODE.format(n="a") + 'switch = "spine"\n',
     "node a: switch 'spine' is not defined (switches: tor)"),
    (SW + NODE.format(n="a") + "latency_ns = 0\n",
     "node a: latency_ns must be a whole number > 0, not 0 (a link's latency is "
     "the lookahead of the synchronisation: it cannot be zero)"),
    ('[defaults]\nlatency_ns = 0\n' + SW + NODE.format(n="a"),
     "[defaults] latency_ns must be a whole number > 0"),
    (SW + '[[switch]]\nname = "b"\n[[switch]]\nname = "c"\n' + NODE.format(n="a") +
     'switch = "tor"\n[[link]]\nbetween = ["tor", "b"]\n[[link]]\nbetween = ["b", "c"]\n'
     '[[link]]\nbetween = ["c", "tor"]\n',
     "the links between switches form a loop through c-tor; frames would circle for "
     "ever (no spanning tree protocol runs): mark one link of the loop blocked = true"),
    (SW + '[[switch]]\nname = "b"\n' + NODE.format(n="a") + 'switch = "tor"\n',
     "the switches are not all connected: tor | b"),
    (SW + NODE.format(n="a") + "service = true\n",
     "every node is a service: nothing would end the run"),
    (SW + NODE.format(n="a") + "speed = 3\n", "node 1: unknown key speed (known: "),
    (SW + NODE.format(n="a") + NODE.format(n="a"), "'a' is defined twice"),
    (SW + '[[node]]\nname = "a"\ncommand = "ping {ip:b}"\n',
     "{ip:b}: no node is called 'b'"),
    (NODE.format(n="a"), "no [[switch]]: the nodes need one to meet"),
    ("[[node]\n", "not valid TOML"),
    (SW + NODE.format(n="a") + 'ip = "10.0.3.300"\n', "node a: ip '10.0.3.300' is not an IPv4"),
    (SW + NODE.format(n="a") + NODE.format(n="b") + 'ip = "10.0.4.2"\n',
     "node b: ip 10.0.4.2 is not in 10.0.3.1/24, the one subnet of the cluster"),
])
def test_bad_topologies_are_refused_clearly(tmp_path, text, message):
    """A topology with an unknown node or switch, a link to a node, zero
    latency, a loop of switches with no link blocked, switches not
    connected, only services, an unknown key, a name twice, an address of
    nobody, broken TOML, an address that is none or outside the cluster's
    subnet: accio cluster says what is wrong (exit 125)."""
    rc, out = check(tmp_path, text)
    assert rc == 125 and message in out, out


def test_a_loop_with_a_blocked_link_is_a_tree(tmp_path):
    """The same loop with one link blocked is accepted; forwarding avoids
    the blocked link, and --check states the lookahead."""
    text = (SW + '[[switch]]\nname = "b"\n[[switch]]\nname = "c"\n' +
            NODE.format(n="a") + 'switch = "b"\nlatency_ns = 1000\n' +
            NODE.format(n="z") + 'switch = "c"\n'
            '[[link]]\nbetween = ["tor", "b"]\n[[link]]\nbetween = ["b", "c"]\nblocked = true\n'
            '[[link]]\nbetween = ["c", "tor"]\n')
    rc, out = check(tmp_path, text)
    assert rc == 0 and "2 nodes, 3 switches, lookahead 2000 ns" in out, out
    topo = cluster._blocked_links_out(cluster.parse(text))
    # from b, z is reached over b-tor then tor-c: never b-c
    assert [lk.ends for lk in topo.links] == [("tor", "b"), ("c", "tor")]
    assert topo.fwd["b"]["z"] == ("link", 0) and topo.fwd["tor"]["z"] == ("link", 1)


def test_barrier_waits_look_then_sleep_by_default():
    """A barrier's waits look for the other side's message for
    cluster.SPIN_NS (yielding the core between looks) before they sleep,
    whatever the placement; an explicit spin_us wins (0: waits block at
    once); a negative one is refused."""
    assert cluster.spin_ns() == cluster.SPIN_NS > 0
    assert cluster.spin_ns(spin_us=7.5) == 7500
    assert cluster.spin_ns(spin_us=0) == 0
    with pytest.raises(cluster.AccioError, match="negative"):
        cluster.spin_ns(spin_us=-1)


def test_a_window_lets_a_soc_run_ahead_of_the_barrier():
    """window_wall() adds traced runs up as the barriers would without
    cost (each barrier waits for the longest run before it), and as a
    window that lets a SoC run ahead: with two SoCs whose long runs
    alternate, one barrier step of lead hides every short run behind the
    other's long one, and no lead goes below the longest SoC's own sum."""
    tr = {"a": [(10, 0, 5), (20, 100, 0), (30, 10, 90), (40, 100, 0), (50, 10, 50)],
          "b": [(10, 0, 0), (20, 10, 90), (30, 100, 0), (40, 10, 90), (50, 60, 0)]}
    assert cluster.window_wall(tr, 0) == 100 + 100 + 100 + 60
    assert cluster.window_wall(tr, 1) == 220          # a's own 100+10+100+10
    assert cluster.window_wall(tr, 9) == 220
    # a SoC that joins late constrains the others only where it ran
    late = {"a": tr["a"], "c": [(40, 0, 0), (50, 500, 0)]}
    assert cluster.window_wall(late, 0) == 100 + 10 + 100 + 500


@pytest.mark.slow
def test_the_shared_barrier_changes_nothing_but_the_wall_time(tmp_path):
    """On one host the SoCs meet at every barrier in memory they share with
    the hub, which joins only the barriers where the network has work; the
    same star with every barrier through the hub gives the same outputs,
    byte-identical captures, the same barriers and skips and the same end.
    The shared run passed most barriers without the hub, the other
    none. The shared run's stats say what every SoC's waits there cost: each
    waited for the others at some barriers, for less than the run, and
    its waits by length add up to its waits. And where it took them: some
    inside their slack (a running hart ended its turn after a whole
    translation block, before the barrier's timer was due), none further
    past a barrier's time than the slack, a sixteenth of the lookahead,
    and one load from the uncore (whose stall can carry a hart past any
    timer, icount_charge). And how long it ran between barriers, within
    the sum over barriers of the longest run of any SoC, within the
    phase; each SoC's trace of its barriers (accio-nic.lockstep-trace)
    adds up to the same runs and waits, and window_wall() over the traces
    to the same sum."""
    topo = cluster.parse(STAR)
    runs = {}
    for shared in (True, False):
        d = tmp_path / str(shared)
        r = cluster.run(topo, pcap_dir=str(d), shared_barrier=shared,
                        barrier_trace=shared)
        assert r.stats["shared_barrier"] is shared, r.stats
        if shared:
            w = r.stats["barrier_waits"]
            assert sorted(w) == ["client1", "client2", "client3", "server"], w
            # each SoC was not the last to arrive at some barriers, and no
            # wait is longer than the run
            assert all(0 < x["waits"] < r.stats["barriers"] for x in w.values()), w
            assert all(0 < x["wait_s"] < r.stats["lockstep_wall_s"] for x in w.values()), w
            assert all(sum(x["under_us"].values()) == x["waits"] for x in w.values()), w
            assert all(0 < x["in_slack"] < r.stats["barriers"] for x in w.values()), w
            assert all(0 < x["past_ns_max"] <= SLACK_NS + CHARGE_NS for x in w.values()), w
            # its runs between barriers, and their bound: the longest run of
            # any SoC at each barrier, summed, which holds its own and is
            # held in the phase, as are its runs and waits together
            wall = r.stats["lockstep_wall_s"] * 1.01
            assert all(0 < x["run_s"] <= x["bound_s"] <= wall for x in w.values()), w
            assert all(x["run_s"] + x["wait_s"] <= wall for x in w.values()), w
            # the traces: a record a barrier, the same sums (the stats hold
            # what a SoC said as it arrived at its last barrier, before
            # that barrier's wait)
            assert sorted(r.barriers) == sorted(w), r.barriers.keys()
            for name, tr in r.barriers.items():
                assert sum(1 for x in tr[:-1] if x[2]) == w[name]["waits"], name
                assert abs(sum(x[1] for x in tr) / 1e9 - w[name]["run_s"]) < 1e-3, name
                assert abs(sum(x[2] for x in tr[:-1]) / 1e9 - w[name]["wait_s"]) < 1e-3, name
                assert [x[0] for x in tr] == sorted({x[0] for x in tr}), name
            bound = max(x["bound_s"] for x in w.values())
            assert abs(cluster.window_wall(r.barriers) / 1e9 - bound) < 0.01 * bound, bound
            longest = max(x["run_s"] for x in w.values())
            assert longest * 0.999 <= cluster.window_wall(r.barriers, 4) / 1e9 <= bound * 1.001
        else:
            assert "barrier_waits" not in r.stats, r.stats
            assert r.barriers == {}, r.barriers.keys()
        for c in ("client1", "client2", "client3"):
            res = r.results[c]
            assert res.rc == 0, res.console[-3000:]
            assert res.output.count(f"datagrams={N} bad=0") == 2, res.output
        if shared:
            assert r.stats["barriers_with_hub"] < r.stats["barriers"] // 2, r.stats
        else:
            assert r.stats["barriers_with_hub"] == r.stats["barriers"], r.stats
        runs[shared] = ({c: r.results[c].output for c in r.results if c != "server"},
                        {p: (d / p).read_bytes() for p in sorted(os.listdir(d))},
                        {k: r.stats[k] for k in ("barriers", "skips", "start_ns", "end_ns")})
    assert runs[True] == runs[False]


KILLED = f"""
[defaults]
latency_ns = {LAT}
smp = 1

[[switch]]
name = "tor"

[[node]]
name = "server"
service = true
command = "udp_echo -p 7000"

[[node]]
name = "client"
command = '''
for k in $(seq 100); do udp_pingpong -s {{ip:server}} -p 7000 -n 1 -t 100 -q >/dev/null 2>&1 && break; done
echo ready > /dev/kmsg; sleep 1
udp_pingpong -s {{ip:server}} -p 7000 -n {N} -q | grep -E 'bad='
'''

[[node]]
name = "doomed"
command = "while true; do :; done"
"""


def test_a_soc_killed_mid_run_leaves_the_shared_barrier(tmp_path):
    """A QEMU killed in the middle of a run (SIGKILL: it says nothing) is
    marked as gone in the shared barrier by the hub, which sees its wire
    break, so the others do not wait for it there: the client's round
    trips all come back, the hub ends normally, and the run reports the
    killed SoC as ended without a result."""
    topo = cluster.parse(KILLED)
    out = {}

    def run():
        try:
            out["r"] = cluster.run(topo, run_dir=str(tmp_path))
        except cluster.AccioError as e:
            out["e"] = str(e)

    def console(name):
        for dp, _, fs in os.walk(tmp_path):
            if name + ".console" in fs:
                with open(os.path.join(dp, name + ".console"), "rb") as f:
                    return f.read()
        return b""

    t = threading.Thread(target=run)
    t.start()
    victim, deadline = None, time.monotonic() + 120
    while victim is None and time.monotonic() < deadline and t.is_alive():
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if any(a.startswith(b"accio-nic.lockstep-shm=2:") and
                   str(tmp_path).encode() in a for a in argv):
                victim = int(pid)
        time.sleep(0.2)
    assert victim, "the doomed SoC's QEMU was not found"
    # once the client is past its first round trip (the network has been
    # used) and the doomed SoC runs its loop
    for _ in range(600):
        if b"ready" in console("client") and b"@@ACCIO-BEGIN@@" in console("doomed"):
            break
        time.sleep(0.1)
    os.kill(victim, signal.SIGKILL)
    t.join(300)
    assert not t.is_alive(), "the run did not end after a SoC was killed"
    assert "node doomed ended without a result" in out.get("e", ""), out
    failed = [os.path.join(tmp_path, d) for d in os.listdir(tmp_path) if d.endswith("-failed")]
    assert len(failed) == 1, os.listdir(tmp_path)
    with open(os.path.join(failed[0], "client.console"), errors="replace") as f:
        client = f.read()
    assert f"datagrams={N} bad=0" in client and "@@ACCIO-END rc=0@@" in client, client[-3000:]
    with open(os.path.join(failed[0], "stats.json")) as f:
        stats = json.load(f)
    assert stats["shared_barrier"] and stats["nodes"]["doomed"], stats
