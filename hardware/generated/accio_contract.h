/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/* Generated from the SystemRDL in hardware/regmap by generate.py; do not edit. */
/*
 * The Accio hardware/software contract besides the register map
 * (accio_offsets.h): control event types, ring record layouts, the
 * offsets of the row page a process maps and the engine's shared
 * numbers. Record fields are little endian; each record field has its
 * byte offset from the record's start and its _SIZE in bytes; the
 * payload follows the header (_HDR bytes). Plain decimal values and no
 * includes: the kernel and user space use it unchanged.
 */
#ifndef ACCIO_CONTRACT_H
#define ACCIO_CONTRACT_H

enum accio_event {
	/* The link came up. ROW 0xffff, INFO 0. */
	ACCIO_EV_LINK_UP = 1,
	/* The link went down. ROW 0xffff, INFO 0. */
	ACCIO_EV_LINK_DOWN = 2,
	/*
	 * A user-mode access was refused (wrong ASID or kernel-only field).
	 * ROW the row (0xffff outside the rows), INFO the offset within the
	 * page, with the ASID from bit 12.
	 */
	ACCIO_EV_PROTECTION = 3,
	/*
	 * A datagram for a row was dropped: its RX ring had no room, or its
	 * DMA write failed. INFO the payload length.
	 */
	ACCIO_EV_RX_RING_FULL = 4,
	/*
	 * A row's TX ring was refused: bad ring size or pointers (INFO 0),
	 * or a bad record, where the engine stops (INFO TX_RPTR).
	 */
	ACCIO_EV_TX_RING_ERROR = 5,
	/*
	 * A UDP datagram matched no row (with CTRL.MISS_EVENTS). ROW 0xffff,
	 * INFO the destination port.
	 */
	ACCIO_EV_ICT_MISS = 6,
	/*
	 * A doorbell or MMIO transmit store for a row that is not enabled
	 * and accelerated, or while the engine is off. INFO 0, or the window
	 * offset of the store.
	 */
	ACCIO_EV_DOORBELL_DISABLED = 7,
	/* An access beyond the last row. ROW 0xffff, INFO the row index. */
	ACCIO_EV_ROW_RANGE = 8,
	/*
	 * A direct MMIO transmit message was refused: a length above the
	 * maximum payload, no destination, or a store to a byte not yet
	 * released. INFO the window offset.
	 */
	ACCIO_EV_MMIO_TX_ERROR = 9,
};

/* RX ring record (accio_rx_rec) */
/* LEN: UDP payload length in bytes. */
#define ACCIO_RX_REC_LEN 0
#define ACCIO_RX_REC_LEN_SIZE 2
/* SPORT: UDP source port. */
#define ACCIO_RX_REC_SPORT 2
#define ACCIO_RX_REC_SPORT_SIZE 2
/* SIP: IPv4 source address (host order). */
#define ACCIO_RX_REC_SIP 4
#define ACCIO_RX_REC_SIP_SIZE 4
/* TSTAMP: Hardware time of the frame's arrival, in ns. */
#define ACCIO_RX_REC_TSTAMP 8
#define ACCIO_RX_REC_TSTAMP_SIZE 8
/* TOS: The IPv4 header's TOS byte (DSCP and ECN), as received. */
#define ACCIO_RX_REC_TOS 16
#define ACCIO_RX_REC_TOS_SIZE 1
/* TTL: The IPv4 header's TTL, as received. */
#define ACCIO_RX_REC_TTL 17
#define ACCIO_RX_REC_TTL_SIZE 1
/* RSVD: Reserved: 0. */
#define ACCIO_RX_REC_RSVD 18
#define ACCIO_RX_REC_RSVD_SIZE 2
/*
 * DIP: IPv4 destination address (host order): the row's local address, or
 * for a row bound to any address (LOCAL.IP 0) the address the datagram was
 * sent to.
 */
#define ACCIO_RX_REC_DIP 20
#define ACCIO_RX_REC_DIP_SIZE 4
#define ACCIO_RX_HDR 24

/* TX ring record and MMIO transmit message (accio_tx_rec) */
/* LEN: UDP payload length in bytes, at most the uncore's accio_max_payload. */
#define ACCIO_TX_REC_LEN 0
#define ACCIO_TX_REC_LEN_SIZE 2
/* DPORT: UDP destination port; 0: the row's REMOTE.PORT. */
#define ACCIO_TX_REC_DPORT 2
#define ACCIO_TX_REC_DPORT_SIZE 2
/* DIP: IPv4 destination address (host order); 0: the row's REMOTE.IP. */
#define ACCIO_TX_REC_DIP 4
#define ACCIO_TX_REC_DIP_SIZE 4
#define ACCIO_TX_HDR 8

/*
 * The accio_ict_row page a process maps: register offsets; _BYTES, the size
 * of a register array
 */
#define ACCIO_ROW_STATE 0
#define ACCIO_ROW_LOCAL 8
#define ACCIO_ROW_REMOTE 16
#define ACCIO_ROW_OWNER_ASID 24
#define ACCIO_ROW_OWNER_COOKIE 32
#define ACCIO_ROW_DST_MAC 40
#define ACCIO_ROW_RX_BASE 48
#define ACCIO_ROW_RX_SIZE 56
#define ACCIO_ROW_RX_WPTR 64
#define ACCIO_ROW_RX_RPTR 72
#define ACCIO_ROW_TX_BASE 80
#define ACCIO_ROW_TX_SIZE 88
#define ACCIO_ROW_TX_WPTR 96
#define ACCIO_ROW_TX_RPTR 104
#define ACCIO_ROW_DOORBELL 112
#define ACCIO_ROW_RX_PKTS 128
#define ACCIO_ROW_RX_BYTES 136
#define ACCIO_ROW_RX_DROPS 144
#define ACCIO_ROW_TX_PKTS 152
#define ACCIO_ROW_TX_BYTES 160
#define ACCIO_ROW_TX_ERRORS 168
#define ACCIO_ROW_PROT_FAULTS 176
#define ACCIO_ROW_MMIO_TX_NEXT 184
#define ACCIO_ROW_MMIO_TX_ERRORS 192
#define ACCIO_ROW_TX_TSTAMP 200
#define ACCIO_ROW_ROCE_QPN 208
#define ACCIO_ROW_MMIO_TX 2048
#define ACCIO_ROW_MMIO_TX_BYTES 2048

/* Shared numbers (accio_* properties of UNCORE) */
#define ACCIO_REC_ALIGN 8
#define ACCIO_MAX_PAYLOAD 1472
#define ACCIO_ROCE_PORT 4791

#endif /* ACCIO_CONTRACT_H */
