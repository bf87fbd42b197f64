#!/usr/bin/env python3
"""accio: build, boot and drive the emulated Accio SoC.

  accio build                   build everything (QEMU, kernel, userspace, image)
  accio boot  [options]         boot with an interactive console (exit the shell to stop)
  accio run   [options] -- CMD  boot, run CMD in the guest, print its output and
                                return its exit status

Options for boot and run:
  --smp N           harts (default 4, like the prototype)
  --mem SIZE        guest memory (default 1G)
  --icount [SHIFT]  deterministic virtual time: each instruction advances the
                    clock by 2^SHIFT ns (default 4); idle time is skipped
  --wire KIND       the NIC's host side: user (default; the host is 10.0.2.2),
                    socket:PORT (QEMU connects to a raw-frame peer on
                    127.0.0.1:PORT), none (frames go nowhere)
  --host-echo PORT  run the host UDP echo server on 127.0.0.1:PORT meanwhile
  --fwd-udp H:G     (user wire) datagrams to 127.0.0.1:H on the host reach
                    the guest's UDP port G, from 10.0.2.2; repeatable
  --timeout S       give up after S seconds (run only; default 600)
  -v, --verbose     show the console as it boots

The guest reaches the host at 10.0.2.2 with the user wire; a host server
listening on 127.0.0.1:PORT is 10.0.2.2:PORT to the guest.
"""
import argparse
import os
import re
import shlex
import socket
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


def artefacts():
    need = {
        "qemu": os.path.join(BUILD, "qemu-system-riscv64"),
        "kernel": os.path.join(BUILD, "Image"),
        "initrd": os.path.join(BUILD, "initramfs.cpio.gz"),
        "bios": OPENSBI,
    }
    missing = [p for p in need.values() if not os.path.exists(p)]
    if missing:
        raise AccioError("missing " + ", ".join(missing) + " (run: make build)")
    return need


def qemu_cmdline(smp=4, mem="1G", icount=None, wire="user", initrd=None,
                 interactive=False, cmdline_extra="", fwd_udp=()):
    a = artefacts()
    append = "console=ttyS0 " + ("" if interactive else "quiet loglevel=3 ")
    append += "accio.ip=10.0.2.15/24 accio.gw=10.0.2.2 " + cmdline_extra
    cmd = [a["qemu"], "-M", "virt", "-smp", str(smp), "-m", mem,
           "-bios", a["bios"], "-kernel", a["kernel"], "-initrd", initrd or a["initrd"],
           "-append", append.strip(), "-no-reboot"]
    if interactive:
        cmd += ["-nographic"]
    else:
        cmd += ["-display", "none", "-serial", "stdio", "-monitor", "none"]
    if icount is not None:
        # Fixed guest randomness (the devicetree's rng-seed) and an RTC on
        # the virtual clock, so that equal runs execute equal instructions.
        cmd += ["-icount", f"shift={icount},sleep=off", "-seed", "1",
                "-rtc", "base=2026-01-01T00:00:00,clock=vm"]
    if fwd_udp and wire != "user":
        raise AccioError("UDP forwarding needs the user wire")
    if wire == "user":
        fwd = "".join(f",hostfwd=udp:127.0.0.1:{h}-:{g}" for h, g in fwd_udp)
        cmd += ["-nic", f"user,model=accio-nic,mac={GUEST_MAC}{fwd}"]
    elif wire.startswith("socket:"):
        port = int(wire.split(":", 1)[1])
        cmd += ["-netdev", f"socket,id=wire0,connect=127.0.0.1:{port}",
                "-net", f"nic,netdev=wire0,model=accio-nic,macaddr={GUEST_MAC}"]
    elif wire == "none":
        cmd += ["-netdev", "hubport,id=wire0,hubid=0",
                "-net", f"nic,netdev=wire0,model=accio-nic,macaddr={GUEST_MAC}"]
    else:
        raise AccioError(f"unknown wire {wire!r} (user, socket:PORT or none)")
    return cmd


