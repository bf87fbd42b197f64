// SPDX-License-Identifier: GPL-2.0
/*
 * Verbs on the Accio uncore: RoCEv2 unreliable datagram queue pairs whose
 * send and receive queues are the rings of an ICT row.
 *
 * The data path is the user-space provider's (rdma-core's "accio"): a post
 * is a TX record and a doorbell, a completion is found in the row's rings,
 * and the engine writes and checks the ICRC (a row accelerated with
 * ACCIO_ACCEL_ROCE). This driver keeps the control path: the device on the
 * Accio NIC's netdev and its RoCE GID table, protection domains, memory
 * registrations (keys), completion queues and queue pairs. Creating a QP
 * binds it to a row fd of the caller's own address space, so a QP's rings
 * are protected by the row's ASID check: another process can neither map
 * them nor touch the row's registers. The rows of all QPs share UDP port
 * 4791; the engine gives each the datagrams whose BTH names its QP
 * (ROCE_QPN), and passes those for other QP numbers to the stack, where
 * soft-RoCE on the same netdev may take them.
 *
 * Completion events come from the rows' wake-ups: a request for one arms
 * the rows of the CQ's QPs (accio_row_arm_notify()), and the uncore's
 * wake-up interrupt then reports the CQ to its completion channel.
 *
 * Reliable connected QPs are the provider's transport too: it numbers the
 * packets, acknowledges, retransmits and places RDMA WRITEs; the kernel
 * keeps their attributes. There are no kernel verbs (no post or poll in
 * the kernel).
 */

#include <linux/accio.h>
#include <linux/etherdevice.h>
#include <linux/file.h>
#include <linux/init.h>
#include <linux/netdevice.h>
#include <linux/of.h>
#include <net/addrconf.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/accio-abi.h>

/*
 * One QP per RoCEv2 row (ACCIO_ACCEL_ROCE); the rows share port 4791 and the
 * engine steers each datagram by the BTH's destination QP. The ICT driver
 * gives RoCEv2 rows up to half of the table (32 of the model's 64 rows).
 */
#define ACCIO_IB_MAX_QP		32
#define ACCIO_IB_MAX_CQ		64
#define ACCIO_IB_MAX_WR		16384
#define ACCIO_IB_MAX_SGE	4
#define ACCIO_IB_MAX_CQE	4096
#define ACCIO_IB_MAX_MR		4096
#define ACCIO_IB_GIDS		16
/* above soft-RoCE's QP numbers (16 to 2^20): rxe beside us keeps its own */
#define ACCIO_IB_QPN_MIN	0x400000
#define ACCIO_IB_QPN_MAX	0xffffff
#define ACCIO_IB_PSN_MASK	GENMASK(23, 0)

struct accio_ib_dev {
	struct ib_device ibdev;
	struct net_device *ndev;
	struct ida qpn_ida;
	struct ida key_ida;
};

struct accio_ib_pd {
	struct ib_pd ibpd;
};

struct accio_ib_ucontext {
	struct ib_ucontext ibucontext;
};

/* Completion events: the rows of the CQ's QPs are armed on a request,
 * and the first wake-up of any of them reports the CQ.
 */
struct accio_ib_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* the lists */
	struct list_head send_qps;
	struct list_head recv_qps;
	unsigned long armed;		/* bit 0: report the next wake-up */
};

struct accio_ib_qp {
	struct ib_qp ibqp;
	struct file *row;		/* the row fd's file, held */
	enum ib_qp_type type;		/* UD or RC */
	enum ib_qp_state state;
	u32 qkey;
	u32 sq_psn;
	/* RC: kept for query_qp; the provider runs the transport */
	u32 rq_psn;
	u32 dest_qp_num;
	u32 access;
	u8 timeout, retry_cnt, rnr_retry, min_rnr_timer;
	u8 max_rd_atomic, max_dest_rd_atomic;
	u32 port;
	struct ib_qp_cap cap;
	struct list_head send_node;	/* send CQ's send_qps */
	struct list_head recv_node;	/* receive CQ's recv_qps */
};

struct accio_ib_mr {
	struct ib_mr ibmr;
};

static struct accio_ib_dev *to_adev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct accio_ib_dev, ibdev);
}

static struct accio_ib_qp *to_aqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct accio_ib_qp, ibqp);
}

static struct accio_ib_cq *to_acq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct accio_ib_cq, ibcq);
}

static int accio_ib_query_device(struct ib_device *ibdev,
				 struct ib_device_attr *attr,
				 struct ib_udata *udata)
{
	struct accio_ib_dev *dev = to_adev(ibdev);

