package accio

import chisel3._
import chisel3.util._
import accio.regs.Contract

/** The Accio uncore: ICT, per-hart ready queues with wake-up interrupts, the UDP offload engine
  * (receive parser and ring writer, transmit doorbells and header builder), the MMIO transmit
  * reorder unit and the control event queue.
  *
  * Ports: an AXI4-Lite MMIO slave (offsets from the uncore base, AXI user bits carry privilege,
  * ASID and hart of each access), an AXI4 DMA master for the rings, a 64-bit AXI-Stream of
  * received frames (no FCS) and one of transmitted frames, a stream of the received frames the
  * engine does not take (to the normal NIC path), and the interrupt lines.
  */
class AccioUncore(val p: UncoreParams) extends Module {
  val io = IO(new Bundle {
    val mmio = new AxiLiteSlave(p.addrBits)
    val dma = new AxiMaster
    val rx = Flipped(Decoupled(new StreamBeat))
    val tx = Decoupled(new StreamBeat)
    val toNic = Decoupled(new StreamBeat)
    val rxVerdict = Valid(Bool()) // per received frame: taken by the engine (else passed on)
    val mac = Input(UInt(48.W)) // station MAC, byte 0 in bits 7:0
    val time = Input(UInt(64.W)) // hardware time in ns (RX records, TX_TSTAMP)
    val link = Flipped(Valid(Bool())) // a link change: up (true) or down
    val irqWake = Output(UInt(p.harts.W))
    val irqEvent = Output(Bool())
    val busy = Output(Bool()) // some engine or queue has work in progress
    val rxRecord = Output(Bool()) // a receive record became visible (RX_WPTR moved)
  })

  val ict = Module(new IctTable(p, 4))
  val regs = Module(new RegBlock(p, 3))
  val rx = Module(new UdpRx(p))
  val tx = Module(new UdpTx(p))
  val win = Module(new MmioTx(p))
  val builder = Module(new TxBuilder(2))
  val evq = Module(new EventQueue(p.qdepth, 5))
  val rq = Module(new ReadyQueues(p))

  // row register file clients, in priority order
  ict.io.clients(0) <> regs.io.reg
  ict.io.clients(1) <> rx.io.reg
  ict.io.clients(2) <> tx.io.reg
  ict.io.clients(3) <> win.io.reg
  regs.io.shadow := ict.io.shadow
  tx.io.shadow := ict.io.shadow
  win.io.shadow := ict.io.shadow

  // MMIO
  regs.io.axi <> io.mmio
  rq.io.hart := regs.io.hart
  rq.io.off := regs.io.hartOff
  rq.io.read := regs.io.hartRead
  rq.io.write := regs.io.hartWrite
  rq.io.wdata := regs.io.hartWdata
  regs.io.hartRdata := rq.io.rdata
  evq.io.pop := regs.io.evqPop
  regs.io.evqHead := evq.io.head
  regs.io.evqStatus := evq.io.status
  evq.io.maskWrite := regs.io.evqMaskWrite
  regs.io.evqMask := evq.io.mask
  regs.io.incs := VecInit(rx.io.incs, tx.io.incs, win.io.incs)

  // events
  val linkQ = Module(new Queue(new Event, 4))
  linkQ.io.enq.valid := io.link.valid
  linkQ.io.enq.bits := Event(Contract.EV_LINK_UP, "hffff".U, 0.U)
  when(!io.link.bits) { linkQ.io.enq.bits.typ := Contract.EV_LINK_DOWN.U }
  evq.io.in(0) <> regs.io.ev
  evq.io.in(1) <> rx.io.ev
  evq.io.in(2) <> tx.io.ev
  evq.io.in(3) <> win.io.ev
  evq.io.in(4) <> linkQ.io.deq

  // ready queues
  val readyArb = Module(new Arbiter(new ReadyReq(p), 2))
  readyArb.io.in(0) <> rx.io.ready
  readyArb.io.in(1) <> tx.io.ready
  rq.io.ready <> readyArb.io.out

  // receive
  rx.io.in <> io.rx
  io.toNic <> rx.io.toNic
  io.rxVerdict := rx.io.verdict
  rx.io.enable := regs.io.enable
  rx.io.missEvents := regs.io.missEvents
  rx.io.time := io.time
  ict.io.lip := rx.io.lip
  ict.io.lport := rx.io.lport
  ict.io.rip := rx.io.rip
  ict.io.rport := rx.io.rport
  ict.io.bth := rx.io.bth
  ict.io.dqpn := rx.io.dqpn
  rx.io.hit := ict.io.hit
  rx.io.hitRoce := ict.io.shadow(ict.io.hit.bits).roce
  io.dma.aw <> rx.io.axi.aw
  io.dma.w <> rx.io.axi.w
  rx.io.axi.b <> io.dma.b
  io.rxRecord := rx.io.recordDone

  // transmit
  val doorbells = Module(new Queue(UInt(p.rowBits.W), 4))
  doorbells.io.enq <> regs.io.doorbell
  tx.io.doorbell <> doorbells.io.deq
  tx.io.enable := regs.io.enable
  io.dma.ar <> tx.io.axi.ar
  tx.io.axi.r <> io.dma.r
  win.io.store <> regs.io.winStore
  win.io.enable := regs.io.enable
  builder.io.clients(0) <> tx.io.builder
  builder.io.clients(1) <> win.io.builder
  builder.io.mac := io.mac
  builder.io.time := io.time
  tx.io.builderSent := builder.io.sent
  win.io.builderSent := builder.io.sent
  tx.io.builderTime := builder.io.startTime
  win.io.builderTime := builder.io.startTime
  io.tx <> builder.io.tx

  io.irqWake := rq.io.irq.asUInt
  io.irqEvent := evq.io.irq
  io.busy := !ict.io.ready || !win.io.ready || regs.io.busy || rx.io.busy || tx.io.busy || win.io.busy ||
    builder.io.busy || doorbells.io.count =/= 0.U || linkQ.io.count =/= 0.U
}

/** Verilog for one configuration: `Emit OUTDIR [ROWS [HARTS [nic]]]`; with `nic`, the uncore
  * with its NIC (`AccioNicUncore.sv`), else the uncore alone (`AccioUncore.sv`). */
object Emit extends App {
  val out = if (args.length > 0) args(0) else "build/rtl"
  val rows = if (args.length > 1) args(1).toInt else 64
  val harts = if (args.length > 2) args(2).toInt else 4
  val withNic = args.length > 3 && args(3) == "nic"
  _root_.circt.stage.ChiselStage.emitSystemVerilogFile(
    if (withNic) new AccioNicUncore(UncoreParams(rows, harts)) else new AccioUncore(UncoreParams(rows, harts)),
    args = Array("--target-dir", out),
    firtoolOpts = Array("-disable-all-randomization", "-strip-debug-info", "--lowering-options=disallowLocalVariables")
  )
}
