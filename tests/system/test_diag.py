"""A guest command that runs past its limit leaves the evidence behind: the
harts' pcs, the uncore's rows and ready queues, the guest's tasks and row
fds, the kernel's blocked-task dump, and the whole console in a log file."""
import os
import re

import pytest

import accio

PRELOAD = "LD_PRELOAD=/usr/lib/libaccio.so"
# the NIC's statistics registers in a diagnosis, read from the stopped machine
NIC_RE = r"^-- NIC statistics and timing registers \(QEMU\)\n(.*)$"


def test_timeout_dumps_diagnostics():
    # An accelerated server with no client sleeps in ACCIO_IOC_WAIT forever.
    with pytest.raises(accio.AccioError) as e:
        accio.run(f"{PRELOAD} udp_echo -p 7000 -m block", timeout=20)
    msg = str(e.value)
    assert "guest did not finish within 20 s" in msg
    log = re.search(r"\(log: (\S+)\)", msg).group(1)
    text = open(log).read()
    # kernel boot messages are kept in full, before the script's output
    assert "Linux version 6.1" in text and text.index("Linux version") < text.index("@@ACCIO-BEGIN@@")
    # QEMU: every hart's pc; the row of the sleeping reader, armed (RX
    # suspended, interrupt on) with an empty ring; four harts' queues
    harts = re.findall(r"^hart (\d): pc 0x[0-9a-f]+ .*; scause ", msg, re.M)
    assert harts == ["0", "1", "2", "3"], msg
    assert len(re.findall(r"^hart \d accel=\S+ wake=\S+ wake_count=\d+ rq count=\d+:", msg,
                          re.M)) == 4, msg
    nic_line = re.search(NIC_RE, msg, re.M)
    assert nic_line and re.match(r"all 0$|[a-z_]+=\d+", nic_line.group(1)), msg
    row = re.search(r"^row (\d+) state=\S+ accel rx-susp intr asid=(\d+) .* rx w=(\d+) r=(\d+) ",
                    msg, re.M)
    assert row and row.group(3) == row.group(4) and int(row.group(2)) > 0, msg
    # the guest: accio-diag names the sleeper, its row fd, and the kernel's
    # blocked-task dump; the BREAK + sysrq path answers as well
    diag = text[text.index("@@ACCIO-DIAG-BEGIN@@"):text.index("@@ACCIO-DIAG-END@@")]
    assert re.search(r"^\d+ S \(sleeping\) accio_row_wait udp_echo -p 7000", diag, re.M), diag
    assert re.search(rf"^\d+ \d+ anon_inode:\[accio-row\] .*row:\s+{row.group(1)}\b", diag,
                     re.M), diag
    assert "sysrq: Show Blocked State" in diag
    # and the network's counters: interfaces, IP and UDP
    assert re.search(r"^\s*eth0:\s*\d+", diag, re.M) and re.search(r"^Udp: \d+", diag, re.M), diag
    assert "sysrq: Show State" in text[text.index("@@ACCIO-DIAG-END@@"):]


def nic(text):
    """The NIC registers of a diagnosis (a dict)."""
    line = re.search(NIC_RE, text, re.M).group(1)
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


def test_a_pair_that_hangs_dumps_both_socs():
    # The client's round trips go through, then it waits for ever: the
    # error carries the client SoC's diagnosis and the server SoC's, which
    # ran on. The client's NIC counted its frames both ways (its kernel's
    # socket); the server's sent the echoes (its engine took the requests
    # for udp_echo's row, which the NIC's own receive counters do not see).
    client = ("for i in $(seq 100); do udp_pingpong -s 10.0.3.1 -p 7000 -n 1 -t 100 -q "
              "> /dev/null 2>&1 && break; done; udp_pingpong -s 10.0.3.1 -p 7000 -n 20 -q; "
              "sleep 1000")
    with pytest.raises(accio.AccioError) as e:
        accio.run_pair(f"{PRELOAD} udp_echo -p 7000", client, timeout=60)
    msg = str(e.value)
    assert "guest did not finish within 60 s" in msg, msg
    assert msg.count("-- the server SoC (log: ") == 1, msg
    mine, theirs = msg.split("-- the server SoC (log: ")
    c, s = nic(mine), nic(theirs)
    assert c["tx_frames"] >= 20 and c["rx_frames"] >= 20 and s["tx_frames"] >= 20, (c, s)
    assert "reason: its client SoC did not finish" in theirs, theirs
    # the server's row of udp_echo, and its log with the guest's side
    assert re.search(r"^row \d+ state=\S+ accel .* rx w=(\d+) r=\1 ", theirs, re.M), theirs
    log = open(re.match(r"(\S+)\)", theirs).group(1)).read()
    assert "@@ACCIO-DIAG-BEGIN@@ host" in log and "udp_echo -p 7000" in log, log[-3000:]


def test_guest_side_timeout_dumps_before_killing():
    # accio-timeout: the command still running at its limit is reported
    # (accio-diag) and killed; exit status 124 like timeout(1).
    r = accio.run(f"accio-timeout 3 env {PRELOAD} udp_echo -p 7000 -m block; echo rc=$?;"
                  "accio-timeout 5 true; echo rc_fast=$?", timeout=120)
    assert r.rc == 0, r.output
    assert "@@ACCIO-DIAG-BEGIN@@ accio-timeout: " in r.output
    assert "rc=124\n" in r.output and "rc_fast=0\n" in r.output
    assert os.path.exists(os.path.join(accio.log_dir(), "last-run.log"))
