// SPDX-License-Identifier: MIT
/*
 * spin: a fixed workload on every hart (a checksum over a 16 KiB buffer per
 * hart, ROUNDS times: loads, stores, ALU, branches, all in the L1 after the
 * first round), for the simulator's speed and the core's IPC. Hart 0 waits
 * for the others, prints its cycles and retired instructions, exits 0.
 */
#include "soc.h"

#define MAXH	4
#define WORDS	2048
#define ROUNDS	40

static uint64_t buf[MAXH][WORDS];
static volatile uint64_t sums[MAXH];
static volatile int done[MAXH];

static uint64_t work(unsigned int h)
{
	uint64_t s = h, i, r;

	for (i = 0; i < WORDS; i++)
		buf[h][i] = i * 2654435761u + h;
	for (r = 0; r < ROUNDS; r++)
		for (i = 0; i < WORDS; i++) {
			s = (s << 1 | s >> 63) ^ buf[h][i];
			buf[h][i] = s + r;
		}
	return s;
}

void hart_main(unsigned long h)
{
	if (h >= MAXH)
		return;
	sums[h] = work(h);
	fence();
	done[h] = 1;
}

int main(void)
{
	uint64_t c0, i0, c1, i1, cfg;
	unsigned int h, harts;

	cfg = mmio_r64(SOC_UNCORE_K + ACCIO_UNCORE_CONFIG);
	harts = (cfg & ACCIO_UNCORE_CONFIG_HARTS_MASK) >> ACCIO_UNCORE_CONFIG_HARTS_SHIFT;
	__asm__ volatile("rdcycle %0; rdinstret %1" : "=r"(c0), "=r"(i0));
	sums[0] = work(0);
	__asm__ volatile("rdcycle %0; rdinstret %1" : "=r"(c1), "=r"(i1));
	for (h = 1; h < harts && h < MAXH; h++)
		while (!done[h])
			;
	putnum("work_cycles", c1 - c0);
	putnum("work_instret", i1 - i0);
	return 0;
}
