// SPDX-License-Identifier: MIT
/*
 * udp_conns: many connected UDP sockets in one process, each checked
 * datagram by datagram against an echo peer. More sockets than the ICT
 * has rows (run under libaccio) makes rows change hands all the time.
 *
 * usage: udp_conns [-h HOST] [-p PORT] [-N SOCKETS] [-r ROUNDS] [-w WINDOW]
 *                  [-s SIZE] [-t TIMEOUT_MS] [-S SEED] [-e]
 *
 * Each round walks the sockets in windows of WINDOW: one datagram is sent
 * on every socket of the window, then one is received on each. With -e
 * the replies are taken as an event loop takes them: every socket is in
 * one epoll set (level-triggered), and the process receives, without
 * blocking, on the sockets epoll_wait reports until the window's replies
 * are in (a reply not in within TIMEOUT_MS of the last one counts as
 * lost). A datagram
 * carries its socket's index, the round and bytes drawn from the seed;
 * the reply must be the same bytes. A receive that times out counts as
 * lost. Windows start at a seeded random offset each round, so sockets are
 * used in a different order every round.
 *
 * Prints "sockets=N rounds=R datagrams=D ok=K bad=B lost=L", then the
 * round-trip time of the datagrams (send to its receive, in us: p50, p99,
 * max), the run's length and rate and, where the ICT driver is present,
 * how many rows it installed meanwhile, and exits 0 when every datagram
 * came back intact.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The ICT driver's count of row installs, -1 without one. */
