"""The Rocket SoC on Verilator (make soc): rocket-chip cores run bare-metal
programs that drive the uncore RTL through the SoC's MMIO bridge, with the
harness's DRAM, console and wire."""
import os
import struct
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOC = os.path.join(ROOT, "build", "soc")


def sim(harts, prog, *args, timeout=600):
    exe = os.path.join(SOC, f"soc-sim{harts}")
    if not os.path.exists(exe):
        pytest.fail(f"{exe} missing: run make soc")
    return subprocess.run([exe, *args, os.path.join(SOC, "sw", prog)], capture_output=True,
                          text=True, timeout=timeout)


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def test_datagrams_wakeup_and_asid_check_on_one_hart(tmp_path):
    frames = tmp_path / "frames"
    r = sim(1, "test_soc.elf", "--frames", str(frames))
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "FAIL" not in out and "failures=0" in out
    oks = [ln for ln in out.splitlines() if ln.startswith("ok ")]
    assert len(oks) == 13, out
    for n in "1234":
        assert any(ln.split()[1] == n for ln in oks), n
    kv = dict(ln.split("=", 1) for ln in out.splitlines() if "=" in ln and " " not in ln)
    assert kv["tx_frames"] == "3" and kv["rx_frames"] == "3" and kv["nic_frames"] == "1"
    assert 0 < int(kv["cycles_doorbell_to_rx_record"]) < 5000
    # what the engine put on the wire: valid IPv4 and UDP, the program's bytes
    sent = [bytes.fromhex(ln.split()[1]) for ln in frames.read_text().splitlines()]
    assert len(sent) == 3
    payloads = [b"hello from a Rocket core", b"wake me up", b"not for a row"]
    ports = [7000, 7000, 9]
    for f, p, dport in zip(sent, payloads, ports):
        ip, udp = f[14:34], f[34:]
        assert f[12:14] == b"\x08\x00" and ip[9] == 17
        assert csum(ip) == 0xffff
        assert ip[12:16] == bytes([10, 0, 2, 15]) and ip[16:20] == bytes([10, 0, 2, 2])
        sport, dp, ulen, _ = struct.unpack("!HHHH", udp[:8])
        assert (sport, dp, ulen) == (5000, dport, 8 + len(p)) and udp[8:] == p
        pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, ulen)
        assert csum(pseudo + udp) == 0xffff


def test_harness_refuses_bad_input(tmp_path):
    exe = os.path.join(SOC, "soc-sim1")
    bad = tmp_path / "bad.elf"
    bad.write_bytes(b"\x7fELF not really")
    r = subprocess.run([exe, str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not a 64-bit RISC-V ELF file" in r.stderr
    r = subprocess.run([exe, "--warp", "9", str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown option --warp" in r.stderr
    # a program that does not finish in time: status 3, said so
    r = sim(1, "test_soc.elf", "--max-cycles", "2000")
    assert r.returncode == 3 and "status=timeout" in r.stdout
