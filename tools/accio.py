#!/usr/bin/env python3
"""accio: build, boot and drive the emulated Accio SoC.

  accio build                   build everything (QEMU, kernel, userspace, image)
  accio boot  [options]         boot with an interactive console (exit the shell to stop)
  accio run   [options] -- CMD  boot, run CMD in the guest, print its output and
                                return its exit status
  accio eval  [--quick] [--only NAMES]
                                the evaluation (paper section 8): results,
                                plots and eval/REPORT.md (python3 -m eval)
  accio pair  --server CMD --client CMD [--smp --mem --icount --add --pkg
              --timeout --grace --lockstep [NS] --pcap-dir DIR]
                                two SoCs joined by one wire: the server SoC
                                (10.0.3.1) starts CMD, then the client SoC
                                (10.0.3.2) runs its CMD; --grace S after the
                                client's command ends, the server's command
                                and all it started get SIGTERM; prints both
                                outputs. --lockstep: the two virtual clocks
                                advance in lockstep (icount) and the wire
                                takes NS (default 5000) one way: the pair
                                repeats exactly; both SoCs boot together, so
                                a client retries until its server listens.
                                --pcap-dir: server.pcap and client.pcap, each
                                NIC's wire in virtual time
  accio cluster TOPOLOGY [--hosts A,B | --hostfile F | --ns-hosts N]
              [--pcap-dir DIR] [--keep DIR] [--check]
                                N SoCs on a switched network described by a
                                TOML file, their clocks in lockstep: the
                                same file gives the same wire on one host or
                                across hosts (mpirun); accio cluster --help
  accio soc-linux [--harts N]   Linux on the Rocket RTL SoC (Verilator): boot
                                once to a shell, save the whole simulation
                                (make soc-linux; about 15 minutes, 1 hart)
  accio soc-run [--harts N] -- CMD
                                restore that SoC, type CMD at its shell, print
                                the output, return its status; the wire ends
                                in the harness's echo peer (10.0.2.2: ARP,
                                ping, UDP), as QEMU's --wire echo

Options for boot and run:
  --smp N           harts (default 4, like the prototype)
  --mem SIZE        guest memory (default 1G)
  --timing MODE     rocket[:NAME=VALUE,...] (with --icount): each hart takes
                    the time a Rocket core would: L1 caches, memory latency
                    (dram=CYCLES, default 30), DMA invalidating lines,
                    branches, multiplies, traps (hardware/timing/README.md);
                    ACCIO_TIMING does the same for every run
  --icount [SHIFT]  deterministic virtual time: each instruction advances the
                    clock by 2^SHIFT ns (default 4); idle time is skipped;
                    the harts run in parallel in virtual time, each on
                    its own clock, no running hart more than 1000 ns
                    (ACCIO_ICOUNT_SKEW_NS) ahead of another, a hart
                    alone at most 2000 instructions a turn
                    (ACCIO_RR_TIMESLICE); ACCIO_ICOUNT_PARALLEL=0:
                    QEMU's serial icount
                    (every mode: the machine has an ACLINT and the kernel
                    sends its IPIs through its SSWI device, a store;
                    ACCIO_IPI=sbi: no ACLINT, IPIs through the firmware)
  --wire KIND       the NIC's host side: user (default; the host is 10.0.2.2),
                    socket:PORT (QEMU connects to a raw-frame peer on
                    127.0.0.1:PORT), dgram:LOCAL:REMOTE (frames as UDP
                    datagrams between 127.0.0.1 ports: one end of a wire to
                    another SoC), echo[:DELAY] (the NIC model's own peer on
                    the virtual clock answers ARP, ping and every UDP
                    datagram, to any address, after DELAY ns; with --icount
                    a run repeats exactly), none (frames go nowhere)
  --pcap FILE       (run) every frame on the NIC's wire, both ways, stamped
                    with the virtual time it crossed (nanosecond pcap,
                    first 128 bytes of each frame)
  --host-echo PORT  run the host UDP echo server on 127.0.0.1:PORT meanwhile
  --fwd-udp H:G     (user wire) datagrams to 127.0.0.1:H on the host reach
                    the guest's UDP port G, from 10.0.2.2; repeatable
  --add HOST:GUEST  put a host file or folder into the guest at
                    the absolute path GUEST, modes and symlinks kept; repeatable
  --pkg NAME        an extra Debian riscv64 package (trixie, or forky) for
                    this run, with its dependencies; repeatable
  --pkg-list FILE   the packages of a list file (names, # comments), e.g.
                    buildroot-config/dpdk-packages.txt; repeatable
  --timeout S       give up after S seconds (run only; default 600); on the
                    way out the host collects diagnostics (see below)
  -v, --verbose     show the console as it boots

Every run keeps the whole console (kernel boot messages included) in
build/logs/ (ACCIO_LOG_DIR): the latest run as last-run.log, and a run that
timed out or gave no result under its own name (every run with
ACCIO_KEEP_LOGS=1). When a guest runs past its limit,
the host first asks QEMU, over QMP, for each hart's pc (named from
System.map) and the Accio uncore's state (rows, ring pointers, ready queues,
ACCEL registers), then asks the guest for accio-diag (tasks, row fds,
interrupts, blocked tasks) and finally sends serial BREAK + sysrq w/l/t,
which answers even when user space cannot.

The guest reaches the host at 10.0.2.2 with the user wire; a host server
listening on 127.0.0.1:PORT is 10.0.2.2:PORT to the guest.
"""
import argparse
import hashlib
import itertools
import json
import os
import re
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
OPENSBI = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin"
GUEST_MAC = "52:54:00:ac:c1:00"
RR_TIMESLICE = int(os.environ.get("ACCIO_RR_TIMESLICE", "2000"))
# --icount: the harts run in parallel in virtual time (QEMU patch 0004), as
# on a multi-core chip; 0 gives QEMU's own icount, where every instruction
# of every hart advances the one clock
ICOUNT_PARALLEL = os.environ.get("ACCIO_ICOUNT_PARALLEL", "1") != "0"
# --icount with the harts in parallel: no running hart runs ahead of
# another by more than this many ns of virtual time (QEMU patch 0010)
ICOUNT_SKEW_NS = int(os.environ.get("ACCIO_ICOUNT_SKEW_NS", "1000"))
# --icount: the guest's randomness (the devicetree's rng-seed, so address
# layouts and hash seeds): another seed is another phase of the same run
SEED = int(os.environ.get("ACCIO_SEED", "1"))
# How the harts interrupt each other: "sswi" (the default) gives the virt
# machine its ACLINT (aclint=on), whose SSWI device the kernel uses for its
# IPIs (kernel patch 0032: a store, no firmware call); "sbi" leaves the
# machine without it, and every IPI goes through the SBI firmware.
IPI = os.environ.get("ACCIO_IPI", "sswi")
if IPI not in ("sswi", "sbi"):
    raise SystemExit(f"ACCIO_IPI={IPI}: sswi or sbi")
