#!/usr/bin/env python3
"""Linux on the Rocket RTL SoC (soc-sim1): boot once, restore many.

  soc_linux.py boot            cold boot: OpenSBI, the kernel of make linux
                               and a small initramfs (busybox) on soc-sim1;
                               when the shell is up, the whole simulation is
                               saved under $ACCIO_CACHE/soc/linux-KEY/
  soc_linux.py run -- CMD      restore that snapshot, type CMD at the shell,
                               print its output, exit with its status

KEY hashes every input of the boot (the simulator, the firmware, the
kernel, the devicetree, the initramfs), so a changed input boots anew. The
kernel is the one QEMU runs; its command line skips what takes tens of
millions of cycles here: the jitter entropy source's start-up test
(`jent_mod_init`: thousands of time reads, each a trap to the firmware on
Rocket, which has no time CSR) and the 256 legacy BSD ptys
(`pty.legacy_count=0`; 53 million cycles of device registration).
"""
import hashlib
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402  (the cpio writer)

CACHE = os.path.join(os.environ.get("ACCIO_CACHE", os.path.expanduser("~/.cache/accio")), "soc")
SIM = os.path.join(ROOT, "build", "soc", "soc-sim1")
IMAGE = os.path.join(ROOT, "build", "Image")
BUSYBOX = os.path.join(ROOT, "build", "busybox")
FIRMWARE = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.bin"
FW_AT, KERNEL_AT, DTB_AT, INITRD_AT = 0x80000000, 0x80200000, 0x82200000, 0x83000000
BOOTARGS = "earlycon console=ttyS0 initcall_blacklist=jent_mod_init pty.legacy_count=0"
READY = "accio-soc: ready"
# the status line, written so that the shell's echo of the command is not it
STATUS, END = "accio-soc: status=", "accio-soc: end"
STATUS_CMD = r"printf '\141ccio-soc: status=%d\n\141ccio-soc: end\n' $?"
INIT = b"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /tmp
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
echo "accio-soc: ready"
exec sh
"""


class SocLinuxError(Exception):
    pass


def initramfs():
    if not os.path.exists(BUSYBOX):
        raise SocLinuxError(f"{BUSYBOX} missing: run make build")
    with open(BUSYBOX, "rb") as f:
        bb = f.read()
    return accio.newc_archive({}, [("init", 0o100755, INIT), ("bin/busybox", 0o100755, bb)])


def devicetree(initrd_len):
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        dts, dtb = os.path.join(d, "soc1.dts"), os.path.join(d, "soc1.dtb")
        subprocess.run([sys.executable, os.path.join(HERE, "gen_dts.py"), "1", dts, "--bootargs",
                        BOOTARGS, "--initrd", hex(INITRD_AT), hex(INITRD_AT + initrd_len)],
                       check=True)
        subprocess.run(["dtc", "-I", "dts", "-O", "dtb", "-o", dtb, dts], check=True)
        with open(dtb, "rb") as f:
            return f.read()


def inputs():
    """The boot's files (name, bytes) and the snapshot folder they key."""
    for path, what in ((SIM, "make soc"), (IMAGE, "make linux"), (FIRMWARE, "the opensbi package")):
        if not os.path.exists(path):
            raise SocLinuxError(f"{path} missing: {what}")
    rd = initramfs()
    files = {"initrd.cpio": rd, "soc1.dtb": devicetree(len(rd))}
    h = hashlib.sha256()
    for path in (SIM, IMAGE, FIRMWARE):
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    for name in sorted(files):
        h.update(name.encode() + hashlib.sha256(files[name]).digest())
    return files, os.path.join(CACHE, "linux-" + h.hexdigest()[:16])


def boot(max_cycles=4_000_000_000, log=sys.stdout):
    """Cold boot to the shell and save it; returns the snapshot's path."""
    files, d = inputs()
    snap = os.path.join(d, "snap")
    if os.path.exists(snap):
        return snap
    os.makedirs(d, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    t0 = time.time()
    cmd = [SIM, "--max-cycles", str(max_cycles), "--save-on", READY, snap + ".tmp",
           "--load", f"{os.path.join(d, 'soc1.dtb')}@{DTB_AT:#x}",
           "--load", f"{IMAGE}@{KERNEL_AT:#x}",
           "--load", f"{os.path.join(d, 'initrd.cpio')}@{INITRD_AT:#x}",
           "--load", f"{FIRMWARE}@{FW_AT:#x}"]
    with open(os.path.join(d, "boot.log"), "w") as out:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, errors="replace")
        for line in p.stdout:
            out.write(line)
            out.flush()
            log.write(line)
        rc = p.wait()
    # the harness says saved=CYCLE right after the console's last character
    saved = re.findall(r"saved=(\d+)", open(os.path.join(d, "boot.log")).read())
    if rc != 0 or not saved or not os.path.exists(snap + ".tmp"):
        raise SocLinuxError(f"the boot did not reach the shell (status {rc}); see {d}/boot.log")
    os.rename(snap + ".tmp", snap)
    with open(os.path.join(d, "boot.json"), "w") as f:
        f.write('{"cycles": %d, "wall_s": %.1f}\n' % (int(saved[0]), time.time() - t0))
    return snap


def run(command, max_cycles=None):
    """Restore the booted SoC, type `command` (it may take max_cycles);
    returns (status, output, cycles from the cold start)."""
    _, d = inputs()
    snap = os.path.join(d, "snap")
    if not os.path.exists(snap):
        raise SocLinuxError("no booted SoC to restore: run make soc-linux first")
    if "\n" in command:
        raise SocLinuxError("one command line, please")
    # the harness turns backslash-n into a newline and two backslashes into one
    text = f"{command}; {STATUS_CMD}".replace("\\", "\\\\") + "\\n"
    # cycles count from the cold start: a command gets max_cycles after it
    with open(os.path.join(d, "boot.json")) as f:
        booted = int(re.search(r'"cycles": (\d+)', f.read()).group(1))
    cmd = [SIM, "--restore", snap, "--input", text, "--stop-on", END,
           "--max-cycles", str(booted + (max_cycles or 2_000_000_000))]
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    out = r.stdout
    at = out.rfind(STATUS)
    if r.returncode != 0 or at < 0:
        raise SocLinuxError(f"the command did not finish (simulator status {r.returncode}):\n"
                            + out[-2000:] + r.stderr[-2000:])
    status = int(out[at + len(STATUS):].split()[0])
    body = out[:at].replace("\r\n", "\n")
    # what the shell printed before and echoed of the typed line come first
    echo = body.find("\\141ccio-soc: end")
    body = body[body.find("\n", echo) + 1:] if echo >= 0 else body
    cycles = int(next(ln.split("=")[1] for ln in out.splitlines() if ln.startswith("stopped=")))
    return status, body, cycles


def main(argv):
    if argv[:1] == ["boot"]:
        try:
            print(f"[soc-linux] snapshot {boot()}")
            return 0
        except SocLinuxError as e:
            print(f"soc-linux: {e}", file=sys.stderr)
            return 1
    if argv[:1] == ["run"]:
        rest = argv[1:]
        if rest[:1] == ["--"]:
            rest = rest[1:]
        if not rest:
            print("usage: soc_linux.py run -- COMMAND", file=sys.stderr)
            return 2
        try:
            status, out, cycles = run(" ".join(rest))
        except SocLinuxError as e:
            print(f"soc-run: {e}", file=sys.stderr)
            return 125
        sys.stdout.write(out)
        print(f"[soc-run] status {status}, {cycles} cycles from the cold start", file=sys.stderr)
        return status
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
