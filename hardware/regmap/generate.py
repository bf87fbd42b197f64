#!/usr/bin/env python3
"""Generate every artefact of the Accio register map from the SystemRDL sources.

Outputs (in hardware/generated/):
  accio_regs.h         PeakRDL C header (struct layouts, field masks) for C users
  accio_regs_check.c   static assertions that accio_regs.h and accio_offsets.h
                       agree on every register (hardware/model's Makefile compiles it)
  accio_offsets.h      register offsets and block bases as plain #defines
  accio_regs.md        register documentation (PeakRDL markdown) and the contract
  accio_regs.py        Python constants (offsets, fields, resets)
  AccioRegs.scala      Scala constants for the Chisel RTL
  accio_contract.h     the contract besides the registers: event types (enum
                       accio_event), ring record layouts, shared numbers; no
                       includes, for the kernel and user space alike
  accio_contract.py, AccioContract.scala   the same contract for Python and Scala

With --check, the outputs are generated into a temporary folder and compared
with the committed ones; any difference, and any file in hardware/generated/
that is no longer generated, is an error (stale generated files). With
--memo too (make regmap-check), a check whose files all have the bytes of
one that passed before is not run again: the generator, the sources, every
file in hardware/generated/, the kernel's copies and the versions of the
SystemRDL packages and of Python, hashed, name a file in
$ACCIO_CACHE/regmap/ that a passed check leaves.
"""
import argparse
import filecmp
import hashlib
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import textwrap

from systemrdl import RDLCompiler
from systemrdl.node import AddrmapNode, FieldNode, RegNode

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# accio_records.rdl first: it declares the user-defined properties the others set
SOURCES = [os.path.join(HERE, f) for f in
           ("accio_records.rdl", "accio_nic.rdl", "accio_uncore.rdl", "accio_soc.rdl")]
OUTDIR = os.path.join(ROOT, "hardware", "generated")
BANNER = "Generated from the SystemRDL in hardware/regmap by generate.py; do not edit."


def compile_rdl():
    rdlc = RDLCompiler()
    for src in SOURCES:
        rdlc.compile_file(src)
    return rdlc


def compile_top(rdlc=None):
    return (rdlc or compile_rdl()).elaborate(top_def_name="accio_soc")


def blocks(top):
    return [c for c in top.top.children() if isinstance(c, AddrmapNode)]


def peakrdl(args):
    exe = os.path.join(os.path.dirname(sys.executable), "peakrdl")
    subprocess.run([exe] + args, check=True, stdout=subprocess.DEVNULL, cwd=HERE)


def flatten(node, base=0):
    """Registers of a block as (name, offset, RegNode), and its register arrays
    as (name, base, stride, count, [(name, offset, RegNode)]). Non-array
    sub-blocks are folded into their parent; names must stay unique."""
    regs, arrays = [], []
    for c in node.children():
        if isinstance(c, RegNode):
            regs.append((c.inst_name, base + c.raw_address_offset, c))
        elif c.is_array:
            inner, nested = flatten(c, 0)
            assert not nested, "nested register arrays are not supported"
            arrays.append((c.inst_name, base + c.raw_address_offset, c.array_stride,
                           c.array_dimensions[0], inner))
        else:
            r, a = flatten(c, base + c.address_offset)
            regs += r
            arrays += a
    names = [n for n, _, _ in regs] + [a[0] for a in arrays]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate register names {dup}"
    return regs, arrays


def field_lines(prefix, r):
    out = []
    if r.is_array:
        out.append(f"#define {prefix}_COUNT {r.array_dimensions[0]}")
    reset = sum((f.get_property("reset") or 0) << f.lsb for f in r.fields())
    out.append(f"#define {prefix}_RESET 0x{reset:x}ULL")
    for f in r.fields():
        if f.width == r.size * 8:
            continue
        mask = ((1 << f.width) - 1) << f.lsb
        out.append(f"#define {prefix}_{f.inst_name}_SHIFT {f.lsb}")
        out.append(f"#define {prefix}_{f.inst_name}_MASK 0x{mask:x}ULL")
    return out


