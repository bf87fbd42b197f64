// SPDX-License-Identifier: MIT
/*
 * net_accio - DPDK poll-mode driver of the Accio NIC.
 *
 * The NIC (hardware/regmap/accio_nic.rdl) takes transmit and receive
 * requests that name physical buffer addresses and reports each finished
 * transfer in a completion queue, in order, with a hardware timestamp. This
 * driver posts DPDK's mbufs to it directly: no kernel on the data path.
 *
 *   --vdev net_accio0[,uio=/dev/uioN]
 *
 * The registers come from the kernel's accio-nic-uio driver (a UIO device,
 * accio_nic_uio.c in the kernel series), which the NIC is handed to with
 * driver_override; with no uio= the first UIO device named "accio-nic" is
 * taken. The NIC DMAs to
 * physical addresses, so mbufs must come from hugepages with IOVA as PA.
 *
 * One RX and one TX queue, at most QUEUE_DEPTH descriptors each (the NIC's
 * request queues), one segment per frame. Offloads: IPv4, UDP and TCP
 * checksums both ways (RX: the NIC drops a frame with a bad one and marks a
 * checked one GOOD; TX: RTE_MBUF_F_TX_IP_CKSUM or an L4 checksum flag on an
 * mbuf has the NIC fill in both), RX timestamps (the NIC's
 * clock, ns, in the mbuf's timestamp field) and IEEE 1588-style timesync
 * reads (rte_eth_timesync_read_rx/tx_timestamp, rte_eth_read_clock).
 * rte_eth_rx_queue_count reads the NIC's count of waiting receive completions.
 * Secondary processes attach to the port but cannot move frames: the primary
 * owns the NIC.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bus_vdev_driver.h>
#include <ethdev_driver.h>
#include <ethdev_vdev.h>
#include <rte_io.h>
#include <rte_kvargs.h>
#include <rte_malloc.h>
#include <rte_mbuf_dyn.h>

#include "accio_offsets.h"

RTE_LOG_REGISTER_DEFAULT(accio_logtype, NOTICE);
#define ACCIO_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, accio_logtype, "net_accio: " fmt "\n", ##__VA_ARGS__)

#define ACCIO_UIO_ARG "uio"
#define ACCIO_UIO_NAME "accio-nic"
#define ACCIO_MIN_FRAME 14
#define ACCIO_MAX_FRAME 1518
#define ACCIO_MAX_BUF 16384

/* checksum offload (register map 1.1): IPv4 with TCP or UDP, both ways */
#define ACCIO_RX_CKSUM (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM | \
			RTE_ETH_RX_OFFLOAD_TCP_CKSUM)
#define ACCIO_TX_CKSUM (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM | \
			RTE_ETH_TX_OFFLOAD_TCP_CKSUM)

struct accio_rxq {
	volatile uint8_t *regs;
	struct rte_eth_dev_data *data;
	struct rte_mempool *mp;
	struct rte_mbuf **sw;		/* posted buffers, oldest at head */
	uint16_t nb, head, posted, port;
	int ts_on;			/* read each frame's timestamp */
	int ts_field;			/* ... and put it in the mbuf */
	int csum_on;			/* the NIC checks checksums (CTRL.RXCSUM) */
	uint64_t last_ts;
	uint64_t pkts, bytes;
};

struct accio_txq {
	volatile uint8_t *regs;
	struct rte_mbuf **sw;		/* frames in the NIC, oldest at head */
	uint16_t nb, head, inflight;
	int ts_on;
	uint64_t last_ts;
	int ts_fresh;
	uint64_t pkts, bytes, errors;
};

struct accio_priv {
	volatile uint8_t *regs;
	size_t map_len;
	int uio_fd;
	char uio[64];
	uint16_t depth;
	uint64_t link_mbps;
	struct rte_ether_addr mac;
	int timesync;
	int ts_offset;			/* RX timestamp dynfield, -1 until registered */
	uint64_t ts_flag;
	uint64_t base_nobuf, base_oversize, base_runt;	/* at stats reset */
};

static inline uint64_t rd(volatile uint8_t *regs, unsigned int off)
{
	return rte_read64(regs + off);	/* the read, then a fence before later reads */
}

static inline void wr(volatile uint8_t *regs, unsigned int off, uint64_t v)
{
	rte_write64(v, regs + off);	/* a fence (buffers written before), then the write */
}

/* ---- data path ------------------------------------------------------- */

