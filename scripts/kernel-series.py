#!/usr/bin/env python3
"""Write the kernel patch series from its sources.

    kernel-series.py           write kernel-patches/series/*.patch
    kernel-series.py --check   exit 1 when series/ differs from what it would write
    --dir D                    the patches' folder (default kernel-patches/)

kernel-patches/series.toml lists the patches in order. A patch adds files
whole from kernel-patches/src/ (their path in the kernel tree) and carries
hooks, kernel-patches/hooks/NAME.diff: changes to the kernel's own files, as
`git diff` writes them. The output is what `git format-patch` writes, with a
fixed date and no commit ids, so that the same sources give the same bytes.
"""
import argparse
import hashlib
import os
import re
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def set_dir(kp):
    global KP, SRC, HOOKS, OUT
    KP = kp
    SRC = os.path.join(KP, "src")
    HOOKS = os.path.join(KP, "hooks")
    OUT = os.path.join(KP, "series")


set_dir(os.path.join(ROOT, "kernel-patches"))
AUTHOR = "Accio developers <accio@localhost>"
DATE = "Thu, 1 Jan 2026 00:00:00 +0000"
STAT_WIDTH = 72


class SeriesError(Exception):
    pass


def src_files():
    out = []
    for d, _, names in os.walk(SRC):
        out += [os.path.relpath(os.path.join(d, n), SRC) for n in names]
    return sorted(out)


def expand(entry, all_src):
    entry = entry.rstrip("/")
    if entry in all_src:
        return [entry]
    under = [f for f in all_src if f.startswith(entry + "/")]
    if not under:
        raise SeriesError(f"series.toml: no file or folder src/{entry}")
    return under


def new_file_diff(path):
    data = open(os.path.join(SRC, path), "rb").read()
    text = data.decode()
    if not text.endswith("\n"):
        raise SeriesError(f"src/{path}: no newline at its end")
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()[:9]
    lines = text.split("\n")[:-1]
    mode = "100755" if os.access(os.path.join(SRC, path), os.X_OK) else "100644"
    head = (f"diff --git a/{path} b/{path}\nnew file mode {mode}\n"
            f"index 000000000..{blob}\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n")
    return {"path": path, "text": head + "".join("+" + l + "\n" for l in lines),
            "add": len(lines), "del": 0, "create": mode}


def hook_diffs(name):
    fn = os.path.join(HOOKS, name + ".diff")
    if not os.path.isfile(fn):
        raise SeriesError(f"series.toml: no hook hooks/{name}.diff")
    text = open(fn).read()
    parts = re.split(r"(?m)^(?=diff --git )", text)
    if parts[0].strip():
        raise SeriesError(f"hooks/{name}.diff: text before its first diff")
    out = []
    for part in parts[1:]:
        m = re.match(r"diff --git a/(\S+) b/(\S+)\n", part)
        if not m or m.group(1) != m.group(2):
            raise SeriesError(f"hooks/{name}.diff: a hook changes a file, it does not rename one")
        if re.search(r"(?m)^new file mode", part):
            raise SeriesError(f"hooks/{name}.diff: {m.group(1)} is a new file; it belongs under src/")
        add = dele = 0
        body = part.split("\n@@", 1)
        if len(body) < 2:
            raise SeriesError(f"hooks/{name}.diff: {m.group(1)} has no hunk")
        for line in ("@@" + body[1]).split("\n"):
            if line.startswith("+"):
                add += 1
            elif line.startswith("-"):
                dele += 1
        out.append({"path": m.group(1), "text": part, "add": add, "del": dele})
    return out


