#!/usr/bin/env python3
"""Debian's own programs, unmodified, on Linux sockets and under the glibc
libaccio: each program's headline figure, measured the way its users would.

  sockperf  ping-pong from the guest to a host sockperf server: round trips
            and sockperf's latency (half the round trip) p50/p99, 64 and 1024 B
  memcached UDP server in the guest (-t 1 and -t 4), host client with 4
            gets outstanding (tools/mcudp.py): requests/s, p50/p99, every
            reply checked
  socat     a UDP relay in the guest (UDP-LISTEN <-> UDP to the host): host
            sockperf ping-pong through it: round trips/s and p50
  nc        nc.openbsd -u -l as a sink in the guest: the host sends 1 KiB
            datagrams as fast as it can for the run; bytes delivered/s

usage: python3 eval/bench_programs.py [--seconds S] [--only NAME,...] [--json FILE]

Real time (QEMU TCG, no -icount), 4 harts, user wire, one boot per program
and mode. Only 127.0.0.1 on the host is addressed. Prints a Markdown table.
"""
import argparse
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402
import mcudp  # noqa: E402

PRELOAD = "env LD_PRELOAD=/usr/lib/riscv64-linux-gnu/libaccio.so ACCIO_STATS=1"
MODES = (("linux", "env"), ("accio", PRELOAD))


