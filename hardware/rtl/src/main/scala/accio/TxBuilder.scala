package accio

import chisel3._
import chisel3.util._

/** What a transmitted datagram needs besides its payload. */
class TxCmd extends Bundle {
  val dmac = UInt(48.W) // byte 0 in bits 7:0
  val sip = UInt(32.W)
  val sport = UInt(16.W)
  val dip = UInt(32.W)
  val dport = UInt(16.W)
  val len = UInt(11.W) // payload bytes, at most 1472
}

/** One client of the TX header builder: the command, then ceil(len/8) payload words, then
  * `fin` (true: transmit; false: the payload could not be read, drop it). */
class TxClient extends Bundle {
  val cmd = Decoupled(new TxCmd)
  val data = Decoupled(UInt(64.W))
  val fin = Decoupled(Bool())
}

/** TX header builder: collects a payload (store and forward, summing it on the way in), builds
  * the Ethernet, IPv4 (DF, TTL 64, running identification) and UDP headers with both
  * checksums, and sends the frame on the AXI-Stream output. Serves its clients one datagram at
  * a time in fixed priority. `startTime` is `time` in the cycle the frame's first beat was
  * taken by the MAC side: the frame's TX_TSTAMP, valid from `sent` until the next frame starts. */
class TxBuilder(nClients: Int) extends Module {
  val io = IO(new Bundle {
    val clients = Vec(nClients, Flipped(new TxClient))
    val mac = Input(UInt(48.W))
    val tx = Decoupled(new StreamBeat)
    val time = Input(UInt(64.W))
    val busy = Output(Bool())
    val sent = Output(Bool()) // a frame's last beat left
    val startTime = Output(UInt(64.W))
  })
  val sIdle :: sData :: sFin :: sHdr :: sSend :: Nil = Enum(5)
  val state = RegInit(sIdle)
  val owner = Reg(UInt(log2Ceil(nClients max 2).W))
  val cmd = Reg(new TxCmd)
  val buf = Mem(256, UInt(64.W))
  val words = Reg(UInt(9.W))
  val sum = Reg(UInt(32.W))
  val ipId = RegInit(0.U(16.W))
  val beat = Reg(UInt(9.W))
  io.busy := state =/= sIdle
  io.sent := false.B

  val sel = PriorityEncoder(io.clients.map(_.cmd.valid))
  for ((c, i) <- io.clients.zipWithIndex) {
    c.cmd.ready := state === sIdle && sel === i.U
    c.data.ready := state === sData && owner === i.U
    c.fin.ready := state === sFin && owner === i.U
  }
  val anyCmd = io.clients.map(_.cmd.valid).reduce(_ || _)
  val inCmd = VecInit(io.clients.map(_.cmd.bits))(sel)
  when(state === sIdle && anyCmd) {
    owner := sel
    cmd := inCmd
    words := 0.U
    sum := 0.U
    state := Mux(inCmd.len === 0.U, sFin, sData)
  }
  val nWords = (cmd.len +& 7.U) >> 3
  val dinValid = VecInit(io.clients.map(_.data.valid))(owner)
  val dinBits = VecInit(io.clients.map(_.data.bits))(owner)
  when(state === sData && dinValid) {
    buf(words) := dinBits
    val base = words << 3
    val en = (0 until 8).map(i => (base + i.U) < cmd.len)
    sum := sum + Csum.beat(dinBits, en)
    words := words + 1.U
    when(words + 1.U === nWords) { state := sFin }
  }
  val finValid = VecInit(io.clients.map(_.fin.valid))(owner)
  val finBits = VecInit(io.clients.map(_.fin.bits))(owner)
  when(state === sFin && finValid) {
    state := Mux(finBits, sHdr, sIdle)
  }

  // headers: 42 bytes, big-endian fields
  val ulen = cmd.len +& 8.U
  val tot = cmd.len +& 28.U
  val ipSum = Seq(0x4500.U, tot, ipId, 0x4000.U, 0x4011.U,
    cmd.sip(31, 16), cmd.sip(15, 0), cmd.dip(31, 16), cmd.dip(15, 0)).map(_.pad(20)).reduce(_ +& _)
  val ipCsum = ~Csum.fold(ipSum)
  val udpSum = Seq(cmd.sip(31, 16), cmd.sip(15, 0), cmd.dip(31, 16), cmd.dip(15, 0), 17.U, ulen,
    cmd.sport, cmd.dport, ulen).map(_.pad(32)).reduce(_ +& _) + sum
  val udpFold = ~Csum.fold(udpSum)
  val udpCsum = Mux(udpFold === 0.U, "hffff".U(16.W), udpFold)
  def be16(x: UInt): Seq[UInt] = { val v = x.pad(16); Seq(v(15, 8), v(7, 0)) }
  def be32(v: UInt): Seq[UInt] = Seq(v(31, 24), v(23, 16), v(15, 8), v(7, 0))
  val hdrBytes: Seq[UInt] =
    (0 until 6).map(i => cmd.dmac(8 * i + 7, 8 * i)) ++ (0 until 6).map(i => io.mac(8 * i + 7, 8 * i)) ++
      Seq(0x08.U, 0x00.U, 0x45.U, 0x00.U) ++ be16(tot) ++ be16(ipId) ++ Seq(0x40.U, 0.U, 64.U, 17.U) ++
      be16(ipCsum) ++ be32(cmd.sip) ++ be32(cmd.dip) ++ be16(cmd.sport) ++ be16(cmd.dport) ++
      be16(ulen) ++ be16(udpCsum)
  require(hdrBytes.length == 42)
  val hdr = RegInit(VecInit(Seq.fill(42)(0.U(8.W))))
  when(state === sHdr) {
    for (i <- 0 until 42) hdr(i) := hdrBytes(i)
    ipId := ipId + 1.U
    beat := 0.U
    state := sSend
  }
  // beat k >= 5 carries frame bytes 8k..8k+7 = payload bytes 8k-42..: the top two bytes of word
  // k-6 (the UDP checksum for k = 5) and the low six of word k-5
  val frameLen = cmd.len +& 42.U
  val nBeats = (frameLen +& 7.U) >> 3
  val lo = Mux(beat === 5.U, Cat(hdr(41), hdr(40), 0.U(48.W)), buf(beat - 6.U))
  val hi = buf(beat - 5.U)
  val payloadBeat = (Cat(hi, lo) >> 48)(63, 0)
  val hdrBeat = VecInit((0 until 5).map(k => Cat((0 until 8).reverse.map(i => hdr(8 * k + i)))))(beat(2, 0))
  val lastBeat = beat === nBeats - 1.U
  val tail = frameLen(2, 0)
  io.tx.valid := state === sSend
  io.tx.bits.data := Mux(beat < 5.U, hdrBeat, payloadBeat)
  io.tx.bits.keep := Mux(lastBeat && tail =/= 0.U, UIntToOH(tail) - 1.U, "hff".U)
  io.tx.bits.last := lastBeat
  val startTime = RegInit(0.U(64.W))
  io.startTime := startTime
  when(io.tx.fire && beat === 0.U) { startTime := io.time }
  when(io.tx.fire) {
    beat := beat + 1.U
    when(lastBeat) {
      state := sIdle
      io.sent := true.B
    }
  }
}
