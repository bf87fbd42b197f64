"""libaccio's layers (libaccio/README.md, "Layers"): each part of
libaccio/src calls only the parts below it, and the bottom parts include
no header above them. Each part is compiled alone with the host's
compiler; nm says what it defines and what it uses. (That the headers
include one another without a circle is test_include_graph.py's.) Host
only, no boot."""
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBACCIO = os.path.join(ROOT, "libaccio")
SRC = os.path.join(LIBACCIO, "src")
INCLUDE = os.path.join(LIBACCIO, "include")
PROF = os.path.join(ROOT, "eval", "prof")

# Bottom up. A part may use the parts of the layers below it and, within
# its layer, those listed before it; the bottom and the table use nothing
# of the library.
LAYERS = [
    ("bottom", ["row", "config"]),
    ("table", ["fdtable"]),
    ("middle", ["stats", "conn", "sockopt", "fork", "policy"]),
    ("top", ["readiness", "zerocopy", "posix"]),
]
SELF_CONTAINED = {"bottom", "table"}

ORDER = [p for _, parts in LAYERS for p in parts]
LAYER_OF = {p: name for name, parts in LAYERS for p in parts}


def parts_in_tree():
    return sorted(f[:-2] for f in os.listdir(SRC) if f.endswith(".c"))


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    """Each part's object, compiled with the host's compiler (unoptimized:
    every call in the source stays a call or an inline function's)."""
    cc = shutil.which(os.environ.get("HOSTCC", "cc"))
    nm = shutil.which("nm")
    if not cc or not nm:
        pytest.skip("no host compiler or nm")
    out = tmp_path_factory.mktemp("layers")
    uapi = [str(out / "include" / "linux" / h) for h in ("accio.h", "accio_contract.h")]
    r = subprocess.run(["make", "-s", "-C", LIBACCIO, f"OUT={out}", *uapi],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    objs = {}
    for part in parts_in_tree():
        o = out / f"{part}.o"
        r = subprocess.run([cc, "-c", "-O0", "-Wall", "-Wno-unused-parameter", "-I", SRC,
                            "-I", INCLUDE, "-I", str(out / "include"), "-I", PROF,
                            "-o", str(o), os.path.join(SRC, f"{part}.c")],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{part}.c:\n{r.stderr}"
        objs[part] = str(o)
    return objs


def symbols(obj, *flags):
    r = subprocess.run(["nm", *flags, obj], capture_output=True, text=True, check=True)
    return [line.split()[-1] for line in r.stdout.splitlines() if line.strip()]


def uses(objects):
    """{part: {part it uses: [symbols]}}: calls and data, between parts."""
    owner = {}
    for part, obj in objects.items():
        for line in subprocess.run(["nm", "--defined-only", obj], capture_output=True,
                                   text=True, check=True).stdout.splitlines():
            kind, name = line.split()[-2:]
            if kind.isupper():		# global: another part may use it
                owner[name] = part
    graph = {}
    for part, obj in objects.items():
        for name in symbols(obj, "-u"):
            if name in owner and owner[name] != part:
                graph.setdefault(part, {}).setdefault(owner[name], []).append(name)
    return graph


def test_every_part_has_a_layer():
    assert sorted(ORDER) == parts_in_tree(), \
        "a part of libaccio/src without a layer in LAYERS (or one that is gone)"


def test_calls_go_down(objects):
    bad = []
    for part, used in sorted(uses(objects).items()):
        for other, names in sorted(used.items()):
            if LAYER_OF[part] in SELF_CONTAINED:
                why = f"the {LAYER_OF[part]} layer uses nothing of the library"
            elif ORDER.index(other) > ORDER.index(part):
                why = f"{other} ({LAYER_OF[other]}) is above {part} ({LAYER_OF[part]})"
            else:
                continue
            bad.append(f"{part}.c uses {other}.c's {', '.join(sorted(names))}: {why}")
    assert not bad, "\n".join(bad)


def includes(path):
    with open(path) as f:
        return re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M)


def test_the_bottom_includes_only_the_bottom():
    """row and config build without the map (internal.h): the verbs provider
    and the raw ping-pong compile row.c in alone."""
    bottom = {p + ".h" for p in dict(LAYERS)["bottom"]}
    for part in dict(LAYERS)["bottom"]:
        for f in (part + ".c", part + ".h"):
            ours = {i for i in includes(os.path.join(SRC, f))
                    if os.path.exists(os.path.join(SRC, i))
                    or os.path.exists(os.path.join(INCLUDE, i))}
            assert ours <= bottom, f"{f} (bottom) includes {sorted(ours - bottom)}"
