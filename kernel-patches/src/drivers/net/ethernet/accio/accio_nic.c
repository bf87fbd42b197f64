// SPDX-License-Identifier: GPL-2.0
/*
 * Accio NIC: network driver for the normal traffic path of the Accio SoC.
 *
 * The NIC has a send request queue (address and length of a frame), a
 * receive request queue (addresses of empty buffers) and a completion queue
 * for each. Completions arrive in request order and carry a hardware
 * timestamp, which the driver reports through SO_TIMESTAMPING.
 *
 * With the NIC's checksum offload (register map 1.1), the stack leaves the
 * TCP/UDP checksums of IPv4 to it: frames with a bad one are dropped on
 * receive (counted in rx_drop_csum) and good ones reach the stack as
 * CHECKSUM_UNNECESSARY; on transmit the NIC fills in the checksum of a
 * CHECKSUM_PARTIAL skb. ethtool -K rx/tx turns either off.
 *
 * XDP runs natively. With an AF_XDP socket's buffer pool bound to the
 * queue (zero copy), the NIC receives into the socket's umem frames and
 * sends from them: the kernel handles descriptors, never the data.
 */

#include <linux/bpf.h>
#include <linux/bpf_trace.h>
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/net_tstamp.h>
#include <linux/netdevice.h>
#include <linux/of.h>
#include <linux/of_net.h>
#include <linux/platform_device.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/xdp.h>
#include <net/xdp_sock_drv.h>

#include "accio_regs.h"

#define DRV_NAME		"accio-nic"
#define ACCIO_RX_BUF_LEN	2048
#define ACCIO_MAX_DEPTH		256
#define ACCIO_NAPI_IRQS		(ACCIO_NIC_INTR_MASK_TX_MASK | \
				 ACCIO_NIC_INTR_MASK_RX_MASK)

struct accio_buf {
	struct sk_buff *skb;
	struct xdp_buff *xdp;	/* receive buffer of an AF_XDP pool */
	bool xsk;		/* transmit frame of an AF_XDP socket */
	dma_addr_t dma;
	unsigned int len;
};

struct accio_nic {
	void __iomem *base;
	struct net_device *netdev;
	struct device *dev;
	struct napi_struct napi;
	int irq;
	u32 depth;

	/* transmit: frames handed to the NIC, completed in order */
	struct accio_buf tx[ACCIO_MAX_DEPTH];
	u32 tx_head;
	u32 tx_tail;
	spinlock_t tx_lock;	/* tx_head against completion */

	/* receive: buffers posted to the NIC, completed in order */
	struct accio_buf rx[ACCIO_MAX_DEPTH];
	u32 rx_head;
	u32 rx_tail;

	struct hwtstamp_config tstamp;
	u64 rx_alloc_fail;
	u64 tx_csum_sw;		/* partial checksums the NIC cannot fill */

	struct bpf_prog *xdp_prog;
	struct xsk_buff_pool *xsk_pool;	/* zero copy on queue 0 */
	struct xdp_rxq_info xdp_rxq;
	u64 xdp_drop;
	u64 xsk_rx;		/* frames received into a pool's buffers */
	u64 xsk_tx;		/* frames sent from a socket's umem */
};

static u64 accio_rd(struct accio_nic *p, u32 reg)
{
	return readq(p->base + reg);
}

static void accio_wr(struct accio_nic *p, u32 reg, u64 val)
{
	writeq(val, p->base + reg);
}

static u32 accio_field(u64 val, u64 mask, u32 shift)
{
	return (val & mask) >> shift;
}

/* ---- receive ------------------------------------------------------------ */

static int accio_rx_post(struct accio_nic *p)
{
	struct accio_buf *b = &p->rx[p->rx_head % p->depth];
	struct sk_buff *skb;
	dma_addr_t dma;

	if (p->xsk_pool) {
		/* an empty fill ring is the socket's business, not a failure */
		b->xdp = xsk_buff_alloc(p->xsk_pool);
		if (!b->xdp)
			return -ENOBUFS;
		b->skb = NULL;
		b->dma = xsk_buff_xdp_get_dma(b->xdp);
		p->rx_head++;
		accio_wr(p, ACCIO_NIC_RECV_REQ, b->dma);
		return 0;
	}
	skb = netdev_alloc_skb(p->netdev, ACCIO_RX_BUF_LEN);
	if (!skb) {
		p->rx_alloc_fail++;
		return -ENOMEM;
	}
	dma = dma_map_single(p->dev, skb->data, ACCIO_RX_BUF_LEN,
			     DMA_FROM_DEVICE);
	if (dma_mapping_error(p->dev, dma)) {
		dev_kfree_skb_any(skb);
		p->rx_alloc_fail++;
		return -ENOMEM;
	}
	b->skb = skb;
	b->xdp = NULL;
	b->dma = dma;
	p->rx_head++;
	accio_wr(p, ACCIO_NIC_RECV_REQ, dma);
	return 0;
}