	if (udata->inlen || udata->outlen)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	addrconf_addr_eui48((u8 *)&attr->sys_image_guid, dev->ndev->dev_addr);
	attr->max_mr_size = U64_MAX;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = 0;
	attr->max_qp = ACCIO_IB_MAX_QP;
	attr->max_qp_wr = ACCIO_IB_MAX_WR;
	attr->max_send_sge = ACCIO_IB_MAX_SGE;
	attr->max_recv_sge = ACCIO_IB_MAX_SGE;
	attr->max_cq = ACCIO_IB_MAX_CQ;
	attr->max_cqe = ACCIO_IB_MAX_CQE;
	attr->max_mr = ACCIO_IB_MAX_MR;
	attr->max_pd = ACCIO_IB_MAX_MR;
	attr->max_ah = ACCIO_IB_MAX_MR;
	attr->max_pkeys = 1;
	attr->atomic_cap = IB_ATOMIC_NONE;
	return 0;
}

static int accio_ib_query_port(struct ib_device *ibdev, u32 port,
			       struct ib_port_attr *attr)
{
	struct net_device *ndev = to_adev(ibdev)->ndev;
	bool up = netif_running(ndev) && netif_carrier_ok(ndev);

	/* the core has zeroed *attr */
	attr->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	attr->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
				IB_PORT_PHYS_STATE_DISABLED;
	/* the largest IB MTU a 1472-byte datagram carries with its headers */
	attr->max_mtu = IB_MTU_1024;
	attr->active_mtu = IB_MTU_1024;
	attr->gid_tbl_len = ACCIO_IB_GIDS;
	attr->pkey_tbl_len = 1;
	attr->max_msg_sz = 1024;
	attr->active_speed = IB_SPEED_SDR;
	attr->active_width = IB_WIDTH_1X;
	return 0;
}

static int accio_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
				       struct ib_port_immutable *immutable)
{
	immutable->pkey_tbl_len = 1;
	immutable->gid_tbl_len = ACCIO_IB_GIDS;
	/* RoCEv2 only: no MADs, no connection manager */
	immutable->core_cap_flags = RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP;
	immutable->max_mad_size = 0;
	return 0;
}

static enum rdma_link_layer accio_ib_link_layer(struct ib_device *ibdev,
						u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int accio_ib_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			       u16 *pkey)
{
	if (index)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

/* The GID table lives in the core; the engine needs none of it. */
static int accio_ib_add_gid(const struct ib_gid_attr *attr, void **context)
{
	return 0;
}

static int accio_ib_del_gid(const struct ib_gid_attr *attr, void **context)
{
	return 0;
}

static int accio_ib_alloc_ucontext(struct ib_ucontext *uctx,
				   struct ib_udata *udata)
{
	return 0;
}

static void accio_ib_dealloc_ucontext(struct ib_ucontext *uctx)
{
}

static int accio_ib_alloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return udata ? 0 : -EOPNOTSUPP;
}

static int accio_ib_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return 0;
}

static int accio_ib_create_cq(struct ib_cq *cq,
			      const struct ib_cq_init_attr *attr,
			      struct ib_udata *udata)
{
	if (!udata)
		return -EOPNOTSUPP;
	if (attr->flags)
		return -EOPNOTSUPP;
	if (!attr->cqe || attr->cqe > ACCIO_IB_MAX_CQE)
		return -EINVAL;
	cq->cqe = attr->cqe;
	spin_lock_init(&to_acq(cq)->lock);
	INIT_LIST_HEAD(&to_acq(cq)->send_qps);
	INIT_LIST_HEAD(&to_acq(cq)->recv_qps);
	return 0;
}

