"""The Rocket timing mode (hardware/timing/rocket_timing.c, QEMU patch 0013):
its stalls move virtual time, a Linux ping-pong runs in it, and its
microbenchmarks agree with the RTL SoC (make soc)."""
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "eval"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402
import bench_timing  # noqa: E402

pytestmark = pytest.mark.xdist_group("timing")


# a shorter run of the microbenchmarks than eval/bench_timing.py's: 128 KiB
# beyond L1 instead of 512
QUICK = ("MEM_LINES=2048",)


@pytest.fixture(scope="module")
def elf():
    return bench_timing.build_timing(True, QUICK)


def test_a_miss_beyond_l1_costs_the_modeled_cycles_and_devices_the_rtls(elf):
    plain = bench_timing.qemu(elf, "")
    for dram in (30, 90):
        t = bench_timing.qemu(elf, f"rocket:dram={dram}")
        # a load that misses L1 waits miss (14, the RTL's refill) + dram
        # cycles more than one that hits; every load of chase_mem misses
        extra = t["chase_mem"] - t["chase_l1"]
        assert abs(extra - (14 + dram)) <= 0.1 * (14 + dram), (dram, t)
        # within L1 a dependent load waits one cycle for its data
        assert t["chase_l1"] > plain["chase_l1"] + 0.8, (t, plain)
        # an uncached load costs the RTL's 12 cycles in a loop (plain
        # icount: the uncore's load-cycles, 15), and back-to-back uncached
        # stores wait for each other
        assert plain["load_io"] - 3.5 < t["load_io"] < plain["load_io"] - 1.5, (t, plain)
        assert t["store_io"] > plain["store_io"] + 8, (t, plain)
        assert t["div"] > plain["div"] + 50 and t["trap"] > plain["trap"] + 8, (t, plain)


def test_timing_mode_agrees_with_the_rtl_soc(elf):
    if not os.path.exists(os.path.join(bench_timing.SOC, "soc-sim1")):
        pytest.fail("build/soc/soc-sim1 missing: run make soc")
    rows = {c["bench"]: c for c in bench_timing.calibration(
        30, elf, bench_timing.build_timing(False, QUICK))}
    assert len(rows) == 11
    for name, row in rows.items():
        assert abs(row["error_pct"]) <= 10, row
    # plain icount is far off beyond L1: what the timing mode is for
    assert rows["chase_mem"]["icount_cycles"] < 0.2 * rows["chase_mem"]["rtl_cycles"], rows


def test_pingpong_in_timing_mode_slower_for_linux_than_accio(tmp_path):
    out = tmp_path / "timing.out"
    plain = bench_timing.pingpong("")
    r = accio.run(bench_timing.pingpong_cmd(), icount=4, wire="echo:20000", timeout=900,
                  timing=f"rocket:dram=30,out={out}")
    assert r.rc == 0, r.output[-3000:]
    got = {}
    for part in r.output.split("@")[1:]:
        name = part.split()[0]
        assert re.search(r"^size=64 datagrams=300 bad=0$", part, re.M), part[-2000:]
        got[name] = float(re.search(r"^proc_p50_us=([\d.]+)", part, re.M).group(1))
    # caches, memory and traps cost time: both paths are slower than
    # in plain icount, Linux's (more code, more lines, more traps) far more
    assert got["linux"] > 2 * plain["linux"], (got, plain)
    assert plain["accio"] < got["accio"] < got["linux"] / 10, (got, plain)
    assert got["linux"] / plain["linux"] > got["accio"] / plain["accio"], (got, plain)
    # the plugin saw every hart, stalled them, and the NIC's and uncore's
    # DMA invalidated lines
    harts = [dict(kv.split("=") for kv in line.split()[2:])
             for line in out.read_text().splitlines() if line.startswith("H ")]
    assert len(harts) == 4, out.read_text()
    assert all(int(h["stalled"]) > 0 and int(h["dmiss"]) > 0 for h in harts), harts
    assert sum(int(h["dma_invalidated"]) for h in harts) > 0, harts
