#!/usr/bin/env python3
"""Write the SoC's Verilog top: Rocket (rocket-chip's ExampleRocketSystem),
the MMIO bridge and the Accio uncore with its NIC (AccioNicUncore), joined
at the Verilog level.

usage: gen_top.py ROCKET.v MMIO_IDS HARTS OUT.sv
       gen_top.py --diplomatic ROCKET.v HARTS OUT.sv

--diplomatic: ROCKET.v is AccioRocketSystem (WithAccioUncore: the uncore
attached by rocket-chip's diplomacy, behind the AccioUncoreGlue black box).
Writes the glue (the MMIO bridge and the uncore, without a NIC) and a top
for the same harness: the wire goes straight to the uncore, whose
normal-path port goes out to the harness; the MMIO port carries only the
console there.

The memory port (mem_axi4_0_*) goes out to the harness's memory model
unchanged; the MMIO port goes to AccioMmioBridge; the DMA master of the
uncore and NIC into Rocket's front port (l2_frontend_bus_axi4_0_*, coherent
with the caches); the uncore's event interrupt is PLIC source 1, hart h's
wake-up interrupt source 2 + h, the NIC's source 2 + HARTS, the console's
3 + HARTS. The ID of hart 0's uncached data accesses comes
from the ID map that Emit wrote (MMIO_IDS); the others must follow it.
"""
import re
import sys


def ports(path, module):
    text = open(path).read()
    m = re.search(rf"^module {module}\((.*?)\);", text, re.S | re.M)
    if not m:
        sys.exit(f"gen_top: no module {module} in {path}")
    out = []
    for line in m.group(1).splitlines():
        p = re.match(r"\s*(input|output)\s*(\[\d+:\d+\])?\s*(\w+)", line)
        if p:
            out.append((p.group(1), p.group(2) or "", p.group(3)))
    return out


S_FIELDS = ["aw_ready", "aw_valid", "aw_id", "aw_addr", "aw_len", "w_ready", "w_valid",
            "w_data", "w_strb", "w_last", "b_ready", "b_valid", "b_id", "b_resp",
            "ar_ready", "ar_valid", "ar_id", "ar_addr", "ar_len", "r_ready", "r_valid",
            "r_id", "r_data", "r_resp", "r_last"]
U_FIELDS = ["aw_ready", "aw_valid", "aw_addr", "aw_hart", "aw_asid", "aw_user", "w_ready",
            "w_valid", "w_data", "w_strb", "b_ready", "b_valid", "b_resp", "ar_ready",
            "ar_valid", "ar_addr", "ar_hart", "ar_asid", "ar_user", "r_ready", "r_valid",
            "r_data", "r_resp"]
U_WIRES = """  wire u_aw_ready, u_aw_valid, u_aw_user, u_w_ready, u_w_valid, u_b_ready, u_b_valid;
  wire u_ar_ready, u_ar_valid, u_ar_user, u_r_ready, u_r_valid;
  wire [31:0] u_aw_addr, u_ar_addr;
  wire [7:0] u_aw_hart, u_ar_hart, u_w_strb;
  wire [15:0] u_aw_asid, u_ar_asid;
  wire [63:0] u_w_data, u_r_data;
  wire [1:0] u_b_resp, u_r_resp;"""


def soc_ports(w, mem, harts, nic):
    """The ports of AccioSoC, the module the harness drives: the wire (with
    the NIC, only the wire; without, also the uncore's normal-path port)."""
    w("module AccioSoC (")
    w("  input clock, input reset,")
    for d, r, n in mem:
        w(f"  {d} {r} {n},")
    w("  output cons_valid, output [7:0] cons_off, output [63:0] cons_data,")
    w("  input cons_in_valid, input [7:0] cons_in_data, output cons_in_pop, output cons_irq,")
    w("  output rx_ready, input rx_valid, input [63:0] rx_data, input [7:0] rx_keep, input rx_last,")
    w("  input tx_ready, output tx_valid, output [63:0] tx_data, output [7:0] tx_keep, output tx_last,")
    if not nic:
        w("  input toNic_ready, output toNic_valid, output [63:0] toNic_data, output [7:0] toNic_keep,")
        w("  output toNic_last,")
    w("  input [47:0] mac, input [63:0] time_ns, input link_valid, input link_up,")
    w(f"  output [{harts - 1}:0] irq_wake, output irq_event{', output irq_nic' if nic else ''}")
    w(");")


