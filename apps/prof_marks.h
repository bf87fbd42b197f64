/* SPDX-License-Identifier: MIT */
/*
 * Marks for eval's instruction counter (eval/prof/accio_prof.c): on RISC-V,
 * instructions that do nothing (slti x0, x0, N) and that the TCG plugin
 * reads as the start and end of a measured window (stage breakdown) or of
 * a whole measurement (span: every hart's instructions, for busy shares).
 * Elsewhere they compile to nothing.
 */
#ifndef ACCIO_PROF_MARKS_H
#define ACCIO_PROF_MARKS_H

static inline void window_open(void)
{
#if defined(__riscv)
	__asm__ volatile(".4byte 0x00102013" ::: "memory");	/* slti x0, x0, 1 */
#endif
}

static inline void window_close(void)
{
#if defined(__riscv)
	__asm__ volatile(".4byte 0x00202013" ::: "memory");	/* slti x0, x0, 2 */
#endif
}

/* Inside a window: waiting, not work (a busy-wait); nothing counts until resumed. */
static inline void count_pause(void)
{
#if defined(__riscv)
	__asm__ volatile(".4byte 0x00302013" ::: "memory");	/* slti x0, x0, 3 */
#endif
}

static inline void count_resume(void)
{
#if defined(__riscv)
	__asm__ volatile(".4byte 0x00402013" ::: "memory");	/* slti x0, x0, 4 */
#endif
}

/* The whole measurement, for the profiler's busy count (every instruction). */
static inline void span_mark(int start)
{
#if defined(__riscv)
	if (start)
		__asm__ volatile(".4byte 0x00502013" ::: "memory");	/* slti x0, x0, 5 */
	else
		__asm__ volatile(".4byte 0x00602013" ::: "memory");	/* slti x0, x0, 6 */
#endif
}

#endif
