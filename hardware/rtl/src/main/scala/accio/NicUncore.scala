package accio

import chisel3._
import chisel3.util._

/** Two AXI4 masters on one: a read burst and a write burst in flight at a time, each kept by
  * the master that issued it until its last beat (R) or its response (B); the masters take
  * turns when both wait. */
class AxiShare extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Vec(2, new AxiMaster))
    val out = new AxiMaster
  })
  private def channel[A <: Data](addr: Seq[DecoupledIO[A]], out: DecoupledIO[A], done: Bool): UInt = {
    val busy = RegInit(false.B)
    val owner = RegInit(0.U(1.W))
    val lastWon = RegInit(1.U(1.W))
    val pick = Mux(addr(0).valid && addr(1).valid, ~lastWon, Mux(addr(1).valid, 1.U, 0.U))
    out.valid := !busy && addr.map(_.valid).reduce(_ || _)
    out.bits := Mux(pick === 1.U, addr(1).bits, addr(0).bits)
    for ((a, i) <- addr.zipWithIndex) a.ready := !busy && out.ready && pick === i.U
    when(out.fire) {
      busy := true.B
      owner := pick
      lastWon := pick
    }
    when(done) { busy := false.B }
    owner
  }
  val o = io.out
  val rOwner = channel(io.in.map(_.ar), o.ar, o.r.fire && o.r.bits.last)
  val wOwner = channel(io.in.map(_.aw), o.aw, o.b.fire)
  for ((m, i) <- io.in.zipWithIndex) {
    m.r.valid := o.r.valid && rOwner === i.U
    m.r.bits := o.r.bits
    m.b.valid := o.b.valid && wOwner === i.U
    m.b.bits := o.b.bits
    m.w.ready := o.w.ready && wOwner === i.U
  }
  o.r.ready := io.in(rOwner).r.ready
  o.b.ready := io.in(wOwner).b.ready
  o.w.valid := io.in(wOwner).w.valid
  o.w.bits := io.in(wOwner).w.bits
}

/** The uncore with its NIC, as a SoC attaches them: one register slave (offsets with bit 31
  * set are the NIC's registers, the others the uncore's), one DMA master, the wire. */
class AccioNicUncore(val p: UncoreParams, val np: NicParams = NicParams()) extends Module {
  val io = IO(new Bundle {
    val mmio = new AxiLiteSlave(p.addrBits)
    val dma = new AxiMaster
    val rx = Flipped(Decoupled(new StreamBeat))
    val tx = Decoupled(new StreamBeat)
    val mac = Input(UInt(48.W)) // the NIC's MACADDR out of reset
    val time = Input(UInt(64.W))
    val link = Flipped(Valid(Bool()))
    val irqWake = Output(UInt(p.harts.W))
    val irqEvent = Output(Bool())
    val irqNic = Output(Bool())
    val busy = Output(Bool())
  })
  val uncore = Module(new AccioUncore(p))
  val nic = Module(new AccioNic(np))

  // registers: the target of an access from bit 31 of its offset (AW and W come together)
  val m = io.mmio
  val toNic = Seq(m.aw.bits.addr(31), m.ar.bits.addr(31))
  val um = uncore.io.mmio
  val nm = nic.io.mmio
  um.aw.valid := m.aw.valid && !toNic(0)
  nm.aw.valid := m.aw.valid && toNic(0)
  um.w.valid := m.w.valid && !toNic(0)
  nm.w.valid := m.w.valid && toNic(0)
  um.ar.valid := m.ar.valid && !toNic(1)
  nm.ar.valid := m.ar.valid && toNic(1)
  um.aw.bits := m.aw.bits
  um.w.bits := m.w.bits
  um.ar.bits := m.ar.bits
  nm.aw.bits.addr := m.aw.bits.addr(11, 0)
  nm.aw.bits.user := m.aw.bits.user
  nm.ar.bits.addr := m.ar.bits.addr(11, 0)
  nm.ar.bits.user := m.ar.bits.user
  nm.w.bits := m.w.bits
  m.aw.ready := Mux(toNic(0), nm.aw.ready, um.aw.ready)
  m.w.ready := Mux(toNic(0), nm.w.ready, um.w.ready)
  m.ar.ready := Mux(toNic(1), nm.ar.ready, um.ar.ready)
  m.b.valid := um.b.valid || nm.b.valid
  m.b.bits := Mux(nm.b.valid, nm.b.bits, um.b.bits)
  um.b.ready := m.b.ready
  nm.b.ready := m.b.ready
  m.r.valid := um.r.valid || nm.r.valid
  m.r.bits := Mux(nm.r.valid, nm.r.bits, um.r.bits)
  um.r.ready := m.r.ready
  nm.r.ready := m.r.ready

  val share = Module(new AxiShare)
  share.io.in(0) <> uncore.io.dma
  share.io.in(1) <> nic.io.dma
  io.dma <> share.io.out

  nic.io.wireRx <> io.rx
  io.tx <> nic.io.wireTx
  uncore.io.rx <> nic.io.toEngine
  nic.io.fromEngine <> uncore.io.toNic
  nic.io.verdict := uncore.io.rxVerdict
  nic.io.engineTx <> uncore.io.tx
  nic.io.macReset := io.mac
  uncore.io.mac := nic.io.mac
  nic.io.time := io.time
  uncore.io.time := io.time
  nic.io.link := io.link
  uncore.io.link := io.link
  io.irqWake := uncore.io.irqWake
  io.irqEvent := uncore.io.irqEvent
  io.irqNic := nic.io.irq
  io.busy := uncore.io.busy || nic.io.busy
}