static void accio_ib_cq_report(struct accio_ib_cq *cq)
{
	if (test_and_clear_bit(0, &cq->armed) && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/*
 * A wake-up of a UD QP's row (interrupt context), or the provider's word
 * that an RC QP has a new completion (ACCIO_IOC_NOTIFY): report the CQ of
 * that side. An RC QP's packets are ACKs as well as requests, so only the
 * provider, which runs the transport, knows when a completion is there.
 */
static void accio_ib_qp_notify(void *ctx, unsigned int how)
{
	struct accio_ib_qp *qp = ctx;
	bool tx = how & ACCIO_ROW_NOTIFY_TX;
	bool user = how & ACCIO_ROW_NOTIFY_USER;
	bool rc = qp->type == IB_QPT_RC;

	/* UD: the hardware's wake-ups; RC: the provider's word */
	if (user != rc)
		return;
	accio_ib_cq_report(to_acq(tx ? qp->ibqp.send_cq : qp->ibqp.recv_cq));
}

/*
 * Arm the rows of the CQ's UD QPs: the receive side of those it takes
 * receives for, the send side of those it takes sends for. An RC QP's
 * provider reports its completions itself (ACCIO_IOC_NOTIFY). As the verbs
 * ask, the next completion is reported, not those already there: a program
 * polls after arming.
 */
static int accio_ib_req_notify_cq(struct ib_cq *ibcq,
				  enum ib_cq_notify_flags flags)
{
	struct accio_ib_cq *cq = to_acq(ibcq);
	struct accio_ib_qp *qp;
	unsigned long irqflags;
	int ready = 0;

	set_bit(0, &cq->armed);
	spin_lock_irqsave(&cq->lock, irqflags);
	list_for_each_entry(qp, &cq->recv_qps, recv_node)
		if (qp->type != IB_QPT_RC)
			ready |= accio_row_arm_notify(qp->row, false);
	list_for_each_entry(qp, &cq->send_qps, send_node)
		if (qp->type != IB_QPT_RC)
			ready |= accio_row_arm_notify(qp->row, true);
	spin_unlock_irqrestore(&cq->lock, irqflags);
	if (!ready)
		return 0;
	if (flags & IB_CQ_REPORT_MISSED_EVENTS)
		return 1;
	accio_ib_cq_report(cq);
	return 0;
}

static void accio_ib_cq_link(struct accio_ib_qp *qp, bool add)
{
	struct accio_ib_cq *scq = to_acq(qp->ibqp.send_cq);
	struct accio_ib_cq *rcq = to_acq(qp->ibqp.recv_cq);
	unsigned long flags;

	spin_lock_irqsave(&scq->lock, flags);
	if (add)
		list_add_tail(&qp->send_node, &scq->send_qps);
	else
		list_del(&qp->send_node);
	spin_unlock_irqrestore(&scq->lock, flags);
	spin_lock_irqsave(&rcq->lock, flags);
	if (add)
		list_add_tail(&qp->recv_node, &rcq->recv_qps);
	else
		list_del(&qp->recv_node);
	spin_unlock_irqrestore(&rcq->lock, flags);
}

static int accio_ib_destroy_cq(struct ib_cq *cq, struct ib_udata *udata)
{
	return 0;
}

static int accio_ib_create_qp(struct ib_qp *ibqp,
			      struct ib_qp_init_attr *init,
			      struct ib_udata *udata)
{
	struct accio_ib_dev *dev = to_adev(ibqp->device);
	struct accio_ib_qp *qp = to_aqp(ibqp);
	struct accio_ib_create_qp_resp resp = {};
	struct accio_ib_create_qp cmd;
	struct file *row;
	int qpn, err;
	u32 slot;

	if (!udata)
		return -EOPNOTSUPP;
	if ((init->qp_type != IB_QPT_UD && init->qp_type != IB_QPT_RC) ||
	    init->srq || init->create_flags)
		return -EOPNOTSUPP;
	if (init->cap.max_send_wr > ACCIO_IB_MAX_WR ||
	    init->cap.max_recv_wr > ACCIO_IB_MAX_WR ||
	    init->cap.max_send_sge > ACCIO_IB_MAX_SGE ||
	    init->cap.max_recv_sge > ACCIO_IB_MAX_SGE ||
	    init->cap.max_inline_data > 1024)
		return -EINVAL;
	if (udata->inlen < sizeof(cmd))
		return -EINVAL;
	err = ib_copy_from_udata(&cmd, udata, sizeof(cmd));
	if (err)
		return err;
	if (cmd.reserved ||
	    !ib_is_udata_cleared(udata, sizeof(cmd), udata->inlen - sizeof(cmd)))
		return -EINVAL;

	row = fget(cmd.row_fd);
	if (!row)
		return -EBADF;
	err = accio_roce_row(row, &slot);
	if (err)
		goto put;
	/* the row's wake-ups are this QP's: one QP a row (EBUSY) */
	err = accio_row_set_notify(row, accio_ib_qp_notify, qp);
	if (err)
		goto put;
	qpn = ida_alloc_range(&dev->qpn_ida, ACCIO_IB_QPN_MIN,
			      ACCIO_IB_QPN_MAX, GFP_KERNEL);
	if (qpn < 0) {
		err = qpn;
		goto unclaim;
	}
	ibqp->qp_num = qpn;
	accio_roce_row_set_qpn(row, qpn);
	qp->row = row;
	qp->type = init->qp_type;
	qp->state = IB_QPS_RESET;
	qp->port = init->port_num ? init->port_num : 1;
	qp->cap = init->cap;

	resp.qpn = qpn;
	resp.row = slot;
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err)
		goto free;
	accio_ib_cq_link(qp, true);
	return 0;
free:
	accio_roce_row_set_qpn(row, 0);
	ida_free(&dev->qpn_ida, qpn);
unclaim:
	accio_row_set_notify(row, NULL, NULL);
put:
	fput(row);
	return err;
}

static int accio_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			      int mask, struct ib_udata *udata)
{
	struct accio_ib_qp *qp = to_aqp(ibqp);
	enum ib_qp_state cur, next;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, qp->type, mask))
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index)
		return -EINVAL;
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	/* a packet carries at most 1024 bytes (a 1472-byte datagram) */
	if ((mask & IB_QP_PATH_MTU) && attr->path_mtu > IB_MTU_1024)
		return -EINVAL;
	if (mask & IB_QP_RQ_PSN)
		qp->rq_psn = attr->rq_psn & ACCIO_IB_PSN_MASK;
	if (mask & IB_QP_DEST_QPN)
		qp->dest_qp_num = attr->dest_qp_num & ACCIO_IB_QPN_MAX;
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_TIMEOUT)
		qp->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		qp->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_SQ_PSN)
		qp->sq_psn = attr->sq_psn & ACCIO_IB_PSN_MASK;
	qp->state = next;
	return 0;
}

