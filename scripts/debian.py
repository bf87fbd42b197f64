#!/usr/bin/env python3
"""Debian's riscv64 archive as a package source for the guest image.

    python3 scripts/debian.py layer -o build/debian.cpio [--pkg NAME]... [--list FILE]
        [--skip-root build/rootfs] [--minus-list FILE]
    python3 scripts/debian.py resolve NAME...     # what a package set pulls in
    python3 scripts/debian.py sysroot NAME...     # unpacked, to compile against

A private apt configuration (APT::Architecture riscv64, Debian 13 "trixie" -
or testing, "forky", while trixie's index on the mirror is inconsistent -
signed by the host's debian-archive-keyring) keeps its lists and downloads
under $ACCIO_CACHE/debian; the host's own apt state is never touched. The
.debs are cached by name and version (apt's file names), and a layer - the
unpacked packages as an uncompressed cpio (newc) archive - is cached under a
hash of the exact package versions and options, so a second build of the
same set copies one file.

A layer holds the packages at their Debian paths (glibc's loader and
libraries in /usr/lib/riscv64-linux-gnu, programs in /usr/bin, configuration
in /etc) plus the two links the musl image lacks: /lib/ld-linux-riscv64-lp64d.so.1
(the ELF interpreter of every riscv64 glibc program) and /lib/riscv64-linux-gnu.
Paths that already exist in the musl image (--skip-root) are left out, so
busybox, musl and our apps stay as they are; documentation, manuals and
translations are left out too. The kernel unpacks the archive over the
image's initramfs at boot (scripts/build-image.sh appends it).
"""
import argparse
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

CACHE = os.environ.get("ACCIO_CACHE") or os.path.expanduser("~/.cache/accio")
D = os.path.join(CACHE, "debian")
APT = os.path.join(D, "apt")
DEBS = os.path.join(D, "debs")
LAYERS = os.path.join(D, "layers")
# Debian 13 first. When a mirror serves an index that does not match its signed
# Release file (a mirror caught between two syncs - apt refuses the hash), the
# next suite, the current testing release, is used; it is signed by the same
# archive keys. A mirror's copy of testing may be older than its Valid-Until,
# so that date is not enforced for it (the signature still is).
# ACCIO_DEBIAN_SUITE=NAME uses one suite only.
SUITES = (("trixie", ""), ("forky", " check-valid-until=no"))
MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
LISTS_MAX_AGE = 7 * 24 * 3600          # refresh the package lists weekly
LAYER_VERSION = "1"                    # bump when the layout rules change
DROP = ("usr/share/doc/", "usr/share/man/", "usr/share/info/", "usr/share/locale/",
        "usr/share/lintian/", "usr/share/bug/")


class DebianError(Exception):
    pass


def log(msg):
    print(f"[debian] {msg}", file=sys.stderr, flush=True)


