package accio

import chisel3._
import chisel3.simulator.PeekPokeAPI._
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable

/** A vector file (hardware/vectors/FORMAT.md) split at its `config` lines. */
case class Segment(rows: Int, harts: Int, lines: Seq[(Int, Seq[String])])
case class VecFile(name: String, segments: Seq[Segment])

object Vectors {
  val dir: java.io.File = {
    val here = new java.io.File(sys.env.getOrElse("ACCIO_VECTORS", "../vectors"))
    require(here.isDirectory, s"vector directory ${here.getAbsolutePath} not found")
    here
  }
  /** model_*.vec cover what only the C model implements so far (FORMAT.md). */
  def files: Seq[java.io.File] = dir.listFiles()
    .filter(f => f.getName.endsWith(".vec") && !f.getName.startsWith("model_")).sortBy(_.getName).toSeq

  def parse(f: java.io.File): VecFile = {
    val segs = mutable.ArrayBuffer[Segment]()
    var rows = 64
    var harts = 4
    var cur = mutable.ArrayBuffer[(Int, Seq[String])]()
    var started = false
    val src = scala.io.Source.fromFile(f)
    try {
      for ((raw, i) <- src.getLines().zipWithIndex) {
        val toks = raw.takeWhile(_ != '#').trim.split("\\s+").filter(_.nonEmpty).toSeq
        if (toks.nonEmpty) {
          if (toks.head == "config") {
            if (started) segs += Segment(rows, harts, cur.toSeq)
            cur = mutable.ArrayBuffer()
            for (t <- toks.tail) {
              if (t.startsWith("rows=")) rows = num(t.drop(5)).toInt
              if (t.startsWith("harts=")) harts = num(t.drop(6)).toInt
            }
          } else cur += ((i + 1, toks))
          started = true
        }
      }
    } finally src.close()
    segs += Segment(rows, harts, cur.toSeq)
    VecFile(f.getName, segs.toSeq)
  }

  def num(s: String): BigInt =
    if (s.startsWith("0x") || s.startsWith("0X")) BigInt(s.drop(2), 16) else BigInt(s)
  def hex(s: String): Array[Byte] = s.grouped(2).map(Integer.parseInt(_, 16).toByte).toArray
  def hexOf(b: Array[Byte]): String = b.map(x => f"${x & 0xff}%02x").mkString
}

/** What a vector file carries from one `config` to the next: memory, time and transmitted frames
  * (a new uncore starts from reset, as in the model's replayer). */
class FileState {
  val mem = new SysMem
  var now: BigInt = 0
  val tx = mutable.Queue[Array[Byte]]()
  val failures = mutable.ArrayBuffer[String]()
}