static void accio_rx_hwtstamp(struct accio_nic *p, struct sk_buff *skb)
{
	if (p->tstamp.rx_filter == HWTSTAMP_FILTER_NONE)
		return;
	skb_hwtstamps(skb)->hwtstamp =
		ns_to_ktime(accio_rd(p, ACCIO_NIC_RECV_TSTAMP));
}

/* Give the NIC a fresh buffer for every one it filled. */
static void accio_rx_refill(struct accio_nic *p)
{
	while (p->rx_head - p->rx_tail < p->depth)
		if (accio_rx_post(p))
			break;
}

/* A frame in an AF_XDP pool's buffer: to its socket, or copied to the stack. */
static bool accio_rx_xsk(struct accio_nic *p, struct bpf_prog *prog,
			 struct xdp_buff *xdp, u32 len, bool csum_ok)
{
	struct net_device *ndev = p->netdev;
	struct sk_buff *skb;
	u32 act;

	xdp->data_end = xdp->data + len;
	xsk_buff_dma_sync_for_cpu(xdp, p->xsk_pool);
	act = prog ? bpf_prog_run_xdp(prog, xdp) : XDP_PASS;
	switch (act) {
	case XDP_REDIRECT:
		if (!xdp_do_redirect(ndev, xdp, prog))
			return true;
		trace_xdp_exception(ndev, prog, act);
		break;
	case XDP_PASS:
		len = xdp->data_end - xdp->data;
		skb = napi_alloc_skb(&p->napi, len);
		if (!skb)
			break;
		skb_put_data(skb, xdp->data, len);
		xsk_buff_free(xdp);
		accio_rx_hwtstamp(p, skb);
		if (csum_ok)
			skb->ip_summed = CHECKSUM_UNNECESSARY;
		skb->protocol = eth_type_trans(skb, ndev);
		napi_gro_receive(&p->napi, skb);
		return false;
	default:
		bpf_warn_invalid_xdp_action(ndev, prog, act);
		fallthrough;
	case XDP_TX:		/* not in zero-copy mode */
	case XDP_ABORTED:
		trace_xdp_exception(ndev, prog, act);
		fallthrough;
	case XDP_DROP:
		break;
	}
	p->xdp_drop++;
	xsk_buff_free(xdp);
	return false;
}

static int accio_rx(struct accio_nic *p, int budget)
{
	struct net_device *ndev = p->netdev;
	struct bpf_prog *prog;
	struct xdp_buff *xdp;
	bool flush = false;
	struct accio_buf *b;
	struct sk_buff *skb;
	dma_addr_t dma;
	bool csum_ok;
	int done = 0;
	u32 len;
	u64 c;

	rcu_read_lock();
	prog = READ_ONCE(p->xdp_prog);

	while (done < budget) {
		c = accio_rd(p, ACCIO_NIC_RECV_COMP);
		if (!(c & ACCIO_NIC_RECV_COMP_VALID_MASK))
			break;
		len = accio_field(c, ACCIO_NIC_RECV_COMP_LEN_MASK,
				  ACCIO_NIC_RECV_COMP_LEN_SHIFT);
		csum_ok = c & ACCIO_NIC_RECV_COMP_CSUM_OK_MASK;
		b = &p->rx[p->rx_tail % p->depth];
		skb = b->skb;
		xdp = b->xdp;
		dma = b->dma;
		b->skb = NULL;
		b->xdp = NULL;
		p->rx_tail++;
		/* Refill the slot at once: a long poll would otherwise hold
		 * every buffer it took until its end, and the NIC, with
		 * none posted, would drop the frames that keep arriving.
		 */
		accio_rx_refill(p);
		ndev->stats.rx_packets++;
		ndev->stats.rx_bytes += len;
		done++;
		if (xdp) {
			p->xsk_rx++;
			flush |= accio_rx_xsk(p, prog, xdp, len, csum_ok);
			continue;
		}
		dma_unmap_single(p->dev, dma, ACCIO_RX_BUF_LEN,
				 DMA_FROM_DEVICE);
		skb_put(skb, len);
		accio_rx_hwtstamp(p, skb);
		/* the NIC checked the IPv4 header and the TCP/UDP checksum */
		if (csum_ok)
			skb->ip_summed = CHECKSUM_UNNECESSARY;
		skb->protocol = eth_type_trans(skb, ndev);
		/* native XDP on a buffer of the stack's own */
		if (prog && do_xdp_generic(prog, skb) != XDP_PASS)
			continue;
		napi_gro_receive(&p->napi, skb);
	}
	if (flush)
		xdp_do_flush();
	rcu_read_unlock();
	/* Slots a failed allocation left empty get another chance. */
	accio_rx_refill(p);
	if (p->xsk_pool && xsk_uses_need_wakeup(p->xsk_pool)) {
		if (p->rx_head - p->rx_tail < p->depth)
			xsk_set_rx_need_wakeup(p->xsk_pool);
		else
			xsk_clear_rx_need_wakeup(p->xsk_pool);
	}
	return done;
}

