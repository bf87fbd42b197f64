#!/usr/bin/env bash
# Refresh the kernel series' copies of the generated headers after `make regmap`:
# rewrites drivers/net/ethernet/accio/accio_regs.h (accio_offsets.h, its guard
# renamed) and, once the series carries it, include/uapi/linux/accio_contract.h
# (accio_contract.h as it is) inside the patches that add them.
set -euo pipefail
. "$(dirname "$0")/common.sh"
exec "$CACHE/venv/bin/python" - "$ROOT" <<'PY'
import glob, os, re, sys
root = sys.argv[1]
gen = os.path.join(root, "hardware/generated")


def refresh(target, new, required):
    new = new.rstrip("\n").split("\n")
    for patch in sorted(glob.glob(os.path.join(root, "kernel-patches", "*.patch"))):
        text = open(patch).read()
        m = re.search(r"(diff --git a/%s b/%s\nnew file mode \d+\nindex \w+\.\.)\w+(\n--- /dev/null\n\+\+\+ b/%s\n)@@ -0,0 \+1,\d+ @@\n((?:\+.*\n)*)"
                      % ((re.escape(target),) * 3), text)
        if not m:
            continue
        body = "".join("+" + l + "\n" for l in new)
        repl = m.group(1) + "0000000" + m.group(2) + "@@ -0,0 +1,%d @@\n" % len(new) + body
        text = text[:m.start()] + repl + text[m.end():]
        # keep the diffstat honest enough: git am does not read it
        open(patch, "w").write(text)
        print("refreshed", os.path.relpath(patch, root), "(%s)" % os.path.basename(target))
        return
    if required:
        sys.exit("no patch adds " + target)


refresh("drivers/net/ethernet/accio/accio_regs.h",
        open(os.path.join(gen, "accio_offsets.h")).read().replace("ACCIO_OFFSETS_H", "ACCIO_REGS_H"), True)
refresh("include/uapi/linux/accio_contract.h", open(os.path.join(gen, "accio_contract.h")).read(), False)
PY
