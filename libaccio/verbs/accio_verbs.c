// SPDX-License-Identifier: MIT
/*
 * accio: an rdma-core verbs provider whose data path is an ICT row.
 *
 * The kernel driver (accio_ib, device accio%d) keeps the verbs objects
 * (context, PD, CQ, QP, MR) and nothing of the data path. A UD QP owns a
 * UDP socket whose row was accelerated with ACCIO_ACCEL_ROCE (the row takes
 * the RoCEv2 port 4791): posting a send writes a RoCEv2 UD SEND (BTH, DETH,
 * ImmDt, payload, pad, an ICRC slot the engine fills in) as a record into
 * the row's TX ring and rings the doorbell; polling a CQ reads the row's
 * TX read pointer (send completions) and the RX ring (datagrams whose ICRC
 * the engine checked), with loads and stores only. Wire format:
 * accio_wire.h; limits: README.md.
 */
#include <config.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>
#include <linux/accio.h>
#include <accio-abi.h>

#include "accio_wire.h"
#include "../src/mmio_fence.h"

/* ---- the kernel ABI: <linux/accio.h> and the series' rdma/accio-abi.h */

struct accio_create_qp_cmd {
	struct ibv_create_qp ibv_cmd;
	struct accio_ib_create_qp drv;
};

struct accio_create_qp_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct accio_ib_create_qp_resp drv;
};

static_assert(offsetof(struct accio_create_qp_cmd, drv) == sizeof(struct ibv_create_qp),
	      "driver data right after the core's create_qp command");
static_assert(offsetof(struct accio_create_qp_resp, drv) ==
	      sizeof(struct ib_uverbs_create_qp_resp),
	      "driver data right after the core's create_qp response");

/* ---- objects ---------------------------------------------------------- */

/* Largest UD payload: the engine's datagram limit less the RoCE headers. */
#define ACCIO_UD_PAYLOAD_MAX \
	(ACCIO_MAX_PAYLOAD - ACCIO_BTH_BYTES - ACCIO_DETH_BYTES - ACCIO_IMMDT_BYTES - \
	 ACCIO_ICRC_BYTES)
/* A record in a ring is padded to 8 bytes. */
#define PAD8(x) (((x) + 7) & ~(uint64_t)7)
/* Ring sizes asked of SIOCACCIO: enough for the queue depths, in bounds. */
#define ACCIO_VERBS_RING_MAX (256U << 10)

struct accio_device {
	struct verbs_device vdev;
};

struct accio_context {
	struct verbs_context vctx;
	bool stats;		/* ACCIO_VERBS_STATS=1: counters at destroy_qp */
	uint32_t rc_drop;	/* ACCIO_VERBS_RC_DROP=N: lose every Nth RC request in */
	pthread_mutex_t mr_lock;
	struct list_head mrs;	/* the context's registrations (RDMA WRITE targets) */
};

struct accio_mr {
	struct verbs_mr vmr;
	struct list_node node;
	uint64_t iova;		/* the address remote peers name */
	int access;
};

struct accio_cq {
	struct ibv_cq ibv_cq;
	pthread_spinlock_t lock;
	struct list_head send_qps;	/* QPs with this CQ as send CQ */
	struct list_head recv_qps;	/* ... as receive CQ */
	int want_event;		/* armed: an RC QP's next completion is reported */
};

struct accio_ah {
	struct ibv_ah ibv_ah;
	uint32_t addr;		/* destination IPv4, network order */
};

/*
 * A send work request. UD: done when the TX read pointer passes end. RC:
 * packets first_psn .. first_psn + npkts - 1, done when acknowledged.
 */
struct accio_swqe {
	uint64_t wr_id;
	uint64_t end;
	uint32_t len;
	bool signaled;
	/* RC */
	enum ibv_wr_opcode opcode;
	enum ibv_wc_status status;
	uint32_t first_psn, npkts;
	uint64_t raddr;
	uint32_t rkey;
	uint8_t imm[4];
	bool se;
	bool inl;		/* the data is in the entry's inline buffer */
	int num_sge;
};

struct accio_rwqe {
	uint64_t wr_id;
	int num_sge;
	/* RC: the completion, once the message has arrived */
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	uint8_t imm[4];
	bool with_imm;
};

struct accio_qp_stats {
	uint64_t tx, rx, rx_drop_hdr, rx_drop_qpn, rx_drop_qkey, rx_drop_norecv,
		 rx_drop_state, rx_len_err;
	/* RC */
	uint64_t retransmits, naks_rx, naks_tx, rnr_naks_tx, dup_rx, lost;
};

struct accio_qp {
	struct ibv_qp ibv_qp;
	struct list_node send_node, recv_node;

	/* the row */
	int sock, row_fd;
	uint32_t row;
	uint32_t local_ip;	/* network order */
	volatile uint64_t *regs;
	uint8_t *rx, *tx;	/* each ring mapped twice in a row */
	uint64_t rx_bytes, tx_bytes;

	/* the send side: sq_lock */
	pthread_spinlock_t sq_lock;
	uint64_t tx_wptr, tx_rptr_seen;
	struct accio_swqe *sq;
	uint32_t sq_cap, sq_mask, sq_head, sq_tail;
	uint32_t max_send_sge;
	uint32_t mtu;
	uint32_t psn;
	bool sq_sig_all;
	uint32_t *routed;	/* destinations ACCIO_IOC_ROUTE admitted */
	uint32_t nrouted, routed_cap;

