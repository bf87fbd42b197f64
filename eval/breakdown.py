#!/usr/bin/env python3
"""Where one round trip's instructions go: a per-stage breakdown of the
client's side of a UDP ping-pong, on Linux sockets and through Accio.

usage: python3 eval/breakdown.py [--count N] [--size B] [--modes LIST]
                                 [--hart N] [--peer host|wire[:NS]]
                                 [--multi T] [--timing DRAM] [--top K]
                                 [--json FILE] [--plot FILE]

Each mode boots the SoC once in deterministic virtual time (icount shift 4,
16 ns per instruction) with the accio_prof TCG plugin (eval/prof/), which
counts every instruction every hart executes while a window is open.
apps/udp_pingpong opens a window before each measured send and closes it
after the reply is received; libaccio pauses counting while it busy-waits
(waiting is not work). So the counts are the instructions of the client's
processing time (RTT_sw - RTT_hw) on all harts, the same interval the
benchmark measures, without the wait for the peer.

Every instruction is named: kernel addresses from System.map, and the file
each kernel function comes from (nm of vmlinux.a's objects) decides its
stage; user addresses through the client's own memory map (udp_pingpong -M)
and the symbols of the files in build/rootfs; M-mode addresses are the
firmware (OpenSBI). Uncached loads and stores (device registers) are
counted separately, per device: on silicon each is a bus round trip.

--timing DRAM: the same in the Rocket timing mode (hardware/timing), memory
DRAM cycles away: the timing plugin adds the cycles it stalled each
address (cache misses, load-use, branches, multiplies, traps) inside the
same windows, so every figure is then cycles, not instructions.

--hart N pins the client to hart N in every mode. Where the client runs
matters to Linux sockets: the NIC's interrupt is taken on hart 0, so a
client on another hart is woken across harts (an IPI through the SBI
firmware, costly in OpenSBI 1.5); Accio routes a row's wake-up to the hart
its thread waits on in either case.

--peer wire[:NS] lets the NIC model's wire peer answer each datagram NS ns
after it arrived, on the virtual clock, instead of the host's echo server:
nothing then runs in real time, so a waiting hart never meets a timer tick
because the host was slow, and two runs count the same instructions.

Modes: linux (plain sockets), accio (LD_PRELOAD=libaccio.so, blocking, the
default), spin (ACCIO_SPIN_US=100000), mmio (spin + ACCIO_MMIO_TX_MAX=1472);
and, when asked for (--modes ...,zc), zc: spinning through libaccio's
zero-copy API (udp_pingpong -z) instead of send/recvmsg, the shortest path
the library offers; auto: ACCIO_SPIN_US=auto, the spin-then-block policy
that learns the peer's pace. And raw (--modes ...,raw): the floor. udp_pingpong -R accelerates its
socket itself and moves each datagram through the row with loads and stores
of its own (no libaccio, no system call): the record into the TX ring, the
write pointer and the doorbell; a spin on the RX write pointer, the copy
out and the read pointer. Its count is the minimal work of a round trip on
this SoC, which the other modes are measured against. And dpdk (--modes
...,dpdk): apps/dpdk/dpdk_pingpong on DPDK 22.11 and the NIC's own poll-mode
driver (net_accio, make image), busy-polling, its lcore on --hart (1 when
not given). Its window opens before the request's frame is built and
closes when the reply's payload is copied out; it waits for the reply on
rte_eth_rx_queue_count() with counting paused (dpdk_pingpong -W), so the
empty polls are waiting and the poll that takes the reply is work.

Under -icount a block that reaches a device before its last instruction
stops there and QEMU runs the access on its own; accio_prof takes the
instructions that did not run back from the block's count (eval/prof/).

--multi T: the whole SoC under T concurrent clients instead of one
(apps/udp_multi -W, each client a udp_pingpong, all released together; the
wire peer answers, --peer wire:20000 unless given). The count is then every
instruction of every hart from the first client's start to the last one's
end of measuring (accio_prof by=span: the clients' spans and udp_multi's,
from the release, nest; the clients sort and print only after all have
measured), so it includes what no client's window holds: other clients'
wake-ups, row installs and evictions, lock spinning. Each mode runs twice,
with COUNT/4 and COUNT round trips per client, and the counts are
subtracted address by address (with the guest's address space layout
randomization off, so that user addresses are the same in both runs), so
that start-up and the barrier cancel out and what is left is T x 3/4 COUNT
round trips in the steady state (the span's length, udp_multi's span_us,
subtracted the same way): the
instructions per round trip, the round trips per second of virtual time,
each hart's busy share, and the ICT's row installs per round trip.

Prints Markdown tables; writes the numbers as JSON and a stacked-bar plot
(matplotlib) when asked.
"""
import argparse
import bisect
import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402

