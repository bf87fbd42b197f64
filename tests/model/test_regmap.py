"""The register map: one SystemRDL source, every generated view consistent."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "hardware", "generated")
sys.path.insert(0, GEN)
sys.path.insert(0, os.path.join(ROOT, "hardware", "regmap"))

import accio_regs  # noqa: E402
import generate  # noqa: E402


def test_generated_files_are_current():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "hardware", "regmap", "generate.py"),
                        "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_check_detects_a_stale_file(tmp_path, monkeypatch):
    # Generate into a scratch folder, damage one file: the comparison must notice.
    monkeypatch.setattr(generate, "OUTDIR", str(tmp_path))
    generate.generate(str(tmp_path))
    assert generate.main.__code__  # generator importable
    with open(tmp_path / "accio_offsets.h", "a") as f:
        f.write("/* edited by hand */\n")
    monkeypatch.setattr(sys, "argv", ["generate.py", "--check"])
    assert generate.main() == 1


def test_c_offsets_match_python_and_struct_layout():
    # Compile a program that prints every offset from both C headers.
    names = list(accio_regs.NIC)
    prog = ['#include <stddef.h>', '#include <stdio.h>', '#include "accio_regs.h"',
            '#include "accio_offsets.h"', "int main(void) {"]
    for n in names:
        prog.append(f'printf("{n} %zu %d\\n", offsetof(accio_nic_t, {n}), ACCIO_NIC_{n});')
    prog.append("return 0; }")
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "t.c"), os.path.join(d, "t")
        open(src, "w").write("\n".join(prog))
        subprocess.run(["cc", "-Wall", "-Werror", "-I", GEN, "-o", exe, src], check=True)
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        n, a, b = line.split()
        assert int(a) == int(b) == accio_regs.NIC[n][0], line


def test_nic_map_shape():
    regs = accio_regs.NIC
    offs = sorted(v[0] for v in regs.values())
    assert len(set(offs)) == len(offs), "overlapping registers"
    assert all(o % 8 == 0 for o in offs), "64-bit registers are 8-byte aligned"
    assert max(offs) < 0x1000, "the NIC window is one 4 KiB page"
    magic = regs["ID"][1]["MAGIC"]
    assert magic == (0, 32, 0x4143494F)
    assert accio_regs.NIC_BASE == 0x10200000


def test_uncore_arrays_match_struct_layout():
    # Every row register and every per-hart register, for the first and last
    # element, at the same address in the PeakRDL struct and in the offsets.
    rows = accio_regs.UNCORE_ARRAYS["ROW"]
    harts = accio_regs.UNCORE_ARRAYS["HART"]
    assert rows[0] == 0x1000 and rows[1] == 0x1000, "one 4 KiB page per row"
    checks = []
    for i in (0, rows[2] - 1):
        for n in rows[3]:
            checks.append((f"ROW[{i}].{n}", f"ACCIO_UNCORE_ROW_BASE + {i} * ACCIO_UNCORE_ROW_STRIDE"
                           f" + ACCIO_UNCORE_ROW_{n}"))
    for i in (0, harts[2] - 1):
        for n in harts[3]:
            checks.append((f"GLOBAL.HART[{i}].{n}", f"ACCIO_UNCORE_HART_BASE + {i} *"
                           f" ACCIO_UNCORE_HART_STRIDE + ACCIO_UNCORE_HART_{n}"))
    for n in accio_regs.UNCORE:
        checks.append((f"GLOBAL.{n}", f"ACCIO_UNCORE_{n}"))
    prog = ['#include <stddef.h>', '#include <stdio.h>', '#include "accio_regs.h"',
            '#include "accio_offsets.h"', "int main(void) { int bad = 0;"]
    for member, expr in checks:
        prog.append(f'if (offsetof(accio_uncore_t, {member}) != ({expr})) '
                    f'{{ printf("{member}\\n"); bad++; }}')
    prog.append("return bad; }")
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "t.c"), os.path.join(d, "t")
        open(src, "w").write("\n".join(prog))
        subprocess.run(["cc", "-Wall", "-Werror", "-I", GEN, "-o", exe, src], check=True)
        r = subprocess.run([exe], capture_output=True, text=True)
    assert r.returncode == 0, "layout mismatch: " + r.stdout
    assert len(checks) > 40
