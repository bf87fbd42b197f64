package accio

import chisel3._
import chisel3.util._
import accio.regs.Nic

/** Sizes of the NIC. `depth`: entries of each request and completion queue (QUEUE_DEPTH);
  * `clockHz`: the SoC clock (BUS_FREQ_HZ); the link moves one 64-bit beat a cycle. */
case class NicParams(depth: Int = 64, clockHz: Long = 1000000000L) {
  require(isPow2(depth) && depth >= 2 && depth <= 1024)
  val linkMbps: Long = clockHz / 1000000L * 64
}

object EthFrame {
  val MinLen = 60 // without FCS: shorter frames leave padded, arrive as runts
  val MaxLen = 1518
  val BufWords = 256 // a 2 KiB store-and-forward buffer
  val HdrWords = 11 // the first 88 bytes: every field the checksum offload reads
}

/** Where a frame's IPv4 and TCP/UDP checksums are, from its first 88 bytes (the model's
  * accio_csum_segment): `ok` for IPv4 with TCP or UDP whose lengths add up; `frag` for a
  * fragment (its header checksum only). */
class CsumInfo extends Bundle {
  val ok = Bool()
  val frag = Bool()
  val udp = Bool()
  val ihl = UInt(7.W)
  val l4 = UInt(8.W)
  val l4len = UInt(16.W)
  val pseudo = UInt(20.W) // sum of the pseudo-header's 16-bit words
}

object CsumInfo {
  private def be16(h: Vec[UInt], i: UInt): UInt = Cat(h(i), h(i + 1.U))

  def parse(h: Vec[UInt], len: UInt): CsumInfo = {
    val c = Wire(new CsumInfo)
    val ihl = Cat(h(14)(3, 0), 0.U(2.W))
    val tot = Cat(h(16), h(17))
    val proto = h(23)
    val isUdp = proto === 17.U
    val base = len >= 34.U && h(12) === 8.U && h(13) === 0.U && h(14)(7, 4) === 4.U &&
      ihl >= 20.U && tot >= ihl && 14.U +& tot <= len && (isUdp || proto === 6.U)
    val frag = Cat(h(20)(5, 0), h(21)) =/= 0.U
    val seg = tot - ihl
    val udpLen = be16(h, 14.U +& ihl +& 4.U)
    c.ok := base && (frag || Mux(isUdp, seg >= 8.U && udpLen >= 8.U && udpLen <= seg, seg >= 20.U))
    c.frag := frag
    c.udp := isUdp
    c.ihl := ihl
    c.l4 := 14.U +& ihl
    c.l4len := Mux(frag, 0.U, Mux(isUdp, udpLen, seg))
    c.pseudo := Seq(26, 28, 30, 32).map(i => Cat(h(i), h(i + 1)).pad(20)).reduce(_ + _) +& proto +& c.l4len
    c
  }

  /** The 16-bit sum of the beat at byte offset `off` (a multiple of 8) over the bytes in
    * [lo, hi) that are not in `skip` (a checksum field being filled in). */
  def beat(data: UInt, off: UInt, lo: UInt, hi: UInt, skip: Seq[UInt]): UInt =
    Csum.beat(data, (0 until 8).map { j =>
      val o = off + j.U
      o >= lo && o < hi && skip.map(o =/= _).foldLeft(true.B)(_ && _)
    })

  /** The checksum a field holds: the complemented one's-complement sum. */
  def field(sum: UInt): UInt = ~Csum.fold(sum)
}

/** A store-and-forward frame buffer with the header bytes the checksum offload reads and a
  * pass over the frame that sums the IPv4 header and the TCP/UDP segment. */
