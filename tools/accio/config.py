"""Where things are, the settings every run shares, and one SoC's
configuration (Machine).

The upper-case names are settings of the whole process: most come from the
environment, and a caller may change them between runs (accio.RR_TIMESLICE
= 250 reaches this module, see accio/__init__.py). Every other module reads
them here, as config.NAME, at the time it builds a command line.
"""
import os
from dataclasses import dataclass, replace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
# IPIs (a store, no firmware call); "sbi" leaves the machine without it,
# and every IPI goes through the SBI firmware.
IPI = os.environ.get("ACCIO_IPI", "sswi")
if IPI not in ("sswi", "sbi"):
    raise SystemExit(f"ACCIO_IPI={IPI}: sswi or sbi")
MACHINE = "virt,aclint=on" if IPI == "sswi" else "virt"
# The harts' MMU: Sv39 alone, the mode of the Rocket core of the RTL SoC
# (hardware/soc) and of most RISC-V boards. QEMU's rv64 also offers Sv57,
# which Linux 6.1 then uses: its mmap() hands out addresses above 2^47,
# and programs that keep tags in a pointer's upper bits (V8, so node)
# crash on them.
CPU = "rv64,sv48=off,sv57=off"
# The time of an instruction: "" (every instruction one cycle, memory free)
# or "rocket[:ARGS]", the Rocket timing mode: a TCG plugin
# (hardware/timing/rocket_timing.c) makes each hart wait what a Rocket core
# waits for its caches, memory, branches, multiplies and traps; ARGS are
# the plugin's (dram=CYCLES,...). Needs --icount. accio --timing sets it.
TIMING = os.environ.get("ACCIO_TIMING", "")
TIMING_IO_LOAD_CYCLES = 12


class AccioError(Exception):
    pass


def cache_dir():
    """~/.cache/accio, or ACCIO_CACHE."""
    return os.environ.get("ACCIO_CACHE", os.path.expanduser("~/.cache/accio"))


def artefacts():
    """The paths of what the build made and a boot needs: qemu, kernel,
    initrd, bios. Raises AccioError when one is missing."""
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


@dataclass(frozen=True)
class Machine:
    """One SoC as QEMU starts it (qemu.command_line()).

    smp: harts. mem: guest memory (QEMU's -m). icount: SHIFT for
    deterministic virtual time (2^SHIFT ns an instruction), None for real
    time. wire: the NIC's far end (user, socket:PORT, dgram:LOCAL:REMOTE,
    echo[:NS], lockstep:ROLE:NS:PATH, none). initrd: None for the image's
    initramfs. cmdline_extra: more kernel arguments (accio.ip=, accio.gw=).
    fwd_udp: (host port, guest port) pairs on the user wire. mac: the NIC's
    address. pcap: a file for the NIC's wire in virtual time. seed: the
    guest's randomness under icount (None: SEED). timing: the Rocket timing
    mode ("rocket:dram=N,...", "" for plain icount; None: TIMING, the
    process's). qemu_extra: more QEMU arguments, last on its command line;
    a timing plugin among them replaces the timing mode's."""
    smp: int = 4
    mem: str = "1G"
    icount: int | None = None
    wire: str = "user"
    initrd: str | None = None
    cmdline_extra: str = ""
    fwd_udp: tuple = ()
    mac: str = GUEST_MAC
    pcap: str | None = None
    seed: int | None = None
    timing: str | None = None
    qemu_extra: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "fwd_udp", tuple(tuple(x) for x in self.fwd_udp))
        object.__setattr__(self, "qemu_extra", tuple(self.qemu_extra))

    @classmethod
    def of(cls, machine=None, **fields):
        """machine (default Machine()) with the given fields changed."""
        return replace(machine or cls(), **fields)
