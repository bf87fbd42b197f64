package accio

import chisel3._
import chisel3.simulator.PeekPokeAPI._
import org.scalatest.funsuite.AnyFunSuite
import accio.regs.{Nic, Uncore}
import accio.regs.Uncore.Row
import scala.collection.mutable
import scala.util.Random

/** Bench around the uncore with its NIC: the AXI memory model on the shared DMA port, the wire
  * on both sides (frames offered and frames sent, with the cycles of their beats), a clock
  * that moves every cycle (`time` = `timeBase` + cycle). */
class NicBench(val dut: AccioNicUncore, val mem: SysMem = new SysMem) extends MmioAccess {
  import Bench.{le, bytesOf}
  def mmioPort: AxiLiteSlave = dut.io.mmio
  var cycle: Long = 0
  val timeBase = BigInt(5000000)
  val axi = new AxiMem(dut.io.dma, mem)
  val wire = mutable.Queue[Array[Byte]]()
  val wireStart = mutable.ArrayBuffer[Long]() // the cycle of each sent frame's first beat
  val rxLast = mutable.ArrayBuffer[Long]() // the cycle of each offered frame's last beat
  private val rxBeats = mutable.Queue[(BigInt, Int, Boolean)]()
  private val cur = mutable.ArrayBuffer[Byte]()

  def reset(mac: BigInt): Unit = {
    val io = dut.io
    axi.init()
    axi.clear()
    io.tx.ready.poke(true.B)
    io.rx.valid.poke(false.B)
    Seq(io.mmio.aw.valid, io.mmio.w.valid, io.mmio.ar.valid, io.mmio.b.ready, io.mmio.r.ready,
      io.link.valid).foreach(_.poke(false.B))
    io.link.bits.poke(false.B)
    io.mac.poke(mac.U)
    io.time.poke(timeBase.U)
    dut.reset.poke(true.B)
    dut.clock.step(2)
    dut.reset.poke(false.B)
    rxBeats.clear(); cur.clear(); wire.clear(); wireStart.clear(); rxLast.clear()
    idle()
  }

  def step(): Unit = {
    val io = dut.io
    io.time.poke((timeBase + cycle).U)
    axi.drive()
    val rxNow = rxBeats.headOption
    io.rx.valid.poke(rxNow.isDefined.B)
    rxNow.foreach { case (d, k, l) =>
      io.rx.bits.data.poke(d.U)
      io.rx.bits.keep.poke(((1 << k) - 1).U)
      io.rx.bits.last.poke(l.B)
    }
    axi.sample(true)
    val rxFire = rxNow.isDefined && io.rx.ready.peek().litToBoolean
    val tx = if (io.tx.valid.peek().litToBoolean)
      Some((io.tx.bits.data.peek().litValue, io.tx.bits.keep.peek().litValue.toInt, io.tx.bits.last.peek().litToBoolean))
    else None
    dut.clock.step()
    cycle += 1
    axi.commit()
    if (rxFire && rxBeats.dequeue()._3) rxLast += cycle - 1
    tx.foreach { case (d, keep, last) =>
      if (cur.isEmpty) wireStart += cycle - 1
      cur ++= bytesOf(d, Integer.bitCount(keep))
      if (last) { wire.enqueue(cur.toArray); cur.clear() }
    }
  }

  def idle(limit: Int): Unit = {
    var n = 0
    while (dut.io.busy.peek().litToBoolean || axi.pending || rxBeats.nonEmpty) {
      step(); n += 1
      if (n > limit) throw new AssertionError(s"liveness: still busy after $limit cycles")
    }
  }

  /** Offer a frame on the wire and wait until everything it caused is done. */
  def offer(frame: Array[Byte]): Unit = {
    val beats = frame.grouped(8).toSeq
    for ((b, i) <- beats.zipWithIndex) rxBeats.enqueue((le(b), b.length, i == beats.length - 1))
    idle()
  }

  def link(up: Boolean): Unit = {
    dut.io.link.valid.poke(true.B)
    dut.io.link.bits.poke(up.B)
    step()
    dut.io.link.valid.poke(false.B)
    idle()
  }

  val NicSel = BigInt(1) << 31
  def nicWrite(off: Int, v: BigInt): Unit = write(NicSel | off, v)
  def nicRead(off: Int): BigInt = read(NicSel | off)
  def counter(off: Int): BigInt = nicRead(off)
  def send(addr: BigInt, len: Int, csum: Boolean = false): Unit =
    nicWrite(Nic.SEND_REQ, addr | (BigInt(len) << 48) | (if (csum) BigInt(1) << 63 else BigInt(0)))
}