class FrameStore extends Module {
  val io = IO(new Bundle {
    val wr = Flipped(Valid(new Bundle { val idx = UInt(8.W); val data = UInt(64.W) }))
    val rdIdx = Input(UInt(8.W))
    val rdData = Output(UInt(64.W))
    val len = Input(UInt(16.W)) // the frame's length, once written
    val info = Output(new CsumInfo)
    val hdr = Output(Vec(EthFrame.HdrWords * 8, UInt(8.W)))
    val sum = Flipped(Decoupled(Bool())) // start a pass; true: skip the checksum fields
    val sums = Valid(new Bundle { val ip = UInt(31.W); val l4 = UInt(31.W) })
  })
  val mem = Mem(EthFrame.BufWords, UInt(64.W))
  val hdr = Reg(Vec(EthFrame.HdrWords * 8, UInt(8.W)))
  when(io.wr.valid) {
    mem(io.wr.bits.idx) := io.wr.bits.data
    for (w <- 0 until EthFrame.HdrWords; j <- 0 until 8)
      when(io.wr.bits.idx === w.U) { hdr(8 * w + j) := io.wr.bits.data(8 * j + 7, 8 * j) }
  }
  io.hdr := hdr
  io.info := CsumInfo.parse(hdr, io.len)

  val running = RegInit(false.B)
  val skipFields = Reg(Bool())
  val idx = Reg(UInt(8.W))
  val ip = Reg(UInt(31.W))
  val l4 = Reg(UInt(31.W))
  val words = (io.len +& 7.U) >> 3
  val data = mem(Mux(running, idx, io.rdIdx))
  io.rdData := data
  io.sum.ready := !running
  io.sums.valid := running && idx === words
  io.sums.bits.ip := ip
  io.sums.bits.l4 := l4
  when(io.sum.fire) {
    running := true.B
    skipFields := io.sum.bits
    idx := 0.U
    ip := 0.U
    l4 := 0.U
  }
  when(running) {
    when(idx === words) {
      running := false.B
    }.otherwise {
      val i = io.info
      val off = Cat(idx, 0.U(3.W))
      val l4At = i.l4 +& Mux(i.udp, 6.U, 16.U)
      // offset 0 is in neither range: skipping it skips nothing
      def fields(at: UInt): Seq[UInt] = Seq(at, at + 1.U).map(Mux(skipFields, _, 0.U))
      ip := ip + CsumInfo.beat(data, off, 14.U, 14.U +& i.ihl, fields(24.U))
      l4 := l4 + CsumInfo.beat(data, off, i.l4, i.l4 +& i.l4len, fields(l4At))
      idx := idx + 1.U
    }
  }
}

/** One frame at a time from several streams: an input keeps the output from its first beat
  * to its last; the lowest-numbered waiting input goes next. */
class FrameArb(n: Int) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Vec(n, Decoupled(new StreamBeat)))
    val out = Decoupled(new StreamBeat)
    val chosen = Output(UInt(log2Ceil(n max 2).W))
  })
  val locked = RegInit(false.B)
  val owner = Reg(UInt(log2Ceil(n max 2).W))
  val pick = PriorityEncoder(io.in.map(_.valid))
  val sel = Mux(locked, owner, pick)
  io.chosen := sel
  io.out.valid := io.in(sel).valid
  io.out.bits := io.in(sel).bits
  for ((in, i) <- io.in.zipWithIndex) in.ready := io.out.ready && sel === i.U
  when(io.out.fire) {
    locked := !io.out.bits.last
    owner := sel
  }
}

/** The MAC's transmit side: a frame shorter than 60 bytes leaves padded with zeros, as
  * Ethernet requires (the engine's frames and the NIC's); bytes beyond a beat's `keep` go out
  * as zeros. */
class MacPad extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new StreamBeat))
    val out = Decoupled(new StreamBeat)
  })
  val minBeats = (EthFrame.MinLen + 7) / 8
  val tailKeep = ((1 << (EthFrame.MinLen - 8 * (minBeats - 1))) - 1).U(8.W)
  val beat = RegInit(0.U(8.W)) // output beats of this frame so far
  val padding = RegInit(false.B)
  val lastPad = beat === (minBeats - 1).U
  val inKeep = io.in.bits.keep
  val bytes = Cat(0.U(4.W), beat) * 8.U + PopCount(inKeep)
  val short = io.in.bits.last && bytes < EthFrame.MinLen.U
  val masked = io.in.bits.data & VecInit(inKeep.asBools.map(b => Fill(8, b))).asUInt
  io.in.ready := io.out.ready && !padding
  io.out.valid := padding || io.in.valid
  io.out.bits.data := Mux(padding, 0.U, masked)
  io.out.bits.keep := Mux(padding || short, Mux(lastPad, tailKeep, "hff".U), inKeep)
  io.out.bits.last := Mux(padding || short, lastPad, io.in.bits.last)
  when(io.out.fire) {
    beat := Mux(io.out.bits.last, 0.U, beat + 1.U)
    padding := !io.out.bits.last && (padding || short)
  }
}

