// SPDX-License-Identifier: MIT
// The Accio uncore as a rocket-chip device: WithAccioUncore puts it on the
// system bus (its registers), the front bus (its DMA) and the interrupt bus,
// so that `new WithAccioUncore ++ new DefaultConfig` builds a Rocket SoC with
// it, Chipyard-style. The uncore itself (Chisel 6) and its MMIO bridge come in
// as Verilog behind the AccioUncoreGlue black box (hardware/soc/gen_top.py
// writes the glue module).
package accio.soc

import chisel3._
import chisel3.experimental.IO
import freechips.rocketchip.amba.axi4._
import freechips.rocketchip.config.{Config, Field, Parameters}
import freechips.rocketchip.diplomacy._
import freechips.rocketchip.interrupts._
import freechips.rocketchip.subsystem._
import freechips.rocketchip.tilelink._

case class AccioUncoreParams(
  base: BigInt = 0x50000000L,   // kernel alias; user alias +1 MiB, CTX +2 MiB
  harts: Int = 1,
  idBits: Int = 8)
case object AccioUncoreKey extends Field[Option[AccioUncoreParams]](None)

/** The uncore at `base`, with as many harts as the system has cores. */
class WithAccioUncore(base: BigInt = 0x50000000L) extends Config((site, here, up) => {
  case AccioUncoreKey => Some(AccioUncoreParams(base = base, harts = site(RocketTilesKey).size))
})

/** Flat AXI4 signals of the glue (names as in the Verilog). */
class AccioUncoreGlue(p: AccioUncoreParams, hartId0: Int) extends BlackBox(Map(
    "HARTS" -> chisel3.experimental.IntParam(p.harts),
    "HART_ID0" -> chisel3.experimental.IntParam(hartId0),
    "PORT_BASE" -> chisel3.experimental.IntParam(p.base))) {
  val io = IO(new AccioUncoreGlueIO(p))
}

class AccioUncoreGlueIO(p: AccioUncoreParams) extends Bundle {
    val clock = Input(Clock())
    val reset = Input(Bool())
    // register slave (from the system bus)
    val s_aw_ready = Output(Bool()); val s_aw_valid = Input(Bool())
    val s_aw_id = Input(UInt(p.idBits.W)); val s_aw_addr = Input(UInt(31.W))
    val s_aw_len = Input(UInt(8.W))
    val s_w_ready = Output(Bool()); val s_w_valid = Input(Bool())
    val s_w_data = Input(UInt(64.W)); val s_w_strb = Input(UInt(8.W)); val s_w_last = Input(Bool())
    val s_b_ready = Input(Bool()); val s_b_valid = Output(Bool())
    val s_b_id = Output(UInt(p.idBits.W)); val s_b_resp = Output(UInt(2.W))
    val s_ar_ready = Output(Bool()); val s_ar_valid = Input(Bool())
    val s_ar_id = Input(UInt(p.idBits.W)); val s_ar_addr = Input(UInt(31.W))
    val s_ar_len = Input(UInt(8.W))
    val s_r_ready = Input(Bool()); val s_r_valid = Output(Bool())
    val s_r_id = Output(UInt(p.idBits.W)); val s_r_data = Output(UInt(64.W))
    val s_r_resp = Output(UInt(2.W)); val s_r_last = Output(Bool())
    // DMA master (into the front bus)
    val d_aw_ready = Input(Bool()); val d_aw_valid = Output(Bool())
    val d_aw_addr = Output(UInt(64.W)); val d_aw_len = Output(UInt(8.W))
    val d_aw_size = Output(UInt(3.W)); val d_aw_burst = Output(UInt(2.W))
    val d_w_ready = Input(Bool()); val d_w_valid = Output(Bool())
    val d_w_data = Output(UInt(64.W)); val d_w_strb = Output(UInt(8.W)); val d_w_last = Output(Bool())
    val d_b_ready = Output(Bool()); val d_b_valid = Input(Bool()); val d_b_resp = Input(UInt(2.W))
    val d_ar_ready = Input(Bool()); val d_ar_valid = Output(Bool())
    val d_ar_addr = Output(UInt(64.W)); val d_ar_len = Output(UInt(8.W))
    val d_ar_size = Output(UInt(3.W)); val d_ar_burst = Output(UInt(2.W))
    val d_r_ready = Output(Bool()); val d_r_valid = Input(Bool())
    val d_r_data = Input(UInt(64.W)); val d_r_resp = Input(UInt(2.W)); val d_r_last = Input(Bool())
    // the NIC side and the interrupts
    val nic = new AccioNicPort(p.harts)
    override def cloneType = new AccioUncoreGlueIO(p).asInstanceOf[this.type]
}

