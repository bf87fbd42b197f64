package accio

import chisel3._
import chisel3.util._
import accio.regs.Contract
import accio.regs.Uncore.Row

/** A store into a row's direct MMIO transmit window. */
class WinStore(p: UncoreParams) extends Bundle {
  val row = UInt(p.rowBits.W)
  val off = UInt(11.W) // byte offset in the 2 KiB window, naturally aligned for `size`
  val size = UInt(4.W) // 1, 2, 4 or 8
  val data = UInt(64.W) // the stored value in the low `size` bytes
}

/** The MMIO-TX reorder unit (seed 000, section 3.1), one per row: a 2 KiB data buffer, a valid
  * bit per byte and the length address register (MMIO_TX_NEXT modulo 2 KiB).
  *
  * A store sets its bytes' valid bits; a store to a byte that is still valid (not yet released)
  * is refused (section 3.4, address reuse). After each store the unit looks at the earliest
  * message: once its length bytes are valid it checks the message's valid bits 64 at a time
  * (the parallel AND, over at most 24 blocks), and when all are set clears them, advances the
  * length address register and hands the message to the TX header builder, then looks at the
  * next one. A length over MAX_PAYLOAD discards the window and restarts at its next boundary. A sent
  * message writes TX_TSTAMP (the builder's start time) and then adds to TX_PKTS with nothing in
  * between.
  * Stores wait while the unit works (back-pressure on the MMIO bus).
  */
class MmioTx(p: UncoreParams) extends Module with Sequencer {
  val io = IO(new Bundle {
    val store = Flipped(Decoupled(new WinStore(p)))
    val enable = Input(Bool())
    val shadow = Input(Vec(p.rows, new RowShadow))
    val reg = new RegPort(p)
    val ev = Decoupled(new Event)
    val builder = new TxClient
    val builderSent = Input(Bool())
    val builderTime = Input(UInt(64.W))
    val incs = Output(new CounterIncs)
    val busy = Output(Bool())
    val ready = Output(Bool()) // reset sweep done
    val released = Output(Bool()) // a message was handed to the header builder
  })
  def regPort = io.reg
  def evPort = io.ev
  defaults()
  io.incs := CounterIncs.none
  io.released := false.B

  val W = Consts.WinBytes
  val blocks = W / 64
  val data = Mem(p.rows * (W / 8), Vec(8, UInt(8.W)))
  val valid = Mem(p.rows * blocks, UInt(64.W))

  private val states = Enum(25)
  val List(sInit, sIdle, sCheck, sReuse, sReuseEv, sDisabledEv, sNext, sLen, sBadLen, sBadLenEv, sClearAll, sBadLenNext) = states.take(12)
  val List(sScan, sClear, sNextWr, sDestErr, sDestErrEv, sMac, sCmd, sPay, sFin, sWait, sStamp, sPkts, sBytes) =
    states.drop(12)
  val state = RegInit(sInit)
  io.busy := state =/= sIdle
  io.ready := state =/= sInit

  val st = Reg(new WinStore(p))
  val row = st.row
  val sh = io.shadow(row)
  val next = Reg(UInt(64.W))
  val len = Reg(UInt(16.W))
  val cur = Reg(UInt(11.W))
  val remaining = Reg(UInt(12.W))
  val errOff = Reg(UInt(11.W))
  val hdrWord = Reg(UInt(64.W))
  val dmac = Reg(UInt(48.W))
  val word = Reg(UInt(9.W))
  val stamp = Reg(UInt(64.W))
  val blk = RegInit(0.U((p.rowBits + log2Ceil(blocks) + 1).W))

  def vIdx(off: UInt): UInt = Cat(row, off(10, 6))
  def dIdx(off: UInt): UInt = Cat(row, off(10, 3))
  def dWord(off: UInt): UInt = data(dIdx(off)).asUInt

  // reset sweep of the valid vectors
  when(state === sInit) {
    valid(blk(blk.getWidth - 2, 0)) := 0.U
    blk := blk + 1.U
    when(blk === (p.rows * blocks - 1).U) { state := sIdle }
  }

  io.store.ready := state === sIdle
  when(io.store.fire) {
    st := io.store.bits
    state := sCheck
  }
  val sizeMask = MuxLookup(st.size, 0.U(8.W))(Seq(1.U -> "h01".U, 2.U -> "h03".U, 4.U -> "h0f".U, 8.U -> "hff".U))
  val bits = (sizeMask.pad(64) << st.off(5, 0))(63, 0)
  val vw = valid(vIdx(st.off))
  val clash = vw & bits
  when(state === sCheck) {
    when(!io.enable || !sh.live) {
      io.incs.badDoorbell := true.B
      state := sDisabledEv
    }.elsewhen(clash =/= 0.U) {
      errOff := Cat(st.off(10, 6), PriorityEncoder(clash))
      state := sReuse
    }.otherwise {
      val lane = st.off(2, 0)
      val v = (st.data << Cat(lane, 0.U(3.W)))(63, 0)
      data.write(dIdx(st.off), VecInit((0 until 8).map(i => v(8 * i + 7, 8 * i))),
        (sizeMask << lane)(7, 0).asBools)
      valid(vIdx(st.off)) := vw | bits
      state := sNext
    }
  }
  when(state === sDisabledEv) { event(Contract.EV_DOORBELL_DISABLED, row, st.off) { state := sIdle } }
  when(state === sReuse) { reg(row, Row.MMIO_TX_ERRORS, RegOp.Add, 1.U) { _ => state := sReuseEv } }
  when(state === sReuseEv) { event(Contract.EV_MMIO_TX_ERROR, row, errOff) { state := sIdle } }

