package accio

import chisel3._
import chisel3.util.{Decoupled, Valid}
import chisel3.simulator.PeekPokeAPI._
import org.scalatest.funsuite.AnyFunSuite
import accio.regs.Uncore.Row
import scala.util.Random

/** Unit tests of the uncore's small modules, each in its own simulation. */
class UnitSpec extends AnyFunSuite {
  val p = UncoreParams(rows = 8, harts = 2)

  test("IctTable: reset values, register operations, shadows and the 5-tuple match") {
    Sim.simulate("unit_ict", new IctTable(p, 2)) { d =>
      for (c <- d.io.clients) { c.req.valid.poke(false.B) }
      d.reset.poke(true.B); d.clock.step(); d.reset.poke(false.B)
      var n = 0
      while (!d.io.ready.peek().litToBoolean) { d.clock.step(); n += 1 }
      assert(n == p.rows * p.regsPerRow, s"reset sweep took $n cycles")
      def op(c: Int, row: Int, off: Int, o: UInt, data: BigInt = 0): BigInt = {
        val q = d.io.clients(c).req
        q.valid.poke(true.B); q.bits.row.poke(row.U); q.bits.reg.poke((off / 8).U); q.bits.op.poke(o); q.bits.data.poke(data.U)
        q.bits.lock.poke(false.B)
        assert(q.ready.peek().litToBoolean)
        val old = d.io.clients(c).resp.peek().litValue
        d.clock.step(); q.valid.poke(false.B)
        old
      }
      assert(op(0, 3, Row.LOCAL, RegOp.Rd) == Row.LOCAL_RESET)
      assert(op(0, 3, Row.RX_PKTS, RegOp.Add, 5) == 0)
      assert(op(1, 3, Row.RX_PKTS, RegOp.Add, 2) == 5)
      assert(op(0, 3, Row.RX_PKTS, RegOp.Rd) == 7)
      assert(op(0, 3, Row.TX_TSTAMP, RegOp.Rd) == 0)
      // both clients at once: client 0 wins, client 1 waits
      val q0 = d.io.clients(0).req; val q1 = d.io.clients(1).req
      q0.valid.poke(true.B); q0.bits.row.poke(1.U); q0.bits.reg.poke(0.U); q0.bits.op.poke(RegOp.Rd)
      q1.valid.poke(true.B); q1.bits.row.poke(1.U); q1.bits.reg.poke(0.U); q1.bits.op.poke(RegOp.Rd)
      assert(q0.ready.peek().litToBoolean && !q1.ready.peek().litToBoolean)
      d.clock.step(); q0.valid.poke(false.B); q1.valid.poke(false.B)
      // a locked pair: client 1 writes TX_TSTAMP with lock, then its TX_PKTS add comes next even
      // though client 0 asks in between; then client 0 sees both updates
      def req(q: chisel3.util.DecoupledIO[RegReq], off: Int, o: UInt, data: BigInt, lock: Boolean): Unit = {
        q.valid.poke(true.B); q.bits.row.poke(4.U); q.bits.reg.poke((off / 8).U); q.bits.op.poke(o)
        q.bits.data.poke(data.U); q.bits.lock.poke(lock.B)
      }
      req(q1, Row.TX_TSTAMP, RegOp.Wr, 123456, lock = true)
      assert(q1.ready.peek().litToBoolean)
      d.clock.step()
      req(q0, Row.TX_TSTAMP, RegOp.Rd, 0, lock = false)
      req(q1, Row.TX_PKTS, RegOp.Add, 1, lock = false)
      assert(!q0.ready.peek().litToBoolean && q1.ready.peek().litToBoolean, "the lock holds for one request")
      d.clock.step(); q1.valid.poke(false.B)
      assert(q0.ready.peek().litToBoolean)
      assert(d.io.clients(0).resp.peek().litValue == 123456)
      d.clock.step(); q0.valid.poke(false.B)
      assert(op(0, 4, Row.TX_PKTS, RegOp.Rd) == 1)
      // without lock, client 0 wins again
      req(q1, Row.TX_PKTS, RegOp.Add, 1, lock = false)
      d.clock.step()
      req(q0, Row.TX_PKTS, RegOp.Rd, 0, lock = false)
      assert(q0.ready.peek().litToBoolean && !q1.ready.peek().litToBoolean)
      d.clock.step(); q0.valid.poke(false.B); q1.valid.poke(false.B)
      // rows 2 (wildcard remote) and 5 (exact remote) on the same local endpoint
      def row(r: Int, lip: Long, lport: Int, rip: Long, rport: Int, state: Int = 3): Unit = {
        op(0, r, Row.LOCAL, RegOp.Wr, (BigInt(17) << 48) | (BigInt(lport) << 32) | lip)
        op(0, r, Row.REMOTE, RegOp.Wr, (BigInt(rport) << 32) | rip)
        op(0, r, Row.STATE, RegOp.Wr, state)
      }
      row(2, 0x0a00020f, 5000, 0, 0)
      row(5, 0x0a00020f, 5000, 0x0a000202, 7000)
      row(6, 0x0a00020f, 5001, 0, 0, state = 1) // enabled, not accelerated: never matches
      def lookup(lip: Long, lport: Int, rip: Long, rport: Int): Option[Int] = {
        d.io.lip.poke(lip.U); d.io.lport.poke(lport.U); d.io.rip.poke(rip.U); d.io.rport.poke(rport.U)
        if (d.io.hit.valid.peek().litToBoolean) Some(d.io.hit.bits.peek().litValue.toInt) else None
      }
      assert(lookup(0x0a00020f, 5000, 0x0a000202, 7000) == Some(5)) // exact beats an earlier wildcard
      assert(lookup(0x0a00020f, 5000, 0x0a000203, 7000) == Some(2))
      assert(lookup(0x0a00020f, 5001, 0x0a000202, 7000) == None)
      assert(lookup(0x0a000210, 5000, 0x0a000202, 7000) == None)
      // clear-bits returns the old value; the shadow follows
      op(0, 5, Row.STATE, RegOp.Wr, 0x17)
      assert(op(1, 5, Row.STATE, RegOp.AndNot, 4) == 0x17)
      assert(d.io.shadow(5).state.peek().litValue == 0x13)
      op(0, 5, Row.OWNER_ASID, RegOp.Wr, BigInt(1) << 20 | 7)
      assert(d.io.shadow(5).asidWide.peek().litToBoolean)
    }
  }