/** The MAC's receive side: takes whole frames into a buffer, then drops what the NIC does not
  * accept (disabled, runt, oversize, another station's address), counting each, and passes
  * the rest on to the offload engine with its arrival time (the time of its last beat). */
class NicMacRx extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new StreamBeat))
    val out = Decoupled(new StreamBeat)
    val arrival = Decoupled(UInt(64.W))
    val time = Input(UInt(64.W))
    val enable = Input(Bool())
    val promisc = Input(Bool())
    val mac = Input(UInt(48.W))
    val bufLen = Input(UInt(16.W))
    val drop = Output(new Bundle { val disabled = Bool(); val runt = Bool(); val oversize = Bool(); val filter = Bool() })
    val busy = Output(Bool())
  })
  val sFill :: sCheck :: sOut :: Nil = Enum(3)
  val state = RegInit(sFill)
  val mem = Mem(EthFrame.BufWords, UInt(64.W))
  val len = RegInit(0.U(16.W))
  val idx = RegInit(0.U(9.W))
  val first = Reg(UInt(64.W))
  val at = Reg(UInt(64.W))
  io.busy := state =/= sFill || len =/= 0.U
  io.drop := 0.U.asTypeOf(io.drop)

  io.in.ready := state === sFill
  when(io.in.fire) {
    when(idx < EthFrame.BufWords.U) { mem(idx(7, 0)) := io.in.bits.data }
    when(idx === 0.U) { first := io.in.bits.data }
    idx := idx + 1.U
    val n = len +& PopCount(io.in.bits.keep)
    len := Mux(n > 4095.U, 4095.U, n)
    when(io.in.bits.last) {
      at := io.time
      state := sCheck
    }
  }
  val dst = first(47, 0)
  val tooLong = len > EthFrame.MaxLen.U || len > io.bufLen
  val accept = io.promisc || dst(0) || dst === io.mac
  when(state === sCheck) {
    io.drop.disabled := !io.enable
    io.drop.runt := io.enable && len < EthFrame.MinLen.U
    io.drop.oversize := io.enable && len >= EthFrame.MinLen.U && tooLong
    io.drop.filter := io.enable && len >= EthFrame.MinLen.U && !tooLong && !accept
    val pass = io.enable && len >= EthFrame.MinLen.U && !tooLong && accept
    when(!pass) {
      len := 0.U
      idx := 0.U
      state := sFill
    }.elsewhen(io.arrival.ready) {
      idx := 0.U
      state := sOut
    }
  }
  io.arrival.valid := state === sCheck && io.enable && len >= EthFrame.MinLen.U && !tooLong && accept
  io.arrival.bits := at

  val words = (len +& 7.U) >> 3
  val lastBeat = idx === words - 1.U
  io.out.valid := state === sOut
  io.out.bits.data := mem(idx(7, 0))
  io.out.bits.last := lastBeat
  io.out.bits.keep := Mux(lastBeat && len(2, 0) =/= 0.U, UIntToOH(len(2, 0), 8) - 1.U, "hff".U)
  when(io.out.fire) {
    idx := idx + 1.U
    when(lastBeat) {
      len := 0.U
      idx := 0.U
      state := sFill
    }
  }
}

/** A send request as the NIC keeps it. */
class NicSendReq extends Bundle {
  val addr = UInt(48.W)
  val len = UInt(15.W)
  val csum = Bool()
}

