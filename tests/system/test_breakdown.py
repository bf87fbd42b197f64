"""eval/breakdown.py: the per-stage instruction breakdown of a round trip
(QEMU TCG plugin eval/prof/accio_prof.c) names the work of each path."""
import os
import subprocess
import sys

import pytest
from conftest import run_breakdown

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_breakdown_attributes_each_path_to_its_stages(tmp_path):
    """Against the wire peer (virtual time): how long a reply takes does not
    depend on the host, so every accelerated receive really waits - the
    blocking one in the driver, the spinning one in a busy-wait the counter
    skips. (Against the host's echo server a loaded host makes the guest
    slow in real time, and replies are then often in the ring before the
    receive starts: no wait at all.)"""
    png = tmp_path / "b.png"
    res = run_breakdown(tmp_path, "--count", "40", "--modes", "linux,accio,spin",
                        "--peer", "wire:20000", "--plot", str(png))["results"]
    for mode, m in res.items():
        # every measured round trip was a window, and all of it was named
        assert m["windows"] == 40, mode
        total = m["instructions_per_round_trip"]
        assert total == sum(m["stages"].values()) and total > 0
        # the app's own code ran in every window
        assert m["stages"]["app"] > 0, mode
    linux, accio, spin = res["linux"]["stages"], res["accio"]["stages"], res["spin"]["stages"]
    # Linux sockets: the kernel's socket layer and UDP/IP, nothing of libaccio
    assert linux["socket layer"] > 100 and linux["UDP/IP"] > 100
    assert linux["libaccio send"] == 0 and linux["Accio driver"] == 0
    # Accio: libaccio's send and receive, the ICT driver for the waits,
    # uncached accesses to the uncore, and no socket layer on its path
    assert accio["libaccio send"] > 0 and accio["libaccio receive"] > 0
    assert accio["Accio driver"] > 0
    assert accio["socket layer"] == 0, accio["socket layer"]
    assert any(k.startswith("uncore ") for k in res["accio"]["mmio"])
    # spinning: the busy-wait is not counted, so it costs less than blocking
    # and makes almost no system calls
    assert spin["syscall/trap entry+exit"] < 50
    assert res["spin"]["instructions_per_round_trip"] < res["accio"]["instructions_per_round_trip"]
    assert res["spin"]["busy_waits_skipped"] > 0
    assert png.stat().st_size > 10000


def test_breakdown_against_the_host_echo_names_the_accelerated_path(tmp_path):
    """The default peer, the host's echo server in real time: whatever the
    host's load, the round trips are windows and go through libaccio. One
    nonblocking look at the kernel socket is by design: the first receive
    that finds the ring empty reads datagrams that reached the socket
    before its row existed (libaccio/README.md); in real time that receive
    may fall among the measured ones (one such look: about 330
    instructions, 8 per round trip of 40)."""
    accio = run_breakdown(tmp_path, "--count", "40", "--modes", "accio")["results"]["accio"]
    assert accio["windows"] == 40
    assert accio["stages"]["libaccio send"] > 0 and accio["stages"]["libaccio receive"] > 0
    assert accio["stages"]["socket layer"] * 40 < 500, accio["stages"]["socket layer"]


@pytest.mark.slow
def test_breakdown_against_the_wire_peer_repeats_exactly(tmp_path):
    """--peer wire:NS: nothing on the wire runs in real time, so two runs
    count the same instructions, and a waiting hart meets no timer tick."""
    res = [run_breakdown(tmp_path, "--count", "40", "--modes", "linux,accio",
                         "--peer", "wire:20000") for _ in range(2)]
    assert res[0]["peer"] == "wire:20000"
    assert res[0]["results"] == res[1]["results"]
    accio = res[0]["results"]["accio"]
    assert accio["windows"] == 40
    # every receive waited for the peer's 20 us: the driver's wait ran, and
    # the halted hart met no tick on the way
    assert accio["stages"]["Accio driver"] > 100
    assert accio["stages"]["timers+tick"] < 300  # 900 against the host in real time
    # the wait is accio_wait(2): a descriptor lookup, not the ioctl's
    # dispatch (about 150 instructions)
    assert accio["stages"]["VFS (syscall dispatch)"] < 120
    linux = res[0]["results"]["linux"]["stages"]
    assert linux["UDP/IP"] > 100


def test_the_floor_of_a_round_trip_is_the_ring_work_alone(tmp_path):
    """Mode raw (udp_pingpong -R): the program moves its datagrams through
    the row with loads and stores of its own - no library, no system call.
    Its round trip is the minimal work that spinning through libaccio is
    compared with: far fewer instructions, the same three device stores
    (TX write pointer, doorbell, RX read pointer), and every reply checked."""
    res = run_breakdown(tmp_path, "--count", "40", "--modes", "spin,raw",
                        "--peer", "wire:20000")["results"]
    raw, spin = res["raw"], res["spin"]
    assert raw["windows"] == 40 and raw["busy_waits_skipped"] > 0
    assert raw["stages"]["libaccio send"] == 0 and raw["stages"]["libaccio receive"] == 0
    assert raw["stages"]["syscall/trap entry+exit"] < 5
    assert 40 < raw["stages"]["app"] < 200, raw["stages"]
    assert raw["instructions_per_round_trip"] * 2 < spin["instructions_per_round_trip"]
    stores = sum(st for ld, st in raw["mmio"].values())
    assert stores == 3, raw["mmio"]
    assert float(raw["measured"]["proc_p50_us"]) < float(spin["measured"]["proc_p50_us"])


def test_breakdown_refuses_a_bad_peer():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "eval", "breakdown.py"),
                        "--peer", "wire:soon"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--peer: host, wire or wire:NS" in r.stderr


def test_multi_subtracts_what_only_the_short_run_reached():
    """--multi subtracts the short run's counts from the full run's address
    by address; an address only the short run reached is taken off too."""
    sys.path.insert(0, os.path.join(ROOT, "eval"))
    import breakdown
    short = "W 1 1 2 0\nS 1 100 50\nI 10 5 0\nI 20 7 1\n"
    full = "W 1 1 2 0\nS 1 400 90\nI 10 20 0\nI 30 9 2\n"
    text, span = breakdown.subtract(short, full, 6)
    lines = sorted(text.splitlines()[1:])
    assert lines == ["I 10 15 0", "I 20 -7 -1", "I 30 9 2"], lines
    assert span == [300, 40]


def test_multi_counts_the_round_trips_not_the_clients_ends(tmp_path):
    """4 clients under udp_multi -W, two runs subtracted: the instructions
    left are those of the round trips, so that at the round trips' own rate
    the harts cannot have run them faster than an instruction per 16 ns.
    The clients' ends (a sort that grows faster than the round trips,
    their prints at addresses that differ from run to run) counted here
    before: 9,448 instructions a round trip at 34,580 a second, 1.3 times
    what four harts can run."""
    m = run_breakdown(tmp_path, "--multi", "4", "--count", "160",
                      "--modes", "accio")["results"]["accio"]
    per_rt, rate = m["instructions_per_round_trip"], m["multi"]["round_trips_per_s"]
    assert per_rt * rate <= 4 * 62.5e6 * 1.05, (per_rt, rate)
    # most of it is the clients' round trips, user and kernel both
    assert m["by_privilege"]["user"] > 500 and m["by_privilege"]["kernel"] > 500, m
    assert m["multi"]["row_installs_per_round_trip"] == 0
