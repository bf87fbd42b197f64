#!/usr/bin/env python3
"""UDP servers from Debian, unmodified, on two SoCs: each server's own
headline figure, measured by a real client on the other SoC, with both
sides on Linux sockets and with both sides preloaded with libaccio.

  dnsmasq   the DNS server in its default socket setup (wildcard address,
            IP_PKTINFO, an IPv6 socket beside it), answering names of a
            hosts file; dnsperf on the client SoC sends queries for the run
            (-l S, -Q Q queries/s at most, -c 1): queries/s answered,
            average latency and how many were lost
  prefork   udp_echo -P (the parent binds, a forked child serves) against
            udp_echo_client: round trips/s and p50/p99 for 1,000 64 B echoes

usage: python3 eval/bench_servers.py [--seconds S] [--json FILE]

Real time (QEMU TCG, no -icount), 4 harts per SoC, the two SoCs on one
wire (accio pair), one pair of boots per server and mode. Prints a
Markdown table.
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402
from bench_programs import ring_share  # noqa: E402

GLIBC = "env LD_PRELOAD=/usr/lib/riscv64-linux-gnu/libaccio.so ACCIO_STATS=1"
MUSL = "env LD_PRELOAD=/usr/lib/libaccio.so ACCIO_STATS=1"
MODES = ("linux", "accio")
NAMES = 50


def server_rows(out):
    """The server's `accio stat` lines after the run: PATH and RX_RING by command."""
    lines = out.partition("@@stat@@")[2].splitlines()
    header = next((l for l in lines if l.startswith("PID ")), None)
    if not header:
        return []
    cols = header.split()
    return [dict(zip(cols, l.split())) for l in lines if len(l.split()) == len(cols)
            and l.split()[0].isdigit()]


def dnsmasq(mode, seconds):
    pre = GLIBC if mode == "accio" else "env"
    hosts = " ".join(f"10.1.0.{i} h{i}.test" for i in range(1, NAMES + 1))
    server = (f"echo {hosts} | xargs -n 2 > /tmp/hosts;"
              f"{pre} dnsmasq -d -C /dev/null -u root --no-resolv --no-hosts "
              "--addn-hosts=/tmp/hosts > /tmp/dnsmasq.log 2>&1 & "
              f"sleep {seconds + 40}; echo @@stat@@; accio stat")
    client = (f"for i in $(seq {NAMES}); do echo h$i.test A; done > /tmp/q;"
              "for i in $(seq 60); do dig @10.0.3.1 h1.test +short +tries=1 +time=1 "
              "| grep -q 10.1.0.1 && break; sleep 1; done;"
              f"{pre} dnsperf -s 10.0.3.1 -d /tmp/q -l {seconds} -c 1 -t 2 2>&1")
    rs, rc = accio.run_pair(server, client, timeout=seconds + 400, grace=seconds + 60,
                            pkgs=("dnsmasq-base", "bind9-dnsutils", "dnsperf"))
    out = rc.output
    qps = re.search(r"Queries per second:\s+([\d.]+)", out)
    lat = re.search(r"Average Latency \(s\):\s+([\d.]+)", out)
    lost = re.search(r"Queries lost:\s+(\d+)", out)
    sent = re.search(r"Queries sent:\s+(\d+)", out)
    if not (qps and lat and lost and sent):
        raise RuntimeError("dnsperf: no result\n" + out[-3000:] + rc.console[-2000:])
    rows = [r for r in server_rows(rs.output) if r.get("COMMAND") == "dnsmasq"]
    return {"server": "dnsmasq", "mode": mode, "queries_per_s": float(qps.group(1)),
            "avg_latency_us": round(float(lat.group(1)) * 1e6, 1),
            "sent": int(sent.group(1)), "lost": int(lost.group(1)),
            "client_ring_rx_pct": ring_share(out),
            "server_paths": sorted(r["PATH"] for r in rows),
            "server_rx_ring": sum(int(r["RX_RING"]) for r in rows if r["PATH"] == "ring")}


def prefork(mode, seconds):
    pre = MUSL if mode == "accio" else "env"
    server = f"{pre} udp_echo -P -p 7000 -n 1000 2>&1; sleep 5"
    client = (f"{pre} udp_echo_client -s 10.0.3.1 -p 7000 -n 1000 -m 64 -M 64 -t 2000 2>&1")
    rs, rc = accio.run_pair(server, client, timeout=400, grace=10)
    out = rc.output
    m = re.search(r"ok=(\d+)", out)
    p50 = re.search(r"rtt_p50_us=([\d.]+)", out)
    p99 = re.search(r"rtt_p99_us=([\d.]+)", out)
    el = re.search(r"elapsed_us=(\d+)", out)
    st = [dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", l))
          for l in re.findall(r"^accio: (fd=.*)$", rs.output, re.M)]
    child = max(st, key=lambda s: s["tx_ring"]) if st else {}
    return {"server": "udp_echo -P", "mode": mode, "ok": int(m.group(1)) if m else None,
            "p50_us": float(p50.group(1)) if p50 else None,
            "p99_us": float(p99.group(1)) if p99 else None,
            "round_trips_per_s": round(int(m.group(1)) / (int(el.group(1)) / 1e6), 1)
            if m and el and int(el.group(1)) else None,
            "server_child_rx_ring": child.get("rx_ring"),
            "server_child_tx_ring": child.get("tx_ring"), "client_output": out[-600:]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--only", default="dnsmasq,prefork")
    ap.add_argument("--json")
    args = ap.parse_args()
    res = []
    for name in args.only.split(","):
        for mode in MODES:
            r = {"dnsmasq": dnsmasq, "prefork": prefork}[name](mode, args.seconds)
            print(json.dumps(r), flush=True)
            res.append(r)
    print("\n| server | mode | figure |\n|---|---|---|")
    for r in res:
        if r["server"] == "dnsmasq":
            fig = (f"{r['queries_per_s']:.0f} queries/s, avg {r['avg_latency_us']:.0f} µs, "
                   f"{r['lost']} of {r['sent']} lost; server paths {r['server_paths']}")
        else:
            fig = (f"ok {r['ok']}, p50 {r['p50_us']} µs, p99 {r['p99_us']} µs; "
                   f"child rx_ring {r['server_child_rx_ring']}")
        print(f"| {r['server']} | {r['mode']} | {fig} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
