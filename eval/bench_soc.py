#!/usr/bin/env python3
"""The Rocket SoC (make soc) against the QEMU model: calibration and speed.

usage: python3 eval/bench_soc.py [--json FILE] [--no-boot]

1. Calibration: hardware/soc/sw/calib.c runs the same paths on the RTL SoC
   (build/soc/soc-sim1: a Rocket core and the uncore RTL; figures in core
   cycles) and on QEMU's virt machine with the uncore's C model (built with
   -DSOC_QEMU) at the evaluation's clock: icount shift 4, 16 ns per
   instruction, the harts, the bus, the NIC and the uncore on that one
   clock (the model's timing parameters are in its cycles). Each runs with
   the wire's echo 200 and 1200 cycles late; the transmit paths are given
   without the wire (the difference of the two runs must be the 1000
   added). The model as shipped (its devices' defaults) is measured, and
   its bus width, TX pipeline, TX ring fetch and interrupt delay are fitted
   again to four paths (the bus to the doorbell path's cost per byte, the
   others to the 64-byte paths), and the uncached load's and store's
   cycles to the RTL's (the ready-queue pop, a load too, checks it); the 1024-byte
   MMIO-window path is not used in the fit and checks it. The shipped
   defaults should be the fitted values (a check prints any difference).
2. Simulation speed: hardware/soc/sw/spin.c (the same checksum loop on every
   hart) on the 1-hart model and the 4-hart one (WithAccioUncore): simulated cycles per wall second, and
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
    ("load_uncore", "uncached load of an uncore register (round trip)", False),
    ("store_uncore", "uncached store to an uncore register (as the core sees it)", False),
    ("rq_pop", "ready-queue pop (an uncached load)", False),
    ("doorbell_tx_rx", "doorbell to the echo of a 64-byte datagram in the RX ring", True),
    ("window_tx_rx", "64-byte message in the MMIO window to its echo in the RX ring", True),
    ("doorbell_irq", "doorbell to the wake-up interrupt's handler (64 bytes, row suspended)",
     True),
    ("doorbell_tx_rx_1k", "doorbell to the echo, 1024-byte datagram", True),
    ("window_tx_rx_1k", "MMIO window to the echo, 1024-byte message (not fitted)", False),
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


# The evaluation's clock: icount shift 4, one instruction (one cycle of the
# SoC's one clock) every 16 ns.
SHIFT = 4
CYCLE_NS = 1 << SHIFT
# the model's timing parameters (cycles of the SoC clock; the bus width in
# bits a cycle), with their QEMU device and property
PARAMS = ["accio-nic.bus-width-bits", "accio-nic.pipeline-cycles",
          "accio-uncore.tx-fetch-cycles", "accio-uncore.irq-delay-cycles",
          "accio-uncore.load-cycles", "accio-uncore.store-cycles"]


def shipped():
    """The devices' defaults, from QEMU itself (-device TYPE,help)."""
    out = {}
    for dev in sorted({p.split(".")[0] for p in PARAMS}):
        for prop, val in accio.device_defaults(dev).items():
            if f"{dev}.{prop}" in PARAMS:
                out[f"{dev}.{prop}"] = val
    missing = [p for p in PARAMS if p not in out]
    if missing:
        sys.exit(f"bench_soc: QEMU lists no default for {', '.join(missing)}")
    return out


