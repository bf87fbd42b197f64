package accio

import chisel3._
import chisel3.util._
import accio.regs.Nic

/** The IceNIC-style NIC of the register map's `accio_nic` block: send and receive request
  * queues of physical addresses, completion queues with hardware time stamps, a MAC with
  * station-address filtering, runt and oversize drops and loopback, IPv4 TCP/UDP checksum
  * offload both ways, drop counters, an interrupt line and the link state.
  *
  * The NIC owns the wire: received frames cross its MAC, then the offload engine (`toEngine`),
  * which hands back the ones it does not take (`fromEngine`, with a `verdict` per frame);
  * the engine's frames (`engineTx`) and the NIC's own share the wire one frame at a time.
  * Registers take 8-byte accesses; other stores are ignored. */
class AccioNic(val p: NicParams = NicParams()) extends Module {
  val io = IO(new Bundle {
    val mmio = new AxiLiteSlave(12)
    val dma = new AxiMaster
    val wireRx = Flipped(Decoupled(new StreamBeat))
    val wireTx = Decoupled(new StreamBeat)
    val toEngine = Decoupled(new StreamBeat)
    val fromEngine = Flipped(Decoupled(new StreamBeat))
    val verdict = Flipped(Valid(Bool())) // per frame offered to the engine: taken (else passed back)
    val engineTx = Flipped(Decoupled(new StreamBeat))
    val macReset = Input(UInt(48.W)) // MACADDR's value out of reset
    val mac = Output(UInt(48.W))
    val time = Input(UInt(64.W))
    val link = Flipped(Valid(Bool())) // a link change: up (true) or down
    val linkUp = Output(Bool())
    val enable = Output(Bool())
    val irq = Output(Bool())
    val busy = Output(Bool())
  })

  // ---- state ------------------------------------------------------------------------------
  val ctrl = RegInit(0.U(5.W)) // ENABLE, LOOPBACK, PROMISC, (QRESET reads 0), RXCSUM
  val enable = ctrl(0)
  val loopback = ctrl(1)
  val mac = RegInit(io.macReset)
  val linkUp = RegInit(true.B)
  val intrMask = RegInit(0.U(3.W))
  val linkIntr = RegInit(false.B)
  val bufLen = RegInit(F(Nic.RX_BUF_LEN_RESET.U(64.W), Nic.RX_BUF_LEN_LEN))
  val sendTstamp = RegInit(0.U(64.W))
  val recvTstamp = RegInit(0.U(64.W))
  val txUsed = RegInit(0.U(log2Ceil(p.depth + 1).W))
  val rxUsed = RegInit(0.U(log2Ceil(p.depth + 1).W))
  io.mac := mac
  io.linkUp := linkUp
  io.enable := enable
  when(io.link.valid) {
    when(io.link.bits =/= linkUp) { linkIntr := true.B }
    linkUp := io.link.bits
  }

  val sendQ = Module(new Queue(new NicSendReq, p.depth, hasFlush = true))
  val sendComp = Module(new Queue(new NicComp, p.depth, hasFlush = true))
  val posted = Module(new Queue(UInt(48.W), p.depth, hasFlush = true))
  val recvComp = Module(new Queue(new NicComp, p.depth, hasFlush = true))
  val tx = Module(new NicTx)
  val rx = Module(new NicRx)
  val macRx = Module(new NicMacRx)

  // ---- wire ---------------------------------------------------------------------------------
  val txArb = Module(new FrameArb(2))
  txArb.io.in(0) <> tx.io.out
  txArb.io.in(1) <> io.engineTx
  val pad = Module(new MacPad)
  pad.io.in <> txArb.io.out
  val loop = Wire(Decoupled(new StreamBeat))
  loop.valid := pad.io.out.valid && loopback
  loop.bits := pad.io.out.bits
  io.wireTx.valid := pad.io.out.valid && !loopback && linkUp
  io.wireTx.bits := pad.io.out.bits
  pad.io.out.ready := Mux(loopback, loop.ready, linkUp && io.wireTx.ready)
  tx.io.linkOk := linkUp || loopback