object Replay {
  /** Replay one segment on a freshly reset uncore. */
  def run(b: Bench, file: String, seg: Segment, st: FileState): Unit = {
    val dut = b.dut
    b.reset()
    dut.io.time.poke(st.now.U)
    def who(toks: Seq[String], from: Int): (Option[Int], Int) = {
      var asid: Option[Int] = None
      var hart = 0
      toks.drop(from).grouped(2).foreach {
        case Seq("user", a) => asid = Some(Vectors.num(a).toInt)
        case Seq("hart", h) => hart = Vectors.num(h).toInt
        case _ =>
      }
      (asid, hart)
    }
    for ((ln, t) <- seg.lines) {
      def fail(msg: String): Unit = st.failures += s"$file:$ln: $msg"
      def drainTx(): Unit = while (b.txFrames.nonEmpty) st.tx.enqueue(b.txFrames.dequeue())
      t.head match {
        case "mac" =>
          val m = t(1).split(":").map(Integer.parseInt(_, 16)).zipWithIndex.map { case (x, i) => BigInt(x) << (8 * i) }.sum
          dut.io.mac.poke(m.U)
        case "time" =>
          st.now = Vectors.num(t(1)); dut.io.time.poke(st.now.U)
        case "mem" => st.mem.write(Vectors.num(t(1)), Vectors.hex(t(2)))
        case "write" =>
          val (a, h) = who(t, 3); b.store(Vectors.num(t(1)), 8, Vectors.num(t(2)), a, h)
        case "store" =>
          val (a, h) = who(t, 4); b.store(Vectors.num(t(1)), Vectors.num(t(2)).toInt, Vectors.num(t(3)), a, h)
        case "read" =>
          val (a, h) = who(t, 3)
          val got = b.read(Vectors.num(t(1)), a, h)
          if (t(2) != "any") {
            val want = Vectors.num(t(2))
            if (got != want) fail(f"read ${t(1)}: got 0x$got%x, expected 0x$want%x")
          }
        case "rx" =>
          val took = b.rx(Vectors.hex(t(1)))
          if (t(2) != "any" && took != (t(2) == "consumed"))
            fail(s"rx: frame was ${if (took) "consumed" else "passed"}, expected ${t(2)}")
        case "tx" =>
          drainTx()
          if (st.tx.isEmpty) fail("tx: no frame was transmitted")
          else {
            val got = st.tx.dequeue()
            if (!got.sameElements(Vectors.hex(t(1)))) fail(s"tx: got ${Vectors.hexOf(got)}, expected ${t(1)}")
          }
        case "notx" =>
          drainTx()
          if (st.tx.nonEmpty) fail(s"notx: ${st.tx.size} frames pending")
        case "expect-mem" =>
          val want = Vectors.hex(t(2))
          val got = st.mem.read(Vectors.num(t(1)), want.length)
          if (!got.sameElements(want)) fail(s"memory: got ${Vectors.hexOf(got)}, expected ${t(2)}")
        case "irq" =>
          val got = b.irq(t(1).toInt, seg.harts)
          if ((got != 0) != (t(2).toInt != 0)) fail(s"irq ${t(1)}: expected level ${t(2)}")
        case "link" => b.link(t(1) == "up")
        case other => fail(s"unknown directive $other")
      }
      drainTx()
    }
  }

  /** Replay every file; one simulation per configuration the files use. */
  def all(files: Seq[VecFile], log: String => Unit): Map[String, FileState] = {
    val states = files.map(f => f.name -> new FileState).toMap
    val configs = files.flatMap(_.segments.map(s => (s.rows, s.harts))).distinct
    for ((rows, harts) <- configs) {
      Sim.simulate(s"uncore_r${rows}_h$harts", new AccioUncore(UncoreParams(rows, harts))) { dut =>
        for (f <- files; seg <- f.segments if seg.rows == rows && seg.harts == harts) {
          val st = states(f.name)
          val b = new Bench(dut, st.mem)
          val t0 = System.nanoTime()
          run(b, f.name, seg, st)
          log(f"${f.name}%-22s rows=$rows%-3d harts=$harts%-2d ${seg.lines.size}%5d directives ${b.cycle}%8d cycles ${(System.nanoTime() - t0) / 1e9}%.1f s")
        }
      }
    }
    states
  }
}

class VectorSpec extends AnyFunSuite {
  test("the uncore replays every vector file exactly") {
    val files = Vectors.files.map(Vectors.parse)
    assert(files.nonEmpty)
    val only = sys.env.get("ACCIO_VEC").map(_.split(",").toSet)
    val chosen = files.filter(f => only.forall(_.exists(f.name.startsWith)))
    val states = Replay.all(chosen, println)
    for (f <- chosen) {
      val st = states(f.name)
      println(f"${f.name}%-22s ${if (st.failures.isEmpty) "ok" else "FAIL"}")
      st.failures.take(20).foreach(m => println("  " + m))
    }
    val bad = chosen.filter(f => states(f.name).failures.nonEmpty).map(_.name)
    assert(bad.isEmpty, s"vector files with mismatches: ${bad.mkString(", ")}")
  }
}