static void rx_post(struct accio_rxq *q, struct rte_mbuf *m)
{
	q->sw[(q->head + q->posted) % q->nb] = m;
	q->posted++;
	wr(q->regs, ACCIO_NIC_RECV_REQ, rte_mbuf_data_iova_default(m) & ACCIO_NIC_RECV_REQ_ADDR_MASK);
}

static uint16_t accio_rx_burst(void *queue, struct rte_mbuf **pkts, uint16_t n)
{
	struct accio_rxq *q = queue;
	struct accio_priv *p = q->data->dev_private;
	uint16_t got = 0;

	while (got < n && q->posted) {
		uint64_t c = rd(q->regs, ACCIO_NIC_RECV_COMP), ts = 0;
		struct rte_mbuf *m, *fresh;
		uint16_t len;

		if (!(c & ACCIO_NIC_RECV_COMP_VALID_MASK))
			break;
		len = c & ACCIO_NIC_RECV_COMP_LEN_MASK;
		if (q->ts_on)
			ts = rd(q->regs, ACCIO_NIC_RECV_TSTAMP);
		m = q->sw[q->head];
		q->head = (q->head + 1) % q->nb;
		q->posted--;
		fresh = rte_mbuf_raw_alloc(q->mp);
		if (!fresh) {
			/* keep the NIC's buffer count: the frame is dropped */
			q->data->rx_mbuf_alloc_failed++;
			rx_post(q, m);
			continue;
		}
		rx_post(q, fresh);
		rte_pktmbuf_reset(m);
		m->data_len = m->pkt_len = len;
		m->port = q->port;
		/* a frame with a bad checksum never arrives: the NIC drops it */
		if (q->csum_on && (c & ACCIO_NIC_RECV_COMP_CSUM_OK_MASK))
			m->ol_flags |= RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
		if (q->ts_field) {
			*RTE_MBUF_DYNFIELD(m, p->ts_offset, rte_mbuf_timestamp_t *) = ts;
			m->ol_flags |= p->ts_flag;
		}
		if (q->ts_on)
			q->last_ts = ts;
		q->pkts++;
		q->bytes += len;
		pkts[got++] = m;
	}
	return got;
}

/*
 * rte_eth_rx_queue_count(): frames the NIC has written and the queue has
 * not handed out yet (the completions waiting in RECV_COMP), one register
 * read, nothing taken. A program can wait on it without consuming frames.
 */
static uint32_t accio_rx_queue_count(void *queue)
{
	struct accio_rxq *q = queue;

	return (rd(q->regs, ACCIO_NIC_COUNTS) & ACCIO_NIC_COUNTS_RECV_COMP_CNT_MASK) >>
	       ACCIO_NIC_COUNTS_RECV_COMP_CNT_SHIFT;
}

/* Takes the NIC's send completions: frees the frames, keeps the last timestamp. */
static void tx_reap(struct accio_txq *q)
{
	while (q->inflight) {
		uint64_t c = rd(q->regs, ACCIO_NIC_SEND_COMP);
		struct rte_mbuf *m;

		if (!(c & ACCIO_NIC_SEND_COMP_VALID_MASK))
			break;
		if (q->ts_on) {
			q->last_ts = rd(q->regs, ACCIO_NIC_SEND_TSTAMP);
			q->ts_fresh = 1;
		}
		m = q->sw[q->head];
		q->head = (q->head + 1) % q->nb;
		q->inflight--;
		if (c & ACCIO_NIC_SEND_COMP_ERROR_MASK) {
			q->errors++;
		} else {
			q->pkts++;
			q->bytes += c & ACCIO_NIC_SEND_COMP_LEN_MASK;
		}
		rte_pktmbuf_free(m);
	}
}

static uint16_t accio_tx_burst(void *queue, struct rte_mbuf **pkts, uint16_t n)
{
	struct accio_txq *q = queue;
	uint16_t sent = 0;

	tx_reap(q);
	while (sent < n && q->inflight < q->nb) {
		struct rte_mbuf *m = pkts[sent++];
		uint32_t len = m->pkt_len;
		/* the NIC fills in the IPv4 and the TCP/UDP checksum */
		uint64_t csum = m->ol_flags & (RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_L4_MASK) ?
				ACCIO_NIC_SEND_REQ_CSUM_MASK : 0;

		if (m->nb_segs != 1 || len < ACCIO_MIN_FRAME || len > ACCIO_MAX_FRAME) {
			/* the NIC takes one buffer per frame, 14..1518 bytes */
			q->errors++;
			rte_pktmbuf_free(m);
			continue;
		}
		q->sw[(q->head + q->inflight) % q->nb] = m;
		q->inflight++;
		wr(q->regs, ACCIO_NIC_SEND_REQ,
		   (rte_mbuf_data_iova(m) & ACCIO_NIC_SEND_REQ_ADDR_MASK) | csum |
		   ((uint64_t)len << ACCIO_NIC_SEND_REQ_LEN_SHIFT));
	}
	return sent;
}

