#!/usr/bin/env bash
# The demo: boot the Accio SoC and run a Linux-sockets UDP echo client in the
# guest against a UDP echo server on the host, over the Accio NIC.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import re, sys, time
sys.path.insert(0, "tools")
import accio

with accio.HostEcho() as echo:
    t0 = time.monotonic()
    r = accio.run(f"udp_echo_client -q -n 10000 -m 64 -M 1472 -p {echo.port}; echo rc=$?;"
                  "ethstat eth0", timeout=900)
res = dict(re.findall(r"^(\w+)=(\S+)$", r.output, re.M))
st = dict(re.findall(r"^(\w+) (\d+)$", r.output, re.M))
rows = [
    ("guest", "Linux " + "6.1 riscv64, 4 harts, musl userspace"),
    ("wire", "Accio NIC <-> QEMU user net <-> host 127.0.0.1:%d" % echo.port),
    ("datagrams sent", res.get("datagrams", "?")),
    ("echoed intact", res.get("ok", "?")),
    ("corrupted / lost", "%s / %s" % (res.get("bad", "?"), res.get("lost", "?"))),
    ("sizes (bytes)", res.get("sizes", "?")),
    ("host server echoed", str(echo.echoed)),
    ("RTT avg / p50 / p99 (us, guest clock)", "%s / %s / %s" % (
        res.get("rtt_avg_us", "?"), res.get("rtt_p50_us", "?"), res.get("rtt_p99_us", "?"))),
    ("NIC hw frames tx / rx", "%s / %s" % (st.get("hw_tx_frames", "?"), st.get("hw_rx_frames", "?"))),
    ("NIC drops (nobuf/runt/oversize)", "%s/%s/%s" % (
        st.get("rx_drop_nobuf", "?"), st.get("rx_drop_runt", "?"), st.get("rx_drop_oversize", "?"))),
    ("wall time (boot + run)", "%.1f s" % r.wall_s),
]
w = max(len(k) for k, _ in rows)
print("\nAccio demo: UDP echo over the Accio NIC")
print("-" * (w + 40))
for k, v in rows:
    print(f"{k:<{w}}  {v}")
print("-" * (w + 40))
ok = r.rc == 0 and res.get("rc") == "0" and res.get("ok") == "10000"
print("RESULT:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