CACHE = os.environ.get("ACCIO_CACHE", os.path.expanduser("~/.cache/accio"))
PRELOAD = "LD_PRELOAD=/usr/lib/libaccio.so"
MODES = {
    "linux": "",
    "accio": PRELOAD,
    "spin": PRELOAD + " ACCIO_SPIN_US=100000",
    "mmio": PRELOAD + " ACCIO_SPIN_US=100000 ACCIO_MMIO_TX_MAX=1472",
    "zc": PRELOAD + " ACCIO_SPIN_US=100000",
    "raw": "",
    "auto": PRELOAD + " ACCIO_SPIN_US=auto",
    # Linux in other configurations: the NIC's checksum offload off, busy
    # polling, io_uring (udp_pingpong-glibc with Debian's liburing)
    "nocsum": "ethtool -K eth0 rx off tx off > /dev/null &&",
    "busypoll": "",
    "uring": "",
}
# udp_pingpong -z: libaccio's zero-copy API; -R: the row by loads and stores
MODE_ARGS = {"zc": "-z", "raw": "-R", "busypoll": "-B 1000", "uring": "-U plain"}
MODE_PROG = {"uring": "udp_pingpong-glibc"}
MODES["dpdk"] = ""   # dpdk_pingpong on net_accio: dpdk_command()
# DPDK 22.11 with the NIC's own poll-mode driver (make image: build/apps/dpdk-pmd),
# in the guest at /opt/dpdk
PMD_TREE = os.path.join(ROOT, "build", "apps", "dpdk-pmd", "opt", "dpdk")
PMD_PKGS = accio.read_pkg_list(os.path.join(ROOT, "buildroot-config", "dpdk-pmd-packages.txt"))
PMD_PREP = ("mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages && "
            "echo 64 > /proc/sys/vm/nr_hugepages && /opt/dpdk/bin/accio-nic-uio.sh uio > /dev/null")
PMD_EAL = "--no-pci --in-memory -d /opt/dpdk/lib/accio/librte_net_accio.so --vdev net_accio0"
# guest folders whose files come from elsewhere than build/rootfs, for symbols
USER_ROOTS = [("/opt/dpdk/", PMD_TREE + "/")]
# Debian's files in the guest (glibc for the DPDK programs): the same packages
# unpacked on the host (scripts/debian.py sysroot, cached), and glibc's
# symbols from its detached debug files (by build ID)
DEBIAN_LIBS = ["libc6", "libatomic1", "libc6-dbg", "liburing2"]
_debian_tree = []


def debian_tree():
    if not _debian_tree:
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "debian.py"),
                            "sysroot", *DEBIAN_LIBS], capture_output=True, text=True)
        _debian_tree.append(r.stdout.strip() if r.returncode == 0 else None)
    return _debian_tree[0]
NS_PER_INSN = 16            # icount shift 4
KERNEL_BASE = 0xffffffff00000000
FIRMWARE = (0x80000000, 0x80200000)
DEVICES = [  # (name, base, size) of the virt machine's devices
    ("uncore", 0x11000000, 0x1000000),
    ("nic", 0x10200000, 0x1000),
    ("plic", 0x0c000000, 0x600000),
    ("clint", 0x02000000, 0x10000),
    ("sswi", 0x02f00000, 0x4000),
    ("uart", 0x10000000, 0x100),
]

# ---- stages ---------------------------------------------------------------

STAGES = [
    "app", "libc", "liburing", "user copies", "libaccio send", "libaccio receive",
    "libaccio sleep", "libaccio other", "DPDK PMD (net_accio)", "DPDK ethdev",
    "DPDK mbufs+mempool", "DPDK other", "syscall/trap entry+exit",
    "VFS (syscall dispatch)", "Accio driver", "socket layer", "UDP/IP",
    "checksums", "NIC driver", "netdev core+NAPI", "softirq", "interrupt+PLIC",
    "wait queues", "wake-up", "scheduler", "context switch", "idle loop",
    "timers+tick", "firmware (SBI)", "kernel copies", "locks+RCU",
    "memory mgmt", "other kernel", "other user",
]

LIBACCIO_SEND = re.compile(r"^(accio_zc_alloc|accio_zc_send|send|sendto|sendmsg|sendmmsg|write|writev|conn_send|send_general|tx_|"
                           r"make_txhdr|mmio_send|kernel_send|dest_ok|ring_write|wmb_io)")