def gen_offsets(top, path):
    out = ["/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */", f"/* {BANNER} */",
           "#ifndef ACCIO_OFFSETS_H", "#define ACCIO_OFFSETS_H", ""]
    for b in blocks(top):
        bn = b.inst_name.upper()
        out.append(f"#define ACCIO_{bn}_BASE 0x{b.absolute_address:x}UL")
        out.append(f"#define ACCIO_{bn}_SIZE 0x{b.size:x}UL")
        regs, arrays = flatten(b)
        for name, off, r in regs:
            out.append(f"#define ACCIO_{bn}_{name} 0x{off:03x}")
            out += field_lines(f"ACCIO_{bn}_{name}", r)
        for an, abase, stride, count, inner in arrays:
            out.append(f"#define ACCIO_{bn}_{an}_BASE 0x{abase:x}")
            out.append(f"#define ACCIO_{bn}_{an}_STRIDE 0x{stride:x}")
            out.append(f"#define ACCIO_{bn}_{an}_COUNT {count}")
            for name, off, r in inner:
                out.append(f"#define ACCIO_{bn}_{an}_{name} 0x{off:03x}")
                out += field_lines(f"ACCIO_{bn}_{an}_{name}", r)
        out.append("")
    out.append("#endif /* ACCIO_OFFSETS_H */")
    open(path, "w").write("\n".join(out) + "\n")


def py_regs(regs):
    lines = []
    for name, off, r in regs:
        fields = ", ".join(
            f'"{f.inst_name}": ({f.lsb}, {f.width}, 0x{(f.get_property("reset") or 0):x})'
            for f in r.fields())
        lines.append(f'    "{name}": (0x{off:03x}, {{{fields}}}),')
    return lines


def gen_python(top, path):
    out = [f'"""{BANNER}"""', ""]
    for b in blocks(top):
        bn = b.inst_name.upper()
        regs, arrays = flatten(b)
        out.append(f"{bn}_BASE = 0x{b.absolute_address:x}")
        out.append(f"{bn}_SIZE = 0x{b.size:x}")
        out.append(f"{bn} = {{")
        out += py_regs(regs)
        out.append("}")
        out.append(f"{bn}_ARRAYS = {{")
        for an, abase, stride, count, inner in arrays:
            out.append(f'    "{an}": (0x{abase:x}, 0x{stride:x}, {count}, {{')
            out += ["    " + l for l in py_regs(inner)]
            out.append("    }),")
        out.append("}")
        out.append("")
    open(path, "w").write("\n".join(out))


def scala_regs(regs, ind):
    out = []
    for name, off, r in regs:
        out.append(f"{ind}val {name}: Int = 0x{off:03x}")
        if r.is_array:
            out.append(f"{ind}val {name}_COUNT: Int = {r.array_dimensions[0]}")
        for f in r.fields():
            if f.width == r.size * 8:
                continue
            out.append(f"{ind}val {name}_{f.inst_name}: (Int, Int) = ({f.lsb}, {f.width})")
        reset = sum((f.get_property("reset") or 0) << f.lsb for f in r.fields())
        if reset:
            out.append(f"{ind}val {name}_RESET: BigInt = BigInt(\"{reset:x}\", 16)")
    return out