def bridge(w, params, s, u, cons, name="bridge"):
    """An AccioMmioBridge instance: s(field) names its AXI4 slave's signals,
    u(field) its uncore side's (or a constant), cons its console's."""
    w(f"  AccioMmioBridge #({params}) {name} (")
    b = ["    .clock(clock)", "    .reset(reset)"]
    b += [f"    .s_{f}({s(f)})" for f in S_FIELDS]
    b += [f"    .u_{f}({u(f)})" for f in U_FIELDS]
    b += [f"    .cons_{f}({cons(f)})" for f in ("valid", "off", "data", "in_valid", "in_data", "in_pop",
                                              "irq")]
    w(",\n".join(b))
    w("  );")


def uncore(w, d, nic, misc, module="AccioUncore"):
    """An AccioUncore (or AccioNicUncore: the uncore with the NIC in front)
    instance on the bridge's u_* wires: d(field) names its DMA master's
    signals, nic(stream, field) its streams', misc the rest."""
    w(f"  {module} uncore (")
    u = ["    .clock(clock)", "    .reset(reset)"]
    for f in ["aw_ready", "aw_valid", "w_ready", "w_valid", "b_ready", "b_valid", "ar_ready",
              "ar_valid", "r_ready", "r_valid"]:
        u.append(f"    .io_mmio_{f}(u_{f})")
    u += ["    .io_mmio_aw_bits_addr(u_aw_addr)", "    .io_mmio_aw_bits_user_hart(u_aw_hart)",
          "    .io_mmio_aw_bits_user_asid(u_aw_asid)", "    .io_mmio_aw_bits_user_user(u_aw_user)",
          "    .io_mmio_w_bits_data(u_w_data)", "    .io_mmio_w_bits_strb(u_w_strb)",
          "    .io_mmio_b_bits(u_b_resp)",
          "    .io_mmio_ar_bits_addr(u_ar_addr)", "    .io_mmio_ar_bits_user_hart(u_ar_hart)",
          "    .io_mmio_ar_bits_user_asid(u_ar_asid)", "    .io_mmio_ar_bits_user_user(u_ar_user)",
          "    .io_mmio_r_bits_data(u_r_data)", "    .io_mmio_r_bits_resp(u_r_resp)"]
    for f in ["aw_ready", "aw_valid", "w_ready", "w_valid", "b_ready", "b_valid", "ar_ready",
              "ar_valid", "r_ready", "r_valid"]:
        u.append(f"    .io_dma_{f}({d(f)})")
    for f in ["aw_addr", "aw_len", "aw_size", "aw_burst", "w_data", "w_strb", "w_last",
              "ar_addr", "ar_len", "ar_size", "ar_burst", "r_data", "r_resp", "r_last"]:
        u.append(f"    .io_dma_{f.replace('_', '_bits_', 1)}({d(f)})")
    u.append(f"    .io_dma_b_bits({d('b_resp')})")
    streams = ("rx", "tx") if module == "AccioNicUncore" else ("rx", "tx", "toNic")
    for st in streams:
        u += [f"    .io_{st}_ready({nic(st, 'ready')})", f"    .io_{st}_valid({nic(st, 'valid')})",
              f"    .io_{st}_bits_data({nic(st, 'data')})",
              f"    .io_{st}_bits_keep({nic(st, 'keep')})",
              f"    .io_{st}_bits_last({nic(st, 'last')})"]
    u.append("    .io_busy()")
    if module == "AccioUncore":
        u += ["    .io_rxVerdict_valid()", "    .io_rxVerdict_bits()", "    .io_rxRecord()"]
    u += [f"    .io_{k}({v})" for k, v in misc.items()]
    w(",\n".join(u))
    w("  );")