/** What the SoC's top (or a Chipyard harness) connects: the wire's streams,
  * the station MAC, the time, the link, and the interrupts for observation. */
class AccioNicPort(val harts: Int) extends Bundle {
  val rx_ready = Output(Bool()); val rx_valid = Input(Bool())
  val rx_data = Input(UInt(64.W)); val rx_keep = Input(UInt(8.W)); val rx_last = Input(Bool())
  val tx_ready = Input(Bool()); val tx_valid = Output(Bool())
  val tx_data = Output(UInt(64.W)); val tx_keep = Output(UInt(8.W)); val tx_last = Output(Bool())
  val toNic_ready = Input(Bool()); val toNic_valid = Output(Bool())
  val toNic_data = Output(UInt(64.W)); val toNic_keep = Output(UInt(8.W))
  val toNic_last = Output(Bool())
  val mac = Input(UInt(48.W)); val time_ns = Input(UInt(64.W))
  val link_valid = Input(Bool()); val link_up = Input(Bool())
  val irq_wake = Output(UInt(harts.W)); val irq_event = Output(Bool())
}

trait CanHaveAccioUncore { this: BaseSubsystem =>
  private val paramsOpt = p(AccioUncoreKey)
  private val device = new SimpleDevice("accio", Seq("accio,uncore"))

  val accioRegs = AXI4SlaveNode(paramsOpt.map(a => AXI4SlavePortParameters(
    slaves = Seq(AXI4SlaveParameters(
      address = Seq(AddressSet(a.base, 0x3fffff)),
      resources = device.reg("control"),
      regionType = RegionType.UNCACHED,
      // what the cores' TLBs require of an uncached region; the registers
      // take single beats (the cores' uncached accesses), bursts get SLVERR
      supportsWrite = TransferSizes(1, 64),
      supportsRead = TransferSizes(1, 64))),
    beatBytes = 8)).toSeq)
  val accioDma = AXI4MasterNode(paramsOpt.map(_ => AXI4MasterPortParameters(
    masters = Seq(AXI4MasterParameters(name = "accio-dma", id = IdRange(0, 1))))).toSeq)
  val accioIrqs = IntSourceNode(paramsOpt.map(a =>
    IntSourcePortParameters(Seq(IntSourceParameters(range = IntRange(0, 1 + a.harts),
      resources = device.int)))).toSeq)

  paramsOpt.foreach { a =>
    // the registers behind the system bus, as the MMIO port: one AXI ID
    // per master, so that the glue tells the harts apart
    sbus.coupleTo("accio_regs") {
      (accioRegs
        := AXI4Buffer()
        := AXI4UserYanker()
        := AXI4Deinterleaver(sbus.blockBytes)
        := AXI4IdIndexer(a.idBits)
        := TLToAXI4()
        := TLWidthWidget(sbus.beatBytes)
        := _)
    }
    fbus.coupleFrom("accio_dma") {
      (_
        := TLBuffer(BufferParams.default)
        := TLFIFOFixer(TLFIFOFixer.all)
        := TLWidthWidget(8)
        := AXI4ToTL()
        := AXI4UserYanker(Some(2))
        := AXI4Fragmenter()
        := accioDma)
    }
    ibus.fromSync := accioIrqs
  }

