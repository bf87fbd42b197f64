#!/usr/bin/env python3
"""Linux on the Rocket RTL SoC (soc-simN): boot once, restore many.

  soc_linux.py [--harts N] boot
                               cold boot: OpenSBI, the kernel of make linux
                               and the guest image's musl layer (build/rootfs:
                               busybox, libaccio, the apps, the image's own
                               init) on soc-simN (N harts, default 1; make
                               soc builds soc-sim1); when the shell is up, the
                               whole simulation is saved under
                               $ACCIO_CACHE/soc/linux-KEY/
  soc_linux.py [--harts N] run -- CMD
                               restore that snapshot, type CMD at the shell,
                               print its output, exit with its status

KEY hashes every input of the boot (the simulator, the firmware, the
kernel, the devicetree, the initramfs), so a changed input boots anew. The
kernel and the initramfs are the ones QEMU runs (without the image's Debian
layer, which would not fit the SoC's 64 MiB): the init configures eth0
(10.0.2.15/24, gateway 10.0.2.2, answered by the harness's echo peer) and
gives the console a shell. The kernel's command line skips what takes
tens of millions of cycles here: the jitter entropy source's start-up test
(`jent_mod_init`: thousands of time reads, each a trap to the firmware on
Rocket, which has no time CSR) and the 256 legacy BSD ptys
(`pty.legacy_count=0`; 53 million cycles of device registration).
"""
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402  (the cpio writer)

CACHE = os.path.join(os.environ.get("ACCIO_CACHE", os.path.expanduser("~/.cache/accio")), "soc")
IMAGE = os.path.join(ROOT, "build", "Image")
ROOTFS = os.path.join(ROOT, "build", "rootfs")
STRIP = "riscv64-linux-gnu-strip"
FIRMWARE = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.bin"
FW_AT, KERNEL_AT, DTB_AT, INITRD_AT = 0x80000000, 0x80200000, 0x82200000, 0x83000000
BOOTARGS = "earlycon console=ttyS0 initcall_blacklist=jent_mod_init pty.legacy_count=0"
# the last line the image's init prints before the shell
READY = "Exit the shell to power off."
# the status line, written so that the shell's echo of the command is not it
STATUS, END = "accio-soc: status=", "accio-soc: end"
STATUS_CMD = r"printf '\141ccio-soc: status=%d\n\141ccio-soc: end\n' $?"
# The shell's line editing costs about 24,000 cycles a character typed (a
# system call or two each, and its own echo), so only this short line goes
# through it: the command itself is read by the shell's `read` in the
# terminal's canonical mode, without echo.
READER = r"stty -echo; printf '\141ccio-soc: reading\n'; while read -r l; do eval " + '"$l"; done'
READING = "accio-soc: reading\n"


class SocLinuxError(Exception):
    pass


def sim(harts):
    return os.path.join(ROOT, "build", "soc", f"soc-sim{harts}")


def initramfs():
    """build/rootfs as an uncompressed cpio: files (ELF files without their
    debugging sections), symbolic links, folders."""
    if not os.path.exists(os.path.join(ROOTFS, "init")):
        raise SocLinuxError(f"{ROOTFS}/init missing: run make build")
    entries = []
    for top, dirs, files in os.walk(ROOTFS):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(top, name)
            rel = os.path.relpath(path, ROOTFS)
            st = os.lstat(path)
            if os.path.islink(path):
                entries.append((rel, 0o120777, os.readlink(path).encode()))
            elif os.path.isdir(path):
                entries.append((rel, 0o040000 | (st.st_mode & 0o7777), b""))
            else:
                entries.append((rel, 0o100000 | (st.st_mode & 0o7777), stripped(path)))
    return accio.newc_archive({}, entries)