static long row_installs(void)
{
	FILE *f = fopen("/sys/bus/platform/drivers/accio-uncore/11000000.accio/installs", "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t seed = 1;

static uint32_t next_rand(void)
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return seed >> 33;
}

static void fill(uint8_t *b, int size, int sock, int round)
{
	uint64_t x = ((uint64_t)sock << 32 | (uint32_t)round) * 0x9e3779b97f4a7c15ull;
	int i;

	memcpy(b, &sock, 4);
	memcpy(b + 4, &round, 4);
	for (i = 8; i < size; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		b[i] = (uint8_t)(x * 0x2545f4914f6cdd1dull >> 56);
	}
}

int main(int argc, char **argv)
{
	const char *host = "10.0.2.2";
	int port = 7, n = 256, rounds = 4, window = 32, size = 64, tmo = 2000;
	int use_epoll = 0, ep = -1, *pos = NULL;
	long ok = 0, bad = 0, lost = 0, sent = 0;
	struct sockaddr_in sa;
	struct timeval tv;
	struct rlimit rl;
	int *fds, opt, r, i, k, w, off;
	uint8_t out[1472], in[1500];
	uint64_t *sent_at, *rtt, t0, t1;
	long nrtt = 0, inst0, inst1;

	while ((opt = getopt(argc, argv, "h:p:N:r:w:s:t:S:e")) != -1) {
		switch (opt) {
		case 'h': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'N': n = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'w': window = atoi(optarg); break;
		case 's': size = atoi(optarg); break;
		case 't': tmo = atoi(optarg); break;
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		case 'e': use_epoll = 1; break;
		default:
			fprintf(stderr, "usage: udp_conns [-h HOST] [-p PORT] [-N SOCKETS] "
				"[-r ROUNDS] [-w WINDOW] [-s SIZE] [-t TIMEOUT_MS] [-S SEED] "
				"[-e]\n");
			return 2;
		}
	}
	if (n < 1 || rounds < 1 || window < 1 || size < 8 || size > 1472 || tmo < 1) {
		fprintf(stderr, "udp_conns: SOCKETS, ROUNDS, WINDOW >= 1, SIZE 8..1472, "
			"TIMEOUT_MS >= 1\n");
		return 2;
	}
	if (window > n)
		window = n;
	/* a socket and, accelerated, its row fd each */
	rl.rlim_cur = rl.rlim_max = 2 * (rlim_t)n + 64;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2 * (rlim_t)n + 64) {
		rl.rlim_cur = rl.rlim_max = 2 * (rlim_t)n + 64;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			perror("udp_conns: setrlimit");
			return 1;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "udp_conns: bad host %s\n", host);
		return 2;
	}
	fds = calloc(n, sizeof(int));
	sent_at = calloc(window, sizeof(uint64_t));
	rtt = calloc((size_t)n * rounds, sizeof(uint64_t));
	pos = calloc(n, sizeof(int));
	if (!fds || !sent_at || !rtt || !pos) {
		fprintf(stderr, "udp_conns: out of memory\n");
		return 1;
	}
	tv.tv_sec = tmo / 1000;
	tv.tv_usec = tmo % 1000 * 1000;
	for (i = 0; i < n; i++) {
		fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fds[i] < 0 || connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
			fprintf(stderr, "udp_conns: socket %d: %s\n", i, strerror(errno));
			return 1;
		}
		pos[i] = -1;
	}
	if (use_epoll) {
		ep = epoll_create1(0);
		for (i = 0; i < n && ep >= 0; i++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };

			if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0)
				break;
		}
		if (ep < 0 || i < n) {
			perror("udp_conns: epoll");
			return 1;
		}
	}
	inst0 = row_installs();
	t0 = now_ns();
	for (r = 0; r < rounds; r++) {
		off = next_rand() % n;
		for (k = 0; k < n; k += window) {
			w = n - k < window ? n - k : window;
			for (i = 0; i < w; i++) {
				int s = (off + k + i) % n;

				fill(out, size, s, r);
				sent_at[i] = now_ns();
				if (send(fds[s], out, size, 0) != size) {
					fprintf(stderr, "udp_conns: send %d: %s\n", s,
						strerror(errno));
					return 1;
				}
				sent++;
			}
			if (use_epoll) {
				int left = w;

				for (i = 0; i < w; i++)
					pos[(off + k + i) % n] = i;
				while (left > 0) {
					struct epoll_event evs[64];
					int m = epoll_wait(ep, evs, 64, tmo), j;

					if (m < 0 && errno == EINTR)
						continue;
					if (m <= 0)
						break;	/* the rest are lost */
					for (j = 0; j < m; j++) {
						int s = evs[j].data.u32;
						ssize_t got;

						while ((got = recv(fds[s], in, sizeof(in),
								   MSG_DONTWAIT)) >= 0) {
							fill(out, size, s, r);
							if (pos[s] < 0 || got != size ||
							    memcmp(in, out, size)) {
								if (bad < 5)
									fprintf(stderr, "udp_conns: socket %d round %d: "
										"%zd bytes, not the %d sent\n",
										s, r, got, size);
								bad++;
								continue;
							}
							ok++;
							left--;
							rtt[nrtt++] = now_ns() - sent_at[pos[s]];
							pos[s] = -1;
						}
					}
				}
				for (i = 0; i < w; i++)
					pos[(off + k + i) % n] = -1;
				lost += left;
				continue;
			}
			for (i = 0; i < w; i++) {
				int s = (off + k + i) % n;
				ssize_t got = recv(fds[s], in, sizeof(in), 0);

				fill(out, size, s, r);
				if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
					lost++;
				} else if (got != size || memcmp(in, out, size)) {
					if (bad < 5)
						fprintf(stderr, "udp_conns: socket %d round %d: "
							"%zd bytes, not the %d sent\n",
							s, r, got, size);
					bad++;
				} else {
					ok++;
					rtt[nrtt++] = now_ns() - sent_at[i];
				}
			}
		}
	}
	t1 = now_ns();
	inst1 = row_installs();
	for (i = 0; i < n; i++)
		close(fds[i]);
	printf("sockets=%d rounds=%d datagrams=%ld ok=%ld bad=%ld lost=%ld\n",
	       n, rounds, sent, ok, bad, lost);
	if (nrtt) {
		qsort(rtt, nrtt, sizeof(uint64_t), cmp_u64);
		printf("rtt_p50_us=%.1f rtt_p99_us=%.1f rtt_max_us=%.1f\n",
		       rtt[nrtt / 2] / 1e3, rtt[(nrtt * 99) / 100] / 1e3, rtt[nrtt - 1] / 1e3);
	}
	printf("elapsed_us=%.0f datagrams_per_s=%.0f\n", (t1 - t0) / 1e3,
	       sent * 1e9 / (double)(t1 - t0 ? t1 - t0 : 1));
	/* rows the kernel installed while the datagrams flowed (with libaccio) */
	if (inst0 >= 0 && inst1 >= 0)
		printf("row_installs=%ld\n", inst1 - inst0);
	return ok == sent ? 0 : 1;
}
