package accio

import chisel3._
import chisel3.util._
import accio.regs.{Contract, Uncore}
import accio.regs.Uncore.Row

/** The register block: the AXI4-Lite MMIO slave with the privilege/ASID sideband, one access at
  * a time. It decodes the global page and the row pages, applies the ICT protection rules of
  * user-mode accesses (owner ASID, kernel-only fields; refused loads return poison, refusals
  * are counted and reported), holds CTRL and the global counters, and forwards doorbells and
  * MMIO transmit window stores to the engines. */
class RegBlock(p: UncoreParams, nIncs: Int) extends Module with Sequencer {
  val io = IO(new Bundle {
    val axi = new AxiLiteSlave(p.addrBits)
    val reg = new RegPort(p)
    val ev = Decoupled(new Event)
    val shadow = Input(Vec(p.rows, new RowShadow))
    // hart registers (ready queues)
    val hart = Output(UInt(p.hartBits.W))
    val hartOff = Output(UInt(6.W))
    val hartRead = Output(Bool())
    val hartWrite = Output(Bool())
    val hartWdata = Output(UInt(64.W))
    val hartRdata = Input(UInt(64.W))
    // event queue
    val evqPop = Output(Bool())
    val evqHead = Input(UInt(64.W))
    val evqStatus = Input(UInt(64.W))
    val evqMaskWrite = Output(Valid(Bool()))
    val evqMask = Input(Bool())
    // engines
    val enable = Output(Bool())
    val missEvents = Output(Bool())
    val doorbell = Decoupled(UInt(p.rowBits.W))
    val winStore = Decoupled(new WinStore(p))
    val incs = Input(Vec(nIncs, new CounterIncs))
    val busy = Output(Bool())
  })
  def regPort = io.reg
  def evPort = io.ev
  defaults()
  io.hart := 0.U
  io.hartOff := 0.U
  io.hartRead := false.B
  io.hartWrite := false.B
  io.hartWdata := 0.U
  io.evqPop := false.B
  io.evqMaskWrite.valid := false.B
  io.evqMaskWrite.bits := false.B
  io.doorbell.valid := false.B
  io.winStore.valid := false.B

  val sIdle :: sRead :: sWrite :: sRdRow :: sStateRd :: sWrRow :: sRefuse :: sRefuseEv :: sRangeEv :: sDoorbell :: sWin :: sRResp :: sBResp :: Nil = Enum(13)
  val state = RegInit(sIdle)
  io.busy := state =/= sIdle

  val addr = Reg(UInt(p.addrBits.W))
  val who = Reg(new AccessUser)
  val wdata = Reg(UInt(64.W))
  val wstrb = Reg(UInt(8.W))
  val rdata = Reg(UInt(64.W))
  val isRead = Reg(Bool())

  // global state
  val ctrl = RegInit(0.U(2.W))
  io.enable := ctrl(0)
  io.missEvents := ctrl(1)
  val incs = Wire(new CounterIncs)
  val myIncs = WireDefault(CounterIncs.none)
  incs := 0.U.asTypeOf(incs)
  val names = Seq("ictMiss", "protViolation", "rxMalformed", "badDoorbell", "rxFragment", "rxDelivered", "txSent")
  val counters = names.map { n =>
    val c = RegInit(0.U(64.W))
    val pulses = (io.incs :+ myIncs).map(_.elements(n).asUInt.asBool)
    c := c + PopCount(pulses)
    n -> c
  }.toMap

  // accept one access
  io.axi.aw.ready := state === sIdle && io.axi.w.valid
  io.axi.w.ready := state === sIdle && io.axi.aw.valid
  io.axi.ar.ready := state === sIdle && !(io.axi.aw.valid && io.axi.w.valid)
  when(io.axi.aw.fire) {
    addr := io.axi.aw.bits.addr
    who := io.axi.aw.bits.user
    wdata := io.axi.w.bits.data
    wstrb := io.axi.w.bits.strb
    isRead := false.B
    state := sWrite
  }
  when(io.axi.ar.fire) {
    addr := io.axi.ar.bits.addr & ~7.U(p.addrBits.W)
    who := io.axi.ar.bits.user
    isRead := true.B
    state := sRead
  }