def stripped(path):
    """A file's bytes, an ELF file's without its debugging sections: the
    kernel unpacks the initramfs at a few cycles a byte, and the debugging
    sections are almost half of it."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(b"\x7fELF"):
        return data
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "elf")
        r = subprocess.run([STRIP, "--strip-debug", "-o", out, path], capture_output=True)
        if r.returncode:
            raise SocLinuxError(f"{STRIP} {path}: {r.stderr.decode(errors='replace')}")
        with open(out, "rb") as f:
            return f.read()


def devicetree(initrd_len, harts):
    with tempfile.TemporaryDirectory() as d:
        dts, dtb = os.path.join(d, "soc.dts"), os.path.join(d, "soc.dtb")
        subprocess.run([sys.executable, os.path.join(HERE, "gen_dts.py"), str(harts), dts,
                        "--bootargs",
                        BOOTARGS, "--initrd", hex(INITRD_AT), hex(INITRD_AT + initrd_len)],
                       check=True)
        subprocess.run(["dtc", "-I", "dts", "-O", "dtb", "-o", dtb, dts], check=True)
        with open(dtb, "rb") as f:
            return f.read()


def inputs(harts=1):
    """The boot's files (name, bytes) and the snapshot folder they key."""
    build_sim = "make soc" if harts == 1 else f"scripts/build-soc.sh {harts}"
    for path, what in ((sim(harts), build_sim), (IMAGE, "make linux"),
                       (FIRMWARE, "the opensbi package")):
        if not os.path.exists(path):
            raise SocLinuxError(f"{path} missing: {what}")
    rd = initramfs()
    files = {"initrd.cpio": rd, "soc.dtb": devicetree(len(rd), harts)}
    h = hashlib.sha256()
    for path in (sim(harts), IMAGE, FIRMWARE):
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    for name in sorted(files):
        h.update(name.encode() + hashlib.sha256(files[name]).digest())
    return files, os.path.join(CACHE, "linux-" + h.hexdigest()[:16])


def boot(max_cycles=4_000_000_000, log=sys.stdout, harts=1):
    """Cold boot to the shell and save it; returns the snapshot's path."""
    files, d = inputs(harts)
    snap = os.path.join(d, "snap")
    if os.path.exists(snap):
        return snap
    os.makedirs(d, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    t0 = time.time()
    cmd = [sim(harts), "--max-cycles", str(max_cycles), "--save-on", READY, snap + ".tmp",
           "--load", f"{os.path.join(d, 'soc.dtb')}@{DTB_AT:#x}",
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


def run(command, max_cycles=None, dram_latency=None, harts=1):
    """Restore the booted SoC, type `command` (it may take max_cycles);
    returns (status, output, cycles from the cold start). dram_latency: the
    harness's memory latency in cycles from the restore on (the boot's is
    0: memory answers at once)."""
    _, d = inputs(harts)
    snap = os.path.join(d, "snap")
    if not os.path.exists(snap):
        raise SocLinuxError("no booted SoC to restore: run make soc-linux first"
                            + (f" (soc_linux.py --harts {harts} boot)" if harts > 1 else ""))
    if "\n" in command:
        raise SocLinuxError("one command line, please")
    # the harness turns backslash-n into a newline and two backslashes into one
    text = "\n".join([READER, f"{command}; {STATUS_CMD}", ""]).replace("\\", "\\\\") \
        .replace("\n", "\\n")
    # cycles count from the cold start: a command gets max_cycles after it
    with open(os.path.join(d, "boot.json")) as f:
        booted = int(re.search(r'"cycles": (\d+)', f.read()).group(1))
    cmd = [sim(harts), "--restore", snap, "--input", text, "--stop-on", END,
           "--max-cycles", str(booted + (max_cycles or 2_000_000_000))]
    if dram_latency is not None:
        cmd += ["--dram-latency", str(int(dram_latency))]
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    out = r.stdout
    at = out.rfind(STATUS)
    if r.returncode != 0 or at < 0:
        raise SocLinuxError(f"the command did not finish (simulator status {r.returncode}):\n"
                            + out[-2000:] + r.stderr[-2000:])
    status = int(out[at + len(STATUS):].split()[0])
    body = out[:at].replace("\r\n", "\n")
    # what the shell printed before and echoed of the reader's line come first
    at = body.find(READING)
    body = body[at + len(READING):] if at >= 0 else body
    cycles = int(next(ln.split("=")[1] for ln in out.splitlines() if ln.startswith("stopped=")))
    return status, body, cycles


def main(argv):
    harts = 1
    if argv[:1] == ["--harts"] and len(argv) > 1:
        if not argv[1].isdigit() or not 1 <= int(argv[1]) <= 4:
            print("soc-linux: --harts takes 1 to 4", file=sys.stderr)
            return 2
        harts, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["boot"]:
        try:
            print(f"[soc-linux] snapshot {boot(harts=harts)}")
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
            status, out, cycles = run(" ".join(rest), harts=harts)
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
