// SPDX-License-Identifier: MIT
/*
 * dpdk_pingpong - UDP ping-pong client on DPDK's ethdev API.
 *
 *   dpdk_pingpong [EAL options] -- -s IPV4 -l IPV4 [-p PORT] [-m SIZE]
 *                 [-n COUNT] [-q] [-k MARK] [-W] [-M] [-c]
 *
 * Sends COUNT datagrams of SIZE bytes to IPV4:PORT from -l's address, one
 * at a time, each after the previous reply, busy-polling the port's RX
 * queue. The requests' headers are built once (a template each frame
 * copies), and where the port offers IPv4 and UDP checksum offload both
 * ways it does the checksums (-c: not; then the IPv4 checksum is in the
 * template and the UDP checksum is 0); the server is any UDP echo server (udp_echo). The peer's MAC
 * address is learnt with ARP, and ARP requests for our address are
 * answered, as the kernel no longer sees the port's frames. Until the
 * server's first echo (up to 10 s), a warm-up datagram goes out every
 * 200 ms. Every reply's addresses, ports, length and payload are checked.
 *
 * Prints the keys udp_pingpong prints: size, datagrams, bad, rtt_*_us,
 * elapsed_us and cpu_busy_pct (100: the thread never sleeps). Where the
 * port gives the NIC's timestamps (RX timestamp offload and timesync's TX
 * timestamp, as net_accio does), each round trip's NIC-to-NIC time
 * RTT_hw = RX stamp of the reply - TX stamp of the request is taken too,
 * and the client's processing time RTT_sw - RTT_hw is printed as
 * hw_samples, rtt_hw_avg_us, proc_p50_us, proc_p99_us and proc_cdf_us.
 * -k MARK sends "@@MARK@@" to the server's port 9 (discard) right before the
 * measured round trips: the start of a section in a capture of the wire
 * (eval/wirecap.py), where the kernel cannot send it for us.
 *
 * A round trip's time starts before the request's frame is built (the mbuf,
 * headers and payload copy are what send() does for a socket) and ends when
 * the reply's payload is copied out.
 * -W marks each measured round trip as a window of eval's instruction
 * counter (eval/breakdown.py; eval/prof/prof_marks.h) and waits for the reply on
 * rte_eth_rx_queue_count() with counting paused, so that the empty polls
 * (waiting, not work) are left out and the poll that takes the reply is
 * counted in full; a port without rx_queue_count is polled as usual.
 * -M prints the process's executable mappings at the end ("map " lines from
 * /proc/self/maps) for the counter's symbols.
 * Exit status: 0 when every reply came back intact, 1 otherwise, 2 on a
 * setup error (no port, no memory, no ARP reply, no echo).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_arp.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#if __has_include(<rte_ip4.h>)
#include <rte_ip4.h>
#else
#include <rte_ip.h>		/* DPDK before 24.11 */
#endif
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_udp.h>

#include "dpdk_frames.h"
#include "prof_marks.h"		/* eval's instruction counter: windows, pauses, spans */

#define CSUM_RX (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM)
#define CSUM_TX (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM)
#define BURST 32
#define REPLY_TIMEOUT_NS 2000000000ull

struct ctx {
	uint16_t port;
	struct rte_mempool *pool;
	struct dpdk_flow f;	/* our and the server's addresses and ports */
	int have_peer;
	int ts_offset;		/* RX timestamp dynfield, -1: none */
	uint64_t ts_flag;
	int tx_ts;		/* the port gives TX timestamps */
	int csum;		/* the port checks and fills in checksums */
	struct dpdk_tmpl tmpl;	/* the requests' headers, built once */
	uint64_t rx_ts;		/* RX stamp of the last reply, 0: none */
};

static void send_one(struct ctx *c, struct rte_mbuf *m)
{
	while (rte_eth_tx_burst(c->port, 0, &m, 1) == 0)
		;
}

static void send_arp(struct ctx *c, const struct rte_ether_addr *tha, rte_be32_t tip)
{
	struct rte_mbuf *m = dpdk_arp_frame(c->pool, &c->f.mac, c->f.ip, tha, tip);

	if (m)
		send_one(c, m);
}

/* Handles an ARP frame; learns the peer's address from any ARP of it. */
static void on_arp(struct ctx *c, struct rte_mbuf *m)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *ah = (struct rte_arp_hdr *)(eh + 1);

	if (m->data_len < sizeof(*eh) + sizeof(*ah))
		return;
	if (ah->arp_data.arp_sip == c->f.peer_ip) {
		c->f.peer_mac = ah->arp_data.arp_sha;
		c->have_peer = 1;
	}
	if (ah->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) &&
	    ah->arp_data.arp_tip == c->f.ip)
		send_arp(c, &ah->arp_data.arp_sha,
			 ah->arp_data.arp_sip);
}