  val rxArb = Module(new FrameArb(2))
  rxArb.io.in(0) <> io.wireRx
  rxArb.io.in(1) <> loop
  macRx.io.in <> rxArb.io.out
  macRx.io.time := io.time
  macRx.io.enable := enable
  macRx.io.promisc := ctrl(2)
  macRx.io.mac := mac
  macRx.io.bufLen := bufLen
  io.toEngine <> macRx.io.out
  // arrival times follow their frames through the engine; the ones it passes back go on
  val arrivals = Module(new Queue(UInt(64.W), 4))
  val passed = Module(new Queue(UInt(64.W), 4))
  arrivals.io.enq <> macRx.io.arrival
  arrivals.io.deq.ready := io.verdict.valid
  passed.io.enq.valid := io.verdict.valid && !io.verdict.bits
  passed.io.enq.bits := arrivals.io.deq.bits
  rx.io.in <> io.fromEngine
  rx.io.arrival <> passed.io.deq
  rx.io.rxcsum := ctrl(4)

  // ---- engines --------------------------------------------------------------------------
  val sIdle :: sQReset :: sB :: sR :: Nil = Enum(4)
  val state = RegInit(sIdle)
  tx.io.req.valid := sendQ.io.deq.valid && enable && state =/= sQReset
  tx.io.req.bits := sendQ.io.deq.bits
  sendQ.io.deq.ready := tx.io.req.ready && enable && state =/= sQReset
  sendComp.io.enq <> tx.io.comp
  rx.io.posted.valid := posted.io.deq.valid && state =/= sQReset
  rx.io.posted.bits := posted.io.deq.bits
  posted.io.deq.ready := rx.io.posted.ready && state =/= sQReset
  recvComp.io.enq <> rx.io.comp
  tx.io.time := io.time
  io.dma.ar <> tx.io.ar
  tx.io.r <> io.dma.r
  io.dma.aw <> rx.io.aw
  io.dma.w <> rx.io.w
  rx.io.b <> io.dma.b
  io.busy := tx.io.busy || rx.io.busy || macRx.io.busy || sendQ.io.count =/= 0.U && enable ||
    state =/= sIdle || arrivals.io.count =/= 0.U || passed.io.count =/= 0.U

  // ---- counters, in register order from RX_FRAMES ------------------------------------------
  val ti = tx.io.incs
  val ri = rx.io.incs
  val d = macRx.io.drop
  val sendOverflow = WireDefault(false.B)
  val recvOverflow = WireDefault(false.B)
  val incs: Seq[UInt] = Seq(ri.rxFrames, ri.rxBytes, ti.txFrames, ti.txBytes, ri.rxDropNobuf, d.runt,
    d.oversize, d.filter, d.disabled, ti.txErrors, sendOverflow, recvOverflow, ti.txDropLinkdown,
    ri.rxDropCsum, ri.rxCsumOk, ti.txCsum)
  val counters = incs.map { inc =>
    val c = RegInit(0.U(64.W))
    c := c + inc
    c
  }
  require(Nic.TX_CSUM - Nic.RX_FRAMES == 8 * (counters.length - 1))

  // ---- interrupt --------------------------------------------------------------------------
  val intrStatus = Cat(linkIntr, recvComp.io.deq.valid, sendComp.io.deq.valid)
  io.irq := (intrStatus & intrMask) =/= 0.U

  // ---- registers: one access at a time ------------------------------------------------------
  val m = io.mmio
  m.aw.ready := state === sIdle && m.w.valid
  m.w.ready := state === sIdle && m.aw.valid
  m.ar.ready := state === sIdle && !(m.aw.valid && m.w.valid)
  m.b.valid := state === sB
  m.b.bits := 0.U
  m.r.valid := state === sR
  m.r.bits.resp := 0.U
  val rdata = Reg(UInt(64.W))
  m.r.bits.data := rdata
  when(m.b.fire || m.r.fire) { state := sIdle }

  sendComp.io.deq.ready := false.B
  recvComp.io.deq.ready := false.B
  sendQ.io.enq.valid := false.B
  sendQ.io.enq.bits.addr := F(m.w.bits.data, Nic.SEND_REQ_ADDR)
  sendQ.io.enq.bits.len := F(m.w.bits.data, Nic.SEND_REQ_LEN)
  sendQ.io.enq.bits.csum := F(m.w.bits.data, Nic.SEND_REQ_CSUM)
  posted.io.enq.valid := false.B
  posted.io.enq.bits := F(m.w.bits.data, Nic.RECV_REQ_ADDR)
  val flush = WireDefault(false.B)
  Seq(sendQ, sendComp, posted, recvComp).foreach(_.io.flush.get := flush)