/* ---- transmit ----------------------------------------------------------- */

static void accio_tx_complete(struct accio_nic *p)
{
	struct net_device *ndev = p->netdev;
	struct skb_shared_hwtstamps hwts;
	struct accio_buf *b;
	u32 xsk_done = 0;
	u64 c, ts;

	while (p->tx_tail != READ_ONCE(p->tx_head)) {
		c = accio_rd(p, ACCIO_NIC_SEND_COMP);
		if (!(c & ACCIO_NIC_SEND_COMP_VALID_MASK))
			break;
		b = &p->tx[p->tx_tail % p->depth];
		if (b->xsk)
			xsk_done++;
		else
			dma_unmap_single(p->dev, b->dma, b->len, DMA_TO_DEVICE);
		if (c & ACCIO_NIC_SEND_COMP_ERROR_MASK) {
			ndev->stats.tx_errors++;
		} else {
			ndev->stats.tx_packets++;
			ndev->stats.tx_bytes += b->len;
			if (b->skb &&
			    skb_shinfo(b->skb)->tx_flags & SKBTX_IN_PROGRESS) {
				ts = accio_rd(p, ACCIO_NIC_SEND_TSTAMP);
				memset(&hwts, 0, sizeof(hwts));
				hwts.hwtstamp = ns_to_ktime(ts);
				skb_tstamp_tx(b->skb, &hwts);
			}
		}
		if (b->skb)
			napi_consume_skb(b->skb, 1);
		b->skb = NULL;
		b->xsk = false;
		p->tx_tail++;
	}
	if (xsk_done)
		xsk_tx_completed(p->xsk_pool, xsk_done);
	if (netif_queue_stopped(ndev) && p->tx_head - p->tx_tail < p->depth)
		netif_wake_queue(ndev);
}

/* SEND_REQ.CSUM for a CHECKSUM_PARTIAL skb the NIC can finish: the TCP or
 * UDP checksum of an unfragmented IPv4 packet, at the place the stack
 * asked for. Anything else gets its checksum here, in software.
 */
static u64 accio_tx_csum(struct accio_nic *p, struct sk_buff *skb)
{
	u32 start = skb_checksum_start_offset(skb);
	const struct iphdr *iph;

	if (skb->ip_summed != CHECKSUM_PARTIAL)
		return 0;
	if (skb->protocol == htons(ETH_P_IP) &&
	    skb_network_offset(skb) == ETH_HLEN) {
		iph = ip_hdr(skb);
		if (!ip_is_fragment(iph) && start == skb_transport_offset(skb) &&
		    ((iph->protocol == IPPROTO_UDP &&
		      skb->csum_offset == offsetof(struct udphdr, check)) ||
		     (iph->protocol == IPPROTO_TCP &&
		      skb->csum_offset == offsetof(struct tcphdr, check))))
			return ACCIO_NIC_SEND_REQ_CSUM_MASK;
	}
	p->tx_csum_sw++;
	return skb_checksum_help(skb) ? U64_MAX : 0;
}

static netdev_tx_t accio_start_xmit(struct sk_buff *skb,
				    struct net_device *ndev)
{
	struct accio_nic *p = netdev_priv(ndev);
	struct accio_buf *b;
	dma_addr_t dma;
	u64 free, csum;

	if (skb_put_padto(skb, ETH_ZLEN)) {
		ndev->stats.tx_dropped++;
		return NETDEV_TX_OK;
	}
	csum = accio_tx_csum(p, skb);
	if (csum == U64_MAX) {
		dev_kfree_skb_any(skb);
		ndev->stats.tx_dropped++;
		return NETDEV_TX_OK;
	}
	free = accio_field(accio_rd(p, ACCIO_NIC_COUNTS),
			   ACCIO_NIC_COUNTS_SEND_REQ_FREE_MASK,
			   ACCIO_NIC_COUNTS_SEND_REQ_FREE_SHIFT);
	if (!free || p->tx_head - p->tx_tail >= p->depth) {
		netif_stop_queue(ndev);
		return NETDEV_TX_BUSY;
	}
	dma = dma_map_single(p->dev, skb->data, skb->len, DMA_TO_DEVICE);
	if (dma_mapping_error(p->dev, dma)) {
		dev_kfree_skb_any(skb);
		ndev->stats.tx_dropped++;
		return NETDEV_TX_OK;
	}
	if (skb_shinfo(skb)->tx_flags & SKBTX_HW_TSTAMP &&
	    p->tstamp.tx_type == HWTSTAMP_TX_ON)
		skb_shinfo(skb)->tx_flags |= SKBTX_IN_PROGRESS;
	skb_tx_timestamp(skb);

