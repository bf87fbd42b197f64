package accio

import chisel3._
import chisel3.simulator.PeekPokeAPI._
import accio.regs.Uncore
import accio.regs.Uncore.Row

/** Latency measurements on the 64-row, 4-hart uncore (cycles of the uncore clock, with the bench's
  * zero-wait AXI memory and a sink that never stalls): `Measure OUT.json`.
  *  - rx: last RX beat accepted -> RX_WPTR moved past the new record (record visible)
  *  - doorbell: doorbell store accepted -> first TX beat
  *  - mmio: last MMIO-TX store accepted -> first TX beat (8-byte stores in order)
  */
object Measure extends App {
  val out = if (args.nonEmpty) args(0) else "measure.json"
  val sizes = Seq(64, 128, 256, 512, 1024, 1472)
  val p = UncoreParams(64, 4)
  val station = BigInt("00c1ac005452", 16)
  val peer = BigInt("aa0000005452", 16)
  val lip = 0x0a00020fL
  val rip = 0x0a000202L
  val res = scala.collection.mutable.ArrayBuffer[String]()
  def off(r: Int, reg: Int): BigInt = Row.Base + r * Row.Stride + reg
  Sim.simulate("measure_r64_h4", new AccioUncore(p)) { dut =>
    val b = new Bench(dut)
    b.reset()
    dut.io.mac.poke(station.U)
    b.write(Uncore.CTRL, 1)
    val r = 3
    b.write(off(r, Row.LOCAL), (BigInt(17) << 48) | (BigInt(5000) << 32) | lip)
    b.write(off(r, Row.REMOTE), (BigInt(7000) << 32) | rip)
    b.write(off(r, Row.OWNER_ASID), 7)
    b.write(off(r, Row.DST_MAC), peer)
    b.write(off(r, Row.RX_BASE), BigInt(0x80100000L))
    b.write(off(r, Row.RX_SIZE), 1 << 16)
    b.write(off(r, Row.TX_BASE), BigInt(0x80200000L))
    b.write(off(r, Row.TX_SIZE), 1 << 16)
    b.write(off(r, Row.STATE), 3)
    var txw = 0L
    var winPos = 0L
    for (n <- sizes) {
      val payload = Seq.tabulate(n)(i => (i * 7 + n).toByte)
      // receive
      b.recordCycles.clear()
      assert(b.rx(Ref.rxFrame(peer, station, rip, 7000, lip, 5000, payload)))
      val rx = b.recordCycles.head - b.lastRxBeat
      b.write(off(r, Row.RX_RPTR), b.read(off(r, Row.RX_WPTR)))
      // doorbell
      val rec = Ref.txRecord(payload)
      b.mem.write(BigInt(0x80200000L + (txw % (1 << 16))), rec)
      txw += rec.length
      b.write(off(r, Row.TX_WPTR), txw, Some(7))
      b.txFirstBeat.clear()
      b.store(off(r, Row.DOORBELL), 8, 1, Some(7))
      val db = b.txFirstBeat.head - b.lastMmioWrite
      val f1 = b.txFrames.dequeue()
      assert(f1.length == 42 + n)
      // MMIO transmit window
      val msg = rec
      b.txFirstBeat.clear()
      for ((w, i) <- msg.grouped(8).zipWithIndex)
        b.store(off(r, Row.MMIO_TX) + ((winPos + 8 * i) % Consts.WinBytes), 8,
          w.zipWithIndex.map { case (x, k) => BigInt(x & 0xff) << (8 * k) }.sum, Some(7))
      winPos += msg.length
      val mm = b.txFirstBeat.head - b.lastMmioWrite
      val f2 = b.txFrames.dequeue()
      assert(f2.drop(42).sameElements(f1.drop(42)))
      res += s"""{"payload": $n, "rx_last_beat_to_record": $rx, "doorbell_to_first_tx_beat": $db, "last_mmio_store_to_first_tx_beat": $mm}"""
      println(f"payload $n%5d  rx $rx%4d  doorbell $db%4d  mmio $mm%4d cycles")
    }
  }
  val w = new java.io.PrintWriter(out)
  w.println("[" + res.mkString(",\n ") + "]")
  w.close()
}