  // the earliest message
  when(state === sNext) { reg(row, Row.MMIO_TX_NEXT, RegOp.Rd) { v => next := v; state := sLen } }
  val start = next(10, 0)
  val startWord = dWord(start)
  // the length address register: the message's length field (in its first word)
  val startLen = Rec.field(startWord, Contract.TX_REC_LEN, Contract.TX_REC_LEN_SIZE)
  val lenValid = (valid(vIdx(start)) >> start(5, 0))(
    Contract.TX_REC_LEN + Contract.TX_REC_LEN_SIZE - 1, Contract.TX_REC_LEN).andR
  val msgLen = Rec.pad(Contract.TX_HDR.U +& startLen)
  when(state === sLen) {
    len := startLen
    hdrWord := startWord
    cur := start
    remaining := msgLen
    state := Mux(!lenValid, sIdle, Mux(startLen > Contract.MAX_PAYLOAD.U, sBadLen, sScan))
  }
  when(state === sBadLen) { reg(row, Row.MMIO_TX_ERRORS, RegOp.Add, 1.U) { _ => state := sBadLenEv } }
  when(state === sBadLenEv) { event(Contract.EV_MMIO_TX_ERROR, row, start) { state := sClearAll; cur := 0.U } }
  when(state === sClearAll) {
    valid(vIdx(cur)) := 0.U
    cur := cur + 64.U
    when(cur === (W - 64).U) { state := sBadLenNext }
  }
  when(state === sBadLenNext) {
    val nn = (next + W.U) & ~((W - 1).U(64.W))
    reg(row, Row.MMIO_TX_NEXT, RegOp.Wr, nn) { _ => state := sIdle }
  }

  // the parallel AND, one 64-byte block per cycle; then the same walk clears the bits
  val lo = cur(5, 0)
  val room = 64.U(7.W) - lo
  val n = Mux(remaining < room, remaining, room)
  val runMask = Mux(n === 64.U, ~0.U(64.W), ((1.U(65.W) << n) - 1.U)(63, 0))
  val blkMask = (runMask << lo)(63, 0)
  val cw = valid(vIdx(cur))
  val msgLenR = Rec.pad(Contract.TX_HDR.U +& len)
  when(state === sScan || state === sClear) {
    cur := cur + n
    remaining := remaining - n
  }
  when(state === sScan) {
    when((cw & blkMask) =/= blkMask) {
      state := sIdle
    }.elsewhen(remaining === n) {
      state := sClear
      cur := start
      remaining := msgLenR
    }
  }
  when(state === sClear) {
    valid(vIdx(cur)) := cw & ~blkMask
    when(remaining === n) { state := sNextWr }
  }
  val hdrPort = Rec.field(hdrWord, Contract.TX_REC_DPORT, Contract.TX_REC_DPORT_SIZE)
  val hdrIp = Rec.field(hdrWord, Contract.TX_REC_DIP, Contract.TX_REC_DIP_SIZE)
  val dport = Mux(hdrPort === 0.U, sh.rport, hdrPort)
  val dip = Mux(hdrIp === 0.U, sh.rip, hdrIp)
  when(state === sNextWr) {
    reg(row, Row.MMIO_TX_NEXT, RegOp.Wr, next + msgLenR) { _ =>
      state := Mux(dip === 0.U || dport === 0.U, sDestErr, sMac)
    }
  }
  when(state === sDestErr) { reg(row, Row.MMIO_TX_ERRORS, RegOp.Add, 1.U) { _ => state := sDestErrEv } }
  when(state === sDestErrEv) { event(Contract.EV_MMIO_TX_ERROR, row, start) { state := sNext } }

  // hand the message to the header builder
  when(state === sMac) { reg(row, Row.DST_MAC, RegOp.Rd) { v => dmac := v(47, 0); state := sCmd; word := 0.U } }
  io.builder.cmd.valid := state === sCmd
  io.builder.cmd.bits.dmac := dmac
  io.builder.cmd.bits.sip := sh.lip
  io.builder.cmd.bits.sport := sh.lport
  io.builder.cmd.bits.dip := dip
  io.builder.cmd.bits.dport := dport
  io.builder.cmd.bits.len := len
  io.builder.cmd.bits.roce := sh.roce
  io.builder.cmd.bits.noDf := sh.noDf
  io.builder.cmd.bits.tos := sh.tos
  io.builder.cmd.bits.ttl := sh.ttl
  when(io.builder.cmd.fire) { state := Mux(len === 0.U, sFin, sPay); io.released := true.B }
  val nWords = (len +& 7.U) >> 3
  val payOff = start + Contract.TX_HDR.U + (word << 3)
  io.builder.data.valid := state === sPay
  io.builder.data.bits := dWord(payOff(10, 0))
  when(io.builder.data.fire) {
    word := word + 1.U
    when(word + 1.U === nWords) { state := sFin }
  }
  io.builder.fin.valid := state === sFin
  io.builder.fin.bits := true.B
  when(io.builder.fin.fire) { state := sWait }
  when(state === sWait && io.builderSent) { state := sStamp; stamp := io.builderTime }
  when(state === sStamp) { reg(row, Row.TX_TSTAMP, RegOp.Wr, stamp, lock = true) { _ => state := sPkts } }
  when(state === sPkts) { reg(row, Row.TX_PKTS, RegOp.Add, 1.U) { _ => state := sBytes } }
  when(state === sBytes) {
    reg(row, Row.TX_BYTES, RegOp.Add, len) { _ => io.incs.txSent := true.B; state := sNext }
  }
}
