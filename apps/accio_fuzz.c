// SPDX-License-Identifier: MIT
/*
 * accio_fuzz: random sequences of calls on the kernel's Accio surface
 * (SIOCACCIO, the row fd's mmap, ioctls, accio_wait(2), poll and close), from a fixed
 * seed: good and bad argument structures, sizes and offsets, stores of
 * random values to the row's user-writable registers, a thread closing a
 * row fd while another waits on it, forked children using inherited row
 * fds and children killed mid-call. Uses system calls only (no libaccio).
 *
 * usage: accio_fuzz [-n OPS] [-s SEED] [-h HOST] [-p PORT]
 *
 * The kernel must refuse what is wrong with an errno and survive the rest:
 * afterwards every row and connection is gone (the test reads sysfs and
 * the kernel log). Prints "ops=N" and a count per outcome.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/accio.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NSLOT	16

struct slot {
	int sock, row;
	uint32_t rx_bytes, tx_bytes;
	volatile uint64_t *regs;
	uint8_t *rx, *tx;
};

static struct slot slots[NSLOT];
static uint64_t rng;
static struct sockaddr_in peer;
static long nok, nerr, nops;
static long by_errno[160];

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void outcome(long r)
{
	if (r < 0) {
		nerr++;
		if (errno > 0 && errno < 160)
			by_errno[errno]++;
	} else {
		nok++;
	}
}

static void unmap(struct slot *s)
{
	if (s->regs)
		munmap((void *)s->regs, 4096);
	if (s->rx)
		munmap(s->rx, s->rx_bytes);
	if (s->tx)
		munmap(s->tx, s->tx_bytes);
	s->regs = NULL;
	s->rx = s->tx = NULL;
}

static void drop(struct slot *s)
{
	unmap(s);
	if (s->row >= 0)
		close(s->row);
	if (s->sock >= 0)
		close(s->sock);
	s->row = s->sock = -1;
}

static uint32_t ring_size(void)
{
	static const uint32_t sizes[] = { 0, 4096, 8192, 65536, 1u << 20, 100, 3, 1u << 21,
					  4097, 0xffffffffu };

	return sizes[rnd() % 10];
}

static void op_socket(struct slot *s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };

	drop(s);
	s->sock = socket(AF_INET, rnd() % 8 ? SOCK_DGRAM : SOCK_STREAM, 0);
	if (s->sock < 0) {
		outcome(-1);
		return;
	}
	switch (rnd() % 3) {
	case 0:
		outcome(connect(s->sock, (struct sockaddr *)&peer, sizeof(peer)));
		break;
	case 1:
		outcome(bind(s->sock, (struct sockaddr *)&sa, sizeof(sa)));
		break;
	default:
		break;		/* unbound: SIOCACCIO must say EINVAL */
	}
}

static void op_accel(struct slot *s)
{
	struct accio_accel a;

	if (s->sock < 0)
		return;
	memset(&a, 0, sizeof(a));
	a.version = rnd() % 8 ? ACCIO_UAPI_VERSION : (uint32_t)rnd();
	a.flags = rnd() % 8 ? 0 : (uint32_t)rnd();
	a.rx_bytes = ring_size();
	a.tx_bytes = ring_size();
	if (!(rnd() % 10)) {
		/* a reserved field that must be 0: EINVAL */
		uint32_t k = rnd() % 4, v = rnd() | 1;

		if (k < 2)
			a.reserved[k] = v;
		else if (k == 2)
			a.reserved0 = v;
		else
			a.reserved1 = v;
	}
	if (!(rnd() % 20)) {
		outcome(ioctl(s->sock, SIOCACCIO, (void *)(uintptr_t)(rnd() % 4096)));
		return;
	}
	if (ioctl(s->sock, SIOCACCIO, &a) < 0)
		{ outcome(-1); return; }
	outcome(0);
	unmap(s);
	if (s->row >= 0)
		close(s->row);
	s->row = a.fd;
	s->rx_bytes = a.rx_bytes;
	s->tx_bytes = a.tx_bytes;
}