def gen_scala(top, path):
    out = [f"// {BANNER}", "package accio.regs", ""]
    for b in blocks(top):
        obj = "".join(p.capitalize() for p in b.inst_name.lower().split("_"))
        regs, arrays = flatten(b)
        out.append(f"object {obj} {{")
        out.append(f"  val Base: BigInt = BigInt(\"{b.absolute_address:x}\", 16)")
        out.append(f"  val Size: Int = 0x{b.size:x}")
        out += scala_regs(regs, "  ")
        for an, abase, stride, count, inner in arrays:
            aobj = "".join(p.capitalize() for p in an.lower().split("_"))
            out.append(f"  object {aobj} {{")
            out.append(f"    val Base: Int = 0x{abase:x}")
            out.append(f"    val Stride: Int = 0x{stride:x}")
            out.append(f"    val Count: Int = {count}")
            out += scala_regs(inner, "    ")
            out.append("  }")
        out.append("}")
        out.append("")
    open(path, "w").write("\n".join(out))


# ---- the contract besides the registers -------------------------------------
#
# Event types come from the enums that fields name with `encode` (each enum
# needs a C prefix here), record layouts from the addrmaps accio_<x>_rec of
# accio_records.rdl, the shared numbers from the numeric accio_* user-defined
# properties set on the SoC's blocks, the user-mapped pages' register offsets
# from the blocks with accio_contract_prefix.

ENUM_PREFIX = {"accio_event": "EV"}


class Contract:
    def __init__(self, rdlc, top):
        self.enums = []       # (type name, prefix, [(NAME, value, desc)])
        self.records = []     # (X, type name, title, desc, header bytes, [(FIELD, offset, size, desc)])
        self.numbers = []     # (NAME, value, block)
        self.pages = []       # (PREFIX, type name, [(REG, offset, bytes of an array or None)])
        seen = set()
        for node in top.descendants():
            if isinstance(node, FieldNode):
                enum = node.get_property("encode")
                if enum is None or enum.type_name in seen:
                    continue
                seen.add(enum.type_name)
                assert enum.type_name in ENUM_PREFIX, f"enum {enum.type_name}: add its C prefix to ENUM_PREFIX"
                self.enums.append((enum.type_name, ENUM_PREFIX[enum.type_name],
                                   [(m.name, m.value, m.rdl_desc or "") for m in enum]))
            elif isinstance(node, AddrmapNode):
                for p in node.list_properties(include_udp=True, include_native=False):
                    v = node.get_property(p)
                    if p == "accio_contract_prefix":
                        if node.type_name not in seen:
                            seen.add(node.type_name)
                            regs, arrays = flatten(node)
                            assert not arrays, f"{node.type_name}: no arrays of blocks in a page"
                            self.pages.append((v, node.type_name, [
                                (n, off, r.array_dimensions[0] * r.size if r.is_array else None)
                                for n, off, r in regs]))
                    elif p.startswith("accio_") and isinstance(v, int) and not isinstance(v, bool):
                        self.numbers.append((p[len("accio_"):].upper(), v, node.inst_name))
        for name in rdlc.root.comp_defs:
            if not (name.startswith("accio_") and name.endswith("_rec")):
                continue
            rec = rdlc.elaborate(top_def_name=name).top
            x = name[len("accio_"):-len("_rec")].upper()
            fields = []
            for r in rec.children():
                assert isinstance(r, RegNode) and not r.is_array, f"{name}: fields are plain registers"
                fields.append((r.inst_name, r.raw_address_offset, r.size, r.get_property("desc") or ""))
            self.records.append((x, name, rec.get_property("name"), rec.get_property("desc") or "",
                                 rec.size, fields))
        names = ([f"{p}_{n}" for _, p, ms in self.enums for n, _, _ in ms]
                 + [f"{x}_REC_{f}{s}" for x, *_, fs in self.records for f, *_ in fs for s in ("", "_SIZE")]
                 + [f"{x}_HDR" for x, *_ in self.records] + [n for n, _, _ in self.numbers]
                 + [n for n, _ in self.page_constants()])
        dup = {n for n in names if names.count(n) > 1}
        assert not dup, f"duplicate contract names {dup}"
        align = dict((n, v) for n, v, _ in self.numbers).get("REC_ALIGN")
        for x, name, _, _, hdr, _ in self.records:
            assert align and hdr % align == 0, f"{name}: a header of {hdr} bytes breaks REC_ALIGN"

    def page_constants(self):
        return [(f"{pre}_{n}{s}", v) for pre, _, regs in self.pages for n, off, nbytes in regs
                for s, v in (("", off), ("_BYTES", nbytes)) if v is not None]


