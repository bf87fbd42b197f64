package accio

import chisel3._
import chisel3.simulator.PeekPokeAPI._
import scala.collection.mutable

/** System memory of the vectors: 4 MiB at 0x80000000; DMA outside it gets SLVERR. */
class SysMem {
  val base = BigInt("80000000", 16)
  val size = 4 << 20
  val bytes = new Array[Byte](size)
  def inRange(a: BigInt, n: Int): Boolean = a >= base && a + n <= base + size
  def write(a: BigInt, data: Array[Byte]): Unit = {
    require(inRange(a, data.length), f"memory write outside system memory at 0x$a%x")
    System.arraycopy(data, 0, bytes, (a - base).toInt, data.length)
  }
  def read(a: BigInt, n: Int): Array[Byte] = {
    require(inRange(a, n))
    bytes.slice((a - base).toInt, (a - base).toInt + n)
  }
  def clear(): Unit = java.util.Arrays.fill(bytes, 0.toByte)
}

/** An AXI4 slave over `mem` on a DMA master port, stepped by its bench: `drive()` before the
  * clock edge (this cycle's R and B beats), `sample()` the handshakes before the edge, `commit()`
  * after it. Addresses for which `errorAt` holds (or outside the memory) get SLVERR. */
class AxiMem(dma: AxiMaster, mem: SysMem) {
  var errorAt: BigInt => Boolean = _ => false
  private case class Burst(addr: BigInt, beats: Int)
  private val awQ = mutable.Queue[Burst]()
  private var wBeat = 0
  private var wErr = false
  private val wData = mutable.ArrayBuffer[(BigInt, Array[Byte], Int)]()
  private val bQ = mutable.Queue[Int]()
  private val arQ = mutable.Queue[Burst]()
  private var rBeat = 0
  private var rFire, bFire = false
  private var aw: Option[Burst] = None
  private var w: Option[(BigInt, Int, Boolean)] = None
  private var ar: Option[Burst] = None

  def init(): Unit = {
    dma.aw.ready.poke(true.B)
    dma.w.ready.poke(true.B)
    dma.ar.ready.poke(true.B)
    dma.b.valid.poke(false.B)
    dma.r.valid.poke(false.B)
  }
  def clear(): Unit = { awQ.clear(); bQ.clear(); arQ.clear(); wData.clear(); wBeat = 0; rBeat = 0 }
  /** Responses still to give. */
  def pending: Boolean = arQ.nonEmpty || bQ.nonEmpty

  def drive(): Unit = {
    arQ.headOption match {
      case Some(b) =>
        val a = b.addr + 8 * rBeat
        val ok = mem.inRange(a, 8) && !errorAt(a)
        dma.r.valid.poke(true.B)
        dma.r.bits.data.poke((if (ok) Bench.le(mem.read(a, 8)) else BigInt(0)).U)
        dma.r.bits.resp.poke((if (ok) 0 else 2).U)
        dma.r.bits.last.poke((rBeat == b.beats - 1).B)
      case None => dma.r.valid.poke(false.B)
    }
    dma.b.valid.poke(bQ.nonEmpty.B)
    if (bQ.nonEmpty) dma.b.bits.poke(bQ.head.U)
  }

  /** `active`: the master may be issuing (otherwise its valids are not looked at). */
  def sample(active: Boolean): Unit = {
    rFire = arQ.nonEmpty && dma.r.ready.peek().litToBoolean
    bFire = bQ.nonEmpty && dma.b.ready.peek().litToBoolean
    aw = None; w = None; ar = None
    if (active || pending) {
      if (dma.aw.valid.peek().litToBoolean)
        aw = Some(Burst(dma.aw.bits.addr.peek().litValue, dma.aw.bits.len.peek().litValue.toInt + 1))
      if (dma.w.valid.peek().litToBoolean)
        w = Some((dma.w.bits.data.peek().litValue, dma.w.bits.strb.peek().litValue.toInt,
          dma.w.bits.last.peek().litToBoolean))
      if (dma.ar.valid.peek().litToBoolean)
        ar = Some(Burst(dma.ar.bits.addr.peek().litValue, dma.ar.bits.len.peek().litValue.toInt + 1))
    }
  }

