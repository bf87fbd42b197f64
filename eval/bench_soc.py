#!/usr/bin/env python3
"""The Rocket SoC (make soc) against the QEMU model: calibration and speed.

usage: python3 eval/bench_soc.py [--json FILE] [--no-boot]

1. Calibration: hardware/soc/sw/calib.c runs the same paths on the RTL SoC
   (build/soc/soc-sim1: a Rocket core and the uncore RTL; figures in core
   cycles) and on QEMU's virt machine with the uncore's C model (built with
   -DSOC_QEMU, icount shift 0: one instruction per ns, so the model's device
   delays in ns read as cycles of a 1 GHz core with one instruction per
   cycle). Each runs with the wire's echo 200 and 1200 cycles (ns) late; the
   transmit paths are given without the wire (the difference of the two runs
   must be the 1000 added).
2. Simulation speed: hardware/soc/sw/spin.c (the same checksum loop on every
   hart) on the 1- and 4-hart models: simulated cycles per wall second, and
   the core's IPC on it.
3. A Linux boot on the RTL SoC, extrapolated: the instructions the QEMU SoC
   retires from reset to the first shell command (icount), divided by the
   measured IPC and simulation speed.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOC = os.path.join(ROOT, "build", "soc")
SW = os.path.join(ROOT, "hardware", "soc", "sw")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402

PATHS = [
    ("load_uncore", "uncached load of an uncore register (round trip)"),
    ("store_uncore", "uncached store to an uncore register (as the core sees it)"),
    ("rq_pop", "ready-queue pop (an uncached load)"),
    ("doorbell_tx_rx", "doorbell store to the echoed 64-byte datagram's record in the RX ring, "
                       "without the wire"),
    ("window_tx_rx", "MMIO-window message to its echo's record, without the wire"),
    ("irq_after_record", "wake-up interrupt's handler running, after the record is visible"),
]


def kv(text):
    return {k: int(v) for k, v in re.findall(r"^(\w+)=(\d+)$", text, re.M)}


def build_qemu_calib():
    out = os.path.join(SOC, "sw", "calib-qemu.elf")
    cc = ["riscv64-linux-gnu-gcc", "-march=rv64imac_zicsr_zifencei", "-mabi=lp64",
          "-mcmodel=medany", "-DSOC_QEMU", "-fno-pie", "-no-pie", "-Wl,--build-id=none",
          "-ffreestanding", "-nostdlib", "-nostartfiles", "-static", "-O2", f"-I{SW}",
          f"-I{os.path.join(ROOT, 'hardware', 'generated')}", "-T", os.path.join(SW, "link.ld"),
          "-o", out, os.path.join(SW, "crt0.S"), os.path.join(SW, "calib.c")]
    subprocess.run(cc, check=True)
    return out


def rtl_calib(delay):
    r = subprocess.run([os.path.join(SOC, "soc-sim1"), "--wire-delay", str(delay),
                        os.path.join(SOC, "sw", "calib.elf")],
                       capture_output=True, text=True, timeout=600)
    if r.returncode:
        sys.exit(f"bench_soc: calib on the RTL SoC failed:\n{r.stdout}{r.stderr}")
    return kv(r.stdout)


def model_calib(elf, delay):
    a = accio.artefacts()
    cmd = [a["qemu"], "-M", "virt", "-smp", "1", "-m", "256M", "-bios", "none",
           "-kernel", elf, "-display", "none", "-serial", "stdio", "-monitor", "none",
           "-icount", "shift=0,sleep=off", "-no-reboot",
           "-netdev", "hubport,id=wire0,hubid=0",
           "-net", "nic,netdev=wire0,model=accio-nic,macaddr=02:00:00:00:00:02",
           "-global", "accio-nic.wire-peer=echo", "-global", f"accio-nic.peer-delay-ns={delay}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode:
        sys.exit(f"bench_soc: calib on the QEMU model failed ({r.returncode}):\n"
                 f"{r.stdout}{r.stderr}")
    return kv(r.stdout)


def without_wire(runs, short, long):
    a, b = runs[short], runs[long]
    out = {k: a[k] for k in ("load_uncore", "store_uncore", "rq_pop", "irq_after_record")}
    out["doorbell_tx_rx"] = a["doorbell_rx"] - short
    out["window_tx_rx"] = a["window_rx"] - short
    out["wire_slope"] = (b["doorbell_rx"] - a["doorbell_rx"]) / (long - short)
    return out


def speed(harts):
    exe = os.path.join(SOC, f"soc-sim{harts}")
    t = time.monotonic()
    r = subprocess.run([exe, os.path.join(SOC, "sw", "spin.elf")], capture_output=True,
                       text=True, timeout=1200)
    wall = time.monotonic() - t
    d = kv(r.stdout)
    if r.returncode or "cycles" not in d:
        sys.exit(f"bench_soc: spin on {harts} hart(s) failed:\n{r.stdout}{r.stderr}")
    return {"harts": harts, "cycles": d["cycles"], "wall_s": round(wall, 2),
            "cycles_per_s": round(d["cycles"] / wall),
            "ipc": round(d["work_instret"] / d["work_cycles"], 3)}


def boot_instructions():
    # shift 4: 16 ns of virtual time per instruction, all harts together
    r = accio.run("cat /proc/uptime", icount=4, timeout=600)
    up = float(r.output.split()[0])
    return int(up * 1e9 / 16)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", default=os.path.join(ROOT, "eval", "results", "soc.json"))
    ap.add_argument("--no-boot", action="store_true", help="skip the boot extrapolation")
    a = ap.parse_args()
    for n in ("soc-sim1", "soc-sim4", "sw/calib.elf", "sw/spin.elf"):
        if not os.path.exists(os.path.join(SOC, n)):
            sys.exit(f"bench_soc: build/soc/{n} missing: run make soc")
    qelf = build_qemu_calib()
    short, long = 200, 1200
    rtl = without_wire({d: rtl_calib(d) for d in (short, long)}, short, long)
    model = without_wire({d: model_calib(qelf, d) for d in (short, long)}, short, long)
    rows = []
    for key, what in PATHS:
        r, m = rtl[key], model[key]
        rows.append({"path": key, "what": what, "rtl_cycles": r, "model_ns": m,
                     "model_over_rtl": round(m / r, 2) if r else None})
    res = {"calibration": rows, "wire_slope": {"rtl": rtl["wire_slope"],
                                               "model": model["wire_slope"]},
           "speed": [speed(1), speed(4)]}
    if not a.no_boot:
        instr = boot_instructions()
        ipc = res["speed"][0]["ipc"]
        cps = res["speed"][0]["cycles_per_s"]
        res["linux_boot"] = {"qemu_instructions_to_shell": instr, "ipc": ipc,
                             "rtl_cycles_per_s": cps,
                             "hours_on_rtl": round(instr / ipc / cps / 3600, 1)}
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
    print("| path | RTL (core cycles) | model (ns at 1 GIPS) | model / RTL |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['what']} | {r['rtl_cycles']} | {r['model_ns']} | {r['model_over_rtl']} |")
    print(f"\nwire slope (should be 1): RTL {rtl['wire_slope']:.3f}, model {model['wire_slope']:.3f}")
    for s in res["speed"]:
        print(f"{s['harts']} hart(s): {s['cycles_per_s']:,} cycles/s ({s['cycles']:,} cycles in "
              f"{s['wall_s']} s), IPC {s['ipc']}")
    if "linux_boot" in res:
        b = res["linux_boot"]
        print(f"Linux boot to the first shell command: {b['qemu_instructions_to_shell']:,} "
              f"instructions; at IPC {b['ipc']} and {b['rtl_cycles_per_s']:,} cycles/s: "
              f"about {b['hours_on_rtl']} hours on the RTL SoC")


if __name__ == "__main__":
    main()