def c_comment(text, indent):
    """A C comment, in the kernel's style when it takes several lines (a tab is 8 columns)."""
    if not text:
        return []
    lines = textwrap.wrap(text, 80 - 8 * indent.count("\t") - 6)
    if len(lines) == 1:
        return [f"{indent}/* {lines[0]} */"]
    return [f"{indent}/*"] + [f"{indent} * {l}" for l in lines] + [f"{indent} */"]


def gen_contract_c(c, path):
    out = ["/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */", f"/* {BANNER} */", "/*",
           " * The Accio hardware/software contract besides the register map",
           " * (accio_offsets.h): control event types, ring record layouts, the",
           " * offsets of the row page a process maps and the engine's shared",
           " * numbers. Record fields are little endian; each record field has its",
           " * byte offset from the record's start and its _SIZE in bytes; the",
           " * payload follows the header (_HDR bytes). Plain decimal values and no",
           " * includes: the kernel and user space use it unchanged.",
           " */", "#ifndef ACCIO_CONTRACT_H", "#define ACCIO_CONTRACT_H", ""]
    for tname, prefix, members in c.enums:
        out.append(f"enum {tname} {{")
        for n, v, desc in members:
            out += c_comment(desc, "\t")
            out.append(f"\tACCIO_{prefix}_{n} = {v},")
        out += ["};", ""]
    for x, name, title, desc, hdr, fields in c.records:
        out.append(f"/* {title} ({name}) */")
        for f, off, size, fdesc in fields:
            out += c_comment(f"{f}: {fdesc}" if fdesc else "", "")
            out.append(f"#define ACCIO_{x}_REC_{f} {off}")
            out.append(f"#define ACCIO_{x}_REC_{f}_SIZE {size}")
        out += [f"#define ACCIO_{x}_HDR {hdr}", ""]
    for pre, tname, regs in c.pages:
        out += c_comment(f"The {tname} page a process maps: register offsets; _BYTES, the size "
                         "of a register array", "")
        for n, v in c.page_constants():
            if n.startswith(pre + "_"):
                out.append(f"#define ACCIO_{n} {v}")
        out.append("")
    blocks_set = sorted({b for _, _, b in c.numbers})
    out.append(f"/* Shared numbers (accio_* properties of {', '.join(blocks_set)}) */")
    for n, v, block in c.numbers:
        out.append(f"#define ACCIO_{n} {v}")
    out += ["", "#endif /* ACCIO_CONTRACT_H */"]
    open(path, "w").write("\n".join(out) + "\n")


def gen_contract_py(c, path):
    out = [f'"""{BANNER}', "",
           "The hardware/software contract besides the register map, as accio_contract.h:",
           "event types, ring record layouts (byte offset and size of each little-endian",
           "header field), the row page's offsets, the engine's shared numbers.\"\"\"", ""]
    for tname, prefix, members in c.enums:
        out.append(f"# enum {tname}")
        out += [f"{prefix}_{n} = {v}" for n, v, _ in members]
        out.append(f"{prefix.upper()}_NAMES = {{" + ", ".join(f'{v}: "{n}"' for n, v, _ in members) + "}")
        out.append("")
    for x, name, title, _, hdr, fields in c.records:
        out.append(f"# {title} ({name})")
        for f, off, size, _ in fields:
            out += [f"{x}_REC_{f} = {off}", f"{x}_REC_{f}_SIZE = {size}"]
        out.append(f"{x}_HDR = {hdr}")
        out.append(f"{x}_REC = {{" + ", ".join(f'"{f}": ({off}, {size})' for f, off, size, _ in fields) + "}")
        out.append("")
    for pre, tname, regs in c.pages:
        out.append(f"# the {tname} page a process maps: register offsets; _BYTES: an array's size")
        out += [f"{n} = {v}" for n, v in c.page_constants() if n.startswith(pre + "_")]
        out.append("")
    out += [f"{n} = {v}" for n, v, _ in c.numbers]
    open(path, "w").write("\n".join(out) + "\n")


