// SPDX-License-Identifier: MIT
/*
 * test_harts: every hart of the SoC owns a row and a different ASID.
 * Hart 0 (the kernel's part) programs row h for hart h with owner ASID
 * 20 + h; each hart writes its own CTX[h] and then, through the user alias:
 *   - sends a datagram by doorbell and receives its echo on its own row
 *     (passes only if the bridge tells the harts apart by AXI ID and hands
 *     the uncore CTX of the issuing hart);
 *   - reads the next hart's row: refused (poison value), counted there;
 *   - hart 2 also sleeps in wfi until its row's wake-up interrupt, routed
 *     by the PLIC to its own M-mode context, names its row.
 * Hart 0 collects the results and exits 0 when every hart passed.
 */
#include "soc.h"

#define MAXH	4

static uint8_t rx_ring[MAXH][4096] __attribute__((aligned(4096)));
static uint8_t tx_ring[MAXH][4096] __attribute__((aligned(4096)));
static volatile int go, done[MAXH], result[MAXH];
static int nharts;

static int harts(void)
{
	uint64_t cfg = mmio_r64(SOC_UNCORE_K + ACCIO_UNCORE_CONFIG);

	return (int)((cfg & ACCIO_UNCORE_CONFIG_HARTS_MASK) >> ACCIO_UNCORE_CONFIG_HARTS_SHIFT);
}

static int echo(unsigned int h, const char *msg, unsigned int len, int sleep)
{
	uint8_t *t = tx_ring[h], *r = rx_ring[h];
	unsigned int i, n;
	uint64_t v;

	REC_PUT(t, TX_REC_LEN, len);
	REC_PUT(t, TX_REC_DPORT, 0);
	REC_PUT(t, TX_REC_DIP, 0);
	for (i = 0; i < len; i++)
		t[ACCIO_TX_HDR + i] = msg[i];
	fence();
	mmio_w64(row_u(h, ACCIO_UNCORE_ROW_TX_WPTR), REC_PAD(ACCIO_TX_HDR + len));
	mmio_w64(row_u(h, ACCIO_UNCORE_ROW_DOORBELL), 1);
	if (sleep) {
		uint32_t claim;

		do {
			__asm__ volatile("wfi");
			__asm__ volatile("csrr %0, mip" : "=r"(v));
		} while (!(v & (1ul << 11)));
		/* hart h's M-mode context is 2h (each hart has M and S) */
		claim = mmio_r32(SOC_PLIC + 0x200004 + 0x1000 * 2 * h);
		v = mmio_r64(hart_k(h, ACCIO_UNCORE_HART_RQ_POP));
		mmio_w64(hart_k(h, ACCIO_UNCORE_HART_WAKE), 1);
		mmio_w32(SOC_PLIC + 0x200004 + 0x1000 * 2 * h, claim);
		if (claim != SOC_IRQ_WAKE(h) || !(v & ACCIO_UNCORE_HART_RQ_POP_VALID_MASK) ||
		    (v & ACCIO_UNCORE_HART_RQ_POP_ROW_MASK) != h)
			return 0;
	}
	while (mmio_r64(row_u(h, ACCIO_UNCORE_ROW_RX_WPTR)) == 0)
		;
	n = REC_GET(r, RX_REC_LEN);
	if (n != len)
		return 0;
	for (i = 0; i < len; i++)
		if (r[ACCIO_RX_HDR + i] != (uint8_t)msg[i])
			return 0;
	mmio_w64(row_u(h, ACCIO_UNCORE_ROW_RX_RPTR), REC_PAD(ACCIO_RX_HDR + len));
	return 1;
}

static void run(unsigned int h)
{
	char msg[] = "from hart 0";
	int ok;

	msg[10] = '0' + h;
	__asm__ volatile("csrs mie, %0" :: "r"(1ul << 11));	/* MEIE for wfi */
	mmio_w64(SOC_CTX + 8 * h, 20 + h);
	ok = echo(h, msg, sizeof(msg) - 1, h == 2);
	/* the next hart's row: not this address space's */
	ok = ok && mmio_r64(row_u((h + 1) % nharts, ACCIO_UNCORE_ROW_RX_SIZE)) ==
		   0xbadacce55badacceull;
	result[h] = ok;
	fence();
	done[h] = 1;
}

void hart_main(unsigned long h)
{
	if (h >= MAXH)
		return;
	while (!go)
		;
	run(h);
}

int main(void)
{
	unsigned int h;
	int failures = 0;

	nharts = harts();
	if (nharts > MAXH)
		nharts = MAXH;
	putnum("harts", nharts);
	mmio_w64(SOC_UNCORE_K + ACCIO_UNCORE_CTRL, 1);
	for (h = 0; h < (unsigned int)nharts; h++) {
		row_program(h, 6000 + h, 7, 20 + h, rx_ring[h], 4096, tx_ring[h], 4096,
			    ACCIO_UNCORE_ROW_STATE_ENABLED_MASK | ACCIO_UNCORE_ROW_STATE_ACCEL_MASK |
			    (h == 2 ? ACCIO_UNCORE_ROW_STATE_RX_SUSP_MASK |
				      ACCIO_UNCORE_ROW_STATE_INTR_MASK | 1ull << 8 | 2ull << 16 : 0));
	}
	if (nharts > 2) {
		/* hart 2's wake-up: source 4 to hart 2's M-mode context only */
		mmio_w32(SOC_PLIC + 4 * SOC_IRQ_WAKE(2), 1);
		mmio_w32(SOC_PLIC + 0x2000 + 0x80 * 4, 1u << SOC_IRQ_WAKE(2));
		mmio_w32(SOC_PLIC + 0x200000 + 0x1000 * 4, 0);
	}
	fence();
	go = 1;
	run(0);
	for (h = 0; h < (unsigned int)nharts; h++) {
		while (!done[h])
			;
		puts_(result[h] ? "ok   hart " : "FAIL hart ");
		putch('0' + h);
		puts_(": its row echoes under its ASID, the next hart's row refuses it");
		puts_(h == 2 ? ", woken by its interrupt\n" : "\n");
		failures += !result[h];
		if (mmio_r64(row_k(h, ACCIO_UNCORE_ROW_PROT_FAULTS)) != 1) {
			puts_("FAIL the refusal was not counted on the row of hart ");
			putch('0' + (h + nharts - 1) % nharts);
			putch('\n');
			failures++;
		}
	}
	putnum("failures", failures);
	return failures ? 1 : 0;
}
