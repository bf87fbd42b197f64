package accio

import accio.regs.Contract

/** Reference frames for the tests, built independently of the RTL: Ethernet + IPv4 + UDP; ring
  * records as the register map's contract lays them out. */
object Ref {
  /** A record's length padded to REC_ALIGN. */
  def recPad(n: Int): Int = (n + Contract.REC_ALIGN - 1) / Contract.REC_ALIGN * Contract.REC_ALIGN
  /** A TX ring record (or MMIO window message): header, payload, padding. */
  def txRecord(payload: Seq[Byte], dport: Int = 0, dip: Long = 0, len: Int = -1): Array[Byte] = {
    val rec = new Array[Byte](recPad(Contract.TX_HDR + payload.length))
    def put(off: Int, size: Int, v: Long): Unit = for (i <- 0 until size) rec(off + i) = (v >> (8 * i)).toByte
    put(Contract.TX_REC_LEN, Contract.TX_REC_LEN_SIZE, if (len >= 0) len else payload.length)
    put(Contract.TX_REC_DPORT, Contract.TX_REC_DPORT_SIZE, dport)
    put(Contract.TX_REC_DIP, Contract.TX_REC_DIP_SIZE, dip)
    payload.copyToArray(rec, Contract.TX_HDR)
    rec
  }
  /** A little-endian record field. */
  def recField(rec: Seq[Byte], off: Int, size: Int): Long =
    (0 until size).map(i => (rec(off + i) & 0xffL) << (8 * i)).sum
  def be16(v: Int): Seq[Byte] = Seq(((v >> 8) & 0xff).toByte, (v & 0xff).toByte)
  def be32(v: Long): Seq[Byte] = Seq(24, 16, 8, 0).map(s => ((v >> s) & 0xff).toByte)
  def sum(bytes: Seq[Byte]): Long =
    bytes.grouped(2).map(p => ((p(0) & 0xff) << 8) | (if (p.length > 1) p(1) & 0xff else 0)).map(_.toLong).sum
  def fold(s0: Long): Int = { var s = s0; while ((s >> 16) != 0) s = (s & 0xffff) + (s >> 16); s.toInt }
  def macBytes(m: BigInt): Seq[Byte] = (0 until 6).map(i => ((m >> (8 * i)) & 0xff).toByte)

  /** A datagram as the engine transmits it (identification `id`, DF, TOS `tos`, TTL `ttl`). */
  def udpFrame(dmac: BigInt, smac: BigInt, sip: Long, sport: Int, dip: Long, dport: Int, id: Int,
    payload: Seq[Byte], tos: Int = 0, ttl: Int = 64): Array[Byte] = {
    val ulen = 8 + payload.length
    val ipNoCsum = Seq[Byte](0x45, tos.toByte) ++ be16(20 + ulen) ++ be16(id) ++
      Seq[Byte](0x40, 0, ttl.toByte, 17, 0, 0) ++ be32(sip) ++ be32(dip)
    val ipc = ~fold(sum(ipNoCsum)) & 0xffff
    val ip = ipNoCsum.take(10) ++ be16(ipc) ++ ipNoCsum.drop(12)
    val pseudo = be32(sip) ++ be32(dip) ++ Seq[Byte](0, 17) ++ be16(ulen)
    val udpNoCsum = be16(sport) ++ be16(dport) ++ be16(ulen) ++ Seq[Byte](0, 0) ++ payload
    val uc0 = ~fold(sum(pseudo) + sum(udpNoCsum)) & 0xffff
    val uc = if (uc0 == 0) 0xffff else uc0
    val udp = udpNoCsum.take(6) ++ be16(uc) ++ payload
    (macBytes(dmac) ++ macBytes(smac) ++ Seq[Byte](0x08, 0x00) ++ ip ++ udp).toArray
  }

  /** A datagram of a row with STATE.ROCE: the payload's last 4 bytes replaced by the RoCEv2
    * ICRC (java.util.zip.CRC32 over 8 bytes of ones and the frame from the IPv4 header up to the
    * ICRC, with TOS, TTL, both checksums and the BTH's reserved byte as ones), least significant
    * byte first, and the UDP checksum over it. */
  def roceFrame(dmac: BigInt, smac: BigInt, sip: Long, sport: Int, dip: Long, dport: Int, id: Int,
    payload: Seq[Byte], tos: Int = 0, ttl: Int = 64): Array[Byte] = {
    val f = udpFrame(dmac, smac, sip, sport, dip, dport, id, payload, tos, ttl)
    val masked = f.slice(14, f.length - 4).clone()
    for (o <- Seq(15, 22, 24, 25, 40, 41, 46)) masked(o - 14) = 0xff.toByte
    val crc = new java.util.zip.CRC32
    crc.update(Array.fill[Byte](8)(0xff.toByte))
    crc.update(masked)
    val v = crc.getValue
    val icrc = (0 until 4).map(i => ((v >> (8 * i)) & 0xff).toByte)
    udpFrame(dmac, smac, sip, sport, dip, dport, id, payload.dropRight(4) ++ icrc, tos, ttl)
  }

  /** A received datagram: a frame as a peer sends it to the station (identification 0). */
  def rxFrame(smac: BigInt, dmac: BigInt, sip: Long, sport: Int, dip: Long, dport: Int, payload: Seq[Byte]): Array[Byte] =
    udpFrame(dmac, smac, sip, sport, dip, dport, 0, payload)
}
