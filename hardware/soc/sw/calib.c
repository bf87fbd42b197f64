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
 *   doorbell_rx      doorbell (TX_WPTR and DOORBELL stores; the record was
 *                    written before) to the echoed record visible in the RX
 *                    ring (includes the wire's echo delay, --wire-delay)
 *   window_rx        the same, the datagram written into the MMIO window
 *   doorbell_rx_1k, window_rx_1k   the same with 1024-byte datagrams
 *   doorbell_irq     the same with the row suspended: doorbell to the wake-up
 *                    interrupt's handler running (the hart spins with
 *                    interrupts on; compare with doorbell_rx)
 * Each figure is the median of ROUNDS runs.
 */
#include "soc.h"

#define ROW	5
#define ASID	9
#define ROUNDS	15
/* the MMIO transmit window, in bytes */
#define WIN	(ACCIO_UNCORE_ROW_MMIO_TX_COUNT * 8)

#include "ring.h"

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

static uint64_t doorbell_path(unsigned int len)
{
	uint64_t v[ROUNDS];
	int r;

	for (r = 0; r < ROUNDS; r++) {
		uint64_t a;

		tx_prepare(len);
		a = rdcycle();
		tx_ring_doorbell();
		wait_record();
		v[r] = rdcycle() - a;
		consume();
	}
	return median(v, ROUNDS);
}

/* a message in the MMIO window: its length word, then 8-byte stores */
static uint64_t window_path(unsigned int len)
{
	static uint64_t next;
	uint64_t v[ROUNDS];
	int r;

	for (r = 0; r < ROUNDS; r++) {
		uint64_t a, b;
		unsigned int i;

		a = rdcycle();
		mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_MMIO_TX + next), (uint64_t)len << (8 * ACCIO_TX_REC_LEN));
		for (i = 0; i < len; i += 8)
			mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_MMIO_TX + (next + ACCIO_TX_HDR + i) % WIN),
				 0x0706050403020100ull + i * 0x0808080808080808ull);
		wait_record();
		b = rdcycle();
		v[r] = b - a;
		next = (next + ACCIO_TX_HDR + len) % WIN;	/* len: whole words */
		consume();
	}
	return median(v, ROUNDS);
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
	uint64_t v[ROUNDS];
	int r;

	nic_up();
	mmio_w64(SOC_UNCORE_K + ACCIO_UNCORE_CTRL, 1);
	row_program(ROW, 5000, 7000, ASID, rx_ring, sizeof(rx_ring), tx_ring, sizeof(tx_ring),
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
	putnum("doorbell_rx", doorbell_path(64));
	putnum("doorbell_rx_1k", doorbell_path(1024));
	putnum("window_rx", window_path(64));
	putnum("window_rx_1k", window_path(1024));

	/* the wake-up interrupt: spin with interrupts on, the handler stamps */
	mmio_w32(SOC_PLIC + 4 * SOC_IRQ_WAKE(0), 1);
	mmio_w32(SOC_PLIC + 0x2000, 1u << SOC_IRQ_WAKE(0));
	mmio_w32(SOC_PLIC + 0x200000, 0);
	__asm__ volatile("csrw mtvec, %0" :: "r"((uintptr_t)trap_entry));
	__asm__ volatile("csrs mie, %0" :: "r"(1ul << 11));
	for (r = 0; r < ROUNDS; r++) {
		uint64_t a;

		mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_STATE),
			 ACCIO_UNCORE_ROW_STATE_ENABLED_MASK | ACCIO_UNCORE_ROW_STATE_ACCEL_MASK |
			 ACCIO_UNCORE_ROW_STATE_RX_SUSP_MASK | ACCIO_UNCORE_ROW_STATE_INTR_MASK |
			 1ull << 8);
		irq_at = 0;
		tx_prepare(64);
		a = rdcycle();
		tx_ring_doorbell();
		__asm__ volatile("csrs mstatus, 8" ::: "memory");
		while (!irq_at)
			;
		__asm__ volatile("csrc mstatus, 8" ::: "memory");
		v[r] = irq_at - a;
		wait_record();
		consume();
	}
	putnum("doorbell_irq", median(v, ROUNDS));
	return 0;
}
