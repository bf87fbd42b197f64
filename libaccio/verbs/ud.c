// SPDX-License-Identifier: MIT
/*
 * The UD transport: a send is one RoCEv2 UD SEND (BTH, DETH, ImmDt,
 * payload, pad, an ICRC slot the engine fills in), written as a record
 * into the row's TX ring; the doorbell rings once per ibv_post_send. It
 * completes once the row's TX read pointer has passed its record. A
 * receive takes the oldest datagram of the RX ring that is for the QP,
 * behind a GRH made from its IPv4 source; anything else is dropped and
 * counted, as UD may drop it.
 */
#include "accio_verbs.h"

#include <errno.h>
#include <string.h>

#include "accio_wire.h"
#include "../src/mmio_fence.h"

/* Signaled sends whose records the engine has taken. sq_lock held. */
static int poll_send(struct accio_qp *qp, struct ibv_wc *wc, int ne)
{
	int n = 0;

	while (qp->sq_head != qp->sq_tail && n < ne) {
		struct accio_swqe *e = &qp->sq[qp->sq_head & qp->sq_mask];

		if ((int64_t)(qp->tx_rptr_seen - e->end) < 0) {
			/* not yet as far as the last look: look again */
			qp->tx_rptr_seen = reg_read(qp, ACCIO_ROW_TX_RPTR);
			if ((int64_t)(qp->tx_rptr_seen - e->end) < 0)
				break;
		}
		if (e->signaled) {
			memset(&wc[n], 0, sizeof(wc[n]));
			wc[n].wr_id = e->wr_id;
			wc[n].status = IBV_WC_SUCCESS;
			wc[n].opcode = IBV_WC_SEND;
			wc[n].byte_len = e->len;
			wc[n].qp_num = qp->ibv_qp.qp_num;
			n++;
		}
		qp->sq_head++;
	}
	return n;
}

int ud_poll_send(struct accio_qp *qp, struct ibv_wc *wc, int ne)
{
	int n;

	pthread_spin_lock(&qp->sq_lock);
	n = poll_send(qp, wc, ne);
	pthread_spin_unlock(&qp->sq_lock);
	return n;
}

/*
 * One datagram (UDP payload p of len bytes, ICRC included, from IPv4
 * address saddr in network order) for the QP: 1 if it completed the
 * oldest receive into *wc, 0 if it was dropped. rq_lock held.
 */
static int take_datagram(struct accio_qp *qp, const uint8_t *p, size_t len,
			 uint32_t saddr, struct ibv_wc *wc)
{
	struct accio_ud_hdr h;
	struct accio_rwqe *r;
	const struct ibv_sge *sge;
	uint8_t grh[ACCIO_GRH_BYTES];
	size_t off, paylen, room = 0;
	int i;

	if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS) {
		qp->st.rx_drop_state++;
		return 0;
	}
	if (accio_ud_parse(p, len, &h, &off, &paylen) != ACCIO_PARSE_OK) {
		qp->st.rx_drop_hdr++;
		return 0;
	}
	if (h.dqpn != qp->ibv_qp.qp_num) {
		qp->st.rx_drop_qpn++;
		return 0;
	}
	if (h.qkey != qp->qkey) {
		qp->st.rx_drop_qkey++;
		return 0;
	}
	if (qp->rq_head == qp->rq_tail) {
		qp->st.rx_drop_norecv++;	/* UD: no receive posted, dropped */
		return 0;
	}
	r = &qp->rq[qp->rq_head & qp->rq_mask];
	sge = &qp->rq_sge[(size_t)(qp->rq_head & qp->rq_mask) * qp->max_recv_sge];
	qp->rq_head++;

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = r->wr_id;
	wc->opcode = IBV_WC_RECV;
	wc->qp_num = qp->ibv_qp.qp_num;
	for (i = 0; i < r->num_sge; i++)
		room += sge[i].length;
	if (room < ACCIO_GRH_BYTES + paylen) {
		wc->status = IBV_WC_LOC_LEN_ERR;
		qp->st.rx_len_err++;
		return 1;
	}
	accio_grh_ipv4(grh, saddr, qp->r.local_ip, len);
	sge_scatter(sge, r->num_sge, 0, grh, sizeof(grh));
	sge_scatter(sge, r->num_sge, sizeof(grh), p + off, paylen);
	wc->status = IBV_WC_SUCCESS;
	wc->byte_len = ACCIO_GRH_BYTES + paylen;
	wc->src_qp = h.sqpn;
	wc->wc_flags = IBV_WC_GRH;
	if (h.opcode == ACCIO_OP_UD_SEND_ONLY_IMM) {
		memcpy(&wc->imm_data, h.imm, 4);	/* stays in network order */
		wc->wc_flags |= IBV_WC_WITH_IMM;
	}
	wc->pkey_index = 0;
	qp->st.rx++;
	return 1;
}

