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
import os
import shlex
import subprocess
import sys

from . import config
from .config import AccioError, Machine
from .host import HostEcho
from .image import initrd_for, parse_add, read_pkg_list
from .machine import boot, run
from .pair import run_pair

def parser():
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
    return ap


def pair(a):
    try:
        if a.pcap_dir:
            os.makedirs(a.pcap_dir, exist_ok=True)
        rs, rc = run_pair(a.server, a.client, smp=a.smp, mem=a.mem, icount=a.icount,
                          timeout=a.timeout, verbose=a.verbose,
                          add=[parse_add(x) for x in a.add], pkgs=a.pkg, grace=a.grace,
                          lockstep=a.lockstep, pcap_dir=a.pcap_dir)
    except AccioError as e:
        print(f"accio: {e}", file=sys.stderr)
        return 125
    for role, r in (("server", rs), ("client", rc)):
        print(f"== {role} (rc {r.rc}{', stopped' if r.stopped else ''}, "
              f"{r.wall_s:.1f} s wall)")
        sys.stdout.write(r.output)
    return rc.rc or (0 if rs.stopped else rs.rc)


def boot_console(a, fwd):
    """accio boot: the image, with --add and --pkg when given."""
    initrd = None
    if a.add or a.pkg:
        initrd = initrd_for({}, [parse_add(x) for x in a.add], a.pkg)
    try:
        return boot(Machine(smp=a.smp, mem=a.mem, icount=a.icount, wire=a.wire,
                            initrd=initrd, fwd_udp=fwd))
    finally:
        if initrd:
            os.unlink(initrd)


def run_command(a, ap, fwd):
    """accio run: the command's output on stdout, its exit status."""
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        ap.error("run needs a command")
    text = command[0] if len(command) == 1 else shlex.join(command)
    r = run(text, smp=a.smp, mem=a.mem, icount=a.icount, wire=a.wire, timeout=a.timeout,
            verbose=a.verbose, fwd_udp=fwd, add=[parse_add(x) for x in a.add], pkgs=a.pkg,
            pcap=a.pcap)
    sys.stdout.write(r.output)
    print(f"[accio] guest exit status {r.rc}, {r.wall_s:.1f} s wall", file=sys.stderr)
    return r.rc


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["eval"]:
        # the evaluation's own command line (python3 -m eval --help)
        venv_py = os.path.join(config.cache_dir(), "venv", "bin", "python")
        py = venv_py if os.path.exists(venv_py) else sys.executable
        return subprocess.call([py, "-m", "eval", *argv[1:]], cwd=config.ROOT)
    if argv[:1] == ["cluster"]:
        # N SoCs on a switched network, in lockstep (tools/cluster.py)
        import cluster
        return cluster.main(argv[1:])
    if argv[:1] in (["soc-linux"], ["soc-run"]):
        # Linux on the Rocket RTL SoC: boot once (soc-linux), restore many
        sys.path.insert(0, os.path.join(config.ROOT, "hardware", "soc"))
        import soc_linux
        rest, harts = argv[1:], []
        if rest[:1] == ["--harts"]:
            harts, rest = rest[:2], rest[2:]
        return soc_linux.main(harts + (["boot"] if argv[0] == "soc-linux" else ["run", *rest]))
    ap = parser()
    a = ap.parse_args(argv)
    if getattr(a, "timing", None) is not None:
        config.TIMING = a.timing
    for path in getattr(a, "pkg_list", []):
        try:
            a.pkg += read_pkg_list(path)
        except OSError as e:
            ap.error(f"--pkg-list {path}: {e.strerror}")
    if a.verb == "build":
        return subprocess.call(["make", "-C", config.ROOT, "build"])
    if a.verb == "pair":
        return pair(a)
    try:
        fwd = [tuple(int(x) for x in f.split(":")) for f in a.fwd_udp]
        if any(len(f) != 2 for f in fwd):
            raise ValueError
    except ValueError:
        ap.error("--fwd-udp takes HOSTPORT:GUESTPORT")
    echo = HostEcho(a.host_echo) if a.host_echo is not None else None
    try:
        return boot_console(a, fwd) if a.verb == "boot" else run_command(a, ap, fwd)
    except AccioError as e:
        print(f"accio: {e}", file=sys.stderr)
        return 125
    finally:
        if echo:
            echo.close()
