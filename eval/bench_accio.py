#!/usr/bin/env python3
"""Accelerated sockets versus Linux sockets: UDP ping-pong round trips and
guest CPU time, one unmodified client (apps/udp_pingpong.c) run both ways.

usage: python3 eval/bench_accio.py [--count N] [--sizes 64,256,512,1024]

For each size the guest runs `udp_pingpong` against the host echo server on
Linux sockets, then with LD_PRELOAD=/usr/lib/libaccio.so, in one boot.
RTT is wall clock in the guest (QEMU TCG, real time); CPU is the busy share
of all 4 harts from /proc/stat over the run. Prints a Markdown table.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--sizes", default="64,256,512,1024")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    with accio.HostEcho() as echo:
        parts = []
        for s in sizes:
            pp = f"udp_pingpong -q -n {a.count} -m {s} -p {echo.port}"
            parts.append(f"echo @@linux {s}@@; {pp}; "
                         f"echo @@accio {s}@@; LD_PRELOAD=/usr/lib/libaccio.so ACCIO_STATS=1 {pp} 2>&1")
        r = accio.run("; ".join(parts), timeout=1800)
    if r.rc != 0:
        sys.exit("benchmark run failed:\n" + r.output[-3000:])
    runs = {}
    for mode, size, body in re.findall(r"@@(\w+) (\d+)@@\n(.*?)(?=@@|\Z)", r.output, re.S):
        runs[(mode, int(size))] = dict(re.findall(r"^(\w+)=(\S+)$", body, re.M))
        if mode == "accio":
            st = re.search(r"rx_ring=(\d+) tx_ring=(\d+).*waits=(\d+)", body)
            runs[(mode, int(size))]["path"] = (f"{st.group(1)}/{st.group(2)} ring, "
                                               f"{st.group(3)} sleeps") if st else "?"
    print(f"{a.count} round trips per cell; guest wall clock; CPU = busy share of 4 harts\n")
    print("| size (B) | Linux RTT p50 / p99 (µs) | Accio RTT p50 / p99 (µs) | Linux CPU % | Accio CPU % | Accio rx/tx via rings |")
    print("|---|---|---|---|---|---|")
    for s in sizes:
        L, A = runs[("linux", s)], runs[("accio", s)]
        print(f"| {s} | {L['rtt_p50_us']} / {L['rtt_p99_us']} | {A['rtt_p50_us']} / {A['rtt_p99_us']} "
              f"| {L['cpu_busy_pct']} | {A['cpu_busy_pct']} | {A.get('path', '?')} |")


if __name__ == "__main__":
    main()