static uint32_t sink;	/* what the status page said: read, not checked */

static void op_mmap(struct slot *s)
{
	static const uint64_t offs[] = { 0, 0x100000, 0x200000, 0x1000, 0x300000, 0x100800 };
	uint64_t off = offs[rnd() % 6];
	size_t len = rnd() % 4 ? (off == 0 ? 4096 : off == 0x100000 ? s->rx_bytes :
				  s->tx_bytes) : (rnd() % 5 + 1) * 4096;
	void *p;

	if (s->row < 0 || !len)
		return;
	/* the status page (0x300000) maps read-only: EACCES with PROT_WRITE */
	p = mmap(NULL, len, off == 0x300000 && rnd() % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
		 MAP_SHARED, s->row, off);
	if (p == MAP_FAILED)
		{ outcome(-1); return; }
	outcome(0);
	if (off == 0x300000)
		sink += ((volatile uint32_t *)p)[rnd() % 4];
	if (off == 0 && len == 4096 && !s->regs)
		s->regs = p;
	else if (off == 0x100000 && len == s->rx_bytes && !s->rx)
		s->rx = p;
	else if (off == 0x200000 && len == s->tx_bytes && !s->tx)
		s->tx = p;
	else
		munmap(p, len);
}

/* Loads and stores through the row page: pointers the owner may move,
 * the doorbell, and stores the uncore refuses (kernel-only fields). */
static void op_poke(struct slot *s)
{
	static const unsigned int regs[] = {
		ACCIO_ROW_RX_RPTR, ACCIO_ROW_TX_WPTR, ACCIO_ROW_DOORBELL, ACCIO_ROW_STATE,
		ACCIO_ROW_RX_WPTR, ACCIO_ROW_OWNER_ASID, 0x030 /* RX_BASE */,
	};
	unsigned int r = regs[rnd() % 7];
	uint64_t v;

	if (!s->regs)
		return;
	v = s->regs[r / 8];
	if (rnd() % 2) {
		switch (rnd() % 3) {
		case 0: v += 8 * (rnd() % 64); break;
		case 1: v = rnd(); break;
		default: break;
		}
		if (s->tx && r == ACCIO_ROW_TX_WPTR && rnd() % 2) {
			/* a record, maybe a bad one, at the old write pointer */
			uint64_t w = s->regs[ACCIO_ROW_TX_WPTR / 8];
			uint16_t len = rnd() % 3 ? 32 : rnd();

			memset(s->tx + (w & (s->tx_bytes - 1) & ~7ull), 0, 8);
			memcpy(s->tx + (w & (s->tx_bytes - 1) & ~7ull), &len, 2);
			v = w + 40;
		}
		s->regs[r / 8] = v;
	}
	nok++;
}

static void op_ioctl(struct slot *s)
{
	struct accio_wait w;
	struct accio_route rt;

	if (s->row < 0)
		return;
	switch (rnd() % 4) {
	case 0:
		memset(&w, 0, sizeof(w));
		w.dir = rnd() % 5 ? rnd() % 2 : (uint32_t)rnd();
		w.need = rnd() % 3 ? 0 : (uint32_t)(rnd() % (1u << 21));
		w.timeout_ms = rnd() % 3;
		if (rnd() % 2)
			outcome(ioctl(s->row, ACCIO_IOC_WAIT, &w));
		else	/* the same wait as a system call; also on other fds */
			outcome(syscall(__NR_accio_wait, rnd() % 4 ? s->row : s->sock,
					w.dir, w.need, w.timeout_ms));
		break;
	case 1:
		rt.ip = rnd() % 2 ? peer.sin_addr.s_addr : (uint32_t)rnd();
		rt.reserved = rnd() % 8 ? 0 : 1;
		outcome(ioctl(s->row, ACCIO_IOC_ROUTE, &rt));
		break;
	case 2:
		outcome(ioctl(s->row, (unsigned long)rnd(), (void *)(uintptr_t)rnd()));
		break;
	default: {
		struct pollfd pfd = { .fd = s->row, .events = POLLIN | POLLOUT };

		outcome(poll(&pfd, 1, rnd() % 2));
	}
	}
}

