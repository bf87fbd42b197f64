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
  val len = UInt(Consts.LenBits.W) // payload bytes, at most MAX_PAYLOAD
  val roce = Bool() // the row's STATE.ROCE: the last 4 payload bytes become the ICRC
  val noDf = Bool() // the row's STATE.NO_DF: the IPv4 DF flag stays clear
  val tos = UInt(8.W) // the row's STATE.TOS
  val ttl = UInt(8.W) // the row's TTL (STATE.TTL, 64 for 0)
}

/** One client of the TX header builder: the command, then ceil(len/8) payload words, then
  * `fin` (true: transmit; false: the payload could not be read, drop it). */
class TxClient extends Bundle {
  val cmd = Decoupled(new TxCmd)
  val data = Decoupled(UInt(64.W))
  val fin = Decoupled(Bool())
}

/** TX header builder: collects a payload (store and forward, summing it on the way in), builds
  * the Ethernet, IPv4 (the row's TOS and TTL, DF unless its NO_DF, running identification) and UDP headers with both
  * checksums, and sends the frame on the AXI-Stream output. Serves its clients one datagram at
  * a time in fixed priority. `startTime` is `time` in the cycle the frame's first beat was
  * taken by the MAC side: the frame's TX_TSTAMP, valid from `sent` until the next frame starts.
  * For a RoCEv2 row (`roce`, payload of 16 bytes or more) a pass over the frame computes the ICRC
  * (`Icrc`) before the headers are built; it replaces the payload's last 4 bytes, and the UDP
  * checksum covers it, as the model's send_datagram does. */
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
  val sIdle :: sData :: sFin :: sHdr :: sSend :: sCrc :: sIcrc0 :: sIcrc1 :: Nil = Enum(8)
  val state = RegInit(sIdle)
  val owner = Reg(UInt(log2Ceil(nClients max 2).W))
  val cmd = Reg(new TxCmd)
  val buf = Mem(256, UInt(64.W))
  val words = Reg(UInt(9.W))
  val sum = Reg(UInt(32.W))
  val ipId = RegInit(0.U(16.W))
  val beat = Reg(UInt(9.W))
  val crc = Reg(UInt(32.W))
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
  val roceOn = cmd.roce && cmd.len >= Icrc.MinPayload.U
  val dinValid = VecInit(io.clients.map(_.data.valid))(owner)
  val dinBits = VecInit(io.clients.map(_.data.bits))(owner)
  when(state === sData && dinValid) {
    buf(words) := dinBits
    val base = words << 3
    // the ICRC's bytes are summed once it is known (sIcrc0)
    val en = (0 until 8).map(i => (base + i.U) < cmd.len && !(roceOn && (base + i.U) >= cmd.len - 4.U))
    sum := sum + Csum.beat(dinBits, en)
    words := words + 1.U
    when(words + 1.U === nWords) { state := sFin }
  }
  val finValid = VecInit(io.clients.map(_.fin.valid))(owner)
  val finBits = VecInit(io.clients.map(_.fin.bits))(owner)
  when(state === sFin && finValid) {
    state := Mux(finBits, Mux(roceOn, sCrc, sHdr), sIdle)
    crc := Icrc.Init.U(32.W)
    beat := 1.U
  }

  // headers: 42 bytes, big-endian fields
  val ulen = cmd.len +& 8.U
  val tot = cmd.len +& 28.U
  val flags = Mux(cmd.noDf, 0.U(16.W), 0x4000.U(16.W))
  val ipSum = Seq(Cat(0x45.U(8.W), cmd.tos), tot, ipId, flags, Cat(cmd.ttl, 17.U(8.W)),
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
      Seq(0x08.U, 0x00.U, 0x45.U, cmd.tos) ++ be16(tot) ++ be16(ipId) ++ Seq(flags(15, 8), 0.U, cmd.ttl, 17.U) ++
      be16(ipCsum) ++ be32(cmd.sip) ++ be32(cmd.dip) ++ be16(cmd.sport) ++ be16(cmd.dport) ++
      be16(ulen) ++ be16(udpCsum)
  require(hdrBytes.length == 42)
  val hdr = RegInit(VecInit(Seq.fill(42)(0.U(8.W))))

  // the ICRC pass: frame beats 1.. up to the ICRC, the headers as they will be sent (the fields
  // the ICRC reads as ones, checksums included, do not matter yet)
  val icrcAt = cmd.len +& 38.U // frame offset of the ICRC
  val crcHdrBeat = VecInit((0 until 5).map(k => Cat((0 until 8).reverse.map(i => hdrBytes(8 * k + i).pad(8)))))
  val crcLo = Mux(beat === 5.U, Cat(hdrBytes(41).pad(8), hdrBytes(40).pad(8), 0.U(48.W)), buf(beat - 6.U))
  val crcBeat = Mux(beat < 5.U, crcHdrBeat(beat(2, 0)), (Cat(buf(beat - 5.U), crcLo) >> 48)(63, 0))
  when(state === sCrc) {
    crc := Icrc.beat(crc, crcBeat, beat << 3, icrcAt, "hff".U)
    beat := beat + 1.U
    when(((beat +& 1.U) << 3) >= icrcAt) { state := sIcrc0 }
  }
  // the ICRC into the payload's last 4 bytes (one or two words), and into the UDP sum
  val icrc = ~crc
  val icrcOff = cmd.len - 4.U
  val icrcWord = icrcOff >> 3
  val icrcShift = Cat(icrcOff(2, 0), 0.U(3.W))
  val icrcMask = ("hffffffff".U(128.W) << icrcShift)(127, 0)
  val icrcWin = ((Cat(buf(icrcWord + 1.U), buf(icrcWord)) & ~icrcMask) | (icrc.pad(128) << icrcShift))(127, 0)
  when(state === sIcrc0) {
    buf(icrcWord) := icrcWin(63, 0)
    // payload byte j sits at an even UDP offset when j is even: the high byte of its word
    sum := sum + (0 until 4).map { j =>
      val b = icrc(8 * j + 7, 8 * j)
      Mux((icrcOff + j.U)(0), b.pad(16), Cat(b, 0.U(8.W)))
    }.map(_.pad(32)).reduce(_ +& _)
    state := Mux(icrcOff(2, 0) > 4.U, sIcrc1, sHdr)
  }
  when(state === sIcrc1) {
    buf(icrcWord + 1.U) := icrcWin(127, 64)
    state := sHdr
  }
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