static int accio_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			     int mask, struct ib_qp_init_attr *init)
{
	struct accio_ib_qp *qp = to_aqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mtu = IB_MTU_1024;
	attr->qkey = qp->qkey;
	attr->sq_psn = qp->sq_psn;
	attr->port_num = qp->port;
	attr->cap = qp->cap;
	attr->rq_psn = qp->rq_psn;
	attr->dest_qp_num = qp->dest_qp_num;
	attr->qp_access_flags = qp->access;
	attr->timeout = qp->timeout;
	attr->retry_cnt = qp->retry_cnt;
	attr->rnr_retry = qp->rnr_retry;
	attr->min_rnr_timer = qp->min_rnr_timer;
	attr->max_rd_atomic = qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	init->qp_type = qp->type;
	init->cap = qp->cap;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	return 0;
}

static int accio_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct accio_ib_dev *dev = to_adev(ibqp->device);
	struct accio_ib_qp *qp = to_aqp(ibqp);

	/* the row takes no more datagrams before its number is reused */
	accio_roce_row_set_qpn(qp->row, 0);
	accio_row_set_notify(qp->row, NULL, NULL);
	accio_ib_cq_link(qp, false);
	ida_free(&dev->qpn_ida, ibqp->qp_num);
	fput(qp->row);
	return 0;
}

/*
 * The engine moves data only between the wire and a row's rings; the
 * provider copies between the rings and registered buffers. A registration
 * checks the range and hands out a key: nothing is pinned or mapped.
 */
static struct ib_mr *accio_ib_reg_user_mr(struct ib_pd *pd, u64 start,
					  u64 length, u64 virt, int access,
					  struct ib_udata *udata)
{
	struct accio_ib_dev *dev = to_adev(pd->device);
	struct accio_ib_mr *mr;
	int key;

	/* optional flags (relaxed ordering) may be ignored */
	if (access & ~(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
		       IB_ACCESS_REMOTE_READ | IB_ACCESS_OPTIONAL))
		return ERR_PTR(-EOPNOTSUPP);
	if (!length || start + length < start ||
	    !access_ok((void __user *)(uintptr_t)start, length))
		return ERR_PTR(-EFAULT);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	key = ida_alloc_range(&dev->key_ida, 1, ACCIO_IB_MAX_MR, GFP_KERNEL);
	if (key < 0) {
		kfree(mr);
		return ERR_PTR(key == -ENOSPC ? -ENOMEM : key);
	}
	mr->ibmr.lkey = key << 8;
	mr->ibmr.rkey = key << 8;
	mr->ibmr.length = length;
	mr->ibmr.iova = virt;
	return &mr->ibmr;
}

static int accio_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct accio_ib_dev *dev = to_adev(ibmr->device);

	ida_free(&dev->key_ida, ibmr->lkey >> 8);
	kfree(container_of(ibmr, struct accio_ib_mr, ibmr));
	return 0;
}

