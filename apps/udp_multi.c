// SPDX-License-Identifier: MIT
/*
 * udp_multi: T concurrent client processes, each running udp_pingpong
 * against the echo server on its own socket (its own ICT row when
 * accelerated, or a share of the rows when there are more clients than
 * rows).
 *
 * usage: udp_multi -T CLIENTS [-o PREFIX] [-a [--move K]] [-W] [-P PROGRAM]
 *                  [udp_pingpong options...]
 *
 * Every client starts at once, opens its socket and runs its warm-up
 * round trips, then waits at a barrier (udp_pingpong -b); when all are
 * there (or gone), all are released together. So the T clients measure
 * at the same time and in the steady state: no client's measured round
 * trips share the harts with the start-up of others (exec, dynamic
 * linking, sockets, rows). At the end each client says it has measured
 * and waits until all have (udp_pingpong -b, fds 5 and 6) before it
 * sorts, prints and exits; "measured=M" counts those that said so.
 * With -o, client i's output goes to PREFIX.i (i = 1..T), else nowhere.
 * With -P, each client runs PROGRAM (udp_pingpong-glibc, say) instead.
 * With -a, client i runs on hart (i - 1) mod N only (N the harts online),
 * so that T <= N clients each have a hart of their own.
 * With --move K (and -a), every K-th client starts on the next hart
 * instead, and moves to its own when all are released: its address space
 * has then run on two harts, as a process the kernel migrated once has
 * (on RISC-V, unmapping anything of it needs a remote TLB flush).
 * With -W, the release opens one profiler window and a span
 * (prof_marks.h) that the last client's end of measuring closes: every
 * hart's instructions of the measured round trips (for the instruction
 * counter, eval/prof), and prints the span's length as span_us=.
 *
 * Prints "measured=M" and "clients=T ready=R ok=K" (R reached the
 * barrier) and exits 0 when every client succeeded.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prof_marks.h"

/* --move K: client i starts one hart further on */
static int moved(int i, int k)
{
	return k > 0 && i % k == 0;
}

int main(int argc, char **argv)
{
	char **args = calloc(argc + 3, sizeof(char *));
	const char *prefix = NULL;
	int t = 0, i, n = 0, ok = 0, ready = 0, done = 0, st, rdy[2], go[2], fin[2], out[2];
	int r, g, d, o;
	int pin = 0, marks = 0, move = 0;
	pid_t *pids;
	long harts = sysconf(_SC_NPROCESSORS_ONLN);
	char path[256], c;
	struct timespec t0, t1;

	args[n++] = "udp_pingpong";
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-T") && i + 1 < argc)
			t = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			prefix = argv[++i];
		else if (!strcmp(argv[i], "-a"))
			pin = 1;
		else if (!strcmp(argv[i], "-W"))
			marks = 1;
		else if (!strcmp(argv[i], "--move") && i + 1 < argc)
			move = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-P") && i + 1 < argc)
			args[0] = argv[++i];
		else
			args[n++] = argv[i];
	}
	args[n++] = "-q";
	args[n++] = "-b";
	if (t < 1) {
		fprintf(stderr, "usage: udp_multi -T CLIENTS [-o PREFIX] [-a [--move K]] [-W] [udp_pingpong options]\n");
		return 2;
	}
	pids = calloc(t + 1, sizeof(*pids));
	if (!pids || pipe(rdy) < 0 || pipe(go) < 0 || pipe(fin) < 0 || pipe(out) < 0) {
		perror("udp_multi: pipe");
		return 1;
	}
	for (i = 1; i <= t; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("udp_multi: fork");
			return 1;
		}
		pids[i] = pid;
		if (pid == 0) {
			if (pin && harts > 0) {
				cpu_set_t set;

				CPU_ZERO(&set);
				CPU_SET((i - 1 + moved(i, move)) % harts, &set);
				if (sched_setaffinity(0, sizeof(set), &set) < 0) {
					perror("udp_multi: sched_setaffinity");
					_exit(127);
				}
			}
			if (prefix)
				snprintf(path, sizeof(path), "%s.%d", prefix, i);
			if (!freopen(prefix ? path : "/dev/null", "w", stdout))
				_exit(127);
			if (prefix)
				dup2(1, 2);
			/*
			 * the barrier: ready on fd 3, go at end of file on
			 * fd 4; the end: measured on fd 5, go on to sort and
			 * print at end of file on fd 6
			 */
			r = fcntl(rdy[1], F_DUPFD, 10);
			g = fcntl(go[0], F_DUPFD, 10);
			d = fcntl(fin[1], F_DUPFD, 10);
			o = fcntl(out[0], F_DUPFD, 10);
			close(rdy[0]);
			close(rdy[1]);
			close(go[0]);
			close(go[1]);
			close(fin[0]);
			close(fin[1]);
			close(out[0]);
			close(out[1]);
			if (r < 0 || g < 0 || d < 0 || o < 0 || dup2(r, 3) < 0 ||
			    dup2(g, 4) < 0 || dup2(d, 5) < 0 || dup2(o, 6) < 0)
				_exit(127);
			close(r);
			close(g);
			close(d);
			close(o);
			execvp(args[0], args);
			_exit(127);
		}
	}
	close(rdy[1]);
	close(go[0]);
	close(fin[1]);
	close(out[0]);
	/* a client that failed before its barrier closed its end too */
	while (read(rdy[0], &c, 1) > 0)
		ready++;
	/* --move: each such client to its own hart, before the release */
	for (i = 1; pin && harts > 1 && i <= t; i++) {
		cpu_set_t set;

		if (!moved(i, move))
			continue;
		CPU_ZERO(&set);
		CPU_SET((i - 1) % harts, &set);
		if (sched_setaffinity(pids[i], sizeof(set), &set) < 0)
			perror("udp_multi: --move");
	}
	if (marks) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		span_mark(1);
		window_open();
	}
	close(go[1]);		/* every client measures now */
	/*
	 * The end of the measurement: every client has finished its round
	 * trips (or ended). Only then do they sort, print and exit, which
	 * the span does not hold: a sort grows faster than the round trips.
	 */
	while (read(fin[0], &c, 1) > 0)
		done++;
	if (marks) {
		window_close();
		span_mark(0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("span_us=%.1f\n", (t1.tv_sec - t0.tv_sec) * 1e6 +
		       (t1.tv_nsec - t0.tv_nsec) / 1e3);
	}
	close(out[1]);
	for (i = 0; i < t; i++)
		if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	printf("measured=%d\nclients=%d ready=%d ok=%d\n", done, t, ready, ok);
	return ok == t ? 0 : 1;
}
