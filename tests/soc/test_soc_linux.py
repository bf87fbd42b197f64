"""Linux on the Rocket RTL SoC, restored from the snapshot of make soc-linux
(hardware/soc/soc_linux.py): one restore, one command line typed at its
shell. The normal path (ping through the RTL NIC), an accelerated
ping-pong through an ICT row of the RTL uncore, and the owner check of the
context registers that switch_mm() writes. (The boot is make soc-linux's;
the ping-pongs of eval/bench_soc_linux.py compare Linux sockets too.)"""
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "hardware", "soc"))
import soc_linux  # noqa: E402

# one restore for the module (minutes of simulation on one core): its tests
# stay on one worker, and start first (tests/conftest.py); make test-long
# runs them, after the boot of make soc-linux (cached, or an hour's boot)
pytestmark = [pytest.mark.xdist_group("soc-linux"), pytest.mark.long(7), pytest.mark.slow]

PRELOAD = "LD_PRELOAD=/usr/lib/libaccio.so ACCIO_STATS=1"
PEER = "10.0.2.2"   # the harness's echo peer: ARP, ICMP echo and UDP


def sections(out):
    """{name: (status, text)} of the output of section()-marked commands."""
    res = {}
    for name, body, status in re.findall(r"@@(\w+)@@\n(.*?)@@\1 rc=(\d+)@@", out, re.S):
        res[name] = (int(status), body)
    return res


def section(name, cmd):
    return f"echo @@{name}@@; {cmd}; echo @@{name} rc=$?@@"


def kv(text):
    """key=value pairs, several to a line ("size=64 datagrams=20 bad=0")."""
    return dict(re.findall(r"(?:^|\s)(\w+)=(\S+)", text))


@pytest.fixture(scope="module")
def booted():
    """The snapshot folder of the current inputs (make test-soc boots it
    first when it is not cached)."""
    _, d = soc_linux.inputs()
    if not os.path.exists(os.path.join(d, "snap")):
        pytest.fail(f"no booted SoC in {d}: run make soc-linux")
    return d


@pytest.fixture(scope="module")
def restored(booted):
    cmd = "; ".join([
        section("ping", f"ping -c 1 -W 1 {PEER}"),
        section("accio", f"env {PRELOAD} udp_pingpong -s {PEER} -p 7 -m 1024 -n 20 -w 2 -q"),
        section("isolate", f"accio_selftest isolate {PEER} 9")])
    status, out, cycles = soc_linux.run(cmd, max_cycles=200_000_000)
    return sections(out), out


def test_firmware_and_linux_boot_to_the_shell_on_the_rtl_soc(booted):
    # the cold boot's console (soc_linux.py boot): Debian's OpenSBI (generic
    # fw_jump) finds the harts, CLINT and console and hands over; Linux
    # reads the devicetree, finds the SBI, its ISA, the RTL NIC and the
    # uncore with its user alias and context registers, and runs the
    # image's init, which configures eth0 and starts the shell
    with open(os.path.join(booted, "boot.log")) as f:
        log = f.read()
    for line in ["OpenSBI v1.5", "Platform Name             : Accio Rocket SoC, 1 hart(s)",
                 "Platform Console Device   : uart8250",
                 "Platform Timer Device     : aclint-mtimer @ 10000000Hz",
                 "Domain0 Next Address      : 0x0000000080200000",
                 "Domain0 Next Arg1         : 0x0000000082200000",
                 "Boot HART Base ISA        : rv64imafdc",
                 "Linux version 6.1", "Machine model: Accio Rocket SoC, 1 hart(s)",
                 "SBI specification v2.0 detected", "riscv: base ISA extensions acdfim",
                 "node   0: [mem 0x0000000080200000-0x0000000083ffffff]",
                 "eth0: Accio NIC v1.1 at [mem 0x60300000-0x60300fff]",
                 "accio-uncore 60000000.accio: 16 rows, 1 harts, owners by context registers",
                 "eth0: link becomes ready", "Run /init as init process", soc_linux.READY]:
        assert line in log, (line, log[-3000:])
    assert "Kernel panic" not in log and "Oops" not in log


def test_ping_through_the_rtl_nic(restored):
    sec, out = restored
    rc, text = sec["ping"]
    assert rc == 0 and "1 packets transmitted, 1 packets received" in text, out


def test_accelerated_pingpong_through_an_ict_row(restored):
    sec, out = restored
    rc, text = sec["accio"]
    res = kv(text)
    assert rc == 0 and res["datagrams"] == "20" and res["bad"] == "0", text
    st = [dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", line))
          for line in re.findall(r"^accio: (fd=.*)$", text, re.M)]
    assert len(st) == 1, text
    # 2 warm-up and 20 measured round trips, every one through the row's
    # rings and the RTL engine; the owner check refused none of the owner's
    # accesses (CTX[hart] named its address space)
    s = st[0]
    assert s["tx_ring"] == 22 and s["tx_pkts"] == 22 and s["tx_kernel"] == 0, s
    assert s["rx_ring"] == 22 and s["rx_pkts"] == 22 and s["rx_kernel"] == 0, s
    assert s["prot_faults"] == 0 and s["rx_drops"] == 0, s
    # the NIC's stamps gave the processing time of every round trip
    assert res["hw_samples"] == "20" and float(res["proc_p50_us"]) > 0, text


def test_another_process_is_refused_by_the_owner_check(restored):
    # a child maps the row's page of the user alias through /dev/mem: its
    # loads read poison, its stores are dropped and counted, and the row
    # still echoes for its owner
    sec, out = restored
    rc, text = sec["isolate"]
    assert rc == 0, text
    for check in ("foreign-row", "prot-faults-counted", "no-forged-tx", "echo-after-forgery",
                  "owner-fast-path"):
        assert f"ok {check}" in text, text
