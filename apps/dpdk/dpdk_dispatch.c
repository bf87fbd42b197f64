// SPDX-License-Identifier: MIT
/*
 * dpdk_dispatch - one dispatcher and T worker processes (DPDK
 * multi-process), the paper's design for many connections on DPDK: the
 * dispatcher owns the port, hands received datagrams to the workers
 * through each worker's rte_ring, and sends what the workers put on the
 * shared TX ring. Either a UDP echo service, or T ping-pong clients.
 *
 *   dpdk_dispatch [EAL options] -- -T WORKERS -l IPV4 [-N COUNT] [-I SECONDS]
 *       the dispatcher of an echo service (EAL primary); answers ARP for
 *       -l and hands datagrams to the workers in turn; after COUNT echoed
 *       datagrams, or SECONDS without a datagram after the first (0:
 *       never, the default for both), it stops the workers and exits
 *   dpdk_dispatch [EAL options] -- -T WORKERS -l IPV4 -c SERVER_IPV4
 *       the dispatcher of T clients: resolves the server's MAC (ARP),
 *       hands a datagram to port CLIENT_PORT0 + i to worker i, and exits
 *       once every worker has finished
 *   dpdk_dispatch [EAL options] --proc-type=secondary -- -w INDEX
 *       echo worker INDEX (0..WORKERS-1): swaps each datagram's addresses
 *       and ports and queues it for transmission
 *   dpdk_dispatch [EAL options] --proc-type=secondary -- -w INDEX -p PORT
 *           [-n COUNT] [-m SIZE] [-t MS] [-P]
 *       client worker INDEX: COUNT round trips of SIZE-byte datagrams
 *       (default 1000 of 64) from port CLIENT_PORT0 + INDEX to the server's
 *       PORT, one at a time, each reply checked; a reply not back within
 *       MS ms (default 1000) is lost. Prints worker=, datagrams=, bad=,
 *       lost=, rtt_p50_us=, rtt_p99_us=. Round trips' NIC-to-NIC times come
 *       from a capture of the wire (eval/wirecap.py, by client port): the
 *       NIC stamps a packet, but a worker never sees its request's stamp.
 *
 * A worker that finds its ring empty sleeps on a futex in the shared
 * memzone until the dispatcher has handed it a datagram (or, as a client,
 * until its reply's time is up): the workers share the harts with each
 * other and with the dispatcher, which polls the port without pause, so a
 * worker with nothing to do must not take a hart. The dispatcher makes the
 * FUTEX_WAKE system call only for a worker that said it sleeps. With -P a
 * worker (or client) polls its ring instead and never sleeps: no wake-up
 * to pay, a hart taken all the time.
 *
 * Both print key=value statistics at exit; the dispatcher counts per
 * worker. Exit status 0, or 2 on a setup error.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <time.h>

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
#include <rte_pause.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include "dpdk_frames.h"

#define MAX_WORKERS 64
#define BURST 32
#define RING_SIZE 1024
/*
 * The pool's per-lcore cache. Every worker is a process on its own lcore,
 * and a cache refills to its size on a miss: 64 caches of 256 would hold
 * twice the pool and leave the receive path without mbufs.
 */
#define POOL_MBUFS 8191
#define POOL_CACHE 32
/*
 * The shared TX ring and the pool's ring have many producers (every worker,
 * and for the pool every consumer too), and the workers outnumber the harts:
 * a worker can be preempted between taking a slot and publishing it. With
 * DPDK's default multi-producer sync every later producer then spins, and
 * the consumer sees nothing, until that worker runs again - at its hart's
 * next tick. Relaxed tail sync (RTS) lets the others finish without waiting
 * for it; the slot is published once the last producer in flight is done.
 */
#define POOL_OPS "ring_mt_rts"
/* how long the workers may take to come up (EAL init of each process) */
#define STARTUP_S 300
#define CLIENT_PORT0 20000