	/* the receive side: rq_lock */
	pthread_spinlock_t rq_lock;
	uint64_t rx_rptr, rx_wptr_seen;
	struct accio_rwqe *rq;
	struct ibv_sge *rq_sge;	/* max_recv_sge per entry */
	uint32_t rq_cap, rq_mask, rq_head, rq_tail;
	uint32_t max_recv_sge;

	/* both locks */
	enum ibv_qp_state state;
	uint32_t qkey;

	/* RC: the requester under sq_lock, the responder under both */
	bool rc;
	struct ibv_sge *sq_sge;	/* max_send_sge per entry */
	uint8_t *sq_inline;	/* max_inline bytes per entry */
	uint32_t max_inline;
	uint32_t sq_acked;	/* the first entry not acknowledged */
	uint32_t sq_sent;	/* the first entry with packets not yet sent */
	uint32_t sent_pkts;	/* ... and how many of them are */
	uint32_t dest_qpn, dest_ip;
	int access;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint32_t retries, rnr_retries;
	uint64_t resend_at;	/* ns: the oldest packet's timeout, 0 none */
	uint64_t rnr_until;	/* ns: resend from rnr_psn then, 0 none */
	uint32_t rnr_psn;
	bool tx_dirty;		/* records written, the doorbell not yet rung */
	uint32_t epsn, msn;	/* the responder's next PSN and message count */
	uint32_t rq_done;	/* receives completed, reported from rq_head */
	uint32_t rx_off;	/* bytes of the SEND in progress placed */
	bool in_send, in_write, nak_sent, ack_due;
	uint8_t *wr_at;		/* the RDMA WRITE in progress: where, how much */
	uint32_t wr_left, wr_total;
	pthread_t thread;	/* serves the row: WRITEs, completion events */
	int thread_fd;		/* eventfd that wakes it (or stops it) */
	int thread_on;		/* 0, or 1 once started (atomic) */
	bool thread_stop;
	bool writes_seen;	/* a peer's RDMA WRITE arrived: the thread sleeps on the row */
	bool new_scqe, new_rcqe;	/* completions made since the last look */
	uint32_t rc_drop;	/* lose every rc_drop-th request in (a test of recovery) */
	uint64_t rx_count;

	struct accio_qp_stats st;
};

static inline struct accio_context *to_actx(struct ibv_context *c)
{
	return container_of(c, struct accio_context, vctx.context);
}

static inline struct accio_cq *to_acq(struct ibv_cq *c)
{
	return container_of(c, struct accio_cq, ibv_cq);
}

static inline struct accio_qp *to_aqp(struct ibv_qp *q)
{
	return container_of(q, struct accio_qp, ibv_qp);
}

static inline struct accio_ah *to_aah(struct ibv_ah *a)
{
	return container_of(a, struct accio_ah, ibv_ah);
}


static inline uint64_t reg_read(struct accio_qp *qp, unsigned int off)
{
	return qp->regs[off / 8];
}

static inline void reg_write(struct accio_qp *qp, unsigned int off, uint64_t v)
{
	qp->regs[off / 8] = v;
}

/* ---- device and context ------------------------------------------------- */

static int accio_query_device_ex(struct ibv_context *context,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);

	return ibv_cmd_query_device_any(context, input, attr, attr_size, &resp, &resp_size);
}

static int accio_query_port(struct ibv_context *context, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *accio_alloc_pd(struct ibv_context *context)
{
	struct ibv_alloc_pd cmd;
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_pd *pd = calloc(1, sizeof(*pd));
	int err;

	if (!pd)
		return NULL;
	err = ibv_cmd_alloc_pd(context, pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(pd);
		errno = err;
		return NULL;
	}
	return pd;
}

static int accio_dealloc_pd(struct ibv_pd *pd)
{
	int err = ibv_cmd_dealloc_pd(pd);

	if (err)
		return err;
	free(pd);
	return 0;
}

/*
 * The data path copies with the CPU: the kernel hands out a key, pins
 * nothing. The context keeps its registrations, which RDMA WRITEs from an
 * RC peer name by R_Key.
 */
static struct ibv_mr *accio_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
				   uint64_t hca_va, int access)
{
	struct accio_context *ctx = to_actx(pd->context);
	struct ibv_reg_mr cmd;
	struct ib_uverbs_reg_mr_resp resp;
	struct accio_mr *mr = calloc(1, sizeof(*mr));
	int err;

	if (!mr)
		return NULL;
	err = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, &mr->vmr, &cmd, sizeof(cmd),
			     &resp, sizeof(resp));
	if (err) {
		free(mr);
		errno = err;
		return NULL;
	}
	mr->iova = hca_va;
	mr->access = access;
	pthread_mutex_lock(&ctx->mr_lock);
	list_add_tail(&ctx->mrs, &mr->node);
	pthread_mutex_unlock(&ctx->mr_lock);
	return &mr->vmr.ibv_mr;
}

