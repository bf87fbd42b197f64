package accio

import chisel3.RawModule
import chisel3.simulator.{PeekPokeAPI, SingleBackendSimulator}
import svsim._

/** ChiselSim with Verilator in a fixed workspace per test under the build cache
  * (so ccache can reuse the compiled model), one compile job, no optimisation
  * beyond what keeps compile time low.
  */
object Sim extends PeekPokeAPI {
  val cacheRoot: String =
    sys.env.getOrElse("ACCIO_RTL_CACHE", sys.env.getOrElse("HOME", "/tmp") + "/.cache/accio/rtl")

  private class Simulator(val workspacePath: String) extends SingleBackendSimulator[verilator.Backend] {
    val backend = verilator.Backend.initializeFromProcessEnvironment()
    val tag = "verilator"
    val commonCompilationSettings = CommonCompilationSettings(
      optimizationStyle = CommonCompilationSettings.OptimizationStyle.OptimizeForCompilationSpeed,
      availableParallelism = CommonCompilationSettings.AvailableParallelism.UpTo(1)
    )
    val backendSpecificCompilationSettings = verilator.Backend.CompilationSettings(
      disabledWarnings = Seq("WIDTH", "UNUSED", "UNOPTFLAT", "CASEINCOMPLETE")
    )
  }

  def simulate[T <: RawModule](name: String, module: => T)(body: T => Unit): Unit = {
    val path = s"$cacheRoot/sim/$name"
    new java.io.File(path).mkdirs()
    new Simulator(path).simulate(module)({ m => body(m.wrapped) }).result
  }
}