/** A completion: the word software pops (VALID added then) and its time stamp. */
class NicComp extends Bundle {
  val word = UInt(64.W)
  val time = UInt(64.W)
}

/** Counter pulses of the NIC's engines. */
class NicIncs extends Bundle {
  val txFrames = Bool()
  val txBytes = UInt(12.W)
  val txErrors = Bool()
  val txDropLinkdown = Bool()
  val txCsum = Bool()
  val rxFrames = Bool()
  val rxBytes = UInt(12.W)
  val rxDropNobuf = Bool()
  val rxDropCsum = Bool()
  val rxCsumOk = Bool()
}

/** Transmit: one send request at a time. Reads the frame (any byte address) into the buffer,
  * fills in the checksums when asked, sends it (the MAC pads it to 60 bytes), and completes it
  * with the time its first beat left. A bad length or a DMA error completes with ERROR; with the link
  * down (and no loopback) the frame completes unsent. */
class NicTx extends Module {
  val io = IO(new Bundle {
    val req = Flipped(Decoupled(new NicSendReq))
    val comp = Decoupled(new NicComp)
    val ar = Decoupled(new AxiAddr)
    val r = Flipped(Decoupled(new AxiR))
    val out = Decoupled(new StreamBeat)
    val linkOk = Input(Bool())
    val time = Input(UInt(64.W))
    val incs = Output(new NicIncs)
    val busy = Output(Bool())
  })
  val sIdle :: sRead :: sFlush :: sDecide :: sSum :: sOut :: sComp :: Nil = Enum(7)
  val state = RegInit(sIdle)
  val rq = Reg(new NicSendReq)
  val err = Reg(Bool())
  val fill = Reg(Bool()) // the checksums are filled in
  val stamp = Reg(UInt(64.W))
  val store = Module(new FrameStore)
  val reader = Module(new DmaReader)
  io.ar <> reader.io.axi.ar
  reader.io.axi.r <> io.r
  io.busy := state =/= sIdle
  io.incs := 0.U.asTypeOf(io.incs)

  io.req.ready := state === sIdle
  val o = rq.addr(2, 0)
  reader.io.cmd.valid := false.B
  reader.io.cmd.bits.base := Cat(rq.addr(47, 3), 0.U(3.W))
  reader.io.cmd.bits.size := (BigInt(1) << 48).U
  reader.io.cmd.bits.ptr := 0.U
  reader.io.cmd.bits.bytes := o +& rq.len
  val started = Reg(Bool())
  when(io.req.fire) {
    rq := io.req.bits
    val bad = io.req.bits.len < 14.U || io.req.bits.len > EthFrame.MaxLen.U
    err := bad
    started := false.B
    fill := false.B
    state := Mux(bad, sComp, sRead)
  }

  // realign: word i of the read makes word i - 1 of the frame
  val prev = Reg(UInt(64.W))
  val nread = Reg(UInt(9.W))
  val outWords = (rq.len +& 7.U) >> 3
  store.io.wr.valid := false.B
  store.io.wr.bits.idx := 0.U
  store.io.wr.bits.data := (Cat(reader.io.data.bits, prev) >> Cat(o, 0.U(3.W)))(63, 0)
  store.io.len := rq.len
  store.io.rdIdx := 0.U
  store.io.sum.valid := false.B
  store.io.sum.bits := true.B
  reader.io.data.ready := state === sRead
  when(state === sRead) {
    when(!started) {
      reader.io.cmd.valid := true.B
      when(reader.io.cmd.fire) { started := true.B; nread := 0.U }
    }
    when(reader.io.data.fire) {
      prev := reader.io.data.bits
      nread := nread + 1.U
      when(nread =/= 0.U) {
        store.io.wr.valid := true.B
        store.io.wr.bits.idx := nread - 1.U
      }
    }
    when(reader.io.done.valid) {
      err := reader.io.done.bits
      state := Mux(reader.io.done.bits, sComp, sFlush)
    }
  }
  when(state === sFlush) {
    when(outWords === nread) {
      store.io.wr.valid := true.B
      store.io.wr.bits.idx := nread - 1.U
      store.io.wr.bits.data := prev >> Cat(o, 0.U(3.W))
    }
    state := sDecide
  }
  when(state === sDecide) { // the header as the buffer now holds it
    val offload = rq.csum && store.io.info.ok
    store.io.sum.valid := offload
    fill := offload
    state := Mux(offload, sSum, sOut)
  }
  val ipCs = Reg(UInt(16.W))
  val l4Cs = Reg(UInt(16.W))
  when(state === sSum && store.io.sums.valid) {
    ipCs := CsumInfo.field(store.io.sums.bits.ip)
    val l4 = CsumInfo.field(store.io.sums.bits.l4 +& store.io.info.pseudo)
    l4Cs := Mux(store.io.info.udp && l4 === 0.U, "hffff".U, l4)
    state := sOut
  }

