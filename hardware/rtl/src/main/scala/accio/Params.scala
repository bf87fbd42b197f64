package accio

import chisel3._
import chisel3.util._
import accio.regs.{Contract, Uncore}

/** Sizes of one uncore instance. The register map describes 64 rows and 4 harts. */
case class UncoreParams(rows: Int = 64, harts: Int = 4) {
  require(rows >= 1 && rows <= 4096 && isPow2(rows), "rows: a power of two up to 4096")
  require(harts >= 1 && harts <= 64)
  val qdepth: Int = 2 * rows
  val rowBits: Int = log2Ceil(rows) max 1
  val hartBits: Int = log2Ceil(harts) max 1
  /** Registers kept per row: offsets 0x00..0xf8 of the row page. */
  val regsPerRow: Int = 32
  val regIdxBits: Int = rowBits + log2Ceil(regsPerRow)
  /** MMIO offsets relative to the uncore base: global page plus one page per row, plus a page beyond. */
  val addrBits: Int = 32
}

/** Fixed numbers of the RTL. Those shared with the model and software (event types, ring record
  * layouts, MAX_PAYLOAD) are the register map's, in the generated accio.regs.Contract. */
object Consts {
  val Poison: BigInt = BigInt("badacce55badacce", 16)
  val WinBytes: Int = Uncore.Row.MMIO_TX_COUNT * 8
  /** Receive frame buffer: frames longer than this are dropped by the engine. */
  val FrameBufBytes = 2048
  /** Bits of a payload length. */
  val LenBits: Int = log2Ceil(Contract.MAX_PAYLOAD + 1)

  // what the engine's datapaths assume of the contract
  require(Contract.REC_ALIGN == 8 && Contract.RX_HDR % 8 == 0,
    "the engine writes records in 8-byte words")
  require(Contract.TX_HDR == 8 && Contract.TX_REC_LEN + Contract.TX_REC_LEN_SIZE <= 8,
    "the engine reads a TX header in one 8-byte word; the window's length field lies in it")
  require(14 + 20 + 8 + Contract.MAX_PAYLOAD <= FrameBufBytes, "a whole frame fits the frame buffers")
}

/** Ring records (accio.regs.Contract): little-endian header fields at byte offsets. */
object Rec {
  /** The field of `size` bytes at byte offset `off` of a header held as one little-endian value. */
  def field(hdr: UInt, off: Int, size: Int): UInt = hdr(8 * (off + size) - 1, 8 * off)
  /** A header of `bytes` bytes as one little-endian value: each (value, offset, size) at its place,
    * zeros between. */
  def pack(bytes: Int, fields: (UInt, Int, Int)*): UInt = {
    for ((v, off, size) <- fields) require(v.getWidth <= 8 * size && off + size <= bytes)
    fields.map { case (v, off, size) => (v.pad(8 * size) << (8 * off)).pad(8 * bytes) }.reduce(_ | _)
  }
  /** A record's length, header included, padded to REC_ALIGN. */
  def pad(n: UInt): UInt = {
    val k = log2Ceil(Contract.REC_ALIGN)
    ((n +& (Contract.REC_ALIGN - 1).U) >> k) << k
  }
}

/** Field helpers over the generated (lsb, width) pairs. */
object F {
  def apply(v: UInt, f: (Int, Int)): UInt = v(f._1 + f._2 - 1, f._1)
  def mask(f: (Int, Int)): BigInt = ((BigInt(1) << f._2) - 1) << f._1
  def maskU(fs: (Int, Int)*): UInt = fs.map(mask).reduce(_ | _).U(64.W)
  def reg(off: Int): Int = off / 8
}

/** An entry of the control event queue. */
class Event extends Bundle {
  val typ = UInt(8.W)
  val row = UInt(16.W)
  val info = UInt(32.W)
}
object Event {
  def apply(typ: Int, row: UInt, info: UInt): Event = {
    val e = Wire(new Event)
    e.typ := typ.U
    e.row := row
    e.info := info
    e
  }
  def word(e: Event): UInt =
    Cat(0.U(1.W), e.info(30, 0), e.row, 0.U(8.W), e.typ)
}

/** A request to queue a row on its hart's ready queue (the model's make_ready). */
class ReadyReq(p: UncoreParams) extends Bundle {
  val row = UInt(16.W)
  val tx = Bool()
  val state = UInt(64.W) // the row's STATE before the suspend bit was cleared
}

