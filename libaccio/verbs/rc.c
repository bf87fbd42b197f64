// SPDX-License-Identifier: MIT
/*
 * An RC QP runs IBA's reliable transport on the row: the requester numbers
 * the packets of each message (PSNs), asks for an acknowledgement on the
 * last one and keeps the message until an ACK covers it; it sends again
 * from a NAK's PSN, after an RNR NAK's delay, or from the oldest
 * unacknowledged packet on a timeout, and fails the message after
 * retry_cnt (rnr_retry) tries. The responder takes packets in PSN order
 * only: a duplicate is acknowledged again, a gap NAKed once, a SEND with no
 * receive posted RNR NAKed; it places SENDs into the posted receives and
 * RDMA WRITEs into the registrations their R_Key names. ACKs go out once
 * per poll for what arrived with AckReq. The engine fills in and checks
 * every packet's ICRC.
 */
#include "accio_verbs.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include <linux/accio.h>

#include "accio_wire.h"
#include "../src/mmio_fence.h"

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The local ACK timeout: 4.096 us << timeout, 1 ms to 4 s; 0: none. */
static uint64_t rc_timeout_ns(const struct accio_qp *qp)
{
	uint64_t t;

	if (!qp->timeout)
		return 0;
	t = 4096ull << (qp->timeout > 31 ? 31 : qp->timeout);
	if (t < 1000000)
		t = 1000000;
	if (t > 4000000000ull)
		t = 4000000000ull;
	return t;
}

/* The RNR NAK timer codes (IBA table 45), in microseconds. */
static uint64_t rnr_ns(uint8_t code)
{
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280,
		1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440,
		81920, 122880, 163840, 245760, 327680, 491520,
	};

	return (uint64_t)us[code & 31] * 1000;
}

/* Room for a record of bytes in the TX ring. sq_lock held. */
static bool tx_room(struct accio_qp *qp, size_t bytes)
{
	uint64_t rlen = rec_tx_bytes(bytes);

	if (qp->tx_wptr + rlen - qp->tx_rptr_seen <= qp->r.tx_bytes)
		return true;
	qp->tx_rptr_seen = reg_read(qp, ACCIO_ROW_TX_RPTR);
	return qp->tx_wptr + rlen - qp->tx_rptr_seen <= qp->r.tx_bytes;
}

static void tx_kick(struct accio_qp *qp)
{
	if (!qp->tx_dirty)
		return;
	wmb_io();
	reg_write(qp, ACCIO_ROW_TX_WPTR, qp->tx_wptr);
	reg_write(qp, ACCIO_ROW_DOORBELL, 1);
	qp->tx_dirty = false;
}

/* Copy len bytes of a send's data from offset off. sq_lock held. */
static void gather(struct accio_qp *qp, uint32_t slot, const struct accio_swqe *e,
		   uint8_t *dst, size_t off, size_t len)
{
	const struct ibv_sge *sge = &qp->sq_sge[(size_t)slot * qp->max_send_sge];
	int i;

	if (e->inl) {
		memcpy(dst, qp->sq_inline + (size_t)slot * qp->max_inline + off, len);
		return;
	}
	for (i = 0; i < e->num_sge && len; i++) {
		size_t n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off < len ? sge[i].length - off : len;
		memcpy(dst, (const uint8_t *)(uintptr_t)sge[i].addr + off, n);
		dst += n;
		len -= n;
		off = 0;
	}
}

/* An ACK or NAK to the peer; false, and nothing sent, if the TX ring is
 * full. sq_lock held.
 */
static bool rc_ack_send(struct accio_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct accio_rc_hdr h = {
		.opcode = ACCIO_OP_RC_ACK, .dqpn = qp->dest_qpn, .psn = psn,
		.syndrome = syndrome, .msn = qp->msn,
	};
	size_t bytes = accio_rc_bytes(ACCIO_OP_RC_ACK, 0);
	uint8_t *rec, *p;

	if (!tx_room(qp, bytes))
		return false;
	rec = qp->r.tx + (qp->tx_wptr & (qp->r.tx_bytes - 1));
	p = rec + ACCIO_TX_HDR;
	p += accio_rc_build(p, &h, 0);
	accio_ud_trailer(p, 0);
	rec_tx_encode(rec, bytes, qp->dest_ip, htons(ACCIO_ROCE_PORT));
	qp->tx_wptr += rec_tx_bytes(bytes);
	qp->tx_dirty = true;
	return true;
}

