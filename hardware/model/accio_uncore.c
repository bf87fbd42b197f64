// SPDX-License-Identifier: MIT
/*
 * The Accio uncore model. See accio_uncore.h and hardware/README.md.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accio_offsets.h"
#include "accio_uncore.h"

#define ROW_STATE_USER	(ACCIO_UNCORE_ROW_STATE_RX_SUSP_MASK | \
			 ACCIO_UNCORE_ROW_STATE_TX_SUSP_MASK)
#define NREGS_ROW	(ACCIO_UNCORE_ROW_STRIDE / 8)

struct fifo {
	uint64_t *v;
	unsigned int depth, head, count;
};

#define WIN_BYTES	(ACCIO_UNCORE_ROW_MMIO_TX_COUNT * 8)

/* The reorder unit of a row: data buffer and per-byte valid vector. */
struct window {
	uint8_t data[WIN_BYTES];
	uint64_t valid[WIN_BYTES / 64];
};

struct hart {
	struct fifo rq;
	uint64_t accel;
	uint64_t wake;
	uint64_t wake_count;
};

struct accio_uncore {
	const struct accio_uncore_ops *ops;
	void *opaque;
	unsigned int rows, harts, qdepth;
	uint8_t mac[6];
	uint16_t ip_id;

	uint64_t ctrl;
	uint64_t evq_mask;
	uint64_t evq_lost;
	struct fifo evq;
	uint64_t ict_misses, prot_violations, rx_malformed, bad_doorbells;
	uint64_t rx_fragments, rx_delivered, tx_sent;
	struct hart *hart;
	uint64_t *row;		/* rows x NREGS_ROW registers */
	struct window *win;	/* one MMIO TX reorder unit per row */
	uint8_t *tx_wait;	/* rows whose doorbell waits for the NIC */
	unsigned int tx_next;	/* where the round-robin resume starts */
	bool tx_from_ring;	/* the frame being sent came from a TX ring */
};

/* ---- small helpers ------------------------------------------------------ */

static bool fifo_push(struct fifo *f, uint64_t v)
{
	if (f->count == f->depth)
		return false;
	f->v[(f->head + f->count) % f->depth] = v;
	f->count++;
	return true;
}

static bool fifo_pop(struct fifo *f, uint64_t *v, bool peek)
{
	if (!f->count)
		return false;
	*v = f->v[f->head];
	if (!peek) {
		f->head = (f->head + 1) % f->depth;
		f->count--;
	}
	return true;
}

static uint64_t *rreg(struct accio_uncore *u, unsigned int row, unsigned int off)
{
	return &u->row[(size_t)row * NREGS_ROW + off / 8];
}

static uint64_t field(uint64_t v, uint64_t mask, unsigned int shift)
{
	return (v & mask) >> shift;
}

/* Ring records: little-endian fields (accio_contract.h), padded records. */
static void put_le(uint8_t *p, uint64_t v, unsigned int size)
{
	unsigned int i;

	for (i = 0; i < size; i++)
		p[i] = v >> (8 * i);
}

static uint64_t get_le(const uint8_t *p, unsigned int size)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < size; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

#define REC_PAD(n)	(((n) + ACCIO_REC_ALIGN - 1) & ~(size_t)(ACCIO_REC_ALIGN - 1))

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += p[len - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* UDP checksum over the IPv4 pseudo-header and the UDP header + payload. */
static uint16_t udp_csum(uint32_t src, uint32_t dst, const uint8_t *udp, size_t len)
{
	uint8_t ph[12];

	put32(ph, src);
	put32(ph + 4, dst);
	ph[8] = 0;
	ph[9] = 17;
	put16(ph + 10, (uint16_t)len);
	return csum_fold(csum_add(csum_add(0, ph, sizeof(ph)), udp, len));
}

/* ---- RoCEv2 invariant CRC ---------------------------------------------- */

/* CRC-32 (IEEE 802.3, reflected) without the final inversion. */
static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t len)
{
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return crc;
}

#define ROCE_BTH	12
#define ROCE_ICRC	4

/*
 * The ICRC of a RoCEv2 datagram over IPv4: a CRC-32 over a masked LRH
 * (8 bytes of ones), the IPv4 and UDP headers with the fields routers may
 * change (TOS, TTL, both checksums) set to ones, the BTH with its reserved
 * byte set to ones, and the rest of the UDP payload up to the ICRC itself.
 * ip is a 20-byte header; udp points at the UDP header and payload of
 * ulen bytes (ulen >= 8 + ROCE_BTH + ROCE_ICRC). On the wire it follows the
 * payload least significant byte first.
 */
static uint32_t roce_icrc(const uint8_t *ip, const uint8_t *udp, size_t ulen)
{
	uint8_t h[8 + 20 + 8 + ROCE_BTH];

	memset(h, 0xff, 8);
	memcpy(h + 8, ip, 20);
	memcpy(h + 28, udp, 8 + ROCE_BTH);
	h[8 + 1] = 0xff;			/* TOS */
	h[8 + 8] = 0xff;			/* TTL */
	h[8 + 10] = h[8 + 11] = 0xff;		/* IPv4 checksum */
	h[28 + 6] = h[28 + 7] = 0xff;		/* UDP checksum */
	h[36 + 4] = 0xff;			/* BTH reserved byte */
	return ~crc32_update(crc32_update(0xffffffffu, h, sizeof(h)),
			     udp + 8 + ROCE_BTH, ulen - 8 - ROCE_BTH - ROCE_ICRC);
}

/* ---- events and interrupts ---------------------------------------------- */

static void update_evq_irq(struct accio_uncore *u)
{
	u->ops->set_irq(u->opaque, u->harts,
			(u->evq_mask & ACCIO_UNCORE_EVQ_INTR_MASK_ENABLE_MASK) &&
			u->evq.count);
}

static void event(struct accio_uncore *u, enum accio_event type,
		  unsigned int row, uint32_t info)
{
	uint64_t v = (uint64_t)type |
		     (uint64_t)(row & 0xffff) << ACCIO_UNCORE_EVQ_POP_ROW_SHIFT |
		     ((uint64_t)(info & 0x7fffffff) << ACCIO_UNCORE_EVQ_POP_INFO_SHIFT);

	if (!fifo_push(&u->evq, v))
		u->evq_lost++;
	update_evq_irq(u);
}