	spin_lock_bh(&p->tx_lock);
	b = &p->tx[p->tx_head % p->depth];
	b->skb = skb;
	b->xsk = false;
	b->dma = dma;
	b->len = skb->len;
	WRITE_ONCE(p->tx_head, p->tx_head + 1);
	accio_wr(p, ACCIO_NIC_SEND_REQ, dma | csum |
		 ((u64)skb->len << ACCIO_NIC_SEND_REQ_LEN_SHIFT));
	if (free == 1 || p->tx_head - p->tx_tail >= p->depth)
		netif_stop_queue(ndev);
	spin_unlock_bh(&p->tx_lock);
	return NETDEV_TX_OK;
}

/* Frames of the AF_XDP socket's TX ring, sent from its umem. tx_lock held. */
static bool accio_xsk_xmit(struct accio_nic *p, int budget)
{
	struct xsk_buff_pool *pool = p->xsk_pool;
	struct xdp_desc desc;
	struct accio_buf *b;
	int sent = 0;
	u64 free;

	free = accio_field(accio_rd(p, ACCIO_NIC_COUNTS),
			   ACCIO_NIC_COUNTS_SEND_REQ_FREE_MASK,
			   ACCIO_NIC_COUNTS_SEND_REQ_FREE_SHIFT);
	while (sent < budget && free && p->tx_head - p->tx_tail < p->depth) {
		if (!xsk_tx_peek_desc(pool, &desc))
			break;
		b = &p->tx[p->tx_head % p->depth];
		b->skb = NULL;
		b->xsk = true;
		b->dma = xsk_buff_raw_get_dma(pool, desc.addr);
		b->len = desc.len;
		xsk_buff_raw_dma_sync_for_device(pool, b->dma, desc.len);
		WRITE_ONCE(p->tx_head, p->tx_head + 1);
		accio_wr(p, ACCIO_NIC_SEND_REQ, b->dma |
			 ((u64)desc.len << ACCIO_NIC_SEND_REQ_LEN_SHIFT));
		free--;
		sent++;
	}
	p->xsk_tx += sent;
	if (sent)
		xsk_tx_release(pool);
	/* the socket kicks the driver for every batch it queues */
	if (xsk_uses_need_wakeup(pool))
		xsk_set_tx_need_wakeup(pool);
	return sent == budget;
}

/* ---- interrupts and NAPI ------------------------------------------------ */

static void accio_link_update(struct accio_nic *p)
{
	if (accio_rd(p, ACCIO_NIC_STATUS) & ACCIO_NIC_STATUS_LINK_UP_MASK)
		netif_carrier_on(p->netdev);
	else
		netif_carrier_off(p->netdev);
}

static irqreturn_t accio_interrupt(int irq, void *dev_id)
{
	struct accio_nic *p = dev_id;
	u64 st = accio_rd(p, ACCIO_NIC_INTR_STATUS);
	irqreturn_t ret = IRQ_NONE;

	if (st & ACCIO_NIC_INTR_STATUS_LINK_MASK) {
		accio_wr(p, ACCIO_NIC_INTR_STATUS,
			 ACCIO_NIC_INTR_STATUS_LINK_MASK);
		accio_link_update(p);
		ret = IRQ_HANDLED;
	}
	if (st & ACCIO_NAPI_IRQS) {
		accio_wr(p, ACCIO_NIC_INTR_MASK, ACCIO_NIC_INTR_MASK_LINK_MASK);
		napi_schedule(&p->napi);
		ret = IRQ_HANDLED;
	}
	return ret;
}

static int accio_poll(struct napi_struct *napi, int budget)
{
	struct accio_nic *p = container_of(napi, struct accio_nic, napi);
	bool more = false;
	int done;

	spin_lock(&p->tx_lock);
	accio_tx_complete(p);
	if (p->xsk_pool)
		more = accio_xsk_xmit(p, budget);
	spin_unlock(&p->tx_lock);
	done = accio_rx(p, budget);
	if (more)
		return budget;
	if (done < budget && napi_complete_done(napi, done))
		accio_wr(p, ACCIO_NIC_INTR_MASK,
			 ACCIO_NAPI_IRQS | ACCIO_NIC_INTR_MASK_LINK_MASK);
	return done;
}

/* ---- net_device --------------------------------------------------------- */

static void accio_write_mac(struct accio_nic *p)
{
	const u8 *a = p->netdev->dev_addr;
	u64 v = 0;
	int i;

	for (i = 0; i < ETH_ALEN; i++)
		v |= (u64)a[i] << (8 * i);
	accio_wr(p, ACCIO_NIC_MACADDR, v);
}