/*
 * Polls the RX queue once. Returns the number of bytes of a UDP reply from
 * the peer (payload copied to buf, at most cap), -2 for a reply that is
 * malformed, or -1 when no reply arrived; ARP is served on the way.
 */
static int poll_reply(struct ctx *c, uint8_t *buf, int cap)
{
	struct rte_mbuf *ms[BURST];
	int n = rte_eth_rx_burst(c->port, 0, ms, BURST), got = -1;

	for (int i = 0; i < n; i++) {
		struct rte_mbuf *m = ms[i];
		struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		struct rte_ipv4_hdr *ih = (struct rte_ipv4_hdr *)(eh + 1);
		struct rte_udp_hdr *uh;
		int len;

		if (m->data_len >= sizeof(*eh) &&
		    eh->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
			on_arp(c, m);
		} else if (got == -1 && m->data_len >= DPDK_UDP_HDRS &&
			   eh->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) &&
			   ih->next_proto_id == IPPROTO_UDP && ih->src_addr == c->f.peer_ip &&
			   ih->dst_addr == c->f.ip) {
			uh = (struct rte_udp_hdr *)((uint8_t *)ih + (ih->version_ihl & 15) * 4);
			len = rte_be_to_cpu_16(uh->dgram_len) - (int)sizeof(*uh);
			if (uh->src_port != c->f.peer_port || uh->dst_port != c->f.port)
				; /* someone else's datagram */
			else if (len < 0 || len > cap ||
				 (uint8_t *)(uh + 1) + len > rte_pktmbuf_mtod(m, uint8_t *) + m->data_len)
				got = -2;
			else
				memcpy(buf, uh + 1, got = len);
			if (got >= 0 && c->ts_offset >= 0 && (m->ol_flags & c->ts_flag))
				c->rx_ts = *RTE_MBUF_DYNFIELD(m, c->ts_offset,
							      rte_mbuf_timestamp_t *);
		}
		rte_pktmbuf_free(m);
	}
	return got;
}

/*
 * -W: waits until the port holds a frame, the instruction counter paused
 * (waiting is not work). Returns 0 when the port cannot count its frames.
 */
static int wait_counted(struct ctx *c, uint64_t t0)
{
	int n;

	count_pause();
	while ((n = rte_eth_rx_queue_count(c->port, 0)) == 0 &&
	       dpdk_now_ns() - t0 <= REPLY_TIMEOUT_NS)
		;
	count_resume();
	return n >= 0;
}

static void print_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("map %s", line);
	fclose(f);
}

static struct rte_mbuf *build_udp(struct ctx *c, const uint8_t *payload, int size)
{
	if (c->tmpl.size != size)
		dpdk_tmpl_init(&c->tmpl, &c->f, size, c->csum);
	return dpdk_tmpl_frame(c->pool, &c->tmpl, payload);
}

static int port_init(struct ctx *c)
{
	struct rte_eth_conf conf = { 0 };
	struct rte_eth_dev_info info;
	int rc;

	if (rte_eth_dev_count_avail() == 0) {
		fprintf(stderr, "dpdk_pingpong: no ethdev port (pass one with --vdev, "
			"e.g. --vdev net_af_xdp0,iface=eth0)\n");
		return -1;
	}
	c->port = 0;
	c->ts_offset = -1;
	rc = rte_eth_dev_info_get(c->port, &info);
	if (rc == 0 && (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP))
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
	/* checksums in the NIC where it offers them both ways (not with -c) */
	if (rc == 0 && c->csum &&
	    (info.rx_offload_capa & CSUM_RX) == CSUM_RX && (info.tx_offload_capa & CSUM_TX) == CSUM_TX) {
		conf.rxmode.offloads |= CSUM_RX;
		conf.txmode.offloads |= CSUM_TX;
	} else {
		c->csum = 0;
	}
	if (rc == 0)
		rc = dpdk_port_start(c->port, &conf, c->pool);
	if (rc == 0)
		rc = rte_eth_macaddr_get(c->port, &c->f.mac);
	if (rc) {
		fprintf(stderr, "dpdk_pingpong: port %u (%s): %s\n", c->port,
			info.driver_name ? info.driver_name : "?", rte_strerror(-rc));
		return -1;
	}
	rte_eth_promiscuous_enable(c->port);
	if (conf.rxmode.offloads & RTE_ETH_RX_OFFLOAD_TIMESTAMP) {
		c->ts_offset = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, NULL);
		rc = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, NULL);
		if (c->ts_offset < 0 || rc < 0)
			c->ts_offset = -1;
		else
			c->ts_flag = 1ull << rc;
	}
	c->tx_ts = c->ts_offset >= 0 && rte_eth_timesync_enable(c->port) == 0;
	return 0;
}