  test("EventQueue: order, simultaneous producers, overflow count, interrupt mask") {
    Sim.simulate("unit_evq", new EventQueue(4, 2)) { d =>
      d.io.pop.poke(false.B); d.io.maskWrite.valid.poke(false.B)
      for (i <- d.io.in) i.valid.poke(false.B)
      d.reset.poke(true.B); d.clock.step(); d.reset.poke(false.B)
      def push(which: Seq[Int], typ: Int): Unit = {
        for (w <- which) { val i = d.io.in(w); i.valid.poke(true.B); i.bits.typ.poke((typ + w).U); i.bits.row.poke(w.U); i.bits.info.poke((0x7fffffffL + w).U) }
        // each producer holds its event until the arbiter takes it: one per cycle, producer 0 first
        var left = which
        var n = 0
        while (left.nonEmpty) {
          val taken = left.filter(w => d.io.in(w).ready.peek().litToBoolean)
          assert(taken.size == 1)
          d.clock.step(); n += 1
          taken.foreach(w => d.io.in(w).valid.poke(false.B))
          left = left.diff(taken)
        }
        assert(n == which.size)
        d.clock.step()
      }
      push(Seq(0, 1), 1) // both at once: both queued, producer 0 first
      assert(d.io.status.peek().litValue == 2)
      assert(!d.io.irq.peek().litToBoolean)
      d.io.maskWrite.valid.poke(true.B); d.io.maskWrite.bits.poke(true.B); d.clock.step(); d.io.maskWrite.valid.poke(false.B)
      assert(d.io.irq.peek().litToBoolean)
      def pop(): BigInt = { d.io.pop.poke(true.B); val v = d.io.head.peek().litValue; d.clock.step(); d.io.pop.poke(false.B); v }
      assert(pop() == (BigInt(1) << 63 | BigInt(0x7fffffff) << 32 | 1))
      assert(pop() == (BigInt(1) << 63 | BigInt(0) << 32 | 1 << 16 | 2)) // info keeps 31 bits
      assert(pop() == 0)
      assert(!d.io.irq.peek().litToBoolean)
      for (k <- 0 until 3) push(Seq(0, 1), 3)
      assert(d.io.status.peek().litValue == (BigInt(2) << 16 | 4))
    }
  }