/* The RX ring's datagrams. rq_lock held. */
static int poll_recv(struct accio_qp *qp, struct ibv_wc *wc, int ne)
{
	uint64_t rptr = qp->rx_rptr, wptr = qp->rx_wptr_seen;
	int n = 0;

	if (qp->state == IBV_QPS_ERR)
		return rq_flush(qp, wc, ne);
	if (rptr == wptr) {
		wptr = qp->rx_wptr_seen = reg_read(qp, ACCIO_ROW_RX_WPTR);
		if (rptr == wptr)
			return 0;
	}
	rmb_io_inline();
	while (rptr != wptr && n < ne) {
		const uint8_t *rec = qp->r.rx + (rptr & (qp->r.rx_bytes - 1));
		uint32_t saddr;
		size_t len = rx_record(rec, &saddr);

		n += take_datagram(qp, rec + ACCIO_RX_HDR, len, saddr, &wc[n]);
		rptr += rec_rx_bytes(len);
	}
	release_io();
	qp->rx_rptr = rptr;
	reg_write(qp, ACCIO_ROW_RX_RPTR, rptr);
	return n;
}

int ud_poll_recv(struct accio_qp *qp, struct ibv_wc *wc, int ne)
{
	int n;

	pthread_spin_lock(&qp->rq_lock);
	n = poll_recv(qp, wc, ne);
	pthread_spin_unlock(&qp->rq_lock);
	return n;
}

/*
 * A full send queue: unsignaled sends the engine has taken at its head
 * leave it without a completion. False if none did. sq_lock held.
 */
static bool reap_unsignaled(struct accio_qp *qp)
{
	uint32_t head = qp->sq_head;

	qp->tx_rptr_seen = reg_read(qp, ACCIO_ROW_TX_RPTR);
	while (qp->sq_head != qp->sq_tail) {
		struct accio_swqe *e = &qp->sq[qp->sq_head & qp->sq_mask];

		if (e->signaled || (int64_t)(qp->tx_rptr_seen - e->end) < 0)
			break;
		qp->sq_head++;
	}
	return qp->sq_head != head;
}

/* Write one UD SEND into the TX ring at tx_wptr. sq_lock held. */
static int post_one(struct accio_qp *qp, struct ibv_send_wr *wr)
{
	struct accio_ud_hdr h;
	struct accio_swqe *e;
	uint8_t *rec, *p;
	uint64_t rlen;
	size_t len = 0, bytes;
	uint32_t addr;
	int i, err;

	if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM)
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge || !wr->wr.ud.ah)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > qp->mtu)
		return EINVAL;
	if (qp->sq_tail - qp->sq_head >= qp->sq_cap && !reap_unsignaled(qp))
		return ENOMEM;
	h.opcode = wr->opcode == IBV_WR_SEND_WITH_IMM ? ACCIO_OP_UD_SEND_ONLY_IMM :
							ACCIO_OP_UD_SEND_ONLY;
	bytes = accio_ud_bytes(h.opcode, len);
	rlen = rec_tx_bytes(bytes);
	if (qp->tx_wptr + rlen - qp->tx_rptr_seen > qp->r.tx_bytes) {
		qp->tx_rptr_seen = reg_read(qp, ACCIO_ROW_TX_RPTR);
		if (qp->tx_wptr + rlen - qp->tx_rptr_seen > qp->r.tx_bytes)
			return ENOMEM;	/* the ring is full: UD, no waiting */
	}
	addr = to_aah(wr->wr.ud.ah)->addr;
	err = qp_route(qp, addr);
	if (err)
		return err;

	h.se = !!(wr->send_flags & IBV_SEND_SOLICITED);
	h.pkey = ACCIO_PKEY_DEFAULT;
	h.dqpn = wr->wr.ud.remote_qpn;
	h.psn = qp->psn;
	/* a Q_Key with the high bit set means the QP's own (IBA 10.2.5) */
	h.qkey = (wr->wr.ud.remote_qkey & 0x80000000u) ? qp->qkey : wr->wr.ud.remote_qkey;
	h.sqpn = qp->ibv_qp.qp_num;
	memcpy(h.imm, &wr->imm_data, 4);	/* network order already */

	rec = qp->r.tx + (qp->tx_wptr & (qp->r.tx_bytes - 1));
	p = rec + ACCIO_TX_HDR;
	p += accio_ud_build(p, &h, len);
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(p, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
		p += wr->sg_list[i].length;
	}
	accio_ud_trailer(p, len);
	rec_tx_encode(rec, bytes, addr, htons(ACCIO_ROCE_PORT));

	qp->tx_wptr += rlen;
	qp->psn = (qp->psn + 1) & ACCIO_PSN_MASK;
	e = &qp->sq[qp->sq_tail & qp->sq_mask];
	e->wr_id = wr->wr_id;
	e->end = qp->tx_wptr;
	e->len = len;
	e->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	qp->sq_tail++;
	qp->st.tx++;
	return 0;
}

/* The requests in order, then the TX write pointer and the doorbell once. */
int ud_post_send(struct accio_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	bool posted = false;
	int err = 0;

	pthread_spin_lock(&qp->sq_lock);
	for (; wr; wr = wr->next) {
		err = qp->state == IBV_QPS_RTS ? post_one(qp, wr) : EINVAL;
		if (err) {
			*bad_wr = wr;
			break;
		}
		posted = true;
	}
	if (posted) {
		wmb_io();
		reg_write(qp, ACCIO_ROW_TX_WPTR, qp->tx_wptr);
		reg_write(qp, ACCIO_ROW_DOORBELL, 1);
	}
	pthread_spin_unlock(&qp->sq_lock);
	return err;
}
