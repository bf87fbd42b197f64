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


def test_check_detects_a_stale_file(tmp_path, monkeypatch, capsys):
    # Generate into a scratch folder, damage one file: the comparison must
    # notice, though these files passed before in their undamaged form (the
    # memo of make regmap-check names exactly the files that passed)
    out, cache = tmp_path / "generated", tmp_path / "cache"
    out.mkdir()
    monkeypatch.setattr(generate, "OUTDIR", str(out))
    monkeypatch.setenv("ACCIO_CACHE", str(cache))
    generate.generate(str(out))
    (cache / "regmap").mkdir(parents=True)
    (cache / "regmap" / ("check-" + generate.check_key())).write_text("passed\n")
    monkeypatch.setattr(sys, "argv", ["generate.py", "--check", "--memo"])
    assert generate.main() == 0
    assert "passed the check before" in capsys.readouterr().out
    with open(out / "accio_offsets.h", "a") as f:
        f.write("/* edited by hand */\n")
    assert generate.main() == 1
    assert len(os.listdir(cache / "regmap")) == 1


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


# ---- the contract besides the registers (accio_contract.h/.py, AccioContract.scala) ----

import accio_contract  # noqa: E402
import re  # noqa: E402

CONTRACT = {  # names and values the kernel, libaccio, the model and the RTL rely on
    "EV_LINK_UP": 1, "EV_LINK_DOWN": 2, "EV_PROTECTION": 3, "EV_RX_RING_FULL": 4,
    "EV_TX_RING_ERROR": 5, "EV_ICT_MISS": 6, "EV_DOORBELL_DISABLED": 7, "EV_ROW_RANGE": 8,
    "EV_MMIO_TX_ERROR": 9,
    "RX_REC_LEN": 0, "RX_REC_SPORT": 2, "RX_REC_SIP": 4, "RX_REC_TSTAMP": 8, "RX_REC_TOS": 16,
    "RX_REC_TTL": 17, "RX_REC_DIP": 20, "RX_HDR": 24,
    "TX_REC_LEN": 0, "TX_REC_DPORT": 2, "TX_REC_DIP": 4, "TX_HDR": 8,
    "REC_ALIGN": 8, "MAX_PAYLOAD": 1472, "ROCE_PORT": 4791,
}


def contract_c():
    text = open(os.path.join(GEN, "accio_contract.h")).read()
    defines = dict(re.findall(r"^#define ACCIO_(\w+) (\S+)$", text, re.M))
    enum = dict(re.findall(r"^\tACCIO_(EV_\w+) = (\d+),$", text, re.M))
    return text, defines, enum


def test_contract_values():
    text, defines, enum = contract_c()
    c = {**{k: int(v) for k, v in defines.items() if k != "CONTRACT_H"},
         **{k: int(v) for k, v in enum.items()}}
    for name, value in CONTRACT.items():
        assert c[name] == value == getattr(accio_contract, name), name
    py = {k: v for k, v in vars(accio_contract).items() if k.isupper() and isinstance(v, int)}
    assert c == py, "the C and Python contracts differ"
    scala = open(os.path.join(GEN, "AccioContract.scala")).read()
    assert dict((k, int(v)) for k, v in re.findall(r"val (\w+): Int = (\d+)$", scala, re.M)) == py
    assert accio_contract.RX_REC["TSTAMP"] == (8, 8) and accio_contract.TX_REC["DIP"] == (4, 4)


def test_contract_header_is_plain():
    # for the kernel and user space alike: no includes, plain decimal values (a kernel
    # header may define the same macros: the token sequences must be identical)
    text, defines, _ = contract_c()
    assert "#include" not in text
    for name, value in defines.items():
        assert name == "CONTRACT_H" and value == "" or re.fullmatch(r"0|[1-9]\d*", value), name
    prog = ['#include "accio_contract.h"', '#include "accio_contract.h"',
            "#define ACCIO_RX_HDR 24", "#define ACCIO_MAX_PAYLOAD 1472",
            "int main(void) { enum accio_event e = ACCIO_EV_MMIO_TX_ERROR; return (int)e - 9; }"]
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "t.c"), os.path.join(d, "t")
        open(src, "w").write("\n".join(prog) + "\n")
        subprocess.run(["cc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-I", GEN,
                        "-o", exe, src], check=True)
        subprocess.run([exe], check=True)


def test_regs_check_covers_and_catches(tmp_path):
    # The generated check asserts every register of every block; it compiles as
    # generated and fails once one offset of accio_offsets.h is wrong.
    check = os.path.join(GEN, "accio_regs_check.c")
    text = open(check).read()
    for n in list(accio_regs.NIC) + list(accio_regs.UNCORE):
        assert re.search(rf"ACCIO_(NIC|UNCORE)_{n}\)", text), n
    for a in ("ROW", "HART"):
        for n in accio_regs.UNCORE_ARRAYS[a][3]:
            assert f"ACCIO_UNCORE_{a}_{n})" in text, (a, n)
    cc = ["cc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", check]
    subprocess.run(cc + ["-I", GEN], check=True)
    off = open(os.path.join(GEN, "accio_offsets.h")).read()
    bad = off.replace("#define ACCIO_UNCORE_ROW_TX_BASE 0x050", "#define ACCIO_UNCORE_ROW_TX_BASE 0x058")
    assert bad != off
    (tmp_path / "accio_offsets.h").write_text(bad)
    (tmp_path / "check.c").write_text(text)  # its quoted includes look beside it first
    r = subprocess.run(cc[:-1] + [str(tmp_path / "check.c"), "-I", GEN], capture_output=True, text=True)
    assert r.returncode != 0 and "ACCIO_UNCORE_ROW_TX_BASE" in r.stderr
