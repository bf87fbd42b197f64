// SPDX-License-Identifier: MIT
/*
 * The verbs objects: device, context, PD, MR, CQ, AH, QP, the provider's
 * registration with libibverbs. The kernel (accio_ib) keeps each object
 * but the AH; the provider adds what its data path needs: a QP's row and
 * queues, a CQ's lists of QPs, the context's registrations. Posting and
 * polling hand each QP's work to its transport (ud.c, rc.c).
 */
#include "accio_verbs.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/accio.h>
#include <accio-abi.h>

#include "accio_wire.h"

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
/* Ring sizes asked of SIOCACCIO: enough for the queue depths, in bounds. */
#define ACCIO_VERBS_RING_MAX (256U << 10)

struct accio_device {
	struct verbs_device vdev;
};

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

/*
 * Completion events: the kernel arms the rows of the CQ's QPs (the side
 * the CQ takes completions of) and reports the CQ to its channel on the
 * next wake-up of that side: the next completion, not those already here,
 * as the verbs ask (a program polls after arming). A solicited-only
 * request is served as a request for the next completion.
 */
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

/* Each QP's completions of the CQ's side, from its transport. */
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
		n += ud_poll_send(qp, wc + n, ne - n);
	}
	list_for_each(&cq->recv_qps, qp, recv_node) {
		if (n >= ne)
			break;
		if (qp->rc) {
			n += rc_poll(qp, cq, false, wc + n, ne - n);
			continue;
		}
		n += ud_poll_recv(qp, wc + n, ne - n);
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

static uint32_t ring_bytes_for(uint32_t wr)
{
	uint64_t want = (uint64_t)wr * rec_rx_bytes(ACCIO_MAX_PAYLOAD);
	uint32_t b = ACCIO_RING_DEFAULT;

	while (b < want && b < ACCIO_VERBS_RING_MAX)
		b <<= 1;
	return b;
}

static void row_close(struct accio_qp *qp)
{
	accio_row_close(&qp->r);
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
	int err, tries;

	qp->sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (qp->sock < 0)
		return errno;
	if (bind(qp->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return errno;
	/* rings for the queue depths; the default size if those are refused */
	for (tries = 0;; tries++) {
		if (accio_row_open(&qp->r, qp->sock, ACCIO_ACCEL_ROCE,
				   tries ? 0 : ring_bytes_for(cap->max_recv_wr),
				   tries ? 0 : ring_bytes_for(cap->max_send_wr)) == 0)
			break;
		err = errno;
		if (err != ENOMEM || tries)
			return err;
	}
	qp->rx_rptr = qp->rx_wptr_seen = reg_read(qp, ACCIO_ROW_RX_RPTR);
	qp->tx_wptr = reg_read(qp, ACCIO_ROW_TX_WPTR);
	qp->tx_rptr_seen = reg_read(qp, ACCIO_ROW_TX_RPTR);
	return 0;
}

static void stats_print(struct accio_qp *qp)
{
	fprintf(stderr, "accio-verbs: qpn=%u row=%u tx=%llu rx=%llu rx_drop_hdr=%llu "
		"rx_drop_qpn=%llu rx_drop_qkey=%llu rx_drop_norecv=%llu rx_drop_state=%llu "
		"rx_len_err=%llu retransmits=%llu naks_rx=%llu naks_tx=%llu rnr_naks_tx=%llu "
		"dup_rx=%llu lost=%llu acks_lost=%llu linger_rx=%llu\n",
		qp->ibv_qp.qp_num, qp->r.index, (unsigned long long)qp->st.tx,
		(unsigned long long)qp->st.rx, (unsigned long long)qp->st.rx_drop_hdr,
		(unsigned long long)qp->st.rx_drop_qpn, (unsigned long long)qp->st.rx_drop_qkey,
		(unsigned long long)qp->st.rx_drop_norecv,
		(unsigned long long)qp->st.rx_drop_state,
		(unsigned long long)qp->st.rx_len_err,
		(unsigned long long)qp->st.retransmits, (unsigned long long)qp->st.naks_rx,
		(unsigned long long)qp->st.naks_tx, (unsigned long long)qp->st.rnr_naks_tx,
		(unsigned long long)qp->st.dup_rx, (unsigned long long)qp->st.lost,
		(unsigned long long)qp->st.acks_lost, (unsigned long long)qp->st.linger_rx);
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
	qp->sock = qp->r.fd = qp->thread_fd = -1;
	qp->rc = attr->qp_type == IBV_QPT_RC;
	qp->rc_drop = qp->rc ? to_actx(pd->context)->rc_drop : 0;
	qp->rc_drop_ack = qp->rc ? to_actx(pd->context)->rc_drop_ack : 0;
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

	cmd.drv.row_fd = qp->r.fd;
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
		err = qp_route(qp, dest_ip);
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
	if (qp->rc)
		rc_linger(qp, to_actx(ibqp->context)->linger_ms);
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

static int accio_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	struct accio_qp *qp = to_aqp(ibqp);

	if (qp->rc)
		return rc_post_send(qp, wr, bad_wr);
	return ud_post_send(qp, wr, bad_wr);
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
	env = getenv("ACCIO_VERBS_RC_DROP_ACK");
	ctx->rc_drop_ack = env ? (uint32_t)strtoul(env, NULL, 10) : 0;
	env = getenv("ACCIO_VERBS_RC_LINGER_MS");
	ctx->linger_ms = env && *env ? (int64_t)strtoul(env, NULL, 10) : -1;
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
