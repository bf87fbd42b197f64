package accio

import chisel3._
import chisel3.util._

/** The RoCEv2 invariant CRC of a datagram on a row with STATE.ROCE, as the C model computes it
  * (`roce_icrc` in hardware/model/accio_uncore.c): CRC-32 (IEEE 802.3, reflected) over 8 bytes of
  * ones (the masked LRH), then the frame from its IPv4 header (20 bytes) up to the ICRC itself,
  * with the fields routers may change (TOS, TTL, both checksums) and the BTH's reserved byte read
  * as ones; the result is inverted and follows the payload least significant byte first. Frame
  * offsets here count from the Ethernet header, so the IPv4 header starts at 14. */
object Icrc {
  val Start = 14
  /** frame offsets read as ones: TOS, TTL, IPv4 checksum, UDP checksum, BTH reserved byte */
  val Masked: Seq[Int] = Seq(15, 22, 24, 25, 40, 41, 46)
  /** payloads shorter than a BTH and an ICRC carry none */
  val MinPayload = 16
  private val Poly = BigInt("edb88320", 16)

  private def stepS(crc: BigInt, b: Int): BigInt =
    (0 until 8).foldLeft(crc ^ b)((c, _) => if (c.testBit(0)) (c >> 1) ^ Poly else c >> 1)

  /** the CRC register after the 8 bytes of ones, from all ones */
  val Init: BigInt = (0 until 8).foldLeft(BigInt("ffffffff", 16))((c, _) => stepS(c, 0xff))

  /** one byte into the CRC register (no final inversion) */
  def byte(crc: UInt, b: UInt): UInt =
    (0 until 8).foldLeft(crc ^ b.pad(32))((c, _) => Mux(c(0), (c >> 1) ^ Poly.U(32.W), c >> 1))

  /** the bytes of a little-endian beat at frame offset `off` (a multiple of 8) into the CRC: those
    * with their `keep` bit set and an offset in [Start, end) */
  def beat(crc: UInt, data: UInt, off: UInt, end: UInt, keep: UInt): UInt =
    (0 until 8).foldLeft(crc) { (c, i) =>
      val o = off +& i.U
      val ones = Masked.map(m => o === m.U).reduce(_ || _)
      val b = Mux(ones, 0xff.U(8.W), data(8 * i + 7, 8 * i))
      Mux(keep(i) && o >= Start.U && o < end, byte(c, b), c)
    }
}
