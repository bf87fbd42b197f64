#!/usr/bin/env python3
"""Accelerated sockets versus Linux sockets: UDP ping-pong round trips,
client processing time and guest CPU time, one unmodified client
(apps/udp_pingpong.c) run three ways.

usage: python3 eval/bench_accio.py [--count N] [--sizes 64,256,512,1024]
                                   [--icount [SHIFT]]

For each size the guest runs `udp_pingpong` against the host echo server on
Linux sockets, with LD_PRELOAD=/usr/lib/libaccio.so (TX ring), and with the
library's direct MMIO transmit (ACCIO_MMIO_TX_MAX=1472), in one boot.

Client processing time (paper section 8.1) is RTT_sw - RTT_hw per round
trip: RTT_sw measured by the program, RTT_hw between the NIC hardware times
of the request leaving (first bit on the wire) and the reply arriving. It is
the time the client's hardware and software spend on the request and the
reply, whatever the peer and the wire cost.

--icount runs the guest in deterministic virtual time (every instruction
advances the clock by 2^SHIFT ns, idle time skipped): processing time then
counts executed instructions, independent of the host's speed and load.
Without it the guest runs in real time (QEMU TCG). CPU is the client's own
CPU time per round trip (udp_pingpong's cpu_self_us, the scheduler's exact
run time, which charges a halt in place to the thread), not the harts' busy
share from /proc/stat, which the 4 ms tick samples. Prints a Markdown table.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402

PRELOAD = "LD_PRELOAD=/usr/lib/libaccio.so ACCIO_STATS=1"
MODES = [("linux", ""), ("ring", PRELOAD), ("mmio", PRELOAD + " ACCIO_MMIO_TX_MAX=1472")]


def measure(sizes, count, icount):
    with accio.HostEcho() as echo:
        parts = []
        for s in sizes:
            pp = f"udp_pingpong -q -n {count} -m {s} -p {echo.port}"
            for mode, env in MODES:
                parts.append(f"echo @@{mode} {s}@@; {env} {pp} 2>&1")
        r = accio.run("; ".join(parts), timeout=3600, icount=icount)
    if r.rc != 0:
        sys.exit("benchmark run failed:\n" + r.output[-3000:])
    runs = {}
    for mode, size, body in re.findall(r"@@(\w+) (\d+)@@\n(.*?)(?=@@|\Z)", r.output, re.S):
        d = dict(re.findall(r"^(\w+)=(\S+)$", body, re.M))
        st = re.search(r"rx_ring=(\d+) tx_ring=(\d+) tx_mmio=(\d+).*waits=(\d+)", body)
        if st:
            d["path"] = f"rx {st.group(1)} ring, tx {int(st.group(2)) + int(st.group(3))} " \
                        f"{'MMIO' if int(st.group(3)) else 'ring'}, {st.group(4)} sleeps"
        runs[(mode, int(size))] = d
    return runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--sizes", default="64,256,512,1024")
    ap.add_argument("--icount", type=int, nargs="?", const=4, default=None)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    runs = measure(sizes, a.count, a.icount)

    def cell(d, *keys):
        return " / ".join(d.get(k, "?") for k in keys)

    if a.icount is not None:
        print(f"{a.count} round trips per cell; deterministic virtual time "
              f"(icount shift={a.icount}: {1 << a.icount} ns per instruction)\n")
        print("| size (B) | processing p50 / p99 (µs): Linux | Accio TX ring | Accio MMIO TX "
              "| RTT_hw avg (µs) L / ring / MMIO |")
        print("|---|---|---|---|---|")
        for s in sizes:
            L, R, M = (runs[(m, s)] for m, _ in MODES)
            print(f"| {s} | {cell(L, 'proc_p50_us', 'proc_p99_us')} | "
                  f"{cell(R, 'proc_p50_us', 'proc_p99_us')} | {cell(M, 'proc_p50_us', 'proc_p99_us')} | "
                  f"{L.get('rtt_hw_avg_us')} / {R.get('rtt_hw_avg_us')} / {M.get('rtt_hw_avg_us')} |")
        return
    print(f"{a.count} round trips per cell; guest wall clock (QEMU TCG, real time); "
          "CPU = the client's CPU time per round trip\n")
    print("| size (B) | RTT p50 / p99 (µs): Linux | Accio ring | Accio MMIO | "
          "processing p50 (µs) L / ring / MMIO | CPU per round trip (µs) L / ring / MMIO | Accio paths |")
    print("|---|---|---|---|---|---|---|")
    for s in sizes:
        L, R, M = (runs[(m, s)] for m, _ in MODES)
        print(f"| {s} | {cell(L, 'rtt_p50_us', 'rtt_p99_us')} | {cell(R, 'rtt_p50_us', 'rtt_p99_us')} "
              f"| {cell(M, 'rtt_p50_us', 'rtt_p99_us')} "
              f"| {L.get('proc_p50_us')} / {R.get('proc_p50_us')} / {M.get('proc_p50_us')} "
              f"| {cpu_per_rt(L, a.count)} / {cpu_per_rt(R, a.count)} / {cpu_per_rt(M, a.count)} "
              f"| {R.get('path', '?')}; {M.get('path', '?')} |")


def cpu_per_rt(r, count):
    """The client's CPU time per measured round trip, in µs."""
    return f"{float(r['cpu_self_us']) / count:.1f}" if "cpu_self_us" in r else "?"


if __name__ == "__main__":
    main()
