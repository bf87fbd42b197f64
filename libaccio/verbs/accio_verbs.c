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
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
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
};

struct accio_cq {
	struct ibv_cq ibv_cq;
	pthread_spinlock_t lock;
	struct list_head send_qps;	/* QPs with this CQ as send CQ */
	struct list_head recv_qps;	/* ... as receive CQ */
};

struct accio_ah {
	struct ibv_ah ibv_ah;
	uint32_t addr;		/* destination IPv4, network order */
};

/* A send handed to the engine: done when the TX read pointer passes end. */
struct accio_swqe {
	uint64_t wr_id;
	uint64_t end;
	uint32_t len;
	bool signaled;
};

struct accio_rwqe {
	uint64_t wr_id;
	int num_sge;
};

struct accio_qp_stats {
	uint64_t tx, rx, rx_drop_hdr, rx_drop_qpn, rx_drop_qkey, rx_drop_norecv,
		 rx_drop_state, rx_len_err;
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

/* The data path copies with the CPU: the kernel hands out a key, pins nothing. */
static struct ibv_mr *accio_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
				   uint64_t hca_va, int access)
{
	struct ibv_reg_mr cmd;
	struct ib_uverbs_reg_mr_resp resp;
	struct verbs_mr *vmr = calloc(1, sizeof(*vmr));
	int err;

	if (!vmr)
		return NULL;
	err = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd, sizeof(cmd),
			     &resp, sizeof(resp));
	if (err) {
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static int accio_dereg_mr(struct verbs_mr *vmr)
{
	int err = ibv_cmd_dereg_mr(vmr);

	if (err)
		return err;
	free(vmr);
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

/* Completion events are not supported: poll. */
/*
 * Completion events: the kernel arms the rows of the CQ's QPs (the side
 * the CQ takes completions of) and reports the CQ to its channel on the
 * next wake-up of that side: the next completion, not those already here,
 * as the verbs ask (a program polls after arming). A solicited-only
 * request is served as a request for the next completion.
 */
static int accio_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
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
		pthread_spin_lock(&qp->sq_lock);
		n += poll_send(qp, wc + n, ne - n);
		pthread_spin_unlock(&qp->sq_lock);
	}
	list_for_each(&cq->recv_qps, qp, recv_node) {
		if (n >= ne)
			break;
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
		"rx_len_err=%llu\n",
		qp->ibv_qp.qp_num, qp->row, (unsigned long long)qp->st.tx,
		(unsigned long long)qp->st.rx, (unsigned long long)qp->st.rx_drop_hdr,
		(unsigned long long)qp->st.rx_drop_qpn, (unsigned long long)qp->st.rx_drop_qkey,
		(unsigned long long)qp->st.rx_drop_norecv,
		(unsigned long long)qp->st.rx_drop_state,
		(unsigned long long)qp->st.rx_len_err);
}

static void qp_free(struct accio_qp *qp)
{
	row_close(qp);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
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

	if (attr->qp_type != IBV_QPT_UD || attr->srq) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->send_cq || !attr->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	qp->sock = qp->row_fd = -1;
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
	qp->sq_mask = n - 1;
	qp->sq = calloc(n, sizeof(*qp->sq));
	qp->rq_cap = attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1;
	for (n = 1; n < qp->rq_cap; n <<= 1)
		;
	qp->rq_mask = n - 1;
	qp->rq = calloc(n, sizeof(*qp->rq));
	qp->rq_sge = calloc((size_t)n * qp->max_recv_sge, sizeof(*qp->rq_sge));
	if (!qp->sq || !qp->rq || !qp->rq_sge) {
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
	int err;

	err = ibv_cmd_modify_qp(ibqp, attr, mask, &cmd, sizeof(cmd));
	if (err)
		return err;
	pthread_spin_lock(&qp->sq_lock);
	pthread_spin_lock(&qp->rq_lock);
	if (mask & IBV_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IBV_QP_SQ_PSN)
		qp->psn = attr->sq_psn & ACCIO_PSN_MASK;
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

static int accio_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	struct accio_qp *qp = to_aqp(ibqp);
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
	verbs_set_ops(&ctx->vctx, &accio_ctx_ops);
	return &ctx->vctx;
}

static void accio_free_context(struct ibv_context *ibctx)
{
	struct accio_context *ctx = to_actx(ibctx);

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
