package accio

import chisel3._
import chisel3.simulator.PeekPokeAPI._
import org.scalatest.funsuite.AnyFunSuite
import accio.regs.{Contract, Uncore}
import accio.regs.Uncore.Row
import scala.util.Random

/** Whole-uncore tests beyond the vectors: the reorder unit under randomized store orders,
  * malformed and random frames, liveness with DMA error responses, and TX_TSTAMP with a running
  * clock, read while the engine sends. One simulation. */
class UncoreSpec extends AnyFunSuite {
  val p = UncoreParams(rows = 8, harts = 2)
  val station = BigInt("00c1ac005452", 16) // 52:54:00:ac:c1:00
  val peerMac = BigInt("aa0000005452", 16)
  val lip = 0x0a00020fL
  val rip = 0x0a000202L
  def rowOff(r: Int, reg: Int): BigInt = Row.Base + r * Row.Stride + reg

  def setupRow(b: Bench, r: Int, rxBase: Long, txBase: Long, remote: (Long, Int) = (0L, 0)): Unit = {
    b.write(Uncore.CTRL, 1)
    b.write(rowOff(r, Row.LOCAL), (BigInt(17) << 48) | (BigInt(5000) << 32) | lip)
    b.write(rowOff(r, Row.REMOTE), (BigInt(remote._2) << 32) | remote._1)
    b.write(rowOff(r, Row.OWNER_ASID), 7)
    b.write(rowOff(r, Row.DST_MAC), peerMac)
    b.write(rowOff(r, Row.RX_BASE), rxBase)
    b.write(rowOff(r, Row.RX_SIZE), 4096)
    b.write(rowOff(r, Row.TX_BASE), txBase)
    b.write(rowOff(r, Row.TX_SIZE), 4096)
    b.write(rowOff(r, Row.STATE), 3)
  }
  def popEvent(b: Bench): BigInt = b.read(Uncore.EVQ_POP)