static int accio_dereg_mr(struct verbs_mr *vmr)
{
	struct accio_context *ctx = to_actx(vmr->ibv_mr.context);
	struct accio_mr *mr = container_of(vmr, struct accio_mr, vmr);
	int err;

	pthread_mutex_lock(&ctx->mr_lock);
	err = ibv_cmd_dereg_mr(vmr);
	if (!err)
		list_del(&mr->node);
	pthread_mutex_unlock(&ctx->mr_lock);
	if (err)
		return err;
	free(mr);
	return 0;
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

/* ---- completion queues -------------------------------------------------- */

static struct ibv_cq *accio_create_cq(struct ibv_context *context, int cqe,
				      struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_create_cq cmd;
	struct ib_uverbs_create_cq_resp resp;
	struct accio_cq *cq = calloc(1, sizeof(*cq));
	int err;

	if (!cq)
		return NULL;
	err = ibv_cmd_create_cq(context, cqe, channel, comp_vector, &cq->ibv_cq,
				&cmd, sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(cq);
		errno = err;
		return NULL;
	}
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	list_head_init(&cq->send_qps);
	list_head_init(&cq->recv_qps);
	return &cq->ibv_cq;
}

static int accio_destroy_cq(struct ibv_cq *ibcq)
{
	struct accio_cq *cq = to_acq(ibcq);
	bool busy;
	int err;

	pthread_spin_lock(&cq->lock);
	busy = !list_empty(&cq->send_qps) || !list_empty(&cq->recv_qps);
	pthread_spin_unlock(&cq->lock);
	if (busy)
		return EBUSY;
	err = ibv_cmd_destroy_cq(ibcq);
	if (err)
		return err;
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

/* Completion events are not supported: poll. */
/*
 * Completion events: the kernel arms the rows of the CQ's QPs (the side
 * the CQ takes completions of) and reports the CQ to its channel on the
 * next wake-up of that side: the next completion, not those already here,
 * as the verbs ask (a program polls after arming). A solicited-only
 * request is served as a request for the next completion.
 */
static void rc_thread_kick(struct accio_qp *qp);

static int accio_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct accio_cq *cq = to_acq(ibcq);
	struct accio_qp *qp;
	int err = ibv_cmd_req_notify_cq(ibcq, solicited_only);

	if (err)
		return err;
	/* RC QPs: their thread makes the completions and reports them */
	__atomic_store_n(&cq->want_event, 1, __ATOMIC_SEQ_CST);
	pthread_spin_lock(&cq->lock);
	list_for_each(&cq->send_qps, qp, send_node)
		if (qp->rc)
			rc_thread_kick(qp);
	list_for_each(&cq->recv_qps, qp, recv_node)
		if (qp->rc)
			rc_thread_kick(qp);
	pthread_spin_unlock(&cq->lock);
	return 0;
}

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

/* Scatter len bytes at src into a receive's gather list from offset off. */
static void scatter(const struct ibv_sge *sge, int num_sge, size_t off,
		    const uint8_t *src, size_t len)
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
	accio_grh_ipv4(grh, saddr, qp->local_ip, len);
	scatter(sge, r->num_sge, 0, grh, sizeof(grh));
	scatter(sge, r->num_sge, sizeof(grh), p + off, paylen);
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

/* Flush the posted receives of a QP in the error state. rq_lock held. */
static int flush_recv(struct accio_qp *qp, struct ibv_wc *wc, int ne)
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

/* The RX ring's datagrams. rq_lock held. */
static int poll_recv(struct accio_qp *qp, struct ibv_wc *wc, int ne)
{
	uint64_t rptr = qp->rx_rptr, wptr = qp->rx_wptr_seen;
	int n = 0;

	if (qp->state == IBV_QPS_ERR)
		return flush_recv(qp, wc, ne);
	if (rptr == wptr) {
		wptr = qp->rx_wptr_seen = reg_read(qp, ACCIO_ROW_RX_WPTR);
		if (rptr == wptr)
			return 0;
	}
	rmb_io_inline();
	while (rptr != wptr && n < ne) {
		const uint8_t *rec = qp->rx + (rptr & (qp->rx_bytes - 1));
		uint32_t saddr;
		size_t len = accio_rx_record(rec, &saddr);

		n += take_datagram(qp, rec + ACCIO_RX_HDR, len, saddr, &wc[n]);
		rptr += PAD8(ACCIO_RX_HDR + len);
	}
	release_io();
	qp->rx_rptr = rptr;
	reg_write(qp, ACCIO_ROW_RX_RPTR, rptr);
	return n;
}

/* ---- reliable connected QPs: the transport in the provider ---------------- */

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
	uint64_t rlen = PAD8(ACCIO_TX_HDR + bytes);

	if (qp->tx_wptr + rlen - qp->tx_rptr_seen <= qp->tx_bytes)
		return true;
	qp->tx_rptr_seen = reg_read(qp, ACCIO_ROW_TX_RPTR);
	return qp->tx_wptr + rlen - qp->tx_rptr_seen <= qp->tx_bytes;
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

/* An ACK or NAK to the peer; dropped if the TX ring is full (the peer
 * sends again). sq_lock held.
 */
static void rc_ack_send(struct accio_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct accio_rc_hdr h = {
		.opcode = ACCIO_OP_RC_ACK, .dqpn = qp->dest_qpn, .psn = psn,
		.syndrome = syndrome, .msn = qp->msn,
	};
	size_t bytes = accio_rc_bytes(ACCIO_OP_RC_ACK, 0);
	uint8_t *rec, *p;

	if (!tx_room(qp, bytes))
		return;
	rec = qp->tx + (qp->tx_wptr & (qp->tx_bytes - 1));
	p = rec + ACCIO_TX_HDR;
	p += accio_rc_build(p, &h, 0);
	accio_ud_trailer(p, 0);
	accio_tx_record_hdr(rec, bytes, ACCIO_ROCE_PORT, qp->dest_ip);
	qp->tx_wptr += PAD8(ACCIO_TX_HDR + bytes);
	qp->tx_dirty = true;
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
		rec = qp->tx + (qp->tx_wptr & (qp->tx_bytes - 1));
		p = rec + ACCIO_TX_HDR;
		p += accio_rc_build(p, &h, plen);
		gather(qp, slot, e, p, off, plen);
		accio_ud_trailer(p + plen, plen);
		accio_tx_record_hdr(rec, bytes, ACCIO_ROCE_PORT, qp->dest_ip);
		qp->tx_wptr += PAD8(ACCIO_TX_HDR + bytes);
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
			scatter(sge, r->num_sge, qp->rx_off, pay, paylen);
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
static void rc_progress(struct accio_qp *qp)
{
	uint64_t rptr = qp->rx_rptr, wptr = reg_read(qp, ACCIO_ROW_RX_WPTR);

	if (rptr != wptr) {
		rmb_io_inline();
		while (rptr != wptr) {
			const uint8_t *rec = qp->rx + (rptr & (qp->rx_bytes - 1));
			uint32_t saddr;
			size_t len = accio_rx_record(rec, &saddr);

			/* requests lost on purpose (ACKs never: a peer that has
			 * finished cannot answer a retransmission)
			 */
			if (qp->rc_drop && len && rec[ACCIO_RX_HDR] != ACCIO_OP_RC_ACK &&
			    ++qp->rx_count % qp->rc_drop == 0)
				qp->st.lost++;
			else
				rc_take(qp, rec + ACCIO_RX_HDR, len);
			rptr += PAD8(ACCIO_RX_HDR + len);
		}
		release_io();
		qp->rx_rptr = qp->rx_wptr_seen = rptr;
		reg_write(qp, ACCIO_ROW_RX_RPTR, rptr);
	}
	if (qp->ack_due) {
		qp->ack_due = false;
		rc_ack_send(qp, ACCIO_AETH_ACK, (qp->epsn - 1) & ACCIO_PSN_MASK);
	}
	if (qp->state == IBV_QPS_RTS) {
		rc_timers(qp);
		rc_send_pkts(qp);
	}
	tx_kick(qp);
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
		n += flush_recv(qp, wc + n, ne - n);
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
static void rc_events(struct accio_qp *qp)
{
	struct accio_cq *scq = to_acq(qp->ibv_qp.send_cq);
	struct accio_cq *rcq = to_acq(qp->ibv_qp.recv_cq);
	uint32_t side;

	if (qp->new_scqe) {
		qp->new_scqe = false;
		side = 1;
		if (__atomic_exchange_n(&scq->want_event, 0, __ATOMIC_SEQ_CST))
			ioctl(qp->row_fd, ACCIO_IOC_NOTIFY, &side);
	}
	if (qp->new_rcqe) {
		qp->new_rcqe = false;
		side = 0;
		if (__atomic_exchange_n(&rcq->want_event, 0, __ATOMIC_SEQ_CST))
			ioctl(qp->row_fd, ACCIO_IOC_NOTIFY, &side);
	}
}

/*
 * A QP that lets peers write its memory gets a thread that serves the row
 * while the program does not poll (RDMA WRITEs are one-sided: the target
 * program may only watch its memory). It sleeps in poll(2) on the row fd,
 * which the uncore's wake-up ends, and looks at the timers every 10 ms.
 * Until the first RDMA WRITE arrives it only looks every millisecond: a
 * wake-up per packet costs the SoC work that a program that polls its
 * CQs (and never gets a WRITE) does not need. Woken while the program is
 * at the QP, it leaves the packets to the program. A QP whose CQ asks for
 * a completion event gets the thread too: while the CQ is armed, the
 * program's polls leave the packets to it, and it reports what it
 * completes (rc_events()).
 */
static void *rc_thread(void *arg)
{
	struct accio_qp *qp = arg;
	struct pollfd fds[2] = {
		{ .fd = qp->row_fd, .events = POLLIN },
		{ .fd = qp->thread_fd, .events = POLLIN },
	};
	const struct timespec nap = { .tv_nsec = 20000 };
	struct accio_cq *scq = to_acq(qp->ibv_qp.send_cq);
	struct accio_cq *rcq = to_acq(qp->ibv_qp.recv_cq);
	uint64_t kicks;

	for (;;) {
		bool events = __atomic_load_n(&scq->want_event, __ATOMIC_SEQ_CST) ||
			      __atomic_load_n(&rcq->want_event, __ATOMIC_SEQ_CST);
		bool armed = events || __atomic_load_n(&qp->writes_seen, __ATOMIC_RELAXED);

		fds[1].revents = 0;
		if ((armed ? poll(fds, 2, 10) : poll(&fds[1], 1, 1)) < 0 && errno != EINTR)
			break;
		if (__atomic_load_n(&qp->thread_stop, __ATOMIC_SEQ_CST))
			break;
		/* a kick (a CQ was armed): take it; nothing to do if it went */
		if ((fds[1].revents & POLLIN) && read(qp->thread_fd, &kicks, sizeof(kicks)) < 0)
			kicks = 0;
		if (!events && pthread_spin_trylock(&qp->sq_lock)) {
			/* the program is at the QP: it takes the packets */
			nanosleep(&nap, NULL);
			continue;
		}
		if (events)
			pthread_spin_lock(&qp->sq_lock);
		pthread_spin_lock(&qp->rq_lock);
		rc_progress(qp);
		rc_events(qp);
		pthread_spin_unlock(&qp->rq_lock);
		pthread_spin_unlock(&qp->sq_lock);
	}
	return NULL;
}

/*
 * The thread runs on the harts the program is not pinned to, where there
 * are any. On the program's own hart the uncore would hold its wake-up
 * back while the program, an accelerated thread of the same priority,
 * runs there (spinning on its buffer, say), and the two would take turns
 * with the QP's locks.
 */
static void rc_thread_start(struct accio_qp *qp)
{
	long i, ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t own, other;
	pthread_attr_t pa;
	int none = 0;

	if (!__atomic_compare_exchange_n(&qp->thread_on, &none, 1, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return;		/* started already */
	qp->thread_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (qp->thread_fd < 0 || pthread_attr_init(&pa)) {
		qp->thread_on = 0;
		return;
	}
	if (!sched_getaffinity(0, sizeof(own), &own)) {
		CPU_ZERO(&other);
		for (i = 0; i < ncpu && i < CPU_SETSIZE; i++)
			if (!CPU_ISSET(i, &own))
				CPU_SET(i, &other);
		if (CPU_COUNT(&other))
			pthread_attr_setaffinity_np(&pa, sizeof(other), &other);
	}
	if (pthread_create(&qp->thread, &pa, rc_thread, qp))
		qp->thread_on = 0;
	pthread_attr_destroy(&pa);
}

/* Wake the thread (started if need be): a CQ asks for an event. */
static void rc_thread_kick(struct accio_qp *qp)
{
	uint64_t one = 1;

	rc_thread_start(qp);
	if (qp->thread_on && write(qp->thread_fd, &one, sizeof(one)) < 0)
		return;		/* a kick is pending already */
}

static void rc_thread_stop(struct accio_qp *qp)
{
	uint64_t one = 1;

	if (!qp->thread_on)
		return;
	__atomic_store_n(&qp->thread_stop, true, __ATOMIC_SEQ_CST);
	if (write(qp->thread_fd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
		pthread_cancel(qp->thread);
	pthread_join(qp->thread, NULL);
	qp->thread_on = 0;
}

/*
 * An RC QP's completions of one side for cq: the transport runs first,
 * unless cq waits for an event (then the QP's thread runs it and reports).
 */
static int rc_poll(struct accio_qp *qp, struct accio_cq *cq, bool send, struct ibv_wc *wc,
		   int ne)
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

static int accio_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct accio_cq *cq = to_acq(ibcq);
	struct accio_qp *qp;
	int n = 0;

	if (ne <= 0)
		return 0;
	pthread_spin_lock(&cq->lock);
	list_for_each(&cq->send_qps, qp, send_node) {
		if (n >= ne)
			break;
		if (qp->rc) {
			n += rc_poll(qp, cq, true, wc + n, ne - n);
			continue;
		}
		pthread_spin_lock(&qp->sq_lock);
		n += poll_send(qp, wc + n, ne - n);
		pthread_spin_unlock(&qp->sq_lock);
	}
	list_for_each(&cq->recv_qps, qp, recv_node) {
		if (n >= ne)
			break;
		if (qp->rc) {
			n += rc_poll(qp, cq, false, wc + n, ne - n);
			continue;
		}
		pthread_spin_lock(&qp->rq_lock);
		n += poll_recv(qp, wc + n, ne - n);
		pthread_spin_unlock(&qp->rq_lock);
	}
	pthread_spin_unlock(&cq->lock);
	return n;
}

/* ---- address handles (user space only) ------------------------------------ */

static struct ibv_ah *accio_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct accio_ah *ah;
	uint32_t addr;

	if (!attr->is_global || !accio_gid_ipv4(attr->grh.dgid.raw, &addr) || !addr) {
		errno = EINVAL;		/* RoCEv2 over IPv4 only: ::ffff:a.b.c.d */
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	ah->ibv_ah.context = pd->context;
	ah->ibv_ah.pd = pd;
	ah->addr = addr;
	return &ah->ibv_ah;
}

static int accio_destroy_ah(struct ibv_ah *ah)
{
	free(to_aah(ah));
	return 0;
}

/* ---- queue pairs ----------------------------------------------------------- */

/* A ring mapped twice in a row: a record that wraps is contiguous. */
static uint8_t *map_ring(int row_fd, uint64_t off, size_t size)
{
	uint8_t *b = mmap(NULL, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (b == MAP_FAILED)
		return NULL;
	if (mmap(b, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, row_fd, off) ==
	    MAP_FAILED ||
	    mmap(b + size, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, row_fd, off) ==
	    MAP_FAILED) {
		int err = errno;

		munmap(b, 2 * size);
		errno = err;
		return NULL;
	}
	return b;
}

static uint32_t ring_bytes_for(uint32_t wr)
{
	uint64_t want = (uint64_t)wr * PAD8(ACCIO_RX_HDR + ACCIO_MAX_PAYLOAD);
	uint32_t b = ACCIO_RING_DEFAULT;

	while (b < want && b < ACCIO_VERBS_RING_MAX)
		b <<= 1;
	return b;
}

static void row_close(struct accio_qp *qp)
{
	if (qp->regs && qp->regs != MAP_FAILED)
		munmap((void *)qp->regs, 4096);
	if (qp->rx)
		munmap(qp->rx, 2 * qp->rx_bytes);
	if (qp->tx)
		munmap(qp->tx, 2 * qp->tx_bytes);
	if (qp->row_fd >= 0)
		close(qp->row_fd);
	if (qp->sock >= 0)
		close(qp->sock);
}

/*
 * The QP's row: a UDP socket on a port of its own anchors the address;
 * accelerated for RoCE, its row takes from the RoCEv2 port 4791 the
 * datagrams of its QP (the kernel names it when it creates the QP),
 * whoever holds that port in the socket layer (soft-RoCE does, once
 * loaded). Its register page and rings mapped.
 */
static int row_open(struct accio_qp *qp, const struct ibv_qp_cap *cap)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = 0,
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	struct accio_accel a;
	int err, tries;

	qp->sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (qp->sock < 0)
		return errno;
	if (bind(qp->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return errno;
	/* rings for the queue depths; the default size if those are refused */
	for (tries = 0; tries < 2; tries++) {
		memset(&a, 0, sizeof(a));
		a.version = ACCIO_UAPI_VERSION;
		a.flags = ACCIO_ACCEL_ROCE;
		a.rx_bytes = tries ? 0 : ring_bytes_for(cap->max_recv_wr);
		a.tx_bytes = tries ? 0 : ring_bytes_for(cap->max_send_wr);
		if (ioctl(qp->sock, SIOCACCIO, &a) == 0)
			break;
		err = errno;
		if (err != ENOMEM || tries)
			return err;
	}
	qp->row_fd = a.fd;
	qp->row = a.row;
	qp->local_ip = a.local_ip;
	qp->rx_bytes = a.rx_bytes;
	qp->tx_bytes = a.tx_bytes;
	qp->regs = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	if (qp->regs == MAP_FAILED) {
		qp->regs = NULL;
		return errno;
	}
	qp->rx = map_ring(a.fd, a.rx_offset, a.rx_bytes);
	if (!qp->rx)
		return errno;
	qp->tx = map_ring(a.fd, a.tx_offset, a.tx_bytes);
	if (!qp->tx)
		return errno;
	qp->rx_rptr = qp->rx_wptr_seen = reg_read(qp, ACCIO_ROW_RX_RPTR);
	qp->tx_wptr = reg_read(qp, ACCIO_ROW_TX_WPTR);
	qp->tx_rptr_seen = reg_read(qp, ACCIO_ROW_TX_RPTR);
	return 0;
}

static uint32_t mtu_bytes(enum ibv_mtu mtu)
{
	switch (mtu) {
	case IBV_MTU_256: return 256;
	case IBV_MTU_512: return 512;
	case IBV_MTU_1024: return 1024;
	case IBV_MTU_2048: return 2048;
	case IBV_MTU_4096: return 4096;
	}
	return 1024;
}

static void stats_print(struct accio_qp *qp)
{
	fprintf(stderr, "accio-verbs: qpn=%u row=%u tx=%llu rx=%llu rx_drop_hdr=%llu "
		"rx_drop_qpn=%llu rx_drop_qkey=%llu rx_drop_norecv=%llu rx_drop_state=%llu "
		"rx_len_err=%llu retransmits=%llu naks_rx=%llu naks_tx=%llu rnr_naks_tx=%llu "
		"dup_rx=%llu lost=%llu\n",
		qp->ibv_qp.qp_num, qp->row, (unsigned long long)qp->st.tx,
		(unsigned long long)qp->st.rx, (unsigned long long)qp->st.rx_drop_hdr,
		(unsigned long long)qp->st.rx_drop_qpn, (unsigned long long)qp->st.rx_drop_qkey,
		(unsigned long long)qp->st.rx_drop_norecv,
		(unsigned long long)qp->st.rx_drop_state,
		(unsigned long long)qp->st.rx_len_err,
		(unsigned long long)qp->st.retransmits, (unsigned long long)qp->st.naks_rx,
		(unsigned long long)qp->st.naks_tx, (unsigned long long)qp->st.rnr_naks_tx,
		(unsigned long long)qp->st.dup_rx, (unsigned long long)qp->st.lost);
}

static void qp_free(struct accio_qp *qp)
{
	row_close(qp);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	if (qp->thread_fd >= 0)
		close(qp->thread_fd);
	free(qp->sq_sge);
	free(qp->sq_inline);
	free(qp->sq);
	free(qp->rq);
	free(qp->rq_sge);
	free(qp->routed);
	free(qp);
}

static struct ibv_qp *accio_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct accio_create_qp_cmd cmd = {};
	struct accio_create_qp_resp resp = {};
	struct ibv_port_attr port;
	struct ibv_qp_cap want = attr->cap;
	struct accio_cq *scq, *rcq;
	struct accio_qp *qp;
	uint32_t n;
	int err;

	if ((attr->qp_type != IBV_QPT_UD && attr->qp_type != IBV_QPT_RC) || attr->srq) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cap.max_inline_data > 1024) {
		errno = EINVAL;
		return NULL;
	}
	if (!attr->send_cq || !attr->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	qp->sock = qp->row_fd = qp->thread_fd = -1;
	qp->rc = attr->qp_type == IBV_QPT_RC;
	qp->rc_drop = qp->rc ? to_actx(pd->context)->rc_drop : 0;
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	err = row_open(qp, &want);
	if (err)
		goto fail;
	if (accio_query_port(pd->context, 1, &port) == 0)
		qp->mtu = mtu_bytes(port.active_mtu);
	else
		qp->mtu = 1024;
	if (qp->mtu > ACCIO_UD_PAYLOAD_MAX)
		qp->mtu = ACCIO_UD_PAYLOAD_MAX;

	cmd.drv.row_fd = qp->row_fd;
	cmd.drv.reserved = 0;
	err = ibv_cmd_create_qp(pd, &qp->ibv_qp, attr, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (err)
		goto fail;
	if (resp.drv.qpn)
		qp->ibv_qp.qp_num = resp.drv.qpn;

	/* the kernel's answer to the capabilities, where it gave one */
	if (!attr->cap.max_send_wr)
		attr->cap.max_send_wr = want.max_send_wr;
	if (!attr->cap.max_recv_wr)
		attr->cap.max_recv_wr = want.max_recv_wr;
	if (!attr->cap.max_send_sge)
		attr->cap.max_send_sge = want.max_send_sge;
	if (!attr->cap.max_recv_sge)
		attr->cap.max_recv_sge = want.max_recv_sge;
	qp->max_send_sge = attr->cap.max_send_sge;
	qp->max_recv_sge = attr->cap.max_recv_sge ? attr->cap.max_recv_sge : 1;
	qp->sq_sig_all = attr->sq_sig_all;

	qp->sq_cap = attr->cap.max_send_wr ? attr->cap.max_send_wr : 1;
	for (n = 1; n < qp->sq_cap; n <<= 1)
		;
	/* RC: an acknowledged send leaves the send queue at once, and waits
	 * for the program's poll in a slot beyond the queue's depth
	 */
	if (qp->rc)
		n *= 2;
	qp->sq_mask = n - 1;
	qp->sq = calloc(n, sizeof(*qp->sq));
	qp->rq_cap = attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1;
	for (n = 1; n < qp->rq_cap; n <<= 1)
		;
	qp->rq_mask = n - 1;
	qp->rq = calloc(n, sizeof(*qp->rq));
	qp->rq_sge = calloc((size_t)n * qp->max_recv_sge, sizeof(*qp->rq_sge));
	if (qp->rc) {
		/* a send's gather list and inline data stay until it is acknowledged */
		size_t slots = (size_t)qp->sq_mask + 1;

		qp->max_inline = attr->cap.max_inline_data;
		qp->sq_sge = calloc(slots * (qp->max_send_sge ? qp->max_send_sge : 1),
				    sizeof(*qp->sq_sge));
		if (qp->max_inline)
			qp->sq_inline = malloc(slots * qp->max_inline);
	}
	if (!qp->sq || !qp->rq || !qp->rq_sge ||
	    (qp->rc && (!qp->sq_sge || (qp->max_inline && !qp->sq_inline)))) {
		ibv_cmd_destroy_qp(&qp->ibv_qp);
		err = ENOMEM;
		goto fail;
	}
	qp->state = IBV_QPS_RESET;

	scq = to_acq(attr->send_cq);
	rcq = to_acq(attr->recv_cq);
	pthread_spin_lock(&scq->lock);
	list_add_tail(&scq->send_qps, &qp->send_node);
	pthread_spin_unlock(&scq->lock);
	pthread_spin_lock(&rcq->lock);
	list_add_tail(&rcq->recv_qps, &qp->recv_node);
	pthread_spin_unlock(&rcq->lock);
	return &qp->ibv_qp;

fail:
	qp_free(qp);
	errno = err;
	return NULL;
}

static int route(struct accio_qp *qp, uint32_t addr);

/* RC: the connection's attributes, and a fresh transport on RESET. Both locks held. */
static void rc_modify(struct accio_qp *qp, const struct ibv_qp_attr *attr, int mask,
		      uint32_t dest_ip)
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
		qp->msn = 0;
	}
}

static int accio_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct accio_qp *qp = to_aqp(ibqp);
	struct ibv_modify_qp cmd;
	uint32_t dest_ip = 0;
	int err;

	if (qp->rc && (mask & IBV_QP_AV)) {
		/* RoCEv2 over IPv4: the peer's IPv4-mapped GID, reachable
		 * through the row's next hop
		 */
		if (!(attr->ah_attr.is_global) ||
		    !accio_gid_ipv4(attr->ah_attr.grh.dgid.raw, &dest_ip))
			return EINVAL;
		pthread_spin_lock(&qp->sq_lock);
		err = route(qp, dest_ip);
		pthread_spin_unlock(&qp->sq_lock);
		if (err)
			return err;
	}
	err = ibv_cmd_modify_qp(ibqp, attr, mask, &cmd, sizeof(cmd));
	if (err)
		return err;
	pthread_spin_lock(&qp->sq_lock);
	pthread_spin_lock(&qp->rq_lock);
	if (mask & IBV_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IBV_QP_SQ_PSN)
		qp->psn = attr->sq_psn & ACCIO_PSN_MASK;
	if (qp->rc)
		rc_modify(qp, attr, mask, dest_ip);
	if (mask & IBV_QP_STATE) {
		qp->state = attr->qp_state;
		if (qp->state == IBV_QPS_RESET) {
			/* the queues are emptied; the engine still sends what it has */
			qp->rq_head = qp->rq_tail;
			qp->sq_head = qp->sq_tail;
		}
	}
	pthread_spin_unlock(&qp->rq_lock);
	pthread_spin_unlock(&qp->sq_lock);
	/* one-sided writes need a server of the row while the program only
	 * watches its memory
	 */
	if (qp->rc && (qp->access & IBV_ACCESS_REMOTE_WRITE) &&
	    (qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS))
		rc_thread_start(qp);
	return 0;
}

static int accio_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
			  struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(ibqp, attr, mask, init_attr, &cmd, sizeof(cmd));
}

static int accio_destroy_qp(struct ibv_qp *ibqp)
{
	struct accio_qp *qp = to_aqp(ibqp);
	struct accio_cq *scq = to_acq(ibqp->send_cq), *rcq = to_acq(ibqp->recv_cq);
	int err;

	rc_thread_stop(qp);
	err = ibv_cmd_destroy_qp(ibqp);
	if (err)
		return err;
	pthread_spin_lock(&scq->lock);
	list_del(&qp->send_node);
	pthread_spin_unlock(&scq->lock);
	pthread_spin_lock(&rcq->lock);
	list_del(&qp->recv_node);
	pthread_spin_unlock(&rcq->lock);
	if (to_actx(ibqp->context)->stats)
		stats_print(qp);
	qp_free(qp);
	return 0;
}

/* ---- posting ------------------------------------------------------------ */

/* Admit a destination once per QP (the row's next hop). sq_lock held. */
static int route(struct accio_qp *qp, uint32_t addr)
{
	struct accio_route r = { .ip = addr };
	uint32_t i;

	for (i = qp->nrouted; i-- > 0;)
		if (qp->routed[i] == addr)
			return 0;
	if (ioctl(qp->row_fd, ACCIO_IOC_ROUTE, &r) < 0)
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
	rlen = PAD8(ACCIO_TX_HDR + bytes);
	if (qp->tx_wptr + rlen - qp->tx_rptr_seen > qp->tx_bytes) {
		qp->tx_rptr_seen = reg_read(qp, ACCIO_ROW_TX_RPTR);
		if (qp->tx_wptr + rlen - qp->tx_rptr_seen > qp->tx_bytes)
			return ENOMEM;	/* the ring is full: UD, no waiting */
	}
	addr = to_aah(wr->wr.ud.ah)->addr;
	err = route(qp, addr);
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

	rec = qp->tx + (qp->tx_wptr & (qp->tx_bytes - 1));
	p = rec + ACCIO_TX_HDR;
	p += accio_ud_build(p, &h, len);
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(p, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
		p += wr->sg_list[i].length;
	}
	accio_ud_trailer(p, len);
	accio_tx_record_hdr(rec, bytes, ACCIO_ROCE_PORT, addr);

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

static int accio_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	struct accio_qp *qp = to_aqp(ibqp);
	bool posted = false;
	int err = 0;

	if (qp->rc) {
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

static int accio_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
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

/* ---- the provider ------------------------------------------------------------ */

static void accio_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops accio_ctx_ops = {
	.alloc_pd = accio_alloc_pd,
	.create_ah = accio_create_ah,
	.create_cq = accio_create_cq,
	.create_qp = accio_create_qp,
	.dealloc_pd = accio_dealloc_pd,
	.dereg_mr = accio_dereg_mr,
	.destroy_ah = accio_destroy_ah,
	.destroy_cq = accio_destroy_cq,
	.destroy_qp = accio_destroy_qp,
	.free_context = accio_free_context,
	.modify_qp = accio_modify_qp,
	.poll_cq = accio_poll_cq,
	.post_recv = accio_post_recv,
	.post_send = accio_post_send,
	.query_device_ex = accio_query_device_ex,
	.query_port = accio_query_port,
	.query_qp = accio_query_qp,
	.reg_mr = accio_reg_mr,
	.req_notify_cq = accio_req_notify_cq,
};

static struct verbs_context *accio_alloc_context(struct ibv_device *ibdev, int cmd_fd,
						 void *private_data)
{
	struct accio_context *ctx;
	struct ibv_get_context cmd;
	struct ib_uverbs_get_context_resp resp;
	const char *env;

	(void)private_data;
	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, vctx, RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	if (ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd), &resp, sizeof(resp))) {
		verbs_uninit_context(&ctx->vctx);
		free(ctx);
		return NULL;
	}
	env = getenv("ACCIO_VERBS_STATS");
	ctx->stats = env && *env && strcmp(env, "0");
	env = getenv("ACCIO_VERBS_RC_DROP");
	ctx->rc_drop = env ? (uint32_t)strtoul(env, NULL, 10) : 0;
	pthread_mutex_init(&ctx->mr_lock, NULL);
	list_head_init(&ctx->mrs);
	verbs_set_ops(&ctx->vctx, &accio_ctx_ops);
	return &ctx->vctx;
}

static void accio_free_context(struct ibv_context *ibctx)
{
	struct accio_context *ctx = to_actx(ibctx);

	pthread_mutex_destroy(&ctx->mr_lock);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static struct verbs_device *accio_device_alloc(struct verbs_sysfs_dev *sysfs_dev)
{
	struct accio_device *dev;

	(void)sysfs_dev;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->vdev;
}

static void accio_uninit_device(struct verbs_device *vdev)
{
	free(container_of(vdev, struct accio_device, vdev));
}

static const struct verbs_match_ent accio_match_table[] = {
	VERBS_NAME_MATCH("accio", NULL),
	{},
};

static const struct verbs_device_ops accio_dev_ops = {
	.name = "accio",
	.match_min_abi_version = ACCIO_IB_UVERBS_ABI_VERSION,
	.match_max_abi_version = ACCIO_IB_UVERBS_ABI_VERSION,
	.match_table = accio_match_table,
	.alloc_device = accio_device_alloc,
	.uninit_device = accio_uninit_device,
	.alloc_context = accio_alloc_context,
};
PROVIDER_DRIVER(accio, accio_dev_ops);