  def commit(): Unit = {
    if (rFire) {
      rBeat += 1
      if (rBeat == arQ.head.beats) { arQ.dequeue(); rBeat = 0 }
    }
    if (bFire) bQ.dequeue()
    aw.foreach(awQ.enqueue(_))
    ar.foreach(arQ.enqueue(_))
    w.foreach { case (d, strb, last) =>
      require(awQ.nonEmpty, "W beat before its AW")
      val b = awQ.head
      val a = b.addr + 8 * wBeat
      if (!mem.inRange(a, 8) || errorAt(a)) wErr = true
      wData += ((a, Bench.bytesOf(d, 8), strb))
      wBeat += 1
      if (wBeat == b.beats) {
        require(last, "WLAST missing")
        if (!wErr) for ((a, bs, s) <- wData; i <- 0 until 8 if ((s >> i) & 1) == 1) mem.bytes((a - mem.base).toInt + i) = bs(i)
        bQ.enqueue(if (wErr) 2 else 0)
        awQ.dequeue(); wBeat = 0; wErr = false; wData.clear()
      } else require(!last, "early WLAST")
    }
  }
}

object Bench {
  def le(b: Array[Byte]): BigInt = b.zipWithIndex.map { case (x, i) => BigInt(x & 0xff) << (8 * i) }.sum
  def bytesOf(v: BigInt, n: Int): Array[Byte] = Array.tabulate(n)(i => ((v >> (8 * i)) & 0xff).toByte)
}

/** Register accesses on an AXI4-Lite slave with the access sideband, for a bench that steps
  * the clock and knows when its design is idle. */
trait MmioAccess {
  def mmioPort: AxiLiteSlave
  def step(): Unit
  def idle(limit: Int = 200000): Unit
  def cycle: Long

  /** Step until `cond` holds; fails (liveness) after `limit` cycles. */
  def waitFor(cond: => Boolean, what: String, limit: Int = 100000): Unit = {
    var n = 0
    while (!cond) {
      step(); n += 1
      if (n > limit) throw new AssertionError(s"liveness: no $what after $limit cycles")
    }
  }
  var lastMmioWrite: Long = -1 // cycle the latest MMIO write was accepted

  private def user(u: Option[Int], hart: Int, bits: AccessUser): Unit = {
    bits.user.poke(u.isDefined.B)
    bits.asid.poke(u.getOrElse(0).U)
    bits.hart.poke(hart.U)
  }

  /** A store of `size` bytes (naturally aligned); returns after the uncore finished its effects. */
  def store(off: BigInt, size: Int, value: BigInt, asid: Option[Int] = None, hart: Int = 0, wait: Boolean = true): Unit = {
    val m = mmioPort
    val lane = (off & 7).toInt
    m.aw.valid.poke(true.B)
    m.aw.bits.addr.poke(off.U)
    user(asid, hart, m.aw.bits.user)
    m.w.valid.poke(true.B)
    m.w.bits.data.poke(((value & ((BigInt(1) << (8 * size)) - 1)) << (8 * lane)).U)
    m.w.bits.strb.poke((((1 << size) - 1) << lane).U)
    var n = 0
    while (!m.aw.ready.peek().litToBoolean) { step(); n += 1; if (n > 100000) throw new AssertionError("liveness: MMIO write not accepted") }
    lastMmioWrite = cycle
    step()
    m.aw.valid.poke(false.B)
    m.w.valid.poke(false.B)
    m.b.ready.poke(true.B)
    waitFor(m.b.valid.peek().litToBoolean, "write response")
    step()
    m.b.ready.poke(false.B)
    if (wait) idle()
  }
  def write(off: BigInt, value: BigInt, asid: Option[Int] = None, hart: Int = 0): Unit = store(off, 8, value, asid, hart)

