package accio

import chisel3._
import chisel3.util._

/** A transfer to or from a ring in system memory: `bytes` bytes starting at free-running byte
  * pointer `ptr` (8-byte aligned) of the ring at `base` with `size` bytes (a power of two). */
class RingXfer extends Bundle {
  val base = UInt(64.W)
  val size = UInt(64.W)
  val ptr = UInt(64.W)
  val bytes = UInt(12.W)
}

object Ring {
  val MaxBurst = 16
  /** Beats of the next burst from byte offset `off` of the ring: up to 16, never across the ring's
    * end nor a 4 KiB boundary. */
  def burst(base: UInt, size: UInt, ptr: UInt, beatsLeft: UInt): (UInt, UInt) = {
    val off = ptr & (size - 1.U)
    val addr = base + off
    val toEnd = (size - off) >> 3
    val toPage = (4096.U(13.W) - addr(11, 0)) >> 3
    val n = Seq(beatsLeft, toEnd, toPage, MaxBurst.U).reduce((a, b) => Mux(a < b, a, b))
    (addr, n(4, 0))
  }
}

/** DMA writer: writes a stream of 64-bit words into a ring with INCR bursts (one burst in
  * flight), the last beat's strobes cut at `bytes`. Reports whether every response was OKAY.
  * With `skipFirst`, the strobes of the transfer's first beat also leave out its lowest `skip`
  * bytes (sampled with the command): a buffer that starts inside a word. */
class DmaWriter(skipFirst: Boolean = false) extends Module {
  val io = IO(new Bundle {
    val cmd = Flipped(Decoupled(new RingXfer))
    val skip = if (skipFirst) Some(Input(UInt(3.W))) else None
    val data = Flipped(Decoupled(UInt(64.W)))
    val done = Valid(Bool()) // true: an error response was seen
    val axi = new Bundle {
      val aw = Decoupled(new AxiAddr)
      val w = Decoupled(new AxiW)
      val b = Flipped(Decoupled(UInt(2.W)))
    }
  })
  val sIdle :: sAddr :: sData :: sResp :: sDone :: Nil = Enum(5)
  val state = RegInit(sIdle)
  val x = Reg(new RingXfer)
  val beatsLeft = Reg(UInt(9.W))
  val inBurst = Reg(UInt(5.W))
  val err = Reg(Bool())
  val skip = RegInit(0.U(3.W))
  val (addr, n) = Ring.burst(x.base, x.size, x.ptr, beatsLeft)

  io.cmd.ready := state === sIdle
  io.done.valid := false.B
  io.done.bits := err
  when(io.cmd.fire) {
    x := io.cmd.bits
    beatsLeft := (io.cmd.bits.bytes +& 7.U) >> 3
    err := false.B
    io.skip.foreach(skip := _)
    state := Mux(io.cmd.bits.bytes === 0.U, sDone, sAddr)
  }

  io.axi.aw.valid := state === sAddr
  io.axi.aw.bits.addr := addr
  io.axi.aw.bits.len := n - 1.U
  io.axi.aw.bits.size := 3.U
  io.axi.aw.bits.burst := 1.U
  when(io.axi.aw.fire) {
    inBurst := n
    state := sData
  }

  val lastOfXfer = beatsLeft === 1.U
  val tail = x.bytes(2, 0)
  io.axi.w.valid := state === sData && io.data.valid
  io.data.ready := state === sData && io.axi.w.ready
  io.axi.w.bits.data := io.data.bits
  io.axi.w.bits.strb := Mux(lastOfXfer && tail =/= 0.U, UIntToOH(tail) - 1.U, "hff".U) &
    ~(UIntToOH(skip, 8) - 1.U)(7, 0)
  io.axi.w.bits.last := inBurst === 1.U
  when(io.axi.w.fire) {
    inBurst := inBurst - 1.U
    beatsLeft := beatsLeft - 1.U
    x.ptr := x.ptr + 8.U
    skip := 0.U
    when(inBurst === 1.U) { state := sResp }
  }
  io.axi.b.ready := state === sResp
  when(io.axi.b.fire) {
    when(io.axi.b.bits =/= 0.U) { err := true.B }
    state := Mux(beatsLeft === 0.U, sDone, sAddr)
  }
  when(state === sDone) {
    io.done.valid := true.B
    state := sIdle
  }
}

/** DMA reader: reads `bytes` bytes of a ring (rounded up to whole words) with INCR bursts and
  * hands the words on in order; always delivers every word, then reports any error response. */
class DmaReader extends Module {
  val io = IO(new Bundle {
    val cmd = Flipped(Decoupled(new RingXfer))
    val data = Decoupled(UInt(64.W))
    val done = Valid(Bool())
    val axi = new Bundle {
      val ar = Decoupled(new AxiAddr)
      val r = Flipped(Decoupled(new AxiR))
    }
  })
  val sIdle :: sAddr :: sData :: sDone :: Nil = Enum(4)
  val state = RegInit(sIdle)
  val x = Reg(new RingXfer)
  val beatsLeft = Reg(UInt(9.W))
  val err = Reg(Bool())
  val (addr, n) = Ring.burst(x.base, x.size, x.ptr, beatsLeft)

  io.cmd.ready := state === sIdle
  io.done.valid := state === sDone
  io.done.bits := err
  when(state === sDone) { state := sIdle }
  when(io.cmd.fire) {
    x := io.cmd.bits
    beatsLeft := (io.cmd.bits.bytes +& 7.U) >> 3
    err := false.B
    state := Mux(io.cmd.bits.bytes === 0.U, sDone, sAddr)
  }
  io.axi.ar.valid := state === sAddr
  io.axi.ar.bits.addr := addr
  io.axi.ar.bits.len := n - 1.U
  io.axi.ar.bits.size := 3.U
  io.axi.ar.bits.burst := 1.U
  when(io.axi.ar.fire) { state := sData }

  io.data.valid := state === sData && io.axi.r.valid
  io.data.bits := io.axi.r.bits.data
  io.axi.r.ready := state === sData && io.data.ready
  when(io.axi.r.fire) {
    when(io.axi.r.bits.resp =/= 0.U) { err := true.B }
    beatsLeft := beatsLeft - 1.U
    x.ptr := x.ptr + 8.U
    when(io.axi.r.bits.last) { state := Mux(beatsLeft === 1.U, sDone, sAddr) }
  }
}