/* shared between the processes, in a memzone */
struct shared {
	volatile int workers_ready;
	volatile int stop;
	volatile int clients_done;
	int client;			/* the dispatcher of clients (-c) */
	int workers;			/* how many it serves (-T) */
	uint32_t go;			/* futex word: every client is up */
	struct rte_ether_addr mac, peer_mac;
	rte_be32_t ip, peer_ip;
	uint64_t handed[MAX_WORKERS];
	uint64_t echoed[MAX_WORKERS];
	uint32_t wake[MAX_WORKERS];	/* futex words: bumped on each hand-over */
	int sleeping[MAX_WORKERS];	/* the worker is in (or entering) its wait */
	uint64_t wakeups[MAX_WORKERS];	/* FUTEX_WAKE calls made for it */
};

/* -P: workers poll their rings instead of sleeping on their futex words */
static int polling;

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
	/* not FUTEX_PRIVATE_FLAG: the word is in memory shared between processes */
	return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/*
 * A worker's wait for its ring: says it sleeps, looks at the ring once more
 * (a hand-over that came before the flag was seen is not missed: the
 * dispatcher bumps the word before it reads the flag) and sleeps until
 * woken, the word changed, or @ns passed.
 */
static void worker_wait(struct shared *sh, int idx, struct rte_ring *in, uint64_t ns)
{
	uint32_t seq = __atomic_load_n(&sh->wake[idx], __ATOMIC_ACQUIRE);
	struct timespec ts = { .tv_sec = ns / 1000000000ull, .tv_nsec = ns % 1000000000ull };

	if (polling) {
		rte_pause();	/* never says it sleeps: the dispatcher makes no call */
		return;
	}
	__atomic_store_n(&sh->sleeping[idx], 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (rte_ring_empty(in) && !sh->stop)
		futex(&sh->wake[idx], FUTEX_WAIT, seq, &ts);
	__atomic_store_n(&sh->sleeping[idx], 0, __ATOMIC_RELAXED);
}

/* The dispatcher, after it put something on worker @w's ring. */
static void wake_worker(struct shared *sh, int w)
{
	__atomic_fetch_add(&sh->wake[w], 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&sh->sleeping[w], __ATOMIC_RELAXED)) {
		sh->wakeups[w]++;
		futex(&sh->wake[w], FUTEX_WAKE, INT_MAX, NULL);
	}
}

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
	if (!is_udp(m))
		return -1;
	dpdk_udp_turn_around(m);
	return 0;
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
			worker_wait(sh, idx, in, 100000000ull);	/* 100 ms: look at stop */
			continue;
		}
		for (unsigned int i = 0; i < k; i++) {
			if (swap_ends(ms[i]) || rte_ring_enqueue(tx, ms[i])) {
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

/* A request of worker @idx: Ethernet, IPv4, UDP and @size payload bytes. */
static struct rte_mbuf *build_request(struct rte_mempool *pool, const struct shared *sh,
				      int idx, rte_be16_t dport, const uint8_t *payload,
				      int size)
{
	struct dpdk_flow f = { .mac = sh->mac, .peer_mac = sh->peer_mac, .ip = sh->ip,
			       .peer_ip = sh->peer_ip,
			       .port = rte_cpu_to_be_16(CLIENT_PORT0 + idx), .peer_port = dport };

	return dpdk_udp_frame(pool, &f, payload, size);
}

static int run_client(int idx, int port, long count, int size, long timeout_ms)
{
	const struct rte_memzone *mz = rte_memzone_lookup("dispatch_shared");
	struct rte_ring *in = worker_ring(idx, 0), *tx = rte_ring_lookup("dispatch_tx");
	struct rte_mempool *pool = rte_mempool_lookup("dispatch_pool");
	uint8_t out[1472];
	uint64_t *rtt;
	long i, n = 0, bad = 0, lost = 0;
	struct shared *sh;

	if (!mz || !in || !tx || !pool) {
		fprintf(stderr, "dpdk_dispatch: worker %d: no dispatcher (start it first, "
			"with -T larger than %d)\n", idx, idx);
		return 2;
	}
	sh = mz->addr;
	if (!sh->client) {
		fprintf(stderr, "dpdk_dispatch: worker %d: -p needs a dispatcher of "
			"clients (-c SERVER)\n", idx);
		return 2;
	}
	rtt = calloc(count, sizeof(*rtt));
	if (!rtt)
		return 2;
	/*
	 * All clients start together, once the last one is up: the first
	 * ones would otherwise share their harts with the EAL start-up of
	 * the others and measure that.
	 */
	printf("up worker=%d\n", idx);	/* a launcher may wait for this */
	fflush(stdout);
	if (__atomic_add_fetch(&sh->workers_ready, 1, __ATOMIC_SEQ_CST) >= sh->workers) {
		__atomic_store_n(&sh->go, 1, __ATOMIC_SEQ_CST);
		futex(&sh->go, FUTEX_WAKE, INT_MAX, NULL);
	}
	while (!__atomic_load_n(&sh->go, __ATOMIC_SEQ_CST) && !sh->stop) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = 100000000 };

		futex(&sh->go, FUTEX_WAIT, 0, &ts);	/* 100 ms: look at stop */
	}
	for (i = 0; i < count && !sh->stop; i++) {
		struct rte_mbuf *m;
		uint64_t t0, t1;
		int got = 0;

		memset(out, (idx + i) & 0xff, size);
		memcpy(out, &i, sizeof(i));
		m = build_request(pool, sh, idx, rte_cpu_to_be_16(port), out, size);
		if (!m) {
			usleep(20);	/* the pool is empty for a moment */
			i--;
			continue;
		}
		t0 = dpdk_now_ns();
		while (rte_ring_enqueue(tx, m))
			usleep(20);
		while (!got) {
			struct rte_mbuf *r;

			if (rte_ring_sc_dequeue(in, (void **)&r)) {
				uint64_t waited = dpdk_now_ns() - t0;

				if (waited >= (uint64_t)timeout_ms * 1000000)
					break;
				worker_wait(sh, idx, in, (uint64_t)timeout_ms * 1000000 - waited);
				continue;
			}
			/* the payload starts with the request's number */
			if (r->data_len >= DPDK_UDP_HDRS + sizeof(long)) {
				long seq;

				memcpy(&seq, rte_pktmbuf_mtod_offset(r, uint8_t *, DPDK_UDP_HDRS),
				       sizeof(seq));
				if (seq >= 0 && seq < i) {
					/* a late reply to a lost request: skip it */
					rte_pktmbuf_free(r);
					continue;
				}
			}
			if (r->data_len == DPDK_UDP_HDRS + size &&
			    !memcmp(rte_pktmbuf_mtod_offset(r, uint8_t *, DPDK_UDP_HDRS), out, size))
				got = 1;
			else
				got = -1, bad++;
			rte_pktmbuf_free(r);
		}
		t1 = dpdk_now_ns();
		if (got == 1)
			rtt[n++] = t1 - t0;
		else if (!got)
			lost++;
	}
	__atomic_fetch_add(&sh->clients_done, 1, __ATOMIC_SEQ_CST);
	qsort(rtt, n, sizeof(*rtt), dpdk_cmp_u64);
	/* datagrams: the requests made (fewer than asked if the dispatcher stopped) */
	printf("worker=%d size=%d datagrams=%ld bad=%ld\nlost=%ld\n", idx, size, i, bad,
	       lost);
	if (n)
		printf("rtt_p50_us=%.1f\nrtt_p99_us=%.1f\n", rtt[n / 2] / 1000.0,
		       rtt[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / 1000.0);
	free(rtt);
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

static void send_arp_request(uint16_t port, struct rte_mempool *pool, const struct shared *sh)
{
	struct rte_mbuf *m = dpdk_arp_frame(pool, &sh->mac, sh->ip, NULL, sh->peer_ip);

	if (m && rte_eth_tx_burst(port, 0, &m, 1) == 0)
		rte_pktmbuf_free(m);
}

/* An ARP reply from the server: its MAC. */
static int arp_reply_of(struct rte_mbuf *m, rte_be32_t peer, struct rte_ether_addr *mac)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *ah = (struct rte_arp_hdr *)(eh + 1);

	if (m->data_len < sizeof(*eh) + sizeof(*ah) ||
	    ah->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REPLY) ||
	    ah->arp_data.arp_sip != peer)
		return 0;
	*mac = ah->arp_data.arp_sha;
	return 1;
}