static const struct ib_device_ops accio_ib_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = ACCIO_IB_UVERBS_ABI_VERSION,

	.add_gid = accio_ib_add_gid,
	.alloc_pd = accio_ib_alloc_pd,
	.alloc_ucontext = accio_ib_alloc_ucontext,
	.create_cq = accio_ib_create_cq,
	.create_qp = accio_ib_create_qp,
	.dealloc_pd = accio_ib_dealloc_pd,
	.dealloc_ucontext = accio_ib_dealloc_ucontext,
	.del_gid = accio_ib_del_gid,
	.dereg_mr = accio_ib_dereg_mr,
	.destroy_cq = accio_ib_destroy_cq,
	.destroy_qp = accio_ib_destroy_qp,
	.get_link_layer = accio_ib_link_layer,
	.get_port_immutable = accio_ib_get_port_immutable,
	.modify_qp = accio_ib_modify_qp,
	.query_device = accio_ib_query_device,
	.query_pkey = accio_ib_query_pkey,
	.query_port = accio_ib_query_port,
	.query_qp = accio_ib_query_qp,
	.reg_user_mr = accio_ib_reg_user_mr,
	.req_notify_cq = accio_ib_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, accio_ib_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, accio_ib_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, accio_ib_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, accio_ib_ucontext, ibucontext),
};

/*
 * One device, on the Accio NIC's netdev (there is one NIC). It is
 * registered from a work item: the netdev notifier runs under RTNL, which
 * the core's registration may take.
 */
static struct accio_ib_dev *accio_ib;
static struct net_device *accio_ib_pending;
static DEFINE_MUTEX(accio_ib_lock);

static bool accio_ib_is_nic(struct net_device *ndev)
{
	return ndev->dev.parent && ndev->dev.parent->of_node &&
	       of_device_is_compatible(ndev->dev.parent->of_node, "accio,nic");
}

static int accio_ib_add(struct net_device *ndev)
{
	struct accio_ib_dev *dev;
	int err;

	dev = ib_alloc_device(accio_ib_dev, ibdev);
	if (!dev)
		return -ENOMEM;
	dev->ndev = ndev;
	ida_init(&dev->qpn_ida);
	ida_init(&dev->key_ida);
	strscpy(dev->ibdev.node_desc, "accio", sizeof(dev->ibdev.node_desc));
	dev->ibdev.node_type = RDMA_NODE_IB_CA;
	dev->ibdev.phys_port_cnt = 1;
	dev->ibdev.num_comp_vectors = 1;
	dev->ibdev.uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	addrconf_addr_eui48((u8 *)&dev->ibdev.node_guid, ndev->dev_addr);
	ib_set_device_ops(&dev->ibdev, &accio_ib_dev_ops);
	err = ib_device_set_netdev(&dev->ibdev, ndev, 1);
	if (!err)
		err = ib_register_device(&dev->ibdev, "accio%d",
					 ndev->dev.parent);
	if (err) {
		ib_dealloc_device(&dev->ibdev);
		return err;
	}
	accio_ib = dev;
	return 0;
}

static void accio_ib_add_fn(struct work_struct *work)
{
	struct net_device *ndev;
	int err;

	mutex_lock(&accio_ib_lock);
	ndev = accio_ib_pending;
	accio_ib_pending = NULL;
	if (ndev && !accio_ib) {
		err = accio_ib_add(ndev);
		if (err)
			netdev_warn(ndev, "no verbs device: %d\n", err);
	}
	mutex_unlock(&accio_ib_lock);
	if (ndev)
		dev_put(ndev);
}

static DECLARE_WORK(accio_ib_add_work, accio_ib_add_fn);

static void accio_ib_port_event(struct accio_ib_dev *dev, bool up)
{
	struct ib_event ev = {
		.device = &dev->ibdev,
		.element.port_num = 1,
		.event = up ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR,
	};

	ib_dispatch_event(&ev);
}

static int accio_ib_netdev_event(struct notifier_block *nb,
				 unsigned long event, void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);

	if (!accio_ib_is_nic(ndev))
		return NOTIFY_DONE;
	mutex_lock(&accio_ib_lock);
	switch (event) {
	case NETDEV_REGISTER:
		if (!accio_ib && !accio_ib_pending) {
			dev_hold(ndev);
			accio_ib_pending = ndev;
			schedule_work(&accio_ib_add_work);
		}
		break;
	case NETDEV_UNREGISTER:
		if (accio_ib && accio_ib->ndev == ndev) {
			ib_unregister_device_queued(&accio_ib->ibdev);
			accio_ib = NULL;
		}
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		if (accio_ib && accio_ib->ndev == ndev)
			accio_ib_port_event(accio_ib,
					    netif_running(ndev) &&
					    netif_carrier_ok(ndev));
		break;
	}
	mutex_unlock(&accio_ib_lock);
	return NOTIFY_DONE;
}

static struct notifier_block accio_ib_nb = {
	.notifier_call = accio_ib_netdev_event,
};

static int __init accio_ib_init(void)
{
	return register_netdevice_notifier(&accio_ib_nb);
}
device_initcall(accio_ib_init);