  test("ReadyQueues: per-hart order, hart clamp, the wake-up priority rule, write-1-to-clear") {
    Sim.simulate("unit_rq", new ReadyQueues(p)) { d =>
      d.io.ready.valid.poke(false.B); d.io.read.poke(false.B); d.io.write.poke(false.B)
      d.reset.poke(true.B); d.clock.step(); d.reset.poke(false.B)
      def ready(row: Int, tx: Boolean, hart: Int, prio: Int, intr: Boolean): Unit = {
        d.io.ready.valid.poke(true.B); d.io.ready.bits.row.poke(row.U); d.io.ready.bits.tx.poke(tx.B)
        d.io.ready.bits.state.poke((BigInt(hart) << 16 | prio << 8 | (if (intr) 0x10 else 0) | 3).U)
        d.clock.step(); d.io.ready.valid.poke(false.B)
      }
      def rd(h: Int, off: Int): BigInt = {
        d.io.hart.poke(h.U); d.io.off.poke(off.U); d.io.read.poke(true.B)
        val v = d.io.rdata.peek().litValue; d.clock.step(); d.io.read.poke(false.B); v
      }
      def wr(h: Int, off: Int, v: BigInt): Unit = {
        d.io.hart.poke(h.U); d.io.off.poke(off.U); d.io.wdata.poke(v.U); d.io.write.poke(true.B); d.clock.step(); d.io.write.poke(false.B)
      }
      import accio.regs.Uncore.Hart
      def irqv(): Int = d.io.irq.zipWithIndex.map { case (b, i) => if (b.peek().litToBoolean) 1 << i else 0 }.sum
      ready(3, false, 1, 0, false)
      ready(4, true, 1, 0, false)
      ready(5, false, 9, 0, false) // no such hart: hart 0
      assert(rd(1, Hart.RQ_COUNT) == 2)
      assert(rd(1, Hart.RQ_PEEK) == (BigInt(1) << 63 | 3))
      assert(rd(1, Hart.RQ_POP) == (BigInt(1) << 63 | 3))
      assert(rd(1, Hart.RQ_POP) == (BigInt(1) << 63 | 1 << 16 | 4))
      assert(rd(1, Hart.RQ_POP) == 0)
      assert(rd(0, Hart.RQ_POP) == (BigInt(1) << 63 | 5))
      assert(irqv() == 0)
      wr(1, Hart.ACCEL, 0x501)
      ready(6, false, 1, 5, true) // equal priority running: no wake-up
      assert(irqv() == 0)
      ready(6, false, 1, 6, true)
      assert(irqv() == 2)
      assert(rd(1, Hart.WAKE_COUNT) == 1)
      wr(1, Hart.WAKE, 1)
      assert(irqv() == 0)
      wr(1, Hart.ACCEL, 0x500) // priority without RUNNING does not block
      ready(7, false, 1, 1, true)
      assert(irqv() == 2)
    }
  }

  /** A minimal AXI memory for the DMA engines: 64 KiB at 0; beats at or above `errFrom` fail. */
  class AxiMem(val errFrom: Long = 1L << 16) {
    val bytes = new Array[Byte](1 << 16)
    def ok(a: BigInt) = a >= 0 && a + 8 <= errFrom && a + 8 <= bytes.length
  }

