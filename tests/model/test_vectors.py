"""The uncore's C model replays every test vector (hardware/vectors/)."""
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VEC = os.path.join(ROOT, "hardware", "vectors")
VECRUN = os.path.join(ROOT, "build", "model", "vecrun")


def build():
    subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "hardware", "model")], check=True)


def test_vectors_are_current():
    r = subprocess.run([sys.executable, os.path.join(VEC, "gen_vectors.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_model_replays_every_vector():
    build()
    files = sorted(glob.glob(os.path.join(VEC, "*.vec")))
    assert len(files) >= 7
    r = subprocess.run([VECRUN] + files, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(files)} passed, 0 failed" in r.stdout


def test_replayer_notices_a_wrong_expectation(tmp_path):
    # Flip one expected frame byte and one expected register value: both must fail.
    build()
    src = open(os.path.join(VEC, "tx_engine.vec")).read().split("\n")
    i = next(n for n, l in enumerate(src) if l.startswith("tx "))
    j = next(n for n, l in enumerate(src) if l.startswith("read ") and "TX" not in l)
    tx = src[i].split()
    tx[1] = tx[1][:-2] + ("00" if tx[1][-2:] != "00" else "01")
    src[i] = " ".join(tx)
    rd = src[j].split()
    rd[2] = hex(int(rd[2], 16) ^ 1)
    src[j] = " ".join(rd)
    bad = tmp_path / "bad.vec"
    bad.write_text("\n".join(src))
    r = subprocess.run([VECRUN, str(bad)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "tx: got" in r.stderr and "read: got" in r.stderr
    assert "0 passed, 1 failed" in r.stdout
