// SPDX-License-Identifier: MIT
// Rocket's MMIO port (AXI4, 8-bit IDs) to the Accio uncore's register slave
// (AXI4-Lite with privilege, ASID and hart as user bits), the per-hart ASID
// context registers and the harness's console.
//
// Rocket's bus carries neither the issuing hart's privilege nor its satp
// ASID, so the SoC establishes them as follows:
//   - privilege from the address: the uncore appears twice, at KBASE
//     (kernel alias: user=0) and at UBASE (user alias: user=1). The kernel
//     maps only user-alias pages into processes (a row's register page, the
//     MMIO window), so no user access can ever arrive through the kernel
//     alias: the MMU enforces it, as it does for any other kernel-only page.
//   - the hart from the AXI ID: every hart's uncached data accesses have
//     their own ID (HART_ID0 + hart, checked against the generated ID map).
//   - the ASID from CTX[hart], written by the kernel when it switches the
//     hart to another address space (CTXBASE, reachable only through kernel
//     mappings). A user access is checked with the ASID of the address
//     space the hart runs, which is what the row's owner check needs.
// With NIC set, the NIC's registers (NICBASE, 4 KiB) go to the same slave at
// offsets with bit 31 set (AccioNicUncore), as privileged accesses.
// One read and one write at a time; bursts (never issued by the cores'
// uncached paths) get SLVERR beats.
module AccioMmioBridge #(
  parameter int HARTS = 1,
  parameter int IDW = 8,
  parameter logic [IDW-1:0] HART_ID0 = 4,   // ID of hart 0's uncached data accesses
  parameter logic [30:0] PORT_BASE = 31'h6000_0000,  // where Rocket's MMIO port starts
  parameter logic [30:0] KBASE = 31'h0000_0000,  // offsets from PORT_BASE
  parameter logic [30:0] UBASE = 31'h0010_0000,
  parameter logic [30:0] CTXBASE = 31'h0020_0000,
  parameter logic [30:0] CONSBASE = 31'h1000_0000,
  parameter bit NIC = 0,                          // the uncore's slave has the NIC's registers
  parameter logic [30:0] NICBASE = 31'h0030_0000,  // at offsets with bit 31 set
  parameter logic [30:0] WINDOW = 31'h0010_0000   // size of each alias
) (
  input  logic clock, reset,
  // AXI4 slave (from Rocket's mmio_axi4 port; its addresses are physical)
  output logic s_aw_ready, input logic s_aw_valid, input logic [IDW-1:0] s_aw_id,
  input  logic [30:0] s_aw_addr, input logic [7:0] s_aw_len,
  output logic s_w_ready, input logic s_w_valid, input logic [63:0] s_w_data,
  input  logic [7:0] s_w_strb, input logic s_w_last,
  input  logic s_b_ready, output logic s_b_valid, output logic [IDW-1:0] s_b_id,
  output logic [1:0] s_b_resp,
  output logic s_ar_ready, input logic s_ar_valid, input logic [IDW-1:0] s_ar_id,
  input  logic [30:0] s_ar_addr, input logic [7:0] s_ar_len,
  input  logic s_r_ready, output logic s_r_valid, output logic [IDW-1:0] s_r_id,
  output logic [63:0] s_r_data, output logic [1:0] s_r_resp, output logic s_r_last,
  // to the uncore's register slave
  input  logic u_aw_ready, output logic u_aw_valid, output logic [31:0] u_aw_addr,
  output logic [7:0] u_aw_hart, output logic [15:0] u_aw_asid, output logic u_aw_user,
  input  logic u_w_ready, output logic u_w_valid, output logic [63:0] u_w_data,
  output logic [7:0] u_w_strb,
  output logic u_b_ready, input logic u_b_valid, input logic [1:0] u_b_resp,
  input  logic u_ar_ready, output logic u_ar_valid, output logic [31:0] u_ar_addr,
  output logic [7:0] u_ar_hart, output logic [15:0] u_ar_asid, output logic u_ar_user,
  output logic u_r_ready, input logic u_r_valid, input logic [63:0] u_r_data,
  input  logic [1:0] u_r_resp,
  // console: one store, one pulse (offset 0: a character, 8: exit code, 16: mark);
  // its first 8 bytes also read as a 16550 whose transmitter is always empty
  // (LSR 0x60, IIR "THR empty"), so that firmware and Linux drivers for a
  // ns16550a write characters through it; a write to offset 0 while LCR's
  // divisor latch bit is set is the divisor, not a character. Input: while
  // the harness offers a byte, LSR's data-ready bit is set and IIR says
  // "received data"; reading the receive register takes the byte
  output logic cons_valid, output logic [7:0] cons_off, output logic [63:0] cons_data,
  // console input: a byte waits (valid); a read of the receive register takes it (pop)
  input  logic cons_in_valid, input logic [7:0] cons_in_data, output logic cons_in_pop,
  // the console's interrupt: IER's transmitter-empty enable (the transmitter
  // is always empty), or its received-data enable while a byte waits
  output logic cons_irq
);
  typedef enum logic [2:0] {IDLE, UNCORE, LOCAL, RESP} state_t;

  localparam int HB = $clog2(HARTS > 1 ? HARTS : 2);   // bits of a hart index
  logic [15:0] ctx [HARTS];
  logic [7:0] lcr;   // the console's line control register (bit 7: divisor latch)
  logic [1:0] ier;   // its interrupt enables: received data (0), transmitter empty (1)
  wire rx_int = ier[0] && cons_in_valid;
  assign cons_irq = rx_int || ier[1];

  function automatic logic [7:0] hart_of(logic [IDW-1:0] id);
    for (int h = 0; h < HARTS; h++)
      if (id == HART_ID0 + IDW'(h)) return 8'(h);
    return 8'hff;   // not a hart's data access: checked as nobody's ASID
  endfunction
  function automatic logic [15:0] asid_of(logic [7:0] h);
    return h < 8'(HARTS) ? ctx[h[HB-1:0]] : 16'hffff;
  endfunction
  function automatic logic in_win(logic [30:0] a, logic [30:0] base);
    return a >= base && a < base + WINDOW;
  endfunction
  function automatic logic in_nic(logic [30:0] a);
    return NIC && a >= NICBASE && a < NICBASE + 31'h1000;
  endfunction
  // the uncore slave's offset: either alias of the uncore, or the NIC with bit 31 set
  function automatic logic [31:0] u_off(logic [30:0] a);
    if (in_nic(a)) return {1'b1, a - NICBASE};
    return {1'b0, in_win(a, UBASE) ? a - UBASE : a - KBASE};
  endfunction
  function automatic logic to_uncore(logic [30:0] a);
    return in_win(a, KBASE) || in_win(a, UBASE) || in_nic(a);
  endfunction

  // ---- reads ---------------------------------------------------------------
  state_t rs;
  logic [IDW-1:0] r_id;
  logic [7:0] r_left;
  logic [63:0] r_data;
  logic [1:0] r_resp;
  logic [30:0] r_addr;
  logic r_sent;     // the access went to the uncore; its answer is awaited
  wire [30:0] ar_off = s_ar_addr - PORT_BASE;

  assign s_ar_ready = rs == IDLE;
  assign s_r_valid = rs == RESP;
  assign s_r_id = r_id;
  assign s_r_data = r_data;
  assign s_r_resp = r_resp;
  assign s_r_last = r_left == 0;
  assign u_ar_valid = rs == UNCORE && !r_sent;
  assign u_ar_addr = u_off(r_addr);
  assign u_ar_hart = hart_of(r_id);
  assign u_ar_asid = asid_of(u_ar_hart);
  assign u_ar_user = in_win(r_addr, UBASE);
  assign u_r_ready = rs == UNCORE && r_sent;

  always_ff @(posedge clock) begin
    cons_in_pop <= 0;
    if (reset) begin
      rs <= IDLE;
      r_sent <= 0;
    end else case (rs)
      IDLE: if (s_ar_valid) begin
        r_id <= s_ar_id;
        r_addr <= s_ar_addr - PORT_BASE;
        r_left <= s_ar_len;
        r_sent <= 0;
        if (s_ar_len == 0 && to_uncore(ar_off))
          rs <= UNCORE;
        else begin
          // context registers read back; the console's 16550 registers
          // (SCR MSR LSR MCR LCR IIR IER RBR); the rest reads 0; bursts fail
          r_resp <= s_ar_len == 0 ? 2'b00 : 2'b10;
          r_data <= s_ar_len != 0 ? 64'd0 :
                    in_win(ar_off, CTXBASE) && ar_off[10:3] < 8'(HARTS) ?
                      64'(ctx[ar_off[3 +: HB]]) :
                    ar_off >= CONSBASE && ar_off < CONSBASE + 8 ?
                      {8'h00, 8'h00, 7'h30, cons_in_valid, 8'h00, lcr,
                       rx_int ? 8'hc4 : ier[1] ? 8'hc2 : 8'hc1, 6'h00, ier,
                       cons_in_valid && !lcr[7] ? cons_in_data : 8'h00} : 64'd0;
          cons_in_pop <= s_ar_len == 0 && ar_off == CONSBASE && !lcr[7] && cons_in_valid;
          rs <= RESP;
        end
      end
      UNCORE: begin
        if (u_ar_valid && u_ar_ready) r_sent <= 1;
        if (u_r_ready && u_r_valid) begin
          r_data <= u_r_data;
          r_resp <= u_r_resp;
          rs <= RESP;
        end
      end
      RESP: if (s_r_ready) begin
        if (r_left == 0) rs <= IDLE;
        else r_left <= r_left - 1;
      end
      default: rs <= IDLE;
    endcase
  end

  // ---- writes --------------------------------------------------------------
  state_t ws;
  logic [IDW-1:0] w_id;
  logic [30:0] w_addr;
  logic [7:0] w_len;
  logic have_aw, have_w, w_bad;
  logic [63:0] w_data;
  logic [7:0] w_strb;
  logic aw_sent, wd_sent;
  logic [1:0] b_resp;

  assign s_aw_ready = ws == IDLE && !have_aw;
  assign s_w_ready = ws == IDLE && !have_w;
  assign s_b_valid = ws == RESP;
  assign s_b_id = w_id;
  assign s_b_resp = b_resp;
  assign u_aw_valid = ws == UNCORE && !aw_sent;
  assign u_aw_addr = u_off(w_addr);
  assign u_aw_hart = hart_of(w_id);
  assign u_aw_asid = asid_of(u_aw_hart);
  assign u_aw_user = in_win(w_addr, UBASE);
  assign u_w_valid = ws == UNCORE && !wd_sent;
  assign u_w_data = w_data;
  assign u_w_strb = w_strb;
  assign u_b_ready = ws == UNCORE && aw_sent && wd_sent;

  always_ff @(posedge clock) begin
    cons_valid <= 0;
    if (reset) begin
      ws <= IDLE;
      have_aw <= 0;
      have_w <= 0;
      w_bad <= 0;
      lcr <= 8'h03;
      ier <= 2'b00;
      for (int h = 0; h < HARTS; h++) ctx[h] <= 16'hffff;
    end else case (ws)
      IDLE: begin
        if (s_aw_valid && s_aw_ready) begin
          w_id <= s_aw_id;
          w_addr <= s_aw_addr - PORT_BASE;
          w_len <= s_aw_len;
          have_aw <= 1;
        end
        if (s_w_valid && s_w_ready) begin
          w_data <= s_w_data;
          w_strb <= s_w_strb;
          // the beats of a burst are taken and dropped until the last
          if (s_w_last) have_w <= 1;
          else w_bad <= 1;
        end
        if (have_aw && have_w) begin
          have_aw <= 0;
          have_w <= 0;
          aw_sent <= 0;
          wd_sent <= 0;
          b_resp <= 2'b00;
          if (w_bad || w_len != 0) begin
            b_resp <= 2'b10;
            w_bad <= 0;
            ws <= RESP;
          end else if (to_uncore(w_addr)) begin
            ws <= UNCORE;
          end else begin
            if (in_win(w_addr, CTXBASE) && w_addr[10:3] < 8'(HARTS))
              ctx[w_addr[3 +: HB]] <= w_data[15:0];
            if (w_addr == CONSBASE + 3 && w_strb[3])
              lcr <= w_data[31:24];
            if (w_addr == CONSBASE + 1 && w_strb[1] && !lcr[7])
              ier <= w_data[9:8];
            if (w_addr >= CONSBASE && !(w_addr == CONSBASE && lcr[7])) begin
              cons_valid <= 1;
              cons_off <= w_addr[7:0];
              cons_data <= w_data;
            end
            ws <= RESP;
          end
        end
      end
      UNCORE: begin
        if (u_aw_valid && u_aw_ready) aw_sent <= 1;
        if (u_w_valid && u_w_ready) wd_sent <= 1;
        if (u_b_ready && u_b_valid) begin
          b_resp <= u_b_resp;
          ws <= RESP;
        end
      end
      RESP: if (s_b_ready) ws <= IDLE;
      default: ws <= IDLE;
    endcase
  end
endmodule
