import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


def verbs_unavailable():
    """Why the image has no verbs provider of ICT rows (libaccio/verbs), or
    None: no Debian layer, or the provider could not be built against the
    suite's libibverbs (build/verbs-unavailable says why)."""
    why = debian_unavailable()
    if why:
        return why
    path = os.path.join(ROOT, "build", "verbs-unavailable")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return "no verbs provider in the image: " + " ".join(f.read().split())[:400]
