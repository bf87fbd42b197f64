"""QEMU's command line for a Machine, the TCG plugins (the Rocket timing
mode) and the properties of QEMU's devices."""
import hashlib
import os
import re
import subprocess
import threading

from . import config
from .config import AccioError, GUEST_MAC, Machine, artefacts


def timing_args(spec):
    """ACCIO_TIMING / --timing: the plugin's arguments (None for none)."""
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


# the marks of eval's instruction counter, read by the plugins
PROF_MARKS = os.path.join(config.ROOT, "eval", "prof", "prof_marks.h")


def build_plugin(src, name):
    """A TCG plugin from its C source, built on first use and cached under
    ~/.cache/accio/NAME/ by the hash of the source, QEMU's plugin header and
    the marks' header (prof_marks.h)."""
    cache = config.cache_dir()
    hdr_dir = os.path.join(cache, "qemu", "tree", "include", "qemu")
    hdr = os.path.join(hdr_dir, "qemu-plugin.h")
    if not os.path.exists(hdr):
        raise AccioError(f"{hdr} missing (run: make build)")
    key = hashlib.sha256(b"".join(open(f, "rb").read() for f in (src, hdr, PROF_MARKS))
                         ).hexdigest()[:16]
    out = os.path.join(cache, name, f"lib{os.path.splitext(os.path.basename(src))[0]}-{key}.so")
    if not os.path.exists(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        glib = subprocess.run(["pkg-config", "--cflags", "glib-2.0"], capture_output=True,
                              text=True, check=True).stdout.split()
        tmp = f"{out}.{os.getpid()}.{threading.get_ident()}.tmp"
        subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", *glib,
                        "-I", hdr_dir, "-I", os.path.dirname(PROF_MARKS), "-o", tmp, src],
                       check=True)
        os.replace(tmp, out)
    return out


def timing_plugin():
    """The Rocket timing plugin (hardware/timing)."""
    return build_plugin(os.path.join(config.ROOT, "hardware", "timing", "rocket_timing.c"),
                        "timing")


def timing_qemu_args(spec=None):
    """-plugin arguments for QEMU in the timing mode SPEC (default
    ACCIO_TIMING), or []."""
    args = timing_args(config.TIMING if spec is None else spec)
    if args is None:
        return []
    # an uncached load from the uncore takes the RTL's 12 cycles, as a loop
    # of them measures (eval/bench_timing.py); the plain mode's 15 is the
    # RTL's load between two rdcycle (eval/bench_soc.py)
    return ["-plugin", ",".join([timing_plugin()] + args),
            "-global", f"accio-uncore.load-cycles={config.TIMING_IO_LOAD_CYCLES}"]


def device_defaults(dev):
    """The integer properties of a QEMU device and their defaults, as the
    QEMU in use lists them (-device DEV,help): {property: value}."""
    r = subprocess.run([artefacts()["qemu"], "-M", "virt", "-device", f"{dev},help"],
                       capture_output=True, text=True, timeout=60)
    return {k: int(v) for k, v in
            re.findall(r"^\s*([\w-]+)=<\w+>.*\(default: (\d+)\)", r.stdout, re.M)}


def wire_args(wire, mac, icount):
    """QEMU's arguments for the NIC and its wire (Machine.wire)."""
    nic = f"nic,netdev=wire0,model=accio-nic,macaddr={mac}"
    if wire.startswith("socket:"):
        port = int(wire.split(":", 1)[1])
        return ["-netdev", f"socket,id=wire0,connect=127.0.0.1:{port}", "-net", nic]
    if wire.startswith("dgram:"):
        # one end of a wire between two SoCs: each QEMU sends its frames as
        # UDP datagrams from 127.0.0.1:LOCAL to 127.0.0.1:REMOTE
        local, remote = (int(x) for x in wire.split(":")[1:3])
        return ["-netdev", f"dgram,id=wire0,local.type=inet,local.host=127.0.0.1,"
                f"local.port={local},remote.type=inet,remote.host=127.0.0.1,"
                f"remote.port={remote}", "-net", nic]
    if wire == "echo" or wire.startswith("echo:"):
        # the wire ends in the NIC model's own peer on the virtual clock: it
        # answers ARP, ping and UDP datagrams after DELAY ns of service time
        delay = wire.split(":", 1)[1] if ":" in wire else "0"
        if not delay.isdigit():
            raise AccioError(f"echo wire: DELAY must be nanoseconds, not {delay!r}")
        return ["-netdev", "hubport,id=wire0,hubid=0", "-net", nic,
                "-global", "accio-nic.wire-peer=echo",
                "-global", f"accio-nic.peer-delay-ns={delay}"]
    if wire.startswith("lockstep:"):
        # one end of a wire to another SoC whose virtual clock runs in
        # lockstep with this one's (QEMU's NIC model, accio_wire.c): ROLE is
        # listen or connect, NS the wire's one-way latency, PATH a Unix socket
        parts = wire.split(":", 3)
        if len(parts) != 4 or parts[1] not in ("listen", "connect") or not parts[2].isdigit():
            raise AccioError(f"lockstep wire: lockstep:listen|connect:NS:PATH, not {wire!r}")
        if icount is None:
            raise AccioError("a lockstep wire needs --icount (deterministic virtual time)")
        return ["-netdev", "hubport,id=wire0,hubid=0", "-net", nic,
                "-global", f"accio-nic.lockstep={parts[1]}:{parts[3]}",
                "-global", f"accio-nic.lockstep-ns={parts[2]}"]
    if wire == "none":
        return ["-netdev", "hubport,id=wire0,hubid=0", "-net", nic]
    raise AccioError(f"unknown wire {wire!r} (user, socket:PORT, dgram:L:R, "
                     "echo[:DELAY_NS], lockstep:ROLE:NS:PATH or none)")


