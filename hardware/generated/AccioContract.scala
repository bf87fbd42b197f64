// Generated from the SystemRDL in hardware/regmap by generate.py; do not edit.
package accio.regs

/** The hardware/software contract besides the register map, as accio_contract.h: event
  * types, ring record layouts (byte offset and _SIZE in bytes of each little-endian header
  * field), the row page's offsets, the engine's shared numbers. */
object Contract {
  // enum accio_event
  val EV_LINK_UP: Int = 1
  val EV_LINK_DOWN: Int = 2
  val EV_PROTECTION: Int = 3
  val EV_RX_RING_FULL: Int = 4
  val EV_TX_RING_ERROR: Int = 5
  val EV_ICT_MISS: Int = 6
  val EV_DOORBELL_DISABLED: Int = 7
  val EV_ROW_RANGE: Int = 8
  val EV_MMIO_TX_ERROR: Int = 9
  // RX ring record (accio_rx_rec)
  val RX_REC_LEN: Int = 0
  val RX_REC_LEN_SIZE: Int = 2
  val RX_REC_SPORT: Int = 2
  val RX_REC_SPORT_SIZE: Int = 2
  val RX_REC_SIP: Int = 4
  val RX_REC_SIP_SIZE: Int = 4
  val RX_REC_TSTAMP: Int = 8
  val RX_REC_TSTAMP_SIZE: Int = 8
  val RX_REC_TOS: Int = 16
  val RX_REC_TOS_SIZE: Int = 1
  val RX_REC_TTL: Int = 17
  val RX_REC_TTL_SIZE: Int = 1
  val RX_REC_RSVD: Int = 18
  val RX_REC_RSVD_SIZE: Int = 2
  val RX_REC_DIP: Int = 20
  val RX_REC_DIP_SIZE: Int = 4
  val RX_HDR: Int = 24
  // TX ring record and MMIO transmit message (accio_tx_rec)
  val TX_REC_LEN: Int = 0
  val TX_REC_LEN_SIZE: Int = 2
  val TX_REC_DPORT: Int = 2
  val TX_REC_DPORT_SIZE: Int = 2
  val TX_REC_DIP: Int = 4
  val TX_REC_DIP_SIZE: Int = 4
  val TX_HDR: Int = 8
  // the accio_ict_row page a process maps: register offsets; _BYTES: an array's size
  val ROW_STATE: Int = 0
  val ROW_LOCAL: Int = 8
  val ROW_REMOTE: Int = 16
  val ROW_OWNER_ASID: Int = 24
  val ROW_OWNER_COOKIE: Int = 32
  val ROW_DST_MAC: Int = 40
  val ROW_RX_BASE: Int = 48
  val ROW_RX_SIZE: Int = 56
  val ROW_RX_WPTR: Int = 64
  val ROW_RX_RPTR: Int = 72
  val ROW_TX_BASE: Int = 80
  val ROW_TX_SIZE: Int = 88
  val ROW_TX_WPTR: Int = 96
  val ROW_TX_RPTR: Int = 104
  val ROW_DOORBELL: Int = 112
  val ROW_RX_PKTS: Int = 128
  val ROW_RX_BYTES: Int = 136
  val ROW_RX_DROPS: Int = 144
  val ROW_TX_PKTS: Int = 152
  val ROW_TX_BYTES: Int = 160
  val ROW_TX_ERRORS: Int = 168
  val ROW_PROT_FAULTS: Int = 176
  val ROW_MMIO_TX_NEXT: Int = 184
  val ROW_MMIO_TX_ERRORS: Int = 192
  val ROW_TX_TSTAMP: Int = 200
  val ROW_ROCE_QPN: Int = 208
  val ROW_MMIO_TX: Int = 2048
  val ROW_MMIO_TX_BYTES: Int = 2048
  // shared numbers
  val REC_ALIGN: Int = 8
  val MAX_PAYLOAD: Int = 1472
  val ROCE_PORT: Int = 4791
}
