// SPDX-License-Identifier: MIT
/*
 * udp_echo: a UDP echo server on plain POSIX sockets. Run it as it is
 * (Linux sockets) or with LD_PRELOAD=/usr/lib/libaccio.so (the Accio fast
 * path): the binary does not know libaccio.
 *
 * usage: udp_echo [-p PORT] [-n COUNT] [-m poll|select|epoll|block]
 *                 [-w WORKERS] [-t THREADS [-f]] [-d US] [-P] [-R SOCKETS] [-D]
 *
 * Echoes every datagram to its sender; exits after COUNT datagrams (0:
 * never). -m picks how it waits for data. -w forks WORKERS processes that
 * each serve PORT+i (the multi-connection server). -t serves one socket
 * from THREADS threads, each in a blocking recvfrom (COUNT required; prints
 * "threads_serving=K", how many threads echoed at least one datagram);
 * with -f, once half of COUNT is echoed the main thread forks a child that
 * exits at once, while the threads sleep in recvfrom. -d adds US
 * microseconds of busy work before each echo (a slower server: the hart
 * stays busy, timed on the time CSR). -P: a prefork server - the parent
 * binds, a forked child serves the inherited socket, the parent waits
 * (prints "child_exit=S"). -R: a group of SOCKETS sockets with SO_REUSEPORT
 * on PORT, a thread each (COUNT required; prints "served=a,b,..." per
 * socket). -D: path MTU discovery off on the sockets (IP_MTU_DISCOVER
 * IP_PMTUDISC_DONT: datagrams without DF). Prints "echoed=N".
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum mode { BLOCK, POLL, SELECT, EPOLL };

static long work_us;		/* -d: busy work per datagram */
static int no_df;		/* -D: path MTU discovery off (no DF) */

/* Time in microseconds: the time CSR where its rate is known, else the clock. */
static unsigned long long now_us(void)
{
	struct timespec ts;
#if defined(__riscv)
	static unsigned long tb_khz;
	unsigned long t;

	if (!tb_khz) {
		unsigned char be[4] = { 0 };
		FILE *f = fopen("/proc/device-tree/cpus/timebase-frequency", "re");

		if (f && fread(be, 1, 4, f) == 4)
			tb_khz = ((unsigned long)be[0] << 24 | be[1] << 16 | be[2] << 8 | be[3]) / 1000;
		if (f)
			fclose(f);
		if (tb_khz < 1000)
			tb_khz = 1;
	}
	if (tb_khz > 1) {
		__asm__ volatile("rdtime %0" : "=r"(t));
		return t * 1000ull / tb_khz;
	}
#endif
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

static void busy_work(void)
{
	unsigned long long end;

	if (work_us <= 0)
		return;
	end = now_us() + work_us;
	while (now_us() < end)
		;
}

static int wait_readable(int fd, int ep, enum mode m)
{
	struct epoll_event ev;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	fd_set rd;

	switch (m) {
	case POLL:
		return poll(&p, 1, -1) == 1 && (p.revents & POLLIN) ? 0 : -1;
	case SELECT:
		FD_ZERO(&rd);
		FD_SET(fd, &rd);
		return select(fd + 1, &rd, NULL, NULL, NULL) == 1 &&
		       FD_ISSET(fd, &rd) ? 0 : -1;
	case EPOLL:
		return epoll_wait(ep, &ev, 1, -1) == 1 && ev.data.fd == fd ? 0 : -1;
	default:
		return 0;
	}
}

static int bound_socket(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), dont = IP_PMTUDISC_DONT;

	if (fd >= 0 && no_df &&
	    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &dont, sizeof(dont)) < 0) {
		perror("udp_echo: IP_MTU_DISCOVER");
		return -1;
	}
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("udp_echo: socket/bind");
		return -1;
	}
	return fd;
}

/* Echo COUNT datagrams (0: forever) on fd, a socket bound to port. */
static int serve_fd(int fd, int port, long count, enum mode m)
{
	static char buf[65536];
	struct sockaddr_in sa;
	struct epoll_event ev = { .events = EPOLLIN };
	socklen_t sl;
	long n = 0;
	ssize_t len;
	int ep = -1;

	if (m == EPOLL) {
		ep = epoll_create1(0);
		ev.data.fd = fd;
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			perror("udp_echo: epoll");
			return 1;
		}
	}
	printf("listening port=%d\n", port);
	fflush(stdout);
	while (!count || n < count) {
		if (wait_readable(fd, ep, m) < 0) {
			perror("udp_echo: wait");
			return 1;
		}
		sl = sizeof(sa);
		len = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&sa, &sl);
		if (len < 0) {
			if (errno == EINTR)
				continue;
			perror("udp_echo: recvfrom");
			return 1;
		}
		busy_work();
		if (sendto(fd, buf, len, 0, (struct sockaddr *)&sa, sl) != len) {
			perror("udp_echo: sendto");
			return 1;
		}
		n++;
	}
	printf("echoed=%ld\n", n);
	close(fd);
	return 0;
}

static int tfd;
static long tcount, tdone;
static int tfail;

