"""The evaluation's pipeline in make test: one experiment of the quick
evaluation (python3 -m eval --quick --only latency, about a minute of one
host core) writes its results, plot and report section, its first command
repeats exactly and spreads over another guest seed, and its figures keep
the order the paper's do. The whole quick evaluation is test_eval.py's
(make test-long)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.long(1.5)
def test_one_experiment_runs_repeats_and_reports(tmp_path):
    r = subprocess.run([sys.executable, "-m", "eval", "--quick", "--allow-dirty", "--jobs", "1",
                        "--only", "latency", "--out", str(tmp_path)],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "experiment 1/1: latency" in r.stderr and "done in" in r.stderr, r.stderr[-2000:]
    res = json.load(open(tmp_path / "latency.json"))
    report = (tmp_path / "REPORT.md").read_text()
    assert (tmp_path / "latency.png").stat().st_size > 10000
    conf = res["configuration"]
    assert conf["quick"] and conf["icount_shift"] == 4 and conf["commit"]
    assert conf["qemu"].startswith("qemu-system-riscv64-") and conf["kernel"]
    assert json.load(open(tmp_path / "run.json"))["jobs"] == 1
    # the report: its section, the plot, paper against here, a missing
    # contender said so, the repeatability table
    assert "## 8.3 Processing latency" in report and "](./latency.png)" in report
    assert "| | paper | here | verdict |" in report and "holds (" in report
    assert "| rdma | - | missing:" in report
    assert "| latency | `echo:20000` | yes |" in report and "| NO |" not in report
    # the first command twice, the same bytes; and with another guest seed
    rep = res["repeatability"]
    assert rep["identical"] and rep["sha256"][0] == rep["sha256"][1], rep
    sp = rep["spread"]
    assert sp["seeds"] == [1, 2] and "error" not in sp, sp
    assert any("_p50_" in f["key"] for f in sp["figures"])
    assert all(f["min"] <= f["max"] and len(f["values"]) == 2 for f in sp["figures"])
    # every contender at every size, Accio below Linux sockets and below
    # Linux busy polling, the spinning client no slower than the blocking one
    for s in res["sizes"]:
        got = {x["contender"]: x for x in res["rows"] if x["size"] == s}
        assert {"linux", "accio", "accio-spin", "accio-auto"} | set(res["linux_variants"]) \
            <= set(got), (s, got.keys())
        assert got["accio-spin"]["proc_p50_us"] <= got["accio"]["proc_p50_us"] \
            < got["linux-busypoll"]["proc_p50_us"] < got["linux"]["proc_p50_us"], s
        assert all(x["proc_p50_us"] <= x["proc_p99_us"] for x in got.values())
        assert all(sorted(x["cdf_us"]) == x["cdf_us"] for x in got.values())


def test_the_evaluation_refuses_a_dirty_tree():
    """make eval-quick on a tree with uncommitted changes stops before it runs
    anything, and says how to run anyway (ALLOW_DIRTY=1)."""
    probe = os.path.join(ROOT, "eval", "uncommitted-probe.txt")
    with open(probe, "w") as f:
        f.write("not committed\n")
    try:
        r = subprocess.run(["make", "-s", "eval-quick"], cwd=ROOT, capture_output=True,
                           text=True, timeout=600)
    finally:
        os.unlink(probe)
    assert r.returncode != 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "uncommitted changes" in r.stderr and "eval/uncommitted-probe.txt" in r.stderr
    assert "ALLOW_DIRTY=1" in r.stderr and "experiment 1/" not in r.stderr


def test_unknown_experiment_is_refused():
    r = subprocess.run([sys.executable, "-m", "eval", "--only", "latency,warp"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown experiment warp" in r.stderr
