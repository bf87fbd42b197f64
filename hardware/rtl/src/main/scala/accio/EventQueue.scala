package accio

import chisel3._
import chisel3.util._

/** The control event queue: producers push through a fixed-priority arbiter (one event per
  * cycle, every producer is always accepted); an event that finds the queue full is counted in
  * LOST. The event interrupt is high while the queue holds an entry and the mask enables it. */
class EventQueue(depth: Int, nProducers: Int) extends Module {
  val io = IO(new Bundle {
    val in = Vec(nProducers, Flipped(Decoupled(new Event)))
    val pop = Input(Bool()) // EVQ_POP read: `head` is returned in the same cycle
    val head = Output(UInt(64.W)) // entry | VALID, or 0
    val status = Output(UInt(64.W))
    val maskWrite = Input(Valid(Bool()))
    val mask = Output(Bool())
    val irq = Output(Bool())
  })
  val arb = Module(new Arbiter(new Event, nProducers))
  arb.io.in <> io.in
  val q = Module(new Queue(UInt(63.W), depth))
  q.io.enq.valid := arb.io.out.valid
  q.io.enq.bits := Event.word(arb.io.out.bits)
  arb.io.out.ready := true.B
  val lost = RegInit(0.U(32.W))
  when(arb.io.out.valid && !q.io.enq.ready) { lost := lost + 1.U }

  q.io.deq.ready := io.pop
  io.head := Mux(q.io.deq.valid, Cat(1.U(1.W), q.io.deq.bits), 0.U)
  io.status := Cat(lost, q.io.count.pad(16))
  val mask = RegInit(false.B)
  when(io.maskWrite.valid) { mask := io.maskWrite.bits }
  io.mask := mask
  io.irq := mask && q.io.count =/= 0.U
}

/** Per-hart hardware ready queues (round-robin order: oldest first) and the prioritized wake-up
  * interrupt with each hart's ACCEL register. */
class ReadyQueues(p: UncoreParams) extends Module {
  import accio.regs.Uncore.{Hart, Row}
  val io = IO(new Bundle {
    val ready = Flipped(Decoupled(new ReadyReq(p)))
    // register access of hart h's block: offset within the block
    val hart = Input(UInt(p.hartBits.W))
    val off = Input(UInt(6.W))
    val read = Input(Bool())
    val write = Input(Bool())
    val wdata = Input(UInt(64.W))
    val rdata = Output(UInt(64.W))
    val irq = Output(Vec(p.harts, Bool()))
  })
  val qs = Seq.fill(p.harts)(Module(new Queue(UInt(17.W), p.qdepth)))
  val accel = RegInit(VecInit(Seq.fill(p.harts)(0.U(16.W))))
  val wake = RegInit(VecInit(Seq.fill(p.harts)(false.B)))
  val wakeCount = RegInit(VecInit(Seq.fill(p.harts)(0.U(64.W))))

  val st = io.ready.bits.state
  val h0 = F(st, Row.STATE_HART)
  val h = Mux(h0 >= p.harts.U, 0.U, h0)(p.hartBits - 1, 0)
  val prio = F(st, Row.STATE_PRIO)
  io.ready.ready := true.B // each side of each row is queued at most once: a queue cannot fill
  for (i <- 0 until p.harts) {
    qs(i).io.enq.valid := io.ready.valid && h === i.U
    qs(i).io.enq.bits := Cat(io.ready.bits.tx, io.ready.bits.row)
    qs(i).io.deq.ready := false.B
  }
  val a = accel(h)
  val blocked = a(0) && a(15, 8) >= prio
  when(io.ready.valid && F(st, Row.STATE_INTR) === 1.U && !blocked) {
    wake(h) := true.B
    wakeCount(h) := wakeCount(h) + 1.U
  }

  val entries = VecInit(qs.map(q => Mux(q.io.deq.valid, Cat(1.U(1.W), 0.U(46.W), q.io.deq.bits), 0.U(64.W))))
  val counts = VecInit(qs.map(_.io.count.pad(64)))
  io.rdata := MuxLookup(io.off, 0.U)(
    Seq(
      Hart.RQ_POP.U -> entries(io.hart),
      Hart.RQ_PEEK.U -> entries(io.hart),
      Hart.RQ_COUNT.U -> counts(io.hart),
      Hart.ACCEL.U -> accel(io.hart).pad(64),
      Hart.WAKE.U -> Cat(0.U(63.W), wake(io.hart)),
      Hart.WAKE_COUNT.U -> wakeCount(io.hart)
    )
  )
  for (i <- 0 until p.harts) {
    when(io.read && io.hart === i.U && io.off === Hart.RQ_POP.U) { qs(i).io.deq.ready := true.B }
    when(io.write && io.hart === i.U) {
      when(io.off === Hart.ACCEL.U) { accel(i) := io.wdata & F.maskU(Hart.ACCEL_RUNNING, Hart.ACCEL_PRIO) }
      when(io.off === Hart.WAKE.U && io.wdata(0)) { wake(i) := false.B }
    }
  }
  io.irq := wake
}