def newc_archive(files):
    """An uncompressed cpio (newc) archive of {path: bytes}, directories implied."""
    out, ino = bytearray(), 1
    entries = []
    for path in sorted(files):
        parts = path.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if (d, None) not in entries:
                entries.append((d, None))
        entries.append((path, files[path]))
    for name, data in entries + [("TRAILER!!!", b"")]:
        mode = 0o040755 if data is None else (0o100644 if name != "TRAILER!!!" else 0)
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


def initrd_with(files):
    """A temporary initrd: the image's initramfs followed by an archive of files."""
    base = artefacts()["initrd"]
    f = tempfile.NamedTemporaryFile(prefix="accio-initrd-", suffix=".cpio", delete=False)
    with open(base, "rb") as b:
        data = b.read()
    # The kernel looks for an uncompressed archive only at 4-byte offsets
    # and skips zero padding between archives.
    f.write(data + b"\0" * (-len(data) % 4))
    f.write(newc_archive(files))
    f.close()
    return f.name


class HostEcho:
    """The host UDP echo server (apps/host/udp_echo_server.c) as a context manager."""

    def __init__(self, port=0, max_datagrams=0):
        exe = os.path.join(BUILD, "apps", "host", "udp_echo_server")
        if not os.path.exists(exe):
            raise AccioError(f"missing {exe} (run: make build)")
        args = [exe, "-a", "127.0.0.1", "-p", str(port)]
        if max_datagrams:
            args += ["-n", str(max_datagrams)]
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


def run(command, smp=4, mem="1G", icount=None, wire="user", timeout=600,
        verbose=False, cmdline_extra="", qemu_extra=(), fwd_udp=()):
    """Boot the SoC, run a shell command in the guest, return a Result.

    fwd_udp: (host port, guest port) pairs forwarded on the user wire."""
    script = initrd_with({"accio/script": (command + "\n").encode()})
    cmd = qemu_cmdline(smp, mem, icount, wire, script, False, cmdline_extra,
                       fwd_udp)
    cmd += list(qemu_extra)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    chunks = []

    def pump():
        for raw in iter(lambda: proc.stdout.read1(65536), b""):
            chunks.append(raw)
            if verbose:
                sys.stderr.write(raw.decode("utf-8", "replace"))
                sys.stderr.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        reader.join(5)
        os.unlink(script)
        console = b"".join(chunks).decode("utf-8", "replace")
        raise AccioError(f"guest did not finish within {timeout} s; console tail:\n"
                         + console[-3000:])
    reader.join(10)
    os.unlink(script)
    wall = time.monotonic() - t0
    console = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    start = console.find(BEGIN)
    m = END_RE.search(console, start if start >= 0 else 0)
    if start < 0 or not m:
        raise AccioError(f"QEMU exited ({proc.returncode}) without a result; console tail:\n"
                         + console[-3000:])
    output = console[start + len(BEGIN) + 1:m.start()]
    return Result(int(m.group(1)), output, console, wall)


def boot(smp=4, mem="1G", icount=None, wire="user"):
    return subprocess.call(qemu_cmdline(smp, mem, icount, wire, None, True))


def main(argv=None):
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
        if name == "run":
            p.add_argument("--timeout", type=float, default=600)
            p.add_argument("-v", "--verbose", action="store_true")
            p.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)

    if a.verb == "build":
        return subprocess.call(["make", "-C", ROOT, "build"])

    try:
        fwd = [tuple(int(x) for x in f.split(":")) for f in a.fwd_udp]
        if any(len(f) != 2 for f in fwd):
            raise ValueError
    except ValueError:
        ap.error("--fwd-udp takes HOSTPORT:GUESTPORT")
    echo = HostEcho(a.host_echo) if a.host_echo is not None else None
    try:
        if a.verb == "boot":
            return subprocess.call(qemu_cmdline(a.smp, a.mem, a.icount, a.wire,
                                                None, True, "", fwd))
        command = a.command[1:] if a.command[:1] == ["--"] else a.command
        if not command:
            ap.error("run needs a command")
        text = command[0] if len(command) == 1 else shlex.join(command)
        r = run(text, a.smp, a.mem, a.icount, a.wire, a.timeout, a.verbose,
                fwd_udp=fwd)
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