/* The opcode of packet k of a message of n packets. */
static uint8_t rc_opcode(const struct accio_swqe *e, uint32_t k)
{
	bool first = k == 0, last = k + 1 == e->npkts;
	bool imm = e->opcode == IBV_WR_SEND_WITH_IMM || e->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	bool write = e->opcode == IBV_WR_RDMA_WRITE || e->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	/* SEND and RDMA WRITE number their packets alike: FIRST, MIDDLE, LAST,
	 * LAST with immediate, ONLY, ONLY with immediate
	 */
	uint8_t base = write ? ACCIO_OP_RC_WRITE_FIRST : ACCIO_OP_RC_SEND_FIRST;

	if (first && last)
		return base + 4 + imm;
	if (first)
		return base;
	if (last)
		return base + 2 + imm;
	return base + 1;
}

/* Send the packets not yet sent, as far as the TX ring has room. sq_lock held. */
static void rc_send_pkts(struct accio_qp *qp)
{
	while (qp->sq_sent != qp->sq_tail) {
		uint32_t slot = qp->sq_sent & qp->sq_mask;
		struct accio_swqe *e = &qp->sq[slot];
		uint32_t k = qp->sent_pkts;
		size_t off = (size_t)k * qp->mtu;
		size_t plen = e->len - off < qp->mtu ? e->len - off : qp->mtu;
		struct accio_rc_hdr h = {
			.opcode = rc_opcode(e, k), .dqpn = qp->dest_qpn,
			.psn = (e->first_psn + k) & ACCIO_PSN_MASK,
			.va = e->raddr, .rkey = e->rkey, .dmalen = e->len,
		};
		size_t bytes = accio_rc_bytes(h.opcode, plen);
		uint8_t *rec, *p;

		h.ackreq = accio_rc_is_last(h.opcode);
		h.se = e->se && h.ackreq;
		memcpy(h.imm, e->imm, 4);
		if (!tx_room(qp, bytes))
			break;
		rec = qp->r.tx + (qp->tx_wptr & (qp->r.tx_bytes - 1));
		p = rec + ACCIO_TX_HDR;
		p += accio_rc_build(p, &h, plen);
		gather(qp, slot, e, p, off, plen);
		accio_ud_trailer(p + plen, plen);
		rec_tx_encode(rec, bytes, qp->dest_ip, htons(ACCIO_ROCE_PORT));
		qp->tx_wptr += rec_tx_bytes(bytes);
		qp->tx_dirty = true;
		qp->st.tx++;
		if (!qp->resend_at)
			qp->resend_at = rc_timeout_ns(qp) ? now_ns() + rc_timeout_ns(qp) : 0;
		if (++qp->sent_pkts == e->npkts) {
			qp->sq_sent++;
			qp->sent_pkts = 0;
		}
	}
}

/*
 * Send again from psn: the unacknowledged messages from the one that holds
 * it, from that packet on (go back N). sq_lock held.
 */
static void rc_resend_from(struct accio_qp *qp, uint32_t psn)
{
	uint32_t i, end = qp->sq_sent + (qp->sent_pkts ? 1 : 0);

	for (i = qp->sq_acked; i != end; i++) {
		struct accio_swqe *e = &qp->sq[i & qp->sq_mask];
		int32_t d = accio_psn_diff(psn, e->first_psn);
		uint32_t sent = i == qp->sq_sent ? qp->sent_pkts : e->npkts;

		if (d < (int32_t)sent) {
			qp->sq_sent = i;
			qp->sent_pkts = d > 0 ? (uint32_t)d : 0;
			qp->st.retransmits++;
			break;
		}
	}
	qp->resend_at = 0;
	rc_send_pkts(qp);
}

