package accio

import chisel3._
import chisel3.util._
import accio.regs.Contract
import accio.regs.Uncore.Row

/** UDP offload engine, transmit side: serves doorbells. For the row it checks the ring, then
  * for each complete record between TX_RPTR and TX_WPTR reads the record header (one word), checks
  * it, reads the payload into the header builder and moves TX_RPTR. A bad record stops the
  * engine (it stays in the ring). Each datagram sent writes TX_TSTAMP (the builder's start time)
  * and then adds to TX_PKTS with nothing in between. A writer sleeping on the row is queued on
  * its hart once something was sent. */
class UdpTx(p: UncoreParams) extends Module with Sequencer {
  val io = IO(new Bundle {
    val doorbell = Flipped(Decoupled(UInt(p.rowBits.W)))
    val enable = Input(Bool())
    val shadow = Input(Vec(p.rows, new RowShadow))
    val reg = new RegPort(p)
    val ev = Decoupled(new Event)
    val ready = Decoupled(new ReadyReq(p))
    val builder = new TxClient
    val builderSent = Input(Bool())
    val builderTime = Input(UInt(64.W))
    val axi = new Bundle {
      val ar = Decoupled(new AxiAddr)
      val r = Flipped(Decoupled(new AxiR))
    }
    val incs = Output(new CounterIncs)
    val busy = Output(Bool())
    val started = Output(Bool()) // a datagram's header build started (for measurements)
  })
  def regPort = io.reg
  def evPort = io.ev
  defaults()
  io.incs := CounterIncs.none
  io.ready.valid := false.B
  io.ready.bits := 0.U.asTypeOf(io.ready.bits)
  io.started := false.B

  private val states = Enum(25)
  val List(sIdle, sDisabled, sRdBase, sRdSize, sRdW, sRdR, sRdMac, sCheck, sRingErr, sLoop, sHdrCmd, sHdrData) = states.take(12)
  val List(sHdrDone, sPayCmd, sPayData, sFin, sWaitSent, sRptr, sStamp, sPkts, sBytes, sBad, sBadEv, sDone, sReady) =
    states.drop(12)
  val state = RegInit(sIdle)
  io.busy := state =/= sIdle

  val row = Reg(UInt(p.rowBits.W))
  val base = Reg(UInt(64.W))
  val size = Reg(UInt(64.W))
  val wptr = Reg(UInt(64.W))
  val rptr = Reg(UInt(64.W))
  val dmac = Reg(UInt(48.W))
  val hdrWord = Reg(UInt(64.W))
  val sent = Reg(Bool())
  val stamp = Reg(UInt(64.W))
  val payErr = Reg(Bool())
  val sh = io.shadow(row)

  val rd = Module(new DmaReader)
  io.axi.ar <> rd.io.axi.ar
  rd.io.axi.r <> io.axi.r
  rd.io.cmd.valid := false.B
  rd.io.cmd.bits.base := base
  rd.io.cmd.bits.size := size
  rd.io.cmd.bits.ptr := rptr
  rd.io.cmd.bits.bytes := Contract.TX_HDR.U
  rd.io.data.ready := false.B

  // record header: length, destination port and address; zero: the row's remote
  val hLen = Rec.field(hdrWord, Contract.TX_REC_LEN, Contract.TX_REC_LEN_SIZE)
  val hdrPort = Rec.field(hdrWord, Contract.TX_REC_DPORT, Contract.TX_REC_DPORT_SIZE)
  val hdrIp = Rec.field(hdrWord, Contract.TX_REC_DIP, Contract.TX_REC_DIP_SIZE)
  val hPort = Mux(hdrPort === 0.U, sh.rport, hdrPort)
  val hIp = Mux(hdrIp === 0.U, sh.rip, hdrIp)
  val rec = Rec.pad(Contract.TX_HDR.U +& hLen)

  io.builder.cmd.valid := false.B
  io.builder.cmd.bits.dmac := dmac
  io.builder.cmd.bits.sip := sh.lip
  io.builder.cmd.bits.sport := sh.lport
  io.builder.cmd.bits.dip := hIp
  io.builder.cmd.bits.dport := hPort
  io.builder.cmd.bits.len := hLen
  io.builder.cmd.bits.roce := sh.roce
  io.builder.cmd.bits.noDf := sh.noDf
  io.builder.cmd.bits.tos := sh.tos
  io.builder.cmd.bits.ttl := sh.ttl
  io.builder.data.valid := false.B
  io.builder.data.bits := rd.io.data.bits
  io.builder.fin.valid := false.B
  io.builder.fin.bits := !payErr