static void accio_free_bufs(struct accio_nic *p)
{
	struct accio_buf *b;

	u32 xsk_done = 0;

	for (; p->rx_tail != p->rx_head; p->rx_tail++) {
		b = &p->rx[p->rx_tail % p->depth];
		if (b->xdp) {
			xsk_buff_free(b->xdp);
			b->xdp = NULL;
			continue;
		}
		dma_unmap_single(p->dev, b->dma, ACCIO_RX_BUF_LEN,
				 DMA_FROM_DEVICE);
		dev_kfree_skb_any(b->skb);
		b->skb = NULL;
	}
	for (; p->tx_tail != p->tx_head; p->tx_tail++) {
		b = &p->tx[p->tx_tail % p->depth];
		if (b->xsk) {
			xsk_done++;
			b->xsk = false;
			continue;
		}
		dma_unmap_single(p->dev, b->dma, b->len, DMA_TO_DEVICE);
		dev_kfree_skb_any(b->skb);
		b->skb = NULL;
	}
	/* frames the NIC dropped at the reset count as sent to the socket */
	if (xsk_done)
		xsk_tx_completed(p->xsk_pool, xsk_done);
}

static u64 accio_ctrl(struct accio_nic *p)
{
	struct net_device *ndev = p->netdev;

	return ACCIO_NIC_CTRL_ENABLE_MASK |
	       ((ndev->flags & IFF_PROMISC) ? ACCIO_NIC_CTRL_PROMISC_MASK : 0) |
	       ((ndev->features & NETIF_F_LOOPBACK) ?
		ACCIO_NIC_CTRL_LOOPBACK_MASK : 0) |
	       ((ndev->features & NETIF_F_RXCSUM) ?
		ACCIO_NIC_CTRL_RXCSUM_MASK : 0);
}

/* Buffer size of the receive queue: a pool's frames may be smaller. */
static u32 accio_rx_buf_len(struct accio_nic *p)
{
	if (p->xsk_pool)
		return min_t(u32, ACCIO_RX_BUF_LEN,
			     xsk_pool_get_rx_frame_size(p->xsk_pool));
	return ACCIO_RX_BUF_LEN;
}

static int accio_rxq_reg(struct accio_nic *p)
{
	int err;

	err = xdp_rxq_info_reg(&p->xdp_rxq, p->netdev, 0, p->napi.napi_id);
	if (err || !p->xsk_pool)
		return err;
	err = xdp_rxq_info_reg_mem_model(&p->xdp_rxq, MEM_TYPE_XSK_BUFF_POOL,
					 NULL);
	if (err) {
		xdp_rxq_info_unreg(&p->xdp_rxq);
		return err;
	}
	xsk_pool_set_rxq_info(p->xsk_pool, &p->xdp_rxq);
	return 0;
}

static int accio_open(struct net_device *ndev)
{
	struct accio_nic *p = netdev_priv(ndev);
	int err;

	p->rx_head = 0;
	p->rx_tail = 0;
	p->tx_head = 0;
	p->tx_tail = 0;
	accio_wr(p, ACCIO_NIC_CTRL, ACCIO_NIC_CTRL_QRESET_MASK);
	accio_wr(p, ACCIO_NIC_RX_BUF_LEN, accio_rx_buf_len(p));
	accio_write_mac(p);
	err = accio_rxq_reg(p);
	if (err)
		return err;
	while (p->rx_head < p->depth)
		if (accio_rx_post(p))
			break;
	if (!p->rx_head && !p->xsk_pool) {
		xdp_rxq_info_unreg(&p->xdp_rxq);
		return -ENOMEM;
	}

	err = request_irq(p->irq, accio_interrupt, 0, ndev->name, p);
	if (err) {
		accio_free_bufs(p);
		xdp_rxq_info_unreg(&p->xdp_rxq);
		return err;
	}
	napi_enable(&p->napi);
	accio_wr(p, ACCIO_NIC_CTRL, accio_ctrl(p));
	accio_link_update(p);
	accio_wr(p, ACCIO_NIC_INTR_MASK,
		 ACCIO_NAPI_IRQS | ACCIO_NIC_INTR_MASK_LINK_MASK);
	netif_start_queue(ndev);
	return 0;
}

static int accio_stop(struct net_device *ndev)
{
	struct accio_nic *p = netdev_priv(ndev);

	netif_stop_queue(ndev);
	accio_wr(p, ACCIO_NIC_INTR_MASK, 0);
	napi_disable(&p->napi);
	free_irq(p->irq, p);
	/* Empty the NIC's queues before the buffers they name are freed. */
	accio_wr(p, ACCIO_NIC_CTRL, ACCIO_NIC_CTRL_QRESET_MASK);
	accio_free_bufs(p);
	xdp_rxq_info_unreg(&p->xdp_rxq);
	netif_carrier_off(ndev);
	return 0;
}

/* Binds (pool) or unbinds (NULL) an AF_XDP buffer pool to queue 0. A running
 * NIC is stopped and reset, its buffers are returned to their owners, and it
 * restarts with buffers of the new kind.
 */
