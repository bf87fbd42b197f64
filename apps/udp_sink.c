// SPDX-License-Identifier: MIT
/*
 * udp_sink: UDP throughput on plain POSIX sockets (run it as it is, or with
 * LD_PRELOAD=/usr/lib/libaccio.so).
 *
 * usage: udp_sink [-p PORT] [-n COUNT] [-t IDLE_MS]           (receiver)
 *        udp_sink -G HOST [-g GAP_NS] [-s SIZE] [-p PORT] [-n COUNT] [-t IDLE_MS]
 *        udp_sink -c HOST [-p PORT] [-n COUNT] [-s SIZE]       (sender)
 *
 * The receiver counts datagrams until COUNT arrived or nothing came for
 * IDLE_MS; the sender sends COUNT datagrams of SIZE bytes as fast as send()
 * takes them. Both print "datagrams=N bytes=B elapsed_us=T pps=P mbps=M".
 * With -G the receiver first asks the NIC model's wire peer at HOST (its
 * generator, UDP port 5001) for COUNT datagrams of SIZE bytes, one every
 * GAP_NS ns (0: back to back at the link rate), and also prints
 * "lost=L" (datagrams of the stream that did not arrive, by their
 * sequence numbers) and "offered_mbps=O" (the payload rate asked for).
 * With -z (under LD_PRELOAD=/usr/lib/libaccio.so) the receiver reads each
 * datagram in place in the row's RX ring (accio_zc_recv/accio_zc_release:
 * no copy, no system call), and also prints "hw_mbps=H": the payload rate
 * delivered, by the NIC's receive timestamps from the first datagram to
 * the last; with -G also "engine_mbps=E": the stream's rate into the NIC
 * and its engine over the same span, the datagrams the ring had no room
 * for counted too (by their sequence numbers).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <stdint.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

static void report(long n, long long bytes, uint64_t us)
{
	if (!us)
		us = 1;
	printf("datagrams=%ld bytes=%lld elapsed_us=%llu pps=%.0f mbps=%.1f\n",
	       n, bytes, (unsigned long long)us, n * 1e6 / us, bytes * 8.0 / us);
}

/* libaccio's zero-copy receive, found at run time (-z) */
static ssize_t (*zc_recv)(int, const void **, struct sockaddr_in *, uint64_t *);
static int (*zc_release)(int, const void *);

int main(int argc, char **argv)
{
	static char buf[65536];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	const char *host = NULL, *gen = NULL;
	int port = 7777, size = 1024, idle = 2000, opt, fd;
	unsigned long long gap = 0, seq, top = 0;
	long count = 1000, n = 0;
	long long bytes = 0;
	uint64_t t0, t1, hw, hw0 = 0, hw1 = 0, seq0 = 0, seq1 = 0;
	long long hw_bytes = 0;
	int zc = 0;
	ssize_t r;

	while ((opt = getopt(argc, argv, "c:p:n:s:t:G:g:z")) != -1) {
		switch (opt) {
		case 'c': host = optarg; break;
		case 'G': gen = optarg; break;
		case 'g': gap = strtoull(optarg, NULL, 10); break;
		case 'p': port = atoi(optarg); break;
		case 'n': count = atol(optarg); break;
		case 's': size = atoi(optarg); break;
		case 't': idle = atoi(optarg); break;
		case 'z': zc = 1; break;
		default:
			fprintf(stderr, "usage: udp_sink [-c HOST | -G HOST [-g GAP_NS]] "
				"[-p PORT] [-n COUNT] [-s SIZE] [-t IDLE_MS] [-z]\n");
			return 2;
		}
	}
	if (size < 0 || size > (int)sizeof(buf))
		return 2;
	sa.sin_port = htons(port);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (host) {
		inet_pton(AF_INET, host, &sa.sin_addr);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			perror("udp_sink: connect");
			return 1;
		}
		memset(buf, 0xa5, size);
		t0 = now_us();
		for (n = 0; n < count; n++) {
			memcpy(buf, &n, sizeof(n));
			if (send(fd, buf, size, 0) != size) {
				perror("udp_sink: send");
				return 1;
			}
			bytes += size;
		}
		report(n, bytes, now_us() - t0);
		return 0;
	}
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("udp_sink: bind");
		return 1;
	}
	if (zc) {
		struct timeval tv = { .tv_sec = idle / 1000, .tv_usec = idle % 1000 * 1000 };

		zc_recv = (ssize_t (*)(int, const void **, struct sockaddr_in *, uint64_t *))
			dlsym(RTLD_DEFAULT, "accio_zc_recv");
		zc_release = (int (*)(int, const void *))dlsym(RTLD_DEFAULT, "accio_zc_release");
		if (!zc_recv || !zc_release) {
			fprintf(stderr, "udp_sink: -z needs libaccio (LD_PRELOAD=/usr/lib/libaccio.so)\n");
			return 2;
		}
		/* accio_zc_recv blocks as recv does: the idle time bounds it */
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	if (gen) {
		struct sockaddr_in ga = { .sin_family = AF_INET,
					  .sin_port = htons(5001) };
		char req[64];
		int len;

		if (size < 1 || size > 1472) {
			fprintf(stderr, "udp_sink: -s SIZE must be 1..1472 with -G\n");
			return 2;
		}
		if (inet_pton(AF_INET, gen, &ga.sin_addr) != 1) {
			fprintf(stderr, "udp_sink: -G %s is not an IPv4 address\n", gen);
			return 2;
		}
		len = snprintf(req, sizeof(req), "gen %ld %d %llu", count, size, gap);
		if (sendto(fd, req, len, 0, (struct sockaddr *)&ga, sizeof(ga)) != len) {
			perror("udp_sink: sendto");
			return 1;
		}
	}
	t0 = t1 = 0;
	while (n < count) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		const void *rb;

		if (zc) {
			hw = 0;
			r = zc_recv(fd, &rb, NULL, &hw);
			if (r < 0)
				break;
			memcpy(buf, rb, r >= 8 ? 8 : r);
			if (zc_release(fd, rb) < 0)
				break;
			if (hw) {
				memcpy(&seq, buf, 8);
				if (hw0) {
					hw_bytes += r;
				} else {
					hw0 = hw;
					seq0 = seq;
				}
				hw1 = hw;
				seq1 = seq;
			}
		} else {
			if (poll(&p, 1, idle) <= 0)
				break;
			r = recv(fd, buf, sizeof(buf), 0);
			if (r < 0)
				break;
		}
		if (!n)
			t0 = now_us();
		t1 = now_us();
		n++;
		bytes += r;
		if (gen && r >= 8) {
			memcpy(&seq, buf, 8);
			if (seq + 1 > top)
				top = seq + 1;
		}
	}
	report(n, bytes, t1 - t0);
	if (zc && hw1 > hw0) {
		printf("hw_mbps=%.1f\n", hw_bytes * 8e3 / (hw1 - hw0));
		if (gen && seq1 > seq0)
			printf("engine_mbps=%.1f\n", (seq1 - seq0) * (double)size * 8e3 /
			       (hw1 - hw0));
	}
	if (gen)
		printf("lost=%ld offered_mbps=%.1f last_seq=%llu\n", count - n,
		       gap ? size * 8.0 * 1000 / gap : 0.0, top ? top - 1 : 0);
	return 0;
}