/* Fail the oldest unacknowledged message and flush the rest: the QP goes
 * to the error state. sq_lock held.
 */
static void rc_fail(struct accio_qp *qp, enum ibv_wc_status status)
{
	uint32_t i;

	for (i = qp->sq_acked; i != qp->sq_tail; i++) {
		struct accio_swqe *e = &qp->sq[i & qp->sq_mask];

		e->status = i == qp->sq_acked ? status : IBV_WC_WR_FLUSH_ERR;
		e->signaled = true;
	}
	qp->new_scqe |= qp->sq_acked != qp->sq_tail;
	qp->sq_acked = qp->sq_sent = qp->sq_tail;
	qp->sent_pkts = 0;
	qp->resend_at = qp->rnr_until = 0;
	qp->state = IBV_QPS_ERR;
}

/* Messages acknowledged up to psn. sq_lock held. */
static void rc_acked(struct accio_qp *qp, uint32_t psn)
{
	bool moved = false;

	while (qp->sq_acked != qp->sq_sent) {
		struct accio_swqe *e = &qp->sq[qp->sq_acked & qp->sq_mask];

		if (accio_psn_diff(psn, e->first_psn + e->npkts - 1) < 0)
			break;
		qp->sq_acked++;
		qp->new_scqe |= e->signaled;
		moved = true;
	}
	if (moved) {
		qp->retries = 0;
		qp->rnr_retries = 0;
		qp->resend_at = qp->sq_acked != qp->sq_sent || qp->sent_pkts ?
			(rc_timeout_ns(qp) ? now_ns() + rc_timeout_ns(qp) : 0) : 0;
	}
}

