"""One SoC: QEMU started on a Machine with the guest's console on a pipe
(Guest), a command run in the guest from boot to its exit status (Session,
run()), and the interactive console (boot())."""
import itertools
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace

from . import diag, image, qemu
from .config import AccioError, Machine

SESSION_IDS = itertools.count(1)
BEGIN = "@@ACCIO-BEGIN@@"
END_RE = re.compile(r"@@ACCIO-END rc=(\d+)@@")


@dataclass
class Result:
    rc: int
    output: str
    console: str
    wall_s: float
    stopped: bool = False      # ended by the host (a pair's server SoC)


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
        """Collect what explains a guest that stopped making progress
        (diag.diagnose); QEMU's registers of every hart are kept in .regs."""
        text, regs = diag.diagnose(self, reason)
        if regs is not None:
            self.regs = regs
        return text

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.reader.join(5)


class Session:
    """A SoC started on a command; finish() waits for its Result.

    machine: the SoC (a config.Machine), or its fields as keywords (smp=,
    mem=, icount=, wire=, ...), or both (the keywords change the machine's
    fields); its initrd is the session's own: the image, a layer of the
    Debian packages pkgs, the host paths add ((host, guest) pairs) and the
    command. verbose: the console on stderr as it comes."""

    def __init__(self, command, *, machine=None, verbose=False, add=(), pkgs=(), **fields):
        machine = Machine.of(machine, **fields)
        self.script = image.initrd_for({"accio/script": (command + "\n").encode()}, add, pkgs)
        self.command = command
        self.tmp = tempfile.mkdtemp(prefix="accio-qmp-")
        qmp_path = os.path.join(self.tmp, "qmp.sock")
        try:
            self.machine = replace(machine, initrd=self.script)
            self.cmd = qemu.command_line(self.machine, qmp=qmp_path)
        except BaseException:
            self._remove_files()
            raise
        self.t0 = time.monotonic()
        # unique among the sessions of this process (threads may start several)
        self.stamp = time.strftime("%Y%m%d-%H%M%S") + \
            f"-{os.getpid()}-{next(SESSION_IDS)}"
        self.guest = Guest(self.cmd, qmp_path, verbose)

    def _remove_files(self):
        if os.path.exists(self.script):
            os.unlink(self.script)
        for f in os.listdir(self.tmp):
            os.unlink(os.path.join(self.tmp, f))
        os.rmdir(self.tmp)

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
                diagnosis = guest.diagnose(f"guest did not finish within {timeout} s")
                guest.kill()
                console = guest.console()
                path = diag.write_log(f"{stamp}-timeout.log", command, cmd, console,
                                      diagnosis + "\n-- all registers (QEMU info registers -a)\n"
                                      + guest.regs)
                raise AccioError(f"guest did not finish within {timeout} s (log: {path})\n"
                                 f"{diagnosis}\nconsole tail:\n" + console[-6000:])
            guest.reader.join(10)
        finally:
            guest.kill()
            self._remove_files()
        wall = time.monotonic() - self.t0
        console = guest.console()
        diag.write_log(log_name, command, cmd, console)
        start = console.find(BEGIN)
        m = END_RE.search(console, start if start >= 0 else 0)
        if os.environ.get("ACCIO_KEEP_LOGS") and m:
            diag.write_log(f"{stamp}-rc{m.group(1)}.log", command, cmd, console)
        if start < 0 or not m:
            path = diag.write_log(f"{stamp}-noresult.log", command, cmd, console)
            raise AccioError(f"QEMU exited ({guest.proc.returncode}) without a result "
                             f"(log: {path}); console tail:\n" + console[-3000:])
        output = console[start + len(BEGIN) + 1:m.start()]
        return Result(int(m.group(1)), output, console, wall)


def run(command, *, machine=None, timeout=600, verbose=False, add=(), pkgs=(), **fields):
    """Boot the SoC, run a shell command in the guest, return a Result.

    machine, or its fields as keywords: the SoC (config.Machine: smp, mem,
    icount, wire, fwd_udp, pcap, seed, timing, cmdline_extra, qemu_extra,
    ...). add: (host path, guest path) pairs: files and folders put into
    the guest (modes and symlinks kept). pkgs: extra Debian riscv64
    packages for this run (with their dependencies).
    The whole console is kept in the log directory (diag.log_dir()); on a
    timeout the diagnostics (Guest.diagnose) are added to it and to the
    error."""
    return Session(command, machine=machine, verbose=verbose, add=add, pkgs=pkgs,
                   **fields).finish(timeout)


def boot(machine=None, **fields):
    """The SoC with its console on this terminal; QEMU's exit status."""
    return subprocess.call(qemu.command_line(Machine.of(machine, **fields), interactive=True))
