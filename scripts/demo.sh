#!/usr/bin/env bash
# The demo: boot the Accio SoC and run the same unmodified UDP echo client
# twice against a UDP echo server on the host, over the Accio NIC: once on
# Linux sockets, once accelerated by the Accio uncore through
# LD_PRELOAD=libaccio.so. The client binary is not linked with libaccio.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import re, sys
sys.path.insert(0, "tools")
import accio

N = 10000
client = f"udp_echo_client -q -n {N} -m 64 -M 1472"
with accio.HostEcho() as echo:
    cmd = (f"{client} -p {echo.port}; echo rc=$?; echo @@accio@@;"
           f"LD_PRELOAD=/usr/lib/libaccio.so ACCIO_STATS=1 {client} -p {echo.port} 2>&1;"
           "echo rc=$?")
    r = accio.run(cmd, timeout=900)
linux_out, accio_out = r.output.split("@@accio@@")
L = dict(re.findall(r"^(\w+)=(\S+)$", linux_out, re.M))
A = dict(re.findall(r"^(\w+)=(\S+)$", accio_out, re.M))
S = dict(re.findall(r"(\w+)=(\d+)", (re.findall(r"^accio: (.*)$", accio_out, re.M) or [""])[0]))
rows = [
    ("", "Linux sockets", "Accio (LD_PRELOAD)"),
    ("datagrams sent", L.get("datagrams", "?"), A.get("datagrams", "?")),
    ("echoed intact", L.get("ok", "?"), A.get("ok", "?")),
    ("corrupted / lost", "%s / %s" % (L.get("bad", "?"), L.get("lost", "?")),
     "%s / %s" % (A.get("bad", "?"), A.get("lost", "?"))),
    ("sizes (bytes)", L.get("sizes", "?"), A.get("sizes", "?")),
    ("RTT p50 / p99 (us, wall)", "%s / %s" % (L.get("rtt_p50_us", "?"), L.get("rtt_p99_us", "?")),
     "%s / %s" % (A.get("rtt_p50_us", "?"), A.get("rtt_p99_us", "?"))),
    ("datagrams via ICT row rings (rx/tx)", "-", "%s / %s" % (S.get("rx_ring", "?"), S.get("tx_ring", "?"))),
    ("datagrams via kernel fallback (rx/tx)", "all", "%s / %s" % (S.get("rx_kernel", "?"), S.get("tx_kernel", "?"))),
    ("ICT row hardware counters (rx/tx)", "-", "%s / %s" % (S.get("rx_pkts", "?"), S.get("tx_pkts", "?"))),
]
w = max(len(k) for k, _, _ in rows)
print("\nAccio demo: one unmodified UDP echo client, Linux sockets vs the Accio fast path")
print("guest: Linux 6.1 riscv64, 4 harts, musl; wire: Accio NIC <-> QEMU user net <-> host 127.0.0.1:%d"
      % echo.port)
print("-" * (w + 44))
for k, a, b in rows:
    print(f"{k:<{w}}  {a:<20}  {b}")
print("-" * (w + 44))
print(f"host echo server echoed {echo.echoed}; wall time (boot + both runs) {r.wall_s:.1f} s")
ok = (r.rc == 0 and L.get("rc") == "0" and A.get("rc") == "0" and L.get("ok") == str(N)
      and A.get("ok") == str(N) and S.get("rx_ring") == str(N) and S.get("tx_ring") == str(N))
print("RESULT:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