MACHINE = "virt,aclint=on" if IPI == "sswi" else "virt"
# The time of an instruction: "" (every instruction one cycle, memory free)
# or "rocket[:ARGS]", the Rocket timing mode: a TCG plugin
# (hardware/timing/rocket_timing.c) makes each hart wait what a Rocket core
# waits for its caches, memory, branches, multiplies and traps; ARGS are
# the plugin's (dram=CYCLES,...). Needs --icount.
TIMING = os.environ.get("ACCIO_TIMING", "")
TIMING_IO_LOAD_CYCLES = 12


def timing_args(spec):
    """ACCIO_TIMING / --timing: the plugin's arguments ([] for none)."""
    if spec in ("", "off", "icount"):
        return None
    kind, _, rest = spec.partition(":")
    if kind != "rocket":
        raise AccioError(f"timing {spec!r}: off or rocket[:NAME=VALUE,...]")
    args = [x for x in rest.split(",") if x]
    for x in args:
        if "=" not in x:
            raise AccioError(f"timing {spec!r}: {x!r} is not NAME=VALUE")
    return args


def build_plugin(src, name):
    """A TCG plugin from its C source, built on first use and cached under
    ~/.cache/accio/NAME/ by the hash of the source and QEMU's plugin header."""
    cache = os.environ.get("ACCIO_CACHE", os.path.expanduser("~/.cache/accio"))
    hdr_dir = os.path.join(cache, "qemu", "tree", "include", "qemu")
    hdr = os.path.join(hdr_dir, "qemu-plugin.h")
    if not os.path.exists(hdr):
        raise AccioError(f"{hdr} missing (run: make build)")
    key = hashlib.sha256(open(src, "rb").read() + open(hdr, "rb").read()).hexdigest()[:16]
    out = os.path.join(cache, name, f"lib{os.path.splitext(os.path.basename(src))[0]}-{key}.so")
    if not os.path.exists(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        glib = subprocess.run(["pkg-config", "--cflags", "glib-2.0"], capture_output=True,
                              text=True, check=True).stdout.split()
        tmp = f"{out}.{os.getpid()}.{threading.get_ident()}.tmp"
        subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", *glib,
                        "-I", hdr_dir, "-o", tmp, src], check=True)
        os.replace(tmp, out)
    return out


def timing_plugin():
    """The Rocket timing plugin (hardware/timing)."""
    return build_plugin(os.path.join(ROOT, "hardware", "timing", "rocket_timing.c"), "timing")


def timing_qemu_args(spec=None):
    """-plugin arguments for QEMU in the timing mode SPEC (default
    ACCIO_TIMING), or []."""
    args = timing_args(TIMING if spec is None else spec)
    if args is None:
        return []
    # an uncached load from the uncore takes the RTL's 12 cycles, as a loop
    # of them measures (eval/bench_timing.py); the plain mode's 15 is the
    # RTL's load between two rdcycle (eval/bench_soc.py)
    return ["-plugin", ",".join([timing_plugin()] + args),
            "-global", f"accio-uncore.load-cycles={TIMING_IO_LOAD_CYCLES}"]
SESSION_IDS = itertools.count(1)
BEGIN = "@@ACCIO-BEGIN@@"
END_RE = re.compile(r"@@ACCIO-END rc=(\d+)@@")


class AccioError(Exception):
    pass


@dataclass
class Result:
    rc: int
    output: str
    console: str
    wall_s: float
    stopped: bool = False      # ended by the host (a pair's server SoC)


def artefacts():
    need = {
        # ACCIO_QEMU: another QEMU binary (a development build)
        "qemu": os.environ.get("ACCIO_QEMU") or os.path.join(BUILD, "qemu-system-riscv64"),
        "kernel": os.path.join(BUILD, "Image"),
        "initrd": os.path.join(BUILD, "initramfs.cpio.gz"),
        "bios": OPENSBI,
    }
    missing = [p for p in need.values() if not os.path.exists(p)]
    if missing:
        raise AccioError("missing " + ", ".join(missing) + " (run: make build)")
    return need