static uint16_t accio_no_burst(void *queue __rte_unused, struct rte_mbuf **pkts __rte_unused,
			       uint16_t n __rte_unused)
{
	return 0;	/* a secondary process: the primary owns the NIC */
}

/* ---- control path ---------------------------------------------------- */

/* the queues, NULL before they are configured and set up */
static struct accio_rxq *rxq0(struct rte_eth_dev *dev)
{
	return dev->data->rx_queues && dev->data->nb_rx_queues ? dev->data->rx_queues[0] : NULL;
}

static struct accio_txq *txq0(struct rte_eth_dev *dev)
{
	return dev->data->tx_queues && dev->data->nb_tx_queues ? dev->data->tx_queues[0] : NULL;
}

static void accio_quiesce(struct accio_priv *p)
{
	wr(p->regs, ACCIO_NIC_INTR_MASK, 0);
	wr(p->regs, ACCIO_NIC_CTRL, ACCIO_NIC_CTRL_QRESET_MASK);	/* clears ENABLE */
}

static void accio_set_ctrl(struct rte_eth_dev *dev)
{
	struct accio_priv *p = dev->data->dev_private;
	uint64_t v = dev->data->dev_started ? ACCIO_NIC_CTRL_ENABLE_MASK : 0;

	if (dev->data->promiscuous)
		v |= ACCIO_NIC_CTRL_PROMISC_MASK;
	if (dev->data->dev_conf.rxmode.offloads & ACCIO_RX_CKSUM)
		v |= ACCIO_NIC_CTRL_RXCSUM_MASK;
	wr(p->regs, ACCIO_NIC_CTRL, v);
}

static void accio_write_mac(struct accio_priv *p)
{
	uint64_t v = 0;

	for (int i = 0; i < RTE_ETHER_ADDR_LEN; i++)
		v |= (uint64_t)p->mac.addr_bytes[i] << (8 * i);
	wr(p->regs, ACCIO_NIC_MACADDR, v);
}

static void rxq_drop_all(struct accio_rxq *q)
{
	for (; q->posted; q->posted--, q->head = (q->head + 1) % q->nb)
		rte_pktmbuf_free(q->sw[q->head]);
	q->head = 0;
}

static void txq_drop_all(struct accio_txq *q)
{
	for (; q->inflight; q->inflight--, q->head = (q->head + 1) % q->nb)
		rte_pktmbuf_free(q->sw[q->head]);
	q->head = 0;
}

static int accio_dev_configure(struct rte_eth_dev *dev)
{
	struct accio_priv *p = dev->data->dev_private;
	uint64_t rx_off = dev->data->dev_conf.rxmode.offloads;

	if (rx_off & RTE_ETH_RX_OFFLOAD_TIMESTAMP && p->ts_offset < 0 &&
	    rte_mbuf_dyn_rx_timestamp_register(&p->ts_offset, &p->ts_flag) < 0) {
		ACCIO_LOG(ERR, "cannot register the mbuf timestamp field: %s",
			  rte_strerror(rte_errno));
		return -rte_errno;
	}
	return 0;
}

static int accio_dev_start(struct rte_eth_dev *dev)
{
	struct accio_priv *p = dev->data->dev_private;
	struct accio_rxq *rq = rxq0(dev);
	struct accio_txq *tq = txq0(dev);
	uint32_t room;

	if (!rq || !tq)
		return -EINVAL;
	room = rte_pktmbuf_data_room_size(rq->mp) - RTE_PKTMBUF_HEADROOM;
	accio_quiesce(p);
	rxq_drop_all(rq);
	txq_drop_all(tq);
	wr(p->regs, ACCIO_NIC_RX_BUF_LEN, RTE_MIN(room, (uint32_t)ACCIO_MAX_BUF));
	accio_write_mac(p);
	rq->ts_field = dev->data->dev_conf.rxmode.offloads & RTE_ETH_RX_OFFLOAD_TIMESTAMP &&
		       p->ts_offset >= 0;
	rq->ts_on = rq->ts_field || p->timesync;
	rq->csum_on = !!(dev->data->dev_conf.rxmode.offloads & ACCIO_RX_CKSUM);
	tq->ts_on = p->timesync;
	while (rq->posted < rq->nb) {
		struct rte_mbuf *m = rte_mbuf_raw_alloc(rq->mp);

		if (!m) {
			ACCIO_LOG(ERR, "mempool %s: no mbuf for receive buffer %u of %u",
				  rq->mp->name, rq->posted, rq->nb);
			rxq_drop_all(rq);
			accio_quiesce(p);
			return -ENOMEM;
		}
		rx_post(rq, m);
	}
	dev->data->dev_started = 1;
	dev->data->rx_queue_state[0] = RTE_ETH_QUEUE_STATE_STARTED;
	dev->data->tx_queue_state[0] = RTE_ETH_QUEUE_STATE_STARTED;
	accio_set_ctrl(dev);
	dev->data->dev_link.link_status =
		!!(rd(p->regs, ACCIO_NIC_STATUS) & ACCIO_NIC_STATUS_LINK_UP_MASK);
	return 0;
}

