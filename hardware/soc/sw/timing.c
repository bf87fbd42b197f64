// SPDX-License-Identifier: MIT
/*
 * timing: microbenchmarks that each isolate one cost of a Rocket core and
 * its memory, run on the RTL SoC (soc-sim1 --dram-latency N) and on QEMU in
 * the Rocket timing mode (hardware/timing), to calibrate the latter
 * (eval/bench_timing.py). Prints, for each, "NAME=CYCLES" and
 * "NAME_ops=COUNT" (rdcycle: core cycles on the SoC, nanoseconds under
 * QEMU's -icount, which the script divides by the time of an instruction):
 *   chase_l1    dependent loads, one per 64-byte line, over 8 KiB (in L1)
 *   chase_mem   the same over 512 KiB (every load misses L1)
 *   copy_l1     8-byte words copied, 4 KiB to 4 KiB, both in L1
 *   load_io     uncached loads from the uncore's ID register
 *   store_io    uncached stores to a row register of the uncore
 *   irq         a software interrupt: the store that raises it (CLINT
 *               MSIP), the handler that clears it, mret
 *   trap        ecall to a machine-mode handler and mret back
 *   mul, div    dependent 64-bit multiplies, divides
 *   ring_read   the 10 words of a 64-byte datagram's record that the
 *               uncore's DMA wrote into the RX ring (its lines were in L1
 *               before; the write invalidated them), per word
 *   branch      a loop whose one branch follows a pseudo-random bit
 *               (xorshift), taken half the time
 * Each figure is the minimum of ROUNDS - 1 runs (3), after a warm-up; the L1
 * benchmarks first bring their data back into L1.
 */
#include "soc.h"

#define ROW	5
#define ASID	9
#include "ring.h"

#ifndef L1_LINES
#define L1_LINES	128		/* 8 KiB */
#endif
#ifndef MEM_LINES
#define MEM_LINES	8192		/* 512 KiB */
#endif
#ifndef ROUNDS
#define ROUNDS		4		/* the first warms up */
#endif
#define CHASE_LOADS	4096

struct line { struct line *next; uint64_t pad[7]; };

static struct line l1set[L1_LINES] __attribute__((aligned(64)));
static struct line memset_[MEM_LINES] __attribute__((aligned(64)));
static uint64_t src[512], dst[512];
static uint32_t order[MEM_LINES];

static uint64_t lcg = 88172645463325252ull;

static uint64_t rnd(void)
{
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	return lcg >> 33;
}

/* one random cycle through all n lines */
static struct line *permute(struct line *l, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		unsigned int j = rnd() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < n; i++)
		l[order[i]].next = &l[order[(i + 1) % n]];
	return &l[order[0]];
}

static struct line *chase(struct line *p, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i += 8) {
		__asm__ volatile(
			"ld %0, 0(%0)\n\tld %0, 0(%0)\n\tld %0, 0(%0)\n\tld %0, 0(%0)\n\t"
			"ld %0, 0(%0)\n\tld %0, 0(%0)\n\tld %0, 0(%0)\n\tld %0, 0(%0)"
			: "+r"(p) : : "memory");
	}
	return p;
}

static void copy(uint64_t *d, const uint64_t *s, unsigned int words)
{
	unsigned int i;

	for (i = 0; i < words; i += 4) {
		uint64_t a = s[i], b = s[i + 1], c = s[i + 2], e = s[i + 3];

		__asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(e));
		d[i] = a;
		d[i + 1] = b;
		d[i + 2] = c;
		d[i + 3] = e;
	}
}

#define CLINT_MSIP	0x02000000UL	/* hart 0's, on both SoCs and QEMU's virt */

/* an ecall returns after itself; the software interrupt is cleared */
void trap_entry(void) __attribute__((naked, aligned(4)));
void trap_entry(void)
{
	__asm__ volatile(
		"csrw mscratch, t0\n\t"
		"csrr t0, mcause\n\t"
		"bltz t0, 1f\n\t"
		"csrr t0, mepc\n\t"
		"addi t0, t0, 4\n\t"
		"csrw mepc, t0\n\t"
		"csrr t0, mscratch\n\t"
		"mret\n"
		"1:\tli t0, 0x02000000\n\t"
		"sw zero, 0(t0)\n\t"
		"csrr t0, mscratch\n\t"
		"mret");
}

/* the echo of a 64-byte datagram, read after the engine's DMA wrote it */
static uint64_t ring_read(uint64_t *sink)
{
	uint64_t t, sum = 0;
	unsigned int i;

#define WORD(i) (*(volatile uint64_t *)(rx_ring + ((rx_rptr + (i)) & (sizeof(rx_ring) - 1))))
	for (i = 0; i < ACCIO_RX_HDR + 64; i += 8)	/* the lines in L1 first */
		sum += WORD(i);
	tx_prepare(64);
	tx_ring_doorbell();
	wait_record();
	t = rdcycle();
	for (i = 0; i < ACCIO_RX_HDR + 64; i += 8)
		sum += WORD(i);
	t = rdcycle() - t;
#undef WORD
	consume();
	*sink += sum;
	return t;
}

