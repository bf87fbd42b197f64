// SPDX-License-Identifier: MIT
// The Accio Rocket SoC's configurations (rocket-chip 1.2.6, Chisel 3.2).
package accio.soc

import freechips.rocketchip.config.{Config, Field}
import freechips.rocketchip.devices.debug.DebugModuleKey
import freechips.rocketchip.devices.tilelink.BootROMParams
import freechips.rocketchip.subsystem._

/** Where the Accio uncore and the harness's console sit on the MMIO port. */
case class AccioSoCMap(
  uncoreBase: BigInt = 0x60000000L,
  uncoreSize: BigInt = 0x100000L,
  consoleBase: BigInt = 0x70000000L)
case object AccioSoCMapKey extends Field[AccioSoCMap](AccioSoCMap())

/** Boot from our own boot ROM image (it jumps to DRAM), no debug module:
  * programs come in through the harness's ELF loader. */
class WithAccioBoot(bootrom: String) extends Config((site, here, up) => {
  case BootROMParams => up(BootROMParams, site).copy(contentFileName = bootrom)
  case DebugModuleKey => None
})

/** The uncore's interrupts on the PLIC: the event interrupt, then one
  * wake-up interrupt per hart (routed by the PLIC's per-hart enables), then,
  * on the SoC with the NIC in front of the uncore, the NIC's and the
  * console's. */
class WithAccioInterrupts(harts: Int, nic: Boolean) extends Config((site, here, up) => {
  case NExtTopInterrupts => 1 + harts + (if (nic) 2 else 0)
})

/** MMIO port IDs wide enough that no two harts share one: the SoC's top
  * takes the issuing hart from the AXI ID. */
class WithAccioMMIOPort extends Config((site, here, up) => {
  case ExtBus => up(ExtBus, site).map(_.copy(idBits = 8))
})

/** The SoC: N big Rocket cores, 64 MiB of DRAM, the MMIO port (uncore, NIC
  * and console), the front port (their DMA). */
class AccioSoCConfig(harts: Int, bootrom: String, nic: Boolean = false) extends Config(
  new WithAccioBoot(bootrom) ++
  new WithAccioInterrupts(harts, nic) ++
  new WithAccioMMIOPort ++
  new WithExtMemSize(0x4000000L) ++
  new WithNBigCores(harts) ++
  new freechips.rocketchip.system.BaseConfig)