static int accio_dev_stop(struct rte_eth_dev *dev)
{
	struct accio_priv *p = dev->data->dev_private;
	struct accio_rxq *rq = rxq0(dev);
	struct accio_txq *tq = txq0(dev);

	/* empty the NIC's queues before the buffers they name are freed */
	accio_quiesce(p);
	if (rq)
		rxq_drop_all(rq);
	if (tq)
		txq_drop_all(tq);
	dev->data->dev_started = 0;
	dev->data->dev_link.link_status = RTE_ETH_LINK_DOWN;
	dev->data->rx_queue_state[0] = RTE_ETH_QUEUE_STATE_STOPPED;
	dev->data->tx_queue_state[0] = RTE_ETH_QUEUE_STATE_STOPPED;
	return 0;
}

static void accio_rx_queue_release(struct rte_eth_dev *dev, uint16_t qid)
{
	struct accio_rxq *q = qid < dev->data->nb_rx_queues ? dev->data->rx_queues[qid] : NULL;

	if (!q)
		return;
	rxq_drop_all(q);
	rte_free(q->sw);
	rte_free(q);
	dev->data->rx_queues[qid] = NULL;
}

static void accio_tx_queue_release(struct rte_eth_dev *dev, uint16_t qid)
{
	struct accio_txq *q = qid < dev->data->nb_tx_queues ? dev->data->tx_queues[qid] : NULL;

	if (!q)
		return;
	txq_drop_all(q);
	rte_free(q->sw);
	rte_free(q);
	dev->data->tx_queues[qid] = NULL;
}

static int accio_dev_close(struct rte_eth_dev *dev)
{
	struct accio_priv *p = dev->data->dev_private;

	if (rte_eal_process_type() != RTE_PROC_PRIMARY || !p->regs)
		return 0;
	if (dev->data->dev_started)
		accio_dev_stop(dev);
	accio_quiesce(p);
	accio_rx_queue_release(dev, 0);
	accio_tx_queue_release(dev, 0);
	munmap((void *)(uintptr_t)p->regs, p->map_len);
	close(p->uio_fd);	/* the kernel quiesces the NIC again on the last close */
	p->regs = NULL;
	return 0;
}

static int accio_dev_info(struct rte_eth_dev *dev, struct rte_eth_dev_info *info)
{
	struct accio_priv *p = dev->data->dev_private;

	info->max_mac_addrs = 1;
	info->max_rx_queues = 1;
	info->max_tx_queues = 1;
	info->max_rx_pktlen = ACCIO_MAX_FRAME;
	info->min_rx_bufsize = 64;
	info->min_mtu = RTE_ETHER_MIN_MTU;
	info->max_mtu = RTE_ETHER_MTU;
	info->rx_desc_lim.nb_max = p->depth;
	info->rx_desc_lim.nb_min = 1;
	info->rx_desc_lim.nb_align = 1;
	info->tx_desc_lim.nb_max = p->depth;
	info->tx_desc_lim.nb_min = 1;
	info->tx_desc_lim.nb_align = 1;
	info->rx_offload_capa = RTE_ETH_RX_OFFLOAD_TIMESTAMP | ACCIO_RX_CKSUM;
	info->rx_queue_offload_capa = RTE_ETH_RX_OFFLOAD_TIMESTAMP | ACCIO_RX_CKSUM;
	info->tx_offload_capa = ACCIO_TX_CKSUM;
	info->default_rxportconf.ring_size = p->depth;
	info->default_txportconf.ring_size = p->depth;
	info->default_rxportconf.burst_size = 32;
	info->default_txportconf.burst_size = 32;
	info->speed_capa = p->link_mbps >= 10000 ? RTE_ETH_LINK_SPEED_10G :
			   p->link_mbps >= 1000 ? RTE_ETH_LINK_SPEED_1G : RTE_ETH_LINK_SPEED_100M;
	return 0;
}