/* The NIC's send stamp of the last request, 0 when the port gives none:
 * its completion was posted before the reply came. */
static uint64_t tx_stamp(struct ctx *c)
{
	struct timespec ts;

	if (!c->tx_ts)
		return 0;
	for (int i = 0; i < 1000; i++)
		if (rte_eth_timesync_read_tx_timestamp(c->port, &ts) == 0)
			return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: dpdk_pingpong [EAL options] -- -s SERVER_IPV4 -l LOCAL_IPV4 "
		"[-p PORT] [-m SIZE] [-n COUNT] [-q] [-k MARK] [-W] [-M] [-c]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct ctx c = { .csum = 1, .tmpl.size = -1 };
	int size = 64, quiet = 0, windows = 0, can_count = 1, maps = 0, opt, eal;
	const char *mark = NULL;
	long count = 1000, bad = 0;
	uint8_t out[1472], in[1472];
	struct in_addr a;
	uint64_t *rtt, *proc, t0, start, end, hw_sum = 0;
	long hw_n = 0;

	eal = rte_eal_init(argc, argv);
	if (eal < 0) {
		fprintf(stderr, "dpdk_pingpong: EAL initialisation failed (%s); see EAL's "
			"messages above: are hugepages reserved and hugetlbfs mounted?\n",
			rte_strerror(rte_errno));
		return 2;
	}
	argc -= eal;
	argv += eal;
	c.f.peer_port = rte_cpu_to_be_16(7000);
	c.f.port = rte_cpu_to_be_16(40000 + (getpid() % 20000));
	while ((opt = getopt(argc, argv, "s:l:p:m:n:qk:WMc")) != -1) {
		switch (opt) {
		case 's':
		case 'l':
			if (inet_pton(AF_INET, optarg, &a) != 1)
				usage();
			*(opt == 's' ? &c.f.peer_ip : &c.f.ip) = a.s_addr;
			break;
		case 'p': c.f.peer_port = rte_cpu_to_be_16(atoi(optarg)); break;
		case 'm': size = atoi(optarg); break;
		case 'n': count = atol(optarg); break;
		case 'q': quiet = 1; break;
		case 'k': mark = optarg; break;
		case 'W': windows = 1; break;
		case 'M': maps = 1; break;
		case 'c': c.csum = 0; break;
		default: usage();
		}
	}
	if (!c.f.peer_ip || !c.f.ip || size < 1 || size > (int)sizeof(out) || count < 1)
		usage();
	rtt = calloc(count, sizeof(*rtt));
	proc = calloc(count, sizeof(*proc));
	c.pool = rte_pktmbuf_pool_create("pp", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					 rte_socket_id());
	if (!rtt || !proc || !c.pool) {
		fprintf(stderr, "dpdk_pingpong: no memory for mbufs: %s\n",
			rte_strerror(rte_errno));
		return 2;
	}
	if (port_init(&c))
		return 2;

	/* resolve the server: ARP every 100 ms for up to 5 s */
	t0 = dpdk_now_ns();
	for (uint64_t next = 0; !c.have_peer; ) {
		if (dpdk_now_ns() - t0 > 5000000000ull) {
			fprintf(stderr, "dpdk_pingpong: no ARP reply from the server\n");
			return 2;
		}
		if (dpdk_now_ns() >= next) {
			send_arp(&c, NULL, c.f.peer_ip);
			next = dpdk_now_ns() + 100000000ull;
		}
		poll_reply(&c, in, sizeof(in));
	}

	/* the server may not listen yet: one datagram every 200 ms until an
	 * intact echo, for up to 10 s */
	memset(out, 0xa5, size);
	t0 = dpdk_now_ns();
	for (uint64_t next = 0;; ) {
		int got;

		if (dpdk_now_ns() - t0 > 10000000000ull) {
			fprintf(stderr, "dpdk_pingpong: no echo from the server\n");
			return 2;
		}
		if (dpdk_now_ns() >= next) {
			struct rte_mbuf *m = build_udp(&c, out, size);

			if (m)
				send_one(&c, m);
			next = dpdk_now_ns() + 200000000ull;
		}
		got = poll_reply(&c, in, sizeof(in));
		if (got == size && !memcmp(in, out, size))
			break;
	}
	/* a late echo of the warm-up must not be taken for a reply */
	for (t0 = dpdk_now_ns(); dpdk_now_ns() - t0 < 300000000ull; )
		poll_reply(&c, in, sizeof(in));
	tx_stamp(&c);	/* the warm-up's stamps are not a round trip's */
	if (mark) {
		/*
		 * -k: "@@MARK@@" to the server's discard port (9) right before
		 * the measured round trips: a section start in a capture of
		 * the wire (eval/wirecap.py), sent the way the requests are.
		 */
		char text[128];
		uint16_t rport = c.f.peer_port;
		struct rte_mbuf *m;
		int n = snprintf(text, sizeof(text), "@@%s@@", mark);

		c.f.peer_port = rte_cpu_to_be_16(9);
		m = dpdk_udp_frame(c.pool, &c.f, (const uint8_t *)text,
				   n < (int)sizeof(text) ? n : (int)sizeof(text) - 1);
		c.f.peer_port = rport;
		if (m)
			send_one(&c, m);
	}

	start = dpdk_now_ns();
	span_mark(1);
	for (long i = 0; i < count; i++) {
		struct rte_mbuf *m;
		int got;

		for (int j = 0; j < size; j++)
			out[j] = (uint8_t)(i * 7 + j);
		memcpy(out, &i, size < (int)sizeof(i) ? size : (int)sizeof(i));
		c.rx_ts = 0;
		t0 = dpdk_now_ns();
		if (windows)
			window_open();
		m = build_udp(&c, out, size);
		if (!m) {
			fprintf(stderr, "dpdk_pingpong: mbuf pool empty\n");
			return 2;
		}
		send_one(&c, m);
		if (windows && can_count)
			can_count = wait_counted(&c, t0);
		while ((got = poll_reply(&c, in, sizeof(in))) == -1) {
			if (dpdk_now_ns() - t0 > REPLY_TIMEOUT_NS)
				break;
		}
		if (windows)
			window_close();
		rtt[i] = dpdk_now_ns() - t0;
		if (got >= 0 && c.tx_ts) {
			uint64_t tx = tx_stamp(&c);

			/* RTT_hw from the NIC's stamps; processing = RTT_sw - RTT_hw */
			if (tx && c.rx_ts > tx && c.rx_ts - tx <= rtt[i]) {
				hw_sum += c.rx_ts - tx;
				proc[hw_n++] = rtt[i] - (c.rx_ts - tx);
			}
		}
		if (got != size || memcmp(in, out, size)) {
			bad++;
			if (!quiet)
				fprintf(stderr, "dpdk_pingpong: datagram %ld: %s\n", i,
					got == -1 ? "no reply" : got == -2 ? "malformed reply" :
					"reply differs from what was sent");
		}
	}
	span_mark(0);
	end = dpdk_now_ns();
	qsort(rtt, count, sizeof(*rtt), dpdk_cmp_u64);
	printf("size=%d datagrams=%ld bad=%ld\n", size, count, bad);
	printf("rtt_p50_us=%.1f\nrtt_p90_us=%.1f\nrtt_p99_us=%.1f\nrtt_max_us=%.1f\n",
	       rtt[count / 2] / 1e3, rtt[count * 90 / 100] / 1e3, rtt[count * 99 / 100] / 1e3,
	       rtt[count - 1] / 1e3);
	if (hw_n) {
		qsort(proc, hw_n, sizeof(*proc), dpdk_cmp_u64);
		printf("hw_samples=%ld\nrtt_hw_avg_us=%.1f\nproc_p50_us=%.1f\nproc_p99_us=%.1f\n",
		       hw_n, hw_sum / 1e3 / hw_n, proc[hw_n / 2] / 1e3, proc[hw_n * 99 / 100] / 1e3);
		/* the distribution: percentiles 1, 5, 10, ..., 95, 99, 100 */
		printf("proc_cdf_us=%.1f", proc[hw_n / 100] / 1e3);
		for (int i = 5; i < 100; i += 5)
			printf(",%.1f", proc[hw_n * i / 100] / 1e3);
		printf(",%.1f,%.1f\n", proc[hw_n * 99 / 100] / 1e3, proc[hw_n - 1] / 1e3);
	} else {
		printf("rtt_hw_avg_us=n/a\n");
	}
	printf("elapsed_us=%llu\ncpu_busy_pct=100.0\n", (unsigned long long)((end - start) / 1000));
	if (windows)
		printf("empty_poll_waits=%s\n", can_count ? "paused" : "counted");
	if (maps)
		print_maps();
	rte_eth_dev_stop(c.port);
	rte_eth_dev_close(c.port);
	rte_eal_cleanup();
	return bad ? 1 : 0;
}
