#!/usr/bin/env python3
"""CPU use of the client's hart against a slower server (paper section 8.5,
figure 7): a 64 B ping-pong client on Linux sockets, Accio blocking (the
default) and Accio spinning, while the host echo server answers each
datagram (k - 1) x BASE later, BASE being Linux's round trip p50 without
delay (k = 1).

usage: python3 eval/bench_slowdown.py [--factors 1,10,40,200] [--hart 1]
                                      [--seconds S]

Real time (QEMU TCG, no -icount): CPU use is the busy share of the client's
hart from /proc/stat (user + system + irq + softirq over all), the way the
guest's own accounting sees it. The client is pinned to --hart; each run
lasts about --seconds. Prints a Markdown table.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402

PRELOAD = "LD_PRELOAD=/usr/lib/libaccio.so"
MODES = [("linux", ""), ("accio", PRELOAD), ("spin", PRELOAD + " ACCIO_SPIN_US=100000")]


def run(delay_us, count, hart):
    stat = f"grep '^cpu{hart} ' /proc/stat"
    with accio.HostEcho(delay_us=delay_us) as echo:
        parts = [f"echo @@{m}@@; {stat}; {env} taskset {1 << hart:#x} udp_pingpong -q -n {count} "
                 f"-p {echo.port} | grep -E '^(rtt_p50_us|datagrams|size)'; {stat}"
                 for m, env in MODES]
        r = accio.run("; ".join(parts), timeout=1800)
    if r.rc != 0:
        sys.exit("run failed:\n" + r.output[-3000:])
    res = {}
    for mode, body in re.findall(r"@@(\w+)@@\n(.*?)(?=@@|\Z)", r.output, re.S):
        cpu = [list(map(int, line.split()[1:])) for line in body.splitlines()
               if line.startswith(f"cpu{hart} ")]
        d = [b - a for a, b in zip(cpu[0], cpu[1])]
        idle = d[3] + d[4]
        busy = 100.0 * (sum(d) - idle) / sum(d) if sum(d) else 0.0
        rtt = float(re.search(r"rtt_p50_us=(\S+)", body).group(1))
        ok = re.search(r"bad=0", body) is not None
        res[mode] = (busy, rtt, ok)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--factors", default="1,10,40,200")
    ap.add_argument("--hart", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    factors = [int(x) for x in a.factors.split(",")]
    base = run(0, 2000, a.hart)["linux"][1]
    print(f"base (Linux round trip p50 without delay): {base:.0f} µs\n")
    print(f"| slowdown | server delay (µs) | round trips | CPU busy, hart {a.hart}: Linux | "
          "Accio blocking | Accio spinning | Accio / Linux | RTT p50 (µs) L / A / S |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for k in factors:
        delay = int((k - 1) * base)
        count = max(50, min(2000, int(a.seconds * 1e6 / (base + delay))))
        r = run(delay, count, a.hart)
        bad = [m for m, v in r.items() if not v[2]]
        if bad:
            sys.exit(f"slowdown {k}: replies did not match in {bad}")
        lin, acc, spn = r["linux"][0], r["accio"][0], r["spin"][0]
        ratio = f"{acc / lin:.2f}" if lin else "-"
        print(f"| {k}x | {delay} | {count} | {lin:.1f} % | {acc:.1f} % | {spn:.1f} % | {ratio} | "
              f"{r['linux'][1]:.0f} / {r['accio'][1]:.0f} / {r['spin'][1]:.0f} |")


if __name__ == "__main__":
    main()