/** Row register file operations; the response is the old value. */
object RegOp {
  val Rd = 0.U(2.W)
  val Wr = 1.U(2.W)
  val Add = 2.U(2.W)
  val AndNot = 3.U(2.W)
}
class RegReq(p: UncoreParams) extends Bundle {
  val row = UInt(p.rowBits.W)
  val reg = UInt(5.W) // register offset / 8
  val op = UInt(2.W)
  val data = UInt(64.W)
  /** Keep the table for this client's next request: no other client's operation comes between the
    * two (a pair that software must see both or neither of, like TX_TSTAMP and TX_PKTS). The client
    * must issue that next request right away. */
  val lock = Bool()
}

/** Client side of the row register file: request, and the old value in the cycle it fires. */
class RegPort(p: UncoreParams) extends Bundle {
  val req = Decoupled(new RegReq(p))
  val resp = Input(UInt(64.W))
}

/** Row fields the engines read every cycle (kept in flops next to the register RAM). */
class RowShadow extends Bundle {
  val state = UInt(40.W)
  val local = UInt(56.W)
  val remote = UInt(48.W)
  val asid = UInt(16.W)
  val asidWide = Bool() // OWNER_ASID holds a value no ASID can equal
  val qpn = UInt(24.W) // ROCE_QPN
  def ownedBy(a: UInt): Bool = state(0) && !asidWide && asid === a
  def enabled: Bool = state(0)
  def live: Bool = state(0) && state(1)
  def roce: Bool = F(state, Uncore.Row.STATE_ROCE) === 1.U
  def noDf: Bool = F(state, Uncore.Row.STATE_NO_DF) === 1.U
  def group: Bool = F(state, Uncore.Row.STATE_GROUP) === 1.U
  def tos: UInt = F(state, Uncore.Row.STATE_TOS)
  /** The TTL of the row's frames: STATE.TTL, 64 where it is 0. */
  def ttl: UInt = { val t = F(state, Uncore.Row.STATE_TTL); Mux(t === 0.U, 64.U(8.W), t) }
  def lip: UInt = F(local, Uncore.Row.LOCAL_IP)
  def lport: UInt = F(local, Uncore.Row.LOCAL_PORT)
  def proto: UInt = F(local, Uncore.Row.LOCAL_PROTO)
  def rip: UInt = F(remote, Uncore.Row.REMOTE_IP)
  def rport: UInt = F(remote, Uncore.Row.REMOTE_PORT)
  /** A RoCEv2 row takes only datagrams whose BTH names its queue pair (none while QPN is 0). */
  def qpnMatch(bth: Bool, dqpn: UInt): Bool = !roce || (bth && qpn =/= 0.U && qpn === dqpn)
}

/** Global counter increments, one pulse per event. */
class CounterIncs extends Bundle {
  val ictMiss = Bool()
  val protViolation = Bool()
  val rxMalformed = Bool()
  val badDoorbell = Bool()
  val rxFragment = Bool()
  val rxDelivered = Bool()
  val txSent = Bool()
}
object CounterIncs {
  def none: CounterIncs = 0.U.asTypeOf(new CounterIncs)
}

/** Small arithmetic helpers. */
object Csum {
  /** One's-complement fold of a wide sum to 16 bits (the model's csum_fold without the inversion). */
  def fold(s: UInt): UInt = {
    val a = s(15, 0) +& (s >> 16)
    val b = a(15, 0) +& (a >> 16)
    val c = b(15, 0) +& (b >> 16)
    c(15, 0)
  }
  /** The sum of the big-endian 16-bit words of a little-endian 64-bit beat whose byte i sits at an
    * even frame offset when i is even; bytes with en(i) low count as zero. */
  def beat(data: UInt, en: Seq[Bool]): UInt = {
    val bytes = (0 until 8).map(i => Mux(en(i), data(8 * i + 7, 8 * i), 0.U(8.W)))
    (0 until 4).map(i => Cat(bytes(2 * i), bytes(2 * i + 1))).map(_.pad(19)).reduce(_ +& _)
  }
  def ringSizeOk(size: UInt): Bool =
    size >= 256.U && size <= (16 << 20).U && PopCount(size) === 1.U
}
