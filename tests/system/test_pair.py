"""Two SoCs, each with its Accio NIC and uncore, joined by one wire (QEMU
dgram netdevs on 127.0.0.1): the peer is an Accio SoC too."""
import re

import pytest

import accio
from conftest import debian_unavailable, verbs_unavailable

TIMEOUT = 400
PRELOAD = "LD_PRELOAD=/usr/lib/libaccio.so ACCIO_STATS=1"


def kv(text):
    return dict(re.findall(r"^(\w+)=(\S+)$", text, re.M))


def test_two_socs_exchange_datagrams_through_their_rows():
    """A plain echo server on one SoC, the echo client on the other: first
    both on Linux sockets, then both accelerated; every datagram's content
    checked, sizes 16..1472 B; the server SoC's command is stopped by the
    host once the client is done."""
    server = f"udp_echo -p 7000 & {PRELOAD} udp_echo -p 7001; wait"
    client = ("udp_echo_client -s 10.0.3.1 -p 7000 -n 300 -m 16 -M 1472 -t 2000 -q; echo plain_rc=$?;"
              f"{PRELOAD} udp_echo_client -s 10.0.3.1 -p 7001 -n 300 -m 16 -M 1472 -t 2000 -q;"
              "echo accio_rc=$?; ip neigh show dev eth0; ethstat | grep -E 'rx_drop_runt|tx_frames'")
    rs, rc = accio.run_pair(server, client, timeout=TIMEOUT)
    assert rc.rc == 0, rc.output + rc.console[-2000:]
    assert "plain_rc=0" in rc.output and "accio_rc=0" in rc.output, rc.output
    assert rc.output.count("ok=300") == 2 and "bad=0" in rc.output, rc.output
    # the peer was the other SoC, found by ARP on the wire between them
    assert re.search(r"^10\.0\.3\.1 lladdr 52:54:00:ac:c1:01", rc.output, re.M), rc.output
    assert rs.stopped and rs.rc == 143, (rs.rc, rs.output)
    # 16..59 B frames built by the server's engine reached the client: the
    # MAC pads short frames (ethernet's 60 B minimum without FCS)
    assert re.search(r"rx_drop_runt\D+0$", rc.output, re.M), rc.output
    st = [dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", line))
          for line in re.findall(r"^accio: (fd=.*)$", rc.output, re.M)]
    assert len(st) == 1 and st[0]["rx_ring"] == 300 and st[0]["rx_kernel"] == 0, st


def test_a_slower_server_soc():
    """udp_echo -d adds busy work per request on the server SoC (timed on
    the time CSR): the client's round trip grows by about that much. The
    two SoCs run in lockstep virtual time, so the host's load cannot move
    either round trip. What still moves them is the image: a Linux round
    trip's p50 shifts by up to about 200 µs when the guest's programs
    change (1807..2217 µs were measured for 2 ms of work over wire
    latencies and start phases), so the work is 4 ms and the bound 10 %."""
    server = "udp_echo -p 7000 & udp_echo -p 7001 -d 4000; wait"
    client = ("for p in 7000 7001; do for i in $(seq 100); do udp_pingpong -s 10.0.3.1 -p $p "
              "-n 1 -t 100 -q > /dev/null 2>&1 && break; done; done;"
              "udp_pingpong -s 10.0.3.1 -p 7000 -n 200 -q | grep -E '^rtt_p50_us=|bad=';"
              "echo @@;"
              "udp_pingpong -s 10.0.3.1 -p 7001 -n 200 -q | grep -E '^rtt_p50_us=|bad='")
    rs, rc = accio.run_pair(server, client, timeout=TIMEOUT, lockstep=5000)
    assert rc.rc == 0, rc.output + rc.console[-2000:]
    fast, slow = (kv(part) for part in rc.output.split("@@"))
    assert rc.output.count(" bad=0") == 2, rc.output
    d = float(slow["rtt_p50_us"]) - float(fast["rtt_p50_us"])
    assert 3600 <= d <= 4400, rc.output
