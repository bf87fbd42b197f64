"""QEMU's patches (hardware/qemu/patches) hook the Accio devices into QEMU;
the devices themselves live in hardware/qemu/accio and the build copies
them into QEMU's tree (scripts/build-qemu.sh). A patch that carried those
files would hold a second, stale copy of them."""
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

COPIED = ("hw/accio/", "include/hw/accio/")


def test_no_patch_carries_the_device_sources():
    patches = sorted(glob.glob(os.path.join(ROOT, "hardware", "qemu", "patches", "*.patch")))
    assert patches
    for p in patches:
        with open(p, errors="replace") as f:
            paths = re.findall(r"^diff --git a/(\S+) b/", f.read(), re.M)
        assert paths, p
        carried = [x for x in paths if x.startswith(COPIED)]
        assert not carried, (os.path.basename(p), carried)