static uint64_t best[16];
static const char *names[16];
static uint64_t opcount[16];
static int nbench;

static void record(int k, const char *name, uint64_t ops, uint64_t cycles)
{
	if (k >= nbench)
		nbench = k + 1;
	names[k] = name;
	opcount[k] = ops;
	if (!best[k] || cycles < best[k])
		best[k] = cycles;
}

#define RUN(k, name, ops, body) do {				\
	uint64_t t0 = rdcycle();				\
	body;							\
	record(k, name, ops, rdcycle() - t0);			\
} while (0)

int main(void)
{
	struct line *a = permute(l1set, L1_LINES);
	struct line *m = permute(memset_, MEM_LINES);
	uint64_t x = 0x123456789abcdefull, y = 0xfedcba987654321ull, sink = 0, xs = 1;
	unsigned int i;
	int round;

	for (i = 0; i < 512; i++)
		src[i] = rnd();
	a = chase(a, 2 * L1_LINES);
	copy(dst, src, 512);
	nic_up();
	mmio_w64(SOC_UNCORE_K + ACCIO_UNCORE_CTRL, 1);
	row_program(ROW, 5000, 7000, ASID, rx_ring, sizeof(rx_ring), tx_ring, sizeof(tx_ring),
		    ACCIO_UNCORE_ROW_STATE_ENABLED_MASK | ACCIO_UNCORE_ROW_STATE_ACCEL_MASK);
	ctx_set(0, ASID);
	for (round = 0; round < ROUNDS; round++) {
		int keep = round > 0;		/* round 0 warms up */

		a = chase(a, 2 * L1_LINES);	/* back in L1 */
		RUN(0, "chase_l1", CHASE_LOADS, a = chase(a, CHASE_LOADS));
		RUN(1, "chase_mem", CHASE_LOADS, m = chase(m, CHASE_LOADS));
		copy(dst, src, 512);
		RUN(2, "copy_l1", 512 * 8, for (i = 0; i < 8; i++) copy(dst, src, 512));
		RUN(3, "load_io", 256, for (i = 0; i < 256; i++)
			sink += mmio_r64(SOC_UNCORE_K + ACCIO_UNCORE_ID));
		RUN(8, "store_io", 256, for (i = 0; i < 256; i++)
			mmio_w64(SOC_UNCORE_K + ACCIO_UNCORE_ROW_BASE + ACCIO_UNCORE_ROW_OWNER_COOKIE, i));
		__asm__ volatile("csrs mie, %0\n\tcsrs mstatus, 8" :: "r"(1ul << 3) : "memory");
		RUN(9, "irq", 256, for (i = 0; i < 256; i++)
			mmio_w32(CLINT_MSIP, 1));
		__asm__ volatile("csrc mstatus, 8\n\tcsrc mie, %0" :: "r"(1ul << 3) : "memory");
		record(10, "ring_read", 10, ring_read(&sink));
		RUN(4, "trap", 256, for (i = 0; i < 256; i++)
			__asm__ volatile("ecall" ::: "memory"));
		RUN(5, "mul", 1024, for (i = 0; i < 1024; i += 4)
			__asm__ volatile("mul %0, %0, %1\n\tmul %0, %0, %1\n\t"
					 "mul %0, %0, %1\n\tmul %0, %0, %1"
					 : "+r"(x) : "r"(y)));
		RUN(6, "div", 256, for (i = 0; i < 256; i += 4)
			__asm__ volatile("divu %0, %1, %0\n\tdivu %0, %1, %0\n\t"
					 "divu %0, %1, %0\n\tdivu %0, %1, %0"
					 : "+r"(x) : "r"(y | 1)));
		RUN(7, "branch", 4096, for (i = 0; i < 4096; i++) {
			xs ^= xs << 13;
			xs ^= xs >> 7;
			xs ^= xs << 17;
			__asm__ volatile("andi t0, %1, 1\n\tbeqz t0, 1f\n\taddi %0, %0, 1\n1:"
					 : "+r"(sink) : "r"(xs) : "t0");
		});
		if (!keep)
			for (i = 0; i < (unsigned int)nbench; i++)
				best[i] = 0;
	}
	for (i = 0; i < (unsigned int)nbench; i++) {
		char key[32];
		unsigned int n = 0;
		const char *s = names[i];

		putnum(names[i], best[i]);
		while (*s && n < sizeof(key) - 5)
			key[n++] = *s++;
		key[n++] = '_';
		key[n++] = 'o';
		key[n++] = 'p';
		key[n++] = 's';
		key[n] = 0;
		putnum(key, opcount[i]);
	}
	putnum("sink", (sink ^ x ^ (uint64_t)a ^ (uint64_t)m) & 1);
	return 0;
}