static int accio_rx_queue_setup(struct rte_eth_dev *dev, uint16_t qid, uint16_t nb,
				unsigned int socket, const struct rte_eth_rxconf *conf __rte_unused,
				struct rte_mempool *mp)
{
	struct accio_priv *p = dev->data->dev_private;
	uint32_t room = rte_pktmbuf_data_room_size(mp);
	struct accio_rxq *q;

	if (room < RTE_PKTMBUF_HEADROOM + 64) {
		ACCIO_LOG(ERR, "mempool %s: mbufs of %u bytes leave no receive buffer after "
			  "the %u-byte headroom", mp->name, room, RTE_PKTMBUF_HEADROOM);
		return -EINVAL;
	}
	accio_rx_queue_release(dev, qid);
	q = rte_zmalloc_socket("accio_rxq", sizeof(*q), RTE_CACHE_LINE_SIZE, socket);
	if (!q)
		return -ENOMEM;
	q->sw = rte_zmalloc_socket("accio_rx_sw", nb * sizeof(*q->sw), RTE_CACHE_LINE_SIZE, socket);
	if (!q->sw) {
		rte_free(q);
		return -ENOMEM;
	}
	q->regs = p->regs;
	q->data = dev->data;
	q->mp = mp;
	q->nb = nb;
	q->port = dev->data->port_id;
	dev->data->rx_queues[qid] = q;
	return 0;
}

static int accio_tx_queue_setup(struct rte_eth_dev *dev, uint16_t qid, uint16_t nb,
				unsigned int socket, const struct rte_eth_txconf *conf __rte_unused)
{
	struct accio_priv *p = dev->data->dev_private;
	struct accio_txq *q;

	accio_tx_queue_release(dev, qid);
	q = rte_zmalloc_socket("accio_txq", sizeof(*q), RTE_CACHE_LINE_SIZE, socket);
	if (!q)
		return -ENOMEM;
	q->sw = rte_zmalloc_socket("accio_tx_sw", nb * sizeof(*q->sw), RTE_CACHE_LINE_SIZE, socket);
	if (!q->sw) {
		rte_free(q);
		return -ENOMEM;
	}
	q->regs = p->regs;
	q->nb = nb;
	dev->data->tx_queues[qid] = q;
	return 0;
}

static int accio_link_update(struct rte_eth_dev *dev, int wait __rte_unused)
{
	struct accio_priv *p = dev->data->dev_private;
	struct rte_eth_link link = {
		.link_speed = p->link_mbps,
		.link_duplex = RTE_ETH_LINK_FULL_DUPLEX,
		.link_autoneg = RTE_ETH_LINK_FIXED,
		.link_status = dev->data->dev_started &&
			       (rd(p->regs, ACCIO_NIC_STATUS) & ACCIO_NIC_STATUS_LINK_UP_MASK),
	};

	return rte_eth_linkstatus_set(dev, &link);
}

static int accio_stats_get(struct rte_eth_dev *dev, struct rte_eth_stats *s)
{
	struct accio_priv *p = dev->data->dev_private;
	struct accio_rxq *rq = rxq0(dev);
	struct accio_txq *tq = txq0(dev);

	if (rq) {
		s->ipackets = s->q_ipackets[0] = rq->pkts;
		s->ibytes = s->q_ibytes[0] = rq->bytes;
	}
	if (tq) {
		tx_reap(tq);
		s->opackets = s->q_opackets[0] = tq->pkts;
		s->obytes = s->q_obytes[0] = tq->bytes;
		s->oerrors = s->q_errors[0] = tq->errors;
	}
	s->rx_nombuf = dev->data->rx_mbuf_alloc_failed;
	s->imissed = rd(p->regs, ACCIO_NIC_RX_DROP_NOBUF) - p->base_nobuf;
	s->ierrors = rd(p->regs, ACCIO_NIC_RX_DROP_OVERSIZE) - p->base_oversize +
		     rd(p->regs, ACCIO_NIC_RX_DROP_RUNT) - p->base_runt;
	return 0;
}

