// SPDX-License-Identifier: MIT
/*
 * udp_echo_client: send datagrams of varying size to a UDP echo server,
 * check that every echo carries exactly the bytes that were sent, and
 * report round-trip times. Plain Linux sockets.
 *
 * usage: udp_echo_client [-s ADDR] [-p PORT] [-n COUNT] [-m MIN] [-M MAX]
 *                        [-t TIMEOUT_MS] [-r RETRIES] [-q]
 *
 * Sizes cycle through MIN..MAX; every payload is a pseudo-random pattern
 * seeded by its sequence number. Output is "key=value" lines. Exit status:
 * 0 when every datagram came back intact, 1 otherwise, 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_DGRAM 65507

struct hdr {
	uint32_t magic;
	uint32_t seq;
	uint32_t size;
	uint32_t attempt;
};

#define MAGIC 0xacc10ec0u

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void fill(uint8_t *buf, uint32_t seq, uint32_t size, uint32_t attempt)
{
	struct hdr h = { MAGIC, seq, size, attempt };
	uint32_t x = seq * 2654435761u + 1;
	uint32_t i;

	for (i = sizeof(h); i < size; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = x;
	}
	memcpy(buf, &h, sizeof(h));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void usage(void)
{
	fprintf(stderr, "usage: udp_echo_client [-s ADDR] [-p PORT] [-n COUNT] "
		"[-m MIN] [-M MAX] [-t TIMEOUT_MS] [-r RETRIES] [-q]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *addr = "10.0.2.2";
	int port = 7777, count = 10000, min = 64, max = 1472, timeout = 1000;
	int retries = 3, quiet = 0, opt, fd, i;
	uint64_t ok = 0, bad = 0, lost = 0, resent = 0, stale = 0, bytes = 0;
	static uint8_t tx[MAX_DGRAM], rx[MAX_DGRAM + 1];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	uint64_t *rtt, t_start, t_end;

	while ((opt = getopt(argc, argv, "s:p:n:m:M:t:r:q")) != -1) {
		switch (opt) {
		case 's': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': count = atoi(optarg); break;
		case 'm': min = atoi(optarg); break;
		case 'M': max = atoi(optarg); break;
		case 't': timeout = atoi(optarg); break;
		case 'r': retries = atoi(optarg); break;
		case 'q': quiet = 1; break;
		default: usage();
		}
	}
	if (count <= 0 || min < (int)sizeof(struct hdr) || max < min ||
	    max > MAX_DGRAM || port <= 0 || port > 65535 || timeout <= 0)
		usage();
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "udp_echo_client: bad address %s\n", addr);
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("udp_echo_client: socket/connect");
		return 1;
	}
	rtt = calloc(count, sizeof(*rtt));
	if (!rtt)
		return 1;

	t_start = now_ns();
	for (i = 0; i < count; i++) {
		uint32_t size = min + (uint32_t)((uint64_t)i * 97 % (max - min + 1));
		int attempt, done = 0;

		for (attempt = 0; attempt <= retries && !done; attempt++) {
			uint64_t t0 = now_ns(), deadline = t0 + timeout * 1000000ull;

			fill(tx, i, size, attempt);
			if (attempt)
				resent++;
			if (send(fd, tx, size, 0) != (ssize_t)size) {
				perror("udp_echo_client: send");
				return 1;
			}
			while (!done) {
				struct pollfd p = { .fd = fd, .events = POLLIN };
				uint64_t t = now_ns();
				struct hdr h;
				ssize_t n;

				if (t >= deadline)
					break;
				if (poll(&p, 1, (deadline - t) / 1000000 + 1) <= 0)
					continue;
				n = recv(fd, rx, sizeof(rx), 0);
				if (n < (ssize_t)sizeof(h))
					continue;
				memcpy(&h, rx, sizeof(h));
				if (h.magic != MAGIC || h.seq != (uint32_t)i ||
				    h.attempt != (uint32_t)attempt) {
					stale++;	/* a late echo of an earlier try */
					continue;
				}
				if (n != (ssize_t)size || memcmp(rx, tx, size)) {
					bad++;
					fprintf(stderr, "seq %d: echo differs (%zd of %u bytes)\n",
						i, n, size);
				} else {
					ok++;
					bytes += size;
				}
				rtt[i] = now_ns() - t0;
				done = 1;
			}
		}
		if (!done) {
			lost++;
			fprintf(stderr, "seq %d: no echo after %d tries\n", i, retries + 1);
		}
		if (!quiet && (i + 1) % 1000 == 0)
			fprintf(stderr, "udp_echo_client: %d/%d\n", i + 1, count);
	}
	t_end = now_ns();

	{
		uint64_t *s = calloc(count, sizeof(*s)), sum = 0;
		int n = 0;

		for (i = 0; i < count; i++)
			if (rtt[i])
				s[n++] = rtt[i];
		qsort(s, n, sizeof(*s), cmp_u64);
		for (i = 0; i < n; i++)
			sum += s[i];
		printf("datagrams=%d\nok=%llu\nbad=%llu\nlost=%llu\nresent=%llu\nstale=%llu\n",
		       count, (unsigned long long)ok, (unsigned long long)bad,
		       (unsigned long long)lost, (unsigned long long)resent,
		       (unsigned long long)stale);
		printf("sizes=%d..%d\nbytes=%llu\nelapsed_us=%llu\n", min, max,
		       (unsigned long long)bytes,
		       (unsigned long long)(t_end - t_start) / 1000);
		if (n) {
			printf("rtt_min_us=%.1f\nrtt_avg_us=%.1f\nrtt_p50_us=%.1f\nrtt_p99_us=%.1f\nrtt_max_us=%.1f\n",
			       s[0] / 1e3, sum / 1e3 / n, s[n / 2] / 1e3,
			       s[(uint64_t)n * 99 / 100] / 1e3, s[n - 1] / 1e3);
		}
		free(s);
	}
	free(rtt);
	close(fd);
	return (ok == (uint64_t)count) ? 0 : 1;
}
