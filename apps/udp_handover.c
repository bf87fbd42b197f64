// SPDX-License-Identifier: MIT
/*
 * udp_handover: a socket handed from one program to another, as inetd or a
 * supervisor does it. A plain sockets program (preload libaccio to
 * accelerate it; the preload and ACCIO_* reach the child through exec).
 *
 *   udp_handover HOST PORT N
 *
 * The parent connects a UDP socket to an echo peer, exchanges N/2 numbered
 * datagrams one by one, then sends the other N/2 in one burst and waits
 * until their echoes have arrived, unread. It forks; the child dups the
 * socket to descriptor 10 and execs this program, which receives the N/2
 * echoes still pending, then exchanges N/2 more one by one. The parent
 * closes its descriptor after the fork and waits for the child.
 *
 * Output: "parent rx=R", then from the child "child pending=P missing=M
 * dup=D bad=B" and "child pingpong=K"; exit status 0 when nothing was
 * missing, duplicated or damaged.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEN 200

static void fill(uint8_t *p, uint32_t seq)
{
	unsigned int i;

	memcpy(p, &seq, 4);
	for (i = 4; i < LEN; i++)
		p[i] = (uint8_t)(seq * 13 + i);
}

/* The sequence number of a well-formed echo, or -1. */
static long check(const uint8_t *p, long n)
{
	uint8_t want[LEN];
	uint32_t seq;

	if (n != LEN)
		return -1;
	memcpy(&seq, p, 4);
	fill(want, seq);
	return memcmp(p, want, LEN) ? -1 : (long)seq;
}

static int pingpong(int fd, uint32_t first, uint32_t n)
{
	uint8_t out[LEN], in[LEN + 1];
	uint32_t i;
	int ok = 0;
	long r;

	for (i = first; i < first + n; i++) {
		fill(out, i);
		if (send(fd, out, LEN, 0) != LEN)
			break;
		r = recv(fd, in, sizeof(in), 0);
		if (check(in, r) != (long)i)
			break;
		ok++;
	}
	return ok;
}

static int child(int fd, uint32_t first, uint32_t n)
{
	struct timeval tv = { 3, 0 };
	uint8_t in[LEN + 1], *seen = calloc(n, 1);
	uint32_t pending = 0, missing = 0, dup = 0, bad = 0, i;
	long r, seq;
	int k;

	if (!seen)
		return 1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (i = 0; i < n; i++) {
		r = recv(fd, in, sizeof(in), 0);
		if (r < 0)
			break;		/* the timeout: what is left is missing */
		seq = check(in, r);
		if (seq < (long)first || seq >= (long)(first + n)) {
			bad++;
			continue;
		}
		if (seen[seq - first]++)
			dup++;
		else
			pending++;
	}
	for (i = 0; i < n; i++)
		missing += !seen[i];
	printf("child pending=%u missing=%u dup=%u bad=%u\n", pending, missing, dup, bad);
	k = pingpong(fd, first + n, n);
	printf("child pingpong=%d\n", k);
	free(seen);
	return missing || dup || bad || k != (int)n;
}

int main(int argc, char **argv)
{
	struct sockaddr_in peer = { .sin_family = AF_INET };
	uint8_t out[LEN];
	uint32_t n, half, i;
	int fd, st, k, tries;
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "--child"))
		return child(atoi(argv[2]), strtoul(argv[3], NULL, 0),
			     strtoul(argv[4], NULL, 0));
	if (argc != 4 || inet_pton(AF_INET, argv[1], &peer.sin_addr) != 1 ||
	    (n = strtoul(argv[3], NULL, 0)) < 2 || n > 100000) {
		fprintf(stderr, "usage: udp_handover HOST PORT N (2..100000)\n");
		return 2;
	}
	half = n / 2;
	peer.sin_port = htons(atoi(argv[2]));
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&peer, sizeof(peer)) < 0) {
		perror("udp_handover: socket");
		return 1;
	}
	k = pingpong(fd, 0, half);
	printf("parent rx=%d\n", k);
	if (k != (int)half)
		return 1;
	for (i = half; i < 2 * half; i++) {
		fill(out, i);
		if (send(fd, out, LEN, 0) != LEN) {
			perror("udp_handover: send");
			return 1;
		}
	}
	/* the echoes arrive, unread (bounded: 2 s) */
	for (tries = 0; tries < 20; tries++) {
		int avail = 0;

		if (recv(fd, out, 1, MSG_PEEK | MSG_DONTWAIT) >= 0)
			avail = 1;
		if (avail && tries >= 3)
			break;
		usleep(100000);
	}
	pid = fork();
	if (pid < 0) {
		perror("udp_handover: fork");
		return 1;
	}
	if (pid == 0) {
		char a[16], b[16], c[16];

		if (dup2(fd, 10) < 0)
			_exit(1);
		snprintf(a, sizeof(a), "%d", 10);
		snprintf(b, sizeof(b), "%u", half);
		snprintf(c, sizeof(c), "%u", half);
		execl("/proc/self/exe", argv[0], "--child", a, b, c, (char *)NULL);
		perror("udp_handover: exec");
		_exit(1);
	}
	close(fd);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return 1;
	return WEXITSTATUS(st);
}