static void update_wake_irq(struct accio_uncore *u, unsigned int h)
{
	u->ops->set_irq(u->opaque, h,
			!!(u->hart[h].wake & ACCIO_UNCORE_HART_WAKE_PENDING_MASK));
}

/*
 * A suspended side of a row became ready: queue the row on its hart and,
 * for a high-priority row, raise the wake-up interrupt unless the hart runs
 * an accelerated thread of equal or higher priority.
 */
static void make_ready(struct accio_uncore *u, unsigned int row, bool tx)
{
	uint64_t st = *rreg(u, row, ACCIO_UNCORE_ROW_STATE);
	unsigned int h = field(st, ACCIO_UNCORE_ROW_STATE_HART_MASK,
			       ACCIO_UNCORE_ROW_STATE_HART_SHIFT);
	unsigned int prio = field(st, ACCIO_UNCORE_ROW_STATE_PRIO_MASK,
				  ACCIO_UNCORE_ROW_STATE_PRIO_SHIFT);
	struct hart *hp;

	if (h >= u->harts)
		h = 0;
	hp = &u->hart[h];
	*rreg(u, row, ACCIO_UNCORE_ROW_STATE) &=
		~(tx ? ACCIO_UNCORE_ROW_STATE_TX_SUSP_MASK :
		       ACCIO_UNCORE_ROW_STATE_RX_SUSP_MASK);
	/* Each side of each row is queued at most once: the queue cannot fill. */
	fifo_push(&hp->rq, row | (tx ? ACCIO_UNCORE_HART_RQ_POP_TX_MASK : 0));
	if (!(st & ACCIO_UNCORE_ROW_STATE_INTR_MASK))
		return;
	if ((hp->accel & ACCIO_UNCORE_HART_ACCEL_RUNNING_MASK) &&
	    field(hp->accel, ACCIO_UNCORE_HART_ACCEL_PRIO_MASK,
		  ACCIO_UNCORE_HART_ACCEL_PRIO_SHIFT) >= prio)
		return;
	hp->wake |= ACCIO_UNCORE_HART_WAKE_PENDING_MASK;
	hp->wake_count++;
	update_wake_irq(u, h);
}

/* ---- rings -------------------------------------------------------------- */

static int ring_io(struct accio_uncore *u, bool write, uint64_t base,
		   uint64_t size, uint64_t ptr, void *buf, size_t len)
{
	uint64_t off = ptr & (size - 1);
	size_t first = len < size - off ? len : (size_t)(size - off);
	uint8_t *b = buf;

	if (write) {
		if (u->ops->dma_write(u->opaque, base + off, b, first))
			return -1;
		return first < len ?
			u->ops->dma_write(u->opaque, base, b + first, len - first) : 0;
	}
	if (u->ops->dma_read(u->opaque, base + off, b, first))
		return -1;
	return first < len ?
		u->ops->dma_read(u->opaque, base, b + first, len - first) : 0;
}

static bool ring_size_ok(uint64_t size)
{
	return size >= 256 && size <= (16u << 20) && !(size & (size - 1));
}

static bool row_live(struct accio_uncore *u, unsigned int row)
{
	uint64_t st = *rreg(u, row, ACCIO_UNCORE_ROW_STATE);

	return (st & ACCIO_UNCORE_ROW_STATE_ENABLED_MASK) &&
	       (st & ACCIO_UNCORE_ROW_STATE_ACCEL_MASK);
}

static bool row_roce(struct accio_uncore *u, unsigned int row)
{
	return *rreg(u, row, ACCIO_UNCORE_ROW_STATE) &
	       ACCIO_UNCORE_ROW_STATE_ROCE_MASK;
}

/* ---- receive ------------------------------------------------------------ */

/*
 * The row of a received datagram: the exact 5-tuple wins over a wildcard
 * one. A RoCEv2 row (STATE.ROCE) also needs the BTH's destination QP to be
 * its ROCE_QPN; qpn is -1 for a datagram without a whole BTH. Wildcard
 * rows of a group (STATE.GROUP, SO_REUSEPORT) share the datagrams by a
 * hash of the source: h, the top half of (x * 0x9E3779B1) mod 2^32 with
 * x = rip ^ (rport * 0x10001), picks the member at index (h * n) >> 16 of
 * the n that match, in row order.
 */
static int match_row(struct accio_uncore *u, uint32_t lip, uint16_t lport,
		     uint32_t rip, uint16_t rport, int32_t qpn)
{
	uint16_t members[ACCIO_MAX_ROWS];
	unsigned int r, n = 0;
	uint32_t h;
	int wild = -1;

	for (r = 0; r < u->rows; r++) {
		uint64_t l = *rreg(u, r, ACCIO_UNCORE_ROW_LOCAL);
		uint64_t m = *rreg(u, r, ACCIO_UNCORE_ROW_REMOTE);
		uint32_t mip = field(m, ACCIO_UNCORE_ROW_REMOTE_IP_MASK,
				     ACCIO_UNCORE_ROW_REMOTE_IP_SHIFT);
		uint16_t mport = field(m, ACCIO_UNCORE_ROW_REMOTE_PORT_MASK,
				       ACCIO_UNCORE_ROW_REMOTE_PORT_SHIFT);

		if (!row_live(u, r) ||
		    field(l, ACCIO_UNCORE_ROW_LOCAL_PROTO_MASK,
			  ACCIO_UNCORE_ROW_LOCAL_PROTO_SHIFT) != 17 ||
		    field(l, ACCIO_UNCORE_ROW_LOCAL_IP_MASK,
			  ACCIO_UNCORE_ROW_LOCAL_IP_SHIFT) != lip ||
		    field(l, ACCIO_UNCORE_ROW_LOCAL_PORT_MASK,
			  ACCIO_UNCORE_ROW_LOCAL_PORT_SHIFT) != lport)
			continue;
		if (row_roce(u, r) &&
		    (qpn <= 0 ||
		     (uint32_t)qpn != field(*rreg(u, r, ACCIO_UNCORE_ROW_ROCE_QPN),
					    ACCIO_UNCORE_ROW_ROCE_QPN_QPN_MASK,
					    ACCIO_UNCORE_ROW_ROCE_QPN_QPN_SHIFT)))
			continue;	/* another queue pair's */
		if (mip == rip && mport == rport)
			return r;	/* exact 5-tuple wins */
		if ((!mip || mip == rip) && (!mport || mport == rport)) {
			if (wild < 0)
				wild = r;
			if (*rreg(u, r, ACCIO_UNCORE_ROW_STATE) &
			    ACCIO_UNCORE_ROW_STATE_GROUP_MASK)
				members[n++] = r;
		}
	}
	if (!n)
		return wild;
	h = ((rip ^ (uint32_t)rport * 0x10001u) * 0x9E3779B1u) >> 16;
	return members[(h * n) >> 16];
}