def gen_contract_scala(c, path):
    out = [f"// {BANNER}", "package accio.regs", "",
           "/** The hardware/software contract besides the register map, as accio_contract.h: event",
           "  * types, ring record layouts (byte offset and _SIZE in bytes of each little-endian header",
           "  * field), the row page's offsets, the engine's shared numbers. */",
           "object Contract {"]
    for tname, prefix, members in c.enums:
        out.append(f"  // enum {tname}")
        out += [f"  val {prefix}_{n}: Int = {v}" for n, v, _ in members]
    for x, name, title, _, hdr, fields in c.records:
        out.append(f"  // {title} ({name})")
        for f, off, size, _ in fields:
            out += [f"  val {x}_REC_{f}: Int = {off}", f"  val {x}_REC_{f}_SIZE: Int = {size}"]
        out.append(f"  val {x}_HDR: Int = {hdr}")
    for pre, tname, regs in c.pages:
        out.append(f"  // the {tname} page a process maps: register offsets; _BYTES: an array's size")
        out += [f"  val {n}: Int = {v}" for n, v in c.page_constants() if n.startswith(pre + "_")]
    out.append("  // shared numbers")
    out += [f"  val {n}: Int = {v}" for n, v, _ in c.numbers]
    out += ["}", ""]
    open(path, "w").write("\n".join(out))


def contract_md(c):
    out = ["", "## The contract besides the registers", "",
           "Generated into `accio_contract.h` (C), `accio_contract.py` and `AccioContract.scala`.", ""]
    for tname, prefix, members in c.enums:
        out += [f"### enum {tname}", "", "|Value|C name|Meaning|", "|-----|------|-------|"]
        out += [f"|{v}|ACCIO_{prefix}_{n}|{d}|" for n, v, d in members]
        out.append("")
    for x, name, title, desc, hdr, fields in c.records:
        out += [f"### {title} ({name})", "", desc, "",
                f"Header: {hdr} bytes (`ACCIO_{x}_HDR`), then the payload, the record padded to "
                "`ACCIO_REC_ALIGN` bytes. Fields are little endian.", "",
                "|Offset|Bytes|Field|C name|Meaning|", "|------|-----|-----|------|-------|"]
        out += [f"|{off}|{size}|{f}|ACCIO_{x}_REC_{f}|{d}|" for f, off, size, d in fields]
        out.append("")
    for pre, tname, regs in c.pages:
        out += [f"### The {tname} page", "", f"Register offsets as `ACCIO_{pre}_<REG>` (and the size of a "
                "register array as `_BYTES`), for the process that maps the page.", ""]
    out += ["### Shared numbers", "", "|C name|Value|Set on|", "|------|-----|------|"]
    out += [f"|ACCIO_{n}|{v}|{b}|" for n, v, b in c.numbers]
    return "\n".join(out) + "\n"


