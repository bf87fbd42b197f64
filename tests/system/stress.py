#!/usr/bin/env python3
"""Repeat system tests to catch intermittent failures, keeping the evidence.

    python3 tests/system/stress.py -n 30                 # accelerated-socket tests
    python3 tests/system/stress.py -n 30 --load          # with every host core busy
    python3 tests/system/stress.py -n 10 -k rows_are_freed tests/system/test_accio.py
    python3 tests/system/stress.py --boots 600 -j 3      # boots only, 3 SoCs at once

(`make stress-system N=30 [LOAD=1] [K=pattern]`.) Each iteration runs pytest
with its own log directory (ACCIO_LOG_DIR, ACCIO_KEEP_LOGS=1): the whole guest
console of every run, kernel boot messages included, and on a timeout the
host's diagnostics (harts' pcs, the uncore's rows and ready queues, the
guest's accio-diag, sysrq dumps). An iteration that passes leaves only its
line in summary.txt; one that fails keeps its folder (pytest.log holds the
host-side output). Exit status: 0 when every iteration passed.

--boots N boots the SoC N times (J at a time, so that the host is loaded by
the SoCs themselves) and runs a short command that needs every hart online;
a boot that does not finish within 60 s is a failure, kept with its
diagnostics (`make stress-boot N=600 J=3`).
"""
import argparse
import multiprocessing
import threading
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def burn():
    while True:
        pass


def boots(a, run_dir, note):
    """Boot the SoC a.boots times, a.jobs at once; count the ones that hang."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    os.environ["ACCIO_LOG_DIR"] = run_dir
    import accio
    lock = threading.Lock()
    state = {"next": 0, "ok": 0, "fail": 0, "firmware": set()}
    check = "test $(grep -c ^processor /proc/cpuinfo) = 4 && echo harts=4"

    def worker():
        while True:
            with lock:
                if state["next"] >= a.boots:
                    return
                state["next"] += 1
                n = state["next"]
            try:
                r = accio.run(check, timeout=60)
                fw = re.search(r"OpenSBI v(\S+)", r.console)
                with lock:
                    state["firmware"].add(fw.group(1) if fw else "?")
                if r.rc != 0 or "harts=4" not in r.output:
                    raise accio.AccioError(f"rc={r.rc}: {r.output[-500:]}")
                with lock:
                    state["ok"] += 1
            except accio.AccioError as e:
                with lock:
                    state["fail"] += 1
                first = str(e).splitlines()
                note(f"boot {n} FAIL: {first[0] if first else e}")
            if n % 50 == 0:
                note(f"boots {n}: {state['ok']} ok, {state['fail']} failed")

    threads = [threading.Thread(target=worker) for _ in range(a.jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    note(f"# boots: {state['ok']} ok, {state['fail']} failed, {a.jobs} at a time, "
         f"firmware OpenSBI {', '.join(sorted(state['firmware']))}")
    return state["fail"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=30, help="iterations (default 30)")
    ap.add_argument("--load", action="store_true",
                    help="keep every host core busy meanwhile (one spinning process per core)")
    ap.add_argument("-k", default="", help="pytest -k expression")
    ap.add_argument("-x", "--stop", action="store_true", help="stop at the first failure")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "stress"),
                    help="where the runs' folders go (default build/stress)")
    ap.add_argument("--boots", type=int, default=0, metavar="N",
                    help="instead of tests: boot N times, checking every hart comes up")
    ap.add_argument("-j", "--jobs", type=int, default=3,
                    help="with --boots: SoCs booting at once (default 3)")
    ap.add_argument("tests", nargs="*", default=["tests/system/test_accio.py"])
    a = ap.parse_args()

    run_dir = os.path.join(a.out, time.strftime("%Y%m%d-%H%M%S")
                           + ("-boots" if a.boots else "-load" if a.load else "-idle"))
    os.makedirs(run_dir)
    summary = open(os.path.join(run_dir, "summary.txt"), "w")

    def note(line):
        print(line, flush=True)
        summary.write(line + "\n")
        summary.flush()

    if a.boots:
        t0 = time.monotonic()
        failed = boots(a, run_dir, note)
        note(f"# {time.monotonic() - t0:.0f} s; summary: {os.path.join(run_dir, 'summary.txt')}")
        return 1 if failed else 0

    burners = []
    if a.load:
        for _ in range(os.cpu_count() or 2):
            p = multiprocessing.Process(target=burn, daemon=True)
            p.start()
            burners.append(p)
    note(f"# {a.n} iterations of {' '.join(a.tests)}"
         + (f" -k {a.k!r}" if a.k else "")
         + (f", host load: {len(burners)} spinning processes" if burners else ", idle host"))
    failed = 0
    t_all = time.monotonic()
    try:
        for i in range(1, a.n + 1):
            it = os.path.join(run_dir, f"iter-{i:03d}")
            os.makedirs(it)
            env = dict(os.environ, ACCIO_LOG_DIR=it, ACCIO_KEEP_LOGS="1")
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   *a.tests] + (["-k", a.k] if a.k else [])
            t0 = time.monotonic()
            with open(os.path.join(it, "pytest.log"), "w") as out:
                rc = subprocess.call(cmd, cwd=ROOT, env=env, stdout=out,
                                     stderr=subprocess.STDOUT)
            dt = time.monotonic() - t0
            tail = open(os.path.join(it, "pytest.log")).read().strip().splitlines()
            last = tail[-1] if tail else ""
            if rc == 0:
                shutil.rmtree(it)
                note(f"iter {i:3d} pass {dt:6.1f} s  {last}")
            else:
                failed += 1
                note(f"iter {i:3d} FAIL {dt:6.1f} s  {last}  (kept: {it})")
                if a.stop:
                    break
    finally:
        for p in burners:
            p.terminate()
    note(f"# {i - failed} passed, {failed} failed, {time.monotonic() - t_all:.0f} s; "
         f"summary: {os.path.join(run_dir, 'summary.txt')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