def diffstat(diffs):
    """git's --stat, as format-patch writes it (72 columns)."""
    names = [d["path"] for d in diffs]
    changes = [d["add"] + d["del"] for d in diffs]
    cw = len(str(max(changes)))
    # git gives the name at most 5/8 of the line, the graph the rest
    name_w = min(max(len(n) for n in names), (STAT_WIDTH * 5 + 7) // 8)
    graph_w = STAT_WIDTH - name_w - cw - 4
    most = max(changes)
    lines = []
    for d, n, c in zip(diffs, names, changes):
        if len(n) > name_w:
            tail = n[len(n) - name_w + 3:]
            n = "..." + (tail[tail.index("/"):] if "/" in tail else tail)
        a, r = d["add"], d["del"]
        if most > graph_w:
            def scale(x):
                return 0 if not x else 1 + (x * (graph_w - 1)) // most
            a, r = scale(a), scale(r)
        lines.append(f" {n.ljust(name_w)} | {str(c).rjust(cw)} {'+' * a}{'-' * r}".rstrip())
    add = sum(d["add"] for d in diffs)
    dele = sum(d["del"] for d in diffs)
    summary = f" {len(diffs)} file{'s' if len(diffs) != 1 else ''} changed"
    if add:
        summary += f", {add} insertion{'s' if add != 1 else ''}(+)"
    if dele:
        summary += f", {dele} deletion{'s' if dele != 1 else ''}(-)"
    lines.append(summary)
    lines += [f" create mode {d['create']} {d['path']}" for d in diffs if "create" in d]
    return "\n".join(lines) + "\n"


def slug(subject):
    s = re.sub(r"[^A-Za-z0-9._]+", "-", subject)
    s = s[:52].rstrip("-.")
    return s


def load():
    series = tomllib.load(open(os.path.join(KP, "series.toml"), "rb"))["patch"]
    all_src = src_files()
    hooks = sorted(f[:-5] for f in os.listdir(HOOKS) if f.endswith(".diff"))
    used_src, used_hooks = {}, {}
    patches = []
    for i, p in enumerate(series, 1):
        for key in p:
            if key not in ("subject", "body", "files", "hooks"):
                raise SeriesError(f"series.toml: patch {i}: unknown key {key}")
        diffs = []
        for e in p.get("files", []):
            for f in expand(e, all_src):
                if f in used_src:
                    raise SeriesError(f"src/{f} in patches {used_src[f]} and {i}")
                used_src[f] = i
                diffs.append(new_file_diff(f))
        for h in p.get("hooks", []):
            if h in used_hooks:
                raise SeriesError(f"hooks/{h}.diff in patches {used_hooks[h]} and {i}")
            used_hooks[h] = i
            diffs += hook_diffs(h)
        if not diffs:
            raise SeriesError(f"series.toml: patch {i} changes nothing")
        paths = [d["path"] for d in diffs]
        if len(set(paths)) != len(paths):
            raise SeriesError(f"series.toml: patch {i} changes a file twice")
        diffs.sort(key=lambda d: d["path"])
        patches.append((p["subject"].strip(), p["body"].strip(), diffs))
    for f in all_src:
        if f not in used_src:
            raise SeriesError(f"src/{f} is in no patch of series.toml")
    for h in hooks:
        if h not in used_hooks:
            raise SeriesError(f"hooks/{h}.diff is in no patch of series.toml")
    return patches


def render(patches):
    n = len(patches)
    w = max(2, len(str(n)))
    out = {}
    for i, (subject, body, diffs) in enumerate(patches, 1):
        text = (f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
                f"From: {AUTHOR}\nDate: {DATE}\n"
                f"Subject: [PATCH {str(i).rjust(w, '0')}/{n}] {subject}\n\n"
                f"{body}\n\nSigned-off-by: {AUTHOR}\n---\n"
                f"{diffstat(diffs)}\n"
                + "".join(d["text"] for d in diffs)
                + "-- \naccio kernel-series\n\n")
        out[f"{i:04d}-{slug(subject)}.patch"] = text
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--dir")
    a = ap.parse_args()
    if a.dir:
        set_dir(os.path.abspath(a.dir))
    try:
        patches = load()
    except SeriesError as e:
        sys.exit(f"kernel-series: {e}")
    want = render(patches)
    have = {f: open(os.path.join(OUT, f)).read()
            for f in (os.listdir(OUT) if os.path.isdir(OUT) else [])}
    if a.check:
        stale = sorted(f for f in set(want) | set(have) if want.get(f) != have.get(f))
        if stale:
            print(f"kernel-series: {os.path.relpath(OUT, ROOT)}/ is stale (run `make kernel-series`):",
                  file=sys.stderr)
            for f in stale:
                print("  " + f, file=sys.stderr)
            sys.exit(1)
        return
    os.makedirs(OUT, exist_ok=True)
    for f in have:
        if f not in want:
            os.remove(os.path.join(OUT, f))
    for f, text in want.items():
        if have.get(f) != text:
            with open(os.path.join(OUT, f), "w") as fh:
                fh.write(text)
            print("kernel-series: wrote", os.path.relpath(os.path.join(OUT, f)))


if __name__ == "__main__":
    main()
