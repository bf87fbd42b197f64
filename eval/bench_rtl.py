#!/usr/bin/env python3
"""Figures for the Chisel RTL of the Accio uncore (hardware/rtl).

Runs `make -C hardware/rtl verilog measure` (64 rows, 4 harts), then prints:
latencies in cycles at 64..1472-byte payloads, register and memory bits per
module from the emitted Verilog, and Chisel line counts per part next to the
paper's. Usage: python3 eval/bench_rtl.py [--no-build]
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RTL = os.path.join(ROOT, "hardware", "rtl")
SRC = os.path.join(RTL, "src", "main", "scala", "accio")
OUT = os.path.join(ROOT, "build", "rtl")

# Chisel files per part, and the paper's line counts (NINeS 2026, section 6)
PARTS = [
    ("ICT (table, register block with the protection rules)", ["IctTable.scala", "RegBlock.scala"], 506),
    ("UDP offload engine (RX, TX, header builder, DMA, RoCEv2 ICRC)",
     ["UdpRx.scala", "UdpTx.scala", "TxBuilder.scala", "Dma.scala", "Icrc.scala"], 843),
    ("MMIO-TX reorder unit", ["MmioTx.scala"], None),
    ("ready queues, wake-up interrupts, event queue", ["EventQueue.scala"], None),
    ("top level, bundles, shared helpers", ["AccioUncore.scala", "Axi.scala", "Params.scala", "Engine.scala"], None),
]
PAPER_TOTAL = 3600


def code_lines(path):
    n, block = 0, False
    for line in open(path):
        s = line.strip()
        if block:
            if "*/" in s:
                block = False
            continue
        if not s or s.startswith("//"):
            continue
        if s.startswith("/*"):
            block = "*/" not in s
            continue
        n += 1
    return n


def parse_sv(path):
    """Per module: own flop bits, own memory bits, and child instances."""
    mods, cur = {}, None
    for line in open(path):
        m = re.match(r"\s*module\s+(\w+)", line)
        if m:
            cur = mods.setdefault(m.group(1), {"regs": 0, "mem": 0, "inst": []})
            continue
        if cur is None:
            continue
        if re.match(r"\s*endmodule", line):
            cur = None
            continue
        m = re.match(r"\s*reg\s+(?:\[(\d+):(\d+)\]\s+)?(\w+)\s*(?:\[(\d+):(\d+)\])?\s*;", line)
        if m:
            w = int(m.group(1)) - int(m.group(2)) + 1 if m.group(1) else 1
            if m.group(4):
                cur["mem"] += w * (abs(int(m.group(5)) - int(m.group(4))) + 1)
            else:
                cur["regs"] += w
            continue
        m = re.match(r"\s*(\w+)\s+(\w+)\s*\($", line)
        if m and m.group(1) in mods or (m and m.group(1)[0].isupper()):
            cur["inst"].append((m.group(1), m.group(2)))
    return mods


def totals(mods, name):
    r, m = mods[name]["regs"], mods[name]["mem"]
    for child, _ in mods[name]["inst"]:
        if child in mods:
            cr, cm = totals(mods, child)
            r, m = r + cr, m + cm
    return r, m


def main():
    if "--no-build" not in sys.argv:
        subprocess.run(["make", "-C", RTL, "verilog", "measure"], check=True)
    lat = json.load(open(os.path.join(OUT, "measure.json")))
    print("Latency, cycles (64 rows, 4 harts; zero-wait AXI memory, TX sink never stalls)\n")
    print("| payload (B) | last RX beat -> RX record visible | doorbell -> first TX beat | last MMIO-TX store -> first TX beat |")
    print("|---:|---:|---:|---:|")
    for e in lat:
        print(f"| {e['payload']} | {e['rx_last_beat_to_record']} | {e['doorbell_to_first_tx_beat']} | "
              f"{e['last_mmio_store_to_first_tx_beat']} |")

    mods = parse_sv(os.path.join(OUT, "AccioUncore.sv"))
    print("\nState bits per module instance of AccioUncore (64 rows, 4 harts), from the emitted Verilog\n")
    print("| instance (module) | flop bits | memory bits |")
    print("|---|---:|---:|")
    tr, tm = 0, 0
    for child, inst in mods["AccioUncore"]["inst"]:
        r, m = totals(mods, child)
        tr, tm = tr + r, tm + m
        print(f"| {inst} ({child}) | {r:,} | {m:,} |")
    r0, m0 = mods["AccioUncore"]["regs"], mods["AccioUncore"]["mem"]
    print(f"| **total** | **{tr + r0:,}** | **{tm + m0:,}** |")

    print("\nChisel lines (non-blank, non-comment) next to the paper's prototype\n")
    print("| part | files | lines | paper |")
    print("|---|---|---:|---:|")
    total = 0
    for name, files, paper in PARTS:
        n = sum(code_lines(os.path.join(SRC, f)) for f in files)
        total += n
        print(f"| {name} | {', '.join(files)} | {n} | {paper if paper else '-'} |")
    print(f"| **total** (no IceNIC normal path here) | | **{total}** | {PAPER_TOTAL:,} (NIC and ICT) |")


if __name__ == "__main__":
    main()