static void deliver(struct accio_uncore *u, unsigned int row, const uint8_t *ip,
		    uint16_t sport, const uint8_t *payload, size_t len)
{
	uint64_t base = *rreg(u, row, ACCIO_UNCORE_ROW_RX_BASE);
	uint64_t size = *rreg(u, row, ACCIO_UNCORE_ROW_RX_SIZE);
	uint64_t wptr = *rreg(u, row, ACCIO_UNCORE_ROW_RX_WPTR);
	uint64_t rptr = *rreg(u, row, ACCIO_UNCORE_ROW_RX_RPTR);
	size_t rec = REC_PAD(ACCIO_RX_HDR + len);
	uint8_t hdr[ACCIO_RX_HDR] = { 0 };
	uint64_t ts = u->ops->now_ns(u->opaque);

	/* Never overwrite unread data; a read pointer ahead of the write
	 * pointer or more than a ring behind is treated as a full ring. */
	if (!ring_size_ok(size) || rptr > wptr || wptr - rptr > size ||
	    size - (wptr - rptr) < rec) {
		(*rreg(u, row, ACCIO_UNCORE_ROW_RX_DROPS))++;
		event(u, ACCIO_EV_RX_RING_FULL, row, (uint32_t)len);
		return;
	}
	put_le(hdr + ACCIO_RX_REC_LEN, len, ACCIO_RX_REC_LEN_SIZE);
	put_le(hdr + ACCIO_RX_REC_SPORT, sport, ACCIO_RX_REC_SPORT_SIZE);
	put_le(hdr + ACCIO_RX_REC_SIP, get32(ip + 12), ACCIO_RX_REC_SIP_SIZE);
	put_le(hdr + ACCIO_RX_REC_TSTAMP, ts, ACCIO_RX_REC_TSTAMP_SIZE);
	put_le(hdr + ACCIO_RX_REC_TOS, ip[1], ACCIO_RX_REC_TOS_SIZE);
	put_le(hdr + ACCIO_RX_REC_TTL, ip[8], ACCIO_RX_REC_TTL_SIZE);
	put_le(hdr + ACCIO_RX_REC_DIP, get32(ip + 16), ACCIO_RX_REC_DIP_SIZE);
	if (ring_io(u, true, base, size, wptr, hdr, sizeof(hdr)) ||
	    ring_io(u, true, base, size, wptr + ACCIO_RX_HDR, (void *)payload, len)) {
		(*rreg(u, row, ACCIO_UNCORE_ROW_RX_DROPS))++;
		event(u, ACCIO_EV_RX_RING_FULL, row, (uint32_t)len);
		return;
	}
	*rreg(u, row, ACCIO_UNCORE_ROW_RX_WPTR) = wptr + rec;
	(*rreg(u, row, ACCIO_UNCORE_ROW_RX_PKTS))++;
	*rreg(u, row, ACCIO_UNCORE_ROW_RX_BYTES) += len;
	u->rx_delivered++;
	if (*rreg(u, row, ACCIO_UNCORE_ROW_STATE) & ACCIO_UNCORE_ROW_STATE_RX_SUSP_MASK)
		make_ready(u, row, false);
}

bool accio_uncore_rx(struct accio_uncore *u, const uint8_t *f, size_t len)
{
	const uint8_t *ip, *udp;
	size_t ihl, tot, ulen;
	uint32_t sip, dip;
	uint16_t sport, dport;
	int row;

	if (!(u->ctrl & ACCIO_UNCORE_CTRL_ENABLE_MASK))
		return false;
	if (len < 14 || get16(f + 12) != 0x0800)
		return false;			/* not IPv4: normal path */
	ip = f + 14;
	if (len < 14 + 20 || ip[9] != 17)
		return false;			/* too short to tell, or not UDP */
	ihl = (ip[0] & 0xf) * 4;
	tot = get16(ip + 2);
	if ((ip[0] >> 4) != 4 || ihl < 20 || len < 14 + ihl ||
	    tot < ihl || 14 + tot > len ||
	    csum_fold(csum_add(0, ip, ihl)) != 0) {
		u->rx_malformed++;		/* truncated, bad header or checksum */
		return true;
	}
	/* before any UDP header is asked for: a last fragment may hold less */
	if (get16(ip + 6) & 0x3fff) {
		u->rx_fragments++;		/* MF or an offset: kernel reassembles */
		return false;
	}
	if (tot < ihl + 8) {
		u->rx_malformed++;		/* shorter than its UDP header */
		return true;
	}
	udp = ip + ihl;
	ulen = get16(udp + 4);
	if (ulen < 8 || ulen != tot - ihl || ulen - 8 > ACCIO_MAX_PAYLOAD) {
		u->rx_malformed++;
		return true;
	}
	sip = get32(ip + 12);
	dip = get32(ip + 16);
	sport = get16(udp);
	dport = get16(udp + 2);
	row = match_row(u, dip, dport, sip, sport,
			ulen >= 8 + ROCE_BTH ? (int32_t)(get32(udp + 8 + 4) & 0xffffff) : -1);
	if (row < 0) {
		u->ict_misses++;
		if (u->ctrl & ACCIO_UNCORE_CTRL_MISS_EVENTS_MASK)
			event(u, ACCIO_EV_ICT_MISS, 0xffff, dport);
		return false;
	}
	/*
	 * The UDP checksum only of a row's datagrams: one for the normal path
	 * goes there as it came, for the NIC's receive checksum offload or the
	 * kernel to check and count.
	 */
	if (get16(udp + 6) && udp_csum(sip, dip, udp, ulen) != 0) {
		u->rx_malformed++;
		return true;
	}
	if (row_roce(u, row) &&
	    (ihl != 20 || ulen < 8 + ROCE_BTH + ROCE_ICRC ||
	     roce_icrc(ip, udp, ulen) != (uint32_t)(udp[ulen - 4] |
						  udp[ulen - 3] << 8 |
						  udp[ulen - 2] << 16 |
						  (uint32_t)udp[ulen - 1] << 24))) {
		u->rx_malformed++;		/* not RoCEv2, or a wrong ICRC */
		return true;
	}
	deliver(u, row, ip, sport, udp + 8, ulen - 8);
	return true;
}