static int accio_xsk_setup(struct accio_nic *p, struct xsk_buff_pool *pool,
			   u16 qid)
{
	struct net_device *ndev = p->netdev;
	bool running = netif_running(ndev);
	int err = 0;

	if (qid != 0)
		return -EINVAL;
	if (pool && p->xsk_pool)
		return -EBUSY;
	if (pool) {
		err = xsk_pool_dma_map(pool, p->dev, 0);
		if (err)
			return err;
	}
	if (running) {
		netif_tx_disable(ndev);
		napi_disable(&p->napi);
		accio_wr(p, ACCIO_NIC_CTRL, ACCIO_NIC_CTRL_QRESET_MASK);
		accio_free_bufs(p);
		xdp_rxq_info_unreg(&p->xdp_rxq);
	}
	if (!pool && p->xsk_pool)
		xsk_pool_dma_unmap(p->xsk_pool, 0);
	p->xsk_pool = pool;
	if (!running)
		return 0;

	p->rx_head = 0;
	p->rx_tail = 0;
	p->tx_head = 0;
	p->tx_tail = 0;
	accio_wr(p, ACCIO_NIC_RX_BUF_LEN, accio_rx_buf_len(p));
	err = accio_rxq_reg(p);
	if (!err)
		while (p->rx_head < p->depth)
			if (accio_rx_post(p))
				break;
	napi_enable(&p->napi);
	accio_wr(p, ACCIO_NIC_CTRL, accio_ctrl(p));
	netif_tx_start_all_queues(ndev);
	if (pool && xsk_uses_need_wakeup(pool)) {
		xsk_set_rx_need_wakeup(pool);
		xsk_set_tx_need_wakeup(pool);
	}
	return err;
}

static int accio_bpf(struct net_device *ndev, struct netdev_bpf *bpf)
{
	struct accio_nic *p = netdev_priv(ndev);
	struct bpf_prog *old;

	switch (bpf->command) {
	case XDP_SETUP_PROG:
		if (bpf->prog && ndev->mtu > ACCIO_RX_BUF_LEN - ETH_HLEN) {
			NL_SET_ERR_MSG_MOD(bpf->extack,
					   "MTU too large for a single receive buffer");
			return -EINVAL;
		}
		old = xchg(&p->xdp_prog, bpf->prog);
		if (old)
			bpf_prog_put(old);
		return 0;
	case XDP_SETUP_XSK_POOL:
		return accio_xsk_setup(p, bpf->xsk.pool, bpf->xsk.queue_id);
	default:
		return -EINVAL;
	}
}

static int accio_xsk_wakeup(struct net_device *ndev, u32 qid, u32 flags)
{
	struct accio_nic *p = netdev_priv(ndev);

	if (!netif_running(ndev))
		return -ENETDOWN;
	if (qid != 0 || !p->xsk_pool)
		return -EINVAL;
	/* run the queue's NAPI now (or once more, if it is running) */
	if (!napi_if_scheduled_mark_missed(&p->napi)) {
		local_bh_disable();
		napi_schedule(&p->napi);
		local_bh_enable();
	}
	return 0;
}

static void accio_set_rx_mode(struct net_device *ndev)
{
	struct accio_nic *p = netdev_priv(ndev);
	u64 ctrl = accio_rd(p, ACCIO_NIC_CTRL) & ~ACCIO_NIC_CTRL_PROMISC_MASK;

	if (ndev->flags & IFF_PROMISC)
		ctrl |= ACCIO_NIC_CTRL_PROMISC_MASK;
	accio_wr(p, ACCIO_NIC_CTRL, ctrl);
}

static int accio_set_features(struct net_device *ndev,
			      netdev_features_t features)
{
	struct accio_nic *p = netdev_priv(ndev);
	u64 ctrl = accio_rd(p, ACCIO_NIC_CTRL) &
		   ~(ACCIO_NIC_CTRL_LOOPBACK_MASK | ACCIO_NIC_CTRL_RXCSUM_MASK);

	if (features & NETIF_F_LOOPBACK)
		ctrl |= ACCIO_NIC_CTRL_LOOPBACK_MASK;
	if (features & NETIF_F_RXCSUM)
		ctrl |= ACCIO_NIC_CTRL_RXCSUM_MASK;
	accio_wr(p, ACCIO_NIC_CTRL, ctrl);
	return 0;
}

static int accio_set_mac_address(struct net_device *ndev, void *addr)
{
	int err = eth_mac_addr(ndev, addr);

	if (!err)
		accio_write_mac(netdev_priv(ndev));
	return err;
}