def device_defaults(dev):
    """The integer properties of a QEMU device and their defaults, as the
    QEMU in use lists them (-device DEV,help): {property: value}."""
    r = subprocess.run([artefacts()["qemu"], "-M", "virt", "-device", f"{dev},help"],
                       capture_output=True, text=True, timeout=60)
    return {k: int(v) for k, v in
            re.findall(r"^\s*([\w-]+)=<\w+>.*\(default: (\d+)\)", r.stdout, re.M)}

def qemu_cmdline(smp=4, mem="1G", icount=None, wire="user", initrd=None,
                 interactive=False, cmdline_extra="", fwd_udp=(), qmp=None, mac=GUEST_MAC,
                 pcap=None, seed=None, timing=True):
    """timing: the Rocket timing mode of ACCIO_TIMING, unless False (the
    caller gives its own in its QEMU arguments)."""
    a = artefacts()
    # Boot messages go to the console in full: run() keeps them in the log
    # (a boot that stops shows where); the guest's init quiets the console
    # (console loglevel 3) before the script's output starts.
    append = "console=ttyS0 "
    append += "accio.ip=10.0.2.15/24 accio.gw=10.0.2.2 " + cmdline_extra
    # IPv6 sockets exist (dual-stack servers open them) but no interface
    # has an IPv6 address: nothing but IPv4 goes on the wire
    append += " ipv6.disable_ipv6=1"
    cmd = [a["qemu"], "-M", MACHINE, "-smp", str(smp), "-m", mem,
           "-bios", a["bios"], "-kernel", a["kernel"], "-initrd", initrd or a["initrd"],
           "-append", append.strip(), "-no-reboot"]
    if interactive:
        cmd += ["-nographic"]
    else:
        cmd += ["-display", "none", "-chardev", "stdio,id=con0,signal=off",
                "-serial", "chardev:con0", "-monitor", "none"]
        if qmp:
            cmd += ["-qmp", f"unix:{qmp},server=on,wait=off"]
    if icount is not None:
        # Fixed guest randomness (the devicetree's rng-seed) and an RTC on
        # the virtual clock, so that equal runs execute equal instructions.
        # Each hart has its own virtual time; the one furthest behind
        # runs next, at most ACCIO_ICOUNT_SKEW_NS ahead of any other
        # running hart, and a hart alone runs at most ACCIO_RR_TIMESLICE
        # instructions in a turn (QEMU patches 0003, 0004, 0010).
        cmd += timing_qemu_args() if timing else []
        cmd += ["-icount", f"shift={icount},sleep=off",
                "-seed", str(SEED if seed is None else seed),
                "-rtc", "base=2026-01-01T00:00:00,clock=vm",
                "-accel", f"tcg,rr-timeslice={RR_TIMESLICE}"
                + (f",icount-parallel=on,icount-skew-ns={ICOUNT_SKEW_NS}"
                   if ICOUNT_PARALLEL else "")]
    elif timing_args(TIMING) is not None:
        raise AccioError("the Rocket timing mode (ACCIO_TIMING, --timing) needs --icount")
    if fwd_udp and wire != "user":
        raise AccioError("UDP forwarding needs the user wire")
    if wire == "user":
        fwd = "".join(f",hostfwd=udp:127.0.0.1:{h}-:{g}" for h, g in fwd_udp)
        cmd += ["-nic", f"user,model=accio-nic,mac={mac}{fwd}"]
    elif wire.startswith("socket:"):
        port = int(wire.split(":", 1)[1])
        cmd += ["-netdev", f"socket,id=wire0,connect=127.0.0.1:{port}",
                "-net", f"nic,netdev=wire0,model=accio-nic,macaddr={mac}"]
    elif wire.startswith("dgram:"):
        # one end of a wire between two SoCs: each QEMU sends its frames as
        # UDP datagrams from 127.0.0.1:LOCAL to 127.0.0.1:REMOTE
        local, remote = (int(x) for x in wire.split(":")[1:3])
        cmd += ["-netdev", f"dgram,id=wire0,local.type=inet,local.host=127.0.0.1,"
                f"local.port={local},remote.type=inet,remote.host=127.0.0.1,"
                f"remote.port={remote}",
                "-net", f"nic,netdev=wire0,model=accio-nic,macaddr={mac}"]
    elif wire == "echo" or wire.startswith("echo:"):
        # the wire ends in the NIC model's own peer on the virtual clock: it
        # answers ARP, ping and UDP datagrams after DELAY ns of service time
        delay = wire.split(":", 1)[1] if ":" in wire else "0"
        if not delay.isdigit():
            raise AccioError(f"echo wire: DELAY must be nanoseconds, not {delay!r}")
        cmd += ["-netdev", "hubport,id=wire0,hubid=0",
                "-net", f"nic,netdev=wire0,model=accio-nic,macaddr={mac}",
                "-global", "accio-nic.wire-peer=echo",
                "-global", f"accio-nic.peer-delay-ns={delay}"]
    elif wire.startswith("lockstep:"):
        # one end of a wire to another SoC whose virtual clock runs in
        # lockstep with this one's (QEMU's NIC model, accio_wire.c): ROLE is
        # listen or connect, NS the wire's one-way latency, PATH a Unix socket
        parts = wire.split(":", 3)
        if len(parts) != 4 or parts[1] not in ("listen", "connect") or not parts[2].isdigit():
            raise AccioError(f"lockstep wire: lockstep:listen|connect:NS:PATH, not {wire!r}")
        if icount is None:
            raise AccioError("a lockstep wire needs --icount (deterministic virtual time)")
        cmd += ["-netdev", "hubport,id=wire0,hubid=0",
                "-net", f"nic,netdev=wire0,model=accio-nic,macaddr={mac}",
                "-global", f"accio-nic.lockstep={parts[1]}:{parts[3]}",
                "-global", f"accio-nic.lockstep-ns={parts[2]}"]
    elif wire == "none":
        cmd += ["-netdev", "hubport,id=wire0,hubid=0",
                "-net", f"nic,netdev=wire0,model=accio-nic,macaddr={mac}"]
    else:
        raise AccioError(f"unknown wire {wire!r} (user, socket:PORT, dgram:L:R, "
                         "echo[:DELAY_NS], lockstep:ROLE:NS:PATH or none)")
    if pcap:
        # every frame on the wire, stamped with the NIC's virtual time
        cmd += ["-global", f"accio-nic.pcap={os.path.abspath(pcap)}"]
    return cmd


