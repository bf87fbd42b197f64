"""The paper's section 8 on our SoC: five experiments and the per-stage
breakdown, each one command, in deterministic virtual time where it can be.

usage: python3 -m eval [--quick] [--only NAMES] [--out DIR] [--report FILE]
       (make eval: the full run into eval/results/ and eval/REPORT.md;
        make eval-quick: small counts into build/eval-quick/)

Every experiment boots the SoC with QEMU's icount (shift 4: 16 ns per
instruction, about 62.5 MIPS, near the prototype's 50 MHz Rocket; shift 0
in the frequency experiment) and the NIC model's wire peer (`--wire
echo:NS`): a server at the far end of the wire that answers on the virtual
clock, NS ns after a datagram arrived, or streams datagrams at a given rate
(its generator). Nothing runs in real time, so a run repeats exactly; the
report checks that by running the first guest command of every experiment
twice and comparing checksums of the outputs.

Experiments (NAMES for --only):
  freq        8.2  Linux-socket RTT per size at 62.5 MIPS, scaled 40x and
                   200x as the paper does, and measured at 1 GIPS (shift 0)
  latency     8.3  client processing time (RTT_sw - RTT_hw, NIC hardware
                   timestamps) per size, p50 and p99, every contender
  throughput  8.4  a sink under a stream of datagrams from the wire peer's
                   generator: delivered rate against offered rate
  cpu         8.5  CPU busy share of the client's hart, 64 B ping-pongs,
                   server slowed 1x..200x (a longer wire-peer delay)
  multiplex   8.6  T concurrent ping-pong clients: distribution of
                   processing time
  breakdown        eval/breakdown.py: a round trip's instructions by stage

Contenders: Linux sockets, Accio blocking (LD_PRELOAD=libaccio.so), Accio
spinning (ACCIO_SPIN_US=100000), Accio adaptive (ACCIO_SPIN_US=auto: spins
while the connection's recent waits are short, sleeps otherwise), and, in
the latency and CPU experiments, DPDK on the NIC's own poll-mode driver
(net_accio, apps/dpdk/net_accio: dpdk_pingpong, whose processing time comes
from the same NIC timestamps); in the multiplexing experiment DPDK as one
dispatcher and T worker clients (dpdk_dispatch -c, T <= 64), measured on
the NIC's wire (eval/wirecap.py) like every contender's turnaround there.
RDMA runs between two SoCs (eval/bench_baselines.py, in lockstep virtual
time): the report shows it as missing here, with the reason.

Writes DIR/<experiment>.json (configuration, raw results, checksums),
DIR/<experiment>.png and the report (Markdown, plots embedded, a "paper vs
here" table per experiment).
"""
import argparse
import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import accio  # noqa: E402
import breakdown  # noqa: E402
import wirecap  # noqa: E402

SHIFT = 4
CONTENDERS = {  # the breakdown's modes, and the adaptive spin policy
    "linux": breakdown.MODES["linux"],
    "accio": breakdown.MODES["accio"],
    "accio-spin": breakdown.MODES["spin"],
    "accio-auto": breakdown.PRELOAD + " ACCIO_SPIN_US=auto",
}
HART = 1               # the client's hart (the NIC interrupt is taken on hart 0)
# Linux at its best: the same ping-pong in other configurations of the same
# kernel and NIC, in the latency and CPU experiments. "Linux (best)" in the
# headline ratios is the best of "linux" (offloads on, the client on hart
# HART, the NIC's interrupt on hart 0) and these. Each: a command before the
# client, the client's program and arguments, and a command after it that
# restores what the one before changed.
_IRQ = "/proc/irq/$(awk '/eth0/{print $1+0}' /proc/interrupts)/smp_affinity"
LINUX_VARIANTS = {
    # the NIC's checksum offload off (ethtool -K): the stack computes them
    "linux-nocsum": ("ethtool -K eth0 rx off tx off > /dev/null && ", "udp_pingpong", "",
                     "; ethtool -K eth0 rx on tx on > /dev/null"),
    # the NIC's interrupt on the client's own hart: no cross-hart wake-up
    "linux-irq-local": (f"echo {1 << HART:x} > {_IRQ} && ", "udp_pingpong", "",
                        f"; echo 1 > {_IRQ}"),
    # busy polling (SO_BUSY_POLL 1000 us: longer than a round trip)
    "linux-busypoll": ("", "udp_pingpong", "-B 1000", ""),
    # io_uring (Debian's liburing): send + recvmsg in one io_uring_enter
    "linux-uring": ("", "udp_pingpong-glibc", "-U plain", ""),
    # io_uring with a multishot recvmsg on provided buffers
    "linux-uring-multishot": ("", "udp_pingpong-glibc", "-U multishot", ""),
    # io_uring with a polling submission thread on the next hart, the
    # completions polled: no system call at all
    "linux-uring-sqpoll": ("", "udp_pingpong-glibc", "-U sqpoll,spin", ""),
}
URING_UNAVAILABLE = os.path.join(ROOT, "build", "uring-unavailable")


def linux_variants():
    """The Linux configurations this build can run, and why others are missing."""
    if not os.path.exists(URING_UNAVAILABLE):
        return dict(LINUX_VARIANTS), {}
    why = open(URING_UNAVAILABLE).read().strip().splitlines()[-1]
    return ({k: v for k, v in LINUX_VARIANTS.items() if "uring" not in k},
            {k: why for k in LINUX_VARIANTS if "uring" in k})


def variant_pingpong(name, size, count, port=7):
    pre, prog, args, post = LINUX_VARIANTS[name]
    return f"{pre}{pingpong('', size, count, port, args, prog)}{post}"


# DPDK 22.11 with the NIC's own poll-mode driver (make image: build/apps/dpdk-pmd)
PMD_TREE, PMD_PKGS, PMD_PREP = breakdown.PMD_TREE, breakdown.PMD_PKGS, breakdown.PMD_PREP
MISSING = {
    "dpdk": "not in this experiment yet; DPDK on the NIC's own poll-mode driver (net_accio) "
            "is in the latency and CPU experiments and between two SoCs "
            "(eval/bench_baselines.py)",
    "rdma": "needs a verbs peer: between two SoCs in lockstep virtual time "
            "(eval/bench_baselines.py, eval/results/baselines-lockstep.json), where the wire "
            "capture gives perftest's processing time. None of ours is the paper's hardware "
            "RDMA NIC: soft-RoCE and RC on ICT rows are software transports; UD on ICT rows "
            "is the hardware analogue (the engine moves the datagrams)",
}
PEER_NS = 20000        # the server's service time in the latency experiments
EXPERIMENTS = ["freq", "latency", "throughput", "cpu", "multiplex", "breakdown", "timing"]


def progress(msg):
    # one write a line: experiments run in threads
    sys.stderr.write(f"[eval] {time.strftime('%H:%M:%S')} {msg}\n")
    sys.stderr.flush()


def kv(text):
    return dict(re.findall(r"^(\w+)=(\S+)$", text, re.M))


def sections(output):
    """{name: text} of the blocks that 'echo @@name@@' started."""
    return {m.group(1): m.group(2) for m in
            re.finditer(r"^@@([\w.:-]+)@@\n(.*?)(?=^@@[\w.:-]+@@\n|\Z)", output, re.S | re.M)}


# the spread: the first guest command of every experiment again with these
# guest seeds (another phase of the same run: address layout, hash seeds)
SPREAD_SEEDS = [2, 3, 4]
SPREAD_SEEDS_QUICK = [2]
FIGURE = re.compile(r"^(\w*_p(?:50|99)_(?:us|ns)|\w*mbps)=(-?[\d.]+)$", re.M)


def figures(text):
    """The p50/p99 figures and the rates of a guest command's output, in
    order (a line of several key=value pairs counts too)."""
    return [(k, float(v)) for k, v in FIGURE.findall(text.replace(" ", "\n"))]


class Runner:
    """Boots the SoC for each guest command; the first command of every
    experiment runs twice and its outputs' checksums are compared, and
    again with other guest seeds for the spread of its p50 and p99
    figures.

    jobs: how many SoCs run at once (each QEMU takes one host core). A run
    is in virtual time, so its output does not depend on what else the
    machine runs; experiments and the independent runs inside one
    (map()) share the slots."""

    def __init__(self, seeds=(), jobs=1):
        self.checked = {}
        self.seeds = list(seeds)
        self.jobs = max(1, jobs)
        self.slots = threading.BoundedSemaphore(self.jobs)
        self.lock = threading.Lock()
        self.local = threading.local()
        self.guest_s = {}               # experiment: seconds of SoC runs, summed
        self.failed = None              # an experiment failed: start nothing more

    @contextlib.contextmanager
    def _slot(self, exp):
        """A free slot while the block runs, its time counted to exp."""
        self.slots.acquire()
        t = time.monotonic()
        try:
            if self.failed:
                raise SystemExit(f"eval: not started, {self.failed} failed")
            yield
        finally:
            with self.lock:
                self.guest_s[exp] = self.guest_s.get(exp, 0) + time.monotonic() - t
            self.slots.release()

    def boot(self, exp, cmd, seed=None, **kw):
        """accio.run() in a free slot."""
        with self._slot(exp):
            return accio.run(cmd, seed=seed, **kw)

    def command(self, exp, argv):
        """A host command that runs SoCs one at a time (e.g. eval/breakdown.py),
        in one slot."""
        with self._slot(exp):
            return subprocess.run(argv, capture_output=True, text=True)

    def map(self, fn, items):
        """[fn(x) for x in items], up to jobs at once. Only the first item's
        guest commands may be an experiment's repeatability check, so the
        checked command does not depend on which thread came first."""
        items = list(items)

        def one(i):
            self.local.later = i > 0
            return fn(items[i])

        if self.jobs == 1 or len(items) < 2:
            return [fn(x) for x in items]
        with concurrent.futures.ThreadPoolExecutor(min(self.jobs, len(items))) as ex:
            return list(ex.map(one, range(len(items))))

    def guest(self, exp, cmd, wire, shift=SHIFT, timeout=3000, qemu_extra=(), pkgs=(), add=(),
              pcap=None):
        kw = dict(icount=shift, wire=wire, timeout=timeout, qemu_extra=qemu_extra, pkgs=pkgs,
                  add=add)
        r = self.boot(exp, cmd, pcap=pcap, **kw)
        if r.rc != 0:
            raise SystemExit(f"eval {exp}: guest command failed (rc {r.rc}):\n{cmd}\n"
                             + r.output[-3000:])
        with self.lock:
            first = exp not in self.checked and not getattr(self.local, "later", False)
            if first:
                self.checked[exp] = None            # claimed; filled in below
        if first:
            # the same command again, and with each other seed, in parallel
            seeds = [None] + self.seeds
            outs = self.map(lambda seed: self.boot(exp, cmd, seed=seed, **kw), seeds)
            a = hashlib.sha256(r.output.encode()).hexdigest()[:16]
            b = hashlib.sha256(outs[0].output.encode()).hexdigest()[:16]
            check = {"identical": a == b, "sha256": [a, b], "wire": wire, "command": cmd}
            runs = [figures(r.output)] + [figures(o.output) if o.rc == 0 else []
                                          for o in outs[1:]]
            check["spread"] = spread(runs, [accio.SEED] + self.seeds)
            self.checked[exp] = check
        return r.output


def spread(runs, seeds):
    """Each p50/p99 figure of the runs (one per seed), min..max."""
    base = runs[0]
    out = {"seeds": seeds, "figures": []}
    if not base:
        return out                      # the command prints no such figure
    if any(len(r) != len(base) or [k for k, _ in r] != [k for k, _ in base]
                       for r in runs[1:]):
        out["error"] = "the runs with other seeds did not give the same figures"
        return out
    for i, (k, _) in enumerate(base):
        vals = [r[i][1] for r in runs]
        out["figures"].append({"key": k, "min": min(vals), "max": max(vals),
                               "values": vals})
    return out


def git_dirty():
    """Uncommitted changes of the tree (tracked or not ignored), as git lists them."""
    r = subprocess.run(["git", "-C", ROOT, "status", "--porcelain"],
                       capture_output=True, text=True)
    return r.stdout.strip()


def configuration(quick):
    def link(p):
        p = os.path.join(ROOT, "build", p)
        return os.path.basename(os.path.realpath(p)) if os.path.exists(p) else None

    def sha(p):
        p = os.path.join(ROOT, "build", p)
        if not os.path.exists(p):
            return None
        with open(p, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]

    git = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    qemu = os.environ.get("ACCIO_QEMU")
    return {"commit": git, "qemu": os.path.basename(os.path.realpath(qemu)) if qemu
            else link("qemu-system-riscv64"), "kernel": link("Image"),
            "initramfs_sha256": sha("initramfs.cpio.gz"), "icount_shift": SHIFT,
            "rr_timeslice": accio.RR_TIMESLICE, "icount_parallel": accio.ICOUNT_PARALLEL,
            "icount_skew_ns": accio.ICOUNT_SKEW_NS, "ipi": accio.IPI, "client_hart": HART, "quick": quick,
            "date": time.strftime("%Y-%m-%d")}


