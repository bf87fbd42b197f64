#!/usr/bin/env python3
"""Linux on the Rocket RTL SoC: boot to the snapshot, restore, one command.

usage: python3 eval/bench_soc_linux.py [--json FILE] [--boot] [--runs N]
                                       [--count N] [--dram N] [--no-qemu]

1. The boot: reads the cold boot's figures from the snapshot folder that
   hardware/soc/soc_linux.py (make soc-linux) wrote for the current inputs -
   simulated cycles from reset to the shell, wall time, hence simulated
   cycles per second - or, with --boot, boots first. Then restores the
   snapshot N times (--runs, default 3) and types `true` at its shell: wall
   time of a restore plus one command, and the command's cycles.
2. The ping-pong, cycle by cycle: one restore (memory latency --dram
   cycles, default 30) runs udp_pingpong against the harness's echo peer,
   64 and 1024 bytes, --count measured round trips (default 200, after 20
   warm-up ones), on Linux sockets, Accio blocking (LD_PRELOAD=libaccio.so)
   and Accio spinning (ACCIO_SPIN_US=100000); processing time (the
   program's round trip minus the NIC stamps') in core cycles at the SoC's
   1 GHz. Every reply is checked byte for byte (bad=0).
3. The same command on QEMU (one hart, the NIC model's echo peer answering
   after the same 200 cycles), in plain icount (one instruction a cycle)
   and in the Rocket timing mode at the same memory latency
   (rocket:dram=N): cycles there are 16 ns each. --no-qemu skips it.

Writes eval/results/soc_linux.json, eval/results/soc_linux.md (the table
eval/README.md and eval/REPORT.md show) and the SoC's console of the
ping-pongs, eval/results/soc_linux.log.
"""
import argparse
import concurrent.futures
import json
import os
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "hardware", "soc"))
import soc_linux  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402

SIZES = (64, 1024)
MODES = {"linux": "", "accio": "LD_PRELOAD=/usr/lib/libaccio.so ",
         "accio-spin": "LD_PRELOAD=/usr/lib/libaccio.so ACCIO_SPIN_US=100000 "}
SOC_MHZ = 1000           # the harness's clock: a cycle is 1 ns
QEMU_CYCLE_NS = 16       # icount shift 4, as in the evaluation
PEER_CYCLES = 200        # the harness's echo peer answers after 200 cycles


def pingpong_cmd(count, peer="10.0.2.2"):
    return "; ".join(f"echo @@{m}:{size}@@; {pre}udp_pingpong -q -s {peer} -p 7 -m {size} "
                     f"-n {count} -w 20" for size in SIZES for m, pre in MODES.items())


def parse(out, cycle_ns):
    """{mode:size: figures} of pingpong_cmd's output; times in cycles."""
    res = {}
    for part in out.split("@@")[1::2]:
        body = out.split(f"@@{part}@@", 1)[1].split("@@", 1)[0]
        kv = dict(re.findall(r"(?:^|\s)(\w+)=(\S+)", body))
        if kv.get("bad") != "0" or "proc_p50_us" not in kv:
            raise SystemExit(f"bench_soc_linux: {part}: no clean result:\n{body[-1500:]}")
        cyc = lambda k: round(float(kv[k]) * 1000 / cycle_ns)  # noqa: E731
        res[part] = {"proc_p50_cycles": cyc("proc_p50_us"), "proc_p99_cycles": cyc("proc_p99_us"),
                     "rtt_p50_cycles": cyc("rtt_p50_us"), "rtt_hw_cycles": cyc("rtt_hw_avg_us"),
                     "datagrams": int(kv["datagrams"]), "hw_samples": int(kv["hw_samples"])}
    return res


def qemu(count, timing):
    t = time.time()
    r = accio.run(pingpong_cmd(count), smp=1, icount=4, wire=f"echo:{PEER_CYCLES * QEMU_CYCLE_NS}",
                  timeout=1800, timing=timing)
    if r.rc:
        raise SystemExit(f"bench_soc_linux: QEMU ({timing or 'icount'}) failed:\n{r.output[-2000:]}")
    return {"timing": timing or "icount", "wall_s": round(time.time() - t, 1),
            "results": parse(r.output, QEMU_CYCLE_NS)}


def table(res):
    """The markdown table of eval/README.md and eval/REPORT.md."""
    soc = res["pingpong"]["results"]
    q = {x["timing"]: x["results"] for x in res.get("qemu", [])}
    tm = next((k for k in q if k != "icount"), None)
    head = ["contender", "size (B)", "RTL SoC p50 / p99 (cycles)", "vs Linux (RTL)"]
    if "icount" in q:
        head += ["QEMU icount p50 (cycles)", "RTL / icount"]
    if tm:
        head += [f"QEMU {tm} p50 (cycles)", "RTL / timing"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size in SIZES:
        for m in MODES:
            k = f"{m}:{size}"
            r, lin = soc[k], soc[f"linux:{size}"]
            row = [m, str(size), f"{r['proc_p50_cycles']:,} / {r['proc_p99_cycles']:,}",
                   f"1/{lin['proc_p50_cycles'] / r['proc_p50_cycles']:.1f}"]
            for name in (["icount"] if "icount" in q else []) + ([tm] if tm else []):
                v = q[name][k]["proc_p50_cycles"]
                row += [f"{v:,}", f"{r['proc_p50_cycles'] / v:.2f}x"]
            out.append("| " + " | ".join(row) + " |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", default=os.path.join(ROOT, "eval", "results", "soc_linux.json"))
    ap.add_argument("--boot", action="store_true", help="boot first if no snapshot is cached")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--count", type=int, default=200, help="measured round trips per point")
    ap.add_argument("--dram", type=int, default=30, help="memory latency in cycles")
    ap.add_argument("--no-qemu", action="store_true")
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
    # QEMU's runs on the other host core meanwhile
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        qf = None if a.no_qemu else ex.submit(
            lambda: [qemu(a.count, ""), qemu(a.count, f"rocket:dram={a.dram}")])
        t0 = time.time()
        status, out, cycles = soc_linux.run(pingpong_cmd(a.count), dram_latency=a.dram,
                                            max_cycles=1_000_000_000)
        log = os.path.splitext(a.json)[0] + ".log"
        with open(log, "w") as f:
            f.write(out)
        if status:
            raise SystemExit(f"bench_soc_linux: the ping-pong failed on the SoC:\n{out[-2000:]}")
        res["pingpong"] = {"dram_latency": a.dram, "count": a.count, "peer_cycles": PEER_CYCLES,
                           "cycles": cycles - boot["cycles"], "wall_s": round(time.time() - t0, 1),
                           "results": parse(out, 1000 / SOC_MHZ)}
        if qf:
            res["qemu"] = qf.result()
    md = os.path.splitext(a.json)[0] + ".md"
    with open(md, "w") as f:
        f.write(table(res))
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
