#!/usr/bin/env python3
"""More accelerated sockets than ICT rows: what a row miss costs.

One process holds N connected UDP sockets (64, 256, 1024, 4096) and walks
them round robin (apps/udp_conns): with WINDOW 1, one datagram at a time
(each its own round trip: latency), with WINDOW 64, 64 datagrams out
before their replies are read (throughput). The peer is the NIC model's
echo peer (20 us service time, virtual clock), the ICT has 64 rows, rings
are 4 KiB. Contenders: Linux sockets, and libaccio (LD_PRELOAD).

Beyond 64 sockets, round robin is the worst case for a cache of 64 rows:
every datagram's socket lost its row since its last turn (an ICT miss), so
the datagram pays for an eviction and an install (the register page is
unmapped, the victim's registers saved, the new row's restored, the page
faulted in again). The miss cost is the round trip at N minus the round
trip at 64 sockets, where nothing is evicted; at icount shift 4 a
microsecond of a busy hart is 62.5 instructions.

The epoll rows (wait "epoll", WINDOW 64) take the replies as an event loop
does (udp_conns -e): every socket in one epoll set, non-blocking receives
on the sockets epoll_wait reports. libaccio's epoll_wait looks at every
registered socket's RX ring first; that look must not install the row of
a socket that has none, or the looks alone make the rows thrash.

usage: python3 eval/bench_rows.py [--datagrams D] [--json FILE]
                                  [--contenders linux,accio] [--waits recv,epoll]

Deterministic (icount shift 4, virtual clock); prints a Markdown table.
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402

SOCKETS = (64, 256, 1024, 4096)
MODES = (("linux", ""), ("accio", "LD_PRELOAD=/usr/lib/libaccio.so ACCIO_RING_BYTES=4096"))
MIPS = 62.5     # icount shift 4


def run_one(env, n, window, datagrams, epoll=False):
    rounds = max(1, datagrams // n)
    cmd = f"{env} udp_conns -p 7 -N {n} -r {rounds} -w {window} -S 3 -t 5000{' -e' if epoll else ''}"
    r = accio.run(cmd, icount=4, wire="echo:20000", timeout=1200)
    if r.rc != 0:
        raise RuntimeError(r.output + r.console[-2000:])
    v = dict((k, float(x)) for k, x in re.findall(r"(\w+)=(-?[\d.]+)", r.output))
    return {"sockets": n, "window": window, "wait": "epoll" if epoll else "recv",
            "datagrams": int(v["datagrams"]),
            "ok": int(v["ok"]), "lost": int(v["lost"]), "bad": int(v["bad"]),
            "rtt_p50_us": v["rtt_p50_us"], "rtt_p99_us": v["rtt_p99_us"],
            "datagrams_per_s": v["datagrams_per_s"],
            "installs": int(v["row_installs"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datagrams", type=int, default=8192,
                    help="datagrams per run (rounded to whole rounds)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--contenders", default="linux,accio", help="of linux, accio")
    ap.add_argument("--waits", default="recv,epoll", help="of recv, epoll")
    a = ap.parse_args()
    rows = []
    for mode, env in MODES:
        if mode not in a.contenders.split(","):
            continue
        for n in SOCKETS if "recv" in a.waits.split(",") else ():
            for window in (1, 64):
                res = run_one(env, n, window, a.datagrams)
                res["mode"] = mode
                rows.append(res)
                print(f"# {mode} N={n} window={window}: {res}", file=sys.stderr)
        for n in SOCKETS[:3] if "epoll" in a.waits.split(",") else ():
            res = run_one(env, n, 64, a.datagrams, epoll=True)
            res["mode"] = mode
            rows.append(res)
            print(f"# {mode} N={n} window=64 epoll: {res}", file=sys.stderr)
    base = {(r["mode"], r["window"]): r for r in rows
            if r["sockets"] == 64 and r["wait"] == "recv"}
    print("| contender | sockets | window | wait | datagrams/s | RTT p50 us | RTT p99 us "
          "| installs per datagram | miss cost us (instr.) | lost |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        cost = ""
        if (r["mode"] == "accio" and r["window"] == 1 and r["sockets"] > 64 and
                r["wait"] == "recv" and ("accio", 1) in base):
            per = r["installs"] / r["datagrams"]
            us = (r["rtt_p50_us"] - base[("accio", 1)]["rtt_p50_us"]) / max(per, 1e-9)
            r["miss_us"] = round(us, 1)
            cost = f"{us:.1f} ({us * MIPS:,.0f})"
        inst = f"{r['installs'] / r['datagrams']:.2f}" if r["mode"] == "accio" else ""
        print(f"| {r['mode']} | {r['sockets']} | {r['window']} | {r['wait']} | {r['datagrams_per_s']:,.0f} "
              f"| {r['rtt_p50_us']:.1f} | {r['rtt_p99_us']:.1f} | {inst} | {cost} "
              f"| {r['lost']} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"icount_shift": 4, "peer_delay_ns": 20000, "rows": 64,
                       "ring_bytes": 4096, "results": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
