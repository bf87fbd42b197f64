"""What is kept of a run and what explains a guest that hung: the console
logs, the kernel's symbols, and the diagnostics the host collects over QMP
and the serial console."""
import importlib.util
import os
import re
import shlex
import time

from . import config
from .qmp import QMP


def _regs():
    """The register map's generated Python constants
    (hardware/generated/accio_regs.py)."""
    path = os.path.join(config.ROOT, "hardware", "generated", "accio_regs.py")
    spec = importlib.util.spec_from_file_location("accio_regs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def nic_counters(qmp):
    """The NIC's registers from RX_FRAMES on (its statistics, then its
    timing: 64-bit registers side by side), read in one go over QMP from
    the stopped machine: 'name=value' for each one that is not 0. Reading
    them has no side effect."""
    regs = _regs()
    first = regs.NIC["RX_FRAMES"][0]
    names = {off: name for name, (off, _) in regs.NIC.items() if off >= first}
    if sorted(names) != list(range(first, first + 8 * len(names), 8)):
        raise ValueError("the NIC's registers from RX_FRAMES on are not side by side")
    text = qmp.hmp(f"xp /{len(names)}gx {regs.NIC_BASE + first:#x}")
    values = [int(v, 16) for v in re.findall(r"\b0x([0-9a-fA-F]+)", text)]
    if len(values) != len(names):
        raise ValueError(f"xp gave {len(values)} values for {len(names)} registers")
    out = [f"{names[off].lower()}={v}" for off, v in zip(sorted(names), values) if v]
    return " ".join(out) or "all 0"


def load_symbols(path=None):
    """Sorted (address, name) text symbols of the kernel's System.map."""
    path = path or os.path.join(config.BUILD, "System.map")
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
    d = os.environ.get("ACCIO_LOG_DIR") or os.path.join(config.BUILD, "logs")
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


def diagnose(guest, reason):
    """Collect what explains a guest that stopped making progress: each
    hart's pc and last trap (named from System.map), the Accio uncore's
    state and QEMU's network over QMP, then the guest's accio-diag, then
    sysrq w/l/t through a serial BREAK. guest: a machine.Guest (its
    qmp_path, console(), type(), wait_console()). Returns (the text,
    QEMU's 'info registers -a', or None if QMP did not give them)."""
    parts = [f"reason: {reason}"]
    regs = None
    qmp = None
    try:
        qmp = QMP(guest.qmp_path)
        st = qmp.cmd("query-status")
        parts.append(f"qemu status: {st.get('status')}")
        # Stop the harts so that their pcs are exact, read them, go on.
        qmp.cmd("stop")
        all_regs = qmp.hmp("info registers -a")
        try:
            nic = nic_counters(qmp)
        except (OSError, ValueError, KeyError) as e:
            nic = f"not read: {e}"
        qmp.cmd("cont")
        parts.append("-- harts (QEMU)\n" + harts_summary(all_regs, load_symbols()))
        regs = all_regs
        path = qmp.find("accio-uncore")
        if path:
            parts.append("-- Accio uncore (QEMU)\n"
                         + qmp.cmd("qom-get", path=path, property="state").rstrip())
        parts.append("-- NIC statistics and timing registers (QEMU)\n" + nic)
        parts.append("-- network (QEMU)\n" + qmp.hmp("info network").rstrip())
    except (OSError, ValueError) as e:
        parts.append(f"QMP: {e}")
    # User space first: accio-diag, answered by the guest's init.
    mark = len(guest.console())
    guest.type(b"\n@@ACCIO-DIAG@@\n")
    if not guest.wait_console("@@ACCIO-DIAG-END@@", mark, 15):
        parts.append("guest: accio-diag did not answer within 15 s")
    # Then the kernel: serial BREAK + sysrq key, which needs no user space.
    if qmp:
        for key in (b"8", b"w", b"l", b"t"):
            try:
                qmp.cmd("chardev-send-break", id="con0")
                time.sleep(0.2)
                guest.type(key)
                time.sleep(1.5)
            except OSError as e:
                parts.append(f"sysrq {key.decode()}: {e}")
                break
        time.sleep(2)
        qmp.close()
    return "\n".join(parts), regs
