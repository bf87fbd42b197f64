#!/usr/bin/env python3
"""Generate every artefact of the Accio register map from the SystemRDL sources.

Outputs (in hardware/generated/):
  accio_regs.h         PeakRDL C header (struct layouts, field masks) for C users
  accio_regs_kernel.h  the same, with Linux kernel includes
  accio_offsets.h      register offsets and block bases as plain #defines
  accio_regs.md        register documentation (PeakRDL markdown)
  accio_regs.py        Python constants (offsets, fields, resets)
  AccioRegs.scala      Scala constants for the Chisel RTL

With --check, the outputs are generated into a temporary folder and compared
with the committed ones; any difference is an error (stale generated files).
"""
import argparse
import filecmp
import os
import subprocess
import sys
import tempfile

from systemrdl import RDLCompiler
from systemrdl.node import AddrmapNode, RegNode

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOURCES = [os.path.join(HERE, f) for f in ("accio_nic.rdl", "accio_uncore.rdl", "accio_soc.rdl")]
OUTDIR = os.path.join(ROOT, "hardware", "generated")
BANNER = "Generated from the SystemRDL in hardware/regmap by generate.py; do not edit."


def compile_top():
    rdlc = RDLCompiler()
    for src in SOURCES:
        rdlc.compile_file(src)
    return rdlc.elaborate(top_def_name="accio_soc")


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


def generate(outdir):
    top = compile_top()
    srcs = [os.path.basename(s) for s in SOURCES]
    peakrdl(["c-header", *srcs, "-t", "accio_soc", "-x", "-o", os.path.join(outdir, "accio_regs.h")])
    peakrdl(["c-header", *srcs, "-t", "accio_soc", "-x", "--linux-kernel",
             "-o", os.path.join(outdir, "accio_regs_kernel.h")])
    # Documentation per block: the SoC map, the NIC, the uncore's global page
    # and one ICT row (the 64 rows are identical; expanding them all would
    # repeat the same tables 64 times).
    parts = []
    for block in ("accio_soc", "accio_nic", "accio_uncore_global", "accio_ict_row"):
        part = os.path.join(outdir, f".accio_regs_{block}.md")
        peakrdl(["markdown", *srcs, "-t", block, "-o", part, "--depth", "1"]
                if block == "accio_soc" else ["markdown", *srcs, "-t", block, "-o", part])
        parts.append(open(part).read())
        os.unlink(part)
    open(os.path.join(outdir, "accio_regs.md"), "w").write("\n".join(parts))
    gen_offsets(top, os.path.join(outdir, "accio_offsets.h"))
    gen_python(top, os.path.join(outdir, "accio_regs.py"))
    gen_scala(top, os.path.join(outdir, "AccioRegs.scala"))


KERNEL_COPY = "drivers/net/ethernet/accio/accio_regs.h"


def kernel_copy_lines():
    """The register header as added by the kernel patch series, or None."""
    import glob
    for patch in sorted(glob.glob(os.path.join(ROOT, "kernel-patches", "*.patch"))):
        lines, inside = [], False
        for line in open(patch):
            if line.startswith("diff --git "):
                if inside:
                    return lines
                inside = line.rstrip().endswith("b/" + KERNEL_COPY)
            elif inside and line.startswith("+") and not line.startswith("+++"):
                lines.append(line[1:].rstrip("\n"))
        if inside:
            return lines
    return None


def expected_kernel_copy(outdir):
    text = open(os.path.join(outdir, "accio_offsets.h")).read()
    return text.replace("ACCIO_OFFSETS_H", "ACCIO_REGS_H").rstrip("\n").split("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if generated files are stale")
    a = ap.parse_args()
    if not a.check:
        os.makedirs(OUTDIR, exist_ok=True)
        generate(OUTDIR)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp)
        stale = [f for f in sorted(os.listdir(tmp))
                 if not os.path.exists(os.path.join(OUTDIR, f))
                 or not filecmp.cmp(os.path.join(tmp, f), os.path.join(OUTDIR, f), shallow=False)]
        kcopy = kernel_copy_lines()
        kernel_stale = kcopy is not None and kcopy != expected_kernel_copy(tmp)
    if stale:
        print("stale generated register files: " + ", ".join(stale), file=sys.stderr)
        print("run: make regmap", file=sys.stderr)
        return 1
    if kernel_stale:
        print(f"kernel-patches: {KERNEL_COPY} differs from hardware/generated/accio_offsets.h"
              " (with the guard renamed); regenerate the series", file=sys.stderr)
        return 1
    print("register map: generated files are current"
          + ("" if kcopy is None else "; the kernel series carries the current header"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
