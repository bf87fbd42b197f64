// SPDX-License-Identifier: MIT
/*
 * hart_pingpong: two threads on two harts hand a token back and forth and
 * time every hand-over with the harts' own clocks (rdtime): the one-way
 * latency from one hart to the other, in both directions.
 *
 * usage: hart_pingpong [-a HART] [-b HART] [-n COUNT] [-w] [-g NS] [-s SEED]
 *   -a, -b  the two harts (default 1 and 2)
 *   -n      hand-overs (default 2000)
 *   -w      the receiver sleeps in the kernel (futex) until the sender
 *           wakes it: a wake-up on the other hart (an IPI from the
 *           sender's hart), where by default it spins on the token
 *   -g      before each hand-over the sender waits a pseudo-random 0..NS
 *           ns (default 20000), so that hand-overs fall at every phase of
 *           whatever else runs (timers, the other hart's turn)
 *   -s      the seed of those waits (default 1)
 *
 * The sender reads its clock, stores the time and then the token; the
 * receiver sees the token, reads its clock and takes the difference. With
 * spinning, that is the time a store takes to reach another hart plus a
 * few instructions, and on a platform that runs harts one after the other
 * it shows how far apart their clocks drift (it may be negative); with -w
 * it is the kernel's wake-up path across harts.
 *
 * Prints mode=spin|futex, harts=A,B and count=N, each on its own line,
 * and the latency's min/p50/p90/p99/max in ns over all 2 * N hand-overs (rdtime's
 * resolution: the devicetree's timebase-frequency).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct token {
	_Atomic uint32_t seq;		/* odd: a's turn ended, even: b's */
	uint32_t pad;
	_Atomic uint64_t sent;		/* the sender's clock at the store */
} __attribute__((aligned(64)));

static struct token tok;
static _Atomic int ready;
static int harts[2] = { 1, 2 }, futex_mode;
static long count = 2000;
static uint64_t gap_ticks, seed = 1;
static double ns_per_tick = 100.0;
static int64_t *lat[2];

static inline uint64_t now_ticks(void)
{
	uint64_t t;

#if defined(__riscv)
	__asm__ volatile("rdtime %0" : "=r"(t));
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t = ts.tv_sec * 1000000000ull + ts.tv_nsec;
#endif
	return t;
}

static void timebase(void)
{
	unsigned char b[4];
	FILE *f = fopen("/proc/device-tree/cpus/timebase-frequency", "rb");

#if !defined(__riscv)
	ns_per_tick = 1.0;
	if (f)
		fclose(f);
	return;
#endif
	if (f && fread(b, 1, 4, f) == 4) {
		uint32_t hz = (uint32_t)b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];

		if (hz)
			ns_per_tick = 1e9 / hz;
	}
	if (f)
		fclose(f);
}

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static void wait_for(uint32_t want)
{
	uint32_t v;

	while ((v = atomic_load_explicit(&tok.seq, memory_order_acquire)) != want) {
		if (futex_mode)
			syscall(SYS_futex, &tok.seq, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
	}
}

static void *side(void *arg)
{
	int me = (int)(long)arg;
	uint64_t s = seed * 2 + me, t;
	cpu_set_t set;
	long i;

	CPU_ZERO(&set);
	CPU_SET(harts[me], &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		perror("hart_pingpong: sched_setaffinity");
		exit(1);
	}
	/* both sides on their harts before the first hand-over */
	atomic_fetch_add(&ready, 1);
	while (atomic_load(&ready) < 2)
		;
	for (i = 0; i < count; i++) {
		/* a hands over with seq 2i+1, b answers with 2i+2 */
		if (me == 1) {
			wait_for(2 * i + 1);
			lat[1][i] = (int64_t)(now_ticks() -
					      atomic_load_explicit(&tok.sent, memory_order_relaxed));
		} else if (i > 0) {
			wait_for(2 * i);
			lat[0][i - 1] = (int64_t)(now_ticks() -
						  atomic_load_explicit(&tok.sent, memory_order_relaxed));
		}
		if (gap_ticks) {
			uint64_t until = now_ticks() + lcg(&s) % (gap_ticks + 1);

			while (now_ticks() < until)
				;
		}
		t = now_ticks();
		atomic_store_explicit(&tok.sent, t, memory_order_relaxed);
		atomic_store_explicit(&tok.seq, 2 * i + 1 + me, memory_order_release);
		if (futex_mode)
			syscall(SYS_futex, &tok.seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	if (me == 0) {
		wait_for(2 * count);
		lat[0][count - 1] = (int64_t)(now_ticks() -
					      atomic_load_explicit(&tok.sent, memory_order_relaxed));
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long gap_ns = 20000, n, i;
	pthread_t th[2];
	int64_t *all;
	int c;

	while ((c = getopt(argc, argv, "a:b:n:wg:s:")) != -1) {
		switch (c) {
		case 'a': harts[0] = atoi(optarg); break;
		case 'b': harts[1] = atoi(optarg); break;
		case 'n': count = atol(optarg); break;
		case 'w': futex_mode = 1; break;
		case 'g': gap_ns = atol(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: hart_pingpong [-a HART] [-b HART] [-n COUNT] "
				"[-w] [-g NS] [-s SEED]\n");
			return 2;
		}
	}
	if (count < 1 || gap_ns < 0 || harts[0] == harts[1] || harts[0] < 0 || harts[1] < 0) {
		fprintf(stderr, "hart_pingpong: need COUNT >= 1, GAP >= 0 and two different harts\n");
		return 2;
	}
	timebase();
	gap_ticks = (uint64_t)(gap_ns / ns_per_tick);
	lat[0] = calloc(count, sizeof(int64_t));
	lat[1] = calloc(count, sizeof(int64_t));
	all = calloc(2 * count, sizeof(int64_t));
	if (!lat[0] || !lat[1] || !all) {
		perror("hart_pingpong");
		return 1;
	}
	for (i = 0; i < 2; i++) {
		errno = pthread_create(&th[i], NULL, side, (void *)i);
		if (errno) {
			perror("hart_pingpong: pthread_create");
			return 1;
		}
	}
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	memcpy(all, lat[0], count * sizeof(int64_t));
	memcpy(all + count, lat[1], count * sizeof(int64_t));
	n = 2 * count;
	qsort(all, n, sizeof(int64_t), cmp);
#define NS(k) ((long)(all[k] * ns_per_tick))
	printf("mode=%s\nharts=%d,%d\ncount=%ld\n", futex_mode ? "futex" : "spin",
	       harts[0], harts[1], count);
	printf("oneway_min_ns=%ld\noneway_p50_ns=%ld\noneway_p90_ns=%ld\n"
	       "oneway_p99_ns=%ld\noneway_max_ns=%ld\n",
	       NS(0), NS(n / 2), NS(n * 90 / 100), NS(n * 99 / 100), NS(n - 1));
	return 0;
}