LIBACCIO_RECV = re.compile(r"^(accio_zc_recv|accio_zc_release|recv|recvfrom|recvmsg|recvmmsg|read|readv|__recv|__read_chk|"
                           r"conn_recv|ring_recv|ring_read|rx_|kernel_recv|errqueue_recv|"
                           r"put_tstamp|rmb_io|tx_stamp)")
LIBACCIO_SLEEP = re.compile(r"^(conn_wait|deadline_of|now_us)")
USER_COPY = re.compile(r"^(memcpy|memmove|memset|__memcpy|__memmove|__memset|_wordcopy)")
WAKE = re.compile(r"^(try_to_wake_up|ttwu_|select_task_rq|enqueue_|activate_task|"
                  r"check_preempt|resched_curr|wake_up_|__wake_up|default_wake_function|"
                  r"pollwake|autoremove_wake|woken_wake|place_entity|update_min_vruntime)")
SWITCH = re.compile(r"^(__switch_to|context_switch|finish_task_switch|switch_mm|"
                    r"__schedule_switch|prepare_task_switch|__accio_sched_switch)")


def kernel_stage(name, path):
    p = path or ""
    if SWITCH.match(name) or p.startswith("arch/riscv/mm/context"):
        return "context switch"
    if p.startswith("drivers/net/ethernet/accio/accio_ict"):
        return "Accio driver"
    if p.startswith("drivers/net/ethernet/accio"):
        return "NIC driver"
    if p.startswith(("arch/riscv/kernel/entry", "arch/riscv/kernel/traps",
                     "arch/riscv/kernel/head", "kernel/entry/")):
        return "syscall/trap entry+exit"
    if p.startswith(("lib/checksum", "arch/riscv/lib/csum")):
        return "checksums"
    if p.startswith(("arch/riscv/lib/uaccess", "arch/riscv/lib/mem", "lib/usercopy",
                     "lib/iov_iter", "lib/string")):
        return "kernel copies"
    if p.startswith(("kernel/sched/idle", "drivers/cpuidle", "arch/riscv/kernel/process",
                     "arch/riscv/kernel/cpuidle")) or name in ("arch_cpu_idle", "default_idle_call"):
        return "idle loop"
    if p.startswith("kernel/sched/wait") or name in ("add_wait_queue", "remove_wait_queue",
                                                        "init_wait_entry"):
        return "wait queues"
    if p.startswith("kernel/sched/") and WAKE.match(name):
        return "wake-up"
    if p.startswith("kernel/sched/"):
        return "scheduler"
    if p.startswith(("kernel/time/", "drivers/clocksource", "arch/riscv/kernel/time")):
        return "timers+tick"
    if p.startswith("arch/riscv/kernel/sbi"):
        return "firmware (SBI)"
    if p.startswith(("kernel/irq/", "drivers/irqchip/", "kernel/irq_work",
                     "arch/riscv/kernel/irq", "arch/riscv/kernel/smp")):
        return "interrupt+PLIC"
    if p.startswith("kernel/softirq"):
        return "softirq"
    if p.startswith(("net/socket", "net/core/sock", "net/core/skbuff", "net/core/datagram",
                     "net/core/scm", "net/core/stream")):
        return "socket layer"
    if p.startswith("net/ipv4/"):
        return "UDP/IP"
    if p.startswith(("net/core/", "net/sched/", "net/ethernet/")):
        return "netdev core+NAPI"
    if p.startswith("fs/") or name.startswith(("__riscv_sys_", "sys_")):
        return "VFS (syscall dispatch)"
    if p.startswith(("kernel/locking/", "kernel/rcu/")):
        return "locks+RCU"
    if p.startswith("mm/") or p.startswith("arch/riscv/mm/"):
        return "memory mgmt"
    return "other kernel"


def user_stage(path, name):
    base = os.path.basename(path)
    if base.startswith("libaccio"):
        if LIBACCIO_SLEEP.match(name):
            return "libaccio sleep"
        if LIBACCIO_SEND.match(name):
            return "libaccio send"
        if LIBACCIO_RECV.match(name):
            return "libaccio receive"
        return "libaccio other"
    if base.startswith("librte_net_accio"):
        return "DPDK PMD (net_accio)"
    if base.startswith("librte_ethdev"):
        return "DPDK ethdev"
    if base.startswith(("librte_mbuf", "librte_mempool", "librte_ring")):
        return "DPDK mbufs+mempool"
    if base.startswith("librte_"):
        return "DPDK other"
    if USER_COPY.match(name):
        return "user copies"
    if base.startswith(("ld-musl", "libc", "ld-linux")) or path == "[vdso]":
        return "libc"
    if base.startswith("liburing"):
        return "liburing"
    if base in ("udp_pingpong", "udp_pingpong-glibc", "dpdk_pingpong"):
        return "app"
    return "other user"


