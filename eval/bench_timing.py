#!/usr/bin/env python3
"""The Rocket timing mode (hardware/timing) against the RTL SoC, and what it
changes.

usage: python3 eval/bench_timing.py [--json FILE] [--dram 20,30,60,100]
                                    [--no-pingpong]

1. Calibration: hardware/soc/sw/timing.c (pointer chases in and beyond L1,
   a copy, uncached loads, a trap round trip, multiplies, divides, a
   data-dependent branch) on the RTL SoC (build/soc/soc-sim1 with the
   harness's DRAM --dram-latency N cycles late) and on QEMU's virt machine
   (bare metal, -icount shift 4) in the timing mode with dram=N: cycles per
   operation on both, and the error (also uncached stores and a software
   interrupt's round trip). The same program in plain icount
   (every instruction one cycle) is the third column.
2. The ping-pong on Linux: udp_pingpong 64 B, Linux sockets and Accio
   (blocking), processing time p50 from the NIC's stamps, in plain icount
   and in the timing mode at each DRAM latency, with the Accio/Linux ratio.
3. Speed: the wall time of a Linux boot and those ping-pongs with and
   without the timing mode.
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

SHIFT = 4                  # 16 ns per instruction, as in the evaluation
CYCLE_NS = 1 << SHIFT
BENCHES = [
    ("chase_l1", "dependent loads, one per line, 8 KiB (in L1)"),
    ("chase_mem", "dependent loads, one per line, 512 KiB (L1 misses)"),
    ("copy_l1", "8-byte words copied, 4 KiB to 4 KiB in L1"),
    ("load_io", "uncached loads of an uncore register, in a loop"),
    ("store_io", "uncached stores to an uncore register, in a loop"),
    ("irq", "software interrupt: the CLINT store, a handler that clears it, mret"),
    ("trap", "ecall to a machine-mode handler and mret"),
    ("ring_read", "a datagram's record the uncore's DMA wrote into the RX ring, per word"),
    ("mul", "dependent 64-bit multiplies"),
    ("div", "dependent 64-bit divides"),
    ("branch", "a loop with one data-dependent branch (half taken)"),
]


def kv(text):
    return {k: int(v) for k, v in re.findall(r"^(\w+)=(\d+)$", text, re.M)}


def build_timing(qemu=True, defines=()):
    """timing.c for QEMU's virt machine (qemu) or the RTL SoC, with extra
    -D defines (ROUNDS=N, MEM_LINES=N: a shorter run)."""
    name = "timing-" + ("qemu" if qemu else "rtl") + "".join(
        "-" + d.replace("=", "") for d in defines)
    out = os.path.join(SOC, "sw", f"{name}.elf")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cc = ["riscv64-linux-gnu-gcc", "-march=rv64imac_zicsr_zifencei", "-mabi=lp64",
          "-mcmodel=medany", *(["-DSOC_QEMU"] if qemu else []),
          *[f"-D{d}" for d in defines], "-fno-pie", "-no-pie",
          "-Wl,--build-id=none,--no-warn-rwx-segments", "-ffreestanding", "-nostdlib",
          "-nostartfiles", "-static", "-O2", f"-I{SW}",
          f"-I{os.path.join(ROOT, 'hardware', 'generated')}", "-T", os.path.join(SW, "link.ld"),
          "-o", out, os.path.join(SW, "crt0.S"), os.path.join(SW, "timing.c")]
    subprocess.run(cc, check=True)
    return out


def per_op(d):
    return {k: d[k] / d[f"{k}_ops"] for k, _ in BENCHES if k in d and d.get(f"{k}_ops")}


def rtl(dram, elf=None):
    """timing.c on the RTL SoC (make soc's build, or elf): cycles per operation."""
    exe, elf = os.path.join(SOC, "soc-sim1"), elf or os.path.join(SOC, "sw", "timing.elf")
    for p in (exe, elf):
        if not os.path.exists(p):
            raise SystemExit(f"bench_timing: {p} missing: run make soc")
    r = subprocess.run([exe, "--max-cycles", "100000000", "--dram-latency", str(dram), elf],
                       capture_output=True, text=True, timeout=900)
    if r.returncode:
        raise SystemExit(f"bench_timing: timing.elf on the RTL SoC failed:\n{r.stdout}{r.stderr}")
    return per_op(kv(r.stdout))


def qemu(elf, timing):
    """timing.c on QEMU (bare metal, one hart): cycles per operation, in the
    timing mode TIMING ("rocket:dram=N", or "" for plain icount)."""
    a = accio.artefacts()
    cmd = [a["qemu"], "-M", "virt", "-smp", "1", "-m", "256M", "-bios", "none",
           "-kernel", elf, "-display", "none", "-serial", "stdio", "-monitor", "none",
           "-icount", f"shift={SHIFT},sleep=off", "-no-reboot",
           # the NIC's own wire peer echoes the ring_read datagram at once,
           # as the RTL harness's echo does (200 cycles late there)
           "-netdev", "hubport,id=wire0,hubid=0",
           "-net", "nic,netdev=wire0,model=accio-nic,macaddr=02:00:00:00:00:02",
           "-global", "accio-nic.wire-peer=echo",
           "-global", f"accio-nic.peer-delay-ns={200 * CYCLE_NS}"]
    cmd += accio.timing_qemu_args(timing)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise SystemExit(f"bench_timing: timing.elf on QEMU failed ({r.returncode}):\n"
                         f"{r.stdout}{r.stderr}")
    return {k: v / CYCLE_NS for k, v in per_op(kv(r.stdout)).items()}


def calibration(dram, elf, rtl_elf=None):
    r, q, p = rtl(dram, rtl_elf), qemu(elf, f"rocket:dram={dram}"), qemu(elf, "")
    return [{"bench": k, "what": what, "dram": dram, "rtl_cycles": round(r[k], 2),
             "timing_cycles": round(q[k], 2), "icount_cycles": round(p[k], 2),
             "error_pct": round(100 * (q[k] - r[k]) / r[k], 1)} for k, what in BENCHES]


PINGPONG = {"linux": "", "accio": "LD_PRELOAD=/usr/lib/libaccio.so "}


def pingpong_cmd(count=300):
    """Both contenders, one after the other, the client on hart 1: each
    output starts with a line @NAME."""
    return "; ".join(f"echo @{k}; {pre}taskset 0x2 udp_pingpong -q -n {count} -m 64 -p 7"
                     for k, pre in PINGPONG.items())


def pingpong(timing):
    """Linux and Accio (blocking) 64-byte processing p50 in µs, one boot."""
    t = time.monotonic()
    r = accio.run(pingpong_cmd(), icount=SHIFT, wire="echo:20000", timeout=900, timing=timing)
    wall = time.monotonic() - t
    if r.rc:
        raise SystemExit(f"bench_timing: ping-pong ({timing or 'icount'}) failed:\n"
                         f"{r.output[-2000:]}")
    out = {"timing": timing or "icount", "wall_s": round(wall, 1)}
    for part in r.output.split("@")[1:]:
        name = part.split()[0]
        m = re.search(r"^proc_p50_us=([\d.]+)", part, re.M)
        bad = re.search(r"bad=(\d+)", part)
        if not m or not bad or bad.group(1) != "0":
            raise SystemExit(f"bench_timing: {name}: no clean result:\n{part[-1500:]}")
        out[name] = float(m.group(1))
    out["accio_over_linux"] = round(out["accio"] / out["linux"], 4)
    return out


def boot_wall(timing, runs=3):
    """Seconds of wall time a boot to the first command takes (the best of
    RUNS), in the timing mode TIMING or plain icount ("")."""
    best = None
    for _ in range(runs):
        t = time.monotonic()
        r = accio.run("true", icount=SHIFT, wire="none", timeout=600, timing=timing)
        w = time.monotonic() - t
        if r.rc:
            raise SystemExit(f"bench_timing: boot ({timing or 'icount'}) failed")
        best = w if best is None else min(best, w)
    return round(best, 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", default=os.path.join(ROOT, "eval", "results", "timing-calibration.json"))
    ap.add_argument("--dram", default="20,30,60,100",
                    help="DRAM latencies in core cycles (comma-separated)")
    ap.add_argument("--no-pingpong", action="store_true")
    a = ap.parse_args()
    drams = [int(x) for x in a.dram.split(",")]
    elf = build_timing(True)
    res = {"shift": SHIFT, "calibration": [], "pingpong": []}
    for d in drams:
        res["calibration"] += calibration(d, elf)
    md = ["# The Rocket timing mode against the RTL SoC",
          "",
          "Generated by `python3 eval/bench_timing.py`; do not edit by hand. Cycles per "
          "operation of `hardware/soc/sw/timing.c` on the RTL SoC (`soc-sim1 --dram-latency "
          "N`), on QEMU in the timing mode (`dram=N`) and in plain icount (one cycle an "
          "instruction).", "",
          "| benchmark | what | DRAM (cycles) | RTL SoC | timing mode | error | plain icount |",
          "|---|---|---:|---:|---:|---:|---:|"]
    for c in res["calibration"]:
        md.append(f"| {c['bench']} | {c['what']} | {c['dram']} | {c['rtl_cycles']:.2f} | "
                  f"{c['timing_cycles']:.2f} | {c['error_pct']:+.1f} % | "
                  f"{c['icount_cycles']:.2f} |")
    if not a.no_pingpong:
        res["pingpong"].append(pingpong(""))
        for d in drams:
            res["pingpong"].append(pingpong(f"rocket:dram={d}"))
        res["boot_wall_s"] = {"icount": boot_wall(""),
                              f"rocket:dram={drams[0]}": boot_wall(f"rocket:dram={drams[0]}")}
        b = res["boot_wall_s"]
        md += ["", "Speed: a Linux boot to its first command takes "
               + " and ".join(f"{v:.1f} s ({k})" for k, v in b.items())
               + f" of wall time (best of three): the timing mode is "
               f"{list(b.values())[1] / list(b.values())[0]:.1f}x slower. The ping-pong runs' "
               "wall times are below."]
        md += ["", "Linux sockets and Accio (blocking), 64-byte ping-pong, 300 round trips, "
               "client on hart 1, processing time p50 from the NIC's stamps; wall: the whole "
               "run (boot, both clients).", "",
               "| time model | Linux p50 (µs) | Accio p50 (µs) | Accio / Linux | wall (s) |",
               "|---|---:|---:|---:|---:|"]
        for p in res["pingpong"]:
            md.append(f"| {p['timing']} | {p['linux']:.1f} | {p['accio']:.1f} | "
                      f"1/{1 / p['accio_over_linux']:.1f} | {p['wall_s']:.1f} |")
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.splitext(a.json)[0] + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    print(f"\nwritten: {a.json}")


if __name__ == "__main__":
    main()
