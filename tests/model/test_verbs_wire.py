"""The verbs provider's RoCEv2 wire format (libaccio/verbs/accio_wire.h),
on the host: BTH/DETH/ImmDt building and parsing, pad, ICRC slot, GRH,
IPv4-mapped GIDs, ring record headers (libaccio/verbs/test_wire.c)."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_wire_format_round_trips():
    r = subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "libaccio", "verbs"), "test"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "test_wire: ok" in r.stdout, r.stdout + r.stderr