def apt_config():
    """Write the private apt configuration; returns the environment to run apt with."""
    for d in ("etc/apt/apt.conf.d", "etc/apt/preferences.d", "etc/apt/sources.list.d",
              "state/lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(APT, d), exist_ok=True)
    os.makedirs(os.path.join(DEBS, "partial"), exist_ok=True)
    status = os.path.join(APT, "status")
    if not os.path.exists(status):
        open(status, "w").close()           # nothing installed: resolve everything
    conf = os.path.join(APT, "apt.conf")
    with open(conf, "w") as f:
        f.write(f'''APT::Architecture "riscv64";
APT::Architectures {{ "riscv64"; }};
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Dir::Etc "{APT}/etc/apt";
Dir::Etc::Parts "{APT}/etc/apt/apt.conf.d";
Dir::Etc::Preferences "{APT}/etc/apt/preferences";
Dir::Etc::PreferencesParts "{APT}/etc/apt/preferences.d";
Dir::State "{APT}/state";
Dir::State::status "{status}";
Dir::Cache "{APT}/cache";
Dir::Cache::archives "{DEBS}";
Acquire::Languages "none";
Debug::NoLocking "true";
''')
    return dict(os.environ, APT_CONFIG=conf, LC_ALL="C")


def suites():
    pin = os.environ.get("ACCIO_DEBIAN_SUITE")
    if pin:
        return [(n, o) for n, o in SUITES if n == pin] or [(pin, "")]
    return list(SUITES)


def set_suite(name, opts):
    with open(os.path.join(APT, "etc/apt/sources.list"), "w") as f:
        f.write(f"deb [signed-by={KEYRING}{opts}] {MIRROR} {name} main\n")


def apt(env, *args, check=True):
    r = subprocess.run(["apt-get", "-q", *args], env=env, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise DebianError(f"apt-get {' '.join(args)}: {(r.stderr or r.stdout).strip()[-2000:]}")
    return r


class ArchiveUnavailable(DebianError):
    """The archive's index could not be read (a mirror in the middle of a sync,
    no network) and no earlier copy of it is here."""


def update(env, force=False):
    """Read the archive's index (weekly); returns the suite the lists are of."""
    stamp = os.path.join(APT, "updated")
    lists = [f for f in os.listdir(os.path.join(APT, "state/lists")) if f.endswith("_Packages")]
    last = open(stamp).read().strip() if os.path.exists(stamp) else ""
    cands = suites()
    known = [c for c in cands if c[0] == last]
    fresh = lists and known and time.time() - os.path.getmtime(stamp) < LISTS_MAX_AGE
    if fresh and not force:
        set_suite(*known[0])
        return last
    errors = []
    for name, opts in cands:
        set_suite(name, opts)
        log(f"apt-get update ({name}, riscv64)")
        for attempt, pause in enumerate((10, 0)):
            r = apt(env, "update", check=False)
            if r.returncode == 0:
                with open(stamp, "w") as f:
                    f.write(name + "\n")
                if name != cands[0][0]:
                    log(f"using Debian {name}: the index of "
                        f"{', '.join(n for n, _ in cands[:cands.index((name, opts))])} "
                        "could not be read")
                return name
            err = (r.stderr or r.stdout).strip()
            short = [l for l in err.splitlines() if l.startswith("E:")][:2]
            log(f"apt-get update of {name} failed (try {attempt + 1} of 2): "
                f"{' / '.join(short)[:300]}")
            if pause:
                time.sleep(pause)
        errors.append(f"{name}: {err[-1200:]}")
    if lists and known:
        set_suite(*known[0])
        log(f"using the package lists of the last successful update ({last})")
        return last
    raise ArchiveUnavailable("the Debian archive's package index cannot be read now "
                             "(and none was read before):\n" + "\n".join(errors))


def dpdk_abi(env):
    """The ABI number in the names of the suite's DPDK library packages
    (librte-eal26 in forky, librte-eal25 in trixie)."""
    out = subprocess.run(["apt-cache", "pkgnames", "librte-eal"], env=env,
                         capture_output=True, text=True).stdout.split()
    abis = sorted(m.group(1) for m in map(re.compile(r"^librte-eal(\d+)$").match, out) if m)
    if not abis:
        raise DebianError("no librte-eal package in the archive's index")
    return abis[-1]


def expand(env, pkgs):
    """Package names with {dpdk} replaced by the suite's DPDK ABI number."""
    if not any("{dpdk}" in p for p in pkgs):
        return list(pkgs)
    abi = dpdk_abi(env)
    return [p.replace("{dpdk}", abi) for p in pkgs]


def resolve(env, pkgs):
    """The packages (name, version, arch) that installing pkgs on an empty system takes."""
    pkgs = expand(env, pkgs)
    if not pkgs:
        return []
    r = apt(env, "-s", "install", *pkgs, check=False)
    if r.returncode != 0:
        raise DebianError("cannot resolve " + " ".join(pkgs) + ":\n" +
                          "\n".join(l for l in (r.stdout + r.stderr).splitlines()
                                    if l.startswith(("E:", " ", "The following")))[-2000:])
    out = re.findall(r"^Inst (\S+) \((\S+) .*?\[(\S+)\]\)", r.stdout, re.M)
    return sorted(set(out))


def deb_path(name, version, arch):
    return os.path.join(DEBS, f"{name}_{version.replace(':', '%3a')}_{arch}.deb")


def fetch(env, pkgs, want):
    missing = [w for w in want if not os.path.exists(deb_path(*w))]
    if missing:
        log(f"downloading {len(missing)} packages")
        apt(env, "install", "--download-only", "-y", *expand(env, pkgs))
    still = [w for w in want if not os.path.exists(deb_path(*w))]
    if still:
        raise DebianError("not downloaded: " + " ".join(n for n, _, _ in still))


def read_list(path):
    pkgs = []
    if path and os.path.exists(path):
        for line in open(path):
            line = line.split("#", 1)[0].strip()
            if line:
                pkgs.extend(line.split())
    return pkgs


def existing_paths(root):
    """Paths (relative, no leading /) of everything but directories in root."""
    out = set()
    if not root:
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for n in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            out.add(os.path.normpath(os.path.join(rel, n)))
    return out


def build_layer(debs, skip, out):
    """Unpack debs into a staging tree and write it as an uncompressed newc cpio."""
    stage = tempfile.mkdtemp(prefix="accio-debian-", dir=LAYERS)
    try:
        for deb in debs:
            subprocess.run(["dpkg-deb", "-x", deb, stage], check=True)
        # Links the musl image does not have: the glibc ELF interpreter and
        # the multiarch library directory at their /lib paths.
        lib = os.path.join(stage, "lib")
        if os.path.isdir(os.path.join(stage, "usr/lib/riscv64-linux-gnu")):
            if not os.path.lexists(lib):
                os.makedirs(lib)
            if os.path.isdir(lib) and not os.path.islink(lib):
                ld = "ld-linux-riscv64-lp64d.so.1"
                if not os.path.lexists(os.path.join(lib, ld)):
                    os.symlink(f"/usr/lib/riscv64-linux-gnu/{ld}", os.path.join(lib, ld))
                multi = os.path.join(lib, "riscv64-linux-gnu")
                if not os.path.lexists(multi):
                    os.symlink("/usr/lib/riscv64-linux-gnu", multi)
        names = []
        for dirpath, dirnames, filenames in os.walk(stage):
            rel = os.path.relpath(dirpath, stage)
            for n in sorted(dirnames) + sorted(filenames):
                p = os.path.normpath(os.path.join(rel, n))
                full = os.path.join(stage, p)
                is_dir = os.path.isdir(full) and not os.path.islink(full)
                if (p + "/").startswith(DROP) or any(p.startswith(d) for d in DROP):
                    continue
                if not is_dir and p in skip:
                    continue
                names.append(p)
        names.sort()
        tmp = out + ".tmp"
        with open(tmp, "wb") as f:
            subprocess.run(["cpio", "--null", "-o", "-H", "newc", "--owner", "0:0",
                            "--quiet", "--reproducible"], cwd=stage, check=True,
                           input=b"".join(n.encode() + b"\0" for n in names), stdout=f)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def layer(pkgs, skip_root=None, minus=(), refresh=False):
    """Path of the cached layer for pkgs (minus the packages that minus pulls in).
    Without the archive's index, the last layer built for the same request."""
    env = apt_config()
    os.makedirs(LAYERS, exist_ok=True)
    skip = existing_paths(skip_root)
    request = hashlib.sha256("\n".join(
        [LAYER_VERSION, *sorted(pkgs), "--", *sorted(minus), "--", *sorted(skip)]).encode()
    ).hexdigest()[:16]
    last = os.path.join(LAYERS, f"last-{request}")
    try:
        update(env, refresh)
    except ArchiveUnavailable:
        if os.path.exists(last):
            with open(last) as f:
                out = f.read().strip()
            if os.path.exists(out):
                log(f"archive unavailable: reusing {os.path.basename(out)}")
                return out, []
        raise
    want = resolve(env, pkgs)
    if minus:
        have = set(resolve(env, list(minus)))
        want = [w for w in want if w not in have]
    key = hashlib.sha256("\n".join(
        [LAYER_VERSION, *(f"{n}={v}={a}" for n, v, a in want), *sorted(skip)]).encode()
    ).hexdigest()[:16]
    out = os.path.join(LAYERS, f"layer-{key}.cpio")
    if not os.path.exists(out):
        fetch(env, pkgs, want)
        log(f"unpacking {len(want)} packages into {os.path.basename(out)}")
        build_layer([deb_path(*w) for w in want], skip, out)
    with open(last + ".tmp", "w") as f:
        f.write(out + "\n")
    os.replace(last + ".tmp", last)
    return out, want


def sysroot(pkgs):
    """A cached tree with pkgs and what they pull in unpacked (a riscv64 glibc
    sysroot to cross-compile against, e.g. DPDK's headers and libraries);
    keyed by the exact package versions. Returns its path."""
    env = apt_config()
    try:
        update(env)
    except ArchiveUnavailable:
        last = os.path.join(D, "sysroots", "last-" + "-".join(sorted(pkgs)))
        if os.path.exists(last):
            return open(last).read().strip()
        raise
    want = resolve(env, pkgs)
    key = hashlib.sha256("\n".join(f"{n}={v}={a}" for n, v, a in want).encode()).hexdigest()[:16]
    root = os.path.join(D, "sysroots", f"sysroot-{key}")
    if not os.path.isdir(root):
        fetch(env, pkgs, want)
        log(f"unpacking {len(want)} packages into {root}")
        tmp = root + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        for w in want:
            subprocess.run(["dpkg-deb", "-x", deb_path(*w), tmp], check=True)
        os.replace(tmp, root)
    with open(os.path.join(D, "sysroots", "last-" + "-".join(sorted(pkgs))), "w") as f:
        f.write(root + "\n")
    return root


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("layer", help="build (or reuse) a layer and copy it to -o")
    p.add_argument("-o", "--out", required=True)
    p.add_argument("--list", help="package list file (one or more names a line, # comments)")
    p.add_argument("--pkg", action="append", default=[], help="a package (repeatable)")
    p.add_argument("--minus-list", help="leave out what this list's packages pull in")
    p.add_argument("--skip-root", help="leave out paths that exist in this tree")
    p.add_argument("--refresh", action="store_true", help="apt-get update now")
    r = sub.add_parser("resolve", help="print what installing the packages takes")
    r.add_argument("pkgs", nargs="+")
    t = sub.add_parser("sysroot", help="unpack the packages and their dependencies into "
                       "a cached tree; prints its path")
    t.add_argument("pkgs", nargs="+")
    a = ap.parse_args(argv)
    # one at a time on this machine: runs in parallel (an evaluation's jobs,
    # the tests) share the lists, the downloads and the cached trees
    os.makedirs(D, exist_ok=True)
    lock = open(os.path.join(D, ".lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        if a.verb == "resolve":
            env = apt_config()
            update(env)
            for n, v, arch in resolve(env, a.pkgs):
                print(f"{n} {v} {arch}")
            return 0
        if a.verb == "sysroot":
            print(sysroot(a.pkgs))
            return 0
        pkgs = read_list(a.list) + a.pkg
        if not pkgs:
            open(a.out, "wb").close()       # an empty layer: nothing to add
            return 0
        path, want = layer(pkgs, a.skip_root, read_list(a.minus_list), a.refresh)
        shutil.copyfile(path, a.out + ".tmp")
        os.replace(a.out + ".tmp", a.out)
        log(f"{len(want)} packages, {os.path.getsize(a.out) >> 20} MiB: {a.out}")
        return 0
    except ArchiveUnavailable as e:
        print(f"debian: {e}", file=sys.stderr)
        return 3
    except (DebianError, subprocess.CalledProcessError) as e:
        print(f"debian: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