  // store size and lane from the strobes: only naturally aligned 1, 2, 4 and 8-byte stores
  val sizes = for (sz <- Seq(1, 2, 4, 8); lane <- 0 until 8 by sz) yield (sz, lane, (((1 << sz) - 1) << lane))
  val strbOk = sizes.map(s => wstrb === s._3.U).reduce(_ || _)
  val size = MuxCase(0.U(4.W), sizes.map(s => (wstrb === s._3.U) -> s._1.U(4.W)))
  val lane = MuxCase(0.U(3.W), sizes.map(s => (wstrb === s._3.U) -> s._2.U(3.W)))
  val off = Cat(addr(p.addrBits - 1, 3), Mux(isRead, 0.U(3.W), lane))
  val value = wdata >> Cat(lane, 0.U(3.W))

  val isGlobal = off < Row.Base.U
  val rowIdx = (off - Row.Base.U) >> 12
  val r = off(11, 0)
  val inRange = rowIdx < p.rows.U
  val row = rowIdx(p.rowBits - 1, 0)
  val owner = io.shadow(row).ownedBy(who.asid)
  val window = !isGlobal && r >= Row.MMIO_TX.U

  // refusal: counted globally and per row, reported with the offset and the ASID
  val refuseRow = Reg(Bool()) // a row page (else the global page)
  def refuse(rowPage: Bool): Unit = {
    refuseRow := rowPage
    myIncs.protViolation := true.B
    state := Mux(rowPage, sRefuse, sRefuseEv)
  }
  when(state === sRefuse) { reg(row, Row.PROT_FAULTS, RegOp.Add, 1.U) { _ => state := sRefuseEv } }
  when(state === sRefuseEv) {
    event(Contract.EV_PROTECTION, Mux(refuseRow, row.pad(16), "hffff".U), Cat(who.asid, r))(
      state := Mux(isRead, sRResp, sBResp))
    rdata := Consts.Poison.U
  }
  when(state === sRangeEv) {
    event(Contract.EV_ROW_RANGE, "hffff".U, rowIdx)(state := Mux(isRead, sRResp, sBResp))
    rdata := Consts.Poison.U
  }

  // global page
  val hartSel = off >= Uncore.Hart.Base.U && off < (Uncore.Hart.Base + p.harts * Uncore.Hart.Stride).U
  io.hart := ((off - Uncore.Hart.Base.U) >> 6)(p.hartBits - 1, 0)
  io.hartOff := off(5, 0)
  io.hartWdata := value
  val configVal = p.rows.U(16.W) | (p.harts.U(64.W) << Uncore.CONFIG_HARTS._1) | (p.qdepth.U(64.W) << Uncore.CONFIG_QDEPTH._1)
  val globalRead = MuxCase(0.U(64.W), Seq(
    hartSel -> io.hartRdata,
    (off === Uncore.ID.U) -> Uncore.ID_RESET.U(64.W),
    (off === Uncore.CONFIG.U) -> configVal,
    (off === Uncore.CTRL.U) -> ctrl.pad(64),
    (off === Uncore.EVQ_POP.U) -> io.evqHead,
    (off === Uncore.EVQ_STATUS.U) -> io.evqStatus,
    (off === Uncore.EVQ_INTR_MASK.U) -> Cat(0.U(63.W), io.evqMask),
    (off === Uncore.ICT_MISSES.U) -> counters("ictMiss"),
    (off === Uncore.PROT_VIOLATIONS.U) -> counters("protViolation"),
    (off === Uncore.RX_MALFORMED.U) -> counters("rxMalformed"),
    (off === Uncore.BAD_DOORBELLS.U) -> counters("badDoorbell"),
    (off === Uncore.RX_FRAGMENTS.U) -> counters("rxFragment"),
    (off === Uncore.RX_DELIVERED.U) -> counters("rxDelivered"),
    (off === Uncore.TX_SENT.U) -> counters("txSent")
  ))

  when(state === sRead) {
    state := sRResp
    when(isGlobal) {
      when(who.user) { refuse(false.B) }.otherwise {
        rdata := globalRead
        io.hartRead := hartSel
        io.evqPop := off === Uncore.EVQ_POP.U
      }
    }.elsewhen(!inRange) {
      state := sRangeEv
    }.elsewhen(who.user && !owner) {
      refuse(true.B)
    }.elsewhen(r === Row.DOORBELL.U || r >= (p.regsPerRow * 8).U) {
      rdata := 0.U
    }.otherwise {
      state := sRdRow
    }
  }
  when(state === sRdRow) { regAt(row, r(7, 3), RegOp.Rd) { v => rdata := v; state := sRResp } }

