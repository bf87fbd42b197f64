// SPDX-License-Identifier: MIT
/*
 * accio_verbs_selftest: what the verbs device refuses, and what one process
 * cannot do to another's queue pair. Runs in the guest with Debian's
 * libibverbs and the accio provider; prints "ok NAME" or "FAIL NAME: why"
 * per check and exits non-zero if any failed.
 *
 *   accio_verbs_selftest [-d accio0] [-a PEER]
 *
 * PEER (default 10.0.2.2, the user wire's gateway) receives one UD send.
 *
 * The kernel's checks are reached with the core's create_qp command and
 * hand-made driver data (ibv_cmd_create_qp), the way a buggy or hostile
 * provider would reach them.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>
#include <linux/accio.h>
#include <accio-abi.h>

struct create_qp_cmd {
	struct ibv_create_qp ibv_cmd;
	struct accio_ib_create_qp drv;
};

struct create_qp_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct accio_ib_create_qp_resp drv;
};

static int failures;

static void check(int cond, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check(int cond, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (cond) {
		printf("ok %s\n", name);
		return;
	}
	failures++;
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

struct res {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

static int open_res(const char *name, struct res *r)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	memset(r, 0, sizeof(*r));
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			r->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!r->ctx)
		return -1;
	r->pd = ibv_alloc_pd(r->ctx);
	r->cq = r->pd ? ibv_create_cq(r->ctx, 16, NULL, NULL, 0) : NULL;
	return r->cq ? 0 : -1;
}

static void close_res(struct res *r)
{
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->ctx)
		ibv_close_device(r->ctx);
}

/* The core's create_qp with our driver data; 0 or an errno. */
static int raw_create_qp(struct res *r, int row_fd, __u32 reserved,
			 struct ibv_qp *qp)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = r->cq, .recv_cq = r->cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct create_qp_cmd cmd = {};
	struct create_qp_resp resp = {};

	memset(qp, 0, sizeof(*qp));
	cmd.drv.row_fd = row_fd;
	cmd.drv.reserved = reserved;
	return ibv_cmd_create_qp(r->pd, qp, &attr, &cmd.ibv_cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
}

/* A UDP socket on a port of its own, accelerated with flags; -errno. */
static int make_row(__u32 flags, int *sock)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct accio_accel a = { .version = ACCIO_UAPI_VERSION, .flags = flags };

	*sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (*sock < 0 || bind(*sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (ioctl(*sock, SIOCACCIO, &a) < 0)
		return -errno;
	return a.fd;
}

/* The queue pair a RoCEv2 row serves, from its fd's fdinfo; -1 if none. */
static long row_qpn(int row)
{
	char path[64], line[128];
	long qpn = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", row);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "roce_qpn: %li", &qpn) == 1)
			break;
	fclose(f);
	return qpn;
}

/* The ICT's rows (sysfs), 64 if it cannot be read. */
static int ict_rows(void)
{
	FILE *f = popen("cat /sys/bus/platform/drivers/accio-uncore/*/rows 2>/dev/null", "r");
	int n = 0;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = 0;
		pclose(f);
	}
	return n > 0 ? n : 64;
}

static struct ibv_qp *ud_qp(struct res *r)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = r->cq, .recv_cq = r->cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(r->pd, &attr);
}

/*
 * What an RC QP refuses: a path MTU above 1024, an address that is not
 * IPv4-mapped, posts before RTS, RDMA READ and atomics, inline data above
 * its max_inline_data. True if all were refused as they should be.
 */
static bool rc_refusals(struct res *r, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	char buf[128] = "x";
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;
	bool ok = true;
	int err;

	(void)r;
	err = ibv_post_send(qp, &wr, &bad);
	ok &= err == EINVAL;
	printf("  rc post in RESET: %d\n", err);
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS);
	ok &= err == 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_2048;
	a.dest_qp_num = 0x11;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
	a.ah_attr.grh.dgid.raw[12] = 10;
	a.ah_attr.grh.dgid.raw[14] = 2;
	a.ah_attr.grh.dgid.raw[15] = 2;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