/* An ACKNOWLEDGE from the responder. sq_lock held. */
static void rc_take_ack(struct accio_qp *qp, const struct accio_rc_hdr *h)
{
	uint8_t kind = h->syndrome & 0xe0;

	if (kind == 0x00) {			/* ACK */
		rc_acked(qp, h->psn);
		return;
	}
	qp->st.naks_rx++;
	rc_acked(qp, (h->psn - 1) & ACCIO_PSN_MASK);
	if (qp->sq_acked == qp->sq_sent && !qp->sent_pkts)
		return;				/* nothing outstanding: stale */
	if (kind == ACCIO_AETH_RNR_NAK) {
		if (qp->rnr_retry != 7 && qp->rnr_retries++ >= qp->rnr_retry) {
			rc_fail(qp, IBV_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		qp->rnr_psn = h->psn;
		qp->rnr_until = now_ns() + rnr_ns(h->syndrome & 0x1f);
		qp->resend_at = 0;
		return;
	}
	switch (h->syndrome) {
	case ACCIO_AETH_NAK_SEQ:
		rc_resend_from(qp, h->psn);
		break;
	case ACCIO_AETH_NAK_ACCESS:
		rc_fail(qp, IBV_WC_REM_ACCESS_ERR);
		break;
	case ACCIO_AETH_NAK_INV:
		rc_fail(qp, IBV_WC_REM_INV_REQ_ERR);
		break;
	default:
		rc_fail(qp, IBV_WC_REM_OP_ERR);
		break;
	}
}

/* The requester's timers. sq_lock held. */
static void rc_timers(struct accio_qp *qp)
{
	uint64_t t;

	if (!qp->resend_at && !qp->rnr_until)
		return;
	t = now_ns();
	if (qp->rnr_until && t >= qp->rnr_until) {
		qp->rnr_until = 0;
		rc_resend_from(qp, qp->rnr_psn);
		return;
	}
	if (qp->resend_at && t >= qp->resend_at) {
		if (qp->retries++ >= qp->retry_cnt) {
			rc_fail(qp, IBV_WC_RETRY_EXC_ERR);
			return;
		}
		rc_resend_from(qp, qp->sq[qp->sq_acked & qp->sq_mask].first_psn);
	}
}
/*
 * Where an RDMA WRITE of len bytes at the peer's address va with rkey
 * goes in this process, or NULL: the registration must belong to the QP's
 * PD and allow remote writes, and hold the whole range.
 */
static uint8_t *mr_target(struct ibv_qp *qp, uint32_t rkey, uint64_t va, uint32_t len)
{
	struct accio_context *ctx = to_actx(qp->context);
	struct accio_mr *mr;
	uint8_t *at = NULL;

	pthread_mutex_lock(&ctx->mr_lock);
	list_for_each(&ctx->mrs, mr, node) {
		struct ibv_mr *m = &mr->vmr.ibv_mr;

		if (m->rkey != rkey)
			continue;
		if (m->pd == qp->pd && (mr->access & IBV_ACCESS_REMOTE_WRITE) &&
		    va >= mr->iova && len <= m->length && va - mr->iova <= m->length - len)
			at = (uint8_t *)m->addr + (va - mr->iova);
		break;
	}
	pthread_mutex_unlock(&ctx->mr_lock);
	return at;
}

/* Complete the receive at rq_done. Both locks held. */
static void rc_recv_done(struct accio_qp *qp, enum ibv_wc_opcode op, uint32_t len,
			 const uint8_t *imm)
{
	struct accio_rwqe *r = &qp->rq[qp->rq_done & qp->rq_mask];

	if (r->status != IBV_WC_LOC_LEN_ERR)
		r->status = IBV_WC_SUCCESS;
	r->opcode = op;
	r->byte_len = len;
	r->with_imm = imm != NULL;
	if (imm)
		memcpy(r->imm, imm, 4);
	qp->rq_done++;
	qp->new_rcqe = true;
}

/* A request packet in PSN order. Both locks held. */
static void rc_take_request(struct accio_qp *qp, const struct accio_rc_hdr *h,
			    const uint8_t *pay, size_t paylen)
{
	bool last = accio_rc_is_last(h->opcode);

	if (h->opcode == ACCIO_OP_RC_READ_REQUEST ||
	    (accio_rc_is_first(h->opcode) && (qp->in_send || qp->in_write)) ||
	    (!accio_rc_is_first(h->opcode) &&
	     !(accio_rc_is_send(h->opcode) ? qp->in_send : qp->in_write)) ||
	    paylen > qp->mtu || (!last && paylen != qp->mtu)) {
		qp->nak_sent = true;
		qp->st.naks_tx++;
		rc_ack_send(qp, ACCIO_AETH_NAK_INV, qp->epsn);
		return;
	}
	if (accio_rc_is_send(h->opcode)) {
		struct accio_rwqe *r;
		const struct ibv_sge *sge;
		size_t room = 0;
		int i;

		if (accio_rc_is_first(h->opcode)) {
			if (qp->rq_done == qp->rq_tail) {
				/* no receive posted: the sender tries again later,
				 * and the rest of the message is not NAKed again
				 */
				qp->nak_sent = true;
				qp->st.rnr_naks_tx++;
				rc_ack_send(qp, ACCIO_AETH_RNR_NAK | (qp->min_rnr_timer & 0x1f),
					    qp->epsn);
				return;
			}
			qp->in_send = true;
			qp->rx_off = 0;
			qp->rq[qp->rq_done & qp->rq_mask].status = IBV_WC_SUCCESS;
		}
		r = &qp->rq[qp->rq_done & qp->rq_mask];
		sge = &qp->rq_sge[(size_t)(qp->rq_done & qp->rq_mask) * qp->max_recv_sge];
		for (i = 0; i < r->num_sge; i++)
			room += sge[i].length;
		if (qp->rx_off + paylen > room) {
			r->status = IBV_WC_LOC_LEN_ERR;
			qp->st.rx_len_err++;
		} else {
			sge_scatter(sge, r->num_sge, qp->rx_off, pay, paylen);
		}
		qp->rx_off += paylen;
		if (last) {
			qp->in_send = false;
			rc_recv_done(qp, IBV_WC_RECV, qp->rx_off,
				     accio_rc_has_imm(h->opcode) ? h->imm : NULL);
		}
	} else {
		if (accio_rc_is_first(h->opcode)) {
			uint8_t *at = NULL;

			if (h->dmalen &&
			    (!(qp->access & IBV_ACCESS_REMOTE_WRITE) ||
			     !(at = mr_target(&qp->ibv_qp, h->rkey, h->va, h->dmalen)))) {
				qp->nak_sent = true;
				qp->st.naks_tx++;
				rc_ack_send(qp, ACCIO_AETH_NAK_ACCESS, qp->epsn);
				return;
			}
			qp->in_write = true;
			__atomic_store_n(&qp->writes_seen, true, __ATOMIC_RELAXED);
			qp->wr_at = at;
			qp->wr_left = qp->wr_total = h->dmalen;
		}
		if (paylen > qp->wr_left || (last && paylen != qp->wr_left)) {
			qp->in_write = false;
			qp->nak_sent = true;
			qp->st.naks_tx++;
			rc_ack_send(qp, ACCIO_AETH_NAK_INV, qp->epsn);
			return;
		}
		if (last && accio_rc_has_imm(h->opcode) && qp->rq_done == qp->rq_tail) {
			qp->nak_sent = true;
			qp->st.rnr_naks_tx++;
			rc_ack_send(qp, ACCIO_AETH_RNR_NAK | (qp->min_rnr_timer & 0x1f), qp->epsn);
			return;
		}
		if (paylen) {
			memcpy(qp->wr_at, pay, paylen);
			qp->wr_at += paylen;
			qp->wr_left -= (uint32_t)paylen;
		}
		if (last) {
			qp->in_write = false;
			if (accio_rc_has_imm(h->opcode)) {
				qp->rq[qp->rq_done & qp->rq_mask].status = IBV_WC_SUCCESS;
				rc_recv_done(qp, IBV_WC_RECV_RDMA_WITH_IMM, qp->wr_total, h->imm);
			}
		}
	}
	qp->epsn = (h->psn + 1) & ACCIO_PSN_MASK;
	qp->st.rx++;
	if (last)
		qp->msn = (qp->msn + 1) & ACCIO_PSN_MASK;
	if (h->ackreq || last)
		qp->ack_due = true;
}

/* One packet from the RX ring. Both locks held. */
static void rc_take(struct accio_qp *qp, const uint8_t *p, size_t len)
{
	struct accio_rc_hdr h;
	size_t off, paylen;
	int32_t d;
	int err;

	if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS) {
		qp->st.rx_drop_state++;
		return;
	}
	err = accio_rc_parse(p, len, &h, &off, &paylen);
	if (err == ACCIO_PARSE_OPCODE && p[0] < 0x20 && accio_get_be24(p + 5) ==
	    qp->ibv_qp.qp_num) {
		/* an RC operation this QP does not serve (atomics) */
		h.psn = accio_get_be24(p + 9);
		if (accio_psn_diff(h.psn, qp->epsn) == 0) {
			qp->st.naks_tx++;
			rc_ack_send(qp, ACCIO_AETH_NAK_INV, qp->epsn);
		}
		return;
	}
	if (err != ACCIO_PARSE_OK) {
		qp->st.rx_drop_hdr++;
		return;
	}
	if (h.dqpn != qp->ibv_qp.qp_num) {
		qp->st.rx_drop_qpn++;
		return;
	}
	if (h.opcode == ACCIO_OP_RC_ACK) {
		rc_take_ack(qp, &h);
		return;
	}
	d = accio_psn_diff(h.psn, qp->epsn);
	if (d < 0) {
		/* a duplicate: the ACK was lost; say again how far we are */
		qp->st.dup_rx++;
		qp->ack_due = true;
		return;
	}
	if (d > 0) {
		if (!qp->nak_sent) {
			qp->nak_sent = true;
			qp->st.naks_tx++;
			rc_ack_send(qp, ACCIO_AETH_NAK_SEQ, qp->epsn);
		}
		return;
	}
	qp->nak_sent = false;
	rc_take_request(qp, &h, p + off, paylen);
}

/*
 * Everything the RX ring holds, then the ACK due, the timers and what the
 * TX ring had no room for. Both locks held.
 */
void rc_progress(struct accio_qp *qp)
{
	uint64_t rptr = qp->rx_rptr, wptr = reg_read(qp, ACCIO_ROW_RX_WPTR);

	if (rptr != wptr) {
		rmb_io_inline();
		while (rptr != wptr) {
			const uint8_t *rec = qp->r.rx + (rptr & (qp->r.rx_bytes - 1));
			uint32_t saddr;
			size_t len = rx_record(rec, &saddr);
			bool request = len && rec[ACCIO_RX_HDR] != ACCIO_OP_RC_ACK;

			qp->req_in += request;
			/* requests lost on purpose (ACKs never: a peer that has
			 * finished cannot answer a retransmission)
			 */
			if (request && qp->rc_drop && ++qp->rx_count % qp->rc_drop == 0)
				qp->st.lost++;
			else
				rc_take(qp, rec + ACCIO_RX_HDR, len);
			rptr += rec_rx_bytes(len);
		}
		release_io();
		qp->rx_rptr = qp->rx_wptr_seen = rptr;
		reg_write(qp, ACCIO_ROW_RX_RPTR, rptr);
	}
	/* an ACK the TX ring has no room for stays due: the peer's last
	 * message may have no other
	 */
	if (qp->ack_due && qp->rc_drop_ack &&
	    qp->msn / qp->rc_drop_ack != qp->msn_acked / qp->rc_drop_ack) {
		/* the first ACK past a multiple of rc_drop_ack messages is
		 * lost on purpose: the peer must send that message again
		 */
		qp->st.acks_lost++;
		qp->msn_acked = qp->msn;
		qp->ack_due = false;
	}
	if (qp->ack_due &&
	    rc_ack_send(qp, ACCIO_AETH_ACK, (qp->epsn - 1) & ACCIO_PSN_MASK)) {
		qp->msn_acked = qp->msn;
		qp->ack_due = false;
	}
	if (qp->state == IBV_QPS_RTS) {
		rc_timers(qp);
		rc_send_pkts(qp);
	}
	tx_kick(qp);
}

/*
 * The QP is about to go. Its peer may still lack the ACK of its last
 * message - the ACK was lost, or reached a peer that was in the middle of
 * sending that message again (soft-RoCE then drops it) - and will send the
 * message again; with no QP to answer, a peer whose retry_cnt is 7 (which
 * soft-RoCE takes as unlimited) would wait for ever. So the QP answers
 * whatever comes until no request has come for a quiet time, for at most
 * four times that: @quiet_ms, or (negative) four local ACK timeouts, the
 * peer's taken to be the same (67 ms when it is unset), room for a timer
 * that fires late and for a request lost again on the way. A QP that never
 * took a request, or is not in RTR or RTS, goes at once. No locks held;
 * the QP's thread has stopped.
 */
void rc_linger(struct accio_qp *qp, int64_t quiet_ms)
{
	const struct timespec nap = { 0, 200000 };
	uint64_t t0, t, last, seen, quiet_ns, ack_ns;

	ack_ns = rc_timeout_ns(qp);
	quiet_ns = quiet_ms >= 0 ? (uint64_t)quiet_ms * 1000000 :
		   4 * (ack_ns ? ack_ns : 4096ull << 14);
	if (!quiet_ns || !qp->req_in ||
	    (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS))
		return;
	t0 = last = now_ns();
	seen = qp->req_in;
	qp->st.linger_rx = 0;
	for (t = t0; t - last < quiet_ns && t - t0 < 4 * quiet_ns; t = now_ns()) {
		pthread_spin_lock(&qp->sq_lock);
		pthread_spin_lock(&qp->rq_lock);
		rc_progress(qp);
		pthread_spin_unlock(&qp->rq_lock);
		pthread_spin_unlock(&qp->sq_lock);
		if (qp->req_in != seen) {
			qp->st.linger_rx += qp->req_in - seen;
			seen = qp->req_in;
			last = now_ns();
		}
		nanosleep(&nap, NULL);
	}
}

/* Acknowledged sends (and failed or flushed ones). Both locks held. */
static int rc_poll_send(struct accio_qp *qp, struct ibv_wc *wc, int ne)
{
	int n = 0;

	if (qp->state == IBV_QPS_ERR && qp->sq_acked != qp->sq_tail)
		rc_fail(qp, IBV_WC_WR_FLUSH_ERR);
	while (qp->sq_head != qp->sq_acked && n < ne) {
		struct accio_swqe *e = &qp->sq[qp->sq_head & qp->sq_mask];

		if (e->signaled || e->status != IBV_WC_SUCCESS) {
			memset(&wc[n], 0, sizeof(wc[n]));
			wc[n].wr_id = e->wr_id;
			wc[n].status = e->status;
			wc[n].opcode = e->opcode == IBV_WR_RDMA_WRITE ||
				       e->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ?
				       IBV_WC_RDMA_WRITE : IBV_WC_SEND;
			wc[n].byte_len = e->len;
			wc[n].qp_num = qp->ibv_qp.qp_num;
			n++;
		}
		qp->sq_head++;
	}
	return n;
}

/* Receives whose messages arrived (flushed in the error state). Both locks held. */
static int rc_poll_recv(struct accio_qp *qp, struct ibv_wc *wc, int ne)
{
	int n = 0;

	while (qp->rq_head != qp->rq_done && n < ne) {
		struct accio_rwqe *r = &qp->rq[qp->rq_head & qp->rq_mask];

		memset(&wc[n], 0, sizeof(wc[n]));
		wc[n].wr_id = r->wr_id;
		wc[n].status = r->status;
		wc[n].opcode = r->opcode;
		wc[n].byte_len = r->byte_len;
		wc[n].qp_num = qp->ibv_qp.qp_num;
		wc[n].src_qp = qp->dest_qpn;
		if (r->with_imm) {
			memcpy(&wc[n].imm_data, r->imm, 4);
			wc[n].wc_flags = IBV_WC_WITH_IMM;
		}
		qp->rq_head++;
		n++;
	}
	if (qp->state == IBV_QPS_ERR && n < ne) {
		qp->rq_done = qp->rq_head;
		n += rq_flush(qp, wc + n, ne - n);
		qp->rq_done = qp->rq_head;
	}
	return n;
}

/*
 * Completion events: the kernel cannot tell an RC QP's completions from
 * its packets (an ACK wakes the row like a request), so the provider says
 * when it made one for a CQ that asked for an event (ACCIO_IOC_NOTIFY).
 * Both locks held.
 */
void rc_events(struct accio_qp *qp)
{
	struct accio_cq *scq = to_acq(qp->ibv_qp.send_cq);
	struct accio_cq *rcq = to_acq(qp->ibv_qp.recv_cq);
	uint32_t side;

	if (qp->new_scqe) {
		qp->new_scqe = false;
		side = 1;
		if (__atomic_exchange_n(&scq->want_event, 0, __ATOMIC_SEQ_CST))
			ioctl(qp->r.fd, ACCIO_IOC_NOTIFY, &side);
	}
	if (qp->new_rcqe) {
		qp->new_rcqe = false;
		side = 0;
		if (__atomic_exchange_n(&rcq->want_event, 0, __ATOMIC_SEQ_CST))
			ioctl(qp->r.fd, ACCIO_IOC_NOTIFY, &side);
	}
}

/*
 * An RC QP's completions of one side for cq: the transport runs first,
 * unless cq waits for an event (then the QP's thread runs it and reports).
 */
int rc_poll(struct accio_qp *qp, struct accio_cq *cq, bool send, struct ibv_wc *wc, int ne)
{
	int n;

	pthread_spin_lock(&qp->sq_lock);
	pthread_spin_lock(&qp->rq_lock);
	if (!__atomic_load_n(&cq->want_event, __ATOMIC_SEQ_CST)) {
		rc_progress(qp);
		rc_events(qp);
	}
	n = send ? rc_poll_send(qp, wc, ne) : rc_poll_recv(qp, wc, ne);
	pthread_spin_unlock(&qp->rq_lock);
	pthread_spin_unlock(&qp->sq_lock);
	return n;
}

/*
 * Queue one RC send or RDMA WRITE; its packets go out as the TX ring has
 * room. Inline data is copied now, the gather list is read as the packets
 * are built (and again if they are sent again). sq_lock held.
 */
static int rc_post_one(struct accio_qp *qp, struct ibv_send_wr *wr)
{
	struct accio_swqe *e;
	uint32_t slot;
	uint64_t len = 0;
	int i;

	if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM &&
	    wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
		return EINVAL;		/* no RDMA READ, no atomics */
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > 1U << 31 || ((wr->send_flags & IBV_SEND_INLINE) && len > qp->max_inline))
		return EINVAL;
	if (qp->sq_tail - qp->sq_acked >= qp->sq_cap || qp->sq_tail - qp->sq_head > qp->sq_mask)
		return ENOMEM;
	slot = qp->sq_tail & qp->sq_mask;
	e = &qp->sq[slot];
	memset(e, 0, sizeof(*e));
	e->wr_id = wr->wr_id;
	e->len = (uint32_t)len;
	e->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	e->opcode = wr->opcode;
	e->status = IBV_WC_SUCCESS;
	e->npkts = len ? (uint32_t)((len + qp->mtu - 1) / qp->mtu) : 1;
	e->first_psn = qp->psn;
	e->raddr = wr->wr.rdma.remote_addr;
	e->rkey = wr->wr.rdma.rkey;
	memcpy(e->imm, &wr->imm_data, 4);	/* network order already */
	e->se = !!(wr->send_flags & IBV_SEND_SOLICITED);
	e->num_sge = wr->num_sge;
	e->inl = (wr->send_flags & IBV_SEND_INLINE) && len;
	if (e->inl) {
		uint8_t *d = qp->sq_inline + (size_t)slot * qp->max_inline;

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(d, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			d += wr->sg_list[i].length;
		}
	} else if (wr->num_sge) {
		memcpy(&qp->sq_sge[(size_t)slot * qp->max_send_sge], wr->sg_list,
		       wr->num_sge * sizeof(*wr->sg_list));
	}
	qp->psn = (qp->psn + e->npkts) & ACCIO_PSN_MASK;
	qp->sq_tail++;
	return 0;
}