  /** A load; with `wait` false it returns with the response, while engines may still work. */
  def read(off: BigInt, asid: Option[Int] = None, hart: Int = 0, wait: Boolean = true): BigInt = {
    val m = mmioPort
    m.ar.valid.poke(true.B)
    m.ar.bits.addr.poke(off.U)
    user(asid, hart, m.ar.bits.user)
    var n = 0
    while (!m.ar.ready.peek().litToBoolean) { step(); n += 1; if (n > 100000) throw new AssertionError("liveness: MMIO read not accepted") }
    step()
    m.ar.valid.poke(false.B)
    m.r.ready.poke(true.B)
    waitFor(m.r.valid.peek().litToBoolean, "read response")
    val v = m.r.bits.data.peek().litValue
    step()
    m.r.ready.poke(false.B)
    if (wait) idle()
    v
  }

}

/** Test bench around a simulated uncore: an AXI4 memory model on the DMA port, an Ethernet stream
  * model on the RX/TX/normal-path ports, MMIO accesses on the AXI4-Lite port. Everything is
  * cycle-stepped from here; `idle()` waits until the uncore reports no work in progress and fails
  * (liveness) when that takes too long. */
class Bench(val dut: AccioUncore, val mem: SysMem = new SysMem) extends MmioAccess {
  def mmioPort: AxiLiteSlave = dut.io.mmio
  var cycle: Long = 0
  val txFrames = mutable.Queue[Array[Byte]]()
  val nicFrames = mutable.Queue[Array[Byte]]()
  val verdicts = mutable.Queue[Boolean]()
  var recordCycles = mutable.ArrayBuffer[Long]() // cycles at which RX_WPTR moved
  var txFirstBeat = mutable.ArrayBuffer[Long]() // cycles of each frame's first TX beat
  val axi = new AxiMem(dut.io.dma, mem)
  def axiErrorAt: BigInt => Boolean = axi.errorAt
  def axiErrorAt_=(f: BigInt => Boolean): Unit = axi.errorAt = f
  var lastRxBeat: Long = -1 // cycle of the latest RX beat handshake
  var clockBase: Option[BigInt] = None // when set, io.time runs: clockBase + cycle
  var txReadyAt: Long => Boolean = _ => true // the MAC side's TX ready in a given cycle (back-pressure)
  def timeAt(c: Long): BigInt = clockBase.get + c

  private val txCur = mutable.ArrayBuffer[Byte]()
  private val nicCur = mutable.ArrayBuffer[Byte]()
  private var txInFrame = false
  private val rxBeats = mutable.Queue[(BigInt, Int, Boolean)]()

  def init(): Unit = {
    val io = dut.io
    axi.init()
    io.tx.ready.poke(true.B)
    io.toNic.ready.poke(true.B)
    io.rx.valid.poke(false.B)
    io.mmio.aw.valid.poke(false.B)
    io.mmio.w.valid.poke(false.B)
    io.mmio.ar.valid.poke(false.B)
    io.mmio.b.ready.poke(false.B)
    io.mmio.r.ready.poke(false.B)
    io.link.valid.poke(false.B)
    io.link.bits.poke(false.B)
    io.mac.poke(0.U)
    io.time.poke(0.U)
  }

  def reset(): Unit = {
    init()
    dut.reset.poke(true.B)
    dut.clock.step(2)
    dut.reset.poke(false.B)
    axi.clear(); rxBeats.clear()
    txCur.clear(); nicCur.clear(); txInFrame = false
    idle()
  }

  import Bench.{le, bytesOf}