#define RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
		  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
	err = ibv_modify_qp(qp, &a, RTR_MASK);
	ok &= err == EINVAL;
	printf("  rc path MTU 2048: %d\n", err);
	a.path_mtu = IBV_MTU_1024;
	a.ah_attr.grh.dgid.raw[10] = 0;
	err = ibv_modify_qp(qp, &a, RTR_MASK);
	ok &= err == EINVAL;
	printf("  rc GID not IPv4-mapped: %d\n", err);
	a.ah_attr.grh.dgid.raw[10] = 0xff;
	err = ibv_modify_qp(qp, &a, RTR_MASK);
	ok &= err == 0;
	printf("  rc RTR: %d\n", err);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	ok &= err == 0;
	printf("  rc RTS: %d\n", err);
	wr.opcode = IBV_WR_RDMA_READ;
	err = ibv_post_send(qp, &wr, &bad);
	ok &= err == EINVAL && bad == &wr;
	printf("  rc RDMA READ: %d\n", err);
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	err = ibv_post_send(qp, &wr, &bad);
	ok &= err == EINVAL;
	printf("  rc atomic: %d\n", err);
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE;
	sge.length = 100;
	err = ibv_post_send(qp, &wr, &bad);
	ok &= err == EINVAL;
	printf("  rc inline above max_inline_data: %d\n", err);
	return ok;
}

/* In a child: the result of fn, as the exit status; a signal as 128 + it. */
static int in_child(int (*fn)(void *), void *arg)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		fflush(stdout);
		_exit(fn(arg));
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

static const char *dev_name = "accio0";

/* A child's QP on its parent's RoCE row fd: the errno the kernel gives. */
static int child_takes_row(void *arg)
{
	int row = *(int *)arg;
	struct ibv_qp qp;
	struct res r;
	int err;

	if (open_res(dev_name, &r))
		return 100;
	err = raw_create_qp(&r, row, 0, &qp);
	if (!err)
		ibv_cmd_destroy_qp(&qp);
	close_res(&r);
	return err;
}

/* A child maps its parent's row: the errno of mmap. */
static int child_maps_row(void *arg)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
		       *(int *)arg, 0);

	return p == MAP_FAILED ? errno : 0;
}

struct post {
	struct ibv_qp *qp;
	struct ibv_ah *ah;
};

/*
 * A UD send addressed to the sending QP's own number: the echo peer's
 * answer (headers swapped, so its ICRC is wrong) names this QP and is
 * steered back to its row, where the engine drops it as malformed.
 */
static int post_one(struct post *p, const char *text)
{
	char buf[64];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = sizeof(buf) };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
		.wr.ud = { .ah = p->ah, .remote_qpn = p->qp->qp_num,
			   .remote_qkey = 0x11111111 },
	}, *bad;

	snprintf(buf, sizeof(buf), "%s", text);
	return ibv_post_send(p->qp, &wr, &bad);
}

/* A child posts on its parent's QP, whose rings are not mapped in it. */
static int child_posts(void *arg)
{
	return post_one(arg, "from another process") ? 10 : 0;
}

