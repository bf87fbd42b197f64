#!/usr/bin/env python3
"""Linux on the Rocket RTL SoC: boot to the snapshot, restore, one command.

usage: python3 eval/bench_soc_linux.py [--json FILE] [--boot] [--runs N]

Reads the cold boot's figures from the snapshot folder that
hardware/soc/soc_linux.py (make soc-linux) wrote for the current inputs -
simulated cycles from reset to the shell, wall time, hence simulated cycles
per second - or, with --boot, boots first (hours). Then restores the
snapshot N times (default 3) and types `true` at its shell: wall time of a
restore plus one command, and the command's cycles. Writes
eval/results/soc_linux.json.
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "hardware", "soc"))
import soc_linux  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", default=os.path.join(ROOT, "eval", "results", "soc_linux.json"))
    ap.add_argument("--boot", action="store_true", help="boot first if no snapshot is cached")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    _, d = soc_linux.inputs()
    if not os.path.exists(os.path.join(d, "snap")):
        if not a.boot:
            sys.exit(f"bench_soc_linux: no snapshot in {d}: make soc-linux (or --boot)")
        soc_linux.boot(log=open(os.devnull, "w"))
    with open(os.path.join(d, "boot.json")) as f:
        boot = json.load(f)
    runs = []
    for _ in range(a.runs):
        t0 = time.time()
        status, out, cycles = soc_linux.run("true")
        runs.append({"wall_s": round(time.time() - t0, 2), "status": status,
                     "cycles_after_boot": cycles - boot["cycles"]})
    res = {"snapshot": os.path.basename(d), "boot_cycles": boot["cycles"],
           "boot_wall_s": boot["wall_s"],
           "sim_cycles_per_s": round(boot["cycles"] / boot["wall_s"]),
           "snapshot_bytes": os.path.getsize(os.path.join(d, "snap")),
           "restore_and_true": runs}
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