/*
 * One of the threads: until COUNT datagrams are echoed, on the shared
 * socket (arg NULL) or its own (-R: arg points at its descriptor).
 */
static void *serve_thread(void *arg)
{
	char buf[2048];
	struct sockaddr_in sa;
	socklen_t sl;
	ssize_t len;
	long mine = 0;
	int fd = arg ? *(int *)arg : tfd;

	while (__atomic_load_n(&tdone, __ATOMIC_ACQUIRE) < tcount) {
		sl = sizeof(sa);
		len = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&sa, &sl);
		if (len < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;	/* the receive timeout: look at the count */
			perror("udp_echo: recvfrom");
			tfail = 1;
			break;
		}
		if (sendto(fd, buf, len, 0, (struct sockaddr *)&sa, sl) != len) {
			perror("udp_echo: sendto");
			tfail = 1;
			break;
		}
		mine++;
		__atomic_add_fetch(&tdone, 1, __ATOMIC_ACQ_REL);
	}
	return (void *)mine;
}

/* A socket bound to port with a receive timeout; SO_REUSEPORT if group. */
static int timed_socket(int port, int group)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { 0, 200000 };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1;

	if (fd < 0 ||
	    (group && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		perror("udp_echo: socket/bind");
		return -1;
	}
	return fd;
}

static int serve_threads(int port, long count, int threads, int fork_half, int group)
{
	static int fds[64];
	pthread_t t[64];
	void *mine;
	int i, serving = 0;

	if (count <= 0 || threads < 1 || threads > 64) {
		fprintf(stderr, "udp_echo: -t needs -n COUNT and 1..64 threads\n");
		return 2;
	}
	for (i = 0; i < (group ? threads : 1); i++)
		if ((fds[i] = timed_socket(port, group)) < 0)
			return 1;
	tfd = fds[0];
	tcount = count;
	printf("listening port=%d threads=%d\n", port, threads);
	fflush(stdout);
	for (i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, serve_thread, group ? &fds[i] : NULL))
			return 1;
	if (fork_half) {
		pid_t pid;
		int st;

		while (__atomic_load_n(&tdone, __ATOMIC_ACQUIRE) < count / 2 && !tfail)
			usleep(1000);
		pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, &st, 0) < 0)
			tfail = 1;
		else
			printf("forked_at=%ld\n", count / 2);
	}
	printf("served=");
	for (i = 0; i < threads; i++) {
		pthread_join(t[i], &mine);
		serving += mine != NULL;
		printf("%s%ld", i ? "," : "", (long)mine);
	}
	printf("\nthreads_serving=%d\n", serving);
	printf("echoed=%ld\n", tdone);
	for (i = 0; i < (group ? threads : 1); i++)
		close(fds[i]);
	return tfail;
}

static int serve(int port, long count, enum mode m)
{
	int fd = bound_socket(port);

	return fd < 0 ? 1 : serve_fd(fd, port, count, m);
}

/*
 * -P: a prefork server. The parent binds, forks one child that serves
 * COUNT datagrams on the inherited socket, and only waits for it.
 */
static int serve_prefork(int port, long count, enum mode m)
{
	int fd = bound_socket(port), st;
	pid_t pid;

	if (fd < 0)
		return 1;
	pid = fork();
	if (pid < 0) {
		perror("udp_echo: fork");
		return 1;
	}
	if (pid == 0)
		exit(serve_fd(fd, port, count, m));
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return 1;
	printf("child_exit=%d\n", WEXITSTATUS(st));
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	int port = 7777, workers = 0, threads = 0, fork_half = 0, prefork = 0, group = 0;
	int opt, i, st, rc = 0;
	enum mode m = BLOCK;
	long count = 0;

	while ((opt = getopt(argc, argv, "p:n:m:w:t:fd:PR:D")) != -1) {
		switch (opt) {
		case 'p': port = atoi(optarg); break;
		case 'n': count = atol(optarg); break;
		case 'w': workers = atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'f': fork_half = 1; break;
		case 'd': work_us = atol(optarg); break;
		case 'P': prefork = 1; break;
		case 'R': threads = atoi(optarg); group = 1; break;
		case 'D': no_df = 1; break;
		case 'm':
			m = !strcmp(optarg, "poll") ? POLL :
			    !strcmp(optarg, "select") ? SELECT :
			    !strcmp(optarg, "epoll") ? EPOLL : BLOCK;
			break;
		default:
			fprintf(stderr, "usage: udp_echo [-p PORT] [-n COUNT] "
				"[-m poll|select|epoll|block] [-w WORKERS] [-t THREADS [-f]] "
				"[-d US] [-P] [-R SOCKETS] [-D]\n");
			return 2;
		}
	}
	if (threads)
		return serve_threads(port, count, threads, fork_half, group);
	if (prefork)
		return serve_prefork(port, count, m);
	if (!workers)
		return serve(port, count, m);
	for (i = 0; i < workers; i++)
		if (fork() == 0)
			_exit(serve(port + i, count, m));
	for (i = 0; i < workers; i++)
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			rc = 1;
	return rc;
}