# ---- symbols ---------------------------------------------------------------

class Symbols:
    """Sorted (address, name) of one file's functions."""

    def __init__(self, pairs):
        pairs.sort()
        self.addr = [a for a, _ in pairs]
        self.name = [n for _, n in pairs]

    def lookup(self, a):
        i = bisect.bisect_right(self.addr, a) - 1
        return self.name[i] if i >= 0 else "?"


def debug_file(path):
    """The detached debug file of an ELF file in the Debian tree, or None."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]{2})([0-9a-f]+)", out)
    if not m or not debian_tree():
        return None
    dbg = os.path.join(debian_tree(), "usr", "lib", "debug", ".build-id", m.group(1),
                       m.group(2) + ".debug")
    return dbg if os.path.exists(dbg) else None


def nm_pairs(path, dynamic=False):
    cmd = ["riscv64-linux-gnu-nm", "--defined-only"] + (["-D"] if dynamic else []) + [path]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    pairs = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tTwWiI":
            pairs.append((int(f[0], 16), f[2]))
    return pairs


def kernel_files():
    """function name -> source file, from the objects vmlinux is linked
    from (vmlinux.a and the lib.a archives)."""
    obj = os.path.join(CACHE, "linux", "obj")
    key = hashlib.sha256(open(os.path.join(accio.BUILD, "System.map"), "rb").read()).hexdigest()[:16]
    cache = os.path.join(CACHE, "prof", f"kfiles-{key}.json")
    if os.path.exists(cache):
        return json.load(open(cache))
    files = {}
    for archive in ("vmlinux.a", "lib/lib.a", "arch/riscv/lib/lib.a"):
        path = os.path.join(obj, archive)
        if not os.path.exists(path):
            continue
        out = subprocess.run(["riscv64-linux-gnu-nm", "-A", "--defined-only", path],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"^[^:]*:([^:]+):\s*[0-9a-f]+ ([tTwW]) (\S+)$", line)
            if m:
                files.setdefault(m.group(3), os.path.relpath(os.path.join(obj, m.group(1)), obj))
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    json.dump(files, open(cache, "w"))
    return files


def load_segments(path):
    """PT_LOAD (offset, vaddr, filesz) of an ELF file."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    segs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    return segs


class UserMap:
    """The client's memory map: user address -> (file, function)."""

    def __init__(self, maps_lines):
        self.maps = []
        self.syms = {}
        for line in maps_lines:
            f = line.split()
            if len(f) < 6 or "x" not in f[1]:
                continue
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            self.maps.append((lo, hi, int(f[2], 16), f[5]))
        for _, _, _, path in self.maps:
            if path in self.syms or path.startswith("["):
                continue
            host = os.path.join(accio.BUILD, "rootfs", path.lstrip("/"))
            for guest, there in USER_ROOTS:
                if path.startswith(guest):
                    host = there + path[len(guest):]
            if not os.path.exists(host) and path.startswith(("/lib", "/usr/lib")) \
                    and debian_tree():
                host = os.path.join(debian_tree(), path.lstrip("/"))
                if not os.path.exists(host) and path.startswith("/lib"):
                    host = os.path.join(debian_tree(), "usr", path.lstrip("/"))
            if os.path.exists(host):
                pairs = nm_pairs(host)
                if not pairs and debian_tree() and host.startswith(debian_tree()):
                    dbg = debug_file(host)
                    pairs = nm_pairs(dbg) if dbg else []
                pairs = pairs or nm_pairs(host, dynamic=True)
                self.syms[path] = (Symbols(pairs), load_segments(host))

    def lookup(self, a):
        for lo, hi, off, path in self.maps:
            if lo <= a < hi:
                if path not in self.syms:
                    return path, "?"
                syms, segs = self.syms[path]
                foff = a - lo + off
                for soff, svaddr, size in segs:
                    if soff <= foff < soff + size:
                        return path, syms.lookup(foff - soff + svaddr)
                return path, "?"
        return None, None


# ---- running ---------------------------------------------------------------

def plugin():
    """The instruction counter (eval/prof/accio_prof.c)."""
    try:
        return accio.build_plugin(os.path.join(ROOT, "eval", "prof", "accio_prof.c"), "prof")
    except accio.AccioError as e:
        sys.exit(f"breakdown: {e}")


def pmd_available():
    return os.path.exists(os.path.join(PMD_TREE, "lib", "accio", "librte_net_accio.so"))