static int accio_stats_reset(struct rte_eth_dev *dev)
{
	struct accio_priv *p = dev->data->dev_private;
	struct accio_rxq *rq = rxq0(dev);
	struct accio_txq *tq = txq0(dev);

	if (rq)
		rq->pkts = rq->bytes = 0;
	if (tq)
		tq->pkts = tq->bytes = tq->errors = 0;
	dev->data->rx_mbuf_alloc_failed = 0;
	p->base_nobuf = rd(p->regs, ACCIO_NIC_RX_DROP_NOBUF);
	p->base_oversize = rd(p->regs, ACCIO_NIC_RX_DROP_OVERSIZE);
	p->base_runt = rd(p->regs, ACCIO_NIC_RX_DROP_RUNT);
	return 0;
}

static int accio_promisc_on(struct rte_eth_dev *dev)
{
	dev->data->promiscuous = 1;
	accio_set_ctrl(dev);
	return 0;
}

static int accio_promisc_off(struct rte_eth_dev *dev)
{
	dev->data->promiscuous = 0;
	accio_set_ctrl(dev);
	return 0;
}

/* the NIC accepts every multicast frame */
static int accio_allmulti(struct rte_eth_dev *dev __rte_unused)
{
	return 0;
}

static int accio_mac_addr_set(struct rte_eth_dev *dev, struct rte_ether_addr *mac)
{
	struct accio_priv *p = dev->data->dev_private;

	p->mac = *mac;
	accio_write_mac(p);
	return 0;
}

static int accio_mtu_set(struct rte_eth_dev *dev __rte_unused, uint16_t mtu)
{
	return mtu <= RTE_ETHER_MTU ? 0 : -EINVAL;
}

static void ns_to_ts(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = ns / 1000000000ull;
	ts->tv_nsec = ns % 1000000000ull;
}

/* timesync: the NIC's clock is the SoC's time in ns; it cannot be set */
static int accio_timesync_enable(struct rte_eth_dev *dev)
{
	struct accio_priv *p = dev->data->dev_private;
	struct accio_rxq *rq = rxq0(dev);
	struct accio_txq *tq = txq0(dev);

	p->timesync = 1;
	if (rq)
		rq->ts_on = 1;
	if (tq)
		tq->ts_on = 1;
	return 0;
}

static int accio_timesync_disable(struct rte_eth_dev *dev)
{
	struct accio_priv *p = dev->data->dev_private;
	struct accio_rxq *rq = rxq0(dev);
	struct accio_txq *tq = txq0(dev);

	p->timesync = 0;
	if (rq)
		rq->ts_on = rq->ts_field;
	if (tq)
		tq->ts_on = 0;
	return 0;
}

static int accio_read_rx_ts(struct rte_eth_dev *dev, struct timespec *ts, uint32_t flags __rte_unused)
{
	struct accio_rxq *q = rxq0(dev);

	if (!q || !q->ts_on || !q->last_ts)
		return -EINVAL;
	ns_to_ts(q->last_ts, ts);
	return 0;
}

/* The send timestamp of the newest completed frame, once; -EINVAL until a
 * frame completes after the last read. */
static int accio_read_tx_ts(struct rte_eth_dev *dev, struct timespec *ts)
{
	struct accio_txq *q = txq0(dev);

	if (!q || !q->ts_on)
		return -EINVAL;
	tx_reap(q);
	if (!q->ts_fresh)
		return -EINVAL;
	q->ts_fresh = 0;
	ns_to_ts(q->last_ts, ts);
	return 0;
}

static int accio_read_time(struct rte_eth_dev *dev, struct timespec *ts)
{
	struct accio_priv *p = dev->data->dev_private;

	ns_to_ts(rd(p->regs, ACCIO_NIC_TIME), ts);
	return 0;
}

static int accio_read_clock(struct rte_eth_dev *dev, uint64_t *clock)
{
	struct accio_priv *p = dev->data->dev_private;

	*clock = rd(p->regs, ACCIO_NIC_TIME);
	return 0;
}

static const struct eth_dev_ops accio_ops = {
	.dev_configure = accio_dev_configure,
	.dev_start = accio_dev_start,
	.dev_stop = accio_dev_stop,
	.dev_close = accio_dev_close,
	.dev_infos_get = accio_dev_info,
	.rx_queue_setup = accio_rx_queue_setup,
	.tx_queue_setup = accio_tx_queue_setup,
	.rx_queue_release = accio_rx_queue_release,
	.tx_queue_release = accio_tx_queue_release,
	.link_update = accio_link_update,
	.stats_get = accio_stats_get,
	.stats_reset = accio_stats_reset,
	.promiscuous_enable = accio_promisc_on,
	.promiscuous_disable = accio_promisc_off,
	.allmulticast_enable = accio_allmulti,
	.allmulticast_disable = accio_allmulti,
	.mac_addr_set = accio_mac_addr_set,
	.mtu_set = accio_mtu_set,
	.timesync_enable = accio_timesync_enable,
	.timesync_disable = accio_timesync_disable,
	.timesync_read_rx_timestamp = accio_read_rx_ts,
	.timesync_read_tx_timestamp = accio_read_tx_ts,
	.timesync_read_time = accio_read_time,
	.read_clock = accio_read_clock,
};

