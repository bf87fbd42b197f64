"""Linux at its best on the same SoC: the NIC's checksum offload (register
map 1.1), busy polling and io_uring round trips, each with every byte
checked and a counter that shows the path taken."""
import json
import os
import re
import struct
import subprocess
import sys

import pytest

import accio
from conftest import ROOT, debian_unavailable, part_unavailable

sys.path.insert(0, os.path.join(ROOT, "eval"))
import wirecap  # noqa: E402

TIMEOUT = 400
PIN = "taskset 0x2"


def kv(text):
    return dict(re.findall(r"(\w+)=(\S+)", text))


def sections(text):
    """@@name@@ markers in the output -> {name: text after it}."""
    parts = re.split(r"^@@([\w,-]+)@@$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def nic_stats(text):
    return {k: int(v) for k, v in re.findall(r"^\s+(\w+): (\d+)$", text, re.M)}


def udp_snmp(text):
    """Udp counters of a /proc/net/snmp copy."""
    rows = [line.split()[1:] for line in text.splitlines() if line.startswith("Udp:")]
    return {k: int(v) for k, v in zip(rows[0], rows[1])}


def csum16(data):
    s = 0
    if len(data) % 2:
        data += b"\0"
    for (w,) in struct.iter_unpack("!H", data):
        s += w
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def udp_checksum_ok(frame):
    """True if the IPv4 UDP frame's checksum is right (or absent)."""
    ip = frame[14:]
    ihl = (ip[0] & 15) * 4
    udp = ip[ihl:]
    ulen = struct.unpack("!H", udp[4:6])[0]
    if udp[6:8] == b"\0\0":
        return True
    ph = ip[12:20] + struct.pack("!BBH", 0, 17, ulen)
    return csum16(ph + udp[:ulen]) == 0xFFFF


STATE = ("echo @@{0}@@; ethtool -S eth0; cat /proc/net/snmp")


def test_checksum_offload_drops_bad_datagrams_in_the_nic_and_fills_in_good_ones(tmp_path):
    """Offload on (the default): a datagram with a wrong UDP checksum comes
    back from the wire peer as wrong as it left and the NIC drops it
    (rx_drop_csum), the stack never sees it; a right one is taken as
    checked (rx_csum_ok). Offload off (ethtool -K): the same datagram
    reaches the stack, which drops and counts it (Udp InCsumErrors). On
    transmit the NIC fills in the checksum of every datagram the stack
    leaves to it (tx_csum), and every one on the wire is right."""
    why = debian_unavailable()
    if why:
        pytest.skip(why)
    pcap = tmp_path / "csum.pcap"
    cmd = "; ".join([
        "ethtool -k eth0 | grep -i 'checksumming'",
        STATE.format("s0"),
        "echo @@bad-on@@; udp_csum -n 12 -b",
        "echo @@good-on@@; udp_csum -n 12",
        STATE.format("s1"),
        f"echo @@pp-on@@; {PIN} udp_pingpong -q -n 50 -p 7",
        STATE.format("s2"),
        "ethtool -K eth0 rx off tx off",
        "echo @@bad-off@@; udp_csum -n 12 -b",
        "echo @@good-off@@; udp_csum -n 12",
        STATE.format("s3"),
        f"echo @@pp-off@@; {PIN} udp_pingpong -q -n 50 -p 7",
        STATE.format("s4"),
    ])
    r = accio.run(cmd, icount=4, wire="echo:20000", timeout=TIMEOUT, pcap=str(pcap))
    assert r.rc == 0, r.output[-3000:] + r.console[-2000:]
    assert "rx-checksumming: on" in r.output and "tx-checksumming: on" in r.output
    sec = sections(r.output)
    st = [nic_stats(sec[f"s{i}"]) for i in range(5)]
    udp = [udp_snmp(sec[f"s{i}"]) for i in range(5)]
    # offload on: the NIC drops the wrong ones, the stack gets the right ones checked
    assert kv(sec["bad-on"])["received"] == "0"
    assert kv(sec["good-on"])["received"] == "12" and kv(sec["good-on"])["bad"] == "0"
    assert st[1]["rx_drop_csum"] - st[0]["rx_drop_csum"] == 12, (st[0], st[1])
    assert st[1]["rx_csum_ok"] - st[0]["rx_csum_ok"] >= 12
    assert udp[1]["InCsumErrors"] == udp[0]["InCsumErrors"]
    # the ping-pong's requests: the NIC filled in each checksum, the stack none
    pp = kv(sec["pp-on"])
    assert pp["bad"] == "0"
    assert st[2]["tx_csum"] - st[1]["tx_csum"] >= 60 and st[2]["tx_csum_sw"] == 0
    # offload off: the stack drops the wrong ones and counts them
    assert kv(sec["bad-off"])["received"] == "0"
    assert kv(sec["good-off"])["received"] == "12"
    assert st[3]["rx_drop_csum"] == st[2]["rx_drop_csum"]
    assert udp[3]["InCsumErrors"] - udp[2]["InCsumErrors"] == 12, (udp[2], udp[3])
    assert kv(sec["pp-off"])["bad"] == "0"
    assert st[4]["tx_csum"] == st[3]["tx_csum"]
    assert st[4]["rx_csum_ok"] == st[3]["rx_csum_ok"]
    # every ping-pong datagram on the wire (both ways, both settings) has a
    # right checksum; udp_csum's wrong ones are the only wrong ones
    frames = wirecap.read_pcap(str(pcap))
    pings = [f for _, f, _ in frames if len(f) > 42 and f[12:14] == b"\x08\x00" and f[23] == 17
             and 7 in struct.unpack("!HH", f[34:38])]
    bad = [f for f in pings if not udp_checksum_ok(bytes(f))]
    # two ping-pongs of 10 + 50 round trips, four udp_csum runs of 12
    assert len(pings) == 2 * 2 * 60 + 4 * 2 * 12 and len(bad) == 2 * 2 * 12, \
        (len(pings), len(bad))


def test_busy_polling_ping_pong_never_sleeps_and_checks_every_byte():
    """SO_BUSY_POLL longer than a round trip: the receive waits on its hart
    instead of sleeping (no voluntary context switch), with every reply
    checked; the plain blocking client sleeps once a round trip."""
    cmd = (f"echo @@busy@@; {PIN} udp_pingpong -q -n 100 -p 7 -B 1000; "
           f"echo @@block@@; {PIN} udp_pingpong -q -n 100 -p 7")
    r = accio.run(cmd, icount=4, wire="echo:20000", timeout=TIMEOUT)
    assert r.rc == 0, r.output[-3000:]
    sec = sections(r.output)
    busy, block = kv(sec["busy"]), kv(sec["block"])
    assert busy["bad"] == "0" and block["bad"] == "0"
    assert busy["busy_poll_us"] == "1000"
    assert int(busy["ctx_voluntary"]) <= 3, busy
    assert int(block["ctx_voluntary"]) >= 95, block
    assert float(busy["proc_p50_us"]) < float(block["proc_p50_us"])


def uring_unavailable():
    return part_unavailable("uring-unavailable", "no udp_pingpong-glibc (io_uring): ")


def syscalls(text):
    return {k: int(v) for k, v in re.findall(r"^syscall (\w+)=(\d+)$", text, re.M)}


def test_io_uring_ping_pongs_take_the_ring_not_the_socket_calls():
    """udp_pingpong-glibc -U (Debian's liburing): every reply checked; the
    data path makes no send/recv system call - one io_uring_enter a round
    trip when it submits and waits, none at all with a polling submission
    thread and polled completions; the multishot receive is armed once and
    completes once per datagram."""
    why = uring_unavailable()
    if why:
        pytest.skip(why)
    n, w = 100, 10
    parts = []
    for flags in ("plain", "sqpoll,spin", "multishot"):
        parts.append(f"echo @@{flags}@@; {PIN} syscount udp_pingpong-glibc -H -q -n {n} -p 7 "
                     f"-U {flags} 2>&1")
    # with the NIC's timestamps (no syscount): the processing time is there
    parts.append(f"echo @@stamps@@; {PIN} udp_pingpong-glibc -q -n {n} -p 7 -U multishot")
    r = accio.run("; ".join(parts), icount=4, wire="echo:20000", timeout=TIMEOUT)
    assert r.rc == 0, r.output[-3000:]
    sec = sections(r.output)
    for flags in ("plain", "sqpoll,spin", "multishot"):
        d, sc = kv(sec[flags]), syscalls(sec[flags])
        assert d["bad"] == "0" and d["datagrams"] == str(n), (flags, d)
        # a send and a receive completion for every round trip
        assert int(d["uring_cqes"]) == 2 * (n + w), (flags, d)
        for call in ("sendto", "recvfrom", "sendmsg", "recvmsg"):
            assert sc.get(call, 0) == 0, (flags, sc)
        if flags == "sqpoll,spin":
            assert sc.get("io_uring_enter", 0) <= 3 and d["uring_enters"] == "0", (flags, sc)
            assert "uring_sq_hart" in d
        else:
            assert sc["io_uring_enter"] >= n + w, (flags, sc)
    st = kv(sec["stamps"])
    assert st["bad"] == "0" and int(st["hw_samples"]) >= n - 2
    assert 0 < float(st["proc_p50_us"]) < float(st["rtt_p50_us"])


def test_breakdown_counts_no_payload_checksum_with_the_offload_on(tmp_path):
    """eval/breakdown.py, 1024 B datagrams: with the offload on, what the
    kernel still sums is the IPv4 headers (the same at any size); off, it
    sums every datagram both ways."""
    out = tmp_path / "c.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "eval", "breakdown.py"),
                        "--count", "20", "--size", "1024", "--modes", "linux,nocsum",
                        "--peer", "wire:20000", "--hart", "1", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = json.load(open(out))["results"]
    on, off = res["linux"]["stages"]["checksums"], res["nocsum"]["stages"]["checksums"]
    assert 0 < on < 500, on
    assert off > on + 3000, (on, off)


def test_ipis_are_a_store_to_the_sswi_not_a_firmware_call(tmp_path):
    """The same Linux ping-pong on the machine with its ACLINT (the
    default: the kernel sends IPIs by a store to the SSWI) and
    without it (ACCIO_IPI=sbi: every IPI an SBI call): the client's
    wake-ups still cross harts, but only the SBI path enters the firmware,
    and it costs thousands of instructions a round trip."""
    res = {}
    for ipi in ("sswi", "sbi"):
        out = tmp_path / f"{ipi}.json"
        r = subprocess.run([sys.executable, os.path.join(ROOT, "eval", "breakdown.py"),
                            "--count", "20", "--modes", "linux", "--peer", "wire:20000",
                            "--hart", "1", "--json", str(out)],
                           capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, ACCIO_IPI=ipi))
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        res[ipi] = json.load(open(out))["results"]["linux"]
    sswi, sbi = res["sswi"]["stages"], res["sbi"]["stages"]
    assert sswi["firmware (SBI)"] < 100, sswi
    assert sbi["firmware (SBI)"] > 2000, sbi
    # the wake-up crosses harts either way: the NIC's interrupt is on hart 0
    assert sswi["wake-up"] > 500 and sbi["wake-up"] > 500
    assert res["sswi"]["instructions_per_round_trip"] < \
        res["sbi"]["instructions_per_round_trip"] - 2000
    r = accio.run("dmesg | grep aclint-sswi; grep IPI1 /proc/interrupts", icount=4,
                  timeout=TIMEOUT)
    assert r.rc == 0 and "IPIs of 4 harts by supervisor software interrupts" in r.output, \
        r.output