int main(int argc, char **argv)
{
	struct ibv_port_attr port;
	struct ibv_qp raw, *qp, *qp2;
	union ibv_gid gid;
	struct res r;
	const char *peer = "10.0.2.2";
	int c, sock, sock2, row, row2, err, st;

	while ((c = getopt(argc, argv, "d:a:")) != -1) {
		if (c == 'd') {
			dev_name = optarg;
		} else if (c == 'a') {
			peer = optarg;
		} else {
			fprintf(stderr, "usage: accio_verbs_selftest [-d DEVICE] [-a PEER]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (open_res(dev_name, &r)) {
		printf("FAIL open: %s: %s\n", dev_name, strerror(errno));
		return 1;
	}
	err = ibv_query_port(r.ctx, 1, &port);
	check(!err && port.state == IBV_PORT_ACTIVE && port.active_mtu == IBV_MTU_1024 &&
	      port.link_layer == IBV_LINK_LAYER_ETHERNET, "port-active-roce",
	      "err %d state %d mtu %d link %d", err, port.state, port.active_mtu,
	      port.link_layer);
	err = ibv_query_gid(r.ctx, 1, 1, &gid);
	check(!err && !memcmp(gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12),
	      "gid-ipv4-mapped", "err %d", err);

	/* the kernel's checks of the driver data */
	err = raw_create_qp(&r, -1, 0, &raw);
	check(err == EBADF, "qp-no-fd", "got %d", err);
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	err = raw_create_qp(&r, sock, 0, &raw);
	check(err == EBADF, "qp-plain-socket", "got %d", err);
	close(sock);
	row = make_row(0, &sock);
	check(row >= 0, "row-plain", "SIOCACCIO: %d", row);
	err = raw_create_qp(&r, row, 0, &raw);
	check(err == EINVAL, "qp-row-not-roce", "got %d", err);
	close(row);
	close(sock);
	row = make_row(1U << 31, &sock);
	check(row == -EINVAL, "accel-unknown-flag", "got %d", row);
	close(sock);

	row = make_row(ACCIO_ACCEL_ROCE, &sock);
	check(row >= 0, "row-roce", "SIOCACCIO: %d", row);
	/* RoCEv2 rows share port 4791 (the engine steers by QP), up to half
	 * of the table
	 */
	row2 = make_row(ACCIO_ACCEL_ROCE, &sock2);
	check(row2 >= 0, "row-roce-shared", "got %d", row2);
	{
		int fds[128][2], n = 1 + (row2 >= 0), k = 0, last = 0, half = ict_rows() / 2;

		while (n < half + 4 && k < 128) {
			last = make_row(ACCIO_ACCEL_ROCE, &fds[k][1]);
			fds[k++][0] = last;
			if (last < 0)
				break;
			n++;
		}
		check(n == half && last == -ENOSPC, "row-roce-half-table",
		      "%d RoCEv2 rows of %d, then %d", n, 2 * half, last);
		while (k--) {
			if (fds[k][0] >= 0)
				close(fds[k][0]);
			close(fds[k][1]);
		}
	}
	if (row2 >= 0)
		close(row2);
	close(sock2);
	err = raw_create_qp(&r, row, 1, &raw);
	check(err == EINVAL, "qp-reserved", "got %d", err);
	st = in_child(child_takes_row, &row);
	check(st == EACCES, "qp-foreign-row", "child got %d", st);
	st = in_child(child_maps_row, &row);
	check(st == EACCES, "map-foreign-row", "child got %d", st);
	check(row_qpn(row) == 0, "row-no-qp-yet", "roce_qpn %ld", row_qpn(row));
	err = raw_create_qp(&r, row, 0, &raw);
	/* QP numbers above soft-RoCE's (16 to 2^20) */
	check(!err && raw.qp_num >= 0x400000, "qp-own-row", "got %d qpn %#x", err,
	      raw.qp_num);
	if (!err) {
		struct ibv_qp raw2;
		int err2 = raw_create_qp(&r, row, 0, &raw2);

		check(err2 == EBUSY, "qp-row-once", "got %d", err2);
		if (!err2)
			ibv_cmd_destroy_qp(&raw2);
		/* the engine steers the QP's datagrams to its row, and stops
		 * before the number is freed
		 */
		check(row_qpn(row) == (long)raw.qp_num, "qp-row-steered", "roce_qpn %#lx qpn %#x",
		      row_qpn(row), raw.qp_num);
		ibv_cmd_destroy_qp(&raw);
		check(row_qpn(row) == 0, "qp-destroy-unsteers", "roce_qpn %#lx", row_qpn(row));
	}
	close(row);
	close(sock);

	/* through the provider */
	{
		struct ibv_qp_init_attr ia = {
			.send_cq = r.cq, .recv_cq = r.cq, .qp_type = IBV_QPT_UC,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		errno = 0;
		qp = ibv_create_qp(r.pd, &ia);
		check(!qp && errno == EOPNOTSUPP, "qp-uc-refused", "errno %d", errno);
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_inline_data = 4096;
		errno = 0;
		qp = ibv_create_qp(r.pd, &ia);
		check(!qp && errno == EINVAL, "qp-rc-inline-refused", "errno %d", errno);
		ia.cap.max_inline_data = 64;
		qp = ibv_create_qp(r.pd, &ia);
		check(qp != NULL, "qp-rc", "errno %d", errno);
		if (qp) {
			check(rc_refusals(&r, qp), "qp-rc-refusals", "see above");
			ibv_destroy_qp(qp);
		}
	}
	qp = ud_qp(&r);
	check(qp != NULL, "qp-ud", "errno %d", errno);
	if (!qp)
		goto out;
	qp2 = ud_qp(&r);
	check(qp2 && qp2->qp_num != qp->qp_num, "qp-ud-second", "errno %d", errno);
	if (qp2)
		ibv_destroy_qp(qp2);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 1,
					 .port_num = 1, .qkey = 0x11111111 };

		err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_QKEY);
		check(err == EINVAL, "modify-bad-pkey-index", "got %d", err);
		a.pkey_index = 0;
		err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_QKEY);
		check(!err, "modify-init", "got %d", err);
		a.qp_state = IBV_QPS_RTS;
		err = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		check(err == EINVAL, "modify-init-to-rts", "got %d", err);
		a.qp_state = IBV_QPS_RTR;
		err = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 7;
		err = err ? err : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
		check(!err, "modify-rtr-rts", "got %d", err);
	}
	{
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
					  .grh = { .sgid_index = 1, .hop_limit = 64 } };
		struct post p = { .qp = qp };
		struct ibv_wc wc;
		struct in_addr ip;
		int i, n = 0;

		inet_pton(AF_INET, peer, &ip);
		aa.grh.dgid.raw[10] = aa.grh.dgid.raw[11] = 0xff;
		memcpy(&aa.grh.dgid.raw[12], &ip, 4);
		p.ah = ibv_create_ah(r.pd, &aa);
		check(p.ah != NULL, "ah-ipv4", "errno %d", errno);
		aa.grh.dgid.raw[10] = 0;
		errno = 0;
		check(!ibv_create_ah(r.pd, &aa) && errno == EINVAL, "ah-not-ipv4-refused",
		      "errno %d", errno);
		if (!p.ah)
			goto out;
		err = post_one(&p, "to the peer");
		for (i = 0; !err && !n && i < 1000000; i++)
			n = ibv_poll_cq(r.cq, 1, &wc);
		check(!err && n == 1 && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_SEND, "send-completes", "err %d n %d status %d",
		      err, n, n == 1 ? (int)wc.status : -1);
		/* the route is known now: the child goes straight to the rings */
		st = in_child(child_posts, &p);
		check(st == 128 + SIGSEGV, "post-from-another-process", "child ended %d", st);
		err = post_one(&p, "to the peer again");
		for (i = 0, n = 0; !err && !n && i < 1000000; i++)
			n = ibv_poll_cq(r.cq, 1, &wc);
		check(!err && n == 1 && wc.status == IBV_WC_SUCCESS, "send-after-foreign-post",
		      "err %d n %d", err, n);
		usleep(20000);	/* whatever the peer answers comes back meanwhile */
		ibv_destroy_ah(p.ah);
	}
	{
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		err = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
		check(!err && a.qp_state == IBV_QPS_RTS, "qp-intact", "err %d state %d",
		      err, a.qp_state);
	}
	err = ibv_destroy_qp(qp);
	check(!err, "qp-destroy", "got %d", err);
	qp = ud_qp(&r);
	check(qp != NULL, "qp-ud-again", "errno %d", errno);
	if (qp)
		ibv_destroy_qp(qp);
out:
	close_res(&r);
	printf("%s: %d failed\n", failures ? "FAIL" : "PASS", failures);
	return failures != 0;
}
