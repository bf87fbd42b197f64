"""DPDK 25.11 from Debian's riscv64 archive on the Accio SoC: Debian's
dpdk-testpmd and our dpdk_pingpong and dpdk_dispatch (apps/dpdk) on the
Accio NIC through DPDK's AF_XDP poll-mode driver (net_af_xdp) in zero-copy
mode: the NIC's driver runs the XDP program natively and the NIC receives
into, and sends from, DPDK's own mbufs (the socket's umem); the kernel
moves descriptors, not data. Between two SoCs on one wire."""
import os
import re

import pytest

import accio
from conftest import ROOT, part_unavailable
from dpdkcommon import echo_client, kv, run_dispatcher

TIMEOUT = 500
DPDK_BIN = os.path.join(ROOT, "build", "apps", "dpdk")
PKGS = accio.read_pkg_list(os.path.join(ROOT, "buildroot-config", "dpdk-packages.txt"))
ADD = [(os.path.join(DPDK_BIN, "dpdk_pingpong"), "/usr/bin/dpdk_pingpong"),
       (os.path.join(DPDK_BIN, "dpdk-testpmd"), "/usr/bin/dpdk-testpmd"),
       (os.path.join(DPDK_BIN, "dpdk_dispatch"), "/usr/bin/dpdk_dispatch")]
# hugepages for DPDK's memory, a BPF file system for libbpf
PREP = ("mkdir -p /dev/hugepages /sys/fs/bpf /var/run && "
        "mount -t hugetlbfs none /dev/hugepages && mount -t bpf bpf /sys/fs/bpf && "
        "echo 64 > /proc/sys/vm/nr_hugepages")
# libxdp's multi-program dispatcher needs kernel BTF, which this kernel has
# not: the PMD loads libxdp's AF_XDP program itself (xdp_prog=)
XSK_PROG = "/usr/lib/riscv64-linux-gnu/bpf/xsk_def_xdp_prog_5.3.o"
EAL = f"--no-pci --in-memory --vdev net_af_xdp0,iface=eth0,xdp_prog={XSK_PROG}"



def dpdk_unavailable():
    """Why the DPDK programs were not built (see debian_unavailable), or None."""
    return part_unavailable("dpdk-unavailable",
                            "Debian's archive was unavailable when the DPDK programs were built: ")


pytestmark = pytest.mark.skipif(dpdk_unavailable() is not None, reason=str(dpdk_unavailable()))


@pytest.mark.slow
def test_testpmd_forwards_between_two_socs():
    """Debian's dpdk-testpmd on the server SoC swaps each frame's addresses
    and ports (5tswap) and sends it back; the client SoC's echo client checks
    every byte of 300 datagrams of 16..1472 B; testpmd's own counters (its
    port statistics every second; the host stops it at the end)."""
    server = (f"{PREP} && grep -i hugepages_total /proc/meminfo && "
              f"sleep 1000 | dpdk-testpmd -l 0,1 {EAL} -- --forward-mode=5tswap "
              "--auto-start --total-num-mbufs=8192 --stats-period 1")
    client = "arp -s 10.0.3.1 52:54:00:ac:c1:01 && " + echo_client(300)
    rs, rc = accio.run_pair(server, client, pkgs=PKGS, add=ADD, timeout=TIMEOUT, grace=3)
    assert rc.rc == 0 and "echo_rc=0" in rc.output, rc.output + "\n--server--\n" + rs.output
    assert "ok=300" in rc.output and "bad=0" in rc.output, rc.output
    assert "HugePages_Total:      64" in rs.output, rs.output
    assert re.search(r"Port 0: .*52:54:00:AC:C1:01", rs.output, re.I), rs.output
    # testpmd's port statistics, printed every second
    rx = [int(x) for x in re.findall(r"RX-packets:\s*(\d+)", rs.output)]
    tx = [int(x) for x in re.findall(r"TX-packets:\s*(\d+)", rs.output)]
    assert rx and tx and max(rx) >= 301 and max(tx) >= 301, rs.output[-3000:]


def test_dpdk_pingpong_against_a_linux_echo_server():
    """dpdk_pingpong builds Ethernet/IPv4/UDP frames itself, resolves the
    server with ARP and answers the server's ARP, and checks every echo
    from a udp_echo on the other SoC's Linux sockets."""
    server = "udp_echo -p 7000"
    client = (f"{PREP} && dpdk_pingpong -l 1 {EAL} -- -s 10.0.3.1 -l 10.0.3.2 -p 7000 "
              "-m 64 -n 300 -q; echo pp64_rc=$?; "
              f"dpdk_pingpong -l 1 {EAL} -- -s 10.0.3.1 -l 10.0.3.2 -p 7000 "
              "-m 1400 -n 100 -q; echo pp1400_rc=$?; ethstat eth0 | grep -E 'xsk_|xdp_drop'")
    rs, rc = accio.run_pair(server, client, pkgs=PKGS, add=ADD, timeout=TIMEOUT)
    out = rc.output
    assert rc.rc == 0, out + rc.console[-2000:]
    assert "pp64_rc=0" in out and "pp1400_rc=0" in out, out
    assert "size=64 datagrams=300 bad=0" in out and "size=1400 datagrams=100 bad=0" in out, out
    assert 0 < float(kv(out)["rtt_p50_us"]) < 1e6, out
    # zero copy: the echoes arrived in DPDK's buffers, the requests left
    # from them (and the ARP exchanges, and the warm-up datagrams)
    xsk_rx = int(re.search(r"xsk_rx\D+(\d+)", out).group(1))
    xsk_tx = int(re.search(r"xsk_tx\D+(\d+)", out).group(1))
    assert xsk_rx >= 400 and xsk_tx >= 400, out


@pytest.mark.slow
def test_dispatcher_hands_datagrams_to_four_worker_processes():
    """The multiplexing design for DPDK: one dispatcher process owns the
    port and hands datagrams round-robin to 4 worker processes (DPDK
    multi-process: shared hugepage memory, one rte_ring a worker, one back);
    the workers turn them into echoes. The client SoC checks every byte of
    400 datagrams; each worker echoed its quarter."""
    run_dispatcher(PREP, "dpdk_dispatch", EAL.replace("--in-memory ", ""), "--no-pci",
                   PKGS, ADD, TIMEOUT)


def test_dpdk_bad_input_gives_clear_errors():
    """A port on a missing interface and an EAL without hugepages end with
    a message that names the problem and exit status 2, nothing hangs."""
    client = ("mkdir -p /sys/fs/bpf /var/run && mount -t bpf bpf /sys/fs/bpf; "
              "dpdk_pingpong -l 1 --no-pci --in-memory -- -s 10.0.2.2 -l 10.0.2.15; "
              "echo nohuge_rc=$?; "
              "mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages && "
              "echo 32 > /proc/sys/vm/nr_hugepages; "
              f"dpdk_pingpong -l 1 {EAL.replace('iface=eth0', 'iface=eth9')} -- "
              "-s 10.0.2.2 -l 10.0.2.15; echo noif_rc=$?; "
              "dpdk_pingpong -l 1 --no-pci --in-memory -- -s 10.0.2.2 -l 10.0.2.15; "
              "echo noport_rc=$?")
    r = accio.run(client, pkgs=PKGS, add=ADD[:1], timeout=TIMEOUT)
    out = r.output
    assert r.rc == 0, out
    assert "nohuge_rc=2" in out and "noif_rc=2" in out and "noport_rc=2" in out, out
    assert re.search(r"hugepage", out, re.I), out
    assert "eth9" in out, out
    assert "no ethdev port" in out, out
