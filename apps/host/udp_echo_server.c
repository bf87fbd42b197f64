// SPDX-License-Identifier: MIT
/*
 * udp_echo_server: the host-side peer. Echoes every UDP datagram back to its
 * sender with plain Linux sockets.
 *
 * usage: udp_echo_server [-a ADDR] [-p PORT] [-n MAX_DATAGRAMS] [-T SECONDS]
 *                        [-d MICROSECONDS]
 *
 * Binds ADDR:PORT (default 127.0.0.1:7777; port 0 picks a free one), prints
 * "listening PORT" on stdout once ready, and stops after MAX_DATAGRAMS echoes
 * or SECONDS without traffic (0: never). Prints "echoed N" on exit.
 * -d: a slower server, answering each datagram that much later.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1";
	int port = 7777, idle = 0, opt, fd;
	long max = 0, echoed = 0, delay_us = 0;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	static char buf[65536];

	while ((opt = getopt(argc, argv, "a:p:n:T:d:")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': max = atol(optarg); break;
		case 'T': idle = atoi(optarg); break;
		case 'd': delay_us = atol(optarg); break;
		default:
			fprintf(stderr, "usage: udp_echo_server [-a ADDR] [-p PORT] [-n MAX] [-T SECONDS] [-d US]\n");
			return 2;
		}
	}
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "udp_echo_server: bad address %s\n", addr);
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		perror("udp_echo_server");
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("listening %d\n", ntohs(sa.sin_port));
	fflush(stdout);
	while (!stop && (!max || echoed < max)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		int r = poll(&p, 1, idle ? idle * 1000 : -1);
		ssize_t n;

		if (r == 0)
			break;
		if (r < 0)
			continue;
		n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		if (n < 0)
			continue;
		if (delay_us > 0) {
			struct timespec d = { delay_us / 1000000, delay_us % 1000000 * 1000 };

			nanosleep(&d, NULL);
		}
		if (sendto(fd, buf, n, 0, (struct sockaddr *)&from, fl) == n)
			echoed++;
	}
	printf("echoed %ld\n", echoed);
	return 0;
}
