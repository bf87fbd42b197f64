/* SPDX-License-Identifier: MIT */
/*
 * One row's rings for a bare-metal program (calib.c, timing.c): the
 * program defines ROW before it includes this. Each program has its own
 * rings and pointers.
 */
#ifndef ACCIO_SOC_RING_H
#define ACCIO_SOC_RING_H

static uint8_t rx_ring[8192] __attribute__((aligned(4096)));
static uint8_t tx_ring[8192] __attribute__((aligned(4096)));
static uint64_t tx_wptr, rx_rptr;

static inline void consume(void)
{
	uint8_t *r = rx_ring + (rx_rptr & (sizeof(rx_ring) - 1));
	unsigned int n = REC_GET(r, RX_REC_LEN);

	rx_rptr += REC_PAD(ACCIO_RX_HDR + n);
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_RX_RPTR), rx_rptr);
}

static inline void wait_record(void)
{
	while (mmio_r64(row_u(ROW, ACCIO_UNCORE_ROW_RX_WPTR)) == rx_rptr)
		;
}

/* a TX record (written before any clock starts; it may wrap around the
 * ring's end, as the engine reads it) */
static inline void tx_prepare(unsigned int len)
{
	unsigned int i;

	/* the header: the 2-byte length, zeros elsewhere (the row's remote) */
	_Static_assert(ACCIO_TX_REC_LEN_SIZE == 2, "a 2-byte TX length");
	for (i = 0; i < ACCIO_TX_HDR + len; i++)
		tx_ring[(tx_wptr + i) & (sizeof(tx_ring) - 1)] =
			i == ACCIO_TX_REC_LEN ? (uint8_t)len :
			i == ACCIO_TX_REC_LEN + 1 ? (uint8_t)(len >> 8) :
			i < ACCIO_TX_HDR ? 0 : (uint8_t)i;
	tx_wptr += REC_PAD(ACCIO_TX_HDR + len);
	fence();
}

/* the doorbell: what the clock measures */
static inline void tx_ring_doorbell(void)
{
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_TX_WPTR), tx_wptr);
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_DOORBELL), 1);
}

#endif