struct race {
	int fd;
};

static void *closer(void *arg)
{
	struct race *r = arg;

	usleep(rnd() % 2000);
	close(r->fd);
	return NULL;
}

/* One thread waits on a row fd (a dup: the wait holds its own reference)
 * while another closes the original and the dup. */
static void op_race(struct slot *s)
{
	struct accio_wait w = { .dir = ACCIO_WAIT_RX, .timeout_ms = 5 };
	struct race r;
	pthread_t t;

	if (s->row < 0)
		return;
	r.fd = dup(s->row);
	if (r.fd < 0)
		{ outcome(-1); return; }
	if (pthread_create(&t, NULL, closer, &r))
		return;
	outcome(ioctl(r.fd, ACCIO_IOC_WAIT, &w));
	pthread_join(t, NULL);
	unmap(s);
	close(s->row);
	s->row = -1;
}

/* A child uses the inherited row fds (refused: not the owner) or is
 * killed while it accelerates, waits and maps its own rows. */
static void op_fork(void)
{
	pid_t pid = fork();
	int i, st;

	if (pid < 0)
		{ outcome(-1); return; }
	if (pid == 0) {
		for (i = 0; i < NSLOT; i++) {
			if (slots[i].row >= 0 &&
			    ((mmap(NULL, 4096, PROT_READ, MAP_SHARED, slots[i].row, 0) !=
			      MAP_FAILED || errno != EACCES) ||
			     (syscall(__NR_accio_wait, slots[i].row, ACCIO_WAIT_RX, 0, 0) != -1 ||
			      errno != EACCES)))
				_exit(3);
			slots[i].regs = NULL;
			slots[i].rx = slots[i].tx = NULL;
		}
		for (i = 0; i < 200; i++) {
			struct slot *s = &slots[rnd() % NSLOT];

			switch (rnd() % 4) {
			case 0: op_socket(s); break;
			case 1: op_accel(s); break;
			case 2: op_mmap(s); break;
			default: op_poke(s); break;
			}
		}
		_exit(0);
	}
	if (rnd() % 2) {
		usleep(rnd() % 3000);
		kill(pid, SIGKILL);
	}
	if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 3) {
		printf("FAIL child could map a row it does not own\n");
		exit(1);
	}
	nok++;
}

int main(int argc, char **argv)
{
	long n = 2000, i;
	const char *host = "10.0.2.2";
	int opt, port = 7;

	rng = 1;
	while ((opt = getopt(argc, argv, "n:s:h:p:")) != -1) {
		switch (opt) {
		case 'n': n = atol(optarg); break;
		case 's': rng = strtoull(optarg, NULL, 0) | 1; break;
		case 'h': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: accio_fuzz [-n OPS] [-s SEED] [-h HOST] [-p PORT]\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	peer.sin_family = AF_INET;
	peer.sin_port = htons(port);
	inet_pton(AF_INET, host, &peer.sin_addr);
	for (i = 0; i < NSLOT; i++)
		slots[i].sock = slots[i].row = -1;
	for (nops = 0; nops < n; nops++) {
		struct slot *s = &slots[rnd() % NSLOT];

		switch (rnd() % 16) {
		case 0: case 1: op_socket(s); break;
		case 2: case 3: case 4: op_accel(s); break;
		case 5: case 6: op_mmap(s); break;
		case 7: case 8: case 9: op_poke(s); break;
		case 10: case 11: op_ioctl(s); break;
		case 12: op_race(s); break;
		case 13: if (!(rnd() % 4)) op_fork(); break;
		case 14: unmap(s); break;
		default: drop(s); break;
		}
	}
	for (i = 0; i < NSLOT; i++)
		drop(&slots[i]);
	printf("ops=%ld ok=%ld refused=%ld", nops, nok, nerr);
	for (i = 1; i < 160; i++)
		if (by_errno[i])
			printf(" errno%ld=%ld", i, by_errno[i]);
	printf("\n");
	return 0;
}