def gen_regs_check(top, path):
    """Static assertions that the PeakRDL structs and field macros
    (accio_regs.h) and accio_offsets.h agree: every register's offset, every
    field's mask and shift, the blocks' sizes, the arrays' bases, strides and
    counts. The file compiles only while they do."""
    out = [f"/* {BANNER} */",
           "/* accio_regs.h (PeakRDL's structs and field macros) against accio_offsets.h:",
           " * this file compiles only while the two agree on every register and field. */",
           "#include <stddef.h>", "", '#include "accio_offsets.h"', '#include "accio_regs.h"', "",
           '#define SAME(a, b) _Static_assert((a) == (b), #a " == " #b)',
           "#define COUNT(t, m) (sizeof(((t *)0)->m) / sizeof(((t *)0)->m[0]))", ""]

    def reg(st, base, r, ref, ours):
        # base: the member path of the array element holding r, or "" for the block
        m = (base + "." if base else "") + r.get_rel_path(ref, empty_array_suffix="")
        idx = "[0]" if r.is_array else ""
        rel = f" - offsetof({st}, {base})" if base else ""
        out.append(f"SAME(offsetof({st}, {m}{idx}){rel}, {ours});")
        if r.is_array:
            out.append(f"SAME(COUNT({st}, {m}), {ours}_COUNT);")
        peak = f"{r.parent.type_name.upper()}__{r.inst_name}"
        for f in r.fields():
            if f.width == r.size * 8:
                continue
            out.append(f"SAME({peak}__{f.inst_name}_bm, {ours}_{f.inst_name}_MASK);")
            out.append(f"SAME({peak}__{f.inst_name}_bp, {ours}_{f.inst_name}_SHIFT);")

    for b in blocks(top):
        bn = b.inst_name.upper()
        st = f"{b.type_name}_t"
        out.append(f"/* {b.inst_name}: {st} */")
        out.append(f"SAME(sizeof({st}), ACCIO_{bn}_SIZE);")
        regs, arrays = flatten(b)
        for name, _, r in regs:
            reg(st, "", r, b, f"ACCIO_{bn}_{name}")
        for an, _, _, _, inner in arrays:
            arr = inner[0][2].parent
            while not arr.is_array:
                arr = arr.parent
            a = arr.get_rel_path(b, empty_array_suffix="")
            out.append(f"SAME(offsetof({st}, {a}[0]), ACCIO_{bn}_{an}_BASE);")
            out.append(f"SAME(offsetof({st}, {a}[1]) - offsetof({st}, {a}[0]), ACCIO_{bn}_{an}_STRIDE);")
            out.append(f"SAME(COUNT({st}, {a}), ACCIO_{bn}_{an}_COUNT);")
            for name, _, r in inner:
                reg(st, f"{a}[0]", r, arr, f"ACCIO_{bn}_{an}_{name}")
        out.append("")
    open(path, "w").write("\n".join(out))


def generate(outdir):
    rdlc = compile_rdl()
    top = compile_top(rdlc)
    contract = Contract(rdlc, top)
    srcs = [os.path.basename(s) for s in SOURCES]
    peakrdl(["c-header", *srcs, "-t", "accio_soc", "-x", "-o", os.path.join(outdir, "accio_regs.h")])
    # Documentation per block: the SoC map, the NIC, the uncore's global page
    # and one ICT row (the 64 rows are identical; expanding them all would
    # repeat the same tables 64 times); then the contract.
    parts = []
    for block in ("accio_soc", "accio_nic", "accio_uncore_global", "accio_ict_row"):
        part = os.path.join(outdir, f".accio_regs_{block}.md")
        peakrdl(["markdown", *srcs, "-t", block, "-o", part, "--depth", "1"]
                if block == "accio_soc" else ["markdown", *srcs, "-t", block, "-o", part])
        parts.append(open(part).read())
        os.unlink(part)
    open(os.path.join(outdir, "accio_regs.md"), "w").write("\n".join(parts) + contract_md(contract))
    gen_offsets(top, os.path.join(outdir, "accio_offsets.h"))
    gen_regs_check(top, os.path.join(outdir, "accio_regs_check.c"))
    gen_python(top, os.path.join(outdir, "accio_regs.py"))
    gen_scala(top, os.path.join(outdir, "AccioRegs.scala"))
    gen_contract_c(contract, os.path.join(outdir, "accio_contract.h"))
    gen_contract_py(contract, os.path.join(outdir, "accio_contract.py"))
    gen_contract_scala(contract, os.path.join(outdir, "AccioContract.scala"))


