"""One contract: every constant of hardware/generated/accio_contract.h is
defined in one source (the SystemRDL in hardware/regmap) and nowhere else by
hand - not in C (the model, QEMU, libaccio, the verbs provider, apps, the
SoC's programs, the kernel drivers' sources in kernel-patches/src), not in
Python, not in Scala."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "hardware", "generated")
CONTRACT = os.path.join(GEN, "accio_contract.h")
SKIP_DIRS = {".git", "build", "generated", "node_modules", "target", "out", "__pycache__"}


def contract_names():
    text = open(CONTRACT).read()
    names = set(re.findall(r"^#define (ACCIO_[A-Z0-9_]+) \d+$", text, re.M))
    names |= set(re.findall(r"^\s+(ACCIO_[A-Z0-9_]+) = \d+,$", text, re.M))
    return {n for n in names if not n.endswith("_H")}


def camel(name):
    """RX_HDR -> RxHdr, the Scala style of hand-written constants."""
    return "".join(p.capitalize() for p in name.split("_"))


# the kernel series' copy of the generated contract (generate.py --check compares it)
KERNEL_CONTRACT = os.path.join(ROOT, "kernel-patches/src/include/uapi/linux/accio_contract.h")


def sources():
    """Every C, Python and Scala source, the kernel drivers' (kernel-patches/src) among them."""
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
        for f in files:
            if f.endswith((".c", ".h", ".py", ".scala")) and \
                    os.path.join(top, f) != KERNEL_CONTRACT:
                yield os.path.join(top, f)


def definitions(path, text, names):
    """(name, line) of each constant path defines by hand."""
    found = []
    for i, line in enumerate(text.splitlines(), 1):
        if path.endswith((".c", ".h")):
            m = re.match(r"\s*#\s*define\s+(ACCIO_[A-Z0-9_]+)\s+\S", line) or \
                re.match(r"\s*(ACCIO_[A-Z0-9_]+)\s*=\s*\d", line)
            if m and m.group(1) in names:
                found.append((m.group(1), i))
        elif path.endswith(".py"):
            m = re.match(r"([A-Z][A-Z0-9_]*)\s*=\s*\d", line)
            if m and "ACCIO_" + m.group(1) in names:
                found.append((m.group(1), i))
            # several at once: A, B, ... = range(...)
            m = re.match(r"([A-Z][A-Z0-9_]*(?:\s*,\s*[A-Z][A-Z0-9_]*)+)\s*=", line)
            if m:
                found += [(n.strip(), i) for n in m.group(1).split(",")
                          if "ACCIO_" + n.strip() in names]
        else:
            m = re.match(r"\s*val\s+(\w+)\s*(?::\s*\w+)?\s*=\s*\d", line)
            if m and (m.group(1) in {camel(n[6:]) for n in names} or
                      "ACCIO_" + m.group(1) in names):
                found.append((m.group(1), i))
    return found


def test_the_contract_has_what_every_layer_needs():
    names = contract_names()
    for n in ("ACCIO_EV_LINK_UP", "ACCIO_EV_MMIO_TX_ERROR", "ACCIO_RX_HDR", "ACCIO_TX_HDR",
              "ACCIO_RX_REC_LEN", "ACCIO_RX_REC_SIP", "ACCIO_RX_REC_TSTAMP",
              "ACCIO_TX_REC_DPORT", "ACCIO_MAX_PAYLOAD", "ACCIO_ROCE_PORT",
              "ACCIO_REC_ALIGN", "ACCIO_ROW_RX_WPTR", "ACCIO_ROW_DOORBELL",
              "ACCIO_ROW_MMIO_TX", "ACCIO_ROW_MMIO_TX_BYTES"):
        assert n in names, n


def test_each_constant_is_defined_once():
    names = contract_names()
    bad = []
    for path in sources():
        text = open(path, errors="replace").read()
        bad += [f"{os.path.relpath(path, ROOT)}:{line}: {n}"
                for n, line in definitions(path, text, names)]
    assert not bad, "defined by hand besides the register map:\n" + "\n".join(bad)


@pytest.mark.parametrize("kind,path,text", [
    ("c", "x.h", "#define ACCIO_RX_HDR\t\t16\n"),
    ("enum", "x.c", "enum { ACCIO_EV_ICT_MISS = 6 };\n\tACCIO_EV_ICT_MISS = 6,\n"),
    ("python", "x.py", "EV_LINK_UP, EV_LINK_DOWN = range(1, 3)\n"),
    ("scala", "x.scala", "  val RxHdr = 16\n"),
])
def test_a_hand_copy_is_found(kind, path, text):
    assert definitions(path, text, contract_names()), kind