def pingpong(env, size, count, port=7, extra="", prog="udp_pingpong"):
    return (f"{env} taskset {1 << HART:#x} {prog} -q -n {count} -m {size} "
            f"-p {port} {extra}").strip()


pmd_available = breakdown.pmd_available


# the multiplexing experiment's other configurations: Linux busy polling
# (each client spins up to 1 ms in its receive) up to as many clients as
# rows, DPDK's workers polling their rings up to as many as harts
MULTIPLEX_VARIANTS = ("linux-busypoll",)
MULTIPLEX_VARIANT_MAX_T = 64
MULTIPLEX_POLL_MAX_T = 4

# the dispatcher design (dpdk_dispatch -c) with up to this many worker clients
# (its MAX_WORKERS); the workers sleep on a futex while they wait
DPDK_MAX_T = 64


# udp_pingpong's warm-up round trips (its -w default), before its barrier
# in udp_multi: not measured, and neither is the wait at the barrier
PINGPONG_WARM = 10


def pmd_dispatch_clients(t, count, port=7, poll=False):
    """The dispatcher (EAL primary, owns net_accio, hart 0) and t worker
    processes (secondaries), each a ping-pong client of the wire peer;
    poll: the workers poll their rings instead of sleeping (-P)."""
    d = "/opt/dpdk/bin/dpdk_dispatch"
    pmd = "-d /opt/dpdk/lib/accio/librte_net_accio.so --vdev net_accio0"
    return (f"{PMD_PREP}; ({d} -l 0 {pmd} -- -T {t} -l 10.0.2.15 -c 10.0.2.2 -I 5 > /tmp/d.out 2>&1; "
            "echo dispatch_rc=$? >> /tmp/d.out) & "
            "for i in $(seq 100); do grep -q 'dispatcher ready' /tmp/d.out && break; sleep 0.2; done; "
            f"for w in $(seq 0 {t - 1}); do {d} --proc-type=secondary {pmd} "
            "--lcores=$((w + 1))@$((w % 3 + 1)) "
            f"-- -w $w -p {port} -n {count} -m 64 -t 1000{' -P' if poll else ''} > /tmp/w$w.out 2>&1 & "
            # one EAL start-up at a time: many at once overrun the
            # primary's multi-process channel and a secondary can die
            # holding a lock in the shared memory configuration
            "for i in $(seq 300); do grep -q '^up worker=' /tmp/w$w.out && break; sleep 0.1; done; "
            "done; wait; "
            "grep -v '^EAL:\\|^TELEMETRY:' /tmp/d.out; "
            f"for w in $(seq 0 {t - 1}); do echo @@c$w@@; grep -v '^EAL:\\|^TELEMETRY:' /tmp/w$w.out; done")


def wire_turnarounds(pcap, skip=0):
    """Every client flow's turnarounds on the wire, pooled (ns), the
    number of flows, how the flows shared the server (wirecap.fairness)
    and the turnarounds inside its window; the first skip round trips of
    each flow are its warm-up, and the turnaround after them its wait at
    the start barrier."""
    frames = wirecap.read_pcap(pcap)
    fl = wirecap.flows(frames, skip=skip)
    fair = wirecap.fairness(frames, skip=skip)
    window = ([x for f in fl.values() for x, at in zip(f["turn"], f["turn_at"])
               if fair["start_ns"] <= at <= fair["end_ns"]] if fair else [])
    return ([x for f in fl.values() for x in f["turn"]], len(fl), fair, window)


def pmd_pingpong(size, count, port=7):
    """dpdk_pingpong on net_accio, the same round trips as pingpong() (the
    wire peer at 10.0.2.2, the client's lcore on the same hart)."""
    return (f"/opt/dpdk/bin/dpdk_pingpong -l {HART} {breakdown.PMD_EAL} -- "
            f"-s 10.0.2.2 -l 10.0.2.15 -p {port} -q -n {count} -m {size} 2>&1 | "
            "grep -v '^EAL:\\|^TELEMETRY:'")


# ---- the experiments ---------------------------------------------------------

def exp_freq(run, quick):
    sizes = [64, 1024] if quick else [64, 256, 512, 1024]
    count = 200 if quick else 2000
    res = {"sizes": sizes, "count": count, "peer_ns": 0, "rows": []}
    out = {}
    for shift in (SHIFT, 0):
        progress(f"freq: Linux sockets at icount shift {shift}, sizes {sizes}")
        cmd = "; ".join(f"echo @@{s}@@; {pingpong('', s, count)}" for s in sizes)
        out[shift] = sections(run.guest("freq", cmd, "echo:0", shift=shift))
    for s in sizes:
        a, b = kv(out[SHIFT][str(s)]), kv(out[0][str(s)])
        rtt4, rtt0 = float(a["rtt_p50_us"]), float(b["rtt_p50_us"])
        res["rows"].append({
            "size": s, "rtt_p50_us_62mips": rtt4, "scaled_40x": rtt4 / 40,
            "scaled_200x": rtt4 / 200, "rtt_p50_us_1gips": rtt0,
            "proc_p50_us_62mips": float(a["proc_p50_us"]),
            "proc_p50_us_1gips": float(b["proc_p50_us"]),
            "rtt_hw_us_62mips": float(a["rtt_hw_avg_us"]),
            "rtt_hw_us_1gips": float(b["rtt_hw_avg_us"]),
            "speedup_measured": rtt4 / rtt0})
    return res


def latency_parts(sizes, count):
    """The latency experiment's one guest command: every contender at every
    size, each output after a line @@NAME:SIZE@@. Returns (contender names,
    command, missing contenders, Linux variants, guest packages, guest files)."""
    missing = {k: v for k, v in MISSING.items() if k != "dpdk" or not pmd_available()}
    if "dpdk" in missing:
        missing["dpdk"] = "build/apps/dpdk-pmd was not built (make image; DPDK's source unavailable)"
    variants, vmissing = linux_variants()
    missing.update(vmissing)
    parts = []
    names = list(CONTENDERS)
    for name, env in CONTENDERS.items():
        for s in sizes:
            parts.append(f"echo @@{name}:{s}@@; {pingpong(env, s, count)}")
    for name in variants:
        names.append(name)
        for s in sizes:
            parts.append(f"echo @@{name}:{s}@@; {variant_pingpong(name, s, count)}")
    if pmd_available():
        # last: the kernel gives the NIC up to DPDK
        names.append("dpdk")
        parts.append(PMD_PREP)
        for s in sizes:
            parts.append(f"echo @@dpdk:{s}@@; {pmd_pingpong(s, count)}")
    pkgs = PMD_PKGS if "dpdk" in names else ()
    add = [(PMD_TREE, "/opt/dpdk")] if "dpdk" in names else ()
    return names, "; ".join(parts), missing, variants, pkgs, add


def latency_rows(output, names, sizes, **extra):
    sec = sections(output)
    rows = []
    for name in names:
        for s in sizes:
            d = kv(sec[f"{name}:{s}"])
            rows.append({"contender": name, "size": s,
                         "proc_p50_us": float(d["proc_p50_us"]),
                         "proc_p99_us": float(d["proc_p99_us"]),
                         "rtt_p50_us": float(d["rtt_p50_us"]),
                         "cdf_us": [float(x) for x in d["proc_cdf_us"].split(",")], **extra})
    return rows


def exp_latency(run, quick):
    sizes = [64, 1024] if quick else [64, 128, 256, 512, 1024]
    count = 200 if quick else 2000
    names, cmd, missing, variants, pkgs, add = latency_parts(sizes, count)
    res = {"sizes": sizes, "count": count, "peer_ns": PEER_NS, "rows": [],
           "missing": missing, "linux_variants": list(variants)}
    progress(f"latency: {len(names)} contenders x {len(sizes)} sizes, "
             f"{count} round trips each")
    out = run.guest("latency", cmd, f"echo:{PEER_NS}", pkgs=pkgs, add=add)
    res["rows"] = latency_rows(out, names, sizes)
    return res


def nic_bus():
    """The NIC's modeled bus at the evaluation's clock: (bits a cycle, Hz),
    the device's defaults as QEMU lists them, on the SoC's one clock."""
    d = accio.device_defaults("accio-nic")
    hz = d["bus-freq-hz"] or 1_000_000_000 // (1 << SHIFT)
    return d["bus-width-bits"], hz