  io.doorbell.ready := state === sIdle
  when(io.doorbell.fire) {
    row := io.doorbell.bits
    sent := false.B
    state := Mux(io.enable && io.shadow(io.doorbell.bits).live, sRdBase, sDisabled)
  }
  when(state === sDisabled) {
    io.incs.badDoorbell := true.B
    state := sBadEv
  }
  when(state === sRdBase) { reg(row, Row.TX_BASE, RegOp.Rd) { v => base := v; state := sRdSize } }
  when(state === sRdSize) { reg(row, Row.TX_SIZE, RegOp.Rd) { v => size := v; state := sRdW } }
  when(state === sRdW) { reg(row, Row.TX_WPTR, RegOp.Rd) { v => wptr := v; state := sRdR } }
  when(state === sRdR) { reg(row, Row.TX_RPTR, RegOp.Rd) { v => rptr := v; state := sRdMac } }
  when(state === sRdMac) { reg(row, Row.DST_MAC, RegOp.Rd) { v => dmac := v(47, 0); state := sCheck } }
  when(state === sCheck) {
    state := Mux(!Csum.ringSizeOk(size) || wptr < rptr || wptr - rptr > size, sRingErr, sLoop)
  }
  when(state === sRingErr) { reg(row, Row.TX_ERRORS, RegOp.Add, 1.U) { _ => state := sBadEv } }
  when(state === sLoop) { state := Mux(wptr - rptr >= Contract.TX_HDR.U, sHdrCmd, sDone) }
  when(state === sHdrCmd) {
    rd.io.cmd.valid := true.B
    when(rd.io.cmd.fire) { state := sHdrData }
  }
  when(state === sHdrData) {
    rd.io.data.ready := true.B
    when(rd.io.data.fire) { hdrWord := rd.io.data.bits }
    when(rd.io.done.valid) {
      state := sHdrDone
      when(rd.io.done.bits) { state := sBad }
    }
  }
  when(state === sHdrDone) {
    val bad = hLen > Contract.MAX_PAYLOAD.U || rec > wptr - rptr || hIp === 0.U || hPort === 0.U
    state := Mux(bad, sBad, sPayCmd)
  }
  when(state === sPayCmd) {
    rd.io.cmd.bits.ptr := rptr + Contract.TX_HDR.U
    rd.io.cmd.bits.bytes := hLen
    rd.io.cmd.valid := io.builder.cmd.ready
    io.builder.cmd.valid := rd.io.cmd.ready
    when(rd.io.cmd.fire) { state := sPayData; payErr := false.B; io.started := true.B }
  }
  when(state === sPayData) {
    io.builder.data.valid := rd.io.data.valid
    rd.io.data.ready := io.builder.data.ready
    when(rd.io.done.valid) {
      payErr := rd.io.done.bits
      state := sFin
    }
  }
  when(state === sFin) {
    io.builder.fin.valid := true.B
    when(io.builder.fin.fire) { state := Mux(payErr, sBad, sWaitSent) }
  }
  when(state === sWaitSent && io.builderSent) { state := sRptr; stamp := io.builderTime }
  when(state === sRptr) {
    reg(row, Row.TX_RPTR, RegOp.Wr, rptr + rec) { _ => rptr := rptr + rec; state := sStamp }
  }
  when(state === sStamp) { reg(row, Row.TX_TSTAMP, RegOp.Wr, stamp, lock = true) { _ => state := sPkts } }
  when(state === sPkts) { reg(row, Row.TX_PKTS, RegOp.Add, 1.U) { _ => state := sBytes } }
  when(state === sBytes) {
    reg(row, Row.TX_BYTES, RegOp.Add, hLen) { _ =>
      io.incs.txSent := true.B
      sent := true.B
      state := sLoop
    }
  }
  // events: a doorbell on a disabled row, a bad ring (info 0) or a bad record (info: its pointer)
  val evType = Reg(UInt(8.W))
  val evInfo = Reg(UInt(32.W))
  when(state === sDisabled) { evType := Contract.EV_DOORBELL_DISABLED.U; evInfo := 0.U }
  when(state === sRingErr) { evType := Contract.EV_TX_RING_ERROR.U; evInfo := 0.U }
  when(state === sBad) { reg(row, Row.TX_ERRORS, RegOp.Add, 1.U) { _ => state := sBadEv } }
  when(state === sBad) { evType := Contract.EV_TX_RING_ERROR.U; evInfo := rptr(30, 0) }
  when(state === sBadEv) {
    evPort.valid := true.B
    evPort.bits.typ := evType
    evPort.bits.row := row
    evPort.bits.info := evInfo
    when(evPort.fire) { state := Mux(evType === Contract.EV_DOORBELL_DISABLED.U, sIdle, sDone) }
  }
  when(state === sDone) {
    reg(row, Row.STATE, RegOp.AndNot, Mux(sent, F.maskU(Row.STATE_TX_SUSP), 0.U)) { v =>
      state := Mux(sent && F(v, Row.STATE_TX_SUSP) === 1.U, sReady, sIdle)
      io.ready.bits.state := v
      hdrWord := v
    }
  }
  when(state === sReady) {
    io.ready.valid := true.B
    io.ready.bits.row := row
    io.ready.bits.tx := true.B
    io.ready.bits.state := hdrWord
    when(io.ready.fire) { state := sIdle }
  }
}
