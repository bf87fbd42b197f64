// SPDX-License-Identifier: MIT
/*
 * The work queues, where both transports treat them alike: a posted
 * receive waits in user space until a datagram (UD) or a message (RC)
 * fills its gather list; a QP in the error state flushes its receives;
 * the destinations a QP sends to are admitted once each, since the row
 * has one next hop.
 */
#include "accio_verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/accio.h>

int accio_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct accio_qp *qp = to_aqp(ibqp);
	int err = 0;

	pthread_spin_lock(&qp->rq_lock);
	for (; wr; wr = wr->next) {
		uint32_t slot = qp->rq_tail & qp->rq_mask;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_recv_sge) {
			err = EINVAL;
		} else if (qp->rq_tail - qp->rq_head >= qp->rq_cap) {
			err = ENOMEM;
		}
		if (err) {
			*bad_wr = wr;
			break;
		}
		qp->rq[slot].wr_id = wr->wr_id;
		qp->rq[slot].num_sge = wr->num_sge;
		memcpy(&qp->rq_sge[(size_t)slot * qp->max_recv_sge], wr->sg_list,
		       wr->num_sge * sizeof(*wr->sg_list));
		qp->rq_tail++;
	}
	pthread_spin_unlock(&qp->rq_lock);
	return err;
}

void sge_scatter(const struct ibv_sge *sge, int num_sge, size_t off, const uint8_t *src,
		 size_t len)
{
	int i;

	for (i = 0; i < num_sge && len; i++) {
		size_t n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off < len ? sge[i].length - off : len;
		memcpy((uint8_t *)(uintptr_t)sge[i].addr + off, src, n);
		src += n;
		len -= n;
		off = 0;
	}
}

int rq_flush(struct accio_qp *qp, struct ibv_wc *wc, int ne)
{
	int n = 0;

	while (qp->rq_head != qp->rq_tail && n < ne) {
		memset(&wc[n], 0, sizeof(wc[n]));
		wc[n].wr_id = qp->rq[qp->rq_head & qp->rq_mask].wr_id;
		wc[n].status = IBV_WC_WR_FLUSH_ERR;
		wc[n].opcode = IBV_WC_RECV;
		wc[n].qp_num = qp->ibv_qp.qp_num;
		qp->rq_head++;
		n++;
	}
	return n;
}

int qp_route(struct accio_qp *qp, uint32_t addr)
{
	struct accio_route r = { .ip = addr };
	uint32_t i;

	for (i = qp->nrouted; i-- > 0;)
		if (qp->routed[i] == addr)
			return 0;
	if (ioctl(qp->r.fd, ACCIO_IOC_ROUTE, &r) < 0)
		return errno;
	if (qp->nrouted == qp->routed_cap) {
		uint32_t cap = qp->routed_cap ? 2 * qp->routed_cap : 4;
		uint32_t *t = realloc(qp->routed, cap * sizeof(*t));

		if (!t)
			return 0;	/* admitted; asked again next time */
		qp->routed = t;
		qp->routed_cap = cap;
	}
	qp->routed[qp->nrouted++] = addr;
	return 0;
}
