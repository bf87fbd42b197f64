/* SPDX-License-Identifier: MIT */
/*
 * The marks of eval's instruction counter, its one definition: RISC-V
 * "slti x0, x0, N", a HINT that every core executes as a no-op (designated
 * for custom use), which the TCG plugins read (eval/prof/accio_prof.c, the
 * stage breakdown; hardware/timing/rocket_timing.c). Programs (apps/) mark
 * a window around each measured operation and a span around a whole
 * measurement; libaccio pauses the count around a busy-wait, which is
 * waiting, not work. Elsewhere than on RISC-V the marks compile to nothing.
 */
#ifndef ACCIO_PROF_MARKS_H
#define ACCIO_PROF_MARKS_H

#define ACCIO_MARK_OPEN		1	/* a window opens: every hart's work counts */
#define ACCIO_MARK_CLOSE	2	/* it closes */
#define ACCIO_MARK_PAUSE	3	/* inside a window: nothing counts until ... */
#define ACCIO_MARK_RESUME	4	/* ... resumed */
#define ACCIO_MARK_SPAN		5	/* a span starts: every instruction of every hart counts */
#define ACCIO_MARK_UNSPAN	6	/* it stops */

/* The instruction of mark n: slti x0, x0, n */
#define ACCIO_MARK_INSN(n)	(0x00002013u | (unsigned int)(n) << 20)

/* The mark a 32-bit instruction is, 0 if none. */
static inline unsigned int accio_mark_of(unsigned int insn)
{
	unsigned int n = insn >> 20;

	if (insn != ACCIO_MARK_INSN(n) || n < ACCIO_MARK_OPEN || n > ACCIO_MARK_UNSPAN)
		return 0;
	return n;
}

#if defined(__riscv)
/* Also a compiler barrier: the work stays on its side of the mark. */
#define ACCIO_MARK(n)	__asm__ volatile(".4byte %0" :: "i"(ACCIO_MARK_INSN(n)) : "memory")
#else
#define ACCIO_MARK(n)	do { } while (0)
#endif

static inline void window_open(void)
{
	ACCIO_MARK(ACCIO_MARK_OPEN);
}

static inline void window_close(void)
{
	ACCIO_MARK(ACCIO_MARK_CLOSE);
}

/* Inside a window: waiting, not work (a busy-wait); nothing counts until resumed. */
static inline void count_pause(void)
{
	ACCIO_MARK(ACCIO_MARK_PAUSE);
}

static inline void count_resume(void)
{
	ACCIO_MARK(ACCIO_MARK_RESUME);
}

/* The whole measurement, for the profiler's busy count (every instruction). */
static inline void span_mark(int start)
{
	if (start)
		ACCIO_MARK(ACCIO_MARK_SPAN);
	else
		ACCIO_MARK(ACCIO_MARK_UNSPAN);
}

#endif /* ACCIO_PROF_MARKS_H */
