"""Two SoCs whose virtual clocks run in lockstep (the NIC model's lockstep
wire, accio_wire.c) and the capture of each NIC's wire in virtual time:
the pair repeats exactly, frames cross the wire in its latency, and the
client's turnaround comes from the capture alone (eval/wirecap.py)."""
import os
import re
import subprocess

import accio
from conftest import ROOT

import sys
sys.path.insert(0, os.path.join(ROOT, "eval"))
import wirecap  # noqa: E402

TIMEOUT = 400
LATENCY = 20000
PRELOAD = "LD_PRELOAD=/usr/lib/libaccio.so"
SERVER = f"udp_echo -p 7000 & {PRELOAD} udp_echo -p 7001; wait"
# both SoCs boot together: wait until the server answers, then one marked
# section per contender (the marker datagram goes to the discard port)
CLIENT = ("for i in $(seq 100); do udp_pingpong -s 10.0.3.1 -p 7000 -n 1 -t 100 -q "
          ">/dev/null 2>&1 && break; done; echo waited=$i;"
          "echo @@linux@@ | nc -u -w 1 10.0.3.1 9;"
          "udp_pingpong -H -s 10.0.3.1 -p 7000 -n 200 -q | grep -E '^rtt_p50_us=|bad=';"
          "echo @@accio@@ | nc -u -w 1 10.0.3.1 9;"
          f"{PRELOAD} udp_pingpong -H -s 10.0.3.1 -p 7001 -n 200 -q | grep -E '^rtt_p50_us=|bad=';"
          "grep '^cpu ' /proc/stat")
SERVER_MAC = bytes.fromhex("525400acc101")
CLIENT_MAC = bytes.fromhex("525400acc102")


def test_two_socs_in_lockstep_repeat_exactly(tmp_path):
    """The same pair twice: the client's output (RTTs, the guest's CPU
    times) and both NICs' captures are byte for byte the same. Every frame
    the client sent reaches the server's wire exactly the latency later,
    unchanged, and back; the capture gives each contender's turnaround:
    200 round trips and 10 warm-up ones, 209 turnarounds, Accio's shorter
    than Linux's."""
    runs = []
    for k in (1, 2):
        d = tmp_path / f"run{k}"
        d.mkdir()
        rs, rc = accio.run_pair(SERVER, CLIENT, timeout=TIMEOUT, lockstep=LATENCY,
                                pcap_dir=str(d))
        assert rc.rc == 0, rc.output + rc.console[-3000:]
        assert rc.output.count(" bad=0") == 2, rc.output
        runs.append((rc.output, (d / "client.pcap").read_bytes(),
                     (d / "server.pcap").read_bytes()))
    assert runs[0][0] == runs[1][0], (runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1] and runs[0][2] == runs[1][2]

    cli = wirecap.read_pcap(str(tmp_path / "run1" / "client.pcap"))
    srv = wirecap.read_pcap(str(tmp_path / "run1" / "server.pcap"))
    # what crossed the wire, each way, in exactly the wire's latency
    at_server = {(t, f) for t, f, _ in srv if f[0:6] in (SERVER_MAC, b"\xff" * 6)
                 or f[6:12] == CLIENT_MAC}
    sent = [(t, f) for t, f, _ in cli if f[6:12] == CLIENT_MAC]
    assert len(sent) >= 420, len(sent)
    missing = [(t, f[:16].hex()) for t, f in sent if (t + LATENCY, f) not in at_server]
    assert not missing, missing[:5]
    # (once the client's QEMU has ended, the server runs on alone)
    at_client = {(t, f) for t, f, _ in cli}
    end = max(t for t, _ in at_client)
    back = [(t, f) for t, f, _ in srv if f[6:12] == SERVER_MAC and t + LATENCY <= end]
    assert len(back) >= 420, len(back)
    missing = [(t, f[:16].hex()) for t, f in back if (t + LATENCY, f) not in at_client]
    assert not missing, missing[:5]

    turn = wirecap.sections(cli, CLIENT_MAC)
    assert sorted(turn) == ["accio", "linux"], turn.keys()
    linux, acc = wirecap.summary(turn["linux"]["turn"]), wirecap.summary(turn["accio"]["turn"])
    assert linux["n"] == acc["n"] == 209, (linux, acc)
    assert 0 < acc["p50"] < linux["p50"], (linux, acc)
    # NIC to NIC: two latencies and the server's time; below the program's RTT
    for name in ("linux", "accio"):
        hw = wirecap.summary(turn[name]["rtt"])
        assert hw["n"] == 210 and hw["p50"] * 1000 > 2 * LATENCY, (name, hw)
    sw = [float(x) for x in re.findall(r"^rtt_p50_us=([\d.]+)$", runs[0][0], re.M)]
    assert len(sw) == 2 and all(
        wirecap.summary(turn[n]["rtt"])["p50"] < v for n, v in zip(("linux", "accio"), sw)), sw
    # the server's capture has the same round trips from its side
    assert len(wirecap.sections(srv, SERVER_MAC)) == 2


def qemu_start(wire, icount=4):
    cmd = accio.qemu_cmdline(icount=icount, wire=wire)
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_lockstep_wire_refusals(tmp_path):
    """A lockstep wire without -icount, two ends that disagree on the
    wire's latency, and a bad shared barrier (lockstep-shm) stop QEMU at
    start-up with a clear message; the tool refuses a lockstep wire without
    --icount before starting anything."""
    path = str(tmp_path / "wire")
    cmd = accio.qemu_cmdline(icount=4, wire=f"lockstep:listen:{LATENCY}:{path}")
    i = cmd.index("-icount")
    no_icount = cmd[:i] + cmd[i + 2:]
    out = subprocess.run(no_icount, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode != 0 and "lockstep wire needs -icount" in out.stderr, out.stderr

    listener = qemu_start(f"lockstep:listen:{LATENCY}:{path}")
    connector = qemu_start(f"lockstep:connect:{LATENCY + 1000}:{path}")
    try:
        a, _ = listener.communicate(timeout=120)
        b, _ = connector.communicate(timeout=120)
    finally:
        listener.kill()
        connector.kill()
    assert listener.returncode != 0 and connector.returncode != 0
    assert f"the peer's wire latency is {LATENCY + 1000} ns, this one's {LATENCY} ns" in a, a
    assert f"the peer's wire latency is {LATENCY} ns, this one's {LATENCY + 1000} ns" in b, b

    try:
        accio.qemu_cmdline(wire=f"lockstep:listen:{LATENCY}:{path}")
        raise AssertionError("a lockstep wire without icount was accepted")
    except accio.AccioError as e:
        assert "needs --icount" in str(e)

    # the barrier shared with accio cluster's hub: a bad place, a missing
    # file and a file that is not a barrier stop QEMU before it meets a peer
    junk = tmp_path / "junk"
    junk.write_bytes(b"\0" * 4096)
    for shm, message in (("x", "lockstep-shm must be INDEX:PATH, not 'x'"),
                         (f"0:{tmp_path / 'none'}", "lockstep-shm: cannot open"),
                         (f"0:{junk}", f"{junk} is not a barrier with a place 0")):
        cmd = accio.qemu_cmdline(icount=4, wire=f"lockstep:connect:{LATENCY}:{path}")
        out = subprocess.run(cmd + ["-global", f"accio-nic.lockstep-shm={shm}"],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=60)
        assert out.returncode != 0 and message in out.stderr, (shm, out.stderr)
