"""The kernel patch series is written from sources (scripts/kernel-series.py):
the drivers are files under kernel-patches/src, the changes to the kernel's
own files are hooks/*.diff, and series.toml orders them into patches. These
tests run without the kernel tree; checkpatch comes from Debian's
linux-source-6.1 tarball (or the build's unpacked tree)."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KP = os.path.join(ROOT, "kernel-patches")
TOOL = os.path.join(ROOT, "scripts", "kernel-series.py")
CACHE = os.environ.get("ACCIO_CACHE", os.path.expanduser("~/.cache/accio"))
TARBALL = "/usr/src/linux-source-6.1.tar.xz"


def series(*args, kp=KP):
    return subprocess.run([sys.executable, TOOL, "--dir", kp, *args],
                          capture_output=True, text=True)


def patches(kp=KP):
    d = os.path.join(kp, "series")
    return [os.path.join(d, p) for p in sorted(os.listdir(d))]


def src_files():
    """The files the series adds, as the tool lists them."""
    spec = importlib.util.spec_from_file_location("kernel_series", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool.src_files()


@pytest.fixture
def copy(tmp_path):
    kp = str(tmp_path / "kernel-patches")
    shutil.copytree(KP, kp)
    return kp


def test_the_checked_in_series_is_current():
    r = series("--check")
    assert r.returncode == 0, r.stderr


def test_a_driver_change_is_a_change_of_its_source(copy):
    """Edit the ICT driver's .c file: the series is stale, naming the patch
    that adds it, until it is written again; then that patch carries the edit
    and no other patch changed."""
    before = {os.path.basename(p): open(p).read() for p in patches(copy)}
    ict = os.path.join(copy, "src/drivers/net/ethernet/accio/accio_ict.c")
    with open(ict, "a") as f:
        f.write("/* a maintainer's edit */\n")
    r = series("--check", kp=copy)
    assert r.returncode == 1
    stale = re.findall(r"^\s+(\S+\.patch)$", r.stderr, re.M)
    assert len(stale) == 1 and "I-O-Connection-Table" in stale[0], r.stderr
    assert series(kp=copy).returncode == 0
    assert series("--check", kp=copy).returncode == 0
    after = {os.path.basename(p): open(p).read() for p in patches(copy)}
    assert set(after) == set(before)
    changed = [p for p in after if after[p] != before[p]]
    assert changed == stale
    assert "+/* a maintainer's edit */\n" in after[stale[0]]


def test_every_source_and_hook_is_in_exactly_one_patch(copy):
    """A file in a driver's folder joins that folder's patch; one elsewhere,
    or a hook no patch names, is refused."""
    with open(os.path.join(copy, "src/drivers/net/ethernet/accio/accio_new.c"), "w") as f:
        f.write("/* a new file of the driver */\n")
    r = series("--check", kp=copy)
    assert r.returncode == 1 and "I-O-Connection-Table" in r.stderr, r.stderr
    os.makedirs(os.path.join(copy, "src/drivers/misc"))
    with open(os.path.join(copy, "src/drivers/misc/stray.c"), "w") as f:
        f.write("/* in no patch */\n")
    r = series("--check", kp=copy)
    assert r.returncode == 1 and "stray.c is in no patch" in r.stderr, r.stderr
    os.remove(os.path.join(copy, "src/drivers/misc/stray.c"))
    shutil.copy(os.path.join(copy, "hooks/sched.diff"), os.path.join(copy, "hooks/twice.diff"))
    r = series("--check", kp=copy)
    assert r.returncode != 0 and "twice.diff is in no patch" in r.stderr


def test_the_series_adds_the_sources_byte_for_byte(tmp_path):
    """git apply of the series' new files, outside any repository, gives
    kernel-patches/src back exactly (the hooks need the kernel's files)."""
    env = dict(os.environ, GIT_CEILING_DIRECTORIES=str(tmp_path))
    out = tmp_path / "tree"
    out.mkdir()
    srcs = src_files()
    for p in patches():
        subprocess.run(["git", "apply", *[f"--include={f}" for f in srcs], p],
                       cwd=out, env=env, check=True)
    for f in srcs:
        assert (out / f).read_bytes() == open(os.path.join(KP, "src", f), "rb").read(), f


def test_hooks_change_only_the_kernels_own_files():
    """Every Accio file is a source; a hook is a few lines in a file the
    kernel has (a new file in a hook would be a driver hidden in a diff)."""
    total = 0
    for h in sorted(os.listdir(os.path.join(KP, "hooks"))):
        text = open(os.path.join(KP, "hooks", h)).read()
        assert "new file mode" not in text, h
        assert not re.search(r"(?m)^\+\+\+ b/.*accio", text), h
        total += sum(1 for l in text.splitlines() if l.startswith("+") and not l.startswith("+++"))
    assert total < 300, f"{total} lines of hooks: move code into a source file"


def test_the_generated_copies_follow_the_register_map():
    gen = os.path.join(ROOT, "hardware", "generated")
    assert open(os.path.join(KP, "src/include/uapi/linux/accio_contract.h")).read() == \
        open(os.path.join(gen, "accio_contract.h")).read()
    regs = open(os.path.join(KP, "src/drivers/net/ethernet/accio/accio_regs.h")).read()
    assert regs == open(os.path.join(gen, "accio_offsets.h")).read().replace(
        "ACCIO_OFFSETS_H", "ACCIO_REGS_H")
    uapi = open(os.path.join(KP, "src/include/uapi/linux/accio.h")).read()
    assert "#include <linux/accio_contract.h>" in uapi


def checkpatch():
    """scripts/checkpatch.pl of linux-source-6.1 and the files it reads."""
    tree = os.path.join(CACHE, "linux", "tree", "scripts", "checkpatch.pl")
    if os.path.exists(tree):
        return tree
    d = os.path.join(CACHE, "checkpatch-6.1")
    script = os.path.join(d, "scripts", "checkpatch.pl")
    if not os.path.exists(script):
        want = {f"linux-source-6.1/scripts/{n}" for n in
                ("checkpatch.pl", "spelling.txt", "const_structs.checkpatch")}
        tmp = d + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        with tarfile.open(TARBALL) as t:
            for m in t:
                if m.name in want:
                    m.name = m.name.split("/", 1)[1]
                    t.extract(m, tmp)
        os.replace(tmp, d)
    return script


def test_each_patch_is_checkpatch_strict_clean():
    """No error, warning or check, but the one checkpatch gives every patch
    that adds a file without touching MAINTAINERS (the last patch names
    them all)."""
    script = checkpatch()
    bad = []
    for p in patches():
        r = subprocess.run(["perl", script, "--strict", "--no-tree", "-q", "--color=never", p],
                           capture_output=True, text=True)
        msgs = re.findall(r"^(ERROR|WARNING|CHECK): (.*)$", r.stdout, re.M)
        bad += [f"{os.path.basename(p)}: {k}: {m}" for k, m in msgs
                if "does MAINTAINERS need updating" not in m]
    assert not bad, "\n".join(bad)