  // out: the checksums written into their fields as the frame passes
  val idx = RegInit(0.U(8.W))
  val words = (rq.len +& 7.U) >> 3
  val lastBeat = idx === words - 1.U
  val info = store.io.info
  val l4At = info.l4 +& Mux(info.udp, 6.U, 16.U)
  store.io.rdIdx := idx
  val bytes = VecInit((0 until 8).map { j =>
    val off = Cat(idx, j.U(3.W))
    val b = store.io.rdData(8 * j + 7, 8 * j)
    MuxCase(b, Seq(
      (fill && off === 24.U) -> ipCs(15, 8),
      (fill && off === 25.U) -> ipCs(7, 0),
      (fill && !info.frag && off === l4At) -> l4Cs(15, 8),
      (fill && !info.frag && off === l4At + 1.U) -> l4Cs(7, 0)))
  })
  val drop = state === sOut && idx === 0.U && !io.linkOk
  io.out.valid := state === sOut && !drop
  io.out.bits.data := bytes.asUInt
  io.out.bits.last := lastBeat
  io.out.bits.keep := Mux(lastBeat && rq.len(2, 0) =/= 0.U, UIntToOH(rq.len(2, 0), 8) - 1.U, "hff".U)
  when(drop) {
    io.incs.txDropLinkdown := true.B
    stamp := io.time
    state := sComp
  }
  when(io.out.fire) {
    when(idx === 0.U) { stamp := io.time }
    idx := idx + 1.U
    when(lastBeat) {
      idx := 0.U
      io.incs.txFrames := true.B
      io.incs.txBytes := Mux(rq.len < EthFrame.MinLen.U, EthFrame.MinLen.U, rq.len) // as padded
      io.incs.txCsum := fill
      state := sComp
    }
  }

  io.comp.valid := state === sComp
  io.comp.bits.word := rq.len | Mux(err, F.mask(Nic.SEND_COMP_ERROR).U, 0.U)
  io.comp.bits.time := Mux(err, io.time, stamp)
  when(io.comp.fire) {
    io.incs.txErrors := err
    state := sIdle
  }
}

/** Receive: the frames the offload engine passes on, one at a time into the buffer; with
  * CTRL.RXCSUM, the checksums checked (a bad one drops the frame); then the oldest posted
  * buffer (any byte address) gets the frame and a completion with its arrival time. */