static int accio_hwtstamp_set(struct net_device *ndev, struct ifreq *ifr)
{
	struct accio_nic *p = netdev_priv(ndev);
	struct hwtstamp_config cfg;

	if (copy_from_user(&cfg, ifr->ifr_data, sizeof(cfg)))
		return -EFAULT;
	if (cfg.tx_type != HWTSTAMP_TX_OFF && cfg.tx_type != HWTSTAMP_TX_ON)
		return -ERANGE;
	if (cfg.rx_filter != HWTSTAMP_FILTER_NONE)
		cfg.rx_filter = HWTSTAMP_FILTER_ALL;
	p->tstamp = cfg;
	return copy_to_user(ifr->ifr_data, &cfg, sizeof(cfg)) ? -EFAULT : 0;
}

static int accio_eth_ioctl(struct net_device *ndev, struct ifreq *ifr,
			   int cmd)
{
	struct accio_nic *p = netdev_priv(ndev);

	switch (cmd) {
	case SIOCSHWTSTAMP:
		return accio_hwtstamp_set(ndev, ifr);
	case SIOCGHWTSTAMP:
		return copy_to_user(ifr->ifr_data, &p->tstamp,
				    sizeof(p->tstamp)) ? -EFAULT : 0;
	default:
		return -EOPNOTSUPP;
	}
}

static const struct net_device_ops accio_netdev_ops = {
	.ndo_open		= accio_open,
	.ndo_stop		= accio_stop,
	.ndo_start_xmit		= accio_start_xmit,
	.ndo_set_rx_mode	= accio_set_rx_mode,
	.ndo_set_mac_address	= accio_set_mac_address,
	.ndo_set_features	= accio_set_features,
	.ndo_validate_addr	= eth_validate_addr,
	.ndo_eth_ioctl		= accio_eth_ioctl,
	.ndo_bpf		= accio_bpf,
	.ndo_xsk_wakeup		= accio_xsk_wakeup,
};

/* ---- ethtool ------------------------------------------------------------ */

static const struct {
	char name[ETH_GSTRING_LEN];
	u32 reg;
} accio_hw_stats[] = {
	{ "hw_rx_frames",		ACCIO_NIC_RX_FRAMES },
	{ "hw_rx_bytes",		ACCIO_NIC_RX_BYTES },
	{ "hw_tx_frames",		ACCIO_NIC_TX_FRAMES },
	{ "hw_tx_bytes",		ACCIO_NIC_TX_BYTES },
	{ "rx_drop_nobuf",		ACCIO_NIC_RX_DROP_NOBUF },
	{ "rx_drop_runt",		ACCIO_NIC_RX_DROP_RUNT },
	{ "rx_drop_oversize",		ACCIO_NIC_RX_DROP_OVERSIZE },
	{ "rx_drop_filter",		ACCIO_NIC_RX_DROP_FILTER },
	{ "rx_drop_disabled",		ACCIO_NIC_RX_DROP_DISABLED },
	{ "tx_errors",			ACCIO_NIC_TX_ERRORS },
	{ "send_req_overflow",		ACCIO_NIC_SEND_REQ_OVERFLOW },
	{ "recv_req_overflow",		ACCIO_NIC_RECV_REQ_OVERFLOW },
	{ "tx_drop_linkdown",		ACCIO_NIC_TX_DROP_LINKDOWN },
	{ "rx_drop_csum",		ACCIO_NIC_RX_DROP_CSUM },
	{ "rx_csum_ok",			ACCIO_NIC_RX_CSUM_OK },
	{ "tx_csum",			ACCIO_NIC_TX_CSUM },
};

#define ACCIO_N_STATS (ARRAY_SIZE(accio_hw_stats) + 5)

static int accio_get_sset_count(struct net_device *ndev, int sset)
{
	return sset == ETH_SS_STATS ? ACCIO_N_STATS : -EOPNOTSUPP;
}

static void accio_get_strings(struct net_device *ndev, u32 sset, u8 *data)
{
	int i;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < ARRAY_SIZE(accio_hw_stats); i++)
		ethtool_sprintf(&data, "%s", accio_hw_stats[i].name);
	ethtool_sprintf(&data, "rx_alloc_fail");
	ethtool_sprintf(&data, "xdp_drop");
	ethtool_sprintf(&data, "xsk_rx");
	ethtool_sprintf(&data, "xsk_tx");
	ethtool_sprintf(&data, "tx_csum_sw");
}

static void accio_get_ethtool_stats(struct net_device *ndev,
				    struct ethtool_stats *stats, u64 *data)
{
	struct accio_nic *p = netdev_priv(ndev);
	int i;

	for (i = 0; i < ARRAY_SIZE(accio_hw_stats); i++)
		data[i] = accio_rd(p, accio_hw_stats[i].reg);
	data[i++] = p->rx_alloc_fail;
	data[i++] = p->xdp_drop;
	data[i++] = p->xsk_rx;
	data[i++] = p->xsk_tx;
	data[i] = p->tx_csum_sw;
}