  // writes
  val userStateMask = F.maskU(Row.STATE_RX_SUSP, Row.STATE_TX_SUSP)
  val kernelStateMask = F.maskU(Row.STATE_ENABLED, Row.STATE_ACCEL, Row.STATE_RX_SUSP, Row.STATE_TX_SUSP,
    Row.STATE_INTR, Row.STATE_ROCE, Row.STATE_NO_DF, Row.STATE_GROUP, Row.STATE_PRIO, Row.STATE_HART,
    Row.STATE_TOS, Row.STATE_TTL)
  val rowWriteVal = Reg(UInt(64.W))
  val kernelOnly = Seq(Row.LOCAL, Row.REMOTE, Row.OWNER_ASID, Row.OWNER_COOKIE, Row.DST_MAC, Row.RX_BASE,
    Row.RX_SIZE, Row.TX_BASE, Row.TX_SIZE, Row.RX_WPTR, Row.TX_RPTR, Row.RX_PKTS, Row.RX_BYTES, Row.RX_DROPS,
    Row.TX_PKTS, Row.TX_BYTES, Row.TX_ERRORS, Row.PROT_FAULTS, Row.MMIO_TX_NEXT, Row.MMIO_TX_ERRORS, Row.TX_TSTAMP,
    Row.ROCE_QPN)
  val isKernelOnly = kernelOnly.map(o => r === o.U).reduce(_ || _)
  val isUserReg = r === Row.RX_RPTR.U || r === Row.TX_WPTR.U
  when(state === sWrite) {
    state := sBResp
    when(!strbOk || (!window && size =/= 8.U)) {
      // the bus never issues these; registers take 64-bit stores only
    }.elsewhen(isGlobal) {
      when(who.user) { refuse(false.B) }.otherwise {
        io.hartWrite := hartSel
        when(off === Uncore.CTRL.U) { ctrl := value(1, 0) }
        io.evqMaskWrite.valid := off === Uncore.EVQ_INTR_MASK.U
        io.evqMaskWrite.bits := value(0)
      }
    }.elsewhen(!inRange) {
      myIncs.badDoorbell := r === Row.DOORBELL.U
      state := sRangeEv
    }.elsewhen(who.user && !owner) {
      refuse(true.B)
    }.elsewhen(window) {
      state := sWin
    }.elsewhen(r === Row.STATE.U) {
      when(who.user) { state := sStateRd }.otherwise {
        rowWriteVal := value & kernelStateMask
        state := sWrRow
      }
    }.elsewhen(isUserReg) {
      rowWriteVal := value
      state := sWrRow
    }.elsewhen(r === Row.DOORBELL.U) {
      state := sDoorbell
    }.elsewhen(isKernelOnly) {
      when(who.user) { refuse(true.B) }.otherwise {
        rowWriteVal := value
        state := sWrRow
      }
    }
  }
  when(state === sStateRd) {
    regAt(row, r(7, 3), RegOp.Rd) { cur =>
      when(((value ^ cur) & ~userStateMask) =/= 0.U) { refuse(true.B) }.otherwise {
        rowWriteVal := (cur & ~userStateMask) | (value & userStateMask)
        state := sWrRow
      }
    }
  }
  when(state === sWrRow) { regAt(row, r(7, 3), RegOp.Wr, rowWriteVal) { _ => state := sBResp } }
  io.doorbell.bits := row
  when(state === sDoorbell) {
    io.doorbell.valid := true.B
    when(io.doorbell.fire) { state := sBResp }
  }
  io.winStore.bits.row := row
  io.winStore.bits.off := r(10, 0)
  io.winStore.bits.size := size
  io.winStore.bits.data := value
  when(state === sWin) {
    io.winStore.valid := true.B
    when(io.winStore.fire) { state := sBResp }
  }

  io.axi.r.valid := state === sRResp
  io.axi.r.bits.data := rdata
  io.axi.r.bits.resp := 0.U
  when(io.axi.r.fire) { state := sIdle }
  io.axi.b.valid := state === sBResp
  io.axi.b.bits := 0.U
  when(io.axi.b.fire) { state := sIdle }
}