static int run_dispatcher(int workers, rte_be32_t ip, rte_be32_t peer, uint64_t count,
			  uint64_t idle_s)
{
	uint64_t hz = rte_get_timer_hz(), last = 0, start;
	struct rte_eth_conf conf = { 0 };
	const struct rte_memzone *mz;
	struct rte_ring *rings[MAX_WORKERS], *tx;
	struct rte_mempool *pool;
	struct rte_mbuf *ms[BURST];
	struct shared *sh;
	uint64_t sent = 0, other = 0, full = 0;
	uint16_t port = 0;
	int next = 0, all_ready = 0, rc;

	if (rte_eth_dev_count_avail() == 0) {
		fprintf(stderr, "dpdk_dispatch: no ethdev port (pass one with --vdev)\n");
		return 2;
	}
	mz = rte_memzone_reserve("dispatch_shared", sizeof(*sh), rte_socket_id(), 0);
	pool = rte_pktmbuf_pool_create_by_ops("dispatch_pool", POOL_MBUFS, POOL_CACHE, 0,
					      RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id(),
					      POOL_OPS);
	tx = rte_ring_create("dispatch_tx", RING_SIZE, rte_socket_id(),
			     RING_F_MP_RTS_ENQ | RING_F_SC_DEQ);
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
	sh->workers = workers;
	rc = dpdk_port_start(port, &conf, pool);
	if (rc) {
		fprintf(stderr, "dpdk_dispatch: port %u: %s\n", port, rte_strerror(-rc));
		return 2;
	}
	rte_eth_macaddr_get(port, &sh->mac);
	sh->ip = ip;
	if (peer) {
		/* the clients' server: ARP every 100 ms for up to 5 s */
		uint64_t t0 = rte_get_timer_cycles(), next_arp = 0;
		int have = 0;

		sh->peer_ip = peer;
		while (!have) {
			unsigned int k;

			if (rte_get_timer_cycles() - t0 > 5 * hz) {
				fprintf(stderr, "dpdk_dispatch: no ARP reply from the server\n");
				return 2;
			}
			if (rte_get_timer_cycles() >= next_arp) {
				send_arp_request(port, pool, sh);
				next_arp = rte_get_timer_cycles() + hz / 10;
			}
			k = rte_eth_rx_burst(port, 0, ms, BURST);
			for (unsigned int i = 0; i < k; i++) {
				if (!have && arp_reply_of(ms[i], peer, &sh->peer_mac)) {
					have = 1;
					rte_pktmbuf_free(ms[i]);
				} else if (rte_pktmbuf_mtod(ms[i], struct rte_ether_hdr *)->ether_type ==
					   rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
					answer_arp(port, ms[i], ip);
				} else {
					rte_pktmbuf_free(ms[i]);
				}
			}
		}
		sh->client = 1;
	}
	printf("dispatcher ready workers=%d\n", workers);
	fflush(stdout);
	start = rte_get_timer_cycles();
	while (!count || sent < count) {
		unsigned int k = rte_eth_rx_burst(port, 0, ms, BURST);
		uint64_t now = rte_get_timer_cycles();

		if (peer && sh->clients_done == workers && !k && rte_ring_empty(tx))
			break;		/* every client has finished */

		/*
		 * -I: idle time counts from the first datagram, and only once
		 * every worker is up (the first clients may finish before the
		 * last one's EAL is initialised).
		 */
		if (!all_ready && sh->workers_ready >= workers) {
			all_ready = 1;
			if (last)
				last = now;
		} else if (!all_ready && now - start > STARTUP_S * hz) {
			fprintf(stderr, "dpdk_dispatch: only %d of %d workers came up in %d s\n",
				sh->workers_ready, workers, STARTUP_S);
			rc = 2;
			break;
		}
		if (k)
			last = now;
		else if (idle_s && all_ready && last && now - last > idle_s * hz)
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
			} else if (peer) {
				/* a reply: to the worker whose port it is for */
				struct rte_udp_hdr *uh = rte_pktmbuf_mtod_offset(ms[i],
					struct rte_udp_hdr *, sizeof(*eh) + sizeof(struct rte_ipv4_hdr));
				int w = rte_be_to_cpu_16(uh->dst_port) - CLIENT_PORT0;

				if (w < 0 || w >= workers) {
					rte_pktmbuf_free(ms[i]);
					other++;
				} else if (rte_ring_sp_enqueue(rings[w], ms[i])) {
					rte_pktmbuf_free(ms[i]);
					full++;
				} else {
					sh->handed[w]++;
					wake_worker(sh, w);
				}
			} else if (rte_ring_sp_enqueue(rings[next], ms[i])) {
				rte_pktmbuf_free(ms[i]);
				full++;
			} else {
				sh->handed[next]++;
				wake_worker(sh, next);
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
	for (int i = 0; i < workers; i++)
		wake_worker(sh, i);
	usleep(100000);
	printf("sent=%llu other=%llu ring_full=%llu workers_ready=%d\n",
	       (unsigned long long)sent, (unsigned long long)other,
	       (unsigned long long)full, sh->workers_ready);
	for (int i = 0; i < workers; i++)
		printf("handed_w%d=%llu echoed_w%d=%llu wakeups_w%d=%llu\n", i,
		       (unsigned long long)sh->handed[i], i,
		       (unsigned long long)sh->echoed[i], i,
		       (unsigned long long)sh->wakeups[i]);
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	return rc;
}

static void usage(void)
{
	fprintf(stderr, "usage: dpdk_dispatch [EAL options] -- -T WORKERS -l IPV4 [-N COUNT] [-I SECONDS]\n"
		"       dpdk_dispatch [EAL options] -- -T WORKERS -l IPV4 -c SERVER_IPV4\n"
		"       dpdk_dispatch [EAL options] --proc-type=secondary -- -w INDEX -p PORT "
		"[-n COUNT] [-m SIZE] [-t MS] [-P]\n"
		"       dpdk_dispatch [EAL options] --proc-type=secondary -- -w INDEX [-P]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int eal, opt, workers = 0, idx = -1, rc, port = 0, size = 64;
	uint64_t count = 0, idle = 0;
	long rounds = 1000, timeout_ms = 1000;
	struct in_addr a = { 0 }, peer = { 0 };

	eal = rte_eal_init(argc, argv);
	if (eal < 0) {
		fprintf(stderr, "dpdk_dispatch: EAL initialisation failed (%s); are hugepages "
			"reserved and hugetlbfs mounted, and for a worker, is the dispatcher "
			"running?\n", rte_strerror(rte_errno));
		return 2;
	}
	argc -= eal;
	argv += eal;
	while ((opt = getopt(argc, argv, "T:l:N:I:w:c:p:n:m:t:P")) != -1) {
		switch (opt) {
		case 'T': workers = atoi(optarg); break;
		case 'l':
			if (inet_pton(AF_INET, optarg, &a) != 1)
				usage();
			break;
		case 'c':
			if (inet_pton(AF_INET, optarg, &peer) != 1)
				usage();
			break;
		case 'N': count = strtoull(optarg, NULL, 0); break;
		case 'I': idle = strtoull(optarg, NULL, 0); break;
		case 'w': idx = atoi(optarg); break;
		case 'p': port = atoi(optarg); break;
		case 'n': rounds = atol(optarg); break;
		case 'm': size = atoi(optarg); break;
		case 't': timeout_ms = atol(optarg); break;
		case 'P': polling = 1; break;
		default: usage();
		}
	}
	if (rte_eal_process_type() == RTE_PROC_PRIMARY) {
		if (workers < 1 || workers > MAX_WORKERS || !a.s_addr)
			usage();
		rc = run_dispatcher(workers, a.s_addr, peer.s_addr, count, idle);
	} else if (port) {
		/* a client's request starts with its 8-byte number */
		if (idx < 0 || idx >= MAX_WORKERS || port > 65535 || rounds < 1 ||
		    size < 8 || size > 1472 || timeout_ms < 1)
			usage();
		rc = run_client(idx, port, rounds, size, timeout_ms);
	} else {
		if (idx < 0 || idx >= MAX_WORKERS)
			usage();
		rc = run_worker(idx);
	}
	rte_eal_cleanup();
	return rc;
}
