"""libaccio's manual pages (libaccio/man): clean under groff's warnings, one
page for every function of accio.h and for accio_wait(2), every ACCIO_*
variable the library reads described in accio(7), and installed into the
guest image by scripts/build-image.sh. Host only, no boot."""
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBACCIO = os.path.join(ROOT, "libaccio")
MAN = os.path.join(LIBACCIO, "man")
HEADER = os.path.join(LIBACCIO, "include", "accio.h")
SRC = os.path.join(LIBACCIO, "src")
BUILD_IMAGE = os.path.join(ROOT, "scripts", "build-image.sh")

PAGES = sorted(p for p in os.listdir(MAN) if re.fullmatch(r"[\w.-]+\.[237]", p))


def read(path):
    with open(path) as f:
        return f.read()


def section(page):
    return page.rsplit(".", 1)[1]


def layout(pages_dir, dest):
    """The pages as man(1) finds them: dest/manN/page."""
    for p in sorted(os.listdir(pages_dir)):
        if re.fullmatch(r"[\w.-]+\.[237]", p):
            d = os.path.join(dest, "man" + section(p))
            os.makedirs(d, exist_ok=True)
            shutil.copy(os.path.join(pages_dir, p), d)
    return dest


def lint(tree, page):
    """groff's complaints about one page of a laid-out tree ('' when clean)."""
    groff = shutil.which("groff")
    if not groff:
        pytest.fail("groff is missing: install groff-base (scripts/bootstrap.sh)")
    r = subprocess.run([groff, "-man", "-ww", "-z", "-t", "-I", tree,
                        os.path.join("man" + section(page), page)],
                       cwd=tree, capture_output=True, text=True)
    out = r.stderr.strip()
    if r.returncode:
        out += f"\n(groff exit status {r.returncode})"
    return out.strip()


def resolve(page):
    """The text of a page, following a one-line `.so manN/target` link."""
    text = read(os.path.join(MAN, page))
    m = re.fullmatch(r"\.so man([237])/([\w.-]+)\s*", text)
    if m:
        target = m.group(2)
        assert section(target) == m.group(1), f"{page}: {text.strip()}"
        assert os.path.exists(os.path.join(MAN, target)), f"{page} links to a missing {target}"
        return read(os.path.join(MAN, target))
    return text


def names_of(text):
    """The functions a page's NAME section names."""
    m = re.search(r"^\.SH NAME\n(.*?)\\-", text, re.M | re.S)
    assert m, "no NAME section"
    return {n.strip() for n in m.group(1).replace("\n", " ").split(",")}


def sh_section(text, name):
    m = re.search(rf"^\.SH {name}\n(.*?)(?=^\.SH )", text, re.M | re.S)
    return m.group(1) if m else ""


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return layout(MAN, str(tmp_path_factory.mktemp("man")))


def test_pages_exist():
    assert "accio.7" in PAGES and "accio_wait.2" in PAGES, PAGES


@pytest.mark.parametrize("page", PAGES)
def test_groff_has_no_warnings(tree, page):
    assert lint(tree, page) == ""


@pytest.mark.parametrize("page", PAGES)
def test_title_matches_file(page):
    text = resolve(page)
    m = re.search(r"^\.TH (\S+) (\d)", text, re.M)
    assert m, f"{page}: no .TH"
    name, sec = m.groups()
    target = page
    link = re.fullmatch(r"\.so man\d/([\w.-]+)\s*", read(os.path.join(MAN, page)))
    if link:
        target = link.group(1)
    assert (name.lower(), sec) == (target.rsplit(".", 1)[0].lower(), section(target))
    assert page.rsplit(".", 1)[0] in names_of(text)


def test_lint_catches_a_bad_page(tmp_path):
    # The check must be able to fail: an unknown macro and a missing .so target.
    pages = tmp_path / "src"
    pages.mkdir()
    shutil.copy(os.path.join(MAN, "accio_stats.3"), pages)
    with open(pages / "accio_stats.3", "a") as f:
        f.write(".XX not a macro\n")
    (pages / "accio_gone.3").write_text(".so man3/accio_nothing.3\n")
    t = layout(str(pages), str(tmp_path / "tree"))
    assert "XX" in lint(t, "accio_stats.3")
    assert "accio_nothing.3" in lint(t, "accio_gone.3")


def header_functions():
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", read(HEADER), flags=re.S)
    text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
    return sorted(set(re.findall(r"\b(accio_\w+)\s*\(", text)))


def test_every_function_has_a_page():
    funcs = header_functions()
    assert "accio_accelerate" in funcs and "accio_zc_recv" in funcs, funcs
    want = [(f, "3") for f in funcs] + [("accio_wait", "2")]
    for f, sec in want:
        page = f"{f}.{sec}"
        assert page in PAGES, f"no man page for {f}({sec})"
        assert f in names_of(resolve(page)), f"{page} does not name {f}"


def env_variables():
    found = set()
    for n in sorted(os.listdir(SRC)):
        if n.endswith(".c"):
            # getenv("ACCIO_X"), and the getter config_read() is handed (getenv)
            found |= set(re.findall(r"\b(?:\w*getenv|get)\s*\(\s*\"(ACCIO_[A-Z0-9_]+)\"",
                                    read(os.path.join(SRC, n))))
    return sorted(found)


def test_every_variable_is_in_accio_7():
    env = env_variables()
    assert "ACCIO_ACCEL" in env and "ACCIO_SPIN_US" in env, env
    text = read(os.path.join(MAN, "accio.7"))
    environment = sh_section(text, "ENVIRONMENT")
    assert environment, "accio.7 has no ENVIRONMENT section"
    for v in env:
        assert re.search(rf"^\.TP\n\.B {v}\n", environment, re.M), \
            f"{v} is not described in ENVIRONMENT of accio.7"


def test_make_man_lays_out_the_pages(tmp_path):
    r = subprocess.run(["make", "-s", "-C", LIBACCIO, "man", f"OUT={tmp_path}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    for p in PAGES:
        assert os.path.isfile(tmp_path / "man" / ("man" + section(p)) / p), p


def test_all_does_not_need_groff(tmp_path):
    r = subprocess.run(["make", "-n", "-C", LIBACCIO, "all", f"OUT={tmp_path}",
                        "CC=cc", "GLIBC_CC=cc"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert not re.search(r"(^|\s)groff\s", r.stdout, re.M), r.stdout
    assert "man.tmp" not in r.stdout


def test_build_image_installs_the_pages(tmp_path):
    # The step in build-image.sh: after the Debian layer (whose cache key is
    # the image's paths), before the archive is written.
    script = read(BUILD_IMAGE)
    step = re.search(r'^make -s -C "\$ROOT/libaccio" install-man DESTDIR="\$R"$', script, re.M)
    assert step, "build-image.sh does not install libaccio's man pages into $R"
    assert script.index("debian.py\" layer") < step.start() < script.index("cpio --null")
    # ... run as it is there, with no groff on the PATH
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("make", "install", "mkdir"):
        os.symlink(shutil.which(tool), bin_ / tool)
    root = tmp_path / "rootfs"
    r = subprocess.run(["make", "-s", "-C", LIBACCIO, "install-man", f"DESTDIR={root}"],
                       env={"PATH": str(bin_)}, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    for p in PAGES:
        got = root / "usr" / "share" / "man" / ("man" + section(p)) / p
        assert got.is_file(), got
        assert got.read_text() == read(os.path.join(MAN, p))
        assert got.stat().st_mode & 0o777 == 0o644
