// SPDX-License-Identifier: MIT
package accio.soc

import java.io.PrintWriter

import freechips.rocketchip.diplomacy.LazyModule
import freechips.rocketchip.system.ExampleRocketSystem

/** Verilog of the Rocket system: Emit OUTDIR HARTS BOOTROM_IMG writes
  * OUTDIR/AccioRocketN.v (top module ExampleRocketSystem), the sources of
  * its black boxes (listed in OUTDIR/firrtl_black_box_resource_files.f) and
  * OUTDIR/mmio-ids.txt: the AXI IDs each master uses on the MMIO port
  * ("NAME FIRST LAST"), from which the SoC's top tells the harts apart.
  * A fourth argument "diplomatic" elaborates AccioRocketSystem instead: the
  * uncore attached by WithAccioUncore; without it, the PLIC has one more
  * source for the NIC that the Verilog top puts in front of the uncore. */
object Emit extends App {
  val Array(out, harts, bootrom) = args.take(3)
  // "diplomatic": the uncore attached by WithAccioUncore (AccioRocketSystem)
  val dip = args.length > 3 && args(3) == "diplomatic"
  val cfg = new AccioSoCConfig(harts.toInt, bootrom, nic = !dip)
  val p = (if (dip) new freechips.rocketchip.config.Config(new WithAccioUncore ++ cfg) else cfg).toInstance
  var sys: ExampleRocketSystem = null
  chisel3.Driver.execute(Array("--target-dir", out, "--output-file", s"AccioRocket$harts"),
    () => { sys = LazyModule(if (dip) new AccioRocketSystem()(p) else new ExampleRocketSystem()(p))
            sys.module })
  val ids = new PrintWriter(s"$out/mmio-ids.txt")
  for (e <- sys.mmioAXI4Node.edges.in; m <- e.master.masters)
    ids.println(s"${m.name.replace(' ', '_')} ${m.id.start} ${m.id.end - 1}")
  ids.close()
}
