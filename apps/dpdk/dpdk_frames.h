/* SPDX-License-Identifier: MIT */
/*
 * dpdk_frames.h - what the DPDK programs (dpdk_pingpong, dpdk_dispatch,
 * dpdk_echo) share: their port's setup, the frames they build themselves
 * (the kernel no longer sees the port: ARP and UDP over IPv4 are theirs), a
 * clock and a sort order.
 */
#ifndef DPDK_FRAMES_H
#define DPDK_FRAMES_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#include <rte_arp.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#if __has_include(<rte_ip4.h>)
#include <rte_ip4.h>
#else
#include <rte_ip.h>		/* DPDK before 24.11 */
#endif
#include <rte_mbuf.h>
#include <rte_udp.h>

#define DPDK_UDP_HDRS (sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr) + \
		       sizeof(struct rte_udp_hdr))

#define DPDK_NB_DESC 256

/*
 * @port with one RX queue (buffers from @pool) and one TX queue, each of
 * DPDK_NB_DESC descriptors or what the port allows, configured with @conf
 * and started: 0, or a negative errno.
 */
static inline int dpdk_port_start(uint16_t port, const struct rte_eth_conf *conf,
				  struct rte_mempool *pool)
{
	uint16_t nrx = DPDK_NB_DESC, ntx = DPDK_NB_DESC;
	int rc = rte_eth_dev_configure(port, 1, 1, conf);

	if (rc == 0)
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(port, 0, nrx, rte_eth_dev_socket_id(port), NULL, pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, ntx, rte_eth_dev_socket_id(port), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	return rc;
}

static inline uint64_t dpdk_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static inline int dpdk_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * An ARP request for @tip (broadcast; @tha NULL) or a reply to @tha, from
 * @mac and @ip; NULL when the pool is empty.
 */
static inline struct rte_mbuf *dpdk_arp_frame(struct rte_mempool *pool,
					      const struct rte_ether_addr *mac, rte_be32_t ip,
					      const struct rte_ether_addr *tha, rte_be32_t tip)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct rte_ether_hdr *eh;
	struct rte_arp_hdr *ah;

	if (!m)
		return NULL;
	eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	ah = (struct rte_arp_hdr *)(eh + 1);
	if (tha)
		eh->dst_addr = *tha;
	else
		memset(&eh->dst_addr, 0xff, sizeof(eh->dst_addr));
	eh->src_addr = *mac;
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	ah->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	ah->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ah->arp_hlen = RTE_ETHER_ADDR_LEN;
	ah->arp_plen = 4;
	ah->arp_opcode = rte_cpu_to_be_16(tha ? RTE_ARP_OP_REPLY : RTE_ARP_OP_REQUEST);
	ah->arp_data.arp_sha = *mac;
	ah->arp_data.arp_sip = ip;
	if (tha)
		ah->arp_data.arp_tha = *tha;
	else
		memset(&ah->arp_data.arp_tha, 0, sizeof(ah->arp_data.arp_tha));
	ah->arp_data.arp_tip = tip;
	m->data_len = m->pkt_len = sizeof(*eh) + sizeof(*ah);
	return m;
}

/*
 * An IPv4 UDP datagram (no IP options) turned around in place: Ethernet
 * and IPv4 addresses and UDP ports swapped. Both checksums stay valid, as
 * a swap changes no one's-complement sum.
 */
static inline void dpdk_udp_turn_around(struct rte_mbuf *m)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ih = (struct rte_ipv4_hdr *)(eh + 1);
	struct rte_udp_hdr *uh = (struct rte_udp_hdr *)(ih + 1);
	struct rte_ether_addr ea = eh->dst_addr;
	rte_be32_t ia = ih->dst_addr;
	rte_be16_t pa = uh->dst_port;

	eh->dst_addr = eh->src_addr;
	eh->src_addr = ea;
	ih->dst_addr = ih->src_addr;
	ih->src_addr = ia;
	uh->dst_port = uh->src_port;
	uh->src_port = pa;
}

/* The two ends of a UDP flow: addresses in network order. */
struct dpdk_flow {
	struct rte_ether_addr mac, peer_mac;
	rte_be32_t ip, peer_ip;
	rte_be16_t port, peer_port;
};

/*
 * A flow's headers built once for a payload size: each frame then copies
 * them and its payload, nothing field by field. With @offload the port
 * fills in the IPv4 and UDP checksums (the template holds the pseudo-header
 * sum in the UDP checksum, as DPDK's offload convention asks); without,
 * the template holds the IPv4 checksum and no UDP checksum (0, allowed in
 * IPv4).
 */
struct dpdk_tmpl {
	uint8_t hdr[DPDK_UDP_HDRS];
	int size;		/* the payload size the lengths are for; -1: none */
	int offload;
};

static inline void dpdk_tmpl_init(struct dpdk_tmpl *t, const struct dpdk_flow *f, int size,
				  int offload)
{
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)t->hdr;
	struct rte_ipv4_hdr *ih = (struct rte_ipv4_hdr *)(eh + 1);
	struct rte_udp_hdr *uh = (struct rte_udp_hdr *)(ih + 1);

	memset(t->hdr, 0, sizeof(t->hdr));
	eh->dst_addr = f->peer_mac;
	eh->src_addr = f->mac;
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ih->version_ihl = RTE_IPV4_VHL_DEF;
	ih->total_length = rte_cpu_to_be_16(sizeof(*ih) + sizeof(*uh) + size);
	ih->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ih->time_to_live = 64;
	ih->next_proto_id = IPPROTO_UDP;
	ih->src_addr = f->ip;
	ih->dst_addr = f->peer_ip;
	uh->src_port = f->port;
	uh->dst_port = f->peer_port;
	uh->dgram_len = rte_cpu_to_be_16(sizeof(*uh) + size);
	if (offload) {
		uh->dgram_cksum = rte_ipv4_phdr_cksum(ih, RTE_MBUF_F_TX_IPV4 |
						      RTE_MBUF_F_TX_IP_CKSUM |
						      RTE_MBUF_F_TX_UDP_CKSUM);
	} else {
		ih->hdr_checksum = rte_ipv4_cksum(ih);
	}
	t->size = size;
	t->offload = offload;
}

/* A datagram of the template's flow and size; NULL when the pool is empty. */
static inline struct rte_mbuf *dpdk_tmpl_frame(struct rte_mempool *pool,
					       const struct dpdk_tmpl *t, const uint8_t *payload)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	uint8_t *p;

	if (!m)
		return NULL;
	p = rte_pktmbuf_mtod(m, uint8_t *);
	memcpy(p, t->hdr, DPDK_UDP_HDRS);
	memcpy(p + DPDK_UDP_HDRS, payload, t->size);
	m->data_len = m->pkt_len = DPDK_UDP_HDRS + t->size;
	if (t->offload) {
		m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM;
		m->l2_len = sizeof(struct rte_ether_hdr);
		m->l3_len = sizeof(struct rte_ipv4_hdr);
	}
	return m;
}

/* A datagram of @size payload bytes on @f; NULL when the pool is empty. */
static inline struct rte_mbuf *dpdk_udp_frame(struct rte_mempool *pool,
					      const struct dpdk_flow *f,
					      const uint8_t *payload, int size)
{
	struct dpdk_tmpl t;

	dpdk_tmpl_init(&t, f, size, 0);
	return dpdk_tmpl_frame(pool, &t, payload);
}

#endif /* DPDK_FRAMES_H */