# The kernel series carries two generated files as sources of its own
# (kernel-patches/src/, from which scripts/kernel-series.py writes the series):
# the driver's register offsets and the uapi contract.
KERNEL_SRC = os.path.join(ROOT, "kernel-patches", "src")
KERNEL_COPIES = {
    "drivers/net/ethernet/accio/accio_regs.h":
        ("accio_offsets.h", lambda t: t.replace("ACCIO_OFFSETS_H", "ACCIO_REGS_H")),
    "include/uapi/linux/accio_contract.h": ("accio_contract.h", lambda t: t),
}


def kernel_copies(outdir):
    """{path in kernel-patches/src: text} of the generated files the kernel carries."""
    return {dst: fix(open(os.path.join(outdir, src)).read())
            for dst, (src, fix) in KERNEL_COPIES.items()}


def check_key():
    """The hash of everything a check's verdict depends on (see --memo)."""
    h = hashlib.sha256()
    kernel = [os.path.join(KERNEL_SRC, dst) for dst in sorted(KERNEL_COPIES)]
    outputs = sorted(f for f in os.listdir(OUTDIR) if f != "__pycache__")
    for path in [os.path.abspath(__file__)] + SOURCES + \
            [os.path.join(OUTDIR, f) for f in outputs] + kernel:
        h.update(os.path.relpath(path, ROOT).encode() + b"\0")
        if os.path.exists(path):
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    versions = []
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"] or ""
        if name.lower().startswith(("systemrdl", "peakrdl")):
            versions.append(f"{name.lower()}=={dist.version}")
    h.update(("\n".join(sorted(versions)) + sys.version).encode())
    return h.hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if generated files are stale")
    ap.add_argument("--memo", action="store_true", help="with --check: pass at once when "
                    "the same files passed a check before ($ACCIO_CACHE/regmap/)")
    a = ap.parse_args()
    memo = None
    if a.check and a.memo:
        cache = os.environ.get("ACCIO_CACHE", os.path.expanduser("~/.cache/accio"))
        memo = os.path.join(cache, "regmap", "check-" + check_key())
        if os.path.exists(memo):
            print("register map: generated files and the kernel's copies are current "
                  "(these files passed the check before)")
            return 0
    if not a.check:
        os.makedirs(OUTDIR, exist_ok=True)
        generate(OUTDIR)
        for dst, text in kernel_copies(OUTDIR).items():
            path = os.path.join(KERNEL_SRC, dst)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp)
        stale = [f for f in sorted(os.listdir(tmp))
                 if not os.path.exists(os.path.join(OUTDIR, f))
                 or not filecmp.cmp(os.path.join(tmp, f), os.path.join(OUTDIR, f), shallow=False)]
        extra = sorted(set(os.listdir(OUTDIR)) - set(os.listdir(tmp)) - {"__pycache__"})
        kernel_stale = [dst for dst, text in kernel_copies(tmp).items()
                        if not os.path.exists(os.path.join(KERNEL_SRC, dst))
                        or open(os.path.join(KERNEL_SRC, dst)).read() != text]
    if stale:
        print("stale generated register files: " + ", ".join(stale), file=sys.stderr)
        print("run: make regmap", file=sys.stderr)
        return 1
    if extra:
        print("hardware/generated holds files no longer generated: " + ", ".join(extra)
              + " (remove them)", file=sys.stderr)
        return 1
    if kernel_stale:
        print("kernel-patches/src: " + ", ".join(kernel_stale) + " differ from what the"
              " register map generates; run: make regmap", file=sys.stderr)
        return 1
    print("register map: generated files and the kernel's copies are current")
    if memo:
        os.makedirs(os.path.dirname(memo), exist_ok=True)
        with open(memo, "w") as f:
            f.write("passed\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