  /** One clock cycle with the memory and stream models. */
  def step(): Unit = {
    val io = dut.io
    clockBase.foreach(t => io.time.poke((t + cycle).U))
    val txReady = txReadyAt(cycle)
    io.tx.ready.poke(txReady.B)
    axi.drive()
    val rxNow = rxBeats.headOption
    rxNow match {
      case Some((d, k, l)) =>
        io.rx.valid.poke(true.B)
        io.rx.bits.data.poke(d.U)
        io.rx.bits.keep.poke(((1 << k) - 1).U)
        io.rx.bits.last.poke(l.B)
      case None => io.rx.valid.poke(false.B)
    }
    val busy = io.busy.peek().litToBoolean
    axi.sample(busy || rxNow.isDefined)
    val rxFire = rxNow.isDefined && io.rx.ready.peek().litToBoolean
    var tx: Option[(BigInt, Int, Boolean)] = None
    var nic: Option[(BigInt, Int, Boolean)] = None
    var verdict: Option[Boolean] = None
    var record = false
    if (busy || axi.pending || rxNow.isDefined) {
      if (txReady && io.tx.valid.peek().litToBoolean)
        tx = Some((io.tx.bits.data.peek().litValue, io.tx.bits.keep.peek().litValue.toInt, io.tx.bits.last.peek().litToBoolean))
      if (io.toNic.valid.peek().litToBoolean)
        nic = Some((io.toNic.bits.data.peek().litValue, io.toNic.bits.keep.peek().litValue.toInt,
          io.toNic.bits.last.peek().litToBoolean))
      if (io.rxVerdict.valid.peek().litToBoolean) verdict = Some(io.rxVerdict.bits.peek().litToBoolean)
      record = io.rxRecord.peek().litToBoolean
    }
    dut.clock.step()
    cycle += 1
    // account for the handshakes of the edge
    axi.commit()
    if (rxFire) { rxBeats.dequeue(); lastRxBeat = cycle - 1 }
    def collect(beat: Option[(BigInt, Int, Boolean)], cur: mutable.ArrayBuffer[Byte], out: mutable.Queue[Array[Byte]]): Unit =
      beat.foreach { case (d, keep, last) =>
        val n = Integer.bitCount(keep)
        cur ++= bytesOf(d, n)
        if (last) { out.enqueue(cur.toArray); cur.clear() }
      }
    if (tx.isDefined && !txInFrame) { txFirstBeat += cycle - 1; txInFrame = true }
    if (tx.exists(_._3)) txInFrame = false
    collect(tx, txCur, txFrames)
    collect(nic, nicCur, nicFrames)
    verdict.foreach(verdicts.enqueue(_))
    if (record) recordCycles += cycle - 1
  }

  def idle(limit: Int): Unit = {
    var n = 0
    while (dut.io.busy.peek().litToBoolean || axi.pending || rxBeats.nonEmpty) {
      step()
      n += 1
      if (n > limit) throw new AssertionError(s"liveness: the uncore is still busy after $limit cycles")
    }
  }

  /** Offer a frame; returns whether the engine took it. A passed frame must come out on the
    * normal-path port unchanged. */
  def rx(frame: Array[Byte]): Boolean = {
    val beats = frame.grouped(8).toSeq
    for ((b, i) <- beats.zipWithIndex) rxBeats.enqueue((le(b), b.length, i == beats.length - 1))
    waitFor(verdicts.nonEmpty, "RX verdict")
    idle()
    val took = verdicts.dequeue()
    if (!took) {
      assert(nicFrames.nonEmpty, "a passed frame did not reach the normal NIC path")
      val got = nicFrames.dequeue()
      assert(got.sameElements(frame), "the normal NIC path got a different frame")
    }
    took
  }

  def link(up: Boolean): Unit = {
    dut.io.link.valid.poke(true.B)
    dut.io.link.bits.poke(up.B)
    step()
    dut.io.link.valid.poke(false.B)
    idle()
  }

  def irq(line: Int, harts: Int): Int =
    if (line < harts) ((dut.io.irqWake.peek().litValue >> line) & 1).toInt
    else if (line == harts) (if (dut.io.irqEvent.peek().litToBoolean) 1 else 0)
    else 0
}