  val sendPop = WireDefault(false.B)
  val recvPop = WireDefault(false.B)
  val sendPush = WireDefault(false.B)
  val recvPush = WireDefault(false.B)
  when(m.ar.fire) {
    val a = m.ar.bits.addr(11, 3) ## 0.U(3.W)
    def comp(q: Queue[NicComp], valid: (Int, Int), stamp: UInt, pop: Bool): UInt = {
      q.io.deq.ready := true.B
      when(q.io.deq.valid) {
        stamp := q.io.deq.bits.time
        pop := true.B
      }
      Mux(q.io.deq.valid, q.io.deq.bits.word | F.mask(valid).U, 0.U)
    }
    val counts = Cat(recvComp.io.count.pad(16), sendComp.io.count.pad(16), (p.depth.U - rxUsed).pad(16),
      (p.depth.U - txUsed).pad(16))
    val regs = Seq(
      Nic.ID -> Nic.ID_RESET.U, Nic.CTRL -> ctrl, Nic.MACADDR -> mac, Nic.STATUS -> Cat(0.U(1.W), linkUp),
      Nic.SEND_TSTAMP -> sendTstamp, Nic.RECV_TSTAMP -> recvTstamp, Nic.COUNTS -> counts,
      Nic.INTR_MASK -> intrMask, Nic.INTR_STATUS -> intrStatus, Nic.TIME -> io.time,
      Nic.RX_BUF_LEN -> bufLen, Nic.QUEUE_DEPTH -> p.depth.U, Nic.BUS_WIDTH_BITS -> 64.U,
      Nic.BUS_FREQ_HZ -> p.clockHz.U, Nic.PIPELINE_NS -> 0.U, Nic.LINK_MBPS -> p.linkMbps.U) ++
      counters.zipWithIndex.map { case (c, i) => (Nic.RX_FRAMES + 8 * i) -> c }
    rdata := MuxLookup(a, 0.U(64.W))(regs.map { case (o, v) => o.U -> v.pad(64) })
    when(a === Nic.SEND_COMP.U) { rdata := comp(sendComp, Nic.SEND_COMP_VALID, sendTstamp, sendPop) }
    when(a === Nic.RECV_COMP.U) { rdata := comp(recvComp, Nic.RECV_COMP_VALID, recvTstamp, recvPop) }
    state := sR
  }
  when(m.aw.fire) {
    val a = m.aw.bits.addr(11, 0)
    val v = m.w.bits.data
    state := sB
    when(m.w.bits.strb === "hff".U) {
      switch(a) {
        is(Nic.CTRL.U) {
          ctrl := v(4, 0) & "b10111".U
          when(F(v, Nic.CTRL_QRESET) === 1.U) { state := sQReset }
        }
        is(Nic.MACADDR.U) { mac := F(v, Nic.MACADDR_ADDR) }
        is(Nic.SEND_REQ.U) {
          when(txUsed < p.depth.U) {
            sendQ.io.enq.valid := true.B
            sendPush := true.B
          }.otherwise { sendOverflow := true.B }
        }
        is(Nic.RECV_REQ.U) {
          when(rxUsed < p.depth.U) {
            posted.io.enq.valid := true.B
            recvPush := true.B
          }.otherwise { recvOverflow := true.B }
        }
        is(Nic.INTR_MASK.U) { intrMask := v(2, 0) }
        is(Nic.INTR_STATUS.U) { when(F(v, Nic.INTR_STATUS_LINK) === 1.U) { linkIntr := false.B } }
        is(Nic.RX_BUF_LEN.U) { when(v >= 64.U && v <= 16384.U) { bufLen := v(15, 0) } }
      }
    }
  }
  // QRESET: the store completes once no frame is in flight, so that no DMA reaches a buffer
  // software reclaims after it; then every request and completion queue is empty
  when(state === sQReset && !tx.io.busy && !rx.io.busy) {
    flush := true.B
    state := sB
  }
  txUsed := Mux(flush, 0.U, txUsed + sendPush - sendPop)
  rxUsed := Mux(flush, 0.U, rxUsed + recvPush - recvPop - rx.io.bufLost)
}
