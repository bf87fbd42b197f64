// SPDX-License-Identifier: MIT
/*
 * nic_selftest: exercise the Accio NIC through MAC loopback.
 *
 * Turns on the interface's loopback feature (ethtool -K IF loopback on) and
 * hardware timestamping, sends COUNT raw Ethernet frames of growing size to
 * its own address, receives each back, checks the bytes and prints one line
 * per frame with the NIC's TX and RX hardware timestamps and the software
 * round trip. Nothing leaves the SoC, so under -icount every number printed
 * is the same from run to run.
 *
 * usage: nic_selftest [-i IFNAME] [-n COUNT]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/net_tstamp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ethtool_strings.h"

#define ETHERTYPE_TEST 0x88b5	/* IEEE local experimental */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Set or clear the "loopback" netdev feature, as ethtool -K does. */
static int set_loopback(int fd, const char *ifname, int on)
{
	struct ethtool_gstrings *names;
	struct ethtool_sfeatures *sf;
	struct ifreq ifr;
	uint32_t n, i, words;
	int idx = -1, ret = -1;

	names = ethtool_strings(fd, ifname, ETH_SS_FEATURES, &n);
	if (!names)
		return -1;
	for (i = 0; i < n; i++)
		if (!strncmp((char *)names->data + i * ETH_GSTRING_LEN,
			     "loopback", ETH_GSTRING_LEN))
			idx = i;
	if (idx < 0) {
		errno = EOPNOTSUPP;
		goto out;
	}
	words = (n + 31) / 32;
	sf = calloc(1, sizeof(*sf) + words * sizeof(sf->features[0]));
	if (!sf)
		goto out;
	sf->cmd = ETHTOOL_SFEATURES;
	sf->size = words;
	sf->features[idx / 32].valid = 1u << (idx % 32);
	sf->features[idx / 32].requested = on ? 1u << (idx % 32) : 0;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)sf;
	ret = ioctl(fd, SIOCETHTOOL, &ifr) < 0 ? -1 : 0;
	free(sf);
out:
	free(names);
	return ret;
}

static int hw_tstamp_on(int fd, const char *ifname)
{
	struct hwtstamp_config cfg = { .tx_type = HWTSTAMP_TX_ON,
				       .rx_filter = HWTSTAMP_FILTER_ALL };
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&cfg;
	return ioctl(fd, SIOCSHWTSTAMP, &ifr);
}

/* The raw hardware timestamp (ns) carried by a message's control data. */
static int64_t cmsg_hwts(struct msghdr *m)
{
	struct cmsghdr *c;

	for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SO_TIMESTAMPING) {
			struct timespec *ts = (struct timespec *)CMSG_DATA(c);

			return (int64_t)ts[2].tv_sec * 1000000000ll + ts[2].tv_nsec;
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	const char *ifname = "eth0";
	int count = 16, opt, fd, i, fails = 0;
	int flags = SOF_TIMESTAMPING_TX_HARDWARE | SOF_TIMESTAMPING_RX_HARDWARE |
		    SOF_TIMESTAMPING_RAW_HARDWARE;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	unsigned char mac[6], tx[1514], rx[2048];
	char ctl[512];
	struct ifreq ifr;

	while ((opt = getopt(argc, argv, "i:n:")) != -1) {
		switch (opt) {
		case 'i': ifname = optarg; break;
		case 'n': count = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: nic_selftest [-i IFNAME] [-n COUNT]\n");
			return 2;
		}
	}
	fd = socket(AF_PACKET, SOCK_RAW, htons(ETHERTYPE_TEST));
	if (fd < 0) {
		perror("nic_selftest: socket");
		return 1;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		perror("nic_selftest: SIOCGIFHWADDR");
		return 1;
	}
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	sll.sll_protocol = htons(ETHERTYPE_TEST);
	sll.sll_ifindex = if_nametoindex(ifname);
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags)) < 0) {
		perror("nic_selftest: bind/SO_TIMESTAMPING");
		return 1;
	}
	if (hw_tstamp_on(fd, ifname) < 0) {
		perror("nic_selftest: SIOCSHWTSTAMP");
		return 1;
	}
	if (set_loopback(fd, ifname, 1) < 0) {
		perror("nic_selftest: loopback on");
		return 1;
	}

	for (i = 0; i < count; i++) {
		int len = 60 + (i * 1454) / (count > 1 ? count - 1 : 1);
		int64_t tx_ts = -1, rx_ts = -1;
		uint64_t t0, t1;
		struct iovec iov = { rx, sizeof(rx) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = ctl, .msg_controllen = sizeof(ctl) };
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n = -1;
		int j;

		memcpy(tx, mac, 6);
		memcpy(tx + 6, mac, 6);
		tx[12] = ETHERTYPE_TEST >> 8;
		tx[13] = ETHERTYPE_TEST & 0xff;
		for (j = 14; j < len; j++)
			tx[j] = (uint8_t)(i * 31 + j);
		t0 = now_ns();
		if (send(fd, tx, len, 0) != len) {
			perror("nic_selftest: send");
			return 1;
		}
		if (poll(&p, 1, 2000) == 1)
			n = recvmsg(fd, &m, 0);
		t1 = now_ns();
		if (n > 0)
			rx_ts = cmsg_hwts(&m);
		/* the TX timestamp comes back on the error queue */
		for (j = 0; j < 100 && tx_ts < 0; j++) {
			struct msghdr e = { .msg_iov = &iov, .msg_iovlen = 1,
					    .msg_control = ctl,
					    .msg_controllen = sizeof(ctl) };
			unsigned char junk[2048];
			struct iovec jv = { junk, sizeof(junk) };

			e.msg_iov = &jv;
			if (recvmsg(fd, &e, MSG_ERRQUEUE | MSG_DONTWAIT) >= 0)
				tx_ts = cmsg_hwts(&e);
			else
				usleep(1000);
		}
		if (n != len || memcmp(rx, tx, len) || tx_ts < 0 || rx_ts < 0) {
			fails++;
			printf("frame %d len %d FAIL rx %zd tx_ts %lld rx_ts %lld\n",
			       i, len, n, (long long)tx_ts, (long long)rx_ts);
			continue;
		}
		printf("frame %d len %d tx_hw_ns %lld rx_hw_ns %lld hw_ns %lld sw_ns %llu\n",
		       i, len, (long long)tx_ts, (long long)rx_ts,
		       (long long)(rx_ts - tx_ts), (unsigned long long)(t1 - t0));
	}
	set_loopback(fd, ifname, 0);
	printf("frames=%d failed=%d\n", count, fails);
	return fails ? 1 : 0;
}