  test("DmaWriter and DmaReader: bursts split at the ring end and 4 KiB, strobes, error responses") {
    class Pair extends Module {
      val io = IO(new Bundle {
        val w = new Bundle {
          val cmd = Flipped(Decoupled(new RingXfer)); val data = Flipped(Decoupled(UInt(64.W))); val done = Valid(Bool())
        }
        val r = new Bundle { val cmd = Flipped(Decoupled(new RingXfer)); val data = Decoupled(UInt(64.W)); val done = Valid(Bool()) }
        val axi = new AxiMaster
      })
      val wr = Module(new DmaWriter); val rd = Module(new DmaReader)
      wr.io.cmd <> io.w.cmd; wr.io.data <> io.w.data; io.w.done := wr.io.done
      rd.io.cmd <> io.r.cmd; io.r.data <> rd.io.data; io.r.done := rd.io.done
      io.axi.aw <> wr.io.axi.aw; io.axi.w <> wr.io.axi.w; wr.io.axi.b <> io.axi.b
      io.axi.ar <> rd.io.axi.ar; rd.io.axi.r <> io.axi.r
    }
    Sim.simulate("unit_dma", new Pair) { d =>
      val m = new AxiMem(errFrom = 0x9000)
      val bursts = scala.collection.mutable.ArrayBuffer[(BigInt, Int)]()
      val io = d.io
      io.axi.aw.ready.poke(true.B); io.axi.w.ready.poke(true.B); io.axi.ar.ready.poke(true.B)
      io.axi.b.valid.poke(false.B); io.axi.r.valid.poke(false.B)
      io.w.cmd.valid.poke(false.B); io.w.data.valid.poke(false.B); io.r.cmd.valid.poke(false.B); io.r.data.ready.poke(true.B)
      d.reset.poke(true.B); d.clock.step(); d.reset.poke(false.B)
      def write(base: Long, size: Long, ptr: Long, data: Array[Byte]): Boolean = {
        bursts.clear()
        io.w.cmd.valid.poke(true.B); io.w.cmd.bits.base.poke(base.U); io.w.cmd.bits.size.poke(size.U)
        io.w.cmd.bits.ptr.poke(ptr.U); io.w.cmd.bits.bytes.poke(data.length.U)
        d.clock.step(); io.w.cmd.valid.poke(false.B)
        val words = data.grouped(8).map(g => g.zipWithIndex.map { case (b, i) => BigInt(b & 0xff) << (8 * i) }.sum).toSeq
        var wi = 0; var cur: (BigInt, Int, Int) = null; var bPending = -1; var done: Option[Boolean] = None; var n = 0
        while (done.isEmpty) {
          io.w.data.valid.poke((wi < words.length).B); if (wi < words.length) io.w.data.bits.poke(words(wi).U)
          io.axi.b.valid.poke((bPending >= 0).B); io.axi.b.bits.poke((bPending max 0).U)
          val dFire = wi < words.length && io.w.data.ready.peek().litToBoolean
          val bFire = bPending >= 0 && io.axi.b.ready.peek().litToBoolean
          if (io.axi.aw.valid.peek().litToBoolean) {
            cur = (io.axi.aw.bits.addr.peek().litValue, io.axi.aw.bits.len.peek().litValue.toInt + 1, 0)
            bursts += ((cur._1, cur._2))
          }
          if (io.axi.w.valid.peek().litToBoolean) {
            val a = cur._1 + 8 * cur._3; val v = io.axi.w.bits.data.peek().litValue; val s = io.axi.w.bits.strb.peek().litValue.toInt
            val last = io.axi.w.bits.last.peek().litToBoolean
            assert(last == (cur._3 == cur._2 - 1))
            if (m.ok(a)) for (i <- 0 until 8 if ((s >> i) & 1) == 1) m.bytes(a.toInt + i) = ((v >> (8 * i)) & 0xff).toByte
            val err = !m.ok(a)
            cur = (cur._1, cur._2, cur._3 + 1)
            if (last) bPending = if (err) 2 else 0
          }
          if (io.w.done.valid.peek().litToBoolean) done = Some(io.w.done.bits.peek().litToBoolean)
          d.clock.step(); n += 1
          if (dFire) wi += 1
          if (bFire) bPending = -1
          assert(n < 2000)
        }
        done.get
      }
      val rnd = new Random(1)
      val payload = Array.fill(700)(rnd.nextInt(256).toByte)
      // a 256-byte ring at 0x1f80: the write starts 16 bytes before the ring's end and wraps
      assert(!write(0x1f80, 256, 0x10f0, payload.take(37)))
      assert(bursts.head == ((BigInt(0x2070), 2)))
      assert(bursts(1)._1 == 0x1f80)
      assert(m.bytes.slice(0x2070, 0x2080).sameElements(payload.take(16)))
      assert(m.bytes.slice(0x1f80, 0x1f80 + 21).sameElements(payload.slice(16, 37)))
      assert(m.bytes(0x1f80 + 21) == 0) // the strobes stop at the last byte
      // a large ring across a 4 KiB boundary: bursts of at most 16 beats, none across 0x3000
      assert(!write(0x2f00, 1 << 16, 0, payload))
      assert(bursts.forall(b => b._2 <= 16 && (b._1 / 4096) == ((b._1 + 8 * b._2 - 1) / 4096)))
      assert(m.bytes.slice(0x2f00, 0x2f00 + 700).sameElements(payload))
      // an error response is reported
      assert(write(0x8f00, 1 << 16, 0, payload.take(300)))
      // the reader: every word, in order, then the error flag
      def read(base: Long, size: Long, ptr: Long, bytes: Int): (Seq[BigInt], Boolean) = {
        io.r.cmd.valid.poke(true.B); io.r.cmd.bits.base.poke(base.U); io.r.cmd.bits.size.poke(size.U)
        io.r.cmd.bits.ptr.poke(ptr.U); io.r.cmd.bits.bytes.poke(bytes.U)
        d.clock.step(); io.r.cmd.valid.poke(false.B)
        val got = scala.collection.mutable.ArrayBuffer[BigInt]()
        var q = scala.collection.mutable.Queue[(BigInt, Int)](); var beat = 0; var done: Option[Boolean] = None; var n = 0
        while (done.isEmpty) {
          val h = q.headOption
          io.axi.r.valid.poke(h.isDefined.B)
          h.foreach { case (a0, len) =>
            val a = a0 + 8 * beat
            io.axi.r.bits.data.poke((if (m.ok(a)) (0 until 8).map(i => BigInt(m.bytes(a.toInt + i) & 0xff) << (8 * i)).sum else BigInt(0)).U)
            io.axi.r.bits.resp.poke((if (m.ok(a)) 0 else 2).U); io.axi.r.bits.last.poke((beat == len - 1).B)
          }
          val rFire = h.isDefined && io.axi.r.ready.peek().litToBoolean
          if (io.r.data.valid.peek().litToBoolean) got += io.r.data.bits.peek().litValue
          val ar = if (io.axi.ar.valid.peek().litToBoolean) Some((io.axi.ar.bits.addr.peek().litValue, io.axi.ar.bits.len.peek().litValue.toInt + 1)) else None
          if (io.r.done.valid.peek().litToBoolean) done = Some(io.r.done.bits.peek().litToBoolean)
          d.clock.step(); n += 1
          ar.foreach(q.enqueue(_))
          if (rFire) { beat += 1; if (beat == q.head._2) { q.dequeue(); beat = 0 } }
          assert(n < 2000)
        }
        (got.toSeq, done.get)
      }
      val (w1, e1) = read(0x1f80, 256, 0x10f0, 37)
      val expect = (payload.take(37) ++ Array.fill(3)(0.toByte)).grouped(8).map(g => g.zipWithIndex.map { case (b, i) => BigInt(b & 0xff) << (8 * i) }.sum).toSeq
      assert(!e1 && w1.length == 5)
      assert(w1.take(4) == expect.take(4))
      val (w2, e2) = read(0x8ff0, 1 << 16, 0, 64)
      assert(e2 && w2.length == 8)
    }
  }

