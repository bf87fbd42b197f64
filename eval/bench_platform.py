#!/usr/bin/env python3
"""Platform benchmarks: warm build, boot to userspace, datagram rates.

usage: python3 eval/bench_platform.py [--cold] [--runs N]

  --cold   also time a cold build into a scratch cache (ACCIO_CACHE=$(mktemp -d));
           takes as long as a first build on a fresh machine
Prints a Markdown table; the numbers are wall-clock seconds on this machine.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402


def timed(cmd, env=None):
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=ROOT, check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    rows = []

    if a.cold:
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, ACCIO_CACHE=d)
            rows.append(("cold build (make build, empty cache)", f"{timed(['make', 'build'], env):.0f} s"))
    rows.append(("warm build (make build, all cached)", f"{timed(['make', 'build']):.1f} s"))

    boots = [accio.run("true", timeout=300).wall_s for _ in range(a.runs)]
    rows.append(("boot to userspace and power off, 4 harts", f"median {statistics.median(boots):.2f} s (min {min(boots):.2f})"))
    dboots = [accio.run("true", icount=4, wire="none", timeout=300).wall_s for _ in range(a.runs)]
    rows.append(("same, deterministic (-icount shift=4)", f"median {statistics.median(dboots):.2f} s"))

    n = 2000
    r = accio.run(f"nic_selftest -n {n} > /tmp/o; tail -n1 /tmp/o", icount=4, wire="none", timeout=600)
    assert f"frames={n} failed=0" in r.output, r.output
    per_s = n / max(r.wall_s - statistics.median(dboots), 1e-3)
    rows.append((f"ping-pong frames per wall second, deterministic ({n} NIC loopback round trips)",
                 f"{per_s:.0f}/s"))

    with accio.HostEcho() as echo:
        r = accio.run(f"udp_echo_client -q -n 10000 -m 64 -M 64 -p {echo.port}", timeout=600)
    res = dict(re.findall(r"^(\w+)=(\S+)$", r.output, re.M))
    rate = 10000 / (int(res["elapsed_us"]) / 1e6)
    rows.append(("UDP ping-pong to host peer, 64 B, real time (user wire)",
                 f"{rate:.0f} datagrams/s, RTT p50 {res['rtt_p50_us']} us"))

    print("| measure | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")


if __name__ == "__main__":
    main()
