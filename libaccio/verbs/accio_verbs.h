/* SPDX-License-Identifier: MIT */
/*
 * accio: an rdma-core verbs provider whose data path is an ICT row.
 *
 * The kernel driver (accio_ib, device accio%d) keeps the verbs objects
 * (context, PD, CQ, QP, MR) and nothing of the data path. A QP owns a UDP
 * socket whose row was accelerated with ACCIO_ACCEL_ROCE (the row takes
 * the RoCEv2 port 4791): posting a send writes RoCEv2 packets (BTH, the
 * transport's headers, payload, pad, an ICRC slot the engine fills in) as
 * records into the row's TX ring and rings the doorbell; polling a CQ
 * reads the row's TX read pointer and RX ring (packets whose ICRC the
 * engine checked), with loads and stores only. Wire format: accio_wire.h;
 * limits: README.md.
 *
 * The provider's private header. The files, each calling only those
 * below it:
 *
 *   verbs.c   the objects: device, context, PD, MR, CQ, AH, QP; the
 *             verbs entry points, which hand a QP's work to its
 *             transport; the provider's registration
 *   thread.c  an RC QP's helper thread: the transport while the program
 *             does not poll, completion events
 *   rc.c      the RC transport: PSNs, ACKs and NAKs, retransmission,
 *             the responder (SENDs, RDMA WRITEs into registered memory)
 *   ud.c      the UD transport: SENDs into the TX ring, datagrams from
 *             the RX ring
 *   queue.c   what both transports do alike: posting receives, filling
 *             a receive's gather list, flushing receives, admitting a
 *             destination (the row's next hop)
 */
#ifndef ACCIO_VERBS_H
#define ACCIO_VERBS_H

#include <config.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "../src/row.h"

/* Only the provider's constructor leaves the library (provider.map). */
#pragma GCC visibility push(hidden)

/* ---- objects ------------------------------------------------------------ */

struct accio_context {
	struct verbs_context vctx;
	bool stats;		/* ACCIO_VERBS_STATS=1: counters at destroy_qp */
	uint32_t rc_drop;	/* ACCIO_VERBS_RC_DROP=N: lose every Nth RC request in */
	uint32_t rc_drop_ack;	/* ACCIO_VERBS_RC_DROP_ACK=N: lose the first ACK of every Nth message */
	int64_t linger_ms;	/* ACCIO_VERBS_RC_LINGER_MS=N: rc_linger()'s quiet; -1 default */
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
	uint64_t acks_lost, linger_rx;
};

struct accio_qp {
	struct ibv_qp ibv_qp;
	struct list_node send_node, recv_node;

	/* the row, anchored by a UDP socket of its own */
	int sock;
	struct accio_row r;

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
	uint32_t rc_drop_ack;	/* lose the first ACK that covers message N, 2N, ... */
	uint32_t msn_acked;	/* the message count the last ACK carried */
	uint64_t req_in;	/* request packets in (not ACKs), lost ones too */

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

/* ---- the row -------------------------------------------------------------- */

static inline uint64_t reg_read(struct accio_qp *qp, unsigned int off)
{
	return row_reg(&qp->r, off);
}

static inline void reg_write(struct accio_qp *qp, unsigned int off, uint64_t v)
{
	row_reg_write(&qp->r, off, v);
}

/* An RX record's payload length and source (network order). */
static inline size_t rx_record(const uint8_t *rec, uint32_t *saddr)
{
	struct rec_rx h;

	rec_rx_decode(rec, &h);
	*saddr = htonl(h.sip);
	return h.len;
}

/* A path MTU in bytes (the port's active MTU, a QP's path MTU). */
static inline uint32_t mtu_bytes(enum ibv_mtu mtu)
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

/* ---- queue.c: both transports ----------------------------------------------- */

int accio_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
/* Scatter len bytes at src into a receive's gather list from offset off. */
void sge_scatter(const struct ibv_sge *sge, int num_sge, size_t off, const uint8_t *src,
		 size_t len);
/* Flush the posted receives of a QP in the error state. rq_lock held. */
int rq_flush(struct accio_qp *qp, struct ibv_wc *wc, int ne);
/* Admit a destination once per QP (the row's next hop): 0 or an errno. sq_lock held. */
int qp_route(struct accio_qp *qp, uint32_t addr);

/* ---- ud.c: the UD transport ------------------------------------------------- */

int ud_post_send(struct accio_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
/* A UD QP's completions of one side; each takes that side's lock. */
int ud_poll_send(struct accio_qp *qp, struct ibv_wc *wc, int ne);
int ud_poll_recv(struct accio_qp *qp, struct ibv_wc *wc, int ne);

/* ---- rc.c: the RC transport ------------------------------------------------- */

int rc_post_send(struct accio_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
/* An RC QP's completions of one side (send or receive) for cq; takes both locks. */
int rc_poll(struct accio_qp *qp, struct accio_cq *cq, bool send, struct ibv_wc *wc, int ne);
/* The connection's attributes, and a fresh transport on RESET. Both locks held. */
void rc_modify(struct accio_qp *qp, const struct ibv_qp_attr *attr, int mask,
	       uint32_t dest_ip);
/* What the RX ring holds, the ACK due, the timers, what waited for room. Both locks held. */
void rc_progress(struct accio_qp *qp);
/* Before destroy: answer the peer's retransmissions until quiet_ms pass
 * without one (negative: four ACK timeouts). */
void rc_linger(struct accio_qp *qp, int64_t quiet_ms);
/* Completion events for the completions rc_progress() made. Both locks held. */
void rc_events(struct accio_qp *qp);

/* ---- thread.c: an RC QP's helper thread --------------------------------------- */

void rc_thread_start(struct accio_qp *qp);
/* Wake the thread (started if need be): a CQ asks for an event. */
void rc_thread_kick(struct accio_qp *qp);
void rc_thread_stop(struct accio_qp *qp);

#pragma GCC visibility pop

#endif /* ACCIO_VERBS_H */