def model_calib(elf, delay, params):
    """calib.c on the QEMU model at the evaluation's clock; figures in
    cycles (rdcycle reads ns under icount). delay: the echo's, in cycles."""
    a = accio.artefacts()
    # the wake-ups on the PLIC, as the RTL SoC wires them (calib.c takes
    # them as machine external interrupts)
    cmd = [a["qemu"], "-M", "virt,accio-wake-plic=on", "-smp", "1", "-m", "256M",
           "-bios", "none",
           "-kernel", elf, "-display", "none", "-serial", "stdio", "-monitor", "none",
           "-icount", f"shift={SHIFT},sleep=off", "-no-reboot",
           "-netdev", "hubport,id=wire0,hubid=0",
           "-net", "nic,netdev=wire0,model=accio-nic,macaddr=02:00:00:00:00:02",
           "-global", "accio-nic.wire-peer=echo",
           "-global", f"accio-nic.peer-delay-ns={delay * CYCLE_NS}"]
    for k, v in params.items():
        cmd += ["-global", f"{k}={v}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode:
        sys.exit(f"bench_soc: calib on the QEMU model failed ({r.returncode}):\n"
                 f"{r.stdout}{r.stderr}")
    return {k: round(v / CYCLE_NS) for k, v in kv(r.stdout).items()}


def without_wire(runs, short, long):
    a, b = runs[short], runs[long]
    out = {k: a[k] for k in ("load_uncore", "store_uncore", "rq_pop")}
    for k in ("doorbell_rx", "window_rx", "doorbell_rx_1k", "window_rx_1k"):
        out[k.replace("_rx", "_tx_rx")] = a[k] - short
    out["doorbell_irq"] = a["doorbell_irq"] - short
    out["wire_slope"] = (b["doorbell_rx"] - a["doorbell_rx"]) / (long - short)
    return out


def speed(harts):
    exe, sw = (("soc-sim1", "sw") if harts == 1 else (f"soc-sim{harts}-dip", "sw-dip"))
    t = time.monotonic()
    r = subprocess.run([os.path.join(SOC, exe), os.path.join(SOC, sw, "spin.elf")],
                       capture_output=True,
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
    for n in ("soc-sim1", "soc-sim4-dip", "sw/calib.elf", "sw/spin.elf", "sw-dip/spin.elf"):
        if not os.path.exists(os.path.join(SOC, n)):
            sys.exit(f"bench_soc: build/soc/{n} missing: run make soc")
    qelf = build_qemu_calib()
    short, long = 200, 1200
    ship = shipped()
    rtl = without_wire({d: rtl_calib(d) for d in (short, long)}, short, long)
    model = without_wire({d: model_calib(qelf, d, ship) for d in (short, long)}, short, long)
    # fit, in two steps: the bus's width from the cost of 960 more bytes on
    # the doorbell path, then each 64-byte path's missing latency becomes its
    # parameter (the TX pipeline, the TX ring's fetch, the interrupt delay)
    # first the uncached accesses: one of one cycle measures as m0's, the
    # rest is the uncore's
    m0 = without_wire({d: model_calib(qelf, d, dict(ship, **{
        "accio-uncore.load-cycles": 1, "accio-uncore.store-cycles": 1}))
        for d in (short, long)}, short, long)
    access = {"accio-uncore.load-cycles": max(1, rtl["load_uncore"] - m0["load_uncore"] + 1),
              "accio-uncore.store-cycles": max(1, rtl["store_uncore"] - m0["store_uncore"] + 1)}
    step = dict(ship, **access, **{"accio-nic.pipeline-cycles": 0,
                                   "accio-uncore.tx-fetch-cycles": 0,
                                   "accio-uncore.irq-delay-cycles": 0})
    want = rtl["doorbell_tx_rx_1k"] - rtl["doorbell_tx_rx"]
    lo, hi = 1, 512                          # bisection on the bus width
    while hi - lo > 1:
        step["accio-nic.bus-width-bits"] = (lo + hi) // 2
        m1 = without_wire({d: model_calib(qelf, d, step) for d in (short, long)}, short, long)
        if m1["doorbell_tx_rx_1k"] - m1["doorbell_tx_rx"] > want:
            lo = step["accio-nic.bus-width-bits"]
        else:
            hi = step["accio-nic.bus-width-bits"]
    # the closer of the two widths around the RTL's cost per byte
    best = None
    for w in (lo, hi):
        step["accio-nic.bus-width-bits"] = w
        m = without_wire({d: model_calib(qelf, d, step) for d in (short, long)}, short, long)
        err = abs(m["doorbell_tx_rx_1k"] - m["doorbell_tx_rx"] - want)
        if best is None or err < best[0]:
            best = (err, w, m)
    _, width, m1 = best
    step["accio-nic.bus-width-bits"] = width
    pipe = max(0, rtl["window_tx_rx"] - m1["window_tx_rx"])
    fitted = dict(step, **{
        "accio-nic.pipeline-cycles": pipe,
        "accio-uncore.tx-fetch-cycles": max(0, rtl["doorbell_tx_rx"] - m1["doorbell_tx_rx"] - pipe),
        "accio-uncore.irq-delay-cycles": max(0, (rtl["doorbell_irq"] - rtl["doorbell_tx_rx"]) -
                                             (m1["doorbell_irq"] - m1["doorbell_tx_rx"]))})
    cal = without_wire({d: model_calib(qelf, d, fitted) for d in (short, long)}, short, long)
    rows = []
    for key, what, fit in PATHS:
        r, m, c = rtl[key], model[key], cal[key]
        rows.append({"path": key, "what": what, "fitted_on": fit, "rtl_cycles": r,
                     "model_cycles": m, "model_ns": m * CYCLE_NS,
                     "model_over_rtl": round(m / r, 2) if r else None,
                     "calibrated_cycles": c, "calibrated_over_rtl": round(c / r, 2) if r else None})
    res = {"clock": {"icount_shift": SHIFT, "cycle_ns": CYCLE_NS,
                     "mhz": round(1000 / CYCLE_NS, 1)},
           "calibration": rows, "shipped_parameters": ship, "fitted_parameters": fitted,
           "shipped_is_fitted": ship == fitted,
           "wire_slope": {"rtl": rtl["wire_slope"], "model": model["wire_slope"],
                          "calibrated": cal["wire_slope"]},
           "speed": [speed(1), speed(4)]}
    if not a.no_boot:
        instr = boot_instructions()
        # the 1-hart model's speed, and the 4-hart model's with every
        # instruction on one hart's critical path (the harts run in one
        # Verilator thread either way: the cycles are what costs)
        ipc = res["speed"][0]["ipc"]
        res["linux_boot"] = {"qemu_instructions_to_shell": instr, "ipc": ipc,
                             "hours_1_hart": round(instr / ipc / res["speed"][0]["cycles_per_s"]
                                                   / 3600, 1),
                             "hours_4_harts": round(instr / ipc / res["speed"][1]["cycles_per_s"]
                                                    / 3600, 1)}
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
    print(f"one clock: {1000 / CYCLE_NS:.1f} MHz ({CYCLE_NS} ns a cycle) for harts, bus, NIC, uncore")
    print("| path | RTL (cycles) | model as shipped (cycles) | ratio | model fitted | ratio |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['what']} | {r['rtl_cycles']} | {r['model_cycles']} | {r['model_over_rtl']} "
              f"| {r['calibrated_cycles']} | {r['calibrated_over_rtl']} |")
    print("\nfitted: " + " ".join(f"-global {k}={v}" for k, v in fitted.items()))
    if ship != fitted:
        print("the shipped defaults differ from the fit: "
              + ", ".join(f"{k} {ship[k]} (fit {fitted[k]})" for k in PARAMS if ship[k] != fitted[k]))
    print(f"wire slope (should be 1): RTL {rtl['wire_slope']:.3f}, model {model['wire_slope']:.3f}"
          f", fitted {cal['wire_slope']:.3f}")
    for s in res["speed"]:
        print(f"{s['harts']} hart(s): {s['cycles_per_s']:,} cycles/s ({s['cycles']:,} cycles in "
              f"{s['wall_s']} s), IPC {s['ipc']}")
    if "linux_boot" in res:
        b = res["linux_boot"]
        print(f"Linux boot to the first shell command: {b['qemu_instructions_to_shell']:,} "
              f"instructions; at IPC {b['ipc']}: about {b['hours_1_hart']} hours on the "
              f"1-hart model, {b['hours_4_harts']} hours on the 4-hart one")


if __name__ == "__main__":
    main()
