/* SPDX-License-Identifier: MIT */
/*
 * Ordering between ring memory and a row's registers (uncached MMIO), for
 * libaccio and the verbs provider (verbs/): RISC-V fences on the I/O and
 * memory sets; a full barrier elsewhere (host builds of tests).
 */
#ifndef ACCIO_MMIO_FENCE_H
#define ACCIO_MMIO_FENCE_H

#if defined(__riscv)
#define ACCIO_FENCE(spec) __asm__ volatile("fence " spec ::: "memory")
#else
#define ACCIO_FENCE(spec) __sync_synchronize()
#endif

/* Ring stores reach memory before the MMIO store that publishes them. */
static inline void wmb_io(void)
{
	ACCIO_FENCE("w,o");
}

/* Ring loads after the MMIO load of the write pointer that showed them. */
static inline void rmb_io_inline(void)
{
	ACCIO_FENCE("i,r");
}

/* Ring loads done before the MMIO store that gives their space back. */
static inline void release_io(void)
{
	ACCIO_FENCE("r,o");
}

#endif