def command_line(m, interactive=False, qmp=None):
    """QEMU's command line for Machine m: with its console on this
    terminal (interactive) or on QEMU's stdin/stdout, and then a QMP socket
    at the path qmp if given."""
    a = artefacts()
    # a timing plugin among qemu_extra replaces the timing mode's
    own = any("rocket_timing" in str(x) for x in m.qemu_extra)
    # Boot messages go to the console in full: run() keeps them in the log
    # (a boot that stops shows where); the guest's init quiets the console
    # (console loglevel 3) before the script's output starts.
    append = "console=ttyS0 "
    append += "accio.ip=10.0.2.15/24 accio.gw=10.0.2.2 " + m.cmdline_extra
    # IPv6 sockets exist (dual-stack servers open them) but no interface
    # has an IPv6 address: nothing but IPv4 goes on the wire
    append += " ipv6.disable_ipv6=1"
    cmd = [a["qemu"], "-M", config.MACHINE, "-cpu", config.CPU, "-smp", str(m.smp), "-m", m.mem,
           "-bios", a["bios"], "-kernel", a["kernel"], "-initrd", m.initrd or a["initrd"],
           "-append", append.strip(), "-no-reboot"]
    if interactive:
        cmd += ["-nographic"]
    else:
        cmd += ["-display", "none", "-chardev", "stdio,id=con0,signal=off",
                "-serial", "chardev:con0", "-monitor", "none"]
        if qmp:
            cmd += ["-qmp", f"unix:{qmp},server=on,wait=off"]
    if m.icount is not None:
        # Fixed guest randomness (the devicetree's rng-seed) and an RTC on
        # the virtual clock, so that equal runs execute equal instructions.
        # Each hart has its own virtual time; the one furthest behind
        # runs next, at most ACCIO_ICOUNT_SKEW_NS ahead of any other
        # running hart, and a hart alone runs at most ACCIO_RR_TIMESLICE
        # instructions in a turn (QEMU patches 0003, 0004, 0010).
        cmd += timing_qemu_args() if m.timing is None and not own else []
        cmd += ["-icount", f"shift={m.icount},sleep=off",
                "-seed", str(config.SEED if m.seed is None else m.seed),
                "-rtc", "base=2026-01-01T00:00:00,clock=vm",
                "-accel", f"tcg,rr-timeslice={config.RR_TIMESLICE}"
                + (f",icount-parallel=on,icount-skew-ns={config.ICOUNT_SKEW_NS}"
                   if config.ICOUNT_PARALLEL else "")]
    elif timing_args(config.TIMING) is not None:
        raise AccioError("the Rocket timing mode (ACCIO_TIMING, --timing) needs --icount")
    if m.fwd_udp and m.wire != "user":
        raise AccioError("UDP forwarding needs the user wire")
    if m.wire == "user":
        fwd = "".join(f",hostfwd=udp:127.0.0.1:{h}-:{g}" for h, g in m.fwd_udp)
        cmd += ["-nic", f"user,model=accio-nic,mac={m.mac}{fwd}"]
    else:
        cmd += wire_args(m.wire, m.mac, m.icount)
    if m.pcap:
        # every frame on the wire, stamped with the NIC's virtual time
        cmd += ["-global", f"accio-nic.pcap={os.path.abspath(m.pcap)}"]
    cmd += list(m.qemu_extra)
    # this run's own timing mode, when it has one, comes last
    if m.timing is not None and not own:
        cmd += timing_qemu_args(m.timing)
    return cmd


def qemu_cmdline(smp=4, mem="1G", icount=None, wire="user", initrd=None,
                 interactive=False, cmdline_extra="", fwd_udp=(), qmp=None, mac=GUEST_MAC,
                 pcap=None, seed=None, timing=True):
    """command_line() with a Machine's fields as arguments. timing: the
    Rocket timing mode of ACCIO_TIMING, unless False (the caller gives its
    own in its QEMU arguments)."""
    m = Machine(smp=smp, mem=mem, icount=icount, wire=wire, initrd=initrd,
                cmdline_extra=cmdline_extra, fwd_udp=tuple(fwd_udp), mac=mac, pcap=pcap,
                seed=seed, timing=None if timing else "")
    return command_line(m, interactive, qmp)