/* ---- probe ----------------------------------------------------------- */

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* The first UIO device of an Accio NIC, as /dev/uioN, or -ENODEV. */
static int find_uio(char *dev, size_t len)
{
	glob_t g;
	int rc = -ENODEV;

	if (glob("/sys/class/uio/uio*", 0, NULL, &g) != 0)
		return rc;
	for (size_t i = 0; i < g.gl_pathc && rc; i++) {
		char path[256], name[64];

		snprintf(path, sizeof(path), "%s/name", g.gl_pathv[i]);
		if (read_line(path, name, sizeof(name)) == 0 && !strcmp(name, ACCIO_UIO_NAME)) {
			snprintf(dev, len, "/dev/%s", strrchr(g.gl_pathv[i], '/') + 1);
			rc = 0;
		}
	}
	globfree(&g);
	return rc;
}

static int uio_arg(const char *key __rte_unused, const char *value, void *out)
{
	if (strlen(value) >= 64 || strncmp(value, "/dev/uio", 8))
		return -EINVAL;
	strcpy(out, value);
	return 0;
}

/* Maps the NIC's registers from the UIO device p->uio. */
static int map_registers(struct accio_priv *p)
{
	char path[128], line[64];
	const char *base = strrchr(p->uio, '/') + 1;
	uint64_t id;

	snprintf(path, sizeof(path), "/sys/class/uio/%s/name", base);
	if (read_line(path, line, sizeof(line)) || strcmp(line, ACCIO_UIO_NAME)) {
		ACCIO_LOG(ERR, "%s is not the UIO device of an Accio NIC", p->uio);
		return -ENODEV;
	}
	snprintf(path, sizeof(path), "/sys/class/uio/%s/maps/map0/size", base);
	if (read_line(path, line, sizeof(line))) {
		ACCIO_LOG(ERR, "%s: no register map (%s)", p->uio, path);
		return -ENODEV;
	}
	p->map_len = strtoull(line, NULL, 0);
	p->uio_fd = open(p->uio, O_RDWR | O_CLOEXEC);
	if (p->uio_fd < 0) {
		ACCIO_LOG(ERR, "cannot open %s: %s", p->uio, strerror(errno));
		return -errno;
	}
	p->regs = mmap(NULL, p->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->uio_fd, 0);
	if (p->regs == MAP_FAILED) {
		ACCIO_LOG(ERR, "cannot map the registers of %s: %s", p->uio, strerror(errno));
		close(p->uio_fd);
		return -errno;
	}
	id = rd(p->regs, ACCIO_NIC_ID);
	if ((id & ACCIO_NIC_ID_MAGIC_MASK) != (ACCIO_NIC_ID_RESET & ACCIO_NIC_ID_MAGIC_MASK) ||
	    (id & ACCIO_NIC_ID_MAJOR_MASK) != (ACCIO_NIC_ID_RESET & ACCIO_NIC_ID_MAJOR_MASK)) {
		ACCIO_LOG(ERR, "%s: not an Accio NIC of register map 1.x (id %#" PRIx64 ")",
			  p->uio, id);
		munmap((void *)(uintptr_t)p->regs, p->map_len);
		close(p->uio_fd);
		return -ENODEV;
	}
	return 0;
}