/* The requests queued in order, then as many packets as the TX ring takes. */
int rc_post_send(struct accio_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	int err = 0;

	pthread_spin_lock(&qp->sq_lock);
	for (; wr; wr = wr->next) {
		err = qp->state == IBV_QPS_RTS ? rc_post_one(qp, wr) : EINVAL;
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	rc_send_pkts(qp);
	tx_kick(qp);
	pthread_spin_unlock(&qp->sq_lock);
	return err;
}

/* RC: the connection's attributes, and a fresh transport on RESET. Both locks held. */
void rc_modify(struct accio_qp *qp, const struct ibv_qp_attr *attr, int mask, uint32_t dest_ip)
{
	if (mask & IBV_QP_AV)
		qp->dest_ip = dest_ip;
	if (mask & IBV_QP_PATH_MTU)
		qp->mtu = mtu_bytes(attr->path_mtu);
	if (mask & IBV_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num & ACCIO_QPN_MASK;
	if (mask & IBV_QP_RQ_PSN)
		qp->epsn = attr->rq_psn & ACCIO_PSN_MASK;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IBV_QP_TIMEOUT)
		qp->timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->retry_cnt = attr->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->rnr_retry = attr->rnr_retry;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = attr->min_rnr_timer;
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		qp->sq_acked = qp->sq_sent = qp->sq_head = qp->sq_tail;
		qp->sent_pkts = 0;
		qp->rq_done = qp->rq_head = qp->rq_tail;
		qp->resend_at = qp->rnr_until = 0;
		qp->retries = qp->rnr_retries = 0;
		qp->in_send = qp->in_write = qp->nak_sent = qp->ack_due = false;
		qp->msn = qp->msn_acked = 0;
	}
}
