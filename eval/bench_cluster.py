#!/usr/bin/env python3
"""Many SoCs on one switched network (accio cluster): what synchronisation
costs, how it scales, and two experiments that need more than two SoCs.

usage: python3 eval/bench_cluster.py [--quick] [--max-nodes N] [--json FILE]
                                     [--only PARTS] [--report-only]

1. Sync overhead: two SoCs run the same command in lockstep, and in the
   same cluster with 100 ms of lookahead (all but unsynchronised), and as
   two independent QEMUs at the same time (no wire, no synchronisation).
   Busy: both count in a shell loop, with links of 2.5, 10 and 50 us
   (lookahead twice that); idle: both sleep (2.5 us links). The wall time
   of the synchronised phase (from the NICs' enable to the end: the boots
   before it are not synchronised) and of the whole run, the ratios, and
   the wall time one barrier costs; three rounds of every configuration
   (one with --quick), medians and the ratios' range.
2. Scaling: N = 2, 4, 8, 16, 32 (--max-nodes) SoCs, one server (udp_echo) and
   N-1 clients that each count to 2000 in a shell loop and then run 20 round trips
   to it. Wall time, wall per node (ideal: flat, as the host's 2 cores do
   N times the work), barriers, the peak memory of all QEMUs together,
   and the slowdown: wall time of the lockstep phase over the virtual time
   it covered. And N = 2, 4, 8, 16 at 8 SoCs a core (as root, with cgroup
   v1): the bench moves itself, so every process it starts, onto N / 8 of
   the host's cores, whole ones by cpuset and a fraction of one by the CPU
   controller's quota (10 ms periods). Ideal: a flat wall time.
3. Incast: 7 clients each send 200 datagrams of 1024 bytes as fast as
   their sockets take them to one server, whose switch port runs at
   100 Mb/s; with a 32 KB and a 512 KB egress buffer. Datagrams received, frames the switch dropped, the
   longest queueing delay.
4. Many connections across SoCs: 16 ping-pong clients spread over 4 client
   SoCs (udp_multi -T 4 each) against one server SoC whose echo runs on
   Linux sockets, through ICT rows (LD_PRELOAD=libaccio.so) or on DPDK
   (dpdk_echo on the NIC's own poll-mode driver, busy-polling): aggregate
   round trips per second of virtual time, the median of the clients' p50
   and the worst p99.
5. Placement: the 4-SoC star of the tests on one host, and on two hosts
   (network namespaces, mpirun) with the frames between ranks on TCP and
   on MPI: wall time, and whether every capture is the one of one host.

Writes eval/results/cluster.json, eval/results/cluster.md and, with
matplotlib, eval/results/cluster.png.
"""
import argparse
import contextlib
import json
import math
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402
import cluster  # noqa: E402

PRELOAD = "LD_PRELOAD=/usr/lib/libaccio.so"
WAIT = ("for k in $(seq 200); do udp_pingpong -s {ip:server} -p 7000 -n 1 -t 100 -q "
        ">/dev/null 2>&1 && break; done")


def busy(n):
    return f"i=0; while [ $i -lt {n} ]; do i=$((i+1)); done; echo counted=$i"


class PeakRss:
    """The largest sum of the QEMUs' resident memory while it runs (MiB)."""

    def __init__(self):
        self.peak, self.stop = 0, threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.wait(0.5):
            total = 0
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open(f"/proc/{pid}/status") as f:
                        st = f.read()
                except OSError:
                    continue
                if "qemu-system-ris" in st.split("\n", 1)[0]:
                    m = re.search(r"VmRSS:\s+(\d+)", st)
                    total += int(m.group(1)) if m else 0
            self.peak = max(self.peak, total / 1024)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()


def topo(nodes, defaults="", switches='[[switch]]\nname = "tor"\ndelay_ns = 500\n'):
    return cluster.parse(f"[defaults]\nsmp = 2\n{defaults}\n{switches}\n" + "".join(nodes))


def node(name, command, service=False, count=None, extra=""):
    c = command.replace("'''", "")
    return (f"[[node]]\nname = \"{name}\"\n" + ("service = true\n" if service else "") +
            (f"count = {count}\n" if count else "") + f"command = '''\n{c}\n'''\n{extra}")


def run_cluster(t, **kw):
    with PeakRss() as rss:
        r = cluster.run(t, **kw)
    return r, rss.peak