def main():
    rocket, idmap, harts, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    ids = {}
    for line in open(idmap):
        f = line.split()
        if len(f) == 3:
            ids[f[0]] = (int(f[1]), int(f[2]))
    mmio = [ids.get(f"Core_{h}_DCache_MMIO") for h in range(harts)]
    if None in mmio or any(a != b for a, b in mmio) or \
            [a for a, _ in mmio] != list(range(mmio[0][0], mmio[0][0] + harts)):
        sys.exit(f"gen_top: the harts' uncached IDs are not consecutive single IDs: {mmio}")
    id0 = mmio[0][0]
    rp = ports(rocket, "ExampleRocketSystem")
    mem = [p for p in rp if p[2].startswith("mem_axi4_0_")]
    L = []
    w = L.append
    w("// SPDX-License-Identifier: MIT")
    w("// Generated by hardware/soc/gen_top.py: do not edit.")
    soc_ports(w, mem, harts, nic=True)
    w("  wire [7:0] m_aw_id, m_ar_id, m_b_id, m_r_id;")
    for n, width in [("aw_addr", 31), ("ar_addr", 31)]:
        w(f"  wire [{width - 1}:0] m_{n};")
    w("  wire [7:0] m_aw_len, m_ar_len, m_w_strb;")
    w("  wire [63:0] m_w_data, m_r_data;")
    w("  wire [1:0] m_b_resp, m_r_resp;")
    w("  wire m_aw_ready, m_aw_valid, m_w_ready, m_w_valid, m_w_last, m_b_ready, m_b_valid;")
    w("  wire m_ar_ready, m_ar_valid, m_r_ready, m_r_valid, m_r_last;")
    w(U_WIRES)
    w("  wire d_aw_ready, d_aw_valid, d_w_ready, d_w_valid, d_w_last, d_b_ready, d_b_valid;")
    w("  wire d_ar_ready, d_ar_valid, d_r_ready, d_r_valid, d_r_last;")
    w("  wire [63:0] d_aw_addr, d_ar_addr, d_w_data, d_r_data;")
    w("  wire [7:0] d_aw_len, d_ar_len, d_w_strb;")
    w("  wire [2:0] d_aw_size, d_ar_size;")
    w("  wire [1:0] d_aw_burst, d_ar_burst, d_b_resp, d_r_resp;")
    w(f"  wire [{harts - 1}:0] wake;")
    w("  wire event_irq, nic_irq;")
    w("  assign irq_wake = wake;")
    w("  assign irq_event = event_irq;")
    w("  assign irq_nic = nic_irq;")
    w("")
    w("  ExampleRocketSystem rocket (")
    conn = ["    .clock(clock)", "    .reset(reset)"]
    for d, r, n in mem:
        conn.append(f"    .{n}({n})")
    for d, r, n in rp:
        if n.startswith("mmio_axi4_0_"):
            f = n[len("mmio_axi4_0_"):].replace("_bits_", "_")
            sig = f"m_{f}"
            if f in ("aw_size", "aw_burst", "aw_lock", "aw_cache", "aw_prot", "aw_qos",
                     "ar_size", "ar_burst", "ar_lock", "ar_cache", "ar_prot", "ar_qos"):
                conn.append(f"    .{n}()")
            else:
                conn.append(f"    .{n}({sig})")
        elif n.startswith("l2_frontend_bus_axi4_0_"):
            f = n[len("l2_frontend_bus_axi4_0_"):].replace("_bits_", "_")
            const = {"aw_id": "8'd0", "ar_id": "8'd0", "aw_lock": "1'b0", "ar_lock": "1'b0",
                     "aw_cache": "4'd0", "ar_cache": "4'd0", "aw_prot": "3'd0",
                     "ar_prot": "3'd0", "aw_qos": "4'd0", "ar_qos": "4'd0"}
            if f in const:
                conn.append(f"    .{n}({const[f]})")
            elif f in ("b_id", "r_id"):
                conn.append(f"    .{n}()")
            elif f in ("aw_addr", "ar_addr"):
                conn.append(f"    .{n}(d_{f}[31:0])")
            else:
                conn.append(f"    .{n}(d_{f})")
    conn.append("    .interrupts({cons_irq, nic_irq, wake, event_irq})")
    w(",\n".join(conn))
    w("  );")
    w("")
    bridge(w, f".HARTS({harts}), .HART_ID0(8'd{id0}), .NIC(1)", lambda f: f"m_{f}",
           lambda f: f"u_{f}", lambda f: f"cons_{f}")
    w("")
    uncore(w, lambda f: f"d_{f}", lambda st, f: f"{st}_{f}",
           {"mac": "mac", "time": "time_ns", "link_valid": "link_valid", "link_bits": "link_up",
            "irqWake": "wake", "irqEvent": "event_irq", "irqNic": "nic_irq"},
           module="AccioNicUncore")
    w("endmodule")
    open(out, "w").write("\n".join(L) + "\n")