  val accio_nic = paramsOpt.map { a => InModuleBody {
    val (s, se) = accioRegs.in.head
    val (d, _) = accioDma.out.head
    val (irq, _) = accioIrqs.out.head
    // hart h's uncached data accesses: the master named "Core h DCache MMIO"
    val ids = se.master.masters.map(m => m.name -> m.id)
    val harts = (0 until a.harts).map(h => ids.collectFirst {
      case (n, r) if n == s"Core $h DCache MMIO" => r
    }.getOrElse(throw new Exception(s"accio: no uncached master of hart $h in $ids")))
    require(harts.forall(_.size == 1) && harts.map(_.start) == (0 until a.harts).map(_ + harts.head.start),
      s"accio: the harts' uncached IDs are not consecutive single IDs: $harts")
    val g = Module(new AccioUncoreGlue(a, harts.head.start))
    g.io.clock := chisel3.Module.clock
    g.io.reset := chisel3.Module.reset.asBool
    g.io.s_aw_valid := s.aw.valid; s.aw.ready := g.io.s_aw_ready
    g.io.s_aw_id := s.aw.bits.id; g.io.s_aw_addr := s.aw.bits.addr(30, 0); g.io.s_aw_len := s.aw.bits.len
    g.io.s_w_valid := s.w.valid; s.w.ready := g.io.s_w_ready
    g.io.s_w_data := s.w.bits.data; g.io.s_w_strb := s.w.bits.strb; g.io.s_w_last := s.w.bits.last
    s.b.valid := g.io.s_b_valid; g.io.s_b_ready := s.b.ready
    s.b.bits.id := g.io.s_b_id; s.b.bits.resp := g.io.s_b_resp
    g.io.s_ar_valid := s.ar.valid; s.ar.ready := g.io.s_ar_ready
    g.io.s_ar_id := s.ar.bits.id; g.io.s_ar_addr := s.ar.bits.addr(30, 0); g.io.s_ar_len := s.ar.bits.len
    s.r.valid := g.io.s_r_valid; g.io.s_r_ready := s.r.ready
    s.r.bits.id := g.io.s_r_id; s.r.bits.data := g.io.s_r_data
    s.r.bits.resp := g.io.s_r_resp; s.r.bits.last := g.io.s_r_last
    d.aw.valid := g.io.d_aw_valid; g.io.d_aw_ready := d.aw.ready
    d.aw.bits := 0.U.asTypeOf(d.aw.bits)
    d.aw.bits.addr := g.io.d_aw_addr; d.aw.bits.len := g.io.d_aw_len
    d.aw.bits.size := g.io.d_aw_size; d.aw.bits.burst := g.io.d_aw_burst
    d.w.valid := g.io.d_w_valid; g.io.d_w_ready := d.w.ready
    d.w.bits := 0.U.asTypeOf(d.w.bits)
    d.w.bits.data := g.io.d_w_data; d.w.bits.strb := g.io.d_w_strb; d.w.bits.last := g.io.d_w_last
    g.io.d_b_valid := d.b.valid; d.b.ready := g.io.d_b_ready; g.io.d_b_resp := d.b.bits.resp
    d.ar.valid := g.io.d_ar_valid; g.io.d_ar_ready := d.ar.ready
    d.ar.bits := 0.U.asTypeOf(d.ar.bits)
    d.ar.bits.addr := g.io.d_ar_addr; d.ar.bits.len := g.io.d_ar_len
    d.ar.bits.size := g.io.d_ar_size; d.ar.bits.burst := g.io.d_ar_burst
    g.io.d_r_valid := d.r.valid; d.r.ready := g.io.d_r_ready
    g.io.d_r_data := d.r.bits.data; g.io.d_r_resp := d.r.bits.resp; g.io.d_r_last := d.r.bits.last
    // interrupts: 0 the event interrupt, 1 + h hart h's wake-up
    irq(0) := g.io.nic.irq_event
    for (h <- 0 until a.harts) irq(1 + h) := g.io.nic.irq_wake(h)
    val port = IO(new AccioNicPort(a.harts)).suggestName("accio")
    port <> g.io.nic
    port
  } }
}

/** rocket-chip's example system with the uncore attached diplomatically. */
class AccioRocketSystem(implicit p: Parameters) extends freechips.rocketchip.system.ExampleRocketSystem
    with CanHaveAccioUncore
