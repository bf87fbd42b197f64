"""The guest's initramfs for a run: the image's archive, then layers of
Debian packages, then an archive of the run's own files (a cpio writer of
its own: newc, as the kernel reads it)."""
import os
import stat
import subprocess
import sys
import tempfile

from . import config
from .config import AccioError, artefacts


def newc_archive(files, entries=()):
    """An uncompressed cpio (newc) archive of {path: bytes} (mode 0644) and
    entries (path, mode, data): mode with its file type bits, data the
    contents or, for a symlink, the target. Parent directories are implied."""
    out, ino = bytearray(), 1
    items = {p: (0o100644, d) for p, d in files.items()}
    for path, mode, data in entries:
        items[path.strip("/")] = (mode, data)
    listed = []
    seen = set()
    for path in sorted(items):
        parts = path.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d not in seen and d not in items:
                seen.add(d)
                listed.append((d, 0o040755, b""))
        if path not in seen:
            seen.add(path)
            listed.append((path, *items[path]))
    for name, mode, data in listed + [("TRAILER!!!", 0, b"")]:
        data = data or b""
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0))
        out += hdr.encode() + nb
        out += b"\0" * (-len(out) % 4)
        out += data
        out += b"\0" * (-len(out) % 4)
        ino += 1
    return bytes(out)


def host_entries(host, guest):
    """cpio entries for a host file or folder placed at guest path (modes
    and symlinks kept), for run(add=...)."""
    if not os.path.lexists(host):
        raise AccioError(f"--add: {host} does not exist")
    guest = guest.strip("/")
    if not guest:
        raise AccioError(f"--add: {host}: the guest path must not be /")
    out = []

    def one(path, dest):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            out.append((dest, stat.S_IFLNK | 0o777, os.readlink(path).encode()))
        elif stat.S_ISDIR(st.st_mode):
            out.append((dest, stat.S_IFDIR | stat.S_IMODE(st.st_mode), b""))
            for n in sorted(os.listdir(path)):
                one(os.path.join(path, n), f"{dest}/{n}")
        elif stat.S_ISREG(st.st_mode):
            with open(path, "rb") as f:
                out.append((dest, stat.S_IFREG | stat.S_IMODE(st.st_mode), f.read()))
        else:
            raise AccioError(f"--add: {path}: only files, folders and symlinks")

    one(host, guest)
    return out


def parse_add(spec):
    """HOST_PATH:GUEST_PATH (the guest path absolute) -> (host, guest)."""
    host, sep, guest = spec.rpartition(":")
    if not sep or not host or not guest.startswith("/"):
        raise AccioError(f"--add {spec!r}: expected HOST_PATH:/GUEST_PATH")
    return host, guest


def read_pkg_list(path):
    """Package names of a list file (one or more a line, # starts a comment)."""
    with open(path) as f:
        return [n for line in f for n in line.split("#", 1)[0].split()]


def debian_layer(pkgs):
    """An uncompressed cpio of Debian packages pkgs (and what they pull in)
    that the image does not already hold (scripts/debian.py)."""
    out = tempfile.NamedTemporaryFile(prefix="accio-debian-", suffix=".cpio", delete=False)
    out.close()
    cmd = [sys.executable, os.path.join(config.ROOT, "scripts", "debian.py"), "layer",
           "-o", out.name,
           "--minus-list", os.path.join(config.ROOT, "buildroot-config", "debian-packages.txt"),
           "--skip-root", os.path.join(config.BUILD, "rootfs")]
    for p in pkgs:
        cmd += ["--pkg", p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        os.unlink(out.name)
        raise AccioError(f"--pkg {' '.join(pkgs)}: {r.stderr.strip()}")
    return out.name


def initrd_with(files, layers=(), entries=()):
    """A temporary initrd: the image's initramfs, then the given layers
    (uncompressed cpio archives, e.g. extra Debian packages), then an
    archive of files."""
    base = artefacts()["initrd"]
    f = tempfile.NamedTemporaryFile(prefix="accio-initrd-", suffix=".cpio", delete=False)
    # The kernel looks for an uncompressed archive only at 4-byte offsets
    # and skips zero padding between archives.
    for part in (base, *layers):
        with open(part, "rb") as b:
            data = b.read()
        f.write(data + b"\0" * (-len(data) % 4))
    f.write(newc_archive(files, entries))
    f.close()
    return f.name


def initrd_for(files, add=(), pkgs=()):
    """initrd_with() the files, the host paths add ((host, guest) pairs) and
    a layer of the Debian packages pkgs (with their dependencies); the layer
    is removed once the initrd holds it."""
    entries = [e for h, g in add for e in host_entries(h, g)]
    layers = [debian_layer(list(pkgs))] if pkgs else []
    try:
        return initrd_with(files, layers, entries)
    finally:
        for layer in layers:
            os.unlink(layer)