static int accio_probe(struct rte_vdev_device *vdev)
{
	const char *name = rte_vdev_device_name(vdev), *args = rte_vdev_device_args(vdev);
	static const char *const keys[] = { ACCIO_UIO_ARG, NULL };
	struct rte_eth_dev *dev;
	struct accio_priv *p, tmp = { .uio_fd = -1, .ts_offset = -1 };
	uint64_t mac;
	int rc;

	if (rte_eal_process_type() == RTE_PROC_SECONDARY) {
		dev = rte_eth_dev_attach_secondary(name);
		if (!dev) {
			ACCIO_LOG(ERR, "%s: cannot attach to the primary's port", name);
			return -ENODEV;
		}
		dev->dev_ops = &accio_ops;
		dev->device = &vdev->device;
		dev->rx_pkt_burst = accio_no_burst;
		dev->tx_pkt_burst = accio_no_burst;
		rte_eth_dev_probing_finish(dev);
		return 0;
	}
	if (args && *args) {
		struct rte_kvargs *kv = rte_kvargs_parse(args, keys);

		if (!kv) {
			ACCIO_LOG(ERR, "%s: bad arguments '%s' (known: uio=/dev/uioN)", name, args);
			return -EINVAL;
		}
		rc = rte_kvargs_process(kv, ACCIO_UIO_ARG, uio_arg, tmp.uio);
		rte_kvargs_free(kv);
		if (rc) {
			ACCIO_LOG(ERR, "%s: uio= takes a /dev/uioN path", name);
			return -EINVAL;
		}
	}
	if (!tmp.uio[0] && find_uio(tmp.uio, sizeof(tmp.uio))) {
		ACCIO_LOG(ERR, "%s: no Accio NIC is bound to UIO: hand it over with "
			  "driver_override (accio-nic-uio), e.g. apps/dpdk/accio-nic-uio.sh", name);
		return -ENODEV;
	}
	if (rte_eal_iova_mode() != RTE_IOVA_PA) {
		ACCIO_LOG(ERR, "%s: the NIC DMAs to physical addresses, but IOVAs are not "
			  "physical: run as root on hugepages (not --no-huge), --iova-mode=pa", name);
		return -EINVAL;
	}
	rc = map_registers(&tmp);
	if (rc)
		return rc;
	dev = rte_eth_vdev_allocate(vdev, sizeof(*p));
	if (!dev) {
		munmap((void *)(uintptr_t)tmp.regs, tmp.map_len);
		close(tmp.uio_fd);
		return -ENOMEM;
	}
	p = dev->data->dev_private;
	*p = tmp;
	dev->data->mac_addrs = rte_zmalloc(name, RTE_ETHER_ADDR_LEN, 0);
	if (!dev->data->mac_addrs) {
		munmap((void *)(uintptr_t)p->regs, p->map_len);
		close(p->uio_fd);
		rte_eth_dev_release_port(dev);
		return -ENOMEM;
	}
	p->depth = rd(p->regs, ACCIO_NIC_QUEUE_DEPTH) & ACCIO_NIC_QUEUE_DEPTH_DEPTH_MASK;
	p->link_mbps = rd(p->regs, ACCIO_NIC_LINK_MBPS);
	mac = rd(p->regs, ACCIO_NIC_MACADDR) & ACCIO_NIC_MACADDR_ADDR_MASK;
	for (int i = 0; i < RTE_ETHER_ADDR_LEN; i++)
		p->mac.addr_bytes[i] = mac >> (8 * i);
	if (!rte_is_valid_assigned_ether_addr(&p->mac))
		rte_eth_random_addr(p->mac.addr_bytes);
	accio_quiesce(p);
	accio_stats_reset(dev);
	dev->data->mac_addrs[0] = p->mac;
	dev->data->dev_link.link_speed = p->link_mbps;
	dev->data->dev_link.link_duplex = RTE_ETH_LINK_FULL_DUPLEX;
	dev->data->dev_flags |= RTE_ETH_DEV_AUTOFILL_QUEUE_XSTATS;
	dev->dev_ops = &accio_ops;
	dev->rx_pkt_burst = accio_rx_burst;
	dev->tx_pkt_burst = accio_tx_burst;
	dev->rx_queue_count = accio_rx_queue_count;
	rte_eth_dev_probing_finish(dev);
	ACCIO_LOG(INFO, "%s: %s, " RTE_ETHER_ADDR_PRT_FMT ", queues of %u", name, p->uio,
		  RTE_ETHER_ADDR_BYTES(&p->mac), p->depth);
	return 0;
}

static int accio_remove(struct rte_vdev_device *vdev)
{
	struct rte_eth_dev *dev = rte_eth_dev_allocated(rte_vdev_device_name(vdev));

	if (!dev)
		return 0;
	if (rte_eal_process_type() == RTE_PROC_PRIMARY)
		accio_dev_close(dev);
	rte_eth_dev_release_port(dev);
	return 0;
}

static struct rte_vdev_driver accio_vdev_driver = {
	.probe = accio_probe,
	.remove = accio_remove,
};

RTE_PMD_REGISTER_VDEV(net_accio, accio_vdev_driver);
RTE_PMD_REGISTER_PARAM_STRING(net_accio, ACCIO_UIO_ARG "=/dev/uioN");
