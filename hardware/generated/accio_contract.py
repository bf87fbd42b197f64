"""Generated from the SystemRDL in hardware/regmap by generate.py; do not edit.

The hardware/software contract besides the register map, as accio_contract.h:
event types, ring record layouts (byte offset and size of each little-endian
header field), the row page's offsets, the engine's shared numbers."""

# enum accio_event
EV_LINK_UP = 1
EV_LINK_DOWN = 2
EV_PROTECTION = 3
EV_RX_RING_FULL = 4
EV_TX_RING_ERROR = 5
EV_ICT_MISS = 6
EV_DOORBELL_DISABLED = 7
EV_ROW_RANGE = 8
EV_MMIO_TX_ERROR = 9
EV_NAMES = {1: "LINK_UP", 2: "LINK_DOWN", 3: "PROTECTION", 4: "RX_RING_FULL", 5: "TX_RING_ERROR", 6: "ICT_MISS", 7: "DOORBELL_DISABLED", 8: "ROW_RANGE", 9: "MMIO_TX_ERROR"}

# RX ring record (accio_rx_rec)
RX_REC_LEN = 0
RX_REC_LEN_SIZE = 2
RX_REC_SPORT = 2
RX_REC_SPORT_SIZE = 2
RX_REC_SIP = 4
RX_REC_SIP_SIZE = 4
RX_REC_TSTAMP = 8
RX_REC_TSTAMP_SIZE = 8
RX_REC_TOS = 16
RX_REC_TOS_SIZE = 1
RX_REC_TTL = 17
RX_REC_TTL_SIZE = 1
RX_REC_RSVD = 18
RX_REC_RSVD_SIZE = 2
RX_REC_DIP = 20
RX_REC_DIP_SIZE = 4
RX_HDR = 24
RX_REC = {"LEN": (0, 2), "SPORT": (2, 2), "SIP": (4, 4), "TSTAMP": (8, 8), "TOS": (16, 1), "TTL": (17, 1), "RSVD": (18, 2), "DIP": (20, 4)}

# TX ring record and MMIO transmit message (accio_tx_rec)
TX_REC_LEN = 0
TX_REC_LEN_SIZE = 2
TX_REC_DPORT = 2
TX_REC_DPORT_SIZE = 2
TX_REC_DIP = 4
TX_REC_DIP_SIZE = 4
TX_HDR = 8
TX_REC = {"LEN": (0, 2), "DPORT": (2, 2), "DIP": (4, 4)}

# the accio_ict_row page a process maps: register offsets; _BYTES: an array's size
ROW_STATE = 0
ROW_LOCAL = 8
ROW_REMOTE = 16
ROW_OWNER_ASID = 24
ROW_OWNER_COOKIE = 32
ROW_DST_MAC = 40
ROW_RX_BASE = 48
ROW_RX_SIZE = 56
ROW_RX_WPTR = 64
ROW_RX_RPTR = 72
ROW_TX_BASE = 80
ROW_TX_SIZE = 88
ROW_TX_WPTR = 96
ROW_TX_RPTR = 104
ROW_DOORBELL = 112
ROW_RX_PKTS = 128
ROW_RX_BYTES = 136
ROW_RX_DROPS = 144
ROW_TX_PKTS = 152
ROW_TX_BYTES = 160
ROW_TX_ERRORS = 168
ROW_PROT_FAULTS = 176
ROW_MMIO_TX_NEXT = 184
ROW_MMIO_TX_ERRORS = 192
ROW_TX_TSTAMP = 200
ROW_ROCE_QPN = 208
ROW_MMIO_TX = 2048
ROW_MMIO_TX_BYTES = 2048

REC_ALIGN = 8
MAX_PAYLOAD = 1472
ROCE_PORT = 4791
