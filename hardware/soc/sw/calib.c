// SPDX-License-Identifier: MIT
/*
 * calib: the costs of the uncore's paths as a Rocket core sees them, in core
 * cycles (rdcycle; never across a wfi, where the core's clock stops).
 * Prints key=value lines, read by eval/bench_soc.py:
 *   load_uncore      an uncached load from the uncore (global ID register)
 *   load_bridge      an uncached load the bridge answers itself (CTX[0])
 *   store_uncore     an uncached store to a row register
 *   store_bridge     an uncached store to CTX[0]
 *   rq_pop           popping the hart's ready queue (an empty one)
 *   doorbell_rx      doorbell store to the echoed record visible in the RX
 *                    ring (includes the wire's echo delay, --wire-delay)
 *   window_rx        the same, the datagram written into the MMIO window
 *   irq_after_record from the record being visible (polled) to the wake-up
 *                    interrupt's handler running, measured on a second datagram
 *                    whose arrival the hart spins for with interrupts on
 * Each figure is the median of ROUNDS runs.
 */
#include "soc.h"

#define ROW	5
#define ASID	9
#define ROUNDS	15

static uint8_t rx_ring[8192] __attribute__((aligned(4096)));
static uint8_t tx_ring[8192] __attribute__((aligned(4096)));
static uint64_t tx_wptr, rx_rptr;
static volatile uint64_t irq_at;

void trap_entry(void) __attribute__((interrupt("machine"), aligned(4)));
void trap_entry(void)
{
	uint32_t claim;

	irq_at = rdcycle();
	claim = mmio_r32(SOC_PLIC + 0x200004);
	mmio_r64(hart_k(0, ACCIO_UNCORE_HART_RQ_POP));
	mmio_w64(hart_k(0, ACCIO_UNCORE_HART_WAKE), 1);
	mmio_w32(SOC_PLIC + 0x200004, claim);
}

static uint64_t median(uint64_t *v, int n)
{
	int i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

static void consume(void)
{
	uint8_t *r = rx_ring + (rx_rptr & (sizeof(rx_ring) - 1));
	unsigned int n = r[0] | r[1] << 8;

	rx_rptr += (16 + n + 7) & ~7u;
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_RX_RPTR), rx_rptr);
}

static void wait_record(void)
{
	while (mmio_r64(row_u(ROW, ACCIO_UNCORE_ROW_RX_WPTR)) == rx_rptr)
		;
}

static void doorbell_send(unsigned int len)
{
	uint8_t *t = tx_ring + (tx_wptr & (sizeof(tx_ring) - 1));
	unsigned int i;

	t[0] = len;
	for (i = 1; i < 8 + len; i++)
		t[i] = i < 8 ? 0 : (uint8_t)i;
	tx_wptr += (8 + len + 7) & ~7u;
	fence();
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_TX_WPTR), tx_wptr);
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_DOORBELL), 1);
}

#define MEASURE(key, body)						\
	do {								\
		uint64_t v_[ROUNDS], a_, b_;				\
		int r_;							\
		for (r_ = 0; r_ < ROUNDS; r_++) {			\
			a_ = rdcycle();					\
			body;						\
			b_ = rdcycle();					\
			v_[r_] = b_ - a_;				\
		}							\
		putnum(key, median(v_, ROUNDS));			\
	} while (0)

int main(void)
{
	uint64_t next = 0, v[ROUNDS];
	int r;

	nic_up();
	mmio_w64(SOC_UNCORE_K + ACCIO_UNCORE_CTRL, 1);
	mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_LOCAL), 0x11ull << 48 | 5000ull << 32 | 0x0a00020f);
	mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_REMOTE), 7000ull << 32 | 0x0a000202);
	mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_OWNER_ASID), ASID);
	mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_DST_MAC), SOC_PEER_MAC);
	mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_RX_BASE), (uintptr_t)rx_ring);
	mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_RX_SIZE), sizeof(rx_ring));
	mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_TX_BASE), (uintptr_t)tx_ring);
	mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_TX_SIZE), sizeof(tx_ring));
	mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_STATE),
		 ACCIO_UNCORE_ROW_STATE_ENABLED_MASK | ACCIO_UNCORE_ROW_STATE_ACCEL_MASK);
	ctx_set(0, ASID);

	MEASURE("load_uncore", mmio_r64(SOC_UNCORE_K + ACCIO_UNCORE_ID));
	#ifndef SOC_QEMU
	MEASURE("load_bridge", mmio_r64(SOC_CTX));
#endif
	MEASURE("store_uncore", mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_OWNER_COOKIE), 1));
	#ifndef SOC_QEMU
	MEASURE("store_bridge", mmio_w64(SOC_CTX, ASID));
#endif
	MEASURE("rq_pop", mmio_r64(hart_k(0, ACCIO_UNCORE_HART_RQ_POP)));
	for (r = 0; r < ROUNDS; r++) {
		uint64_t a = rdcycle();

		doorbell_send(64);
		wait_record();
		v[r] = rdcycle() - a;
		consume();
	}
	putnum("doorbell_rx", median(v, ROUNDS));
	for (r = 0; r < ROUNDS; r++) {
		uint64_t a, b;
		uint8_t w[64];
		unsigned int i;

		for (i = 0; i < 64; i++)
			w[i] = (uint8_t)i;
		a = rdcycle();
		mmio_w64(row_u(ROW, 0x800 + next), 64);
		for (i = 0; i < 64; i += 8)
			mmio_w64(row_u(ROW, 0x808 + next + i), *(uint64_t *)&w[i]);
		wait_record();
		b = rdcycle();
		v[r] = b - a;
		next = (next + 72) % 2048;
		consume();
	}
	putnum("window_rx", median(v, ROUNDS));

	/* the wake-up interrupt: spin with interrupts on, the handler stamps */
	mmio_w32(SOC_PLIC + 4 * SOC_IRQ_WAKE(0), 1);
	mmio_w32(SOC_PLIC + 0x2000, 1u << SOC_IRQ_WAKE(0));
	mmio_w32(SOC_PLIC + 0x200000, 0);
	__asm__ volatile("csrw mtvec, %0" :: "r"((uintptr_t)trap_entry));
	__asm__ volatile("csrs mie, %0" :: "r"(1ul << 11));
	for (r = 0; r < ROUNDS; r++) {
		uint64_t polled, a;

		/* a: the record, polled; b: the same path, taken by interrupt */
		doorbell_send(64);
		a = rdcycle();
		wait_record();
		polled = rdcycle() - a;
		consume();
		mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_STATE),
			 ACCIO_UNCORE_ROW_STATE_ENABLED_MASK | ACCIO_UNCORE_ROW_STATE_ACCEL_MASK |
			 ACCIO_UNCORE_ROW_STATE_RX_SUSP_MASK | ACCIO_UNCORE_ROW_STATE_INTR_MASK |
			 1ull << 8);
		irq_at = 0;
		doorbell_send(64);
		a = rdcycle();
		__asm__ volatile("csrs mstatus, 8" ::: "memory");
		while (!irq_at)
			;
		__asm__ volatile("csrc mstatus, 8" ::: "memory");
		v[r] = irq_at - a > polled ? irq_at - a - polled : 0;
		wait_record();
		consume();
	}
	putnum("irq_after_record", median(v, ROUNDS));
	return 0;
}