def diplomatic(rocket, harts, out):
    rp = ports(rocket, "AccioRocketSystem")
    mem = [p for p in rp if p[2].startswith("mem_axi4_0_")]
    L = []
    w = L.append
    w("// SPDX-License-Identifier: MIT")
    w("// Generated by hardware/soc/gen_top.py --diplomatic: do not edit.")
    # the glue behind the black box: bridge and uncore
    w("module AccioUncoreGlue #(parameter HARTS = 1, parameter HART_ID0 = 4,")
    w("                         parameter PORT_BASE = 32'h5000_0000) (")
    w("  input clock, input reset,")
    sig = [("s_aw_ready", "output", ""), ("s_aw_valid", "input", ""),
           ("s_aw_id", "input", "[7:0]"), ("s_aw_addr", "input", "[30:0]"),
           ("s_aw_len", "input", "[7:0]"), ("s_w_ready", "output", ""),
           ("s_w_valid", "input", ""), ("s_w_data", "input", "[63:0]"),
           ("s_w_strb", "input", "[7:0]"), ("s_w_last", "input", ""),
           ("s_b_ready", "input", ""), ("s_b_valid", "output", ""),
           ("s_b_id", "output", "[7:0]"), ("s_b_resp", "output", "[1:0]"),
           ("s_ar_ready", "output", ""), ("s_ar_valid", "input", ""),
           ("s_ar_id", "input", "[7:0]"), ("s_ar_addr", "input", "[30:0]"),
           ("s_ar_len", "input", "[7:0]"), ("s_r_ready", "input", ""),
           ("s_r_valid", "output", ""), ("s_r_id", "output", "[7:0]"),
           ("s_r_data", "output", "[63:0]"), ("s_r_resp", "output", "[1:0]"),
           ("s_r_last", "output", ""),
           ("d_aw_ready", "input", ""), ("d_aw_valid", "output", ""),
           ("d_aw_addr", "output", "[63:0]"), ("d_aw_len", "output", "[7:0]"),
           ("d_aw_size", "output", "[2:0]"), ("d_aw_burst", "output", "[1:0]"),
           ("d_w_ready", "input", ""), ("d_w_valid", "output", ""),
           ("d_w_data", "output", "[63:0]"), ("d_w_strb", "output", "[7:0]"),
           ("d_w_last", "output", ""), ("d_b_ready", "output", ""),
           ("d_b_valid", "input", ""), ("d_b_resp", "input", "[1:0]"),
           ("d_ar_ready", "input", ""), ("d_ar_valid", "output", ""),
           ("d_ar_addr", "output", "[63:0]"), ("d_ar_len", "output", "[7:0]"),
           ("d_ar_size", "output", "[2:0]"), ("d_ar_burst", "output", "[1:0]"),
           ("d_r_ready", "output", ""), ("d_r_valid", "input", ""),
           ("d_r_data", "input", "[63:0]"), ("d_r_resp", "input", "[1:0]"),
           ("d_r_last", "input", ""),
           ("nic_rx_ready", "output", ""), ("nic_rx_valid", "input", ""),
           ("nic_rx_data", "input", "[63:0]"), ("nic_rx_keep", "input", "[7:0]"),
           ("nic_rx_last", "input", ""), ("nic_tx_ready", "input", ""),
           ("nic_tx_valid", "output", ""), ("nic_tx_data", "output", "[63:0]"),
           ("nic_tx_keep", "output", "[7:0]"), ("nic_tx_last", "output", ""),
           ("nic_toNic_ready", "input", ""), ("nic_toNic_valid", "output", ""),
           ("nic_toNic_data", "output", "[63:0]"), ("nic_toNic_keep", "output", "[7:0]"),
           ("nic_toNic_last", "output", ""), ("nic_mac", "input", "[47:0]"),
           ("nic_time_ns", "input", "[63:0]"), ("nic_link_valid", "input", ""),
           ("nic_link_up", "input", ""), ("nic_irq_wake", "output", "[HARTS-1:0]"),
           ("nic_irq_event", "output", "")]
    w(",\n".join(f"  {d} {r} {n}" for n, d, r in sig))
    w(");")
    w(U_WIRES)
    bridge(w, ".HARTS(HARTS), .HART_ID0(HART_ID0), .PORT_BASE(PORT_BASE)", lambda f: f"s_{f}",
           lambda f: f"u_{f}", lambda f: {"in_valid": "1'b0", "in_data": "8'b0"}.get(f, ""))
    uncore(w, lambda f: f"d_{f}", lambda st, f: f"nic_{st}_{f}",
           {"mac": "nic_mac", "time": "nic_time_ns", "link_valid": "nic_link_valid",
            "link_bits": "nic_link_up", "irqWake": "nic_irq_wake", "irqEvent": "nic_irq_event"})
    w("endmodule")
    w("")
    # the top the harness knows: memory out, console on the MMIO port
    soc_ports(w, mem, harts, nic=False)
    idw = next(int(r[1:-1].split(":")[0]) + 1 for d, r, n in rp if n == "mmio_axi4_0_aw_bits_id")
    for n, width in [("aw_id", idw), ("ar_id", idw), ("b_id", idw), ("r_id", idw), ("aw_addr", 31),
                     ("ar_addr", 31), ("aw_len", 8), ("ar_len", 8), ("w_strb", 8),
                     ("w_data", 64), ("r_data", 64), ("b_resp", 2), ("r_resp", 2)]:
        w(f"  wire [{width - 1}:0] m_{n};")
    w("  wire m_aw_ready, m_aw_valid, m_w_ready, m_w_valid, m_w_last, m_b_ready, m_b_valid;")
    w("  wire m_ar_ready, m_ar_valid, m_r_ready, m_r_valid, m_r_last;")
    w("  AccioRocketSystem rocket (")
    conn = ["    .clock(clock)", "    .reset(reset)"]
    conn += [f"    .{n}({n})" for _, _, n in mem]
    for d, r, n in rp:
        if n.startswith("mmio_axi4_0_"):
            f = n[len("mmio_axi4_0_"):].replace("_bits_", "_")
            conn.append(f"    .{n}({'m_' + f if f in ('aw_ready', 'aw_valid', 'aw_id', 'aw_addr', 'aw_len', 'w_ready', 'w_valid', 'w_data', 'w_strb', 'w_last', 'b_ready', 'b_valid', 'b_id', 'b_resp', 'ar_ready', 'ar_valid', 'ar_id', 'ar_addr', 'ar_len', 'r_ready', 'r_valid', 'r_id', 'r_data', 'r_resp', 'r_last') else ''})")
        elif n.startswith("l2_frontend_bus_axi4_0_"):
            if d == "input":
                conn.append(f"    .{n}(0)")
            else:
                conn.append(f"    .{n}()")
        elif n == "interrupts":
            conn.append(f"    .{n}(0)")
        elif n.startswith("accio_"):
            f = n[len("accio_"):]
            top = {"irq_wake": "irq_wake", "irq_event": "irq_event", "mac": "mac",
                   "time_ns": "time_ns", "link_valid": "link_valid", "link_up": "link_up"}
            conn.append(f"    .{n}({top.get(f, f)})")
    w(",\n".join(conn))
    w("  );")
    w("  // the MMIO port: the console only (the uncore is on the system bus)")
    unused = {"aw_ready": "1'b0", "w_ready": "1'b0", "b_valid": "1'b0", "b_resp": "2'b0",
              "ar_ready": "1'b0", "r_valid": "1'b0", "r_data": "64'b0", "r_resp": "2'b0"}
    bridge(w, f".HARTS(1), .IDW({idw}), .HART_ID0({(1 << idw) - 1})", lambda f: f"m_{f}",
           lambda f: unused.get(f, ""), lambda f: f"cons_{f}", name="console")
    w("endmodule")
    open(out, "w").write("\n".join(L) + "\n")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--diplomatic":
        diplomatic(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
