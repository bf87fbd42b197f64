// SPDX-License-Identifier: MIT
/*
 * dpdk_dispatch - a UDP echo service as one dispatcher and T worker
 * processes (DPDK multi-process): the dispatcher owns the port, hands each
 * received datagram to the next worker through that worker's rte_ring, and
 * sends what the workers put on the shared TX ring.
 *
 *   dpdk_dispatch [EAL options] -- -T WORKERS -l IPV4 [-N COUNT] [-I SECONDS]
 *       the dispatcher (EAL primary); answers ARP for -l; after COUNT
 *       echoed datagrams, or SECONDS without a datagram after the first
 *       (0: never, the default for both), it stops the workers and exits
 *   dpdk_dispatch [EAL options] --proc-type=secondary -- -w INDEX
 *       worker INDEX (0..WORKERS-1): swaps each datagram's addresses and
 *       ports and queues it for transmission
 *
 * Both print key=value statistics at exit; the dispatcher counts per
 * worker. Exit status 0, or 2 on a setup error.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#if __has_include(<rte_ip4.h>)
#include <rte_ip4.h>
#else
#include <rte_ip.h>		/* DPDK before 24.11 */
#endif
#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_ring.h>
#include <rte_udp.h>

#define MAX_WORKERS 16
#define BURST 32
#define RING_SIZE 1024

/* shared between the processes, in a memzone */
struct shared {
	volatile int workers_ready;
	volatile int stop;
	uint64_t handed[MAX_WORKERS];
	uint64_t echoed[MAX_WORKERS];
};

static struct rte_ring *worker_ring(int i, int create)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "dispatch_w%d", i);
	return create ? rte_ring_create(name, RING_SIZE, rte_socket_id(),
					RING_F_SP_ENQ | RING_F_SC_DEQ) :
			rte_ring_lookup(name);
}

/* An Ethernet/IPv4/UDP datagram (without IP options)? */
static int is_udp(struct rte_mbuf *m)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ih = (struct rte_ipv4_hdr *)(eh + 1);

	return m->data_len >= sizeof(*eh) + sizeof(*ih) + sizeof(struct rte_udp_hdr) &&
	       eh->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) &&
	       ih->next_proto_id == IPPROTO_UDP && (ih->version_ihl & 15) == 5;
}

/* Turns an Ethernet/IPv4/UDP datagram into its echo: swap both ends. */
static int swap_ends(struct rte_mbuf *m)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ih = (struct rte_ipv4_hdr *)(eh + 1);
	struct rte_udp_hdr *uh;
	struct rte_ether_addr ea;
	rte_be32_t ia;
	rte_be16_t pa;

	if (!is_udp(m))
		return -1;
	uh = (struct rte_udp_hdr *)(ih + 1);
	ea = eh->dst_addr;
	eh->dst_addr = eh->src_addr;
	eh->src_addr = ea;
	ia = ih->dst_addr;
	ih->dst_addr = ih->src_addr;
	ih->src_addr = ia;
	pa = uh->dst_port;
	uh->dst_port = uh->src_port;
	uh->src_port = pa;
	return 0;			/* sums of both checksums are unchanged */
}

static int run_worker(int idx)
{
	const struct rte_memzone *mz = rte_memzone_lookup("dispatch_shared");
	struct rte_ring *in = worker_ring(idx, 0), *tx = rte_ring_lookup("dispatch_tx");
	struct shared *sh;
	struct rte_mbuf *ms[BURST];
	uint64_t n = 0, dropped = 0;

	if (!mz || !in || !tx) {
		fprintf(stderr, "dpdk_dispatch: worker %d: no dispatcher (start it first, "
			"with -T larger than %d)\n", idx, idx);
		return 2;
	}
	sh = mz->addr;
	__atomic_fetch_add(&sh->workers_ready, 1, __ATOMIC_SEQ_CST);
	while (!sh->stop) {
		unsigned int k = rte_ring_dequeue_burst(in, (void **)ms, BURST, NULL);

		if (k == 0) {
			usleep(20);	/* workers share the harts with the dispatcher */
			continue;
		}
		for (unsigned int i = 0; i < k; i++) {
			if (swap_ends(ms[i]) || rte_ring_mp_enqueue(tx, ms[i])) {
				rte_pktmbuf_free(ms[i]);
				dropped++;
				continue;
			}
			n++;
		}
		sh->echoed[idx] = n;
	}
	printf("worker=%d echoed=%llu dropped=%llu\n", idx, (unsigned long long)n,
	       (unsigned long long)dropped);
	return 0;
}

static void answer_arp(uint16_t port, struct rte_mbuf *m, rte_be32_t ip)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *ah = (struct rte_arp_hdr *)(eh + 1);
	struct rte_ether_addr mac;

	if (m->data_len < sizeof(*eh) + sizeof(*ah) ||
	    ah->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) ||
	    ah->arp_data.arp_tip != ip || rte_eth_macaddr_get(port, &mac)) {
		rte_pktmbuf_free(m);
		return;
	}
	eh->dst_addr = eh->src_addr;
	eh->src_addr = mac;
	ah->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
	ah->arp_data.arp_tha = ah->arp_data.arp_sha;
	ah->arp_data.arp_tip = ah->arp_data.arp_sip;
	ah->arp_data.arp_sha = mac;
	ah->arp_data.arp_sip = ip;
	if (rte_eth_tx_burst(port, 0, &m, 1) == 0)
		rte_pktmbuf_free(m);
}