def dpdk_command(count, size, port, hart):
    """dpdk_pingpong on net_accio against the same server as udp_pingpong
    (10.0.2.2): counted windows (-W), its memory map (-M)."""
    return (f"{PMD_PREP} && /opt/dpdk/bin/dpdk_pingpong -l {1 if hart is None else hart} "
            f"{PMD_EAL} -- -s 10.0.2.2 -l 10.0.2.15 -p {port} -q -W -M -n {count} -m {size}")


def timing_args(timing, tmp, attrib):
    """The Rocket timing mode's QEMU arguments (timing: its memory latency in
    cycles, or None) with stall cycles per address, and the file they go to."""
    if timing is None:
        return [], None
    out = os.path.join(tmp, "timing")
    return accio.timing_qemu_args(f"rocket:dram={timing},attrib={attrib},out={out}"), out


def with_stalls(counts, timing):
    """accio_prof's counts with the timing plugin's stall cycles (its "A"
    lines) added to each address: cycles where there were instructions."""
    add = {}
    for line in timing.splitlines():
        f = line.split()
        if f and f[0] == "A":
            add[int(f[1], 16)] = [int(x) for x in f[2:]]
    out, nharts = [], 0
    for line in counts.splitlines():
        f = line.split()
        if f and f[0] == "W":
            nharts = int(f[3])
        if f and f[0] == "I":
            extra = add.pop(int(f[1], 16), None)
            if extra:
                c = [int(x) for x in f[2:]]
                c = [x + (extra[i] if i < len(extra) else 0) for i, x in enumerate(c)]
                line = " ".join([f[0], f[1]] + [str(x) for x in c])
        out.append(line)
    for a, c in add.items():      # stalls where no instruction counted
        c = (c + [0] * nharts)[:max(nharts, len(c))]
        out.append(f"I {a:x} " + " ".join(str(x) for x in c))
    return "\n".join(out)


def profile(mode, count, size, so, hart=None, cmdline="", peer=None, timing=None):
    """peer: None for the host's echo server (real time), or the wire peer's
    service time in ns (the NIC model answers on the virtual clock).
    timing: in the Rocket timing mode with memory this many cycles away: the
    counts are then cycles (instructions and stalls)."""
    if mode == "dpdk" and not pmd_available():
        sys.exit(f"breakdown: dpdk: {PMD_TREE} was not built (make image)")
    with tempfile.TemporaryDirectory(prefix="accio-prof-") as tmp, \
            contextlib.ExitStack() as stack:
        counts = os.path.join(tmp, "counts")
        if peer is None:
            port, wire = stack.enter_context(accio.HostEcho()).port, "user"
        else:
            port, wire = 7, f"echo:{peer}"
        pin = f"taskset {1 << hart:#x} " if hart is not None else ""
        cmd = (f"{MODES[mode]} {pin}{MODE_PROG.get(mode, 'udp_pingpong')} -q -M -n {count} -m {size} "
               f"-p {port} {MODE_ARGS.get(mode, '')}").rstrip()
        extra = {}
        if mode == "dpdk":
            cmd = dpdk_command(count, size, port, hart)
            extra = {"pkgs": PMD_PKGS, "add": [(PMD_TREE, "/opt/dpdk")]}
        targs, tout = timing_args(timing, tmp, "window")
        r = accio.run(cmd, icount=4, wire=wire, timeout=1200, cmdline_extra=cmdline,
                      qemu_extra=["-plugin", f"{so},out={counts},mmio=on"] + targs, **extra)
        if r.rc != 0:
            sys.exit(f"breakdown: {mode} run failed:\n{r.output[-3000:]}")
        text = open(counts).read()
        if tout:
            text = with_stalls(text, open(tout).read())
    return r.output, text


ICT_SYSFS = "/sys/bus/platform/drivers/accio-uncore/11000000.accio"


def profile_multi(mode, t, count, size, so, peer, timing=None):
    """One run of T clients x COUNT round trips under udp_multi -W: its
    output and the plugin's counts (by span)."""
    with tempfile.TemporaryDirectory(prefix="accio-prof-") as tmp:
        counts = os.path.join(tmp, "counts")
        # the same user addresses in both runs, so that their counts cancel
        # address by address (subtract)
        cmd = (f"echo 0 > /proc/sys/kernel/randomize_va_space; "
               f"cat {ICT_SYSFS}/installs > /tmp/i0; {MODES[mode]} udp_multi -W -T {t} "
               f"-o /tmp/pp -n {count} -m {size} -p 7 -t 1000 {MODE_ARGS.get(mode, '')}; "
               f"echo rc=$?; echo installs=$(( $(cat {ICT_SYSFS}/installs) - $(cat /tmp/i0) ))")
        targs, tout = timing_args(timing, tmp, "span")
        r = accio.run(cmd, icount=4, wire=f"echo:{peer}", timeout=3000,
                      qemu_extra=["-plugin", f"{so},out={counts},mmio=on,by=span"] + targs)
        if r.rc != 0 or "rc=0" not in r.output or "span_us=" not in r.output:
            sys.exit(f"breakdown: {mode} x {t} clients failed:\n{r.output[-3000:]}")
        text = open(counts).read()
        if tout:
            text = with_stalls(text, open(tout).read())
        return r.output, text