/* ---- transmit ----------------------------------------------------------- */

/*
 * Build Ethernet, IPv4 and UDP headers in front of the payload already at
 * frame + 42, fill in both checksums and transmit. Returns the wire time of
 * the frame's first bit.
 */
static uint64_t send_datagram(struct accio_uncore *u, unsigned int row,
			      uint32_t dip, uint16_t dport, uint8_t *frame,
			      size_t len)
{
	uint64_t l = *rreg(u, row, ACCIO_UNCORE_ROW_LOCAL);
	uint64_t dmac = *rreg(u, row, ACCIO_UNCORE_ROW_DST_MAC);
	uint32_t sip = field(l, ACCIO_UNCORE_ROW_LOCAL_IP_MASK,
			     ACCIO_UNCORE_ROW_LOCAL_IP_SHIFT);
	uint64_t st = *rreg(u, row, ACCIO_UNCORE_ROW_STATE);
	uint8_t *ip = frame + 14, *udp = ip + 20;
	uint8_t ttl = field(st, ACCIO_UNCORE_ROW_STATE_TTL_MASK,
			    ACCIO_UNCORE_ROW_STATE_TTL_SHIFT);
	int i;

	for (i = 0; i < 6; i++)
		frame[i] = dmac >> (8 * i);
	memcpy(frame + 6, u->mac, 6);
	put16(frame + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[1] = field(st, ACCIO_UNCORE_ROW_STATE_TOS_MASK, ACCIO_UNCORE_ROW_STATE_TOS_SHIFT);
	put16(ip + 2, 20 + 8 + len);
	put16(ip + 4, u->ip_id++);
	/* DF, unless the row's socket turned path MTU discovery off */
	put16(ip + 6, st & ACCIO_UNCORE_ROW_STATE_NO_DF_MASK ? 0 : 0x4000);
	ip[8] = ttl ? ttl : 64;		/* STATE.TTL 0: 64 */
	ip[9] = 17;
	put32(ip + 12, sip);
	put32(ip + 16, dip);
	put16(ip + 10, csum_fold(csum_add(0, ip, 20)));
	put16(udp, field(l, ACCIO_UNCORE_ROW_LOCAL_PORT_MASK,
			 ACCIO_UNCORE_ROW_LOCAL_PORT_SHIFT));
	put16(udp + 2, dport);
	put16(udp + 4, 8 + len);
	if (row_roce(u, row) && len >= ROCE_BTH + ROCE_ICRC) {
		uint32_t icrc = roce_icrc(ip, udp, 8 + len);

		for (i = 0; i < 4; i++)
			udp[8 + len - 4 + i] = icrc >> (8 * i);
	}
	put16(udp + 6, 0);
	put16(udp + 6, udp_csum(sip, dip, udp, 8 + len) ?: 0xffff);
	return u->ops->transmit(u->opaque, frame, 14 + 20 + 8 + len);
}

/* Count a transmitted datagram; its wire time goes with the count. */
static void count_tx(struct accio_uncore *u, unsigned int row, size_t len,
		     uint64_t wire_ns)
{
	(*rreg(u, row, ACCIO_UNCORE_ROW_TX_PKTS))++;
	*rreg(u, row, ACCIO_UNCORE_ROW_TX_TSTAMP) = wire_ns;
	*rreg(u, row, ACCIO_UNCORE_ROW_TX_BYTES) += len;
	u->tx_sent++;
}

/*
 * Decode a TX record header (ring record or MMIO TX message): payload
 * length, then the destination, where zero means the row's remote endpoint.
 */
static void tx_header(struct accio_uncore *u, unsigned int row,
		      const uint8_t hdr[ACCIO_TX_HDR], uint16_t *len,
		      uint16_t *dport, uint32_t *dip)
{
	uint64_t m = *rreg(u, row, ACCIO_UNCORE_ROW_REMOTE);

	*len = get_le(hdr + ACCIO_TX_REC_LEN, ACCIO_TX_REC_LEN_SIZE);
	*dport = get_le(hdr + ACCIO_TX_REC_DPORT, ACCIO_TX_REC_DPORT_SIZE);
	*dip = get_le(hdr + ACCIO_TX_REC_DIP, ACCIO_TX_REC_DIP_SIZE);
	if (!*dip)
		*dip = field(m, ACCIO_UNCORE_ROW_REMOTE_IP_MASK,
			     ACCIO_UNCORE_ROW_REMOTE_IP_SHIFT);
	if (!*dport)
		*dport = field(m, ACCIO_UNCORE_ROW_REMOTE_PORT_MASK,
			       ACCIO_UNCORE_ROW_REMOTE_PORT_SHIFT);
}

static void doorbell(struct accio_uncore *u, unsigned int row)
{
	uint64_t base = *rreg(u, row, ACCIO_UNCORE_ROW_TX_BASE);
	uint64_t size = *rreg(u, row, ACCIO_UNCORE_ROW_TX_SIZE);
	uint64_t wptr = *rreg(u, row, ACCIO_UNCORE_ROW_TX_WPTR);
	uint64_t rptr = *rreg(u, row, ACCIO_UNCORE_ROW_TX_RPTR);
	uint8_t frame[14 + 20 + 8 + ACCIO_MAX_PAYLOAD];
	uint8_t *udp = frame + 14 + 20;
	bool sent = false;

	if (!(u->ctrl & ACCIO_UNCORE_CTRL_ENABLE_MASK) || !row_live(u, row)) {
		u->bad_doorbells++;
		event(u, ACCIO_EV_DOORBELL_DISABLED, row, 0);
		return;
	}
	if (!ring_size_ok(size) || wptr < rptr || wptr - rptr > size) {
		(*rreg(u, row, ACCIO_UNCORE_ROW_TX_ERRORS))++;
		event(u, ACCIO_EV_TX_RING_ERROR, row, 0);
		return;
	}
	u->tx_wait[row] = 0;
	while (wptr - rptr >= ACCIO_TX_HDR) {
		uint8_t hdr[ACCIO_TX_HDR];
		uint32_t dip;
		uint16_t dport, len;
		uint64_t wire;
		size_t rec;

		if (u->ops->tx_ready && !u->ops->tx_ready(u->opaque)) {
			u->tx_wait[row] = 1;	/* back-pressure from the NIC */
			break;
		}

		if (ring_io(u, false, base, size, rptr, hdr, sizeof(hdr)))
			goto bad;
		tx_header(u, row, hdr, &len, &dport, &dip);
		rec = REC_PAD(ACCIO_TX_HDR + len);
		if (len > ACCIO_MAX_PAYLOAD || rec > wptr - rptr || !dip || !dport)
			goto bad;
		if (ring_io(u, false, base, size, rptr + ACCIO_TX_HDR, udp + 8, len))
			goto bad;
		u->tx_from_ring = true;
		wire = send_datagram(u, row, dip, dport, frame, len);
		rptr += rec;
		*rreg(u, row, ACCIO_UNCORE_ROW_TX_RPTR) = rptr;
		count_tx(u, row, len, wire);
		sent = true;
	}
	goto done;
bad:
	/* Stop at the bad record: it stays in the ring for software to see. */
	(*rreg(u, row, ACCIO_UNCORE_ROW_TX_ERRORS))++;
	event(u, ACCIO_EV_TX_RING_ERROR, row, (uint32_t)(rptr & 0x7fffffff));
done:
	if (sent && (*rreg(u, row, ACCIO_UNCORE_ROW_STATE) &
		     ACCIO_UNCORE_ROW_STATE_TX_SUSP_MASK))
		make_ready(u, row, true);
}

/* ---- direct MMIO transmit: the reorder unit ----------------------------- */

static bool win_valid(struct window *w, unsigned int b)
{
	b %= WIN_BYTES;
	return w->valid[b / 64] >> (b % 64) & 1;
}

static void win_set(struct window *w, unsigned int b, bool v)
{
	b %= WIN_BYTES;
	if (v)
		w->valid[b / 64] |= 1ULL << (b % 64);
	else
		w->valid[b / 64] &= ~(1ULL << (b % 64));
}

/* Release, in order, every message whose bytes have all arrived. */
static void win_drain(struct accio_uncore *u, unsigned int row)
{
	struct window *w = &u->win[row];
	uint64_t *next = rreg(u, row, ACCIO_UNCORE_ROW_MMIO_TX_NEXT);
	uint8_t frame[14 + 20 + 8 + ACCIO_MAX_PAYLOAD], hdr[ACCIO_TX_HDR];
	unsigned int i, start, len, msg;
	uint16_t dport, len16;
	uint32_t dip;

	for (;;) {
		start = *next % WIN_BYTES;
		/* the length address register: the message's length field */
		for (i = 0; i < ACCIO_TX_REC_LEN_SIZE; i++)
			if (!win_valid(w, start + ACCIO_TX_REC_LEN + i))
				return;
		len = 0;
		for (i = 0; i < ACCIO_TX_REC_LEN_SIZE; i++)
			len |= (unsigned int)w->data[(start + ACCIO_TX_REC_LEN + i) % WIN_BYTES] << (8 * i);
		msg = REC_PAD(ACCIO_TX_HDR + len);
		if (len > ACCIO_MAX_PAYLOAD) {
			/* No way to find the next message: discard the window
			 * and restart at its next boundary. */
			(*rreg(u, row, ACCIO_UNCORE_ROW_MMIO_TX_ERRORS))++;
			event(u, ACCIO_EV_MMIO_TX_ERROR, row, start);
			memset(w->valid, 0, sizeof(w->valid));
			*next = (*next + WIN_BYTES) & ~(uint64_t)(WIN_BYTES - 1);
			return;
		}
		for (i = 0; i < msg; i++)
			if (!win_valid(w, start + i))
				return;
		for (i = 0; i < ACCIO_TX_HDR; i++)
			hdr[i] = w->data[(start + i) % WIN_BYTES];
		tx_header(u, row, hdr, &len16, &dport, &dip);
		for (i = 0; i < len; i++)
			frame[42 + i] = w->data[(start + ACCIO_TX_HDR + i) % WIN_BYTES];
		for (i = 0; i < msg; i++)
			win_set(w, start + i, false);
		*next += msg;
		if (!dip || !dport) {
			(*rreg(u, row, ACCIO_UNCORE_ROW_MMIO_TX_ERRORS))++;
			event(u, ACCIO_EV_MMIO_TX_ERROR, row, start);
			continue;
		}
		u->tx_from_ring = false;
		count_tx(u, row, len, send_datagram(u, row, dip, dport, frame, len));
	}
}

static void win_store(struct accio_uncore *u, unsigned int row, unsigned int off,
		      uint64_t val, unsigned int size)
{
	struct window *w = &u->win[row];
	unsigned int i;

	if (!(u->ctrl & ACCIO_UNCORE_CTRL_ENABLE_MASK) || !row_live(u, row)) {
		u->bad_doorbells++;
		event(u, ACCIO_EV_DOORBELL_DISABLED, row, off);
		return;
	}
	/* Address reuse: a byte may be written again only once released. */
	for (i = 0; i < size; i++) {
		if (win_valid(w, off + i)) {
			(*rreg(u, row, ACCIO_UNCORE_ROW_MMIO_TX_ERRORS))++;
			event(u, ACCIO_EV_MMIO_TX_ERROR, row, off + i);
			return;
		}
	}
	for (i = 0; i < size; i++) {
		w->data[(off + i) % WIN_BYTES] = val >> (8 * i);
		win_set(w, off + i, true);
	}
	win_drain(u, row);
}

/* ---- registers ---------------------------------------------------------- */

static void refuse(struct accio_uncore *u, unsigned int row, uint64_t off,
		   const struct accio_access *who)
{
	u->prot_violations++;
	if (row < u->rows)
		(*rreg(u, row, ACCIO_UNCORE_ROW_PROT_FAULTS))++;
	event(u, ACCIO_EV_PROTECTION, row < u->rows ? row : 0xffff,
	      (uint32_t)(off & 0xfff) | (uint32_t)who->asid << 12);
}

static bool user_may_access_row(struct accio_uncore *u, unsigned int row,
				const struct accio_access *who)
{
	uint64_t st = *rreg(u, row, ACCIO_UNCORE_ROW_STATE);

	return (st & ACCIO_UNCORE_ROW_STATE_ENABLED_MASK) &&
	       *rreg(u, row, ACCIO_UNCORE_ROW_OWNER_ASID) == who->asid;
}

static uint64_t global_read(struct accio_uncore *u, uint64_t off)
{
	uint64_t v;

	if (off >= ACCIO_UNCORE_HART_BASE &&
	    off < ACCIO_UNCORE_HART_BASE + (uint64_t)u->harts * ACCIO_UNCORE_HART_STRIDE) {
		struct hart *h = &u->hart[(off - ACCIO_UNCORE_HART_BASE) /
					  ACCIO_UNCORE_HART_STRIDE];

		switch ((off - ACCIO_UNCORE_HART_BASE) % ACCIO_UNCORE_HART_STRIDE) {
		case ACCIO_UNCORE_HART_RQ_POP:
			return fifo_pop(&h->rq, &v, false) ?
				v | ACCIO_UNCORE_HART_RQ_POP_VALID_MASK : 0;
		case ACCIO_UNCORE_HART_RQ_PEEK:
			return fifo_pop(&h->rq, &v, true) ?
				v | ACCIO_UNCORE_HART_RQ_PEEK_VALID_MASK : 0;
		case ACCIO_UNCORE_HART_RQ_COUNT:
			return h->rq.count;
		case ACCIO_UNCORE_HART_ACCEL:
			return h->accel;
		case ACCIO_UNCORE_HART_WAKE:
			return h->wake;
		case ACCIO_UNCORE_HART_WAKE_COUNT:
			return h->wake_count;
		}
		return 0;
	}
	switch (off) {
	case ACCIO_UNCORE_ID:
		return ACCIO_UNCORE_ID_RESET;
	case ACCIO_UNCORE_CONFIG:
		return (uint64_t)u->rows |
		       (uint64_t)u->harts << ACCIO_UNCORE_CONFIG_HARTS_SHIFT |
		       (uint64_t)u->qdepth << ACCIO_UNCORE_CONFIG_QDEPTH_SHIFT;
	case ACCIO_UNCORE_CTRL:
		return u->ctrl;
	case ACCIO_UNCORE_EVQ_POP:
		if (!fifo_pop(&u->evq, &v, false))
			return 0;
		update_evq_irq(u);
		return v | ACCIO_UNCORE_EVQ_POP_VALID_MASK;
	case ACCIO_UNCORE_EVQ_STATUS:
		return u->evq.count |
		       (u->evq_lost & 0xffffffff) << ACCIO_UNCORE_EVQ_STATUS_LOST_SHIFT;
	case ACCIO_UNCORE_EVQ_INTR_MASK:
		return u->evq_mask;
	case ACCIO_UNCORE_ICT_MISSES:
		return u->ict_misses;
	case ACCIO_UNCORE_PROT_VIOLATIONS:
		return u->prot_violations;
	case ACCIO_UNCORE_RX_MALFORMED:
		return u->rx_malformed;
	case ACCIO_UNCORE_BAD_DOORBELLS:
		return u->bad_doorbells;
	case ACCIO_UNCORE_RX_FRAGMENTS:
		return u->rx_fragments;
	case ACCIO_UNCORE_RX_DELIVERED:
		return u->rx_delivered;
	case ACCIO_UNCORE_TX_SENT:
		return u->tx_sent;
	}
	return 0;
}

static void global_write(struct accio_uncore *u, uint64_t off, uint64_t val)
{
	if (off >= ACCIO_UNCORE_HART_BASE &&
	    off < ACCIO_UNCORE_HART_BASE + (uint64_t)u->harts * ACCIO_UNCORE_HART_STRIDE) {
		unsigned int h = (off - ACCIO_UNCORE_HART_BASE) / ACCIO_UNCORE_HART_STRIDE;

		switch ((off - ACCIO_UNCORE_HART_BASE) % ACCIO_UNCORE_HART_STRIDE) {
		case ACCIO_UNCORE_HART_ACCEL:
			u->hart[h].accel = val & (ACCIO_UNCORE_HART_ACCEL_RUNNING_MASK |
						  ACCIO_UNCORE_HART_ACCEL_PRIO_MASK);
			break;
		case ACCIO_UNCORE_HART_WAKE:
			u->hart[h].wake &= ~(val & ACCIO_UNCORE_HART_WAKE_PENDING_MASK);
			update_wake_irq(u, h);
			break;
		}
		return;
	}
	switch (off) {
	case ACCIO_UNCORE_CTRL:
		u->ctrl = val & (ACCIO_UNCORE_CTRL_ENABLE_MASK |
				 ACCIO_UNCORE_CTRL_MISS_EVENTS_MASK);
		break;
	case ACCIO_UNCORE_EVQ_INTR_MASK:
		u->evq_mask = val & ACCIO_UNCORE_EVQ_INTR_MASK_ENABLE_MASK;
		update_evq_irq(u);
		break;
	}
}

uint64_t accio_uncore_read(struct accio_uncore *u, uint64_t off,
			   const struct accio_access *who)
{
	unsigned int row, r;

	off &= ~7ULL;
	if (off < ACCIO_UNCORE_ROW_BASE) {
		if (who->user) {
			refuse(u, 0xffff, off, who);
			return ACCIO_POISON;
		}
		return global_read(u, off);
	}
	row = (off - ACCIO_UNCORE_ROW_BASE) / ACCIO_UNCORE_ROW_STRIDE;
	r = (off - ACCIO_UNCORE_ROW_BASE) % ACCIO_UNCORE_ROW_STRIDE;
	if (row >= u->rows) {
		event(u, ACCIO_EV_ROW_RANGE, 0xffff, (uint32_t)row);
		return ACCIO_POISON;
	}
	if (who->user && !user_may_access_row(u, row, who)) {
		refuse(u, row, r, who);
		return ACCIO_POISON;
	}
	if (r == ACCIO_UNCORE_ROW_DOORBELL || r >= ACCIO_UNCORE_ROW_MMIO_TX)
		return 0;
	return *rreg(u, row, r);
}

void accio_uncore_write(struct accio_uncore *u, uint64_t off, uint64_t val,
			const struct accio_access *who)
{
	accio_uncore_store(u, off, val, 8, who);
}

void accio_uncore_store(struct accio_uncore *u, uint64_t off, uint64_t val,
			unsigned int size, const struct accio_access *who)
{
	unsigned int row, r;
	uint64_t *reg;

	bool window = off >= ACCIO_UNCORE_ROW_BASE &&
		      (off - ACCIO_UNCORE_ROW_BASE) % ACCIO_UNCORE_ROW_STRIDE >=
		      ACCIO_UNCORE_ROW_MMIO_TX;

	if (size < 1 || size > 8 || (size & (size - 1)) || (off & (size - 1)))
		return;		/* the bus never issues these */
	if (!window && size != 8)
		return;		/* registers take 64-bit stores only */
	if (off < ACCIO_UNCORE_ROW_BASE) {
		if (who->user)
			refuse(u, 0xffff, off, who);
		else
			global_write(u, off, val);
		return;
	}
	row = (off - ACCIO_UNCORE_ROW_BASE) / ACCIO_UNCORE_ROW_STRIDE;
	r = (off - ACCIO_UNCORE_ROW_BASE) % ACCIO_UNCORE_ROW_STRIDE;
	if (row >= u->rows) {
		u->bad_doorbells += r == ACCIO_UNCORE_ROW_DOORBELL;
		event(u, ACCIO_EV_ROW_RANGE, 0xffff, (uint32_t)row);
		return;
	}
	if (who->user && !user_may_access_row(u, row, who)) {
		refuse(u, row, r, who);
		return;
	}
	if (r >= ACCIO_UNCORE_ROW_MMIO_TX) {
		win_store(u, row, r - ACCIO_UNCORE_ROW_MMIO_TX, val, size);
		return;
	}
	reg = rreg(u, row, r);
	switch (r) {
	case ACCIO_UNCORE_ROW_STATE:
		if (who->user) {
			/* only the suspend bits are the user's to change */
			if ((val ^ *reg) & ~ROW_STATE_USER) {
				refuse(u, row, r, who);
				return;
			}
			*reg = (*reg & ~ROW_STATE_USER) | (val & ROW_STATE_USER);
		} else {
			*reg = val & (ACCIO_UNCORE_ROW_STATE_ENABLED_MASK |
				      ACCIO_UNCORE_ROW_STATE_ACCEL_MASK |
				      ROW_STATE_USER |
				      ACCIO_UNCORE_ROW_STATE_INTR_MASK |
				      ACCIO_UNCORE_ROW_STATE_ROCE_MASK |
				      ACCIO_UNCORE_ROW_STATE_NO_DF_MASK |
				      ACCIO_UNCORE_ROW_STATE_GROUP_MASK |
				      ACCIO_UNCORE_ROW_STATE_PRIO_MASK |
				      ACCIO_UNCORE_ROW_STATE_HART_MASK |
				      ACCIO_UNCORE_ROW_STATE_TOS_MASK |
				      ACCIO_UNCORE_ROW_STATE_TTL_MASK);
		}
		return;
	case ACCIO_UNCORE_ROW_RX_RPTR:
	case ACCIO_UNCORE_ROW_TX_WPTR:
		*reg = val;
		return;
	case ACCIO_UNCORE_ROW_DOORBELL:
		doorbell(u, row);
		return;
	case ACCIO_UNCORE_ROW_RX_WPTR:
	case ACCIO_UNCORE_ROW_TX_RPTR:
	case ACCIO_UNCORE_ROW_RX_PKTS:
	case ACCIO_UNCORE_ROW_RX_BYTES:
	case ACCIO_UNCORE_ROW_RX_DROPS:
	case ACCIO_UNCORE_ROW_TX_PKTS:
	case ACCIO_UNCORE_ROW_TX_BYTES:
	case ACCIO_UNCORE_ROW_TX_ERRORS:
	case ACCIO_UNCORE_ROW_PROT_FAULTS:
	case ACCIO_UNCORE_ROW_MMIO_TX_NEXT:
	case ACCIO_UNCORE_ROW_MMIO_TX_ERRORS:
	case ACCIO_UNCORE_ROW_TX_TSTAMP:
		if (who->user)
			refuse(u, row, r, who);
		else
			*reg = val;	/* the kernel resets pointers and counters */
		return;
	case ACCIO_UNCORE_ROW_LOCAL:
	case ACCIO_UNCORE_ROW_REMOTE:
	case ACCIO_UNCORE_ROW_OWNER_ASID:
	case ACCIO_UNCORE_ROW_OWNER_COOKIE:
	case ACCIO_UNCORE_ROW_DST_MAC:
	case ACCIO_UNCORE_ROW_RX_BASE:
	case ACCIO_UNCORE_ROW_RX_SIZE:
	case ACCIO_UNCORE_ROW_TX_BASE:
	case ACCIO_UNCORE_ROW_TX_SIZE:
	case ACCIO_UNCORE_ROW_ROCE_QPN:
		if (who->user) {
			refuse(u, row, r, who);
			return;
		}
		*reg = val;
		return;
	}
	/* unassigned offsets of a row page ignore stores */
}

/* ---- lifetime ----------------------------------------------------------- */

void accio_uncore_link(struct accio_uncore *u, bool up)
{
	event(u, up ? ACCIO_EV_LINK_UP : ACCIO_EV_LINK_DOWN, 0xffff, 0);
}

void accio_uncore_set_mac(struct accio_uncore *u, const uint8_t mac[6])
{
	memcpy(u->mac, mac, 6);
}

/* ---- diagnostics -------------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, used;
};

static void __attribute__((format(printf, 2, 3)))
say(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->p ? b->p + (b->used < b->len ? b->used : b->len) : NULL,
		      b->used < b->len ? b->len - b->used : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->used += (size_t)n;
}

size_t accio_uncore_dump(struct accio_uncore *u, char *buf, size_t len)
{
	struct sbuf b = { buf, len, 0 };
	unsigned int h, i, r;

	if (buf && len)
		buf[0] = 0;
	say(&b, "uncore ctrl=%#llx rows=%u harts=%u evq count=%u lost=%llu mask=%#llx\n",
	    (unsigned long long)u->ctrl, u->rows, u->harts, u->evq.count,
	    (unsigned long long)u->evq_lost, (unsigned long long)u->evq_mask);
	say(&b, "uncore rx_delivered=%llu tx_sent=%llu ict_misses=%llu prot=%llu "
	    "malformed=%llu bad_doorbells=%llu fragments=%llu\n",
	    (unsigned long long)u->rx_delivered, (unsigned long long)u->tx_sent,
	    (unsigned long long)u->ict_misses, (unsigned long long)u->prot_violations,
	    (unsigned long long)u->rx_malformed, (unsigned long long)u->bad_doorbells,
	    (unsigned long long)u->rx_fragments);
	for (h = 0; h < u->harts; h++) {
		struct hart *hp = &u->hart[h];

		say(&b, "hart %u accel=%#llx wake=%#llx wake_count=%llu rq count=%u:",
		    h, (unsigned long long)hp->accel, (unsigned long long)hp->wake,
		    (unsigned long long)hp->wake_count, hp->rq.count);
		for (i = 0; i < hp->rq.count; i++) {
			uint64_t e = hp->rq.v[(hp->rq.head + i) % hp->rq.depth];

			say(&b, " %llu%s",
			    (unsigned long long)(e & ACCIO_UNCORE_HART_RQ_POP_ROW_MASK),
			    (e & ACCIO_UNCORE_HART_RQ_POP_TX_MASK) ? "tx" : "rx");
		}
		say(&b, "\n");
	}
	for (r = 0; r < u->rows; r++) {
		uint64_t st = *rreg(u, r, ACCIO_UNCORE_ROW_STATE);

		if (!(st & ACCIO_UNCORE_ROW_STATE_ENABLED_MASK))
			continue;
		say(&b, "row %u state=%#llx%s%s%s%s asid=%llu local=%#llx remote=%#llx "
		    "rx w=%llu r=%llu size=%llu pkts=%llu drops=%llu "
		    "tx w=%llu r=%llu size=%llu pkts=%llu errors=%llu%s prot=%llu\n", r,
		    (unsigned long long)st,
		    (st & ACCIO_UNCORE_ROW_STATE_ACCEL_MASK) ? " accel" : "",
		    (st & ACCIO_UNCORE_ROW_STATE_RX_SUSP_MASK) ? " rx-susp" : "",
		    (st & ACCIO_UNCORE_ROW_STATE_TX_SUSP_MASK) ? " tx-susp" : "",
		    (st & ACCIO_UNCORE_ROW_STATE_INTR_MASK) ? " intr" : "",
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_OWNER_ASID),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_LOCAL),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_REMOTE),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_RX_WPTR),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_RX_RPTR),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_RX_SIZE),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_RX_PKTS),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_RX_DROPS),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_TX_WPTR),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_TX_RPTR),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_TX_SIZE),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_TX_PKTS),
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_TX_ERRORS),
		    u->tx_wait[r] ? " doorbell-waits-for-nic" : "",
		    (unsigned long long)*rreg(u, r, ACCIO_UNCORE_ROW_PROT_FAULTS));
	}
	return b.used;
}

bool accio_uncore_tx_from_ring(const struct accio_uncore *u)
{
	return u->tx_from_ring;
}

uint64_t accio_uncore_window(const struct accio_uncore *u)
{
	return ACCIO_UNCORE_ROW_BASE + (uint64_t)u->rows * ACCIO_UNCORE_ROW_STRIDE;
}

void accio_uncore_tx_resume(struct accio_uncore *u)
{
	unsigned int i, r, first = u->tx_next;

	/* one pass over the rows from the next in turn, none skipped */
	for (i = 0; i < u->rows; i++) {
		if (u->ops->tx_ready && !u->ops->tx_ready(u->opaque))
			return;
		r = (first + i) % u->rows;
		if (!u->tx_wait[r])
			continue;
		u->tx_wait[r] = 0;
		/* a row disabled meanwhile just forgets its doorbell */
		if ((u->ctrl & ACCIO_UNCORE_CTRL_ENABLE_MASK) && row_live(u, r)) {
			u->tx_next = (r + 1) % u->rows;
			doorbell(u, r);
		}
	}
}

