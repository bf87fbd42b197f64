import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# programs the tests put into the guest (accio.run(add=...)) at /opt/t
GUEST_PROGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guest")
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def debian_unavailable():
    """Why the image has no Debian layer (the archive could not be read when
    it was built), or None."""
    path = os.path.join(ROOT, "build", "debian-unavailable")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return "Debian's archive was unavailable when the image was built: " + \
            " ".join(f.read().split())[:400]


def part_unavailable(name, what):
    """Why an optional part of the build is missing, or None: no Debian
    layer, or build/NAME, which the image build writes when the part could
    not be built, prefixed with WHAT."""
    why = debian_unavailable()
    if why:
        return why
    path = os.path.join(ROOT, "build", name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return what + " ".join(f.read().split())[:400]


def verbs_unavailable():
    """Why the image has no verbs provider of ICT rows (libaccio/verbs), or
    None: no Debian layer, or the provider could not be built against the
    suite's libibverbs (build/verbs-unavailable says why)."""
    return part_unavailable("verbs-unavailable", "no verbs provider in the image: ")


def run_breakdown(tmp_path, *args):
    """eval/breakdown.py ARGS --json into tmp_path: the JSON it wrote, after
    checking that it succeeded."""
    import json
    import subprocess

    out = tmp_path / "breakdown.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "eval", "breakdown.py"), *args,
                        "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    with open(out) as f:
        return json.load(f)
