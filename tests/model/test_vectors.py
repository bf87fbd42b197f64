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


def test_state_dump_shows_ready_queues_and_rows(tmp_path):
    # Replay the ready-queue scenario up to the point where row 4's reader
    # sleeps and its data arrived, then dump: hart 2 holds the entry, its
    # wake-up is pending, and row 4 shows one record in its RX ring.
    build()
    src = open(os.path.join(VEC, "ready_queue.vec")).read().split("\n")
    i = next(n for n, l in enumerate(src) if l.startswith("irq 2 1"))
    vec = tmp_path / "dump.vec"
    vec.write_text("\n".join(src[:i + 1] + ["dump"]) + "\n")
    r = subprocess.run([VECRUN, str(vec)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    hart2 = next(l for l in r.stdout.splitlines() if l.startswith("hart 2 "))
    assert "wake=0x1" in hart2 and hart2.endswith("rq count=1: 4rx"), hart2
    row4 = next(l for l in r.stdout.splitlines() if l.startswith("row 4 "))
    assert " intr " in row4 and "rx-susp" not in row4 and "asid=7" in row4, row4
    # two 3-byte datagrams: 24-byte header + payload, padded to 8: 32 each
    assert "rx w=64 r=0 size=4096 pkts=2" in row4, row4
    rows = [l.split()[1] for l in r.stdout.splitlines() if l.startswith("row ")]
    assert rows == ["4", "6"], rows          # enabled rows only