def free_pair(cmd, smp=2):
    """Wall time of two independent SoCs running cmd at the same time."""
    def one():
        accio.run(cmd, smp=smp, mem="512M", icount=4, wire="none")
    t0 = time.monotonic()
    th = [threading.Thread(target=one) for _ in range(2)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    return time.monotonic() - t0


# a link this long leaves 100 ms of virtual time between barriers: the same
# two SoCs, started the same way, all but unsynchronised
APART_NS = 50000000


def pipe(blocks):
    """Both harts busy: one makes a stream, the other hashes it."""
    return f"dd if=/dev/zero bs=4096 count={blocks} 2>/dev/null | md5sum"


def _longest_run_s(stats):
    """The wall time the SoC that ran longest between barriers ran, in s."""
    return max(x["run_s"] for x in stats["barrier_waits"].values())


def _waits(stats):
    """A SoC's mean share of the synchronised phase spent waiting at the
    shared barrier, the sleeps among all waits, all SoCs' waits by length
    ({"under 8 us", "8 to 64 us", "64 us or more": count}), and the share
    of the SoCs' barriers they took inside their slack (after a whole
    translation block, before the barrier's timer was due). And the
    phase's wall time split in two factors: the SoCs' unequal work between
    barriers (the sum over barriers of the longest run of any SoC between
    two, over the run of the SoC that ran longest: what synchronising at
    barriers one lookahead apart pays, barriers at no cost) and the
    barriers' own cost (the phase's wall over that sum)."""
    w = stats.get("barrier_waits")
    if not w:
        return None, None, None, None, None
    share = sum(x["wait_s"] for x in w.values()) / len(w) / stats["lockstep_wall_s"]
    by = {"under 8 us": 0, "8 to 64 us": 0, "64 us or more": 0}
    for x in w.values():
        for k, n in x["under_us"].items():
            us = int(k) if k != "more" else 1 << 20
            by["under 8 us" if us <= 8 else "8 to 64 us" if us <= 64 else "64 us or more"] += n
    slack = sum(x.get("in_slack", 0) for x in w.values()) / len(w) / max(stats["barriers"], 1)
    bound = max(x["bound_s"] for x in w.values())
    split = (bound / _longest_run_s(stats), stats["lockstep_wall_s"] / bound)
    return round(share, 3), sum(x["sleeps"] for x in w.values()), by, round(slack, 3), split


# barrier steps by which a SoC may run ahead of the slowest in the window
# that the sync part computes from each run's trace
LEADS = (1, 4)


def _ahead(r, lead):
    """A run's unequal work had its SoCs been let ahead of the slowest by
    lead barrier steps (a window protocol whose lookahead is lead + 1 of
    this run's steps, with a barrier at each step), waiting at no cost:
    the wall of the traced runs so added up over the longest SoC's own."""
    return cluster.window_wall(r.barriers, lead) / 1e9 / _longest_run_s(r.stats)


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def sync_overhead(loop, blocks, sleep_s, lats, repeats=1):
    """Lockstep wall over unsynchronised wall for two SoCs at each link
    latency (the lookahead is twice it): busy (a shell loop on one hart),
    pipe (both harts busy, a stream hashed) and idle (at the first
    latency), and the stream hashed on one hart (pipe1, at the last
    latency, shared barrier only). Each with the barrier in shared memory (the default on one
    host), with every barrier through the hub (as across hosts), and one
    SoC alone (the barrier's own cost, with nobody to wait for).
    Unsynchronised is the same cluster with 100 ms of lookahead. ratio:
    the synchronised phase alone (from the first NIC enable, when the SoCs
    start to meet, to the end), whose wall the hub measures; ratio_run: the
    whole run, whose wall also holds the boots (not synchronised, and the
    same in both); ratio_free: the whole run against two QEMUs started
    apart by accio run (whose wall also holds the initrds' making, which
    the cluster's does not). The shared barrier's rows also say how long a
    SoC waited there for the other, its waits by length, and the share of
    its barriers it took inside their slack, and the ratio as three
    factors: slower_work (the longest SoC's runs between barriers, summed,
    over the unsynchronised twin's phase: its own work slowed by the
    barriers' mechanics inside QEMU and by the host), unequal_work and
    barrier_cost (_waits), with unequal_work_ahead what the unequal work
    would be were a SoC let ahead of the slowest (_ahead).

    The same work takes from 0.8x to 1.3x its median wall time on this
    host from one run to the next, so each configuration runs `repeats`
    times, the rounds one after another (every configuration once, then
    again), each lockstep run right after the same SoCs unsynchronised: a
    row has the medians, its ratios are the medians of the pairs' own
    ratios, and ratio_min and ratio_max their range."""
    out = []
    for kind, cmd, kl in (("busy", busy(loop), lats), ("pipe", pipe(blocks), lats),
                          ("pipe1", pipe(blocks), lats[-1:]),
                          ("idle", f"sleep {sleep_s}; echo slept", lats[:1])):
        barriers = {"idle": ("shared", "hub"), "pipe1": ("shared",)}.get(
            kind, ("shared", "hub", "alone"))
        smp = 1 if kind == "pipe1" else 2
        extra = f"smp = {smp}\n" if smp != 2 else ""
        confs = [(lat, b) for lat in kl for b in barriers]
        rounds = []
        for rep in range(repeats):
            rnd = {"free": free_pair(cmd, smp), "apart": {}, "runs": {}}
            print(f"[cluster] sync {kind} round {rep + 1}/{repeats}: "
                  f"free {rnd['free']:.2f} s", flush=True)
            for lat, barrier in confs:
                # each lockstep run right after its unsynchronised twin: the
                # host's speed drifts over minutes
                socs = 1 if barrier == "alone" else 2
                r, _ = run_cluster(topo([node(x, cmd, extra=extra) for x in "ab"[:socs]],
                                        defaults=f"latency_ns = {APART_NS}"))
                assert all(x.rc == 0 for x in r.results.values()), r.results
                rnd["apart"][lat, barrier] = (r.wall_s, r.stats["lockstep_wall_s"])
                t = topo([node(x, cmd, extra=extra) for x in "ab"[:socs]],
                         defaults=f"latency_ns = {lat}")
                r, _ = run_cluster(t, shared_barrier=barrier != "hub",
                                   barrier_trace=barrier != "hub")
                assert all(x.rc == 0 for x in r.results.values()), r.results
                rnd["runs"][lat, barrier] = r
                print(f"[cluster] sync {kind} {lat} ns {barrier}: "
                      f"{r.stats['lockstep_wall_s']} s, apart "
                      f"{rnd['apart'][lat, barrier][1]} s", flush=True)
            rounds.append(rnd)
        for lat, barrier in confs:
            socs = 1 if barrier == "alone" else 2
            runs = [x["runs"][lat, barrier] for x in rounds]
            phase = [x.stats["lockstep_wall_s"] for x in runs]
            whole = [x.wall_s for x in runs]
            a_run = [x["apart"][lat, barrier][0] for x in rounds]
            a_sync = [x["apart"][lat, barrier][1] for x in rounds]
            ratios = [p / a for p, a in zip(phase, a_sync)]
            r = runs[0]
            # the rounds repeat the same virtual run: the same barriers (the
            # end's time may differ: which barrier sees a SoC's power-off
            # request first is up to its host, accio_wire.c)
            assert len({x.stats["barriers"] for x in runs}) == 1, \
                [x.stats["barriers"] for x in runs]
            virt = (r.stats["end_ns"] - r.stats["start_ns"]) / 1e9
            waits = [_waits(x.stats) for x in runs] if socs == 2 else []
            have = [w for w in waits if w[0] is not None]
            share = round(_median(w[0] for w in have), 3) if have else None
            sleeps = _median(w[1] for w in have) if have else None
            by = ({k: _median(w[2][k] for w in have) for k in have[0][2]} if have else None)
            slack = round(_median(w[3] for w in have), 3) if have else None
            unequal = round(_median(w[4][0] for w in have), 2) if have else None
            # the SoCs' own work, slower in lockstep than unsynchronised: the
            # longest run between barriers over the twin's phase
            slower = (round(_median(_longest_run_s(x.stats) / a for x, a in zip(runs, a_sync)), 2)
                      if have else None)
            # the same traced runs with a SoC let ahead of the slowest by
            # LEADS barrier steps (cluster.window_wall), over the run of the
            # SoC that ran longest
            ahead = ({lead: round(_median(_ahead(x, lead) for x in runs), 2) for lead in LEADS}
                     if have and all(x.barriers for x in runs) else None)
            barrier_cost = round(_median(w[4][1] for w in have), 2) if have else None
            free = [x["free"] for x in rounds]
            out.append({"kind": kind, "barrier": barrier, "socs": socs, "repeats": repeats,
                        "waiting_share": share, "sleeps": sleeps, "waits_by_length": by,
                        "in_slack_share": slack,
                        "barriers_with_hub": r.stats["barriers_with_hub"],
                        "link_ns": lat, "lookahead_ns": 2 * lat,
                        "lockstep_wall_s": round(_median(phase), 3),
                        "apart_lockstep_wall_s": round(_median(a_sync), 3),
                        "ratio": round(_median(ratios), 2),
                        "ratio_min": round(min(ratios), 2), "ratio_max": round(max(ratios), 2),
                        "slower_work": slower,
                        "unequal_work": unequal, "barrier_cost": barrier_cost,
                        "unequal_work_ahead": ahead,
                        "run_wall_s": round(_median(whole), 2),
                        "apart_run_wall_s": round(_median(a_run), 2),
                        "ratio_run": round(_median(w / a for w, a in zip(whole, a_run)), 2),
                        "free_wall_s": round(_median(free), 2) if socs == 2 else None,
                        "ratio_free": (round(_median(w / f for w, f in zip(whole, free)), 2)
                                       if socs == 2 else None),
                        "barriers": r.stats["barriers"],
                        "skips": r.stats["skips"], "lockstep_virtual_s": round(virt, 3),
                        "wall_per_barrier_us": round(
                            1e6 * _median(phase) / max(r.stats["barriers"], 1), 1)})
            print(f"[cluster] sync {out[-1]}", flush=True)
    return out


class CpuShare:
    """This process, and so every process it starts from now on, on a share
    of the host's cores: whole cores by cpuset, a fraction of one by the CPU
    controller's bandwidth (its quota per 10 ms period). cgroup v1, as this
    host mounts it; CpuShare.missing() says why it cannot be done."""

    CG = "/sys/fs/cgroup"
    NAME = "accio-bench-share"
    PERIOD_US = 10000

    @classmethod
    def missing(cls):
        if os.geteuid() != 0:
            return "needs root (cgroups)"
        for c in ("cpu", "cpuset"):
            if not os.path.exists(os.path.join(cls.CG, c, "cgroup.procs")):
                return f"no cgroup v1 {c} controller at {cls.CG}/{c}"
        return None

    def __init__(self, cores):
        self.cores = cores

    def _write(self, ctl, name, value):
        with open(os.path.join(self.CG, ctl, *name.split("/")), "w") as f:
            f.write(str(value))

    @staticmethod
    def _current(ctl):
        """This process's cgroup of controller ctl (v1), as a path under it."""
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, ctls, path = line.rstrip("\n").split(":", 2)
                if ctl in ctls.split(","):
                    return path.lstrip("/")
        return ""

    def __enter__(self):
        self.back = {c: self._current(c) for c in ("cpu", "cpuset")}
        whole = max(1, math.ceil(self.cores))       # cores to run on
        for c in ("cpu", "cpuset"):
            os.makedirs(os.path.join(self.CG, c, self.NAME), exist_ok=True)
        with open(os.path.join(self.CG, "cpuset", "cpuset.mems")) as f:
            self._write("cpuset", f"{self.NAME}/cpuset.mems", f.read().strip())
        self._write("cpuset", f"{self.NAME}/cpuset.cpus", f"0-{whole - 1}")
        self._write("cpu", f"{self.NAME}/cpu.cfs_period_us", self.PERIOD_US)
        self._write("cpu", f"{self.NAME}/cpu.cfs_quota_us",
                    int(self.cores * self.PERIOD_US) if self.cores < whole else -1)
        for c in ("cpu", "cpuset"):
            self._write(c, f"{self.NAME}/cgroup.procs", os.getpid())
        return self

    def __exit__(self, *exc):
        for c in ("cpu", "cpuset"):
            self._write(c, os.path.join(self.back[c], "cgroup.procs"), os.getpid())
            try:
                os.rmdir(os.path.join(self.CG, c, self.NAME))
            except OSError:
                pass        # a straggler still in it: the next run reuses it


def scaling(sizes, loop, per_core=None):
    """per_core: the SoCs on sizes[i] / per_core of the host's cores
    (CpuShare), so that every SoC has the same share of a core."""
    rows = []
    for n in sizes:
        t = topo([node("server", "udp_echo -p 7000", service=True),
                  node("c", f"{WAIT}\n{busy(loop)}\n"
                       "udp_pingpong -s {ip:server} -p 7000 -n 20 -q | grep bad=",
                       count=n - 1)])
        with CpuShare(n / per_core) if per_core else contextlib.nullcontext():
            r, rss = run_cluster(t)
        bad = [k for k, x in r.results.items() if not x.stopped and
               (x.rc or "bad=0" not in x.output)]
        assert not bad, {k: r.results[k].output for k in bad}
        virt = (r.stats["end_ns"] - r.stats["start_ns"]) / 1e9
        rows.append({"nodes": n, "cores": n / per_core if per_core else None,
                     "wall_s": round(r.wall_s, 1),
                     "wall_per_node_s": round(r.wall_s / n, 2),
                     "barriers": r.stats["barriers"], "skips": r.stats["skips"],
                     "lockstep_virtual_s": round(virt, 4),
                     "lockstep_wall_s": r.stats["lockstep_wall_s"],
                     "slowdown": round(r.stats["lockstep_wall_s"] / virt, 1) if virt else None,
                     "peak_rss_mib": round(rss)})
        print(f"[cluster] {n} nodes: {r.wall_s:.1f} s wall, {rss:.0f} MiB", flush=True)
    for row in rows:
        row["per_node_vs_2"] = round(row["wall_per_node_s"] / rows[0]["wall_per_node_s"], 2)
        row["wall_vs_2"] = round(row["wall_s"] / rows[0]["wall_s"], 2)
    return rows


def scaling_share(sizes, loop, per_core=8):
    """Scaling at a fixed number of SoCs per core, on 2 cores: 16 SoCs on
    both, 8 on one, 4 and 2 on a half and a quarter of one."""
    why = CpuShare.missing()
    if why:
        print(f"[cluster] scaling at {per_core} SoCs a core: skipped, {why}", flush=True)
        return []
    return scaling(sizes, loop, per_core)


def incast(clients, count, size):
    out = []
    total = clients * count
    for buf_kb in (32, 512):
        t = cluster.parse(
            f"[defaults]\nsmp = 2\n[[switch]]\nname = \"tor\"\ndelay_ns = 500\n" +
            node("server", f"udp_echo -p 7000 & udp_sink -p 7001 -n {total} -t 3000; kill $!",
                 service=False, extra=f"gbps = 0.1\nbuffer_kb = {buf_kb}\n") +
            node("c", f"{WAIT}\nudp_sink -c {{ip:server}} -p 7001 -n {count} -s {size}",
                 count=clients))
        r, _ = run_cluster(t)
        srv = r.results["server"].output
        got = int(re.search(r"datagrams=(\d+)", srv).group(1))
        port = next(lk for lk in r.stats["links"] if lk["to"] == "server")
        out.append({"buffer_kb": buf_kb, "sent": total, "received": got,
                    "switch_drops": port["drops"], "queue_max_us": port["queue_max_ns"] / 1e3,
                    "elapsed_us": int(re.search(r"elapsed_us=(\d+)", srv).group(1))})
        print(f"[cluster] incast {buf_kb} KB: {got}/{total}, {port['drops']} drops", flush=True)
    return out


def dpdk_server():
    """dpdk_echo on the NIC's own poll-mode driver (net_accio), busy-polling
    hart 1; the node's extra keys (the PMD tree, Debian's libatomic1)."""
    import breakdown
    cmd = (f"{breakdown.PMD_PREP} && /opt/dpdk/bin/dpdk_echo -l 1 {breakdown.PMD_EAL} -- "
           "-a {ip:server} -p 7000 2>&1 | grep -v '^EAL:\\|^TELEMETRY:'")
    pkgs = ", ".join(f'"{p}"' for p in breakdown.PMD_PKGS)
    return cmd, f'pkgs = [{pkgs}]\nadd = ["{breakdown.PMD_TREE}:/opt/dpdk"]\n'


def spread(socs, per, count):
    out = {}
    servers = [("linux", "udp_echo -p 7000", ""),
               ("accio", PRELOAD + " udp_echo -p 7000", "")]
    if os.path.exists(os.path.join(ROOT, "build", "apps", "dpdk-pmd", "opt", "dpdk", "bin",
                                   "dpdk_echo")):
        servers.append(("dpdk", *dpdk_server()))
    for name, server, extra in servers:
        t = topo([node("server", server, service=True, extra=extra),
                  node("c", f"{WAIT}\nudp_multi -T {per} -o /tmp/r -s {{ip:server}} -p 7000 "
                       f"-n {count} -q; cat /tmp/r.*", count=socs)])
        r, _ = run_cluster(t)
        p50, p99, rate = [], [], 0.0
        for k, x in r.results.items():
            if k == "server":
                continue
            assert x.rc == 0 and x.output.count("bad=0") == per, x.output
            p50 += [float(v) for v in re.findall(r"rtt_p50_us=([\d.]+)", x.output)]
            p99 += [float(v) for v in re.findall(r"rtt_p99_us=([\d.]+)", x.output)]
            for e in re.findall(r"elapsed_us=(\d+)", x.output):
                rate += count / (int(e) / 1e6)
        p50.sort()
        out[name] = {"clients": socs * per, "rtt_p50_median_us": p50[len(p50) // 2],
                     "rtt_p99_max_us": max(p99), "round_trips_per_s": round(rate)}
        print(f"[cluster] spread {name}: {out[name]}", flush=True)
    return out


def placement():
    """The 4-SoC star of tests/system/test_cluster.py (3 clients, 30 round
    trips each on Linux sockets and 30 through ICT rows) on one host, and
    on two hosts (network namespaces; mpirun) with the frames on TCP (the
    default) and on MPI: wall time, and whether the captures are the same."""
    star = load_star()
    out, caps = [], {}
    for name, kw, env in (("one host", {}, None), ("2 hosts, TCP", {"ns_hosts": 2}, None),
                          ("2 hosts, MPI", {"ns_hosts": 2}, "mpi")):
        d = f"/tmp/accio-bench-cluster-{len(out)}"
        if env:
            os.environ["ACCIO_CLUSTER_TRANSPORT"] = env
        try:
            r = cluster.run(star, pcap_dir=d, **kw)
        finally:
            os.environ.pop("ACCIO_CLUSTER_TRANSPORT", None)
        caps[name] = {p: open(os.path.join(d, p), "rb").read() for p in sorted(os.listdir(d))}
        out.append({"placement": name, "wall_s": round(r.wall_s, 1),
                    "lockstep_wall_s": r.stats["lockstep_wall_s"],
                    "barriers": r.stats["barriers"],
                    "same_captures": caps[name] == caps["one host"]})
        print(f"[cluster] placement {out[-1]}", flush=True)
    return out


def load_star():
    sys.path.insert(0, os.path.join(ROOT, "tests", "system"))
    import test_cluster
    return cluster.parse(test_cluster.STAR)


def report(res):
    again = res.get("again", {})
    reps = max((r.get("repeats", 1) for r in res["sync"]), default=1)
    lines = []
    if reps > 1:
        lines += [f"Sync overhead: each configuration ran {reps} times, in rounds; the medians, "
                  "and the ratio's range over the rounds in brackets.", ""]
    lines += [f"`{v['command']}` ran again at commit {v['commit']}: its table comes from "
             f"that run, the others from `{res['command']}` at commit {res['commit']}."
             for v in again.values()]
    lines += [""] if lines else []
    lines += ["| SoCs | link (lookahead) | barrier | synchronised phase (s) | the same, "
             "100 ms lookahead (s) | **ratio** | the ratio: slower work x unequal work x "
             "barriers | "
             f"unequal work with a SoC {' / '.join(map(str, LEADS))} steps ahead | "
             "whole run (s) | the same, 100 ms lookahead (s) "
             "| ratio | QEMUs apart (s) | ratio | barriers (skips) | of them with the hub | "
             "virtual time in lockstep (s) | wall per barrier (us) | a SoC waiting: share of "
             "the phase | its waits under 8 us / 8 to 64 us / longer (sleeps) | its barriers "
             "taken inside the slack |",
             "|---|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---:|"]
    where_is = {"shared": "shared memory", "hub": "through the hub",
                "alone": "shared memory, one SoC alone"}
    what = {"busy": "busy (shell loop, 1 hart)", "pipe": "busy (dd | md5sum, 2 harts)",
            "pipe1": "busy (dd | md5sum, 1 hart)", "idle": "idle"}
    for r in res["sync"]:
        where = where_is[r["barrier"]]
        share = f"{100 * r['waiting_share']:.0f} %" if r.get("waiting_share") is not None else ""
        by = r.get("waits_by_length")
        by = (" / ".join(str(n) for n in by.values()) + f" ({r['sleeps']})") if by else ""
        free = (f"{r['free_wall_s']} | {r['ratio_free']}" if r.get("free_wall_s") is not None
                else " | ")
        spread = (f" ({r['ratio_min']} to {r['ratio_max']})"
                  if r.get("repeats", 1) > 1 else "")
        slack = (f"{100 * r['in_slack_share']:.0f} %"
                 if r.get("in_slack_share") is not None else "")
        split = (f"{r['slower_work']} x {r['unequal_work']} x {r['barrier_cost']}"
                 if r.get("slower_work") is not None else "")
        ahead = r.get("unequal_work_ahead")
        ahead = " / ".join(str(ahead[k]) for k in sorted(ahead, key=int)) if ahead else ""
        lines.append(f"| {r.get('socs', 2)}, {what[r['kind']]} | {r['link_ns'] / 1e3:g} us "
                     f"({r['lookahead_ns'] / 1e3:g} us) "
                     f"| {where} | {r['lockstep_wall_s']} | {r['apart_lockstep_wall_s']} | "
                     f"**{r['ratio']}**{spread} | {split} | {ahead} | {r['run_wall_s']} | {r['apart_run_wall_s']} | "
                     f"{r['ratio_run']} | {free} | "
                     f"{r['barriers']} ({r['skips']}) | {r['barriers_with_hub']} | "
                     f"{r['lockstep_virtual_s']} | {r['wall_per_barrier_us']} | {share} | {by} "
                     f"| {slack} |")
    lines += ["", "| SoCs | wall (s) | wall per SoC (s) | vs 2 | barriers | lockstep slowdown "
              "(wall / virtual) | peak memory of all QEMUs (MiB) |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in res["scaling"]:
        lines.append(f"| {r['nodes']} | {r['wall_s']} | {r['wall_per_node_s']} | "
                     f"{r['per_node_vs_2']}x | {r['barriers']} | {r['slowdown']}x | "
                     f"{r['peak_rss_mib']} |")
    if res.get("scaling_share"):
        lines += ["", "| SoCs at 8 a core | host cores (cpuset, CFS quota) | wall (s) | vs 2 | "
                  "barriers | lockstep slowdown (wall / virtual) |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for r in res["scaling_share"]:
            lines.append(f"| {r['nodes']} | {r['cores']:g} | {r['wall_s']} | {r['wall_vs_2']}x | "
                         f"{r['barriers']} | {r['slowdown']}x |")
    lines += ["", "| incast: server port buffer | sent | received | switch drops | "
              "longest queueing (us) |", "|---:|---:|---:|---:|---:|"]
    for r in res["incast"]:
        lines.append(f"| {r['buffer_kb']} KB | {r['sent']} | {r['received']} | "
                     f"{r['switch_drops']} | {r['queue_max_us']:.1f} |")
    lines += ["", "| server (clients over 4 SoCs) | clients | round trips/s | "
              "median p50 (us) | worst p99 (us) |", "|---|---:|---:|---:|---:|"]
    for k, r in res["spread"].items():
        lines.append(f"| {k} | {r['clients']} | {r['round_trips_per_s']} | "
                     f"{r['rtt_p50_median_us']} | {r['rtt_p99_max_us']} |")
    if "placement" in res:
        lines += ["", "| the 4-SoC star on | wall (s) | of it in lockstep (s) | barriers | "
                  "captures as on one host |", "|---|---:|---:|---:|---|"]
        for r in res["placement"]:
            lines.append(f"| {r['placement']} | {r['wall_s']} | {r['lockstep_wall_s']} | "
                         f"{r['barriers']} | {'same' if r['same_captures'] else 'DIFFERENT'} |")
    big = max(res["scaling"], key=lambda r: r["nodes"])
    lines += ["", "| simulator | nodes | where | slowdown | simulated clock of a node |",
              "|---|---:|---|---|---:|",
              "| FireSim (ISCA'18, published) | 1,024 | FPGAs on EC2 F1 | < 1,000x "
              "(3.2 GHz targets; 2 us links) | 3.4 MHz |",
              "| SimBricks (SIGCOMM'22, published) | 40; 1,000 | one machine; 26 machines | "
              "not compared here | |",
              f"| accio cluster (measured) | {big['nodes']} | this machine, 2 cores | "
              f"{big['slowdown']}x in lockstep (62.5 MHz targets, icount 4; "
              f"{2 * cluster.DEFAULTS['latency_ns']} ns "
              f"lookahead) | {62.5e3 / big['slowdown']:.0f} kHz |"]
    return "\n".join(lines) + "\n"


def plot(res, path):
    """Busy sync overhead against the lookahead, and wall time per SoC
    against the number of SoCs; False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("[cluster] no matplotlib: no plot", flush=True)
        return False
    share = res.get("scaling_share")
    fig, axes = plt.subplots(1, 3 if share else 2, figsize=(15 if share else 10, 3.6))
    a, b = axes[0], axes[1]
    for kind, where, label in (("busy", "shared", "shell loop, shared memory"),
                               ("busy", "hub", "shell loop, through the hub"),
                               ("busy", "alone", "shell loop, one SoC alone"),
                               ("pipe", "shared", "dd | md5sum, shared memory"),
                               ("pipe", "alone", "dd | md5sum, one SoC alone")):
        rows = [r for r in res["sync"] if r["kind"] == kind and r["barrier"] == where]
        a.plot([r["lookahead_ns"] / 1e3 for r in rows], [r["ratio"] for r in rows],
               "o-" if where != "alone" else "o--", label=label)
    a.legend(fontsize=8)
    a.axhline(1.3, ls="--", c="grey", lw=1)
    a.set_xscale("log")
    a.set_xlabel("lookahead (us of virtual time)")
    a.set_ylabel("synchronised phase's wall,\nlockstep / 100 ms lookahead")
    a.set_title("busy SoCs")
    def by_socs(ax, rows, key, xlabel, ylabel, title, goal=None):
        n = [r["nodes"] for r in rows]
        ax.plot(n, [r[key] for r in rows], "o-")
        if goal:
            ax.axhline(goal, ls="--", c="grey", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(n, [str(x) for x in n])
        ax.set_ylim(bottom=0)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)

    by_socs(b, res["scaling"], "wall_per_node_s", "SoCs (on 2 host cores)",
            "wall time per SoC (s)", "scaling")
    if share:
        by_socs(axes[2], share, "wall_s", "SoCs (8 a core: a quarter of one to 2 host cores)",
                "wall time (s)", "scaling at a fixed share of a core", 1.5 * share[0]["wall_s"])
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


MAX_NODES = 32
PARTS = {
    "sync": lambda q: sync_overhead(3000 if q else 10000, 800 if q else 2000, 1 if q else 2,
                                    [2500, 50000] if q else [2500, 10000, 50000],
                                    1 if q else 3),
    "scaling": lambda q: scaling([n for n in (2, 4, 8, 16, 32) if n <= MAX_NODES][:2 if q else 5],
                                 1000 if q else 2000),
    "scaling_share": lambda q: scaling_share([n for n in (2, 4, 8, 16) if n <= MAX_NODES]
                                             [:2 if q else 4], 1000 if q else 2000),
    "incast": lambda q: incast(3 if q else 7, 50 if q else 200, 1024),
    "spread": lambda q: spread(2 if q else 4, 2 if q else 4, 50 if q else 200),
    "placement": lambda q: placement() if os.geteuid() == 0 else [],
}


def commit():
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--max-nodes", type=int, default=32)
    ap.add_argument("--json", default=os.path.join(ROOT, "eval", "results", "cluster.json"))
    ap.add_argument("--only", metavar="PARTS",
                    help="run only these parts (" + ",".join(PARTS) + "), keeping the "
                    "others' figures in --json")
    ap.add_argument("--report-only", action="store_true",
                    help="the table and plot again from --json's figures")
    a = ap.parse_args()
    q = a.quick
    if a.report_only or a.only:
        with open(a.json) as f:
            res = json.load(f)
        for part in (a.only or "").split(","):
            if part:
                res[part] = PARTS[part](q)
                # the parts run again say at which commit
                res.setdefault("again", {})[part] = {
                    "commit": commit(), "command": f"python3 eval/bench_cluster.py --only {part}"
                    + (" --quick" if q else "")}
        if a.only:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
        return write(res, a.json)
    global MAX_NODES
    MAX_NODES = a.max_nodes
    res = {"command": "python3 eval/bench_cluster.py" + (" --quick" if q else ""),
           "commit": commit()}
    for name, part in PARTS.items():
        res[name] = part(q)
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
    write(res, a.json)


def write(res, path):
    """path's .md (the tables) and .png beside the figures' json."""
    md = report(res)
    png = os.path.splitext(path)[0] + ".png"
    if plot(res, png):
        md += f"\n![sync overhead and scaling]({os.path.basename(png)})\n"
    with open(os.path.splitext(path)[0] + ".md", "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
