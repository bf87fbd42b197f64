// SPDX-License-Identifier: MIT
/*
 * dpdk_echo - UDP echo server on DPDK's ethdev API.
 *
 *   dpdk_echo [EAL options] -- -a IPV4 [-p PORT]
 *
 * Busy-polls the port's RX queue and sends every UDP datagram to -a's
 * address (and to PORT, when given) back where it came from, in the same
 * mbuf (dpdk_udp_turn_around). ARP requests for -a's address are
 * answered, as the kernel no longer sees the port. Other frames are
 * dropped. On SIGINT or SIGTERM it prints
 * "echoed=N arp=N dropped=N" (a reply the TX queue had no room for is
 * counted echoed and dropped) and exits.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "dpdk_frames.h"

#define BURST 32

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int port_init(uint16_t port, struct rte_mempool *pool, struct rte_ether_addr *mac)
{
	struct rte_eth_conf conf = { 0 };
	int rc = dpdk_port_start(port, &conf, pool);

	if (rc == 0)
		rc = rte_eth_macaddr_get(port, mac);
	if (rc) {
		fprintf(stderr, "dpdk_echo: port %u: %s\n", port, rte_strerror(-rc));
		return -1;
	}
	rte_eth_promiscuous_enable(port);
	return 0;
}

/* the frame turned into its reply in place; 0 when it is not ours */
static int echo_udp(struct rte_mbuf *m, rte_be32_t ip, rte_be16_t port)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ih = (struct rte_ipv4_hdr *)(eh + 1);
	struct rte_udp_hdr *uh = (struct rte_udp_hdr *)(ih + 1);

	if (m->data_len < DPDK_UDP_HDRS || eh->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
	    ih->next_proto_id != IPPROTO_UDP || ih->dst_addr != ip ||
	    (ih->version_ihl & 0xf) != 5 || (port && uh->dst_port != port))
		return 0;
	dpdk_udp_turn_around(m);
	m->ol_flags = 0;
	return 1;
}

/* an ARP request for our address: the reply, else NULL */
static struct rte_mbuf *arp_reply(struct rte_mbuf *m, struct rte_mempool *pool,
				  const struct rte_ether_addr *mac, rte_be32_t ip)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *ah = (struct rte_arp_hdr *)(eh + 1);

	if (m->data_len < sizeof(*eh) + sizeof(*ah) ||
	    eh->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP) ||
	    ah->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) || ah->arp_data.arp_tip != ip)
		return NULL;
	return dpdk_arp_frame(pool, mac, ip, &ah->arp_data.arp_sha, ah->arp_data.arp_sip);
}

static void usage(void)
{
	fprintf(stderr, "usage: dpdk_echo [EAL options] -- -a IPV4 [-p PORT]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct rte_mbuf *rx[BURST], *tx[BURST];
	struct rte_ether_addr mac;
	struct rte_mempool *pool;
	rte_be32_t ip = 0;
	rte_be16_t port = 0;
	unsigned long echoed = 0, arp = 0, dropped = 0;
	struct in_addr a;
	int eal, opt;

	eal = rte_eal_init(argc, argv);
	if (eal < 0) {
		fprintf(stderr, "dpdk_echo: EAL initialisation failed (%s)\n",
			rte_strerror(rte_errno));
		return 2;
	}
	argc -= eal;
	argv += eal;
	while ((opt = getopt(argc, argv, "a:p:")) != -1) {
		switch (opt) {
		case 'a':
			if (inet_pton(AF_INET, optarg, &a) != 1)
				usage();
			ip = a.s_addr;
			break;
		case 'p':
			port = rte_cpu_to_be_16(atoi(optarg));
			break;
		default:
			usage();
		}
	}
	if (!ip)
		usage();
	if (rte_eth_dev_count_avail() == 0) {
		fprintf(stderr, "dpdk_echo: no ethdev port (pass one with --vdev)\n");
		return 2;
	}
	pool = rte_pktmbuf_pool_create("echo", 4095, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       rte_socket_id());
	if (!pool) {
		fprintf(stderr, "dpdk_echo: no memory for mbufs: %s\n", rte_strerror(rte_errno));
		return 2;
	}
	if (port_init(0, pool, &mac))
		return 2;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("listening port=%u\n", rte_be_to_cpu_16(port));
	fflush(stdout);
	while (!stop) {
		uint16_t n = rte_eth_rx_burst(0, 0, rx, BURST), k = 0, sent;

		for (uint16_t i = 0; i < n; i++) {
			struct rte_mbuf *r;

			if (echo_udp(rx[i], ip, port)) {
				tx[k++] = rx[i];
				echoed++;
				continue;
			}
			r = arp_reply(rx[i], pool, &mac, ip);
			if (r) {
				tx[k++] = r;
				arp++;
			} else {
				dropped++;
			}
			rte_pktmbuf_free(rx[i]);
		}
		sent = k ? rte_eth_tx_burst(0, 0, tx, k) : 0;
		for (uint16_t i = sent; i < k; i++) {
			rte_pktmbuf_free(tx[i]);
			dropped++;
		}
	}
	printf("echoed=%lu arp=%lu dropped=%lu\n", echoed, arp, dropped);
	rte_eth_dev_stop(0);
	rte_eal_cleanup();
	return 0;
}