class NicRx extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new StreamBeat))
    val arrival = Flipped(Decoupled(UInt(64.W)))
    val posted = Flipped(Decoupled(UInt(48.W)))
    val comp = Decoupled(new NicComp)
    val aw = Decoupled(new AxiAddr)
    val w = Decoupled(new AxiW)
    val b = Flipped(Decoupled(UInt(2.W)))
    val rxcsum = Input(Bool())
    val incs = Output(new NicIncs)
    val bufLost = Output(Bool()) // a posted buffer taken without a completion (a DMA error)
    val busy = Output(Bool())
  })
  val sFill :: sTime :: sSum :: sBuf :: sWrite :: sComp :: Nil = Enum(6)
  val state = RegInit(sFill)
  val store = Module(new FrameStore)
  val writer = Module(new DmaWriter(skipFirst = true))
  io.aw <> writer.io.axi.aw
  io.w <> writer.io.axi.w
  writer.io.axi.b <> io.b
  io.incs := 0.U.asTypeOf(io.incs)
  val len = RegInit(0.U(16.W))
  val idx = RegInit(0.U(9.W))
  val at = Reg(UInt(64.W))
  val csumOk = Reg(Bool())
  val addr = Reg(UInt(48.W))
  io.busy := state =/= sFill || len =/= 0.U

  io.in.ready := state === sFill
  store.io.wr.valid := io.in.fire && idx < EthFrame.BufWords.U
  store.io.wr.bits.idx := idx(7, 0)
  store.io.wr.bits.data := io.in.bits.data
  store.io.len := len
  store.io.sum.valid := false.B
  store.io.sum.bits := false.B
  when(io.in.fire) {
    idx := idx + 1.U
    len := len + PopCount(io.in.bits.keep)
    when(io.in.bits.last) { state := sTime }
  }
  io.arrival.ready := state === sTime
  when(io.arrival.fire) {
    at := io.arrival.bits
    csumOk := false.B
    val check = io.rxcsum && store.io.info.ok
    store.io.sum.valid := check
    state := Mux(check, sSum, sBuf)
  }
  val done = WireDefault(false.B)
  when(state === sSum && store.io.sums.valid) {
    val info = store.io.info
    val ipOk = CsumInfo.field(store.io.sums.bits.ip) === 0.U
    val noUdpSum = info.udp && store.io.hdr(info.l4 + 6.U) === 0.U && store.io.hdr(info.l4 + 7.U) === 0.U
    val l4Ok = noUdpSum || CsumInfo.field(store.io.sums.bits.l4 +& info.pseudo) === 0.U
    val bad = !ipOk || (!info.frag && !l4Ok)
    io.incs.rxDropCsum := bad
    csumOk := !info.frag && !bad
    done := bad
    state := sBuf
  }
  io.posted.ready := state === sBuf
  when(state === sBuf) {
    when(io.posted.valid) {
      addr := io.posted.bits
      idx := 0.U
      state := sWrite
    }.otherwise {
      io.incs.rxDropNobuf := true.B
      done := true.B
    }
  }
  val o = addr(2, 0)
  val started = RegInit(false.B)
  writer.io.cmd.valid := state === sWrite && !started
  writer.io.cmd.bits.base := Cat(addr(47, 3), 0.U(3.W))
  writer.io.cmd.bits.size := (BigInt(1) << 48).U
  writer.io.cmd.bits.ptr := 0.U
  writer.io.cmd.bits.bytes := o +& len
  writer.io.skip.get := o
  when(writer.io.cmd.fire) { started := true.B }
  // word j of the buffer write: the frame shifted up by the buffer's offset in its word
  val prev = RegInit(0.U(64.W))
  store.io.rdIdx := idx(7, 0)
  val cur = Mux(idx < ((len +& 7.U) >> 3), store.io.rdData, 0.U)
  writer.io.data.valid := state === sWrite && started
  writer.io.data.bits := (Cat(cur, prev) >> (64.U - Cat(o, 0.U(3.W))))(63, 0)
  when(writer.io.data.fire) {
    prev := cur
    idx := idx + 1.U
  }
  io.bufLost := writer.io.done.valid && writer.io.done.bits
  when(writer.io.done.valid) {
    started := false.B
    prev := 0.U
    when(writer.io.done.bits) {
      io.incs.rxDropNobuf := true.B
      done := true.B
    }.otherwise { state := sComp }
  }
  io.comp.valid := state === sComp
  io.comp.bits.word := len | Mux(csumOk, F.mask(Nic.RECV_COMP_CSUM_OK).U, 0.U)
  io.comp.bits.time := at
  when(io.comp.fire) {
    io.incs.rxFrames := true.B
    io.incs.rxBytes := len
    io.incs.rxCsumOk := csumOk
    done := true.B
  }
  when(done) {
    len := 0.U
    idx := 0.U
    state := sFill
  }
}