static int run_dispatcher(int workers, rte_be32_t ip, uint64_t count, uint64_t idle_s)
{
	uint64_t hz = rte_get_timer_hz(), last = 0;
	struct rte_eth_conf conf = { 0 };
	const struct rte_memzone *mz;
	struct rte_ring *rings[MAX_WORKERS], *tx;
	struct rte_mempool *pool;
	struct rte_mbuf *ms[BURST];
	struct shared *sh;
	uint64_t sent = 0, other = 0, full = 0;
	uint16_t port = 0, nrx = 256, ntx = 256;
	int next = 0, rc;

	if (rte_eth_dev_count_avail() == 0) {
		fprintf(stderr, "dpdk_dispatch: no ethdev port (pass one with --vdev)\n");
		return 2;
	}
	mz = rte_memzone_reserve("dispatch_shared", sizeof(*sh), rte_socket_id(), 0);
	pool = rte_pktmbuf_pool_create("dispatch_pool", 8191, 256, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	tx = rte_ring_create("dispatch_tx", RING_SIZE, rte_socket_id(), RING_F_SC_DEQ);
	for (int i = 0; i < workers; i++)
		rings[i] = worker_ring(i, 1);
	for (int i = 0; i < workers; i++)
		if (!rings[i])
			tx = NULL;
	if (!mz || !pool || !tx) {
		fprintf(stderr, "dpdk_dispatch: no memory for rings and mbufs: %s\n",
			rte_strerror(rte_errno));
		return 2;
	}
	sh = mz->addr;
	memset(sh, 0, sizeof(*sh));
	rc = rte_eth_dev_configure(port, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(port, 0, nrx, rte_eth_dev_socket_id(port), NULL, pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, ntx, rte_eth_dev_socket_id(port), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	if (rc) {
		fprintf(stderr, "dpdk_dispatch: port %u: %s\n", port, rte_strerror(-rc));
		return 2;
	}
	printf("dispatcher ready workers=%d\n", workers);
	fflush(stdout);
	while (!count || sent < count) {
		unsigned int k = rte_eth_rx_burst(port, 0, ms, BURST);

		if (k)
			last = rte_get_timer_cycles();
		else if (idle_s && last && rte_get_timer_cycles() - last > idle_s * hz)
			break;

		for (unsigned int i = 0; i < k; i++) {
			struct rte_ether_hdr *eh = rte_pktmbuf_mtod(ms[i], struct rte_ether_hdr *);

			if (eh->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
				answer_arp(port, ms[i], ip);
			} else if (!is_udp(ms[i])) {
				/*
				 * not for the workers: e.g. the ICMP port
				 * unreachable a peer sends for an echo that
				 * came after its socket closed
				 */
				rte_pktmbuf_free(ms[i]);
				other++;
			} else if (rte_ring_sp_enqueue(rings[next], ms[i])) {
				rte_pktmbuf_free(ms[i]);
				full++;
			} else {
				sh->handed[next]++;
				next = (next + 1) % workers;
			}
		}
		k = rte_ring_sc_dequeue_burst(tx, (void **)ms, BURST, NULL);
		if (k) {
			unsigned int s = 0;

			while (s < k)
				s += rte_eth_tx_burst(port, 0, ms + s, k - s);
			sent += k;
		}
	}
	sh->stop = 1;
	usleep(100000);
	printf("sent=%llu other=%llu ring_full=%llu workers_ready=%d\n",
	       (unsigned long long)sent, (unsigned long long)other,
	       (unsigned long long)full, sh->workers_ready);
	for (int i = 0; i < workers; i++)
		printf("handed_w%d=%llu echoed_w%d=%llu\n", i,
		       (unsigned long long)sh->handed[i], i,
		       (unsigned long long)sh->echoed[i]);
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: dpdk_dispatch [EAL options] -- -T WORKERS -l IPV4 [-N COUNT] [-I SECONDS]\n"
		"       dpdk_dispatch [EAL options] --proc-type=secondary -- -w INDEX\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int eal, opt, workers = 0, idx = -1, rc;
	uint64_t count = 0, idle = 0;
	struct in_addr a = { 0 };

	eal = rte_eal_init(argc, argv);
	if (eal < 0) {
		fprintf(stderr, "dpdk_dispatch: EAL initialisation failed (%s); are hugepages "
			"reserved and hugetlbfs mounted, and for a worker, is the dispatcher "
			"running?\n", rte_strerror(rte_errno));
		return 2;
	}
	argc -= eal;
	argv += eal;
	while ((opt = getopt(argc, argv, "T:l:N:I:w:")) != -1) {
		switch (opt) {
		case 'T': workers = atoi(optarg); break;
		case 'l':
			if (inet_pton(AF_INET, optarg, &a) != 1)
				usage();
			break;
		case 'N': count = strtoull(optarg, NULL, 0); break;
		case 'I': idle = strtoull(optarg, NULL, 0); break;
		case 'w': idx = atoi(optarg); break;
		default: usage();
		}
	}
	if (rte_eal_process_type() == RTE_PROC_PRIMARY) {
		if (workers < 1 || workers > MAX_WORKERS || !a.s_addr)
			usage();
		rc = run_dispatcher(workers, a.s_addr, count, idle);
	} else {
		if (idx < 0 || idx >= MAX_WORKERS)
			usage();
		rc = run_worker(idx);
	}
	rte_eal_cleanup();
	return rc;
}