def newc_archive(files, entries=()):
    """An uncompressed cpio (newc) archive of {path: bytes} (mode 0644) and
    entries (path, mode, data): mode with its file type bits, data the
    contents or, for a symlink, the target. Parent directories are implied."""
    out, ino = bytearray(), 1
    items = {p: (0o100644, d) for p, d in files.items()}
    for path, mode, data in entries:
        items[path.strip("/")] = (mode, data)
    listed = []
    seen = set()
    for path in sorted(items):
        parts = path.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d not in seen and d not in items:
                seen.add(d)
                listed.append((d, 0o040755, b""))
        if path not in seen:
            seen.add(path)
            listed.append((path, *items[path]))
    for name, mode, data in listed + [("TRAILER!!!", 0, b"")]:
        data = data or b""
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0))
        out += hdr.encode() + nb
        out += b"\0" * (-len(out) % 4)
        out += data
        out += b"\0" * (-len(out) % 4)
        ino += 1
    return bytes(out)


def host_entries(host, guest):
    """cpio entries for a host file or folder placed at guest path (modes
    and symlinks kept), for run(add=...)."""
    if not os.path.lexists(host):
        raise AccioError(f"--add: {host} does not exist")
    guest = guest.strip("/")
    if not guest:
        raise AccioError(f"--add: {host}: the guest path must not be /")
    out = []

    def one(path, dest):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            out.append((dest, stat.S_IFLNK | 0o777, os.readlink(path).encode()))
        elif stat.S_ISDIR(st.st_mode):
            out.append((dest, stat.S_IFDIR | stat.S_IMODE(st.st_mode), b""))
            for n in sorted(os.listdir(path)):
                one(os.path.join(path, n), f"{dest}/{n}")
        elif stat.S_ISREG(st.st_mode):
            with open(path, "rb") as f:
                out.append((dest, stat.S_IFREG | stat.S_IMODE(st.st_mode), f.read()))
        else:
            raise AccioError(f"--add: {path}: only files, folders and symlinks")

    one(host, guest)
    return out


def parse_add(spec):
    """HOST_PATH:GUEST_PATH (the guest path absolute) -> (host, guest)."""
    host, sep, guest = spec.rpartition(":")
    if not sep or not host or not guest.startswith("/"):
        raise AccioError(f"--add {spec!r}: expected HOST_PATH:/GUEST_PATH")
    return host, guest


def read_pkg_list(path):
    """Package names of a list file (one or more a line, # starts a comment)."""
    with open(path) as f:
        return [n for line in f for n in line.split("#", 1)[0].split()]


