package accio

import chisel3._
import chisel3.util._
import accio.regs.Contract
import accio.regs.Uncore.Row

/** UDP offload engine, receive side.
  *
  * Takes a frame from the AXI-Stream input into a 2 KiB frame buffer, capturing the first 96
  * bytes and summing the IPv4 header and the UDP datagram on the fly (one beat behind, once the
  * header length and UDP length are known). At the last beat it decides as the model does: not
  * for the engine (pass to the normal NIC path), malformed (dropped, counted), fragment (passed,
  * counted), ICT miss (passed, counted, optional event) or a row; the UDP checksum is checked for a
  * row's datagrams only (a miss passes as it came). For a row it checks the RX
  * ring's space and writes the record (RX_HDR-byte header, payload realigned from the buffer) with
  * the DMA writer, then moves RX_WPTR, counts, and queues a sleeping reader on its hart.
  * For a row with STATE.ROCE the RoCEv2 ICRC (`Icrc`) is computed on the way in too, and a
  * datagram whose ICRC is wrong, or that has no room for one, is dropped as malformed.
  */
class UdpRx(p: UncoreParams) extends Module with Sequencer {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new StreamBeat))
    val toNic = Decoupled(new StreamBeat)
    val verdict = Valid(Bool()) // true: the engine took the frame
    val enable = Input(Bool())
    val missEvents = Input(Bool())
    val time = Input(UInt(64.W))
    val lip = Output(UInt(32.W))
    val lport = Output(UInt(16.W))
    val rip = Output(UInt(32.W))
    val rport = Output(UInt(16.W))
    val bth = Output(Bool()) // the UDP payload holds a whole BTH (RoCEv2 rows match on its QP)
    val dqpn = Output(UInt(24.W))
    val hit = Input(Valid(UInt(p.rowBits.W)))
    val hitRoce = Input(Bool()) // the hit row has STATE.ROCE
    val reg = new RegPort(p)
    val ev = Decoupled(new Event)
    val ready = Decoupled(new ReadyReq(p))
    val axi = new Bundle {
      val aw = Decoupled(new AxiAddr)
      val w = Decoupled(new AxiW)
      val b = Flipped(Decoupled(UInt(2.W)))
    }
    val incs = Output(new CounterIncs)
    val busy = Output(Bool())
    val recordDone = Output(Bool()) // RX_WPTR moved past a new record
  })
  def regPort = io.reg
  def evPort = io.ev
  defaults()
  io.incs := CounterIncs.none
  io.verdict.valid := false.B
  io.verdict.bits := false.B
  io.ready.valid := false.B
  io.ready.bits := 0.U.asTypeOf(io.ready.bits)
  io.recordDone := false.B

  val sRecv :: sLastSum :: sDecide :: sPass :: sMissEv :: sRdBase :: sRdSize :: sRdW :: sRdR :: sCheck :: sDma :: sDmaWait :: sDrop :: sDropEv :: sWptr :: sPkts :: sBytes :: sSusp :: sReady :: Nil = Enum(19)
  val state = RegInit(sRecv)

  val bufWords = Consts.FrameBufBytes / 8
  val buf = Mem(bufWords, UInt(64.W))
  val hdr = Reg(Vec(96, UInt(8.W)))
  val beatIdx = RegInit(0.U(12.W))
  val len = RegInit(0.U(16.W))
  val tooLong = RegInit(false.B)

  // receive
  io.in.ready := state === sRecv
  when(io.in.fire) {
    val b = io.in.bits
    when(beatIdx < bufWords.U) { buf(beatIdx) := b.data }.otherwise { tooLong := true.B }
    for (k <- 0 until 12; i <- 0 until 8) {
      when(beatIdx === k.U) { hdr(8 * k + i) := b.data(8 * i + 7, 8 * i) }
    }
    len := len + PopCount(b.keep)
    beatIdx := Mux(b.last, 0.U, Mux(beatIdx.andR, beatIdx, beatIdx + 1.U))
    when(b.last) { state := sLastSum }
  }

  def be16(i: UInt): UInt = Cat(hdr(i), hdr(i + 1.U))
  def be16(i: Int): UInt = Cat(hdr(i), hdr(i + 1))
  val ihl = Cat(hdr(14)(3, 0), 0.U(2.W))
  val udpOff = 14.U(8.W) + ihl
  val ulen = be16(udpOff + 4.U)
  val tot = be16(16)

  // checksums, one beat behind the input
  val pend = RegInit(false.B)
  val pendData = Reg(UInt(64.W))
  val pendOff = Reg(UInt(16.W))
  val pendKeep = Reg(UInt(8.W))
  val ipSum = RegInit(0.U(32.W))
  val udpSum = RegInit(0.U(32.W))
  val crc = RegInit(Icrc.Init.U(32.W)) // as if the IPv4 header were 20 bytes
  pend := io.in.fire
  when(io.in.fire) {
    pendData := io.in.bits.data
    pendOff := beatIdx << 3
    pendKeep := io.in.bits.keep
  }
  when(pend) {
    val o = (0 until 8).map(i => pendOff + i.U)
    val inIp = (0 until 8).map(i => pendKeep(i) && o(i) >= 14.U && o(i) < 14.U +& ihl)
    val inUdp = (0 until 8).map(i =>
      pendKeep(i) && o(i) >= udpOff && (o(i) < udpOff +& 8.U || o(i) < udpOff +& ulen))
    ipSum := ipSum + Csum.beat(pendData, inIp)
    udpSum := udpSum + Csum.beat(pendData, inUdp)
    // the UDP length is known from beat 5 on; the bytes before it are always covered
    crc := Icrc.beat(crc, pendData, pendOff, Mux(pendOff < 40.U, "hffff".U, be16(38) +& 30.U), pendKeep)
  }
  when(state === sLastSum) { state := sDecide }

  // decision
  val sip = Cat(hdr(26), hdr(27), hdr(28), hdr(29))
  val dip = Cat(hdr(30), hdr(31), hdr(32), hdr(33))
  val sport = be16(udpOff)
  val dport = be16(udpOff + 2.U)
  val ucsum = be16(udpOff + 6.U)
  io.lip := dip
  io.lport := dport
  io.rip := sip
  io.rport := sport
  io.bth := ulen >= (8 + 12).U
  io.dqpn := Cat(hdr(udpOff + 13.U), hdr(udpOff + 14.U), hdr(udpOff + 15.U))
  val plen = ulen - 8.U
  val notForUs = !io.enable || len < 14.U || be16(12) =/= 0x0800.U || len < 34.U || hdr(23) =/= 17.U
  val badIp = hdr(14)(7, 4) =/= 4.U || ihl < 20.U || len < 14.U +& ihl || tot < ihl ||
    14.U +& tot > len || Csum.fold(ipSum) =/= "hffff".U
  // decided before any UDP header is asked for: a last fragment may hold less
  val fragment = (be16(20) & 0x3fff.U) =/= 0.U
  val badUdp = tot < ihl +& 8.U || ulen < 8.U || ulen =/= tot - ihl || ulen - 8.U > Contract.MAX_PAYLOAD.U
  val pseudo = Seq(sip(31, 16), sip(15, 0), dip(31, 16), dip(15, 0), 17.U, ulen).map(_.pad(32)).reduce(_ +& _)
  val badCsum = ucsum =/= 0.U && Csum.fold(pseudo + udpSum) =/= "hffff".U
  // the ICRC received: the UDP payload's last 4 bytes, least significant first
  val icrcAt = ulen +& 30.U
  val icrcRx = (Cat(buf((icrcAt >> 3) + 1.U), buf(icrcAt >> 3)) >> Cat(icrcAt(2, 0), 0.U(3.W)))(31, 0)
  val badRoce = ihl =/= 20.U || ulen < (8 + Icrc.MinPayload).U || ~crc =/= icrcRx

  val row = Reg(UInt(p.rowBits.W))
  val recSip = Reg(UInt(32.W))
  val recDip = Reg(UInt(32.W))
  val recTos = Reg(UInt(8.W))
  val recTtl = Reg(UInt(8.W))
  val recSport = Reg(UInt(16.W))
  val recLen = Reg(UInt(Consts.LenBits.W))
  val payOff = Reg(UInt(8.W)) // frame offset of the payload
  val missPort = Reg(UInt(16.W))
  val outBeat = RegInit(0.U(9.W))

  def finish(): Unit = {
    state := sRecv
    ipSum := 0.U
    udpSum := 0.U
    crc := Icrc.Init.U
    len := 0.U
    tooLong := false.B
  }

  when(state === sDecide) {
    io.verdict.valid := true.B
    io.verdict.bits := true.B
    outBeat := 0.U
    missPort := dport
    row := io.hit.bits
    recSip := sip
    recDip := dip
    recTos := hdr(15)
    recTtl := hdr(22)
    recSport := sport
    recLen := plen
    payOff := udpOff + 8.U
    when(notForUs) {
      io.verdict.bits := false.B
      state := Mux(tooLong, sRecv, sPass)
      when(tooLong) { finish() }
    }.elsewhen(badIp) {
      io.incs.rxMalformed := true.B
      finish()
    }.elsewhen(fragment) {
      io.incs.rxFragment := true.B
      io.verdict.bits := false.B
      state := sPass
    }.elsewhen(badUdp || tooLong) {
      io.incs.rxMalformed := true.B
      finish()
    }.elsewhen(!io.hit.valid) {
      // a datagram for the normal path goes there as it came, its UDP
      // checksum for the NIC's receive offload or the kernel to check
      io.incs.ictMiss := true.B
      io.verdict.bits := false.B
      state := Mux(io.missEvents, sMissEv, sPass)
    }.elsewhen(badCsum || (io.hitRoce && badRoce)) {
      io.incs.rxMalformed := true.B // a bad UDP checksum; not RoCEv2, or a wrong ICRC
      finish()
    }.otherwise {
      state := sRdBase
    }
  }
  when(tooLong && state === sPass) { finish() } // nothing left to pass on

  // the normal NIC path
  val nBeats = (len +& 7.U) >> 3
  val passLast = outBeat === nBeats - 1.U
  io.toNic.valid := state === sPass && !tooLong
  io.toNic.bits.data := buf(outBeat)
  io.toNic.bits.last := passLast
  io.toNic.bits.keep := Mux(passLast && len(2, 0) =/= 0.U, UIntToOH(len(2, 0)) - 1.U, "hff".U)
  when(io.toNic.fire) {
    outBeat := outBeat + 1.U
    when(passLast) { finish() }
  }
  when(state === sMissEv) { event(Contract.EV_ICT_MISS, "hffff".U, missPort) { state := sPass } }

  // delivery to the row's RX ring
  val base = Reg(UInt(64.W))
  val size = Reg(UInt(64.W))
  val wptr = Reg(UInt(64.W))
  val rptr = Reg(UInt(64.W))
  val rec = Rec.pad(Contract.RX_HDR.U +& recLen)
  val dma = Module(new DmaWriter)
  io.axi.aw <> dma.io.axi.aw
  io.axi.w <> dma.io.axi.w
  dma.io.axi.b <> io.axi.b
  dma.io.cmd.valid := false.B
  dma.io.cmd.bits.base := base
  dma.io.cmd.bits.size := size
  dma.io.cmd.bits.ptr := wptr
  dma.io.cmd.bits.bytes := Contract.RX_HDR.U +& recLen

  when(state === sRdBase) { reg(row, Row.RX_BASE, RegOp.Rd) { v => base := v; state := sRdSize } }
  when(state === sRdSize) { reg(row, Row.RX_SIZE, RegOp.Rd) { v => size := v; state := sRdW } }
  when(state === sRdW) { reg(row, Row.RX_WPTR, RegOp.Rd) { v => wptr := v; state := sRdR } }
  when(state === sRdR) { reg(row, Row.RX_RPTR, RegOp.Rd) { v => rptr := v; state := sCheck } }
  when(state === sCheck) {
    val used = wptr - rptr
    val full = !Csum.ringSizeOk(size) || rptr > wptr || used > size || size - used < rec
    state := Mux(full, sDrop, sDma)
  }
  when(state === sDma) {
    dma.io.cmd.valid := true.B
    when(dma.io.cmd.fire) { state := sDmaWait; outBeat := 0.U }
  }
  // record words: the header, then the payload realigned from the frame buffer
  val hdrWords = Contract.RX_HDR / 8
  val recHdr = Rec.pack(Contract.RX_HDR,
    (recLen, Contract.RX_REC_LEN, Contract.RX_REC_LEN_SIZE),
    (recSport, Contract.RX_REC_SPORT, Contract.RX_REC_SPORT_SIZE),
    (recSip, Contract.RX_REC_SIP, Contract.RX_REC_SIP_SIZE),
    (io.time, Contract.RX_REC_TSTAMP, Contract.RX_REC_TSTAMP_SIZE),
    (recTos, Contract.RX_REC_TOS, Contract.RX_REC_TOS_SIZE),
    (recTtl, Contract.RX_REC_TTL, Contract.RX_REC_TTL_SIZE),
    (recDip, Contract.RX_REC_DIP, Contract.RX_REC_DIP_SIZE))
  val at = payOff +& ((outBeat - hdrWords.U) << 3)
  val q = at >> 3
  val shifted = (Cat(buf(q + 1.U), buf(q)) >> Cat(at(2, 0), 0.U(3.W)))(63, 0)
  dma.io.data.valid := state === sDmaWait && outBeat < ((Contract.RX_HDR.U +& recLen +& 7.U) >> 3)
  dma.io.data.bits := MuxCase(shifted,
    (0 until hdrWords).map(k => (outBeat === k.U) -> recHdr(64 * k + 63, 64 * k)))
  when(dma.io.data.fire) { outBeat := outBeat + 1.U }
  when(state === sDmaWait && dma.io.done.valid) { state := Mux(dma.io.done.bits, sDrop, sWptr) }

  when(state === sDrop) { reg(row, Row.RX_DROPS, RegOp.Add, 1.U) { _ => state := sDropEv } }
  when(state === sDropEv) { event(Contract.EV_RX_RING_FULL, row, recLen) { finish() } }
  when(state === sWptr) {
    reg(row, Row.RX_WPTR, RegOp.Wr, wptr + rec) { _ => state := sPkts; io.recordDone := true.B }
  }
  when(state === sPkts) { reg(row, Row.RX_PKTS, RegOp.Add, 1.U) { _ => state := sBytes } }
  when(state === sBytes) {
    reg(row, Row.RX_BYTES, RegOp.Add, recLen) { _ => state := sSusp; io.incs.rxDelivered := true.B }
  }
  val oldState = Reg(UInt(64.W))
  when(state === sSusp) {
    reg(row, Row.STATE, RegOp.AndNot, F.maskU(Row.STATE_RX_SUSP)) { v =>
      oldState := v
      when(F(v, Row.STATE_RX_SUSP) === 1.U) { state := sReady }.otherwise { finish() }
    }
  }
  when(state === sReady) {
    io.ready.valid := true.B
    io.ready.bits.row := row
    io.ready.bits.tx := false.B
    io.ready.bits.state := oldState
    when(io.ready.fire) { finish() }
  }
  io.busy := state =/= sRecv || beatIdx =/= 0.U || pend
}