/** The NIC with the uncore on one bus and one wire (one simulation): transmit from any byte
  * address with padding, time stamps and checksum offload; receive into buffers at any byte
  * address, without touching a byte beside them; the MAC's drops; loopback; the link; the
  * interrupt; queue reset; the engine and the NIC side by side. */
class NicSpec extends AnyFunSuite {
  val station = BigInt("020000000002", 16) // 02:00:00:00:00:02, byte 0 in bits 7:0
  val peer = BigInt("aa0000005452", 16)
  val lip = 0x0a00020fL
  val rip = 0x0a000202L
  val Valid = BigInt(1) << 63
  def lenOf(comp: BigInt): Int = (comp & 0xffff).toInt

  /** An IPv4 TCP segment (20-byte header, no options) with both checksums zero. */
  def tcpFrame(payload: Seq[Byte]): Array[Byte] = {
    val tot = 40 + payload.length
    val ip = Seq[Byte](0x45, 0) ++ Ref.be16(tot) ++ Seq[Byte](0, 1, 0x40, 0, 64, 6, 0, 0) ++ Ref.be32(lip) ++ Ref.be32(rip)
    val tcp = Ref.be16(5000) ++ Ref.be16(80) ++ Ref.be32(1) ++ Ref.be32(0) ++ Seq[Byte](0x50, 0x10) ++ Ref.be16(512) ++
      Seq[Byte](0, 0, 0, 0) ++ payload
    (Ref.macBytes(peer) ++ Ref.macBytes(station) ++ Seq[Byte](8, 0) ++ ip ++ tcp).toArray
  }
  /** Whether a frame's IPv4 header and TCP/UDP checksums are right (a UDP checksum 0: none). */
  def csumOk(f: Array[Byte]): Boolean = {
    val ihl = (f(14) & 15) * 4
    val tot = ((f(16) & 0xff) << 8) | (f(17) & 0xff)
    val proto = f(23)
    val seg = f.slice(14 + ihl, 14 + tot).toSeq
    val l4len = if (proto == 17) ((seg(4) & 0xff) << 8) | (seg(5) & 0xff) else seg.length
    val pseudo = f.slice(26, 34).toSeq ++ Seq[Byte](0, proto) ++ Ref.be16(l4len)
    val ipOk = Ref.fold(Ref.sum(f.slice(14, 14 + ihl).toSeq)) == 0xffff
    val noUdp = proto == 17 && seg(6) == 0 && seg(7) == 0
    ipOk && (noUdp || Ref.fold(Ref.sum(pseudo) + Ref.sum(seg.take(l4len))) == 0xffff)
  }