def debian_layer(pkgs):
    """An uncompressed cpio of Debian packages pkgs (and what they pull in)
    that the image does not already hold (scripts/debian.py)."""
    out = tempfile.NamedTemporaryFile(prefix="accio-debian-", suffix=".cpio", delete=False)
    out.close()
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "debian.py"), "layer", "-o", out.name,
           "--minus-list", os.path.join(ROOT, "buildroot-config", "debian-packages.txt"),
           "--skip-root", os.path.join(BUILD, "rootfs")]
    for p in pkgs:
        cmd += ["--pkg", p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        os.unlink(out.name)
        raise AccioError(f"--pkg {' '.join(pkgs)}: {r.stderr.strip()}")
    return out.name


def initrd_with(files, layers=(), entries=()):
    """A temporary initrd: the image's initramfs, then the given layers
    (uncompressed cpio archives, e.g. extra Debian packages), then an
    archive of files."""
    base = artefacts()["initrd"]
    f = tempfile.NamedTemporaryFile(prefix="accio-initrd-", suffix=".cpio", delete=False)
    # The kernel looks for an uncompressed archive only at 4-byte offsets
    # and skips zero padding between archives.
    for part in (base, *layers):
        with open(part, "rb") as b:
            data = b.read()
        f.write(data + b"\0" * (-len(data) % 4))
    f.write(newc_archive(files, entries))
    f.close()
    return f.name


class HostEcho:
    """The host UDP echo server (apps/host/udp_echo_server.c) as a context manager."""

    def __init__(self, port=0, max_datagrams=0, delay_us=0):
        exe = os.path.join(BUILD, "apps", "host", "udp_echo_server")
        if not os.path.exists(exe):
            raise AccioError(f"missing {exe} (run: make build)")
        args = [exe, "-a", "127.0.0.1", "-p", str(port)]
        if max_datagrams:
            args += ["-n", str(max_datagrams)]
        if delay_us:
            args += ["-d", str(delay_us)]   # a slower server
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening"):
            self.proc.kill()
            raise AccioError("host echo server did not start")
        self.port = int(line.split()[1])
        self.echoed = None

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        out = self.proc.communicate(timeout=10)[0]
        m = re.search(r"echoed (\d+)", out or "")
        self.echoed = int(m.group(1)) if m else None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def free_udp_port():
    """A UDP port on 127.0.0.1 that is free now (for --fwd-udp)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class QMP:
    """A minimal QMP client on QEMU's unix socket (diagnostics only)."""

    def __init__(self, path, timeout=5.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self._read()                        # greeting
        self.cmd("qmp_capabilities")

    def _read(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise OSError("QMP closed")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def cmd(self, execute, **args):
        msg = {"execute": execute}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            r = self._read()
            if "return" in r:
                return r["return"]
            if "error" in r:
                raise OSError(f"QMP {execute}: {r['error'].get('desc')}")

    def hmp(self, line):
        return self.cmd("human-monitor-command", **{"command-line": line})

    def find(self, qtype, path="/machine", depth=3):
        """QOM path of the first object of type qtype under path."""
        for child in self.cmd("qom-list", path=path):
            t = child.get("type", "")
            if not t.startswith("child<"):
                continue
            sub = f"{path}/{child['name']}"
            if t == f"child<{qtype}>":
                return sub
            if depth > 1:
                found = self.find(qtype, sub, depth - 1)
                if found:
                    return found
        return None

    def close(self):
        self.sock.close()


def load_symbols(path=None):
    """Sorted (address, name) text symbols of the kernel's System.map."""
    path = path or os.path.join(BUILD, "System.map")
    syms = []
    try:
        with open(path) as f:
            for line in f:
                a, t, name = line.split()[:3]
                if t in "tTwW":
                    syms.append((int(a, 16), name))
    except OSError:
        return []
    syms.sort()
    return syms


def symbolize(pc, syms):
    """name+offset of a kernel address, or None for user/firmware addresses."""
    if not syms or pc < syms[0][0] or pc > syms[-1][0] + 0x100000:
        return None
    lo, hi = 0, len(syms) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if syms[mid][0] <= pc:
            lo = mid
        else:
            hi = mid - 1
    return f"{syms[lo][1]}+{pc - syms[lo][0]:#x}"


def harts_summary(regs, syms):
    """One line per hart from 'info registers -a': pc, the last supervisor
    trap (scause, sepc, stval), sp and ra, kernel addresses named."""
    def where(v):
        name = symbolize(v, syms)
        if name:
            return f"{v:#x} {name}"
        return f"{v:#x} ({'user' if v < 0x80000000 else 'firmware/physical'})"

    out = []
    for block in re.split(r"(?m)^(?=CPU#\d+)", regs):
        m = re.match(r"CPU#(\d+)", block)
        if not m:
            continue
        r = dict((k, int(v, 16)) for k, v in
                 re.findall(r"(?:^|\s)(pc|scause|sepc|stval|x2/sp|x1/ra)\s+([0-9a-f]{16})", block))
        if "pc" not in r:
            out.append(f"hart {m.group(1)}: pc ?")
            continue
        out.append(f"hart {m.group(1)}: pc {where(r['pc'])}; scause {r.get('scause', 0):#x} "
                   f"sepc {where(r.get('sepc', 0))} stval {r.get('stval', 0):#x}; "
                   f"sp {r.get('x2/sp', 0):#x} ra {where(r.get('x1/ra', 0))}")
    return "\n".join(out)


def log_dir():
    d = os.environ.get("ACCIO_LOG_DIR") or os.path.join(BUILD, "logs")
    os.makedirs(d, exist_ok=True)
    return d


def write_log(name, command, qemu_cmd, console, diag=""):
    """Keep a run's whole console (and diagnostics) in the log directory."""
    path = os.path.join(log_dir(), name)
    with open(path, "w") as f:
        f.write(f"# command: {command}\n# qemu: {shlex.join(qemu_cmd)}\n\n")
        f.write(console)
        if diag:
            f.write("\n\n# ---- host diagnostics ----\n" + diag + "\n")
    return path


class Guest:
    """A running SoC: QEMU with the serial console on its stdin/stdout and a
    QMP socket for the host's diagnostics."""

    def __init__(self, cmd, qmp_path, verbose=False):
        self.cmd, self.qmp_path = cmd, qmp_path
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.PIPE)
        self.chunks = []
        self.regs = ""
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._pump, args=(verbose,), daemon=True)
        self.reader.start()

    def _pump(self, verbose):
        for raw in iter(lambda: self.proc.stdout.read1(65536), b""):
            with self.lock:
                self.chunks.append(raw)
            if verbose:
                sys.stderr.write(raw.decode("utf-8", "replace"))
                sys.stderr.flush()

    def console(self):
        with self.lock:
            data = b"".join(self.chunks)
        return data.decode("utf-8", "replace").replace("\r\n", "\n")

    def type(self, data):
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def wait_console(self, text, since, timeout):
        """Wait until text appears in the console after offset since."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            if text in self.console()[since:]:
                return True
            time.sleep(0.2)
        return text in self.console()[since:]

    def diagnose(self, reason):
        """Collect what explains a guest that stopped making progress."""
        parts = [f"reason: {reason}"]
        qmp = None
        try:
            qmp = QMP(self.qmp_path)
            st = qmp.cmd("query-status")
            parts.append(f"qemu status: {st.get('status')}")
            # Stop the harts so that their pcs are exact, read them, go on.
            qmp.cmd("stop")
            regs = qmp.hmp("info registers -a")
            qmp.cmd("cont")
            parts.append("-- harts (QEMU)\n" + harts_summary(regs, load_symbols()))
            self.regs = regs
            path = qmp.find("accio-uncore")
            if path:
                parts.append("-- Accio uncore (QEMU)\n"
                             + qmp.cmd("qom-get", path=path, property="state").rstrip())
            parts.append("-- network (QEMU)\n" + qmp.hmp("info network").rstrip())
        except (OSError, ValueError) as e:
            parts.append(f"QMP: {e}")
        # User space first: accio-diag, answered by the guest's init.
        mark = len(self.console())
        self.type(b"\n@@ACCIO-DIAG@@\n")
        if not self.wait_console("@@ACCIO-DIAG-END@@", mark, 15):
            parts.append("guest: accio-diag did not answer within 15 s")
        # Then the kernel: serial BREAK + sysrq key, which needs no user space.
        if qmp:
            for key in (b"8", b"w", b"l", b"t"):
                try:
                    qmp.cmd("chardev-send-break", id="con0")
                    time.sleep(0.2)
                    self.type(key)
                    time.sleep(1.5)
                except OSError as e:
                    parts.append(f"sysrq {key.decode()}: {e}")
                    break
            time.sleep(2)
            qmp.close()
        return "\n".join(parts)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.reader.join(5)


class Session:
    """A SoC started on a command (start()); finish() waits for its Result."""

    def __init__(self, command, smp=4, mem="1G", icount=None, wire="user", verbose=False,
                 cmdline_extra="", qemu_extra=(), fwd_udp=(), add=(), pkgs=(), mac=GUEST_MAC,
                 pcap=None, seed=None, timing=None):
        entries = [e for h, g in add for e in host_entries(h, g)]
        layers = [debian_layer(list(pkgs))] if pkgs else []
        try:
            self.script = initrd_with({"accio/script": (command + "\n").encode()},
                                      layers, entries)
        finally:
            for layer in layers:
                os.unlink(layer)
        self.command = command
        self.tmp = tempfile.mkdtemp(prefix="accio-qmp-")
        qmp_path = os.path.join(self.tmp, "qmp.sock")
        # timing: this run's timing mode ("" plain icount), else ACCIO_TIMING's,
        # unless qemu_extra has a timing plugin of its own
        own = any("rocket_timing" in str(x) for x in qemu_extra)
        if timing is not None and not own:
            qemu_extra = list(qemu_extra) + timing_qemu_args(timing)
        self.cmd = qemu_cmdline(smp, mem, icount, wire, self.script, False, cmdline_extra,
                                fwd_udp, qmp=qmp_path, mac=mac, pcap=pcap,
                                seed=seed, timing=timing is None and not own) \
            + list(qemu_extra)
        self.t0 = time.monotonic()
        # unique among the sessions of this process (threads may start several)
        self.stamp = time.strftime("%Y%m%d-%H%M%S") + \
            f"-{os.getpid()}-{next(SESSION_IDS)}"
        self.guest = Guest(self.cmd, qmp_path, verbose)

    def started(self, timeout=300):
        """Wait until the guest's script has begun; False if it did not."""
        return self.guest.wait_console(BEGIN, 0, timeout)

    def stop(self):
        """End the guest's script and what it started (SIGTERM to its session)."""
        self.guest.type(b"\n@@ACCIO-STOP@@\n")

    def finish(self, timeout=600, log_name="last-run.log"):
        command, cmd, guest, stamp = self.command, self.cmd, self.guest, self.stamp
        try:
            try:
                guest.proc.wait(timeout=max(timeout - (time.monotonic() - self.t0), 1))
            except subprocess.TimeoutExpired:
                diag = guest.diagnose(f"guest did not finish within {timeout} s")
                guest.kill()
                console = guest.console()
                path = write_log(f"{stamp}-timeout.log", command, cmd, console,
                                 diag + "\n-- all registers (QEMU info registers -a)\n" +
                                 guest.regs)
                raise AccioError(f"guest did not finish within {timeout} s (log: {path})\n"
                                 f"{diag}\nconsole tail:\n" + console[-6000:])
            guest.reader.join(10)
        finally:
            guest.kill()
            if os.path.exists(self.script):
                os.unlink(self.script)
            for f in os.listdir(self.tmp):
                os.unlink(os.path.join(self.tmp, f))
            os.rmdir(self.tmp)
        wall = time.monotonic() - self.t0
        console = guest.console()
        write_log(log_name, command, cmd, console)
        start = console.find(BEGIN)
        m = END_RE.search(console, start if start >= 0 else 0)
        if os.environ.get("ACCIO_KEEP_LOGS") and m:
            write_log(f"{stamp}-rc{m.group(1)}.log", command, cmd, console)
        if start < 0 or not m:
            path = write_log(f"{stamp}-noresult.log", command, cmd, console)
            raise AccioError(f"QEMU exited ({guest.proc.returncode}) without a result "
                             f"(log: {path}); console tail:\n" + console[-3000:])
        output = console[start + len(BEGIN) + 1:m.start()]
        return Result(int(m.group(1)), output, console, wall)


def run(command, smp=4, mem="1G", icount=None, wire="user", timeout=600,
        verbose=False, cmdline_extra="", qemu_extra=(), fwd_udp=(), add=(), pkgs=(),
        pcap=None, seed=None, timing=None):
    """Boot the SoC, run a shell command in the guest, return a Result.

    fwd_udp: (host port, guest port) pairs forwarded on the user wire.
    add: (host path, guest path) pairs: files and folders put into the guest
    (modes and symlinks kept). pkgs: extra Debian riscv64 packages for this
    run (with their dependencies).
    The whole console is kept in the log directory (log_dir()); on a timeout
    the diagnostics (Guest.diagnose) are added to it and to the error.
    pcap: a file that gets every frame on the NIC's wire, both ways, with
    the virtual time it crossed (nanosecond pcap, first 128 bytes).
    seed: the guest's randomness under icount (default SEED).
    timing: the Rocket timing mode of this run ("rocket:dram=N,...", or ""
    for plain icount; default ACCIO_TIMING's)."""
    return Session(command, smp, mem, icount, wire, verbose, cmdline_extra, qemu_extra,
                   fwd_udp, add, pkgs, pcap=pcap, seed=seed, timing=timing).finish(timeout)


PAIR_NET = {"server": ("10.0.3.1/24", "52:54:00:ac:c1:01"),
            "client": ("10.0.3.2/24", "52:54:00:ac:c1:02")}


def run_pair(server, client, smp=4, mem="1G", icount=None, timeout=600, verbose=False,
             add=(), pkgs=(), grace=5.0, lockstep=None, pcap_dir=None):
    """Two SoCs joined by one wire (QEMU dgram netdevs on 127.0.0.1): the
    server SoC (10.0.3.1) runs `server`, the client SoC (10.0.3.2) runs
    `client`. Once the client's command has ended (and `grace` seconds
    more), the server's command and everything it started is stopped
    (SIGTERM). Returns (server Result, client Result); a server stopped
    that way has rc 143 and .stopped set.

    lockstep=NS: the wire is the NIC model's lockstep wire instead (one-way
    latency NS of virtual time; needs icount, 4 if not given): both SoCs
    boot together and their virtual clocks advance in lockstep, so the pair
    repeats exactly from run to run. The server's command then starts at
    about the client's, so a client must wait for its server (retry()).
    pcap_dir: each SoC's wire, captured in virtual time, in
    pcap_dir/server.pcap and pcap_dir/client.pcap."""
    hub = None
    if lockstep is not None:
        # the 2-node case of accio cluster: both NICs on the hub's switch,
        # half the latency on each side (tools/cluster.py)
        import cluster
        icount = 4 if icount is None else icount
        ns = int(lockstep)
        if ns < 2:
            raise AccioError("a lockstep wire needs a latency of at least 2 ns")
        hub = cluster.Wire({"server": (PAIR_NET["server"][1], ns // 2, True),
                            "client": (PAIR_NET["client"][1], ns - ns // 2, False)})
        wires = {r: f"lockstep:connect:{hub.quantum}:{hub.sock[r]}" for r in hub.sock}
    else:
        pa, pb = free_udp_port(), free_udp_port()
        while pb == pa:
            pb = free_udp_port()
        wires = {"server": f"dgram:{pa}:{pb}", "client": f"dgram:{pb}:{pa}"}
    peer = {"server": "10.0.3.2", "client": "10.0.3.1"}
    sess = {}
    try:
        for role, cmd in (("server", server), ("client", client)):
            ip, mac = PAIR_NET[role]
            extra = f"accio.ip={ip} accio.gw={peer[role]}"
            pcap = os.path.join(pcap_dir, f"{role}.pcap") if pcap_dir else None
            sess[role] = Session(cmd, smp, mem, icount, wires[role],
                                 verbose, extra, (), (), add, pkgs, mac, pcap=pcap)
            if role == "server" and lockstep is None and not sess[role].started(timeout):
                raise AccioError("the server SoC did not start its command:\n" +
                                 sess[role].guest.console()[-3000:])
        rc = sess["client"].finish(timeout, "last-run-client.log")
        deadline = time.monotonic() + grace
        srv = sess["server"]
        while srv.guest.proc.poll() is None and END_RE.search(srv.guest.console()) is None \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        stopped = END_RE.search(srv.guest.console()) is None
        if stopped:
            srv.stop()
        rs = srv.finish(timeout, "last-run-server.log")
        rs.stopped = stopped
        return rs, rc
    finally:
        for s in sess.values():
            s.guest.kill()
        if hub:
            hub.close()


def boot(smp=4, mem="1G", icount=None, wire="user"):
    return subprocess.call(qemu_cmdline(smp, mem, icount, wire, None, True))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["eval"]:
        # the evaluation's own command line (python3 -m eval --help)
        venv_py = os.path.join(os.environ.get("ACCIO_CACHE", os.path.expanduser(
            "~/.cache/accio")), "venv", "bin", "python")
        py = venv_py if os.path.exists(venv_py) else sys.executable
        return subprocess.call([py, "-m", "eval", *argv[1:]], cwd=ROOT)
    if argv[:1] == ["cluster"]:
        # N SoCs on a switched network, in lockstep (tools/cluster.py)
        import cluster
        return cluster.main(argv[1:])
    if argv[:1] in (["soc-linux"], ["soc-run"]):
        # Linux on the Rocket RTL SoC: boot once (soc-linux), restore many
        sys.path.insert(0, os.path.join(ROOT, "hardware", "soc"))
        import soc_linux
        rest, harts = argv[1:], []
        if rest[:1] == ["--harts"]:
            harts, rest = rest[:2], rest[2:]
        return soc_linux.main(harts + (["boot"] if argv[0] == "soc-linux" else ["run", *rest]))
    ap = argparse.ArgumentParser(prog="accio", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)
    sub.add_parser("build", help="build everything")
    for name in ("boot", "run"):
        p = sub.add_parser(name)
        p.add_argument("--smp", type=int, default=4)
        p.add_argument("--mem", default="1G")
        p.add_argument("--icount", type=int, nargs="?", const=4, default=None)
        p.add_argument("--wire", default="user")
        p.add_argument("--host-echo", type=int, default=None, metavar="PORT")
        p.add_argument("--fwd-udp", action="append", default=[], metavar="H:G")
        p.add_argument("--add", action="append", default=[], metavar="HOST:GUEST")
        p.add_argument("--pkg", action="append", default=[], metavar="NAME")
        p.add_argument("--pkg-list", action="append", default=[], metavar="FILE")
        if name == "run":
            p.add_argument("--pcap", metavar="FILE")
            p.add_argument("--timeout", type=float, default=600)
            p.add_argument("-v", "--verbose", action="store_true")
            p.add_argument("command", nargs=argparse.REMAINDER)
    p = sub.add_parser("pair", help="two SoCs joined by one wire, a command on each")
    p.add_argument("--smp", type=int, default=4)
    p.add_argument("--mem", default="1G")
    p.add_argument("--icount", type=int, nargs="?", const=4, default=None)
    p.add_argument("--add", action="append", default=[], metavar="HOST:GUEST")
    p.add_argument("--pkg", action="append", default=[], metavar="NAME")
    p.add_argument("--pkg-list", action="append", default=[], metavar="FILE")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--grace", type=float, default=5.0)
    p.add_argument("--lockstep", type=int, nargs="?", const=5000, default=None, metavar="NS")
    p.add_argument("--pcap-dir", metavar="DIR")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--server", required=True, metavar="CMD")
    p.add_argument("--client", required=True, metavar="CMD")
    for p in sub.choices.values():
        if p.prog.split()[-1] in ("boot", "run", "pair"):
            p.add_argument("--timing", metavar="MODE",
                           help="rocket[:NAME=VALUE,...]: the Rocket timing mode "
                                "(ACCIO_TIMING; needs --icount)")
    a = ap.parse_args(argv)
    if getattr(a, "timing", None) is not None:
        global TIMING
        TIMING = a.timing
    for path in getattr(a, "pkg_list", []):
        try:
            a.pkg += read_pkg_list(path)
        except OSError as e:
            ap.error(f"--pkg-list {path}: {e.strerror}")

    if a.verb == "build":
        return subprocess.call(["make", "-C", ROOT, "build"])

    if a.verb == "pair":
        try:
            if a.pcap_dir:
                os.makedirs(a.pcap_dir, exist_ok=True)
            rs, rc = run_pair(a.server, a.client, a.smp, a.mem, a.icount, a.timeout,
                              a.verbose, [parse_add(x) for x in a.add], a.pkg, a.grace,
                              a.lockstep, a.pcap_dir)
        except AccioError as e:
            print(f"accio: {e}", file=sys.stderr)
            return 125
        for role, r in (("server", rs), ("client", rc)):
            print(f"== {role} (rc {r.rc}{', stopped' if r.stopped else ''}, "
                  f"{r.wall_s:.1f} s wall)")
            sys.stdout.write(r.output)
        return rc.rc or (0 if rs.stopped else rs.rc)
    try:
        fwd = [tuple(int(x) for x in f.split(":")) for f in a.fwd_udp]
        if any(len(f) != 2 for f in fwd):
            raise ValueError
    except ValueError:
        ap.error("--fwd-udp takes HOSTPORT:GUESTPORT")
    echo = HostEcho(a.host_echo) if a.host_echo is not None else None
    try:
        if a.verb == "boot":
            initrd = None
            if a.add or a.pkg:
                entries = [e for x in a.add for e in host_entries(*parse_add(x))]
                layers = [debian_layer(a.pkg)] if a.pkg else []
                initrd = initrd_with({}, layers, entries)
                for layer in layers:
                    os.unlink(layer)
            try:
                return subprocess.call(qemu_cmdline(a.smp, a.mem, a.icount, a.wire,
                                                    initrd, True, "", fwd))
            finally:
                if initrd:
                    os.unlink(initrd)
        command = a.command[1:] if a.command[:1] == ["--"] else a.command
        if not command:
            ap.error("run needs a command")
        text = command[0] if len(command) == 1 else shlex.join(command)
        r = run(text, a.smp, a.mem, a.icount, a.wire, a.timeout, a.verbose,
                fwd_udp=fwd, add=[parse_add(x) for x in a.add], pkgs=a.pkg, pcap=a.pcap)
        sys.stdout.write(r.output)
        print(f"[accio] guest exit status {r.rc}, {r.wall_s:.1f} s wall", file=sys.stderr)
        return r.rc
    except AccioError as e:
        print(f"accio: {e}", file=sys.stderr)
        return 125
    finally:
        if echo:
            echo.close()


if __name__ == "__main__":
    sys.exit(main())
