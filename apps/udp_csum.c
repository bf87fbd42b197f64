// SPDX-License-Identifier: MIT
/*
 * udp_csum: UDP datagrams with a checksum of our choosing, to an echo
 * server, and what comes back. For the NIC's receive checksum offload: a
 * datagram sent with a wrong UDP checksum comes back from the wire peer
 * with the same wrong checksum (it swaps addresses and ports, which keeps
 * every checksum as it was), and either the NIC drops it (rx_drop_csum,
 * with ethtool -K rx on) or the stack does (Udp InCsumErrors of
 * /proc/net/snmp, with it off). Either way no application sees it.
 *
 * The datagrams leave through a raw IPv4 socket (SOCK_RAW, IPPROTO_UDP):
 * the program writes the UDP header and its checksum, the kernel the IPv4
 * header, and nothing on the way (neither the stack nor the NIC's transmit
 * offload) touches the checksum. A UDP socket bound to the source port
 * takes the replies.
 *
 * usage: udp_csum [-s HOST] [-p PORT] [-n COUNT] [-m SIZE] [-t MS] [-b]
 *
 * -b: a wrong checksum (the right one with some bits flipped, never 0,
 * which would mean "no checksum"); default the right one. -t: how long to
 * wait for each reply (default 200 ms). Prints sent=N received=N bad=N
 * (received but not the bytes sent). Exits 0 when it could send.
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
#include <unistd.h>

static uint32_t sum16(uint32_t sum, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (p[i] << 8) | p[i + 1];
	if (n & 1)
		sum += p[n - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* The UDP checksum of @udp (header with check 0, payload) from @src to @dst. */
static uint16_t udp_check(struct in_addr src, struct in_addr dst,
			  const uint8_t *udp, size_t len)
{
	uint8_t ph[12];
	uint16_t c;

	memcpy(ph, &src, 4);
	memcpy(ph + 4, &dst, 4);
	ph[8] = 0;
	ph[9] = IPPROTO_UDP;
	ph[10] = len >> 8;
	ph[11] = len;
	c = fold(sum16(sum16(0, ph, sizeof(ph)), udp, len));
	return c ? c : 0xffff;
}

int main(int argc, char **argv)
{
	struct sockaddr_in peer = { .sin_family = AF_INET }, me;
	const char *host = "10.0.2.2";
	int port = 7, count = 20, size = 64, wrong = 0, wait_ms = 200;
	long sent = 0, received = 0, bad = 0;
	uint8_t pkt[8 + 1472], rx[2048];
	socklen_t len = sizeof(me);
	int opt, raw, udp, i;
	uint16_t c;

	while ((opt = getopt(argc, argv, "s:p:n:m:t:b")) != -1) {
		switch (opt) {
		case 's': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': count = atoi(optarg); break;
		case 'm': size = atoi(optarg); break;
		case 't': wait_ms = atoi(optarg); break;
		case 'b': wrong = 1; break;
		default:
			fprintf(stderr, "usage: udp_csum [-s HOST] [-p PORT] [-n COUNT] "
				"[-m SIZE] [-t MS] [-b]\n");
			return 2;
		}
	}
	if (size < 4 || size > 1472 || count < 1)
		return 2;
	peer.sin_port = htons(port);
	if (inet_pton(AF_INET, host, &peer.sin_addr) != 1)
		return 2;
	/* the UDP socket: its port, and the address the kernel sends from */
	udp = socket(AF_INET, SOCK_DGRAM, 0);
	if (udp < 0 || connect(udp, (struct sockaddr *)&peer, sizeof(peer)) < 0 ||
	    getsockname(udp, (struct sockaddr *)&me, &len) < 0) {
		perror("udp_csum: UDP socket");
		return 1;
	}
	raw = socket(AF_INET, SOCK_RAW, IPPROTO_UDP);
	if (raw < 0) {
		perror("udp_csum: raw socket");
		return 1;
	}
	for (i = 0; i < count; i++) {
		struct pollfd p = { .fd = udp, .events = POLLIN };
		ssize_t n;

		memcpy(pkt, &me.sin_port, 2);
		memcpy(pkt + 2, &peer.sin_port, 2);
		pkt[4] = (8 + size) >> 8;
		pkt[5] = 8 + size;
		pkt[6] = pkt[7] = 0;
		memset(pkt + 8, 'a' + i % 26, size);
		memcpy(pkt + 8, &i, sizeof(i));
		c = udp_check(me.sin_addr, peer.sin_addr, pkt, 8 + size);
		if (wrong)
			c = (c ^ 0x5a5a) ? c ^ 0x5a5a : 0x1234;
		pkt[6] = c >> 8;
		pkt[7] = c;
		if (sendto(raw, pkt, 8 + size, 0, (struct sockaddr *)&peer,
			   sizeof(peer)) != 8 + size) {
			perror("udp_csum: sendto");
			return 1;
		}
		sent++;
		while (poll(&p, 1, wait_ms) == 1) {
			n = recv(udp, rx, sizeof(rx), 0);
			if (n < 0)
				break;
			received++;
			if (n != size || memcmp(rx, pkt + 8, size))
				bad++;
			else
				break;
		}
	}
	printf("sent=%ld\nreceived=%ld\nbad=%ld\n", sent, received, bad);
	return 0;
}
