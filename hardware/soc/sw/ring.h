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
	unsigned int n = r[0] | r[1] << 8;

	rx_rptr += (16 + n + 7) & ~7u;
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

	for (i = 0; i < 8 + len; i++)
		tx_ring[(tx_wptr + i) & (sizeof(tx_ring) - 1)] =
			i == 0 ? (uint8_t)len : i == 1 ? (uint8_t)(len >> 8) : i < 8 ? 0 : (uint8_t)i;
	tx_wptr += (8 + len + 7) & ~7u;
	fence();
}

/* the doorbell: what the clock measures */
static inline void tx_ring_doorbell(void)
{
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_TX_WPTR), tx_wptr);
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_DOORBELL), 1);
}

#endif