def subtract(short, full, rts):
    """The counts of FULL minus those of SHORT, as one window of RTS round
    trips (analyse() divides by the windows), and the span's figures."""
    def parse(text):
        d, span = {}, []
        for line in text.splitlines():
            f = line.split()
            if f[0] in ("I", "F", "M"):
                key = (f[0], f[1]) if f[0] != "M" else (f[0], f[1], f[2])
                d[key] = [int(x) for x in f[len(key):]]
            elif f[0] == "S":
                span = [int(x) for x in f[2:]]
            elif f[0] == "W":
                nharts = int(f[3])
        return d, span, nharts
    a, sa, nh = parse(short)
    b, sb, _ = parse(full)
    lines = [f"W {rts} {rts} {nh} 0"]
    # every address of either run: one that only the short run reached
    # (a user address, say, where the two runs' processes differ) is taken
    # off, not left out
    for key in list(b) + [k for k in a if k not in b]:
        n = len(b.get(key) or a[key])
        diff = [y - x for x, y in zip(a.get(key, [0] * n), b.get(key, [0] * n))]
        if any(diff):
            lines.append(" ".join(key) + " " + " ".join(str(x) for x in diff))
    return "\n".join(lines), [y - x for x, y in zip(sa, sb)]


def multi(mode, t, count, size, so, peer, kfiles, ksyms, timing=None):
    short = max(1, count // 4)
    runs = []
    for n in (short, count):
        print(f"[breakdown] {mode}: {t} clients x {n} round trips", file=sys.stderr)
        out, counts = profile_multi(mode, t, n, size, so, peer, timing)
        kv = dict(re.findall(r"^(\w+)=(\S+)$", out, re.M))
        runs.append((out, counts, kv))
    rts = t * (count - short)
    text, span = subtract(runs[0][1], runs[1][1], rts)
    res = analyse(runs[1][0], text, kfiles, ksyms)
    secs = (float(runs[1][2]["span_us"]) - float(runs[0][2]["span_us"])) / 1e6
    res["multi"] = {
        "clients": t, "round_trips": rts, "virtual_s": round(secs, 4),
        "round_trips_per_s": round(rts / secs, 1),
        "busy_per_hart": [round(x / (secs * 1e9 / NS_PER_INSN), 3) for x in span],
        "row_installs_per_round_trip": round(
            (int(runs[1][2]["installs"]) - int(runs[0][2]["installs"])) / rts, 3)}
    return res


def analyse(output, counts, kfiles, ksyms):
    kv = dict(re.findall(r"^(\w+)=(\S+)$", output, re.M))
    umap = UserMap([line[4:] for line in output.splitlines() if line.startswith("map ")])
    windows, nharts, paused = 0, 0, 0
    stage = {s: 0 for s in STAGES}
    hart_stage = {}
    by_sym, by_hart, by_priv = {}, [], {"user": 0, "kernel": 0, "firmware": 0}
    mmio, fw = {}, {}
    for line in counts.splitlines():
        f = line.split()
        if f[0] == "W":
            windows, nharts, paused = int(f[2]), int(f[3]), int(f[4])
            by_hart = [0] * nharts
        elif f[0] == "I":
            a = int(f[1], 16)
            c = [int(x) for x in f[2:]]
            n = sum(c)
            name, st = classify(a, kfiles, ksyms, umap, by_priv, n)
            for h, x in enumerate(c):
                by_hart[h] += x
                if x:
                    hs = hart_stage.setdefault(h, {})
                    hs[st] = hs.get(st, 0) + x
            stage[st] += n
            by_sym[(st, name)] = by_sym.get((st, name), 0) + n
        elif f[0] == "F":
            name, _ = classify(int(f[1], 16), kfiles, ksyms, umap, {}, 0)
            e = fw.setdefault(name, [0, 0])
            e[0] += int(f[2])
            e[1] += int(f[3])
        elif f[0] == "M":
            a, phys, ld, sto = int(f[1], 16), int(f[2], 16), int(f[3]), int(f[4])
            dev = next((d for d, b, s in DEVICES if b <= phys < b + s), f"{phys:#x}")
            name, _ = classify(a, kfiles, ksyms, umap, {}, 0)
            e = mmio.setdefault((dev, name), [0, 0])
            e[0] += ld
            e[1] += sto
    if not windows:
        sys.exit("breakdown: no measured window closed (is udp_pingpong current?)")
    per = {s: v / windows for s, v in stage.items()}
    return {
        "windows": windows, "busy_waits_skipped": paused,
        "instructions_per_round_trip": sum(per.values()),
        "stages": per,
        "by_hart": [v / windows for v in by_hart],
        "by_hart_stage": {h: {k: v / windows for k, v in d.items()}
                          for h, d in sorted(hart_stage.items())},
        "by_privilege": {k: v / windows for k, v in by_priv.items()},
        "top": sorted(((v / windows, st, n) for (st, n), v in by_sym.items()), reverse=True),
        "mmio": {f"{d} {n}": [ld / windows, st / windows] for (d, n), (ld, st) in mmio.items()},
        "firmware_entries": {k: [v[0] / windows, v[1] / windows] for k, v in fw.items()},
        "measured": {k: kv.get(k) for k in ("proc_p50_us", "proc_p99_us", "rtt_p50_us")},
    }


def classify(a, kfiles, ksyms, umap, by_priv, n):
    if a >= KERNEL_BASE:
        by_priv["kernel"] = by_priv.get("kernel", 0) + n
        name = ksyms.lookup(a)
        return name, kernel_stage(name, kfiles.get(name))
    if FIRMWARE[0] <= a < FIRMWARE[1]:
        by_priv["firmware"] = by_priv.get("firmware", 0) + n
        return "opensbi", "firmware (SBI)"   # Debian's OpenSBI ELF carries no symbols
    by_priv["user"] = by_priv.get("user", 0) + n
    path, name = umap.lookup(a)
    if path is None:
        return f"{a:#x}", "other user"
    return f"{os.path.basename(path)}:{name}", user_stage(path, name)


# ---- reporting -------------------------------------------------------------

def report(res, top, timing=None):
    modes = list(res)
    unit = "instructions" if timing is None else f"cycles, Rocket timing, dram {timing}"
    print(f"| stage ({unit} per round trip) | " + " | ".join(modes) + " |")
    print("|---|" + "---:|" * len(modes))
    for s in STAGES:
        if any(res[m]["stages"][s] >= 0.5 for m in modes):
            print(f"| {s} | " + " | ".join(f"{res[m]['stages'][s]:.0f}" for m in modes) + " |")
    print("| **total** | " + " | ".join(f"**{res[m]['instructions_per_round_trip']:.0f}**"
                                         for m in modes) + " |")
    print("| = µs at 16 ns a cycle | " + " | ".join(
        f"{res[m]['instructions_per_round_trip'] * NS_PER_INSN / 1000:.1f}" for m in modes) + " |")
    if all("multi" in res[m] for m in modes):
        print("| round trips per second (virtual) | " + " | ".join(
            f"{res[m]['multi']['round_trips_per_s']:,.0f}" for m in modes) + " |")
        print("| busy share per hart | " + " | ".join(
            " / ".join(f"{x:.2f}" for x in res[m]["multi"]["busy_per_hart"]) for m in modes)
            + " |")
        print("| row installs per round trip | " + " | ".join(
            f"{res[m]['multi']['row_installs_per_round_trip']:.2f}" for m in modes) + " |")
    else:
        print("| measured processing p50 / p99 (µs) | " + " | ".join(
            f"{res[m]['measured']['proc_p50_us']} / {res[m]['measured']['proc_p99_us']}"
            for m in modes) + " |")
    print("| uncached loads / stores | " + " | ".join(
        "{:.1f} / {:.1f}".format(sum(v[0] for v in res[m]["mmio"].values()),
                                 sum(v[1] for v in res[m]["mmio"].values())) for m in modes) + " |")
    print("| user / kernel / firmware | " + " | ".join(
        " / ".join(f"{res[m]['by_privilege'][k]:.0f}" for k in ("user", "kernel", "firmware"))
        for m in modes) + " |")
    print("| per hart | " + " | ".join(
        " / ".join(f"{x:.0f}" for x in res[m]["by_hart"]) for m in modes) + " |")
    for m in modes:
        print(f"\n{m}: top functions ({unit} per round trip)\n")
        print("| function | stage | " + ("instr" if timing is None else "cycles") + " |")
        print("|---|---|---:|")
        for v, st, n in res[m]["top"][:top]:
            print(f"| {n} | {st} | {v:.0f} |")
        print(f"\n{m}: stages by hart ({unit} per round trip)\n")
        for h, d in res[m]["by_hart_stage"].items():
            print(f"- hart {h}: " + ", ".join(f"{k} {v:.0f}" for k, v in
                                              sorted(d.items(), key=lambda kv: -kv[1]) if v >= 1))
        print(f"\n{m}: entries into the firmware per round trip, by the code that trapped\n")
        for k, (n, ins) in sorted(res[m]["firmware_entries"].items(), key=lambda kv: -kv[1][1]):
            if n >= 0.05:
                print(f"- {k}: {n:.2f} entries, {ins:.0f} instructions")
        print(f"\n{m}: uncached accesses per round trip (loads / stores)\n")
        for k, (ld, sto) in sorted(res[m]["mmio"].items(), key=lambda kv: -sum(kv[1])):
            if ld + sto >= 0.05:
                print(f"- {k}: {ld:.2f} / {sto:.2f}")


def plot(res, path):
    try:
        import matplotlib
    except ImportError:
        sys.exit("breakdown: --plot needs matplotlib: run with ~/.cache/accio/venv/bin/python "
                 "(make build installs it there)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    modes = list(res)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    bottom = [0.0] * len(modes)
    cmap = plt.get_cmap("tab20")
    shown = [s for s in STAGES if any(res[m]["stages"][s] >= 0.5 for m in modes)]
    for i, s in enumerate(shown):
        vals = [res[m]["stages"][s] for m in modes]
        ax.bar(modes, vals, bottom=bottom, label=s, color=cmap(i % 20),
               hatch="//" if i >= 20 else None)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("instructions per round trip (client, all harts)")
    ax.set_title("Client processing per 64 B round trip, by stage")
    ax.legend(fontsize=7, loc="upper right", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--modes", default="linux,accio,spin,mmio")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--hart", type=int, help="pin the client to this hart (taskset); the NIC's "
                    "interrupt is taken on hart 0")
    ap.add_argument("--peer", default="host", metavar="host|wire[:NS]",
                    help="who answers: the host's echo server (real time; default) or "
                    "the NIC model's wire peer after NS ns (virtual time: the run repeats "
                    "exactly)")
    ap.add_argument("--multi", type=int, metavar="T",
                    help="T concurrent clients (udp_multi): every hart's instructions per "
                    "round trip in the steady state, two runs subtracted (see above)")
    ap.add_argument("--timing", type=int, metavar="DRAM",
                    help="in the Rocket timing mode (hardware/timing), memory DRAM cycles "
                    "away: every count is then cycles (instructions and the stalls the "
                    "timing model charged at each address)")
    ap.add_argument("--json")
    ap.add_argument("--plot")
    a = ap.parse_args()
    if a.multi is not None and a.multi < 1:
        ap.error("--multi: at least one client")
    if a.multi and a.peer == "host":
        a.peer = "wire:20000"
    if a.multi and a.count < 4:
        ap.error("--multi: --count of at least 4 (runs of COUNT/4 and COUNT are subtracted)")
    peer = None
    if a.peer != "host":
        m = re.fullmatch(r"wire(?::(\d+))?", a.peer)
        if not m:
            ap.error("--peer: host, wire or wire:NS")
        peer = int(m.group(1) or 0)
    so = plugin()
    kfiles = kernel_files()
    ksyms = Symbols([(x, n) for x, n in accio.load_symbols()])
    res = {}
    for mode in a.modes.split(","):
        if mode not in MODES:
            sys.exit(f"breakdown: unknown mode {mode} ({', '.join(MODES)})")
        if a.multi:
            if mode in ("dpdk", "raw", "zc"):
                sys.exit(f"breakdown: --multi: mode {mode} is a single client's")
            res[mode] = multi(mode, a.multi, a.count, a.size, so, peer, kfiles, ksyms,
                              a.timing)
            continue
        print(f"[breakdown] {mode}: {a.count} round trips of {a.size} B", file=sys.stderr)
        output, counts = profile(mode, a.count, a.size, so, a.hart, peer=peer, timing=a.timing)
        res[mode] = analyse(output, counts, kfiles, ksyms)
    report(res, a.top, a.timing)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"count": a.count, "size": a.size, "icount_shift": 4, "hart": a.hart,
                       "timing_dram": a.timing,
                       "multi": a.multi,
                       "peer": "host" if peer is None else f"wire:{peer}",
                       "rr_timeslice": accio.RR_TIMESLICE, "results": res},
                      f, indent=1)
    if a.plot:
        plot(res, a.plot)


if __name__ == "__main__":
    main()
