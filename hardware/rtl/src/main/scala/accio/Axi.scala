package accio

import chisel3._
import chisel3.util._

/** Privilege and ASID of an access: AXI user bits on AW and AR. */
class AccessUser extends Bundle {
  val hart = UInt(8.W)
  val asid = UInt(16.W)
  val user = Bool() // user mode (else supervisor/machine)
}

/** AXI4-Lite, 64-bit data, with the access sideband on AW and AR. Responses are always OKAY:
  * refused loads return poison data, refused stores are dropped. */
class AxiLiteAddr(addrBits: Int) extends Bundle {
  val addr = UInt(addrBits.W)
  val user = new AccessUser
}
class AxiLiteW extends Bundle {
  val data = UInt(64.W)
  val strb = UInt(8.W)
}
class AxiLiteR extends Bundle {
  val data = UInt(64.W)
  val resp = UInt(2.W)
}
class AxiLiteSlave(addrBits: Int) extends Bundle {
  val aw = Flipped(Decoupled(new AxiLiteAddr(addrBits)))
  val w = Flipped(Decoupled(new AxiLiteW))
  val b = Decoupled(UInt(2.W))
  val ar = Flipped(Decoupled(new AxiLiteAddr(addrBits)))
  val r = Decoupled(new AxiLiteR)
}

/** AXI4 master, 64-bit data, INCR bursts only, one ID. */
class AxiAddr extends Bundle {
  val addr = UInt(64.W)
  val len = UInt(8.W) // beats - 1
  val size = UInt(3.W) // 3: 8 bytes
  val burst = UInt(2.W) // 1: INCR
}
class AxiW extends Bundle {
  val data = UInt(64.W)
  val strb = UInt(8.W)
  val last = Bool()
}
class AxiR extends Bundle {
  val data = UInt(64.W)
  val resp = UInt(2.W)
  val last = Bool()
}
class AxiMaster extends Bundle {
  val aw = Decoupled(new AxiAddr)
  val w = Decoupled(new AxiW)
  val b = Flipped(Decoupled(UInt(2.W)))
  val ar = Decoupled(new AxiAddr)
  val r = Flipped(Decoupled(new AxiR))
}

/** AXI-Stream beat: 64-bit data, byte 0 of the frame in bits 7:0, tkeep for the last beat. */
class StreamBeat extends Bundle {
  val data = UInt(64.W)
  val keep = UInt(8.W)
  val last = Bool()
}
