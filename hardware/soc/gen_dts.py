#!/usr/bin/env python3
"""The devicetree of the Accio Rocket SoC with the Verilog top (soc-simN):
what firmware (OpenSBI's generic platform) and Linux need to find its
harts, memory, CLINT, PLIC, console, NIC and uncore.

usage: gen_dts.py HARTS OUT.dts [--rows N] [--mhz F] [--bootargs TEXT]
                  [--initrd START END]

The register blocks' sizes come from the generated register map
(hardware/generated/accio_regs.py); the addresses are the SoC's map (the
MMIO bridge's windows, hardware/soc/README.md). rocket-chip 1.2.6 ticks
mtime every 100 core cycles (a 1 MHz time base for its assumed 100 MHz
bus), so at the harness's --mhz F the time base is F * 10 kHz.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "generated"))
import accio_regs  # noqa: E402  (generated constants)

DRAM = (0x80000000, 64 << 20)
CLINT = (0x02000000, 0x10000)
PLIC = (0x0c000000, 0x4000000)
UNCORE_K, UNCORE_U, CTX = 0x60000000, 0x60100000, 0x60200000
NIC = 0x60300000
CONSOLE = 0x70000000
MAC = "02 00 00 00 00 02"


def page(n):
    return (n + 0xfff) & ~0xfff


# /chosen/rng-seed: the kernel's random number generator starts seeded, as
# from a boot loader (a simulation has no entropy source worth waiting for:
# its time is as regular as its clock); fixed, so that runs repeat
RNG_SEED = bytes((i * 37 + 11) & 0xff for i in range(64))


def dts(harts, rows, mhz, bootargs, initrd):
    ndev = 3 + harts      # event, one wake-up per hart, the NIC, the console
    row_base, row_stride = accio_regs.UNCORE_ARRAYS["ROW"][:2]
    uncore_size = page(row_base + rows * row_stride)
    L = ["/dts-v1/;", "", "/ {", "\t#address-cells = <1>;", "\t#size-cells = <1>;",
         '\tcompatible = "accio,rocket-soc";', f'\tmodel = "Accio Rocket SoC, {harts} hart(s)";', ""]
    L += ["\tchosen {", f'\t\tstdout-path = "/soc/serial@{CONSOLE:x}";']
    if bootargs:
        L.append(f'\t\tbootargs = "{bootargs}";')
    L.append(f"\t\trng-seed = [{RNG_SEED.hex(' ')}];")
    if initrd:
        L += [f"\t\tlinux,initrd-start = <0x{initrd[0]:x}>;", f"\t\tlinux,initrd-end = <0x{initrd[1]:x}>;"]
    L += ["\t};", ""]
    L += ["\tcpus {", "\t\t#address-cells = <1>;", "\t\t#size-cells = <0>;",
          f"\t\ttimebase-frequency = <{int(mhz * 10000)}>;"]
    for h in range(harts):
        L += [f"\t\tcpu{h}: cpu@{h} {{", '\t\t\tdevice_type = "cpu";', f"\t\t\treg = <{h}>;",
              '\t\t\tcompatible = "sifive,rocket0", "riscv";', '\t\t\triscv,isa = "rv64imafdc";',
              '\t\t\tmmu-type = "riscv,sv39";', '\t\t\tstatus = "okay";',
              f"\t\t\tclock-frequency = <{int(mhz * 1000000)}>;",
              f"\t\t\tcpu{h}_intc: interrupt-controller {{", "\t\t\t\t#address-cells = <0>;",
              "\t\t\t\t#interrupt-cells = <1>;",
              "\t\t\t\tinterrupt-controller;", '\t\t\t\tcompatible = "riscv,cpu-intc";',
              "\t\t\t};", "\t\t};"]
    L += ["\t};", ""]
    L += [f"\tmemory@{DRAM[0]:x} {{", '\t\tdevice_type = "memory";',
          f"\t\treg = <0x{DRAM[0]:x} 0x{DRAM[1]:x}>;", "\t};", ""]
    L += ["\tsoc {", "\t\t#address-cells = <1>;", "\t\t#size-cells = <1>;",
          '\t\tcompatible = "simple-bus";', "\t\tranges;", ""]
    clint = " ".join(f"&cpu{h}_intc 3 &cpu{h}_intc 7" for h in range(harts))
    L += [f"\t\tclint@{CLINT[0]:x} {{", '\t\t\tcompatible = "sifive,clint0", "riscv,clint0";',
          f"\t\t\treg = <0x{CLINT[0]:x} 0x{CLINT[1]:x}>;", f"\t\t\tinterrupts-extended = <{clint}>;",
          "\t\t};", ""]
    # rocket-chip's PLIC: per hart a machine-mode context, then a supervisor one
    plic = " ".join(f"&cpu{h}_intc 11 &cpu{h}_intc 9" for h in range(harts))
    L += [f"\t\tplic: interrupt-controller@{PLIC[0]:x} {{",
          '\t\t\tcompatible = "sifive,plic-1.0.0", "riscv,plic0";',
          f"\t\t\treg = <0x{PLIC[0]:x} 0x{PLIC[1]:x}>;", "\t\t\t#address-cells = <0>;",
          "\t\t\t#interrupt-cells = <1>;", "\t\t\tinterrupt-controller;",
          f"\t\t\tinterrupts-extended = <{plic}>;", f"\t\t\triscv,ndev = <{ndev}>;", "\t\t};", ""]
    # the harness's console, as a 16550 whose transmitter is always empty
    L += [f"\t\tserial@{CONSOLE:x} {{", '\t\t\tcompatible = "ns16550a";',
          f"\t\t\treg = <0x{CONSOLE:x} 0x8>;", f"\t\t\tclock-frequency = <{int(mhz * 1000000)}>;",
          "\t\t\tcurrent-speed = <115200>;", "\t\t\treg-shift = <0>;", "\t\t\treg-io-width = <1>;",
          "\t\t\tinterrupt-parent = <&plic>;", f"\t\t\tinterrupts = <{3 + harts}>;",
          "\t\t};", ""]
    L += [f"\t\tethernet@{NIC:x} {{", '\t\t\tcompatible = "accio,nic";',
          f"\t\t\treg = <0x{NIC:x} 0x{page(accio_regs.NIC_SIZE):x}>;", "\t\t\tinterrupt-parent = <&plic>;",
          f"\t\t\tinterrupts = <{2 + harts}>;", f"\t\t\tlocal-mac-address = [{MAC}];", "\t\t};", ""]
    # the uncore: wake-up interrupts in hart order, then the event interrupt;
    # its kernel alias, its user alias (checked against CTX) and CTX[hart]
    irqs = ", ".join(f"<{2 + h}>" for h in range(harts)) + ", <1>"
    L += [f"\t\taccio@{UNCORE_K:x} {{", '\t\t\tcompatible = "accio,uncore";',
          f"\t\t\treg = <0x{UNCORE_K:x} 0x{uncore_size:x}>, <0x{UNCORE_U:x} 0x{uncore_size:x}>,",
          f"\t\t\t      <0x{CTX:x} 0x1000>;", '\t\t\treg-names = "kernel", "user", "ctx";',
          "\t\t\tinterrupt-parent = <&plic>;", f"\t\t\tinterrupts = {irqs};",
          f"\t\t\taccio,rows = <{rows}>;", "\t\t};"]
    L += ["\t};", "};", ""]
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("harts", type=int)
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--mhz", type=float, default=1000)
    ap.add_argument("--bootargs", default="")
    ap.add_argument("--initrd", nargs=2, type=lambda v: int(v, 0), metavar=("START", "END"))
    a = ap.parse_args()
    if not 1 <= a.harts <= 4:
        sys.exit("gen_dts: HARTS must be 1 to 4")
    with open(a.out, "w") as f:
        f.write(dts(a.harts, a.rows, a.mhz, a.bootargs, a.initrd))


if __name__ == "__main__":
    main()