@contextlib.contextmanager
def sockperf_server():
    port = accio.free_udp_port()
    p = subprocess.Popen(["sockperf", "server", "-i", "127.0.0.1", "-p", str(port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        yield port
    finally:
        p.terminate()
        p.wait(10)


def ring_share(out):
    """Share of received datagrams that came through the rings (libaccio's stats)."""
    st = [dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", l))
          for l in re.findall(r"^accio: (fd=.*)$", out, re.M)]
    rx = sum(s["rx_ring"] for s in st)
    tot = rx + sum(s["rx_kernel"] for s in st)
    return round(100.0 * rx / tot, 1) if tot else None


def sockperf_pp(mode, secs):
    res = {}
    with sockperf_server() as sp:
        cmd = "; ".join(
            f"echo @@{m}@@; {mode} sockperf ping-pong -i 10.0.2.2 -p {sp} -t {secs} -m {m} "
            f"--no-rdtsc 2>&1 | grep -E 'ReceivedMessages|percentile (50|99).000 |^accio:'"
            for m in (64, 1024))
        r = accio.run(cmd, timeout=600)
    for m, body in re.findall(r"@@(\d+)@@\n(.*?)(?=@@|\Z)", r.output, re.S):
        n = re.search(r"ReceivedMessages=(\d+)", body)
        p50 = re.search(r"percentile 50\.000 =\s*([\d.]+)", body)
        p99 = re.search(r"percentile 99\.000 =\s*([\d.]+)", body)
        res[f"sockperf {m} B"] = dict(
            figure=f"{int(n.group(1)) / secs:,.0f} round trips/s; p50 {float(p50.group(1)):.1f} / "
                   f"p99 {float(p99.group(1)):.1f} µs (half round trip)" if n and p50 and p99 else
            "failed: " + body[-300:],
            ring=ring_share(body))
    return res


def memcached(mode, secs):
    res = {}
    for threads in (1, 4):
        hp, out, err = accio.free_udp_port(), {}, []

        def client():
            try:
                c = mcudp.McUdp(hp)
                for _ in range(300):
                    try:
                        c.set(b"probe", b"1")
                        break
                    except mcudp.McError:
                        pass
                out.update(mcudp.load(hp, seconds=secs, window=4, keys=1000, size=100))
                try:
                    c.request(b"shutdown\r\n", tries=1)
                except mcudp.McError:
                    pass
            except Exception as e:
                err.append(repr(e))

        t = threading.Thread(target=client, daemon=True)
        t.start()
        r = accio.run(f"accio-timeout {int(secs) + 120} {mode} memcached -u root -U 11211 -p 0 "
                      f"-l 10.0.2.15 -t {threads} -A", fwd_udp=[(hp, 11211)],
                      pkgs=["memcached"], timeout=600)
        t.join(30)
        ok = not err and out.get("wrong") == 0
        res[f"memcached -t {threads}, 100 B gets"] = dict(
            figure=f"{out['rps']:,.0f} requests/s; p50 {out['p50_us']:.0f} / p99 "
                   f"{out['p99_us']:.0f} µs" + ("" if ok else f" (errors: {err or out})")
            if out else f"failed: {err} {r.output[-300:]}",
            ring=ring_share(r.output))
    return res


def socat_relay(mode, secs):
    hp, gp = accio.free_udp_port(), 7000
    with sockperf_server() as sp:
        holder = {}

        def client():
            time.sleep(float(os.environ.get("ACCIO_BENCH_BOOT", "8")))   # boot + socat up
            p = subprocess.run(["sockperf", "ping-pong", "-i", "127.0.0.1", "-p", str(hp),
                                "-t", str(secs), "-m", "64", "--no-rdtsc"],
                               capture_output=True, text=True, timeout=secs + 60)
            holder["out"] = p.stdout + p.stderr

        t = threading.Thread(target=client, daemon=True)
        t.start()
        r = accio.run(f"accio-timeout {int(secs) + 30} {mode} socat -T 3 "
                      f"UDP-LISTEN:{gp} UDP:10.0.2.2:{sp}; true",
                      fwd_udp=[(hp, gp)], timeout=600)
        t.join(secs + 90)
    body = holder.get("out", "")
    n = re.search(r"ReceivedMessages=(\d+)", body)
    p50 = re.search(r"percentile 50\.000 =\s*([\d.]+)", body)
    return {"socat UDP relay, 64 B": dict(
        figure=f"{int(n.group(1)) / secs:,.0f} round trips/s; p50 {float(p50.group(1)):.1f} µs "
               "(half round trip, host sockperf through the relay)" if n and p50 else
        "failed: " + body[-300:],
        ring=ring_share(r.output))}


def nc_sink(mode, secs):
    hp, gp = accio.free_udp_port(), 7001
    sent = {}

    def sender():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        time.sleep(float(os.environ.get("ACCIO_BENCH_BOOT", "8")))
        data, n = b"x" * 1023 + b"\n", 0
        end = time.monotonic() + secs
        while time.monotonic() < end:
            for _ in range(16):
                s.sendto(data, ("127.0.0.1", hp))
            n += 16
            time.sleep(0.0005)
        sent["n"] = n

    t = threading.Thread(target=sender, daemon=True)
    t.start()
    r = accio.run(f"accio-timeout {int(secs) + 20} sh -c '{mode} nc.openbsd -d -u -l -p {gp} "
                  f"-w 3 | wc -c > /tmp/nc.bytes'; echo bytes=$(cat /tmp/nc.bytes)",
                  fwd_udp=[(hp, gp)], timeout=600)
    t.join(secs + 30)
    b = re.search(r"bytes=(\d+)", r.output)
    got = int(b.group(1)) if b else 0
    return {"nc -u -l sink, 1 KiB": dict(
        figure=f"{got / secs / 1e6:.2f} MB/s delivered ({got // 1024:,} of {sent.get('n', 0):,} "
               "datagrams offered)", ring=ring_share(r.output))}


PROGRAMS = dict(sockperf=sockperf_pp, memcached=memcached, socat=socat_relay, nc=nc_sink)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--only", default=",".join(PROGRAMS))
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = {}
    for name in a.only.split(","):
        for mode, env in MODES:
            for what, v in PROGRAMS[name](env, a.seconds).items():
                rows.setdefault(what, {})[mode] = v
                print(f"{what} [{mode}]: {v['figure']}", file=sys.stderr, flush=True)
    print("| program | Linux sockets | libaccio (glibc), unmodified | through the rings |")
    print("|---|---|---|---:|")
    for what, m in rows.items():
        ring = m.get("accio", {}).get("ring")
        print(f"| {what} | {m.get('linux', {}).get('figure')} | "
              f"{m.get('accio', {}).get('figure')} | "
              f"{'' if ring is None else f'{ring} %'} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