def bus_limit_mbps(size, width, hz):
    """Payload Mb/s when every frame of a size-byte datagram crosses the bus
    (Ethernet, IPv4 and UDP headers; ceil(bytes x 8 / width) bus cycles)."""
    frame = max(60, 42 + size)
    cycles = -(-frame * 8 // width)
    return size * 8 * hz / cycles / 1e6


def exp_throughput(run, quick):
    sizes = [64] if quick else [64, 1472]
    rates = [5000, 20000, 100000, 0] if quick else [2000, 5000, 10000, 20000, 50000,
                                                     100000, 0]
    seconds = 0.01 if quick else 0.05
    width, hz = nic_bus()
    res = {"sizes": sizes, "offered_pps": rates, "stream_s": seconds, "rows": [],
           "bus": {"width_bits": width, "hz": hz, "limit_mbps": width * hz / 1e6},
           "bus_limit_mbps": width * hz / 1e6, "link_mbps": 100000}
    # the engine against the bus: line rate (the NIC's FIFO paces the wire
    # peer to the bus), received in place in the ring (udp_sink -z)
    bus_sizes = [64, 1472] if quick else [64, 256, 512, 1024, 1472]
    count = 500 if quick else 4000
    parts = [f"echo @@bus:{s}@@; {CONTENDERS['accio-spin']} taskset {1 << HART:#x} "
             f"udp_sink -z -G 10.0.2.2 -n {count} -s {s} -g 0 -p {6000 + s} -t 200 2>&1"
             for s in bus_sizes]
    progress(f"throughput: the engine against the bus, {bus_sizes} B at line rate")
    sec = sections(run.guest("throughput", "; ".join(parts), "echo:0"))
    res["bus_rows"] = []
    for s in bus_sizes:
        d = kv(sec[f"bus:{s}"].replace(" ", "\n"))
        limit = bus_limit_mbps(s, width, hz)
        eng = float(d.get("engine_mbps", 0))
        res["bus_rows"].append({
            "size": s, "count": count, "received": int(d["datagrams"]), "lost": int(d["lost"]),
            "bus_limit_mbps": round(limit, 1), "engine_mbps": eng,
            "engine_of_limit": round(eng / limit, 3),
            "ring_mbps": float(d.get("hw_mbps", 0)), "app_mbps": float(d["mbps"])})
    for s in sizes:
        parts = []
        port = 7000
        for name, env in CONTENDERS.items():
            for rate in rates:
                gap = round(1e9 / rate) if rate else 0
                count = max(200, int((rate or 1e6) * seconds))
                port += 1
                parts.append(f"echo @@{name}:{rate}@@; {env} ACCIO_STATS=1 taskset "
                             f"{1 << HART:#x} udp_sink -G 10.0.2.2 -n {count} -s {s} "
                             f"-g {gap} -p {port} -t 200 2>&1")
        progress(f"throughput: {s} B datagrams, offered {rates} pps (0: line rate)")
        sec = sections(run.guest("throughput", "; ".join(parts), "echo:0"))
        for name in CONTENDERS:
            for rate in rates:
                text = sec[f"{name}:{rate}"]
                d = kv(text.replace(" ", "\n"))
                n = int(d["datagrams"])
                res["rows"].append({
                    "contender": name, "size": s, "offered_pps": rate,
                    "offered_mbps": s * 8 * rate / 1e6 if rate else None,
                    "sent": n + int(d["lost"]), "received": n, "lost": int(d["lost"]),
                    "delivered_pps": float(d["pps"]), "delivered_mbps": float(d["mbps"]),
                    "row_rx_drops": int(d["rx_drops"]) if "rx_drops" in d else None})
    return res


def busy_run(run, so, cmd, wire, pkgs=(), add=(), exp="cpu", dram=None):
    """Runs one ping-pong client (udp_pingpong, or dpdk_pingpong) under the
    instruction counter: its output, and the cycles each hart was busy
    during the measurement (its instructions, the further cycles of its
    uncore accesses, and with dram (the Rocket timing mode at that memory
    latency) the cycles the timing model stalled it)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="accio-busy-") as tmp:
        path = os.path.join(tmp, "counts")
        tpath = os.path.join(tmp, "timing")
        extra = ["-plugin", f"{so},out={path},mmio=on"]
        if dram is not None:
            extra += timing_extra(dram, tpath)
        out = run.guest(exp, cmd, wire, qemu_extra=extra, pkgs=pkgs, add=add)
        with open(path) as f:
            lines = f.read().splitlines()
        stalls = []
        if dram is not None:
            with open(tpath) as f:
                tl = next(x.split() for x in f.read().splitlines() if x.startswith("S "))
            if tl[1] != "1":
                raise SystemExit(f"eval {exp}: the timing model saw {tl[1]} spans, not one")
            stalls = [int(x) for x in tl[2:]]
    span = next(line.split() for line in lines if line.startswith("S "))
    if span[1] != "1":
        raise SystemExit(f"eval {exp}: expected one measured span, got {span[1]}")
    # a hart waiting for the uncore's answer to a load is busy: the cycles
    # an uncore access takes beyond its instruction count as busy too
    ld_c, st_c = uncore_access_cycles()
    io = next((line.split()[1:] for line in lines if line.startswith("U")), [])
    busy = [int(x) for x in span[2:]]
    for h in range(len(busy)):
        if 2 * h + 1 < len(io):
            busy[h] += int(io[2 * h]) * (ld_c - 1) + int(io[2 * h + 1]) * (st_c - 1)
        if h < len(stalls):
            busy[h] += stalls[h]
    return out, busy


def uncore_access_cycles():
    """A hart's uncached load and store from the uncore, in cycles (QEMU's
    accio-uncore defaults; 1 each on a QEMU without them)."""
    d = accio.device_defaults("accio-uncore")
    return d.get("load-cycles", 1), d.get("store-cycles", 1)


def exp_cpu(run, quick):
    """CPU busy share, exactly: the instruction counter (eval/prof) counts
    what every hart executes during the measurement, and its uncore loads
    and stores, which stall it for their cycles (load-cycles, store-cycles);
    a hart in wfi executes nothing. busy = (instructions + the accesses'
    further cycles) x 16 ns / elapsed virtual time. (The
    kernel's own /proc/stat figures are tick samples, and in virtual time
    the ticks fall where the guest's events are.)"""
    so = breakdown.plugin()
    # quick: 400 round trips (every busy share within 3 points of the
    # full run's 10,000, the adaptive spinner's learning included)
    count = 400 if quick else 10000
    factors = [1, 40, 200] if quick else CPU_FACTORS
    progress("cpu: Linux's round trip against an instant peer (the SoC's own speed)")
    base_out = run.guest("cpu", pingpong("", 64, 200), "echo:0")
    base_us = float(kv(base_out)["rtt_p50_us"])
    names = dict(CONTENDERS)
    if pmd_available():
        names["dpdk"] = None
    missing = {k: v for k, v in MISSING.items() if k not in names}
    # Linux's other configurations at 1x and 40x (the headline's slowdown)
    variants, vmissing = linux_variants()
    missing.update(vmissing)
    vfactors = [k for k in factors if k in ((40,) if quick else (1, 40))]
    res = {"count": count, "factors": factors, "base_rtt_us": base_us, "rows": [],
           "busy_counts_uncore_stalls": True, "linux_variants": list(variants),
           "variant_factors": vfactors,
           "missing": missing, "contenders": list(names), "ns_per_instruction": 1 << SHIFT}

    def one(point):
        return cpu_point(run, so, point, names, base_us, count)

    res["rows"] = run.map(one, [(k, name) for k in factors for name in names] +
                          [(k, name) for k in vfactors for name in variants])
    return res


def cpu_point(run, so, point, names, base_us, count, exp="cpu", dram=None):
    """One point of the CPU experiment: (slowdown k, contender name); names:
    the contenders' environments (None for DPDK). dram: in the Rocket timing
    mode at that memory latency."""
    k, name = point
    env = names.get(name)
    # the paper's server is 40x faster than its SoC: slowed k times,
    # it takes k/40 of the SoC's own (Linux) round trip; at 40x it is
    # as slow as the SoC
    delay = int(k * base_us * 1000 / 40)
    progress(f"{exp}: slowdown {k}x (server delay {delay / 1000:.0f} us), {name}, "
             f"{count} round trips")
    kw = dict(exp=exp, dram=dram)
    if name == "dpdk":      # busy-polls the NIC's own driver (net_accio)
        out, busy = busy_run(run, so, f"{PMD_PREP} && {pmd_pingpong(64, count)}",
                             f"echo:{delay}", pkgs=PMD_PKGS,
                             add=[(PMD_TREE, "/opt/dpdk")], **kw)
    elif name in LINUX_VARIANTS:
        out, busy = busy_run(run, so, variant_pingpong(name, 64, count), f"echo:{delay}", **kw)
    else:
        out, busy = busy_run(run, so, pingpong(env, 64, count), f"echo:{delay}", **kw)
    d = kv(out)
    ns = float(d["elapsed_us"]) * 1000
    share = [100.0 * n * (1 << SHIFT) / ns for n in busy]
    # blocks are counted whole, and under icount a block that reads a
    # device register midway runs again from there: a hart that
    # polls registers all the time counts a few % over 100
    return {"contender": name, "factor": k, "delay_us": delay / 1000,
            "cpu_busy_pct": min(100.0, share[HART]),
            "cpu_busy_pct_by_hart": share,
            "cores_busy": sum(share) / 100,
            "rtt_p50_us": float(d["rtt_p50_us"])}


# the CPU experiment's slowdowns of the server
CPU_FACTORS = [1, 10, 40, 100, 200]


# ---- the Rocket timing mode (hardware/timing) --------------------------------

# the timing mode's memory latency in core cycles (its default), and the
# range the ratios are given over
TIMING_DRAM = 30
TIMING_DRAMS = [20, 30, 60, 100]


def timing_extra(dram, out=None):
    """QEMU's arguments for the Rocket timing mode at DRAM cycles to memory."""
    return accio.timing_qemu_args(f"rocket:dram={dram}" + (f",out={out}" if out else ""))


def exp_timing(run, quick):
    """The latency and CPU experiments again in the Rocket timing mode
    (caches, memory, branches, multiplies, traps cost a Rocket core's
    cycles), and the 64-byte latency at memory latencies over TIMING_DRAMS."""
    sizes = [64] if quick else [64, 128, 256, 512, 1024]
    count = 50 if quick else 500
    drams = [TIMING_DRAM, 100] if quick else TIMING_DRAMS
    res = {"dram": TIMING_DRAM, "drams": drams, "sizes": sizes, "count": count,
           "peer_ns": PEER_NS, "plugin": os.path.basename(accio.timing_plugin())}
    # first (the command the runner repeats to check it): Linux's round trip
    # against an instant peer, the CPU experiment's base, in this mode
    progress("timing: Linux's round trip against an instant peer")
    base_out = run.guest("timing", pingpong("", 64, 100 if quick else 200), "echo:0",
                         qemu_extra=timing_extra(TIMING_DRAM))
    base_us = float(kv(base_out)["rtt_p50_us"])
    names, cmd, missing, variants, pkgs, add = latency_parts(sizes, count)
    res.update(missing=missing, linux_variants=list(variants), contenders=names)
    progress(f"timing: latency, {len(names)} contenders x {len(sizes)} sizes, "
             f"{count} round trips each, dram {TIMING_DRAM}")

    def latency_at(dram):
        sz = sizes if dram == TIMING_DRAM else [64]
        c = latency_parts(sz, count)[1]
        out = run.guest("timing", c, f"echo:{PEER_NS}", pkgs=pkgs, add=add,
                        qemu_extra=timing_extra(dram))
        return latency_rows(out, names, sz, dram=dram)

    rows = run.map(latency_at, drams)
    res["rows"] = [x for part in rows for x in part]
    # where the cycles go: the breakdown in the timing mode
    # 100 in the quick run too: over 20, a cold start's misses dominate
    # Accio's short round trip (its CPI then rises above Linux's)
    bcount = 100 if quick else 300
    bmodes = "linux,accio" if quick else "linux,busypoll,accio,spin" + (
        ",dpdk" if pmd_available() else "")
    progress(f"timing: breakdown in cycles, {bcount} round trips per mode")
    with tempfile.TemporaryDirectory(prefix="accio-timing-") as tmp:
        js = os.path.join(tmp, "b.json")
        b = run.command("timing", [sys.executable, os.path.join(ROOT, "eval", "breakdown.py"),
                                   "--count", str(bcount), "--hart", str(HART), "--modes", bmodes,
                                   "--peer", f"wire:{PEER_NS}", "--timing", str(TIMING_DRAM),
                                   "--json", js])
        if b.returncode != 0:
            raise SystemExit("eval timing: breakdown failed:\n" + b.stdout[-2000:]
                             + b.stderr[-2000:])
        with open(js) as f:
            bj = json.load(f)["results"]
    res["breakdown"] = {"count": bcount, "modes": bmodes.split(","),
                        "cycles": {m: v["instructions_per_round_trip"] for m, v in bj.items()},
                        "stages": {m: v["stages"] for m, v in bj.items()}}
    # CPU: the CPU experiment's points (every slowdown for Linux, Accio and
    # DPDK, 1x and 40x for Linux's other configurations) with fewer round
    # trips; quick: 40x for Linux and Accio
    so = breakdown.plugin()
    cpu_names = dict(CONTENDERS)
    if pmd_available():
        cpu_names["dpdk"] = None
    ccount = 100 if quick else 500
    if quick:
        points = [(40, "linux"), (40, "accio")]
    else:
        points = ([(k, n) for k in CPU_FACTORS for n in cpu_names]
                  + [(k, n) for k in (1, 40) for n in variants])
    res["cpu"] = {"factors": sorted({k for k, _ in points}), "count": ccount,
                  "base_rtt_us": base_us, "contenders": list(dict.fromkeys(n for _, n in points))}
    res["cpu"]["rows"] = run.map(
        lambda point: cpu_point(run, so, point, cpu_names, base_us, ccount,
                                exp="timing", dram=TIMING_DRAM), points)
    return res


# --multiplex-threads / --multiplex-count: the paper's full run is
# 100,000 round trips per client at T = 1, 4, 64 (make eval-long)
MULTIPLEX = {"threads": None, "count": None, "victims": None}
# Which row a connection loses when every row is taken (the driver's victim
# parameter, accio_ict.victim), compared on the multiplexing workload with
# more clients than rows: (T, round trips per client), full and quick.
VICTIMS = ("clock", "lru", "runnable", "waiting")
VICTIM_RUNS = [(256, 500), (1024, 125)]
VICTIM_RUNS_QUICK = [(96, 20)]
ICT_SYSFS = "/sys/bus/platform/drivers/accio-uncore/11000000.accio"


def exp_multiplex(run, quick):
    threads = MULTIPLEX["threads"] or ([1, 4, 16] if quick else [1, 4, 64, 256, 1024])
    count = MULTIPLEX["count"] or (100 if quick else 2000)
    missing = dict(MISSING)
    if pmd_available():
        missing.pop("dpdk")
        if any(t > DPDK_MAX_T for t in threads):
            missing["dpdk"] = (f"T > {DPDK_MAX_T}: dpdk_dispatch takes at most {DPDK_MAX_T} "
                               "worker processes (each needs an lcore id of its own, and "
                               "DPDK is built with 128)")
    res = {"threads": threads, "count_per_client": count, "peer_ns": PEER_NS,
           "rows": [], "missing": missing}
    tmp = tempfile.mkdtemp(prefix="accio-multiplex-")
    rows = [(name, t) for name in ("linux", "accio") for t in threads]
    if pmd_available():
        # up to DPDK_MAX_T clients, and that many too when T goes beyond
        dts = [t for t in threads if t <= DPDK_MAX_T]
        if max(threads) > DPDK_MAX_T and DPDK_MAX_T not in dts:
            dts.append(DPDK_MAX_T)
        rows += [("dpdk", t) for t in dts]
        # workers that poll their rings: one hart each, so as many as harts
        rows += [("dpdk-poll", t) for t in dts if t <= MULTIPLEX_POLL_MAX_T
                 and (not quick or t == 4)]
    # Linux busy polling, up to as many clients as rows (quick: T=4)
    variants, _ = linux_variants()
    rows += [(name, t) for name in MULTIPLEX_VARIANTS if name in variants
             for t in threads if t <= MULTIPLEX_VARIANT_MAX_T and (not quick or t == 4)]
    # the victim policies: Accio only, each T with its own count
    vruns = MULTIPLEX["victims"]
    if vruns is None:
        vruns = VICTIM_RUNS_QUICK if quick else VICTIM_RUNS
    rows += [("accio", t, n, v) for t, n in vruns for v in VICTIMS]

    def one(row):
        name, t = row[:2]
        tag = f"-{row[3]}" if len(row) > 2 else ""
        pcap = os.path.join(tmp, f"wire-{name}-{t}{tag}.pcap")   # a capture of its own
        try:
            if name.startswith("dpdk"):
                return multiplex_dpdk(run, t, count, pcap, name)
            if len(row) > 2:
                return multiplex_sockets(run, name, t, row[2], pcap, victim=row[3])
            return multiplex_sockets(run, name, t, count, pcap)
        finally:
            if os.path.exists(pcap):
                os.unlink(pcap)

    try:
        done = run.map(one, rows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res["rows"] = [x for x in done if "victim" not in x]
    res["victims"] = [x for x in done if "victim" in x]
    return res


def _wire_fields(turn, flows, fair, window=()):
    """window: the turnarounds whose reply came while every client ran
    (the fairness window): the steady state of T clients, without the
    start-up of some and the exits of others."""
    turn.sort()
    window = sorted(window)
    return {"wire_flows": flows, "wire_n": len(turn), "fairness": fair,
            "wire_window_n": len(window),
            "wire_window_p50_us": round(window[len(window) // 2] / 1000, 1) if window else None,
            "wire_window_p99_us": round(window[len(window) * 99 // 100] / 1000, 1)
            if window else None,
            "wire_p50_us": round(turn[len(turn) // 2] / 1000, 1) if turn else None,
            "wire_p99_us": round(turn[len(turn) * 99 // 100] / 1000, 1) if turn else None,
            "wire_quantiles_us": [round(turn[min(len(turn) - 1, int(q / 100 * len(turn)))] / 1000, 1)
                                  for q in (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 100)]
            if turn else []}


def hist_ns(k):
    """The middle of udp_pingpong's proc_hist_ns bucket k, in ns: keys
    below 16 are exact; key 16 e + s holds [(16 + s) << (e - 4),
    (17 + s) << (e - 4))."""
    if k < 16:
        return float(k)
    e, sub = divmod(k, 16)
    return ((16 + sub) << (e - 4)) + (1 << (e - 4)) / 2


def hist_quantiles(hist, qs):
    """The q-th percentiles (µs) of a pooled bucket histogram {key: count},
    each the middle of the bucket that holds sample int(q / 100 * N) (the
    same rank the clients' own percentiles take), within 3 %."""
    n = sum(hist.values())
    keys = sorted(hist)
    out = []
    for q in qs:
        rank, seen = min(n - 1, int(q / 100 * n)), 0
        for k in keys:
            seen += hist[k]
            if seen > rank:
                out.append(round(hist_ns(k) / 1000, 1))
                break
    return out


def client_done(text, count):
    """A client's key=value output when all its round trips were made and
    every reply it got was intact, else None."""
    d = kv(text)
    if not re.search(rf"datagrams={count} bad=0$", text, re.M) or "lost" not in d:
        return None
    return d


def multiplex_sockets(run, name, t, count_all, pcap, victim=None):
    """victim: the driver's row eviction policy for this run (else its
    default), with the count as given (not divided above 256 clients)."""
    pre, prog, args, post = "", "udp_pingpong", "", ""
    if name in LINUX_VARIANTS:
        env = ""
        pre, prog, args, post = LINUX_VARIANTS[name]
    else:
        env = CONTENDERS[name]
    # 1024 clients: a quarter of the round trips each, the same total
    # as 256 clients (more than 64 clients share the 64 ICT rows)
    count = count_all // (4 if t > 256 and victim is None else 1)
    policy = (f"echo {victim} > /sys/module/accio_ict/parameters/victim && "
              if victim else "")
    # -t: under overload a kernel may drop a datagram; the client
    # counts it lost after a second instead of waiting for ever
    # udp_multi forks the T clients, then releases them at once
    # -C: each client counts the replies it took on each hart
    # the ICT's row installs and evictions, before and after
    ict = f"{ICT_SYSFS}/installs {ICT_SYSFS}/evictions"
    cmd = (f"{policy}cat {ict} > /tmp/ict0; {pre}{env} udp_multi -T {t} -P {prog} -o /tmp/pp "
           f"-n {count} -m 64 -p 7 -t 1000 -C {args}{post}; echo @@ict@@; cat /tmp/ict0 {ict}; "
           f"for i in $(seq {t}); do echo @@c$i@@; cat /tmp/pp.$i; done")
    progress(f"multiplex: {name}, T={t} clients x {count} round trips"
             + (f", victim policy {victim}" if victim else ""))
    out = run.guest("multiplex", cmd, f"echo:{PEER_NS}", timeout=max(3000, 3 * count),
                    pcap=pcap)
    sec = sections(out)
    p50s, bad, samples, lost, diag = [], 0, 0, 0, []
    harts, hist, cpu = {}, {}, []
    for i in range(1, t + 1):
        text = sec.get(f"c{i}", "")
        d = client_done(text, count)
        if d is None:
            bad += 1
            continue
        lost += int(d["lost"])
        for hn in filter(None, d.get("rx_harts", "").split(",")):
            h, n = hn.split(":")
            harts[h] = harts.get(h, 0) + int(n)
        if int(d["lost"]):
            # what the client's kernel showed at its first loss
            diag += [f"client {i}: " + ln for ln in text.splitlines()
                     if ln.startswith(("diag ", "lost="))][:60]
        if "cpu_self_us" in d:
            cpu.append(float(d["cpu_self_us"]) / count)
        if "proc_hist_ns" not in d:
            continue
        samples += int(d["hw_samples"])
        for kv_ in d["proc_hist_ns"].split(","):
            k, c = kv_.split(":")
            hist[int(k)] = hist.get(int(k), 0) + int(c)
        p50s.append(float(d["proc_p50_us"]))
    # every client's samples pooled (not its percentiles: those would
    # give each client's maximum the weight of 1 in 22 samples)
    pts = hist_quantiles(hist, range(1, 101)) if hist else []
    p50, p99 = (pts[49], pts[98]) if pts else (None, None)
    cpu.sort()
    row = {"contender": name, "threads": t, "count": count,
           "clients_ok": t - bad,
           "hw_samples": samples, "lost": lost,
           "rx_harts": dict(sorted(harts.items(), key=lambda kv: int(kv[0]))),
           "loss_diagnostics": diag,
           "pooled_quantiles_us": pts,
           "p50_us": p50, "p99_us": p99,
           "median_client_p50_us": sorted(p50s)[len(p50s) // 2]
           if p50s else None,
           # each client's CPU time per measured round trip (µs)
           "cpu_per_rt_us": {"min": round(cpu[0], 1), "p50": round(cpu[len(cpu) // 2], 1),
                             "max": round(cpu[-1], 1)} if cpu else None}
    # the row cache during the run (warm-up and start-up included)
    ict = [int(x) for x in sec.get("ict", "").split() if x.isdigit()]
    if len(ict) == 4:
        row["row_installs"], row["row_evictions"] = ict[2] - ict[0], ict[3] - ict[1]
    if victim:
        row["victim"] = victim
    row.update(_wire_fields(*wire_turnarounds(pcap, skip=PINGPONG_WARM)))
    return row


def multiplex_dpdk(run, t, count, pcap, name="dpdk"):
    """The paper's design for DPDK with many connections: one dispatcher
    owns the NIC, T worker processes are the clients (dpdk_dispatch -c).
    No worker sees its request's NIC timestamp, so the processing time is
    the wire's turnaround per client flow (eval/wirecap.py)."""
    poll = name == "dpdk-poll"
    progress(f"multiplex: {name} (dispatcher + {'polling' if poll else 'sleeping'} workers), "
             f"T={t} clients x {count} round trips")
    out = run.guest("multiplex", pmd_dispatch_clients(t, count, poll=poll), f"echo:{PEER_NS}",
                    timeout=max(3000, 3 * count), pkgs=PMD_PKGS,
                    add=[(PMD_TREE, "/opt/dpdk")], pcap=pcap)
    sec = sections(out)
    done = [client_done(sec.get(f"c{w}", ""), count) for w in range(t)]
    bad = done.count(None)
    lost = sum(int(d["lost"]) for d in done if d is not None)
    turn, flows, fair, window = wire_turnarounds(pcap)
    row = {"contender": name, "threads": t, "count": count, "clients_ok": t - bad,
           "hw_samples": 0, "lost": lost, "loss_diagnostics": [],
           "dispatcher_ok": "dispatch_rc=0" in out, "dispatcher": dispatcher_counts(out)}
    row.update(_wire_fields(turn, flows, fair, window))
    # its processing time is the wire's turnaround (the plot and the table)
    row.update(pooled_quantiles_us=row["wire_quantiles_us"], p50_us=row["wire_p50_us"],
               p99_us=row["wire_p99_us"], median_client_p50_us=None)
    return row


def dispatcher_counts(out):
    """dpdk_dispatch's own counters (what it printed before the clients'
    sections): datagrams sent, not for a worker, dropped on a full worker
    ring, and the FUTEX_WAKE calls it made, summed over the workers."""
    head = kv(out.split("@@c0@@", 1)[0].replace(" ", "\n"))
    wake = [int(v) for k, v in head.items() if k.startswith("wakeups_w")]
    return {"sent": int(head.get("sent", -1)), "other": int(head.get("other", -1)),
            "ring_full": int(head.get("ring_full", -1)), "futex_wakes": sum(wake)}


def exp_breakdown(run, quick, outdir):
    count = 40 if quick else 1000
    js = os.path.join(outdir, "breakdown-stages.json")
    png = os.path.join(outdir, "breakdown.png")
    progress(f"breakdown: {count} round trips per mode, wire peer at {PEER_NS} ns")
    r = run.command("breakdown", [sys.executable, os.path.join(ROOT, "eval", "breakdown.py"),
                        "--count", str(count), "--hart", str(HART),
                        "--modes", "linux" + (",busypoll" if quick else ",nocsum,busypoll" +
                                              ("" if os.path.exists(URING_UNAVAILABLE)
                                               else ",uring")) +
                        ",accio,spin,mmio" + (",dpdk" if pmd_available() else ""),
                        "--peer", f"wire:{PEER_NS}", "--json", js, "--plot", png])
    if r.returncode != 0:
        raise SystemExit("eval breakdown failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])
    with open(js) as f:
        b = json.load(f)
    return {"count": count, "peer_ns": PEER_NS, "table": r.stdout.split("\n\n")[0],
            "totals": {m: v["instructions_per_round_trip"] for m, v in b["results"].items()},
            "stages": {m: v["stages"] for m, v in b["results"].items()},
            "plot_written": True}


# ---- plots -------------------------------------------------------------------

COLORS = {"linux": "tab:blue", "accio": "tab:orange", "accio-spin": "tab:green",
          "accio-auto": "tab:red", "dpdk": "tab:purple"}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _label(ax, xlabel, ylabel, title, logx=False, logy=True, **legend):
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(**legend)


def _per_contender(ax, res, xkey, ykey, style="o-", suffix=""):
    names = list(dict.fromkeys(r["contender"] for r in res["rows"]))
    for name in names:
        rows = [r for r in res["rows"] if r["contender"] == name]
        ax.plot([r[xkey] for r in rows], [r[ykey] for r in rows], style,
                color=COLORS.get(name), label=name + suffix)


def _save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_freq(res, path):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    x = [r["size"] for r in res["rows"]]
    ax.plot(x, [r["rtt_p50_us_62mips"] for r in res["rows"]], "o-",
            label="62.5 MIPS (icount shift 4)")
    ax.plot(x, [r["scaled_40x"] for r in res["rows"]], "s--", label="scaled 40x")
    ax.plot(x, [r["scaled_200x"] for r in res["rows"]], "s:", label="scaled 200x")
    ax.plot(x, [r["rtt_p50_us_1gips"] for r in res["rows"]], "^-",
            label="1 GIPS (shift 0), measured")
    _label(ax, "datagram size (B)", "Linux-socket RTT p50 (µs)",
           "Frequency scaling (paper 8.2, fig. 5)", fontsize=8)
    _save(plt, fig, path)


def plot_latency(res, path):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    _per_contender(ax, res, "size", "proc_p50_us", "o-", " p50")
    _per_contender(ax, res, "size", "proc_p99_us", "x:", " p99")
    _label(ax, "datagram size (B)", "client processing time (µs, 62.5 MIPS)",
           "Processing latency (paper 8.3, fig. 6); RDMA: missing", fontsize=7, ncol=2)
    _save(plt, fig, path)


def plot_throughput(res, path):
    plt = _plt()
    sizes = res["sizes"]
    fig, axes = plt.subplots(1, len(sizes), figsize=(6.5 * len(sizes), 4), squeeze=False)
    for ax, s in zip(axes[0], sizes):
        for name in CONTENDERS:
            rows = [r for r in res["rows"] if r["contender"] == name and r["size"] == s]
            x = [r["offered_pps"] or 2 * max(res["offered_pps"]) for r in rows]
            ax.plot(x, [r["delivered_pps"] for r in rows], "o-", color=COLORS[name],
                    label=name)
        ax.plot(x, x, "k:", lw=0.8, label="offered")
        _label(ax, "offered datagrams/s (rightmost: line rate)",
               "delivered to the application (datagrams/s)", f"Throughput, {s} B (paper 8.4)",
               logx=True, fontsize=8)
    _save(plt, fig, path)


def plot_cpu(res, path):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    _per_contender(ax, res, "factor", "cpu_busy_pct")
    ax.plot([40], [33], "*", color="tab:orange", ms=12, label="paper: Accio at 40x")
    ax.plot([40], [54], "*", color="tab:blue", ms=12, label="paper: Linux at 40x")
    ax.set_ylim(0, 105)
    _label(ax, "server slowdown (k: the server takes k/40 of the SoC's round trip)",
           f"CPU busy, client hart {HART} (%)", "CPU utilization (paper 8.5, fig. 7)",
           logx=True, logy=False, fontsize=8)
    _save(plt, fig, path)


def plot_multiplex(res, path):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    styles = ["-", "--", ":", "-.", (0, (1, 4))]
    for name in ("linux", "accio", "dpdk"):
        rows = [r for r in res["rows"] if r["contender"] == name]
        for i, r in enumerate(rows):
            q = r["pooled_quantiles_us"]
            if not q:
                continue
            ax.plot(q, [(j + 1) / len(q) for j in range(len(q))], linestyle=styles[i % 5],
                    color=COLORS[name], label=f"{name} T={r['threads']}")
    _label(ax, "client processing time (µs)", "CDF", "Connection multiplexing (paper 8.6, fig. 8)",
           logx=True, logy=False, fontsize=7, ncol=2)
    _save(plt, fig, path)


def plot_timing(res, path):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    rows = [x for x in res["rows"] if x["size"] == 64]
    for name in ("linux", "linux-busypoll", "accio", "accio-spin", "dpdk"):
        pts = sorted((x["dram"], x["proc_p50_us"]) for x in rows if x["contender"] == name)
        if pts:
            ax.plot([d for d, _ in pts], [v for _, v in pts], "o-", color=COLORS.get(name),
                    label=name)
    _label(ax, "memory latency (core cycles)", "processing p50, 64 B (µs)",
           "Rocket timing mode: latency against memory latency", fontsize=8)
    _save(plt, fig, path)


PLOTS = {"freq": plot_freq, "latency": plot_latency, "throughput": plot_throughput,
         "cpu": plot_cpu, "multiplex": plot_multiplex, "timing": plot_timing}


# ---- the report ----------------------------------------------------------------

def verdict(ok, criterion):
    """A paper-vs-here verdict computed from the data, with its criterion."""
    if ok is None:
        return f"no data ({criterion})"
    return f"{'holds' if ok else 'does not hold'} ({criterion})"


def _f(x, nd=1):
    return "-" if x is None else f"{x:,.{nd}f}"


def report_freq(r):
    lines = ["| size (B) | RTT p50 at 62.5 MIPS (µs) | scaled 40x | scaled 200x | "
             "measured at 1 GIPS | measured speed-up (16x ideal) |", "|---:|---:|---:|---:|---:|---:|"]
    for x in r["rows"]:
        lines.append(f"| {x['size']} | {_f(x['rtt_p50_us_62mips'])} | {_f(x['scaled_40x'], 2)} | "
                     f"{_f(x['scaled_200x'], 2)} | {_f(x['rtt_p50_us_1gips'])} | "
                     f"{x['speedup_measured']:.1f}x |")
    sp = [x["speedup_measured"] for x in r["rows"]]
    off = max(abs(x / 16 - 1) for x in sp)
    paper = ("| | paper (FPGA at 50 MHz vs 2 GHz servers) | here | verdict |\n"
             "|---|---|---|---|\n"
             "| scaling rule | RTT x 50 MHz / 2 GHz (40x); CoreMark says 200x | "
             "icount shift 4 (62.5 MIPS) vs shift 0 (1 GIPS): 16x more instructions "
             "per second, the SoC's one clock (bus, NIC, uncore) with them | |\n"
             f"| does clock scaling predict the faster machine? | 40x-scaled RTTs "
             f"\"consistently worse than, but in the same order of magnitude as\" the "
             f"servers' | a 16x faster clock gave {min(sp):.1f}x to {max(sp):.1f}x shorter "
             f"RTTs: scaling by the clock is off by {off * 100:.0f} % at most here (same "
             "instruction set and memory system; the wire and the peer do not scale, the "
             f"guest's timer-driven work does) | {verdict(off <= 0.5, 'within 2x of the clock ratio')} |\n")
    return "\n".join(lines) + "\n\n" + paper


def is_linux(name):
    return name == "linux" or name.startswith("linux-")


def linux_best(rows, key, where=lambda x: True):
    """The Linux configuration with the lowest `key` among rows (those
    `where` keeps): (name, value)."""
    cand = [(x[key], x["contender"]) for x in rows if is_linux(x["contender"]) and where(x)]
    v, name = min(cand)
    return name, v


def report_latency(r):
    lines = ["| contender | size (B) | processing p50 / p99 (µs) | scaled 40x p50 (µs) | "
             "scaled 200x p50 (µs) | vs Linux p50 |", "|---|---:|---|---:|---:|---:|"]
    lin = {x["size"]: x["proc_p50_us"] for x in r["rows"] if x["contender"] == "linux"}
    for x in r["rows"]:
        lines.append(f"| {x['contender']} | {x['size']} | {_f(x['proc_p50_us'])} / "
                     f"{_f(x['proc_p99_us'])} | {_f(x['proc_p50_us'] / 40, 2)} | "
                     f"{_f(x['proc_p50_us'] / 200, 3)} | 1/{lin[x['size']] / x['proc_p50_us']:.1f} |")
    for k, why in r["missing"].items():
        lines.append(f"| {k} | - | missing: {why} | | | |")
    acc = {x["size"]: x["proc_p50_us"] for x in r["rows"] if x["contender"] == "accio"}
    spin = {x["size"]: x["proc_p50_us"] for x in r["rows"] if x["contender"] == "accio-spin"}
    dpdk = {x["size"]: x["proc_p50_us"] for x in r["rows"] if x["contender"] == "dpdk"}
    s0 = min(acc)
    if s0 in dpdk:
        vs = (f"blocking {100 * (1 - acc[s0] / dpdk[s0]):.0f} % less processing time "
              f"({_f(acc[s0])} vs {_f(dpdk[s0])} µs), spinning "
              f"{100 * (1 - spin[s0] / dpdk[s0]):.0f} % less ({_f(spin[s0])} µs)")
    else:
        vs = "missing (no DPDK processing time here)"
    ratio = lin[s0] / acc[s0]
    best, bv = linux_best(r["rows"], "proc_p50_us", lambda x: x["size"] == s0)
    intro = ""
    if r.get("linux_variants"):
        intro = ("Linux in other configurations of the same kernel and NIC (rows linux-*): "
                 "linux-nocsum with the NIC's checksum offload off (`ethtool -K eth0 rx off "
                 "tx off`; plain linux has it on), linux-irq-local with the NIC's interrupt "
                 "on the client's hart, linux-busypoll with `SO_BUSY_POLL` 1000 µs, "
                 "linux-uring* through an io_uring (Debian's liburing: send + recvmsg in one "
                 "`io_uring_enter`; a multishot recvmsg on provided buffers; a polling "
                 "submission thread with the completions polled). "
                 f"**Linux (best)** at {s0} B: {best}, {_f(bv)} µs p50.\n\n")
    paper = ("| | paper | here | verdict |\n|---|---|---|---|\n"
             f"| Accio (blocking) vs Linux sockets, 64 B | 1/12 | 1/{ratio:.1f} | "
             f"{verdict(ratio >= 6, 'at least half the paper factor')} |\n"
             f"| Accio (blocking) vs Linux (best: {best}), 64 B | (goal here: 1/10 or "
             f"better) | 1/{bv / acc[s0]:.1f} | "
             f"{verdict(bv / acc[s0] >= 10, 'at most 1/10 of the best Linux')} |\n"
             f"| Accio at 200x scaling, 64 B | about 0.5 µs | {acc[s0] / 200:.2f} µs | "
             f"{verdict(0.25 <= acc[s0] / 200 <= 1.0, 'within 2x')} |\n"
             f"| Accio vs DPDK, 64 B | 31 % faster | {vs} | "
             f"{verdict(acc[s0] < dpdk[s0] if s0 in dpdk else None, 'Accio blocking below DPDK')} |\n"
             + (f"| Accio (blocking) vs DPDK (best: dpdk, the only DPDK configuration "
                f"measured), 64 B | (goal here: 0.7x or less) | {acc[s0] / dpdk[s0]:.2f}x | "
                f"{verdict(acc[s0] / dpdk[s0] <= 0.7, '0.7x of DPDK or less')} |\n"
                if s0 in dpdk else ""))
    return intro + "\n".join(lines) + "\n\n" + paper


def report_throughput(r):
    lines = ["| contender | size (B) | offered (datagrams/s) | received / sent | "
             "delivered (datagrams/s) | delivered (Mb/s) | row drops |",
             "|---|---:|---:|---|---:|---:|---:|"]
    for x in r["rows"]:
        off = f"{x['offered_pps']:,}" if x["offered_pps"] else "line rate"
        lines.append(f"| {x['contender']} | {x['size']} | {off} | {x['received']:,} / "
                     f"{x['sent']:,} | {_f(x['delivered_pps'], 0)} | {_f(x['delivered_mbps'])} | "
                     f"{'-' if x['row_rx_drops'] is None else x['row_rx_drops']} |")
    acc = [x for x in r["rows"] if x["contender"] != "linux"]
    best64 = max((x for x in acc if x["size"] == 64), key=lambda x: x["delivered_mbps"])
    best = max(acc, key=lambda x: x["delivered_mbps"])
    bus = r.get("bus_rows", [])
    out = "\n".join(lines)
    if bus:
        b = r["bus"]
        out = (f"**The engine against the bus.** The NIC's bus (calibrated against the RTL "
               f"SoC, on the SoC's one clock): {b['width_bits']} bits a cycle at "
               f"{b['hz'] / 1e6:g} MHz = {b['limit_mbps']:.1f} Mb/s of frame bytes; both "
               "directions share it, a received frame's ring record is visible once its DMA "
               "is done, and a full receive FIFO pauses the sender (the wire peer at line "
               "rate). The receiver reads each datagram in place (udp_sink -z, spinning): "
               "engine = the stream into the engine over the span of the received datagrams' "
               "NIC timestamps (datagrams dropped for want of ring space counted); ring = "
               "what reached the ring and was read; application = by the receiver's clock.\n\n"
               "| size (B) | bus limit (Mb/s payload) | engine (Mb/s) | engine / limit | "
               "ring (Mb/s) | application (Mb/s) | received / sent |\n"
               "|---:|---:|---:|---:|---:|---:|---|\n"
               + "\n".join(f"| {x['size']} | {x['bus_limit_mbps']:.1f} | {x['engine_mbps']:.1f} | "
                           f"{100 * x['engine_of_limit']:.1f} % | {x['ring_mbps']:.1f} | "
                           f"{x['app_mbps']:.1f} | {x['received']:,} / {x['count']:,} |"
                           for x in bus)
               + "\n\n**A sink on POSIX sockets** (poll() and recv(), one hart, the wire peer "
               "at the offered rate):\n\n" + out)
        big = max(bus, key=lambda x: x["size"])
        here = (f"the engine: {big['engine_mbps']:.1f} of {big['bus_limit_mbps']:.1f} Mb/s "
                f"({100 * big['engine_of_limit']:.1f} %) at {big['size']} B, "
                + ", ".join(f"{100 * x['engine_of_limit']:.0f} % at {x['size']} B"
                            for x in bus if x is not big)
                + f"; a POSIX sink: {best64['delivered_mbps']:.1f} Mb/s at 64 B at most "
                f"({best64['contender']}), {best['delivered_mbps']:.1f} Mb/s at {best['size']} B: "
                "there the application's CPU at 62.5 MIPS is the limit")
    else:
        here = (f"{best64['delivered_mbps']:.1f} Mb/s of payload at most ({best64['contender']}; "
                f"{best['delivered_mbps']:.1f} Mb/s with {best['size']} B datagrams)")
    ok = max(bus, key=lambda x: x["size"])["engine_of_limit"] >= 0.9 if bus else None
    paper = ("| | paper | here | verdict |\n|---|---|---|---|\n"
             "| a sink under a stream of datagrams | 3.1 Gb/s, 97 % of the FPGA's bus "
             f"(64 bit x 50 MHz = 3.2 Gb/s) | {here} | "
             f"{verdict(ok, 'the engine at 90 % of its bus or more')} |\n")
    return out + "\n\n" + paper


def report_cpu(r):
    names = r.get("contenders", list(CONTENDERS))
    lines = [f"The server's delay at slowdown k is k/40 of the SoC's own Linux-socket round "
             f"trip ({r['base_rtt_us']:.1f} µs p50 against an instant peer): the paper's "
             "servers are 40x faster than its SoC, so at 40x the server is as slow as the "
             "SoC, which is what the paper's slowdown approximates.\n",
             f"CPU busy: the client's hart (hart {HART}) executing instructions, from the "
             "instruction counter (a halted hart executes none), and in brackets all four "
             "harts together in cores (Linux's receive path runs on hart 0, where the NIC "
             "interrupt is taken)"
             + (", with the cycles its uncore loads and stores stall it.\n"
                if r.get("busy_counts_uncore_stalls") else
                ". **These results count instructions only:** a hart stalled on an uncore "
                "load (15 cycles on this SoC) counts as idle for 14 of them, so a hart that "
                "spins on a ring's register reads far below its real 100 %; the code that "
                "made them predates the stall accounting (rerun: make eval).\n"),
             "| slowdown | server delay (µs) | " + " | ".join(
                 f"{n}: CPU busy [cores] / RTT p50" for n in names) + " | Accio / Linux |",
             "|---:|---:|" + "---|" * len(names) + "---:|"]
    for k in r["factors"]:
        rows = {x["contender"]: x for x in r["rows"] if x["factor"] == k}
        cells = " | ".join(f"{rows[n]['cpu_busy_pct']:.1f} % [{rows[n]['cores_busy']:.2f}] / "
                           f"{rows[n]['rtt_p50_us']:.0f} µs" for n in names)
        ratio = rows["accio"]["cpu_busy_pct"] / max(0.01, rows["linux"]["cpu_busy_pct"])
        lines.append(f"| {k}x | {rows['linux']['delay_us']:.0f} | {cells} | {ratio:.2f} |")
    variants = r.get("linux_variants", [])
    if variants:
        lines.append("")
        lines.append("Linux in other configurations (the latency experiment names them), "
                     "at " + " and ".join(f"{k}x" for k in r["variant_factors"]) + ":")
        lines.append("")
        lines.append("| Linux configuration | " + " | ".join(
            f"{k}x: CPU busy [cores] / RTT p50" for k in r["variant_factors"]) + " |")
        lines.append("|---|" + "---|" * len(r["variant_factors"]))
        for n in ["linux"] + variants:
            cells = []
            for k in r["variant_factors"]:
                x = [y for y in r["rows"] if y["contender"] == n and y["factor"] == k][0]
                cells.append(f"{x['cpu_busy_pct']:.1f} % [{x['cores_busy']:.2f}] / "
                             f"{x['rtt_p50_us']:.0f} µs")
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
    at40 = {x["contender"]: x["cpu_busy_pct"] for x in r["rows"] if x["factor"] == 40}
    polls = [at40["accio-spin"]] + ([at40["dpdk"]] if "dpdk" in at40 else [])
    best, bv = linux_best(r["rows"], "cpu_busy_pct", lambda x: x["factor"] == 40)
    paper = ("| at 40x slowdown | paper | here | verdict |\n|---|---|---|---|\n"
             f"| Accio (blocking) | 33 % | {at40['accio']:.1f} % | "
             f"{verdict(at40['accio'] < at40['linux'], 'below Linux')} |\n"
             f"| Linux sockets | 54 % | {at40['linux']:.1f} % | "
             f"{verdict(at40['linux'] < 100, 'not busy all the time')} |\n"
             f"| busy polling (DPDK, RDMA; here Accio spinning and DPDK) | 100 % | "
             f"Accio spinning {at40['accio-spin']:.1f} %"
             + (f", DPDK {at40['dpdk']:.1f} %" if "dpdk" in at40 else "")
             + f" | {verdict(min(polls) >= 95, 'every poller 95 % or more')} |\n"
             f"| Accio (blocking) vs Linux (best at 40x: {best}, {bv:.1f} %) | (goal here: "
             f"0.5x or less) | {at40['accio'] / max(0.01, bv):.2f}x | "
             f"{verdict(at40['accio'] <= 0.5 * bv, '0.5x of the best Linux or less')} |\n")
    return "\n".join(lines) + "\n\n" + paper


def report_multiplex(r):
    lines = ["| contender | T | clients done (every reply checked) | datagrams lost | "
             "round trips with NIC timestamps | processing p50 / p99 (µs, pooled) | "
             "turnaround on the wire p50 / p99 (µs, pooled) | replies taken on hart 0/1/2/3 (%) |",
             "|---|---:|---:|---:|---:|---|---|---|"]
    for x in r["rows"]:
        stamps = (f"{x['hw_samples']:,} of {x['threads'] * x.get('count', r['count_per_client']):,}"
                  if x["contender"] != "dpdk" else "none reach a worker")
        proc = (f"{_f(x['p50_us'])} / {_f(x['p99_us'])}" if x["contender"] != "dpdk"
                else "(the turnaround)")
        lines.append(f"| {x['contender']} | {x['threads']} | {x['clients_ok']} | {x['lost']:,} | "
                     f"{stamps} | {proc} | "
                     f"{_f(x.get('wire_p50_us'))} / {_f(x.get('wire_p99_us'))} | "
                     f"{_hart_shares(x.get('rx_harts'))} |")
    for k, why in r["missing"].items():
        lines.append(f"| {k} | - | - | - | - | missing: {why} | | |")
    share = ["| contender | T | window (ms) | round trips per second, all clients | "
             "Jain's index | round trips per client, min / max | fair-share turn (ms) | "
             "turnaround p99 / fair-share turn: while all ran, whole run | "
             "CPU time per round trip, min / median / max of the clients (µs) |",
             "|---|---:|---:|---:|---:|---|---:|---|---|"]
    for x in r["rows"]:
        f = x.get("fairness")
        turn = x["threads"] / f["round_trips_per_s"] * 1e3 if f and f["round_trips_per_s"] else None
        c = x.get("cpu_per_rt_us")
        cpu = f"{c['min']:,.0f} / {c['p50']:,.0f} / {c['max']:,.0f}" if c else "-"

        def turns(key):
            return f"{x[key] / 1e3 / turn:.1f}" if x.get(key) else "-"
        share.append(f"| {x['contender']} | {x['threads']} | "
                     + (f"{f['window_ms']:,.1f} | {f['round_trips_per_s']:,.0f} | "
                        f"{f['jain']:.3f} | {f['min']:,} / {f['max']:,} | {turn:,.2f} | "
                        f"{turns('wire_window_p99_us')}, {turns('wire_p99_us')} | {cpu} |"
                        if f and turn else "- | - | - | no window | - | - | - |"))
    acc = {x["threads"]: x["p50_us"] for x in r["rows"] if x["contender"] == "accio"}
    wire = {(x["contender"], x["threads"]): x.get("wire_p50_us") for x in r["rows"]}
    dp = sorted(t for c, t in wire if c == "dpdk")
    t = r["threads"]
    def dpdk_best(n):
        """DPDK's shortest turnaround p50 at T=n: sleeping or polling workers."""
        return min(v for (c, m), v in wire.items() if c.startswith("dpdk") and m == n)

    def at(n):
        others = "".join(f", {label} {_f(wire[(c, n)])}" for c, label in
                         (("accio", "Accio"), ("linux", "Linux")) if (c, n) in wire)
        return f"T={n}: DPDK (best) {_f(dpdk_best(n))}{others} µs"
    dpdk = "; ".join(at(n) for n in dp) if dp else "missing"
    similar = (acc[4] <= 1.2 * acc[1] and acc[1] <= 1.2 * acc[4]) if 1 in acc and 4 in acc \
        else None
    slowest = all(dpdk_best(n) > max([v for (c, m), v in wire.items()
                                           if m == n and c in ("accio", "linux")
                                           and v is not None] or [0])
                  for n in dp) if dp else None
    # the tail against Linux at its best at each T (processing p99, pooled)
    tails, tails_ok = [], True
    for n in t:
        lin = [(x["p99_us"], x["contender"]) for x in r["rows"]
               if is_linux(x["contender"]) and x["threads"] == n and x.get("p99_us")]
        a99 = [x["p99_us"] for x in r["rows"] if x["contender"] == "accio" and x["threads"] == n]
        if lin and a99 and a99[0] is not None:
            v, who = min(lin)
            tails.append(f"T={n}: {_f(a99[0])} vs {_f(v)} ({who})")
            tails_ok = tails_ok and a99[0] <= v
    paper = ("| | paper | here | verdict |\n|---|---|---|---|\n"
             f"| Accio's processing p99 vs Linux (best) at each T | (goal here: no worse) | "
             f"{'; '.join(tails) or '-'} µs | {verdict(tails_ok if tails else None, 'no worse at every T')} |\n"
             f"| Accio, T=1 vs T=4 | similar | p50 {_f(acc.get(1))} vs {_f(acc.get(4))} µs | "
             f"{verdict(similar, 'within 1.2x')} |\n"
             f"| Accio at more clients than cores | some loss (context switches) | "
             f"T={t[-1]}: p50 {_f(acc.get(t[-1]))} µs | "
             f"{verdict(acc[t[-1]] > acc[1] if 1 in acc and t[-1] in acc else None, 'above T=1')} |\n"
             f"| DPDK (dispatcher + shared-memory FIFOs) | slowest | turnaround p50 {dpdk} | "
             f"{verdict(slowest, 'the longest turnaround at every T it ran')} |\n")
    return ("Pooled: each client prints all its processing times in buckets of 1/16 of an "
            "octave (udp_pingpong's proc_hist_ns); the CDF and the percentiles are those of "
            "all clients' samples together, each within 3 %. A round trip has a "
            "processing time when both its NIC timestamps reached the client: the request's "
            "transmit stamp is matched to it by its key (SOF_TIMESTAMPING_OPT_ID) whenever it "
            "comes, so an overloaded kernel that completes sends late still gives its "
            "samples. The turnaround comes from a capture of the "
            "NIC's wire (eval/wirecap.py): per client flow, a reply's arrival to the same "
            "client's next request, pooled over all clients; it includes each program's own "
            "work between the two (udp_pingpong reads its transmit timestamp from the error "
            "queue there). DPDK runs the paper's design: one dispatcher process owns the NIC "
            "(net_accio) and hands replies to T worker processes, the clients, through "
            "rte_rings (dpdk_dispatch -c), waking a worker that sleeps on its futex; a worker "
            "never sees its request's NIC timestamp, "
            "so the turnaround is its processing time. The kernel places each socket "
            "client on a hart of its choosing (udp_pingpong -C counts where each reply "
            "was taken): a blocking Linux client on the hart that takes the NIC's "
            "interrupt needs no wake-up on another hart, so a figure of few clients "
            "depends on where they landed, and that placement is one of the things a "
            "change of phase (seed, slice) can move.\n\n"
            + "\n".join(lines) + "\n\n"
            "How the clients shared the server, from the same capture: the window runs "
            "from the clients' common start (the first measured request of any) to the "
            "first client's last reply, so that no client had finished; each client's "
            "round trips in the window (0 for one that did not get to run), "
            "Jain's fairness index over them (1: equal shares; 1/T: one client takes "
            "all), their min and max, and all clients' round trips per second. The "
            "fair-share turn is how long T clients sharing the harts evenly wait for "
            "one turn each at the rate they reached (T over the round trips per "
            "second); then the turnaround's p99 in such turns (1: every "
            "client's next request leaves one fair turn after its reply), first over "
            "the round trips whose reply came in the window (T clients, the steady "
            "state), then over the whole run (with the start-up and the exits of the "
            "clients that finished first, when fewer than T share the harts); the "
            "last column is each client's CPU time per round trip (its own count, "
            "CLOCK_PROCESS_CPUTIME_ID): CFS shares CPU time, so a client whose round "
            "trips cost less makes more of them.\n\n"
            + "\n".join(share) + "\n\n" + report_victims(r) + paper)


def report_victims(r):
    """The victim policies of the row cache, side by side."""
    if not r.get("victims"):
        return ""
    lines = ["| victim policy | T | round trips per client | clients done | lost | "
             "row installs per round trip | round trips per second | Jain's index | "
             "processing p50 / p99 (µs) | turnaround p50 / p99 (µs) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for x in r["victims"]:
        f = x.get("fairness") or {}
        rts = x["threads"] * (x["count"] + PINGPONG_WARM)
        inst = f"{x['row_installs'] / rts:.2f}" if "row_installs" in x else "-"
        lines.append(f"| {x['victim']} | {x['threads']} | {x['count']} | {x['clients_ok']} | "
                     f"{x['lost']:,} | {inst} | "
                     + (f"{f['round_trips_per_s']:,.0f} | {f['jain']:.3f} | "
                        if f else "- | - | ")
                     + f"{_f(x['p50_us'])} / {_f(x['p99_us'])} | "
                     f"{_f(x.get('wire_p50_us'))} / {_f(x.get('wire_p99_us'))} |")
    return ("Which row a connection loses when all 64 are taken: the driver's victim "
            "policy (`accio_ict.victim`), Accio blocking, on the same "
            "workload with more clients than rows. clock: second chance for a connection "
            "whose packet counters moved since the hand passed, the first idle one goes; "
            "lru: the connection used longest ago (its last wake-up by a datagram, its "
            "last install or wait); runnable: a receiver asleep in its wait goes first; "
            "waiting: a connection whose thread is not in its wait goes first (the last "
            "three decide from memory and read only the chosen row's registers). Installs "
            "per round trip count the warm-up round trips too.\n\n" + "\n".join(lines) + "\n\n")


def _hart_shares(h):
    """Replies per hart as shares of all: 0/1/2/3 in %."""
    if not h:
        return "-"
    n = sum(h.values())
    top = max(int(k) for k in h)
    return "/".join(f"{100 * h.get(str(i), 0) / n:.0f}" for i in range(max(top + 1, 4)))


def report_breakdown(r):
    modes = ",".join(r["totals"])
    return (f"`eval/breakdown.py --count {r['count']} --hart {HART} --peer wire:{r['peer_ns']} "
            f"--modes {modes}` (instructions per round trip, by stage; dpdk: dpdk_pingpong on "
            "net_accio, its empty polls left out; nocsum: Linux with the NIC's checksum "
            "offload off; busypoll: SO_BUSY_POLL 1000 µs; uring: io_uring, send + recvmsg in "
            "one io_uring_enter):\n\n" + r["table"] + "\n")


def report_timing(r, results=None):
    """Instruction time (the latency and CPU experiments) and the Rocket
    timing mode side by side."""
    results = results or {}
    plain_lat = {(x["contender"], x["size"]): x
                 for x in results.get("latency", {}).get("rows", [])}
    plain_cpu = {(x["factor"], x["contender"]): x
                 for x in results.get("cpu", {}).get("rows", [])}
    d0 = r["dram"]
    rows = [x for x in r["rows"] if x["dram"] == d0]
    out = [f"The same ping-pongs in the **Rocket timing mode** (hardware/timing, "
           f"`ACCIO_TIMING=rocket:dram={d0}`): each hart also waits what a Rocket core of the "
           f"RTL SoC waits: 16 KiB L1 caches (misses {d0} + 14 cycles), lines the NIC's and "
           "the uncore's DMA wrote read from memory, load-use, mispredicted branches, "
           "multiplies, divides, traps and interrupts, uncached loads at 12 cycles and "
           "an uncached store holding the next device access for 13. Its costs are fitted to the RTL SoC by "
           "`eval/bench_timing.py` (eval/results/timing-calibration.md: within 10 % of the RTL on every "
           "microbenchmark). "
           f"{r['count']} round trips per point; the instruction-time figures are the "
           "latency experiment's (2,000 round trips). 64 B also at other memory latencies "
           f"({', '.join(str(d) for d in r['drams'])} cycles).", "",
           "| contender | size (B) | instruction time p50 / p99 (µs) | Rocket timing p50 / "
           "p99 (µs) | timing / instruction time | vs Linux p50 (timing) |",
           "|---|---:|---|---|---:|---:|"]
    lin = {x["size"]: x["proc_p50_us"] for x in rows if x["contender"] == "linux"}
    for x in rows:
        p = plain_lat.get((x["contender"], x["size"]))
        out.append(f"| {x['contender']} | {x['size']} | "
                   + (f"{_f(p['proc_p50_us'])} / {_f(p['proc_p99_us'])}" if p else "-")
                   + f" | {_f(x['proc_p50_us'])} / {_f(x['proc_p99_us'])} | "
                   + (f"{x['proc_p50_us'] / p['proc_p50_us']:.2f}x" if p else "-")
                   + f" | 1/{lin[x['size']] / x['proc_p50_us']:.1f} |")
    for k, why in r.get("missing", {}).items():
        out.append(f"| {k} | - | missing: {why} | | | |")

    def ratios(rs):
        at = {x["contender"]: x["proc_p50_us"] for x in rs if x["size"] == 64}
        best, bv = linux_best(rs, "proc_p50_us", lambda x: x["size"] == 64)
        return {"linux": at["linux"] / at["accio"], "best": bv / at["accio"], "best_name": best,
                "dpdk": at["accio"] / at["dpdk"] if "dpdk" in at else None,
                "accio": at["accio"], "linux_us": at["linux"], "best_us": bv}

    out += ["", "64 B, processing p50, at each memory latency (cycles) of the timing mode:", "",
            "| time model | Linux (µs) | Linux (best) (µs) | Accio (µs) | Accio vs Linux | "
            "Accio vs Linux (best) | Accio / DPDK |", "|---|---:|---|---:|---:|---:|---:|"]
    table = []
    if plain_lat:
        table.append(("instruction time", ratios(list(plain_lat.values()))))
    for d in r["drams"]:
        table.append((f"Rocket, dram {d}", ratios([x for x in r["rows"] if x["dram"] == d])))
    for label, q in table:
        out.append(f"| {label} | {_f(q['linux_us'])} | {_f(q['best_us'])} ({q['best_name']}) | "
                   f"{_f(q['accio'])} | 1/{q['linux']:.1f} | 1/{q['best']:.1f} | "
                   + (f"{q['dpdk']:.2f}x" if q["dpdk"] else "-") + " |")
    rk = [q for label, q in table if label.startswith("Rocket")]
    if rk:
        out += ["", f"Over memory latencies {min(r['drams'])}..{max(r['drams'])} cycles: Accio "
                f"vs the best Linux 1/{min(q['best'] for q in rk):.1f} .. "
                f"1/{max(q['best'] for q in rk):.1f}"
                + (f"; Accio / DPDK {min(q['dpdk'] for q in rk):.2f}x .. "
                   f"{max(q['dpdk'] for q in rk):.2f}x" if all(q["dpdk"] for q in rk) else "")
                + (f" (instruction time: 1/{table[0][1]['best']:.1f}"
                   + (f", {table[0][1]['dpdk']:.2f}x" if table[0][1]["dpdk"] else "") + ")"
                   if plain_lat else "") + "."]
    bd = r.get("breakdown")
    if bd:
        instr = results.get("breakdown", {}).get("stages", {})
        modes = bd["modes"]
        out += ["", f"Where a round trip's cycles go (`eval/breakdown.py --timing {d0}`, "
                f"{bd['count']} round trips per mode): cycles per stage in the timing mode, "
                "and beside them the instructions of the breakdown section where it ran the "
                "same mode (cycles over instructions: the stage's CPI; the two are separate runs, "
                "so a stage the longer timing-mode windows catch more often, such as a "
                "tick, shows a CPI that is not one):", "",
                "| stage | " + " | ".join(f"{m}: cycles (instructions, CPI)" for m in modes)
                + " |", "|---|" + "---:|" * len(modes)]
        stages = [st for st in bd["stages"][modes[0]]
                  if any(bd["stages"][m].get(st, 0) >= 0.5 for m in modes)]
        for st in stages + ["total"]:
            cells = []
            for m in modes:
                cyc = (bd["cycles"][m] if st == "total" else bd["stages"][m].get(st, 0))
                ins = (sum(instr[m].values()) if st == "total" else instr[m].get(st, 0)) \
                    if m in instr else None
                cells.append(f"{cyc:,.0f}" + (f" ({ins:,.0f}, {cyc / ins:.1f})" if ins
                                              else ""))
            out.append(f"| {'**total**' if st == 'total' else st} | " + " | ".join(cells) + " |")
    c = r.get("cpu")
    if c:
        out += ["", "CPU busy against a slower server (the CPU experiment's slowdowns; the "
                "client's hart; stalls count as busy), "
                f"{c['count']} round trips per point, the server's delay at slowdown k k/40 of "
                "the timing mode's own Linux round trip against an instant peer "
                f"({c['base_rtt_us']:.1f} µs), so the same share of the SoC's round trip as "
                "in instruction time:", "",
                "| slowdown | contender | instruction time: busy / RTT p50 | Rocket timing: "
                "busy / RTT p50 |", "|---:|---|---|---|"]
        for x in c["rows"]:
            p = plain_cpu.get((x["factor"], x["contender"]))
            out.append(f"| {x['factor']}x | {x['contender']} | "
                       + (f"{p['cpu_busy_pct']:.1f} % / {p['rtt_p50_us']:.0f} µs" if p else "-")
                       + f" | {x['cpu_busy_pct']:.1f} % / {x['rtt_p50_us']:.0f} µs |")
        at40 = [x for x in c["rows"] if x["factor"] == 40]
        acc = next(x for x in at40 if x["contender"] == "accio")
        best, bv = linux_best(at40, "cpu_busy_pct")
        line = (f"At 40x, Accio (blocking) vs the lowest Linux ({best}, {bv:.1f} %): "
                f"{acc['cpu_busy_pct'] / max(0.01, bv):.2f}x in the timing mode")
        p40 = [x for (k, _), x in plain_cpu.items() if k == 40]
        if p40 and (40, "accio") in plain_cpu:
            pb, pv = linux_best(p40, "cpu_busy_pct")
            line += (f", {plain_cpu[(40, 'accio')]['cpu_busy_pct'] / max(0.01, pv):.2f}x in "
                     f"instruction time ({pb}, {pv:.1f} %)")
        out += ["", line + "."]
    return "\n".join(out)


REPORTS = {"freq": report_freq, "latency": report_latency, "throughput": report_throughput,
           "cpu": report_cpu, "multiplex": report_multiplex, "breakdown": report_breakdown,
           "timing": report_timing}
TITLES = {"freq": "8.2 Frequency scaling", "latency": "8.3 Processing latency",
          "throughput": "8.4 Throughput", "cpu": "8.5 CPU utilization against a slower server",
          "multiplex": "8.6 Connection multiplexing",
          "breakdown": "Beyond the paper: where a round trip's instructions go",
          "timing": "Beyond the paper: on a Rocket core's time (caches, memory, traps)"}


def bench_figures(outdir, name):
    """A benchmark's figures (NAME.json) and its tables (NAME.md) in
    outdir, or None when it has not run."""
    path = os.path.join(outdir, name + ".json")
    if not os.path.exists(path) or not os.path.exists(os.path.join(outdir, name + ".md")):
        return None
    with open(path) as f:
        r = json.load(f)
    with open(os.path.join(outdir, name + ".md")) as f:
        return r, f.read().strip()


def report_soc_linux(outdir):
    """The section of eval/bench_soc_linux.py's figures, when they exist:
    Linux and Accio on the Rocket RTL SoC, in cycles, beside QEMU's."""
    figures = bench_figures(outdir, "soc_linux")
    if not figures:
        return []
    r, table = figures
    pp = r["pingpong"]
    return ["## Beyond the paper: Linux on the Rocket RTL SoC, cycle by cycle", "",
            f"Linux (the kernel and the musl image of this build) on `soc-sim1`, one Rocket "
            f"core of rocket-chip 1.2.6 with the uncore and NIC RTL on Verilator, restored from "
            f"a snapshot of its boot ({r['boot_cycles']:,} cycles to the shell, "
            f"{r['boot_wall_s']:,.0f} s of simulation, {r['sim_cycles_per_s']:,} cycles/s). "
            f"`udp_pingpong` against the harness's echo peer ({pp['peer_cycles']} cycles of "
            f"service), {pp['count']} round trips per point after 20 warm-up ones, memory "
            f"latency {pp['dram_latency']} cycles; processing time = the program's round trip "
            f"minus the NIC's stamps, in core cycles. QEMU: the same command on one hart with "
            f"the NIC model's echo peer, 16 ns a cycle; in plain icount a cycle is an "
            f"instruction. `python3 eval/bench_soc_linux.py` (after `make soc-linux`).", "",
            table, ""]


def report_cluster(outdir, rel="results"):
    """The section of eval/bench_cluster.py's figures, when they exist: many
    SoCs on one switched network in lockstep (accio cluster)."""
    figures = bench_figures(outdir, "cluster")
    if not figures:
        return []
    r, table = figures
    table = table.replace("](cluster.png)", f"]({rel}/cluster.png)")
    def rows(kind, barrier):
        return [x for x in r["sync"] if x["kind"] == kind and x["barrier"] == barrier]
    busy, alone = rows("busy", "shared"), rows("busy", "alone")
    pipe = rows("pipe", "shared")
    worst, best = busy[0], busy[-1]
    return ["## Beyond the paper: many SoCs on one switched network", "",
            "`accio cluster` (tools/README.md): every SoC under icount, its NIC's lockstep "
            "wire ending in one hub that holds the switches and links in virtual time; the "
            "lookahead is twice the shortest node link. In their synchronised phase "
            "(from the NICs' enable on) two SoCs in lockstep take "
            f"{worst['ratio']}x the wall time of the same two SoCs all but unsynchronised "
            "(100 ms of lookahead) when both run a shell loop "
            f"with {worst['lookahead_ns'] / 1e3:g} us of lookahead and {best['ratio']}x "
            f"with {best['lookahead_ns'] / 1e3:g} us"
            + (f" (medians of {best['repeats']} rounds; {best['ratio_min']}x to "
               f"{best['ratio_max']}x)" if best.get("repeats", 1) > 1 else "")
            + f" ({worst['ratio_run']}x and "
            f"{best['ratio_run']}x over the whole runs, whose boots are not synchronised)"
            + (f"; with both harts of each SoC busy (dd | md5sum), {pipe[0]['ratio']}x and "
               f"{pipe[-1]['ratio']}x" if pipe else "") + ". "
            + (f"At {best['lookahead_ns'] / 1e3:g} us the ratio is three factors: the SoCs' "
               "own work, slower or not in lockstep (its runs between barriers against the "
               "unsynchronised phase), their unequal work between barriers (each barrier "
               "waits for the slower SoC's run: the sum of the longer runs over the longer "
               "SoC's own sum) and the barriers' own cost (wake-ups, the hub): "
               f"{best['slower_work']} x {best['unequal_work']} x {best['barrier_cost']} for "
               "the shell loop"
               + (f", {pipe[-1]['slower_work']} x {pipe[-1]['unequal_work']} x "
                  f"{pipe[-1]['barrier_cost']} for dd | md5sum" if pipe and
                  pipe[-1].get("slower_work") is not None else "")
               + ". The unequal work is the guests' own: the two SoCs run different stretches "
               "of the same programs, whose emulation costs different wall time per virtual "
               "microsecond. "
               if best.get("slower_work") is not None else "")
            + (f"One SoC alone, with nobody to wait for, takes {alone[0]['ratio']}x and "
               f"{alone[-1]['ratio']}x: that is the barrier's own cost (QEMU leaving its "
               "translated code after a whole block within the barrier's slack, then the "
               "timers and the barrier's bookkeeping) and the host's drift from one run to "
               "the next (the rounds' range is in the table), and the rest is waiting for "
               "the other SoC, whose turn took longer (the waits by length are in the "
               "table). "
               if alone else "") +
            "The two QEMUs meet in shared memory, each looking for the other, yielding its "
            "core, before it sleeps; the hub joins only where the network has work. So the "
            "lookahead, a property of the modelled network, sets the price. "
            + (f"At 8 SoCs a core (shares of the 2 host cores by cgroup), 16 SoCs take "
               f"{r['scaling_share'][-1]['wall_vs_2']}x the wall time of 2. "
               if r.get("scaling_share") else "") +
            f"`{r['command']}` (commit {r['commit']}).", "", table, ""]


def write_report(path, outdir, results, conf, checks):
    rel = os.path.relpath(outdir, os.path.dirname(os.path.abspath(path)))
    runs = {}
    for name, r in results.items():
        c = r["configuration"]
        runs.setdefault((c["commit"], c["qemu"], c["kernel"], c["initramfs_sha256"]),
                        []).append(name)
    settings = {(r["configuration"].get("rr_timeslice"), r["configuration"].get("icount_parallel"),
                 r["configuration"].get("icount_skew_ns"), r["configuration"].get("ipi", "sbi"))
                for r in results.values()}
    out = ["# Accio evaluation report", "",
           "Generated by `python3 -m eval` (`make eval`); do not edit by hand.", ""]
    if len(runs) == 1 and len(settings) == 1:
        (k, _), = runs.items()
        rr, par, skew, ipi = next(iter(settings))
        out += [f"**One build:** commit {k[0]}"
                + (" (uncommitted changes: run with --allow-dirty)" if k[0].endswith("-dirty")
                   else "")
                + f", QEMU {k[1]}, kernel {k[2]}, initramfs {k[3]}. One clock: icount shift "
                f"{SHIFT} (16 ns per instruction, 62.5 MHz for harts, bus, NIC and uncore); "
                + (f"harts in parallel, each on its own time, no running hart more than "
                   f"{skew} ns ahead of another, a hart alone at most {rr} instructions a turn"
                   if par else f"QEMU's serial icount, slices of {rr} instructions")
                + ("; IPIs by the ACLINT SSWI (a store)" if ipi == "sswi"
                   else "; IPIs through the SBI firmware (ACCIO_IPI=sbi)")
                + f"; client pinned to hart {HART}"
                + (", quick mode (small counts)" if conf["quick"] else "") + ".", ""]
    else:
        out += ["**NOT ONE BUILD.** These results come from different builds or emulator "
                "settings, so they do not compare; rerun them all (`make eval`):", ""]
        out += [f"- {', '.join(n)}: commit {k[0]}, QEMU {k[1]}, kernel {k[2]}, initramfs {k[3]}"
                for k, n in runs.items()]
        out += [f"- settings (rr-timeslice, harts in parallel, skew ns, IPIs): "
                + "; ".join(str(s_) for s_ in sorted(settings, key=str)), ""]
    change = os.path.join(outdir, "platform-change.md")
    if os.path.exists(change):
        out += ["**Against the emulator's settings:** the same quick runs at rr-timeslice 2000, "
                "500 and 125, with the skew bound at 250 ns and with QEMU's serial icount, and "
                "the whole evaluation before and after the platform's time model, side by "
                f"side: [{os.path.relpath(change, os.path.dirname(os.path.abspath(path)))}]"
                f"({os.path.relpath(change, os.path.dirname(os.path.abspath(path)))}).", ""]
    soc = {n: r.get("guest_s", r.get("wall_s")) for n, r in results.items()}
    if all(soc.values()):
        out += ["**What it cost:** the SoC time of each experiment (the wall time of its "
                "SoCs, summed; a SoC takes one host core): "
                + ", ".join(f"{n} {v:,.0f} s" for n, v in soc.items())
                + f"; {sum(soc.values()):,.0f} s in all"
                + (f", run {conf.get('jobs')} SoCs at once" if conf.get("jobs") else "")
                + ".", ""]
    out += ["## Repeatability", "",
            "The first guest command of each experiment ran twice (identical: the same "
            "bytes), and again with other guest seeds (another phase of the same run: "
            "address layout, hash seeds); spread: each p50, p99 and rate figure of "
            "that command, min..max over the seeds, as a share of its median, the "
            "widest of each kind shown.", "",
            "| experiment | wire | identical | sha256 of the outputs | seeds | p50 figures: "
            "widest spread | p99 figures: widest spread | rates (Mb/s): widest spread |",
            "|---|---|---|---|---|---|---|---|"]
    for k, c in checks.items():
        sp = c.get("spread") or {}
        cells = []
        for kind in ("_p50_", "_p99_", "mbps"):
            figs = [f for f in sp.get("figures", []) if kind in f["key"]]
            if not figs:
                cells.append(sp.get("error", "-"))
                continue

            def width(f):
                mid = sorted(f["values"])[len(f["values"]) // 2]
                return (f["max"] - f["min"]) / abs(mid) if mid else 0.0
            w = max(figs, key=width)
            cells.append(f"{len(figs)} figures; {100 * width(w):.1f} % "
                         f"({w['key']} {_f(w['min'])}..{_f(w['max'])})")
        out.append(f"| {k} | `{c['wire']}` | {'yes' if c['identical'] else 'NO'} | "
                   f"{c['sha256'][0]} / {c['sha256'][1]} | "
                   f"{', '.join(str(x) for x in sp.get('seeds', [])) or '-'} | "
                   f"{cells[0]} | {cells[1]} | {cells[2]} |")
    out.append("")
    for name in EXPERIMENTS:
        if name not in results:
            continue
        out += [f"## {TITLES[name]}", ""]
        png = f"{name}.png"
        if os.path.exists(os.path.join(outdir, png)):
            out += [f"![{name}]({rel}/{png})", ""]
        out += [(report_timing(results[name], results) if name == "timing"
                 else REPORTS[name](results[name])), ""]
    out += report_soc_linux(outdir)
    out += report_cluster(outdir, rel)
    with open(path, "w") as f:
        f.write("\n".join(out))


def load_results(outdir, names, into=None):
    """Experiments' results already in outdir (those of names not in into)."""
    results = dict(into or {})
    for n in names:
        path = os.path.join(outdir, f"{n}.json")
        if n not in results and os.path.exists(path):
            with open(path) as f:
                results[n] = json.load(f)
    return {n: results[n] for n in EXPERIMENTS if n in results}


def repeat_checks(results):
    return {n: r["repeatability"] for n, r in results.items() if r.get("repeatability")}


def main():
    ap = argparse.ArgumentParser(prog="python3 -m eval", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="every experiment, small counts")
    ap.add_argument("--only", default=",".join(EXPERIMENTS), metavar="NAMES")
    ap.add_argument("--out", default=None, help="results folder (default eval/results, "
                    "build/eval-quick with --quick)")
    ap.add_argument("--report", default=None, help="report file (default eval/REPORT.md, "
                    "DIR/REPORT.md with --quick)")
    ap.add_argument("--report-only", action="store_true",
                    help="write the report again from the results in DIR, run nothing")
    ap.add_argument("--allow-dirty", action="store_true",
                    help="run on a tree with uncommitted changes (the report names "
                    "the commit -dirty); by default a run needs a clean tree, so "
                    "that its results come from one commit")
    ap.add_argument("--check-tree", action="store_true",
                    help="only check that the tree is clean (or --allow-dirty) and exit: "
                    "make eval runs it before it builds anything")
    ap.add_argument("--multiplex-threads", metavar="T,T,...",
                    help="multiplexing: the client counts (default 1,4,64,256,1024)")
    ap.add_argument("--multiplex-count", type=int, metavar="N",
                    help="multiplexing: round trips per client (default 2000; a "
                    "quarter of it above 256 clients)")
    ap.add_argument("--multiplex-victims", metavar="T:N,...|none",
                    help="multiplexing: the runs that compare the row victim policies, T "
                    "clients x N round trips each (default 256:500,1024:125; quick 96:20)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                    help="SoCs at once (default: the host's cores); the results do not "
                    "depend on it, only the wall time")
    a = ap.parse_args()
    if a.jobs < 1:
        ap.error("--jobs must be at least 1")
    if a.multiplex_threads:
        MULTIPLEX["threads"] = [int(x) for x in a.multiplex_threads.split(",")]
    if a.multiplex_count:
        MULTIPLEX["count"] = a.multiplex_count
    if a.multiplex_victims:
        try:
            MULTIPLEX["victims"] = [] if a.multiplex_victims == "none" else [
                tuple(int(x) for x in tn.split(":", 1)) for tn in a.multiplex_victims.split(",")]
        except ValueError:
            ap.error("--multiplex-victims: T:N[,T:N...] or none")
        if any(len(v) != 2 or min(v) < 1 for v in MULTIPLEX["victims"]):
            ap.error("--multiplex-victims: T:N[,T:N...] or none")
    names = [n for n in a.only.split(",") if n]
    bad = [n for n in names if n not in EXPERIMENTS]
    if bad:
        ap.error(f"unknown experiment {', '.join(bad)} (of {', '.join(EXPERIMENTS)})")
    outdir = a.out or os.path.join(ROOT, *(("build", "eval-quick") if a.quick
                                            else ("eval", "results")))
    report = a.report or (os.path.join(outdir, "REPORT.md") if a.quick
                          else os.path.join(ROOT, "eval", "REPORT.md"))
    os.makedirs(outdir, exist_ok=True)
    if a.report_only:
        results = load_results(outdir, names)
        if not results:
            sys.exit(f"eval: no results in {outdir}")
        conf = next(iter(results.values()))["configuration"]
        write_report(report, outdir, results, conf, repeat_checks(results))
        progress(f"report written again: {report}")
        return
    dirty = git_dirty()
    if dirty and not a.allow_dirty:
        sys.exit("eval: the tree has uncommitted changes, so no commit names what this "
                 "run measures:\n" + dirty + "\ncommit them, or run with --allow-dirty "
                 "(make eval ALLOW_DIRTY=1)")
    if a.check_tree:
        return
    conf = configuration(a.quick)
    conf["jobs"] = a.jobs
    run = Runner(SPREAD_SEEDS_QUICK if a.quick else SPREAD_SEEDS, a.jobs)
    results = {}
    t0 = time.time()

    def experiment(i):
        name = names[i]
        progress(f"experiment {i + 1}/{len(names)}: {name}")
        t = time.time()
        try:
            res = (exp_breakdown(run, a.quick, outdir) if name == "breakdown"
                   else globals()[f"exp_{name}"](run, a.quick))
        except BaseException as e:
            # said at once; the others finish what runs and start nothing more
            run.failed = run.failed or name
            progress(f"experiment {name} failed: {e}")
            raise
        res["configuration"] = conf
        res["repeatability"] = run.checked.get(name)
        # wall time shares the machine with the other jobs; guest_s is
        # the seconds its SoCs ran, summed (what it costs alone)
        res["wall_s"] = round(time.time() - t, 1)
        res["guest_s"] = round(run.guest_s.get(name, 0), 1)
        with open(os.path.join(outdir, f"{name}.json"), "w") as f:
            json.dump(res, f, indent=1)
        progress(f"experiment {name} done in {res['wall_s']:.0f} s "
                 f"(its SoCs ran {res['guest_s']:.0f} s)")
        return res

    # every experiment at once; they wait for the job slots. The longest
    # (multiplex) first, so that it is not the one left running alone.
    order = sorted(range(len(names)), key=lambda i: names[i] != "multiplex")
    with concurrent.futures.ThreadPoolExecutor(len(names)) as ex:
        futs = {i: ex.submit(experiment, i) for i in order}
        for i in range(len(names)):
            results[names[i]] = futs[i].result()
    # plots here, in one thread (matplotlib's pyplot is not thread-safe)
    for name, res in results.items():
        if name in PLOTS:
            PLOTS[name](res, os.path.join(outdir, f"{name}.png"))
    with open(os.path.join(outdir, "run.json"), "w") as f:
        json.dump({"experiments": names, "jobs": a.jobs,
                   "wall_s": round(time.time() - t0, 1)}, f, indent=1)
    # a partial run (--only): the report keeps the other experiments'
    # results already in the folder
    results = load_results(outdir, EXPERIMENTS, into=results)
    write_report(report, outdir, results, conf, repeat_checks(results))
    progress(f"done in {time.time() - t0:.0f} s: {report}")
    if not all(c["identical"] for c in run.checked.values()):
        sys.exit("eval: a deterministic run did not repeat exactly (see the report)")


if __name__ == "__main__":
    main()