  test("the uncore: randomized MMIO-TX reorder, malformed and random frames, liveness under DMA errors") {
    Sim.simulate("uncore_r8_h2", new AccioUncore(p)) { dut =>
      val b = new Bench(dut)
      b.reset()
      dut.io.mac.poke(station.U)
      val rnd = new Random(2026)

      // ---- MMIO transmit window: random stores, shuffled within blocks, several window wraps ----
      setupRow(b, 2, 0x80010000L, 0x80020000L, remote = (rip, 7000))
      val win = rowOff(2, Row.MMIO_TX)
      var pos = 0L
      var id = 0
      val expected = scala.collection.mutable.Queue[Array[Byte]]()
      for (round <- 0 until 8) {
        val msgs = (0 until 6).map { _ =>
          val len = if (rnd.nextInt(8) == 0) rnd.nextInt(Contract.MAX_PAYLOAD + 1) else rnd.nextInt(120)
          val port = if (rnd.nextBoolean()) 0 else 9000 + rnd.nextInt(100)
          val payload = Array.fill(len)(rnd.nextInt(256).toByte)
          val msg = Ref.txRecord(payload.toSeq, dport = port)
          expected.enqueue(Ref.udpFrame(peerMac, station, lip, 5000, rip, if (port == 0) 7000 else port, 0, payload.toSeq))
          msg
        }
        // split into naturally aligned stores of 1..8 bytes
        val stores = scala.collection.mutable.ArrayBuffer[(Long, Int, BigInt)]()
        for (m <- msgs) {
          var i = 0
          while (i < m.length) {
            val a = pos + i
            val sizes = Seq(8, 4, 2, 1).filter(s => a % s == 0 && i + s <= m.length)
            val s = sizes(rnd.nextInt(sizes.length))
            stores += ((a, s, (0 until s).map(k => BigInt(m(i + k) & 0xff) << (8 * k)).sum))
            i += s
          }
          pos += m.length
        }
        val shuffled = stores.grouped(12).flatMap(g => rnd.shuffle(g.toSeq))
        for ((a, s, v) <- shuffled) b.store(win + (a % Consts.WinBytes), s, v, Some(7))
      }
      assert(b.read(rowOff(2, Row.MMIO_TX_ERRORS)) == 0)
      assert(b.read(rowOff(2, Row.MMIO_TX_NEXT)) == pos)
      assert(pos > 3 * Consts.WinBytes, "the test wraps the window several times")
      assert(b.txFrames.size == expected.size, s"${b.txFrames.size} frames for ${expected.size} messages")
      while (expected.nonEmpty) {
        val want = expected.dequeue()
        val ip = want.slice(14, 34); ip(4) = (id >> 8).toByte; ip(5) = id.toByte; ip(10) = 0; ip(11) = 0
        val c = ~Ref.fold(Ref.sum(ip.toSeq)) & 0xffff; ip(10) = (c >> 8).toByte; ip(11) = c.toByte
        System.arraycopy(ip, 0, want, 14, 20)
        val got = b.txFrames.dequeue()
        assert(got.sameElements(want), s"message $id differs")
        id += 1
      }
      // address reuse: a byte written twice before its message was released is refused
      val base = pos % Consts.WinBytes
      b.store(win + base, 2, 5, Some(7)) // length 5: message of 16 bytes
      b.store(win + base + 8, 1, 0x41, Some(7))
      b.store(win + base + 8, 1, 0x42, Some(7)) // reuse
      assert(b.read(rowOff(2, Row.MMIO_TX_ERRORS)) == 1)
      while (popEvent(b) != 0) {} // drain older events
      b.store(win + base + 8, 1, 0x43, Some(7))
      assert(popEvent(b) == (BigInt(1) << 63 | (base + 8) << 32 | 2 << 16 | Contract.EV_MMIO_TX_ERROR))
      for (k <- Seq(2, 4, 6)) b.store(win + base + k, 2, 0, Some(7))
      for (k <- 9 until 16) b.store(win + base + k, 1, 0x30 + k, Some(7))
      assert(b.txFrames.size == 1)
      val f = b.txFrames.dequeue()
      assert(f.slice(42, 47).sameElements(Array[Byte](0x41, 0x39, 0x3a, 0x3b, 0x3c)), "the first value stays")
      // a store from another process is refused and never reaches the window
      b.store(win + base + 16, 8, 0, Some(9))
      assert(b.read(rowOff(2, Row.PROT_FAULTS)) == 1)

      // ---- receive: valid, malformed and random frames ----
      b.reset()
      dut.io.mac.poke(station.U)
      setupRow(b, 1, 0x80010000L, 0x80020000L)
      b.write(rowOff(1, Row.OWNER_ASID), 7)
      var consumed = 0
      var delivered = 0
      def keepRingEmpty(): Unit = b.write(rowOff(1, Row.RX_RPTR), b.read(rowOff(1, Row.RX_WPTR)))
      for (i <- 0 until 80) {
        val payload = Array.fill(rnd.nextInt(300))(rnd.nextInt(256).toByte)
        val good = Ref.rxFrame(peerMac, station, rip, 6000 + i, lip, 5000, payload.toSeq)
        val kind = rnd.nextInt(6)
        val frame = kind match {
          case 0 => good
          case 1 => good.take(rnd.nextInt(good.length)) // truncated anywhere
          case 2 => val g = good.clone(); val k = 14 + rnd.nextInt(28); g(k) = (g(k) ^ (1 << rnd.nextInt(8))).toByte; g
          case 3 => good ++ Array.fill(rnd.nextInt(20))(0.toByte) // Ethernet padding
          case 4 => Array.fill(1 + rnd.nextInt(120))(rnd.nextInt(256).toByte)
          case _ => val g = good.clone(); g(12) = 0x86.toByte; g(13) = 0xdd.toByte; g // not IPv4
        }
        if (frame.nonEmpty) {
          val wptr0 = b.read(rowOff(1, Row.RX_WPTR))
          val took = b.rx(frame) // passed frames are checked on the normal path
          if (took) consumed += 1
          val wptr1 = b.read(rowOff(1, Row.RX_WPTR))
          if (wptr1 != wptr0) {
            delivered += 1
            val off = (wptr0 % 4096).toLong
            val ring = b.mem.read(BigInt(0x80010000L), 4096)
            val hdr = Contract.RX_HDR
            val rec = Array.tabulate(hdr + payload.length)(k => ring(((off + k) % 4096).toInt)) // records wrap
            if (kind == 0 || kind == 3) {
              assert(rec.slice(hdr, hdr + payload.length).sameElements(payload), s"frame $i: payload differs")
              assert(Ref.recField(rec.toSeq, Contract.RX_REC_LEN, Contract.RX_REC_LEN_SIZE) == payload.length)
              assert(Ref.recField(rec.toSeq, Contract.RX_REC_SPORT, Contract.RX_REC_SPORT_SIZE) == 6000 + i)
            }
          }
          if (kind == 0 || kind == 3) assert(took && wptr1 != wptr0, s"frame $i (kind $kind) was not delivered")
          if (kind == 1 && frame.length >= 34) assert(took && wptr1 == wptr0, s"truncated frame $i was not dropped as malformed")
          if (kind == 5) assert(!took)
          keepRingEmpty()
        }
      }
      assert(b.read(Uncore.RX_DELIVERED) == delivered)
      assert(b.read(Uncore.RX_MALFORMED) == consumed - delivered)
      // a frame longer than the frame buffer does not hang the engine
      val jumbo = Ref.rxFrame(peerMac, station, rip, 6000, lip, 5000, Seq.fill(2500)(1.toByte))
      b.rx(jumbo)
      val after = Ref.rxFrame(peerMac, station, rip, 6001, lip, 5000, Seq.fill(10)(2.toByte))
      assert(b.rx(after))

      // ---- liveness and error handling under DMA error responses ----
      keepRingEmpty()
      while (popEvent(b) != 0) {}
      val drops0 = b.read(rowOff(1, Row.RX_DROPS))
      b.axiErrorAt = a => a >= BigInt(0x80010000L) && a < BigInt(0x80011000L)
      assert(b.rx(Ref.rxFrame(peerMac, station, rip, 6000, lip, 5000, Seq.fill(100)(3.toByte))))
      assert(b.read(rowOff(1, Row.RX_DROPS)) == drops0 + 1)
      assert(popEvent(b) == (BigInt(1) << 63 | BigInt(100) << 32 | 1 << 16 | Contract.EV_RX_RING_FULL))
      b.axiErrorAt = _ => false
      assert(b.rx(Ref.rxFrame(peerMac, station, rip, 6000, lip, 5000, Seq.fill(100)(4.toByte))))
      assert(b.read(rowOff(1, Row.RX_DROPS)) == drops0 + 1)
      // TX: the payload read fails: nothing is sent, the record stays, the engine reports it
      val rec = Ref.txRecord(Seq.fill(50)(9.toByte), dport = 7000, dip = 0x0a000202L)
      b.mem.write(BigInt(0x80020000L), rec)
      b.write(rowOff(1, Row.TX_WPTR), rec.length, Some(7))
      b.axiErrorAt = a => a >= BigInt(0x80020008L) && a < BigInt(0x80020040L)
      b.write(rowOff(1, Row.DOORBELL), 1, Some(7))
      assert(b.txFrames.isEmpty)
      assert(b.read(rowOff(1, Row.TX_RPTR)) == 0)
      assert(b.read(rowOff(1, Row.TX_ERRORS)) == 1)
      assert(popEvent(b) == (BigInt(1) << 63 | 1 << 16 | Contract.EV_TX_RING_ERROR))
      b.axiErrorAt = _ => false
      b.write(rowOff(1, Row.DOORBELL), 1, Some(7))
      assert(b.txFrames.size == 1)
      assert(b.txFrames.dequeue().sameElements(
        Ref.udpFrame(peerMac, station, lip, 5000, 0x0a000202L, 7000, 0, Seq.fill(50)(9.toByte))))
      assert(b.read(rowOff(1, Row.TX_RPTR)) == 64)

      // ---- TX_TSTAMP: the time of each frame's first beat on the MAC side ----
      b.reset()
      dut.io.mac.poke(station.U)
      setupRow(b, 3, 0x80010000L, 0x80030000L, remote = (rip, 7000))
      assert(b.read(rowOff(3, Row.TX_TSTAMP), Some(7)) == 0)
      b.clockBase = Some(BigInt(1) << 40) // the clock moves every cycle
      b.txReadyAt = c => c % 7 >= 2 // and the MAC side stalls now and then
      b.txFirstBeat.clear(); b.txFrames.clear()
      val sizes = (0 until 6).map(i => 10 + 150 * i)
      val ring = sizes.flatMap { n =>
        Array[Byte](n.toByte, (n >> 8).toByte, 0, 0, 0, 0, 0, 0) ++ Array.fill(n)(rnd.nextInt(256).toByte) ++
          Array.fill((8 - n % 8) % 8)(0.toByte)
      }.toArray
      b.mem.write(BigInt(0x80030000L), ring)
      b.write(rowOff(3, Row.TX_WPTR), ring.length, Some(7))
      b.store(rowOff(3, Row.DOORBELL), 8, 1, Some(7), wait = false)
      // while the engine sends, the owner reads TX_PKTS, TX_TSTAMP, TX_PKTS: equal counts must give
      // the stamp of that datagram
      val caught = scala.collection.mutable.Set[BigInt]()
      var last = BigInt(0)
      var tries = 0
      while (last < sizes.length) {
        val n1 = b.read(rowOff(3, Row.TX_PKTS), Some(7), wait = false)
        val t = b.read(rowOff(3, Row.TX_TSTAMP), Some(7), wait = false)
        val n2 = b.read(rowOff(3, Row.TX_PKTS), Some(7), wait = false)
        if (n1 == n2 && n1 > 0) {
          assert(t == b.timeAt(b.txFirstBeat((n1 - 1).toInt)), s"datagram $n1: stamp $t")
          caught += n1
        }
        if (n1 == n2 && n1 == 0) assert(t == 0)
        last = n2
        tries += 1
        assert(tries < 5000, "liveness: the engine did not send the ring")
      }
      b.idle()
      assert(b.txFrames.size == sizes.length)
      assert(caught.size >= 3, s"the reader caught only datagrams $caught in flight")
      assert(b.txFirstBeat.distinct.size == sizes.length)
      // the MMIO window: the same stamp, the last store releases each message
      val win3 = rowOff(3, Row.MMIO_TX)
      var at = 0L
      for (k <- 0 until 3) {
        val n = 40 + 8 * k
        val msg = Array[Byte](n.toByte, 0, 0, 0, 0, 0, 0, 0) ++ Array.fill(n)(rnd.nextInt(256).toByte)
        for (o <- (0 until msg.length by 8).reverse)
          b.store(win3 + at + o, 8, (0 until 8).map(i => BigInt(msg(o + i) & 0xff) << (8 * i)).sum, Some(7))
        at += msg.length
        assert(b.read(rowOff(3, Row.TX_PKTS), Some(7)) == sizes.length + k + 1)
        assert(b.read(rowOff(3, Row.TX_TSTAMP), Some(7)) == b.timeAt(b.txFirstBeat.last))
      }
      assert(b.txFrames.size == sizes.length + 3)
      // the kernel clears it with the other counters
      b.write(rowOff(3, Row.TX_TSTAMP), 0)
      assert(b.read(rowOff(3, Row.TX_TSTAMP), Some(7)) == 0)
      b.clockBase = None
      b.txReadyAt = _ => true
    }
  }
}