  test("TxBuilder: headers, checksums and RoCEv2 ICRCs match reference frames; an aborted payload sends nothing") {
    Sim.simulate("unit_txb", new TxBuilder(2)) { d =>
      val io = d.io
      for (c <- io.clients) { c.cmd.valid.poke(false.B); c.data.valid.poke(false.B); c.fin.valid.poke(false.B) }
      io.tx.ready.poke(true.B)
      val mac = BigInt("00c1ac005452", 16)
      io.mac.poke(mac.U)
      d.reset.poke(true.B); d.clock.step(); d.reset.poke(false.B)
      val rnd = new Random(7)
      var now = BigInt(5000) // the time input moves every cycle while a frame goes out
      def send(client: Int, len: Int, ok: Boolean, backpressure: Boolean, id: Int = 0,
        roce: Boolean = false, tos: Int = 0, ttl: Int = 64): (Seq[Byte], Option[Array[Byte]]) = {
        val c = io.clients(client)
        val payload = Seq.fill(len)(rnd.nextInt(256).toByte)
        val sip = 0x0a00020fL; val dip = rnd.nextInt(1 << 30).toLong
        c.cmd.valid.poke(true.B); c.cmd.bits.dmac.poke(BigInt("aa0000005452", 16).U); c.cmd.bits.sip.poke(sip.U)
        c.cmd.bits.sport.poke(5000.U); c.cmd.bits.dip.poke(dip.U); c.cmd.bits.dport.poke(7000.U); c.cmd.bits.len.poke(len.U)
        c.cmd.bits.roce.poke(roce.B); c.cmd.bits.tos.poke(tos.U); c.cmd.bits.ttl.poke(ttl.U)
        while (!c.cmd.ready.peek().litToBoolean) d.clock.step()
        d.clock.step(); c.cmd.valid.poke(false.B)
        // garbage beyond the length must not reach the checksum
        for (w <- (payload ++ Seq.fill(7)(0x5a.toByte)).grouped(8).toSeq.take((len + 7) / 8)) {
          c.data.valid.poke(true.B); c.data.bits.poke(w.zipWithIndex.map { case (b, i) => BigInt(b & 0xff) << (8 * i) }.sum.U)
          while (!c.data.ready.peek().litToBoolean) d.clock.step()
          d.clock.step()
        }
        c.data.valid.poke(false.B)
        c.fin.valid.poke(true.B); c.fin.bits.poke(ok.B)
        while (!c.fin.ready.peek().litToBoolean) d.clock.step()
        d.clock.step(); c.fin.valid.poke(false.B)
        val out = scala.collection.mutable.ArrayBuffer[Byte]()
        var done = false; var n = 0
        var first: Option[BigInt] = None
        while (!done && n < 1000) {
          val stall = backpressure && rnd.nextInt(3) == 0
          io.tx.ready.poke((!stall).B)
          now += 1 + rnd.nextInt(3)
          io.time.poke(now.U)
          if (!stall && io.tx.valid.peek().litToBoolean) {
            if (first.isEmpty) first = Some(now)
            if (io.tx.bits.last.peek().litToBoolean) assert(io.sent.peek().litToBoolean)
            val v = io.tx.bits.data.peek().litValue; val k = Integer.bitCount(io.tx.bits.keep.peek().litValue.toInt)
            out ++= (0 until k).map(i => ((v >> (8 * i)) & 0xff).toByte)
            done = io.tx.bits.last.peek().litToBoolean
          }
          d.clock.step(); n += 1
        }
        io.tx.ready.poke(true.B)
        // the stamp: the time in the cycle the first beat was taken
        first.foreach(t => assert(io.startTime.peek().litValue == t, s"length $len: start time"))
        // a payload shorter than a BTH and an ICRC carries none
        val want = if (roce && len >= 16) Ref.roceFrame(BigInt("aa0000005452", 16), mac, sip, 5000, dip, 7000, id, payload, tos, ttl)
          else Ref.udpFrame(BigInt("aa0000005452", 16), mac, sip, 5000, dip, 7000, id, payload, tos, ttl)
        (want.toSeq, if (done) Some(out.toArray) else None)
      }
      var id = 0
      val plain = Seq(0, 1, 2, 5, 6, 7, 8, 9, 63, 64, 65, 1000, 1471, 1472).map((_, false))
      // RoCEv2: the ICRC at every offset in an 8-byte word, across two words too; 15 carries none
      val roce = Seq(15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 33, 100, 1472).map((_, true))
      // every fourth datagram with a row's TOS and TTL other than the defaults (the RoCEv2 ICRC
      // reads both as ones)
      for (((len, r), i) <- (plain ++ roce).zipWithIndex) {
        val (tos, ttl) = if (i % 4 == 1) (0xb9, 1 + i) else (0, 64)
        val (want0, got) = send(i % 2, len, ok = true, backpressure = i % 3 == 0, id = id, roce = r, tos = tos, ttl = ttl)
        val want = want0.toArray
        assert(got.isDefined, s"no frame for length $len")
        assert(got.get.sameElements(want),
          s"length $len${if (r) " (RoCEv2)" else ""}: got ${Vectors.hexOf(got.get)}\nwant ${Vectors.hexOf(want)}")
        id += 1
      }
      val (_, aborted) = send(0, 100, ok = false, backpressure = false)
      assert(aborted.isEmpty)
    }
  }
}