void accio_uncore_reset(struct accio_uncore *u)
{
	unsigned int h;

	memset(u->row, 0, (size_t)u->rows * NREGS_ROW * sizeof(uint64_t));
	memset(u->win, 0, (size_t)u->rows * sizeof(*u->win));
	memset(u->tx_wait, 0, u->rows);
	u->tx_next = 0;
	for (h = 0; h < u->rows; h++)
		*rreg(u, h, ACCIO_UNCORE_ROW_LOCAL) = ACCIO_UNCORE_ROW_LOCAL_RESET;
	for (h = 0; h < u->harts; h++) {
		u->hart[h].rq.head = u->hart[h].rq.count = 0;
		u->hart[h].accel = u->hart[h].wake = u->hart[h].wake_count = 0;
		update_wake_irq(u, h);
	}
	u->evq.head = u->evq.count = 0;
	u->ctrl = u->evq_mask = u->evq_lost = 0;
	u->ict_misses = u->prot_violations = u->rx_malformed = 0;
	u->bad_doorbells = u->rx_fragments = u->rx_delivered = u->tx_sent = 0;
	u->ip_id = 0;
	update_evq_irq(u);
}

struct accio_uncore *accio_uncore_new(unsigned int rows, unsigned int harts,
				      const struct accio_uncore_ops *ops,
				      void *opaque)
{
	struct accio_uncore *u;
	unsigned int h;

	if (!rows || rows > ACCIO_MAX_ROWS || !harts || harts > ACCIO_MAX_HARTS)
		return NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->ops = ops;
	u->opaque = opaque;
	u->rows = rows;
	u->harts = harts;
	u->qdepth = 2 * rows;
	u->row = calloc((size_t)rows * NREGS_ROW, sizeof(uint64_t));
	u->hart = calloc(harts, sizeof(*u->hart));
	u->win = calloc(rows, sizeof(*u->win));
	u->tx_wait = calloc(rows, 1);
	u->evq.depth = u->qdepth;
	u->evq.v = calloc(u->qdepth, sizeof(uint64_t));
	if (!u->row || !u->hart || !u->win || !u->tx_wait || !u->evq.v)
		goto fail;
	for (h = 0; h < harts; h++) {
		u->hart[h].rq.depth = u->qdepth;
		u->hart[h].rq.v = calloc(u->qdepth, sizeof(uint64_t));
		if (!u->hart[h].rq.v)
			goto fail;
	}
	accio_uncore_reset(u);
	return u;
fail:
	accio_uncore_free(u);
	return NULL;
}

void accio_uncore_free(struct accio_uncore *u)
{
	unsigned int h;

	if (!u)
		return;
	if (u->hart)
		for (h = 0; h < u->harts; h++)
			free(u->hart[h].rq.v);
	free(u->hart);
	free(u->row);
	free(u->win);
	free(u->tx_wait);
	free(u->evq.v);
	free(u);
}
