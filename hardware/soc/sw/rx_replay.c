// SPDX-License-Identifier: MIT
/*
 * rx_replay: receive what the harness's wire replays (--wire replay:FILE):
 * row 3 takes datagrams from 10.0.2.2:7000 to 10.0.2.15:5000; the program
 * marks 1 (the harness then sends the file's frames), waits for COUNT
 * records and prints each one's length and payload, then the row's and the
 * uncore's counters (malformed frames and ICT misses go elsewhere); with
 * the NIC in front of the uncore, the frame no row takes lands in a buffer
 * posted to the NIC, and its payload is printed too.
 */
#include "soc.h"

#define ROW	3
#define COUNT	2

static uint8_t rx_ring[4096] __attribute__((aligned(4096)));
static uint8_t tx_ring[4096] __attribute__((aligned(4096)));
#if defined(SOC_NIC) && !defined(SOC_QEMU)
static uint8_t nic_buf[2048] __attribute__((aligned(64)));
#endif

int main(void)
{
	uint64_t rptr = 0, t0;
	unsigned int k, i;

	mmio_w64(SOC_UNCORE_K + ACCIO_UNCORE_CTRL, 1);
	nic_up();
#if defined(SOC_NIC) && !defined(SOC_QEMU)
	mmio_w64(SOC_NIC + ACCIO_NIC_RECV_REQ, (uintptr_t)nic_buf);
#endif
	row_program(ROW, 5000, 7000, 7, rx_ring, sizeof(rx_ring), tx_ring, sizeof(tx_ring),
		    ACCIO_UNCORE_ROW_STATE_ENABLED_MASK | ACCIO_UNCORE_ROW_STATE_ACCEL_MASK);
	mark(1);
	for (k = 0; k < COUNT; k++) {
		uint8_t *r = rx_ring + (rptr & 4095);
		unsigned int n;

		while (mmio_r64(row_k(ROW, ACCIO_UNCORE_ROW_RX_WPTR)) == rptr)
			;
		n = REC_GET(r, RX_REC_LEN);
		putnum("record_len", n);
		puts_("record=");
		for (i = 0; i < n; i++)
			putch(r[ACCIO_RX_HDR + i]);
		putch('\n');
		rptr += REC_PAD(ACCIO_RX_HDR + n);
		mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_RX_RPTR), rptr);
	}
	/* let the frames behind them arrive */
	for (t0 = rdcycle(); rdcycle() - t0 < 20000;)
		;
	putnum("rx_pkts", mmio_r64(row_k(ROW, ACCIO_UNCORE_ROW_RX_PKTS)));
	putnum("malformed", mmio_r64(SOC_UNCORE_K + ACCIO_UNCORE_RX_MALFORMED));
	putnum("ict_misses", mmio_r64(SOC_UNCORE_K + ACCIO_UNCORE_ICT_MISSES));
#if defined(SOC_NIC) && !defined(SOC_QEMU)
	{
		uint64_t c = mmio_r64(SOC_NIC + ACCIO_NIC_RECV_COMP);
		unsigned int n = c & ACCIO_NIC_RECV_COMP_LEN_MASK;
		unsigned int end = 34 + (nic_buf[38] << 8 | nic_buf[39]);

		putnum("nic_runts", mmio_r64(SOC_NIC + ACCIO_NIC_RX_DROP_RUNT));
		putnum("nic_len", c & ACCIO_NIC_RECV_COMP_VALID_MASK ? n : 0);
		puts_("nic_payload=");
		for (i = 42; c & ACCIO_NIC_RECV_COMP_VALID_MASK && i < n && i < end; i++)
			putch(nic_buf[i]);
		putch('\n');
	}
#endif
	return 0;
}
