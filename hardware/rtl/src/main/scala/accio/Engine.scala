package accio

import chisel3._
import chisel3.util._

/** Helpers for the sequencers that use the row register file and the event queue. */
trait Sequencer { this: Module =>
  def regPort: RegPort
  def evPort: DecoupledIO[Event]

  def defaults(): Unit = {
    regPort.req.valid := false.B
    regPort.req.bits := 0.U.asTypeOf(regPort.req.bits)
    evPort.valid := false.B
    evPort.bits := 0.U.asTypeOf(new Event)
  }
  /** Issue one register operation; `then` runs in the cycle it is performed, with the old value.
    * With `lock`, the next operation of this sequencer follows it with nothing in between. */
  def reg(row: UInt, off: Int, op: UInt, data: UInt = 0.U, lock: Boolean = false)(then: UInt => Unit): Unit =
    regAt(row, F.reg(off).U, op, data, lock)(then)
  def regAt(row: UInt, idx: UInt, op: UInt, data: UInt = 0.U, lock: Boolean = false)(then: UInt => Unit): Unit = {
    regPort.req.valid := true.B
    regPort.req.bits.row := row
    regPort.req.bits.reg := idx
    regPort.req.bits.op := op
    regPort.req.bits.data := data
    regPort.req.bits.lock := lock.B
    when(regPort.req.fire) { then(regPort.resp) }
  }
  def event(typ: Int, row: UInt, info: UInt)(then: => Unit): Unit = {
    evPort.valid := true.B
    evPort.bits := Event(typ, row, info)
    when(evPort.fire) { then }
  }
}