static int accio_get_ts_info(struct net_device *ndev,
			     struct ethtool_ts_info *info)
{
	info->so_timestamping = SOF_TIMESTAMPING_TX_HARDWARE |
				SOF_TIMESTAMPING_RX_HARDWARE |
				SOF_TIMESTAMPING_RAW_HARDWARE |
				SOF_TIMESTAMPING_TX_SOFTWARE |
				SOF_TIMESTAMPING_RX_SOFTWARE |
				SOF_TIMESTAMPING_SOFTWARE;
	info->phc_index = -1;
	info->tx_types = BIT(HWTSTAMP_TX_OFF) | BIT(HWTSTAMP_TX_ON);
	info->rx_filters = BIT(HWTSTAMP_FILTER_NONE) | BIT(HWTSTAMP_FILTER_ALL);
	return 0;
}

static const struct ethtool_ops accio_ethtool_ops = {
	.get_link		= ethtool_op_get_link,
	.get_sset_count		= accio_get_sset_count,
	.get_strings		= accio_get_strings,
	.get_ethtool_stats	= accio_get_ethtool_stats,
	.get_ts_info		= accio_get_ts_info,
};

/* ---- platform device ---------------------------------------------------- */

static int accio_probe(struct platform_device *pdev)
{
	struct net_device *ndev;
	struct accio_nic *p;
	u64 id;
	int err;

	ndev = devm_alloc_etherdev(&pdev->dev, sizeof(*p));
	if (!ndev)
		return -ENOMEM;
	SET_NETDEV_DEV(ndev, &pdev->dev);
	platform_set_drvdata(pdev, ndev);

	p = netdev_priv(ndev);
	p->netdev = ndev;
	p->dev = &pdev->dev;
	spin_lock_init(&p->tx_lock);

	p->base = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(p->base))
		return PTR_ERR(p->base);
	id = accio_rd(p, ACCIO_NIC_ID);
	if (accio_field(id, ACCIO_NIC_ID_MAGIC_MASK,
			ACCIO_NIC_ID_MAGIC_SHIFT) != 0x4143494f) {
		dev_err(&pdev->dev, "no Accio NIC here (id %#llx)\n", id);
		return -ENODEV;
	}
	p->depth = min_t(u32, accio_rd(p, ACCIO_NIC_QUEUE_DEPTH),
			 ACCIO_MAX_DEPTH);
	if (p->depth < 2)
		return -ENODEV;

	p->irq = platform_get_irq(pdev, 0);
	if (p->irq < 0)
		return p->irq;

	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(48));
	if (err)
		return err;

	err = of_get_ethdev_address(pdev->dev.of_node, ndev);
	if (err)
		eth_hw_addr_random(ndev);

	ndev->netdev_ops = &accio_netdev_ops;
	ndev->ethtool_ops = &accio_ethtool_ops;
	ndev->hw_features = NETIF_F_LOOPBACK;
	/* checksum offload from register map 1.1 on, on by default */
	if (accio_field(id, ACCIO_NIC_ID_MINOR_MASK,
			ACCIO_NIC_ID_MINOR_SHIFT) >= 1) {
		ndev->hw_features |= NETIF_F_IP_CSUM | NETIF_F_RXCSUM;
		ndev->features |= NETIF_F_IP_CSUM | NETIF_F_RXCSUM;
	}
	ndev->min_mtu = ETH_MIN_MTU;
	ndev->max_mtu = ETH_DATA_LEN;
	netif_napi_add(ndev, &p->napi, accio_poll);
	netif_carrier_off(ndev);

	err = register_netdev(ndev);
	if (err) {
		netif_napi_del(&p->napi);
		return err;
	}
	netdev_info(ndev, "Accio NIC v%u.%u at %pR, queues %u, MAC %pM\n",
		    accio_field(id, ACCIO_NIC_ID_MAJOR_MASK,
				ACCIO_NIC_ID_MAJOR_SHIFT),
		    accio_field(id, ACCIO_NIC_ID_MINOR_MASK,
				ACCIO_NIC_ID_MINOR_SHIFT),
		    platform_get_resource(pdev, IORESOURCE_MEM, 0), p->depth,
		    ndev->dev_addr);
	return 0;
}

static int accio_remove(struct platform_device *pdev)
{
	struct net_device *ndev = platform_get_drvdata(pdev);
	struct accio_nic *p = netdev_priv(ndev);

	unregister_netdev(ndev);
	netif_napi_del(&p->napi);
	return 0;
}

static const struct of_device_id accio_of_match[] = {
	{ .compatible = "accio,nic" },
	{ }
};
MODULE_DEVICE_TABLE(of, accio_of_match);

static struct platform_driver accio_driver = {
	.probe = accio_probe,
	.remove = accio_remove,
	.driver = {
		.name = DRV_NAME,
		.of_match_table = accio_of_match,
	},
};
module_platform_driver(accio_driver);

MODULE_DESCRIPTION("Accio NIC driver");
MODULE_LICENSE("GPL");