  test("the NIC: transmit, receive, drops, checksum offload, loopback, link, interrupt, queue reset") {
    Sim.simulate("nic_uncore_r8_h1", new AccioNicUncore(UncoreParams(rows = 8, harts = 1))) { dut =>
      val b = new NicBench(dut)
      val mem = b.mem
      val rnd = new Random(35)
      b.reset(station)
      assert(b.nicRead(Nic.ID) == Nic.ID_RESET)
      assert(b.nicRead(Nic.MACADDR) == station, "MACADDR comes out of reset with the SoC's address")
      assert(b.nicRead(Nic.STATUS) == 1, "the link is up")
      assert(b.nicRead(Nic.QUEUE_DEPTH) == 64 && b.nicRead(Nic.RX_BUF_LEN) == 2048)

      // ---- transmit: every byte offset, short and long frames ----
      val lens = Seq(14, 42, 59, 60, 61, 64, 100, 333, 1000, 1518)
      val sent = mutable.ArrayBuffer[Array[Byte]]()
      for ((len, k) <- lens.zipWithIndex) {
        val f = Array.fill(len)(rnd.nextInt(256).toByte)
        val addr = BigInt(0x80001000L) + 0x800 * k + (k % 8)
        mem.write(addr, f)
        sent += f
        b.send(addr, len) // held: the NIC is not enabled yet
      }
      b.idle()
      assert(b.wire.isEmpty, "requests wait while CTRL.ENABLE is clear")
      assert(((b.nicRead(Nic.COUNTS) >> 0) & 0xffff) == 64 - lens.length, "SEND_REQ_FREE counts the held requests")
      b.nicWrite(Nic.CTRL, 1)
      b.idle()
      assert(b.wire.length == lens.length)
      for ((f, k) <- sent.zipWithIndex) {
        val got = b.wire.dequeue()
        assert(got.sameElements(f ++ Array.fill((60 - f.length) max 0)(0.toByte)), s"frame $k (${f.length} bytes) on the wire")
        val c = b.nicRead(Nic.SEND_COMP)
        assert(c == (Valid | f.length), f"send completion $k: 0x$c%x")
        assert(b.nicRead(Nic.SEND_TSTAMP) == b.timeBase + b.wireStart(k), s"SEND_TSTAMP $k is the first beat's time")
      }
      assert(b.nicRead(Nic.SEND_COMP) == 0, "an empty completion queue reads 0")
      assert(b.counter(Nic.TX_FRAMES) == lens.length)
      assert(b.counter(Nic.TX_BYTES) == lens.map(_ max 60).sum)

      // bad lengths complete with ERROR and send nothing
      for (len <- Seq(13, 1519)) {
        b.send(0x80001000L, len)
        b.idle()
        assert(b.nicRead(Nic.SEND_COMP) == (Valid | (BigInt(1) << 62) | len))
      }
      assert(b.wire.isEmpty && b.counter(Nic.TX_ERRORS) == 2)

      // ---- receive: posted buffers at every byte offset, nothing beside them touched ----
      val guard = 0x5a.toByte
      java.util.Arrays.fill(mem.bytes, 0x10000, 0x30000, guard)
      val rxLens = Seq(60, 61, 64, 71, 128, 600, 1514, 1518)
      val bufs = rxLens.indices.map(k => BigInt(0x80010000L) + 0x1000 * k + 8 + (k * 3) % 8)
      bufs.foreach(a => b.nicWrite(Nic.RECV_REQ, a))
      val frames = rxLens.zipWithIndex.map { case (len, k) =>
        val dst = if (k == 3) BigInt("ffffffffffff", 16) else station
        (Ref.macBytes(dst) ++ Ref.macBytes(peer) ++ Seq[Byte](0x88.toByte, 0xb5.toByte) ++
          Seq.fill(len - 14)(rnd.nextInt(256).toByte)).toArray
      }
      frames.foreach(b.offer)
      for ((f, k) <- frames.zipWithIndex) {
        val c = b.nicRead(Nic.RECV_COMP)
        assert(c == (Valid | f.length), f"receive completion $k: 0x$c%x")
        assert(b.nicRead(Nic.RECV_TSTAMP) == b.timeBase + b.rxLast(k), s"RECV_TSTAMP $k is the last beat's time")
        assert(mem.read(bufs(k), f.length).sameElements(f), s"frame $k in its buffer")
        assert(mem.read(bufs(k) - 8, 8).forall(_ == guard), s"the bytes before buffer $k")
        assert(mem.read(bufs(k) + f.length, 8).forall(_ == guard), s"the bytes after buffer $k")
      }
      assert(b.counter(Nic.RX_FRAMES) == rxLens.length && b.counter(Nic.RX_BYTES) == rxLens.sum)

      // ---- the MAC's drops, each counted ----
      b.nicWrite(Nic.RECV_REQ, 0x80030000L)
      def plain(dst: BigInt, len: Int): Array[Byte] =
        (Ref.macBytes(dst) ++ Ref.macBytes(peer) ++ Seq[Byte](0x88.toByte, 0xb5.toByte) ++ Seq.fill(len - 14)(7.toByte)).toArray
      b.offer(plain(station, 59))
      b.offer(plain(station, 1519))
      b.offer(plain(peer, 100))
      b.nicWrite(Nic.RX_BUF_LEN, 100)
      b.offer(plain(station, 101))
      b.nicWrite(Nic.RX_BUF_LEN, 10) // out of range: ignored
      assert(b.nicRead(Nic.RX_BUF_LEN) == 100)
      b.nicWrite(Nic.RX_BUF_LEN, 2048)
      b.nicWrite(Nic.CTRL, 0)
      b.offer(plain(station, 100))
      assert(b.counter(Nic.RX_DROP_RUNT) == 1 && b.counter(Nic.RX_DROP_OVERSIZE) == 2 &&
        b.counter(Nic.RX_DROP_FILTER) == 1 && b.counter(Nic.RX_DROP_DISABLED) == 1)
      assert(b.nicRead(Nic.RECV_COMP) == 0, "no dropped frame completed")
      b.nicWrite(Nic.CTRL, 1 | 4) // promiscuous
      b.offer(plain(peer, 100))
      assert(lenOf(b.nicRead(Nic.RECV_COMP)) == 100, "promiscuous takes another station's frame")
      b.offer(plain(station, 100))
      assert(b.counter(Nic.RX_DROP_NOBUF) == 1 && b.nicRead(Nic.RECV_COMP) == 0, "no buffer: dropped")
      b.nicWrite(Nic.CTRL, 1)
      for (_ <- 0 to 64) b.nicWrite(Nic.RECV_REQ, 0x80030000L)
      assert(b.counter(Nic.RECV_REQ_OVERFLOW) == 1)
      assert(((b.nicRead(Nic.COUNTS) >> 16) & 0xffff) == 0, "RECV_REQ_FREE")

      // ---- queue reset: every request and completion gone, the counts back to full ----
      b.nicWrite(Nic.CTRL, 0)
      b.send(0x80001000L, 64)
      b.nicWrite(Nic.CTRL, 8)
      assert(b.nicRead(Nic.COUNTS) == ((BigInt(64) << 16) | 64), "QRESET empties the queues")
      b.nicWrite(Nic.CTRL, 1)
      b.idle()
      assert(b.wire.isEmpty, "a reset request is not sent")
      b.offer(plain(station, 100))
      assert(b.counter(Nic.RX_DROP_NOBUF) == 2, "a reset buffer is not used")

      // ---- checksum offload ----
      val udp = Ref.udpFrame(peer, station, lip, 5000, rip, 7000, 3, Seq.fill(77)(rnd.nextInt(256).toByte))
      val udpZero = udp.clone(); Seq(24, 25, 40, 41).foreach(udpZero(_) = 0)
      val tcp = tcpFrame(Seq.fill(300)(rnd.nextInt(256).toByte))
      for ((f, k) <- Seq(udpZero, tcp).zipWithIndex) {
        mem.write(0x80005000L + k, f)
        b.send(0x80005000L + k, f.length, csum = true)
        b.idle()
        val got = b.wire.dequeue()
        assert(csumOk(got), s"frame $k leaves with both checksums filled in")
        assert(got.patch(24, Seq[Byte](0, 0), 2).patch(if (k == 0) 40 else 50, Seq[Byte](0, 0), 2)
          .sameElements(f), s"frame $k is otherwise unchanged")
        b.nicRead(Nic.SEND_COMP)
      }
      assert(b.counter(Nic.TX_CSUM) == 2)
      b.nicWrite(Nic.CTRL, 1 | 16) // RXCSUM
      val good = Ref.rxFrame(peer, station, rip, 7000, lip, 5000, Seq.fill(200)(rnd.nextInt(256).toByte))
      val badPayload = good.clone(); badPayload(100) = (badPayload(100) ^ 1).toByte
      val noSum = good.clone(); noSum(40) = 0; noSum(41) = 0; noSum(100) = 0
      val tcpGood = tcpFrame(Seq.fill(40)(3.toByte))
      mem.write(0x80006000L, tcpGood)
      b.send(0x80006000L, tcpGood.length, csum = true)
      b.idle()
      val tcpOnWire = b.wire.dequeue()
      b.nicRead(Nic.SEND_COMP)
      val tcpSwapped = Ref.macBytes(station).toArray ++ tcpOnWire.drop(6).take(6) ++ tcpOnWire.drop(12)
      val arp = plain(station, 60)
      for (f <- Seq(good, badPayload, noSum, tcpSwapped, arp)) {
        b.nicWrite(Nic.RECV_REQ, 0x80031000L)
        b.offer(f)
      }
      val comps = Iterator.continually(b.nicRead(Nic.RECV_COMP)).takeWhile(_ != 0).toSeq
      val ok = BigInt(1) << 62
      assert(comps == Seq(Valid | ok | good.length, Valid | ok | noSum.length, Valid | ok | tcpSwapped.length,
        Valid | arp.length), "checked frames complete with CSUM_OK, a frame the offload does not handle without")
      assert(b.counter(Nic.RX_DROP_CSUM) == 1 && b.counter(Nic.RX_CSUM_OK) == 3)
      b.nicWrite(Nic.CTRL, 8) // the unused buffer back
      b.nicWrite(Nic.CTRL, 1)

      // ---- loopback: sent frames come back in, none leaves ----
      b.nicWrite(Nic.CTRL, 1 | 2)
      b.nicWrite(Nic.RECV_REQ, 0x80032003L)
      val lf = plain(station, 90)
      mem.write(0x80007000L, lf)
      b.send(0x80007000L, lf.length)
      b.idle()
      assert(b.wire.isEmpty, "loopback: nothing on the wire")
      assert(lenOf(b.nicRead(Nic.RECV_COMP)) == 90 && mem.read(0x80032003L, 90).sameElements(lf))
      assert(b.nicRead(Nic.SEND_COMP) == (Valid | 90))
      b.nicWrite(Nic.CTRL, 1)

      // ---- link and interrupt ----
      b.nicWrite(Nic.INTR_MASK, 7)
      assert(!dut.io.irqNic.peek().litToBoolean)
      b.link(false)
      assert(b.nicRead(Nic.STATUS) == 0 && b.nicRead(Nic.INTR_STATUS) == 4 && dut.io.irqNic.peek().litToBoolean)
      b.nicWrite(Nic.INTR_STATUS, 4)
      assert(b.nicRead(Nic.INTR_STATUS) == 0 && !dut.io.irqNic.peek().litToBoolean, "LINK is write-1-to-clear")
      b.send(0x80007000L, 90)
      b.idle()
      assert(b.wire.isEmpty && b.counter(Nic.TX_DROP_LINKDOWN) == 1, "link down: completed unsent")
      assert(b.nicRead(Nic.INTR_STATUS) == 1 && dut.io.irqNic.peek().litToBoolean, "TX follows its queue")
      assert(b.nicRead(Nic.SEND_COMP) == (Valid | 90))
      assert(!dut.io.irqNic.peek().litToBoolean)
      b.link(true)
      b.nicWrite(Nic.INTR_STATUS, 4)
      b.nicWrite(Nic.INTR_MASK, 2)
      b.nicWrite(Nic.RECV_REQ, 0x80033000L)
      b.offer(plain(station, 64))
      assert(dut.io.irqNic.peek().litToBoolean, "RX interrupt while a receive completion waits")
      b.nicRead(Nic.RECV_COMP)
      assert(!dut.io.irqNic.peek().litToBoolean)
      b.nicWrite(Nic.INTR_MASK, 0)

      // ---- the engine beside the NIC: a row's datagram to its ring, the rest to the NIC ----
      def row(reg: Int): BigInt = Row.Base + 3 * Row.Stride + reg
      b.write(Uncore.CTRL, 1)
      b.write(row(Row.LOCAL), (BigInt(17) << 48) | (BigInt(5000) << 32) | lip)
      b.write(row(Row.REMOTE), (BigInt(7000) << 32) | rip)
      b.write(row(Row.OWNER_ASID), 7)
      b.write(row(Row.DST_MAC), peer)
      b.write(row(Row.RX_BASE), 0x80040000L)
      b.write(row(Row.RX_SIZE), 4096)
      b.write(row(Row.TX_BASE), 0x80041000L)
      b.write(row(Row.TX_SIZE), 4096)
      b.write(row(Row.STATE), 3)
      val rxBefore = b.counter(Nic.RX_FRAMES)
      b.nicWrite(Nic.RECV_REQ, 0x80034000L)
      b.offer(good)
      assert(b.read(row(Row.RX_WPTR)) > 0, "the row took its datagram")
      val other = Ref.rxFrame(peer, station, rip, 7000, lip, 6000, Seq.fill(30)(1.toByte))
      b.offer(other)
      assert(b.counter(Nic.RX_FRAMES) == rxBefore + 1 && mem.read(0x80034000L, other.length).sameElements(other),
        "another port's datagram reaches the NIC's buffer")
      val comp = b.nicRead(Nic.RECV_COMP)
      assert(lenOf(comp) == other.length && b.nicRead(Nic.RECV_TSTAMP) == b.timeBase + b.rxLast.last,
        "the arrival time follows the frame through the engine")
      // the engine's frame (46 bytes: padded by the MAC) and the NIC's share the wire
      val txRec = Array[Byte](4, 0, 0, 0, 0, 0, 0, 0) ++ Array.fill(8)(9.toByte)
      mem.write(0x80041000L, txRec)
      mem.write(0x80008000L, lf)
      b.write(row(Row.TX_WPTR), 16)
      b.send(0x80008000L, lf.length)
      b.write(row(Row.DOORBELL), 1)
      b.idle()
      assert(b.wire.length == 2 && b.wire.exists(_.sameElements(lf)) &&
        b.wire.exists(f => f.length == 60 && f(23) == 17 && f.drop(42).take(4).forall(_ == 9) && f.drop(46).forall(_ == 0)),
        "both frames on the wire, whole, the engine's padded")
    }
  }
}
