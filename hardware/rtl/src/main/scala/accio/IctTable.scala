package accio

import chisel3._
import chisel3.util._
import accio.regs.Uncore.Row

/** The I/O Connection Table: one register page per row.
  *
  * The 26 registers of each row live in a 1R1W RAM (rows x 32 words) that its clients share
  * through a fixed-priority arbiter; every request is a single-cycle read, write, add or
  * clear-bits that returns the old value. A request with `lock` keeps the arbiter on its client
  * for the client's next request, so that the other clients (the MMIO reads among them) see two
  * updates such as TX_TSTAMP and TX_PKTS both or neither. STATE, LOCAL, REMOTE, OWNER_ASID
  * and ROCE_QPN are mirrored in flops so that the ASID check and the 5-tuple match are
  * combinational over all rows.
  * After reset the table clears itself (one row register per cycle) while `ready` is low.
  */
class IctTable(p: UncoreParams, nClients: Int) extends Module {
  val io = IO(new Bundle {
    val clients = Vec(nClients, Flipped(new RegPort(p)))
    val ready = Output(Bool())
    val shadow = Output(Vec(p.rows, new RowShadow))
    // 5-tuple match of a received datagram: exact first, else the wildcard rows of a group
    // (STATE.GROUP) by a hash of the source, else the first wildcard row; a RoCEv2 row also
    // needs the datagram's BTH destination QP to be its ROCE_QPN
    val lip = Input(UInt(32.W))
    val lport = Input(UInt(16.W))
    val rip = Input(UInt(32.W))
    val rport = Input(UInt(16.W))
    val bth = Input(Bool()) // the UDP payload holds a whole BTH
    val dqpn = Input(UInt(24.W)) // its destination QP
    val hit = Output(Valid(UInt(p.rowBits.W)))
  })

  val ram = Mem(p.rows * p.regsPerRow, UInt(64.W))
  val shadow = RegInit(VecInit(Seq.fill(p.rows)(0.U.asTypeOf(new RowShadow))))
  io.shadow := shadow

  // reset sweep
  val initIdx = RegInit(0.U((p.regIdxBits + 1).W))
  val initDone = initIdx === (p.rows * p.regsPerRow).U
  io.ready := initDone
  val localReset = Row.LOCAL_RESET.U(64.W)
  when(!initDone) {
    ram(initIdx(p.regIdxBits - 1, 0)) :=
      Mux(initIdx(4, 0) === F.reg(Row.LOCAL).U, localReset, 0.U)
    initIdx := initIdx + 1.U
  }
  when(reset.asBool) {
    for (r <- 0 until p.rows) shadow(r).local := localReset(55, 0)
  }

  val arb = Module(new Arbiter(new RegReq(p), nClients))
  val locked = RegInit(false.B)
  val lockOwner = RegInit(0.U(log2Ceil(nClients max 2).W))
  for (i <- 0 until nClients) {
    val allowed = !locked || lockOwner === i.U
    arb.io.in(i).valid := io.clients(i).req.valid && allowed
    arb.io.in(i).bits := io.clients(i).req.bits
    io.clients(i).req.ready := arb.io.in(i).ready && allowed
  }
  arb.io.out.ready := initDone
  when(arb.io.out.fire) {
    locked := arb.io.out.bits.lock
    lockOwner := arb.io.chosen
  }
  val req = arb.io.out.bits
  val idx = Cat(req.row, req.reg)
  val old = ram(idx)
  for (c <- io.clients) c.resp := old
  val nv = MuxLookup(req.op, old)(
    Seq(
      RegOp.Wr -> req.data,
      RegOp.Add -> (old + req.data),
      RegOp.AndNot -> (old & ~req.data)
    )
  )
  when(arb.io.out.fire && req.op =/= RegOp.Rd) {
    ram(idx) := nv
    val s = shadow(req.row)
    switch(req.reg) {
      is(F.reg(Row.STATE).U) { s.state := nv(39, 0) }
      is(F.reg(Row.LOCAL).U) { s.local := nv(55, 0) }
      is(F.reg(Row.REMOTE).U) { s.remote := nv(47, 0) }
      is(F.reg(Row.OWNER_ASID).U) { s.asid := nv(15, 0); s.asidWide := nv(63, 16).orR }
      is(F.reg(Row.ROCE_QPN).U) { s.qpn := nv(23, 0) }
    }
  }

  // 5-tuple match (and the queue pair, for a RoCEv2 row)
  val cand = shadow.map(s =>
    s.live && s.proto === 17.U && s.lip === io.lip && s.lport === io.lport && s.qpnMatch(io.bth, io.dqpn))
  val exact = VecInit(shadow.zip(cand).map { case (s, c) => c && s.rip === io.rip && s.rport === io.rport })
  val wild = VecInit(shadow.zip(cand).map { case (s, c) =>
    c && (s.rip === 0.U || s.rip === io.rip) && (s.rport === 0.U || s.rport === io.rport)
  })
  io.hit.valid := wild.asUInt.orR // an exact row is also a wildcard match
  // a group (SO_REUSEPORT): the member at index (h * n) >> 16 of the n that match, in row
  // order; h is the top half of (x * 0x9E3779B1) mod 2^32, x = rip ^ (rport * 0x10001)
  val member = VecInit(shadow.zip(wild).map { case (s, w) => w && s.group })
  val n = PopCount(member)
  val x = io.rip ^ Cat(io.rport, io.rport)
  val h = (x * "h9E3779B1".U(32.W))(31, 16)
  val k = (h * n)(h.getWidth + n.getWidth - 1, 16)
  val below = (0 until p.rows).map(i => if (i == 0) 0.U else PopCount(member.asUInt(i - 1, 0)))
  val pick = VecInit((0 until p.rows).map(i => member(i) && below(i) === k))
  io.hit.bits := Mux(exact.asUInt.orR, PriorityEncoder(exact),
    Mux(member.asUInt.orR, PriorityEncoder(pick), PriorityEncoder(wild)))
}
