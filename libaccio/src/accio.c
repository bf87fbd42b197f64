// SPDX-License-Identifier: MIT
/*
 * libaccio: the POSIX UDP fast path on the Accio uncore.
 *
 * Every call the library takes over falls back to the kernel through
 * syscall(), so it works the same linked statically, dynamically or
 * preloaded. An accelerated socket keeps its kernel socket as the
 * fallback: datagrams that arrived before acceleration, and whatever the
 * engine passes to the normal path, are read from it when the ring is
 * empty; datagrams the engine cannot send are sent through it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/accio.h>
#include <time.h>		/* before linux/errqueue.h */
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "accio.h"

#define MAX_FDS		1024
#define NDEST		16
#define PAD8(x)		(((x) + 7u) & ~7u)
#define WIN_BYTES	ACCIO_ROW_MMIO_TX_BYTES

enum { DEST_FREE, DEST_OK, DEST_KERNEL };

struct dest {
	uint32_t ip;		/* network order */
	int state;
};

struct conn {
	int fd, rowfd;
	volatile uint64_t *regs;
	uint8_t *rx, *tx;
	uint32_t rx_bytes, tx_bytes;
	uint64_t rx_rptr, tx_wptr, win_next;
	uint32_t rip;		/* connected peer, network order; 0: none */
	uint16_t rport;
	uint32_t row;
	int kernel_pending;	/* the kernel socket may hold datagrams */
	uint8_t *zc_tx;		/* outstanding zero-copy TX buffer */
	uint32_t zc_len;	/* its size */
	uint32_t zc_rx;		/* bytes of the held zero-copy RX record */
	uint64_t ts_seq;	/* engine datagram awaiting its TX stamp, 0: none */
	uint8_t *bounce;	/* zero-copy receive of a kernel-path datagram */
	int bounce_held;
	struct dest dests[NDEST];
	pthread_mutex_t rx_lock, tx_lock;
	struct accio_stats st;
};

/* Per-fd state, owned by this process (not inherited across fork). */
static struct conn *conns[MAX_FDS];
static int fd_nonblock[MAX_FDS];	/* O_NONBLOCK as the app set it */
static char fd_udp[MAX_FDS];		/* a UDP/IPv4 socket */
static char fd_tried[MAX_FDS];		/* acceleration attempted */
static int fd_rcvtimeo[MAX_FDS];	/* SO_RCVTIMEO in ms, 0: none */
static int fd_sndtimeo[MAX_FDS];	/* SO_SNDTIMEO in ms, 0: none */
static int fd_tstamp[MAX_FDS];		/* SO_TIMESTAMPING flags */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static int policy_all, policy_none = 1, spin_us, mmio_max, print_stats;
static unsigned int ring_bytes;
static uint16_t policy_ports[32];
static int npolicy_ports;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Epoll registrations of UDP sockets, moved to the row fd on acceleration. */
struct ep_reg {
	int epfd, fd;
	struct epoll_event ev;
	int fired;		/* EPOLLONESHOT reported, until EPOLL_CTL_MOD */
};
static struct ep_reg ep_regs[256];
static int nep_regs;

/* ---- setup ----------------------------------------------------------- */

static void read_policy(const char *s)
{
	char *end;

	policy_all = 0;
	policy_none = 0;
	npolicy_ports = 0;
	if (!s || !strcmp(s, "none") || !*s) {
		policy_none = 1;
		return;
	}
	if (!strcmp(s, "all")) {
		policy_all = 1;
		return;
	}
	while (*s && npolicy_ports < 32) {
		unsigned long p = strtoul(s, &end, 10);

		if (end == s || p > 65535) {
			fprintf(stderr, "libaccio: bad ACCIO_ACCEL port list\n");
			policy_none = 1;
			return;
		}
		policy_ports[npolicy_ports++] = p;
		s = *end == ',' ? end + 1 : end;
	}
}

static void init(void)
{
	const char *s = getenv("ACCIO_ACCEL");

#ifdef ACCIO_SHARED
	read_policy(s ? s : "all");	/* preloaded into an unmodified binary */
#else
	read_policy(s ? s : "none");	/* linked in: the app opts in itself */
#endif
	s = getenv("ACCIO_SPIN_US");
	spin_us = s ? atoi(s) : 0;
	s = getenv("ACCIO_MMIO_TX_MAX");
	mmio_max = s ? atoi(s) : 0;
	if (mmio_max > WIN_BYTES - ACCIO_TX_HDR)
		mmio_max = WIN_BYTES - ACCIO_TX_HDR;
	s = getenv("ACCIO_RING_BYTES");
	ring_bytes = s ? strtoul(s, NULL, 0) : 0;
	s = getenv("ACCIO_STATS");
	print_stats = s && *s == '1';
}

static void lib_init(void)
{
	pthread_once(&init_once, init);
}

static int policy_wants(uint16_t lport, uint16_t rport)
{
	int i;

	lib_init();
	if (policy_none)
		return 0;
	if (policy_all)
		return 1;
	for (i = 0; i < npolicy_ports; i++)
		if (policy_ports[i] == lport || (rport && policy_ports[i] == rport))
			return 1;
	return 0;
}

static struct conn *conn_of(int fd)
{
	return fd >= 0 && fd < MAX_FDS ? __atomic_load_n(&conns[fd], __ATOMIC_ACQUIRE) : NULL;
}

static void conn_unmap(struct conn *c)
{
	if (c->regs)
		munmap((void *)c->regs, 4096);
	if (c->rx)
		munmap(c->rx, 2 * c->rx_bytes);
	if (c->tx)
		munmap(c->tx, 2 * c->tx_bytes);
	if (c->rowfd >= 0)
		syscall(SYS_close, c->rowfd);
}

static void stats_fill(struct conn *c, struct accio_stats *st)
{
	*st = c->st;
	st->row = c->row;
	st->owner_asid = c->regs[ACCIO_ROW_OWNER_ASID / 8];
	st->rx_pkts = c->regs[ACCIO_ROW_RX_PKTS / 8];
	st->rx_bytes = c->regs[ACCIO_ROW_RX_BYTES / 8];
	st->rx_drops = c->regs[ACCIO_ROW_RX_DROPS / 8];
	st->tx_pkts = c->regs[ACCIO_ROW_TX_PKTS / 8];
	st->tx_bytes = c->regs[ACCIO_ROW_TX_BYTES / 8];
	st->tx_errors = c->regs[ACCIO_ROW_TX_ERRORS / 8];
	st->prot_faults = c->regs[ACCIO_ROW_PROT_FAULTS / 8];
}

static void epoll_migrate(int fd, int rowfd);

/*
 * Map a ring twice, back to back, so that every record (and every
 * zero-copy buffer) is contiguous in virtual memory even where it wraps.
 */
static uint8_t *map_ring(int rowfd, uint64_t off, uint32_t size)
{
	uint8_t *base = mmap(NULL, 2 * (size_t)size, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (base == MAP_FAILED)
		return NULL;
	if (mmap(base, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 rowfd, off) == MAP_FAILED ||
	    mmap(base + size, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, rowfd, off) == MAP_FAILED) {
		munmap(base, 2 * (size_t)size);
		return NULL;
	}
	return base;
}

/* Hand a bound UDP socket to the uncore. */
static int do_accelerate(int fd)
{
	struct accio_accel a;
	struct conn *c;
	void *p;

	memset(&a, 0, sizeof(a));
	a.version = ACCIO_UAPI_VERSION;
	a.rx_bytes = ring_bytes;
	a.tx_bytes = ring_bytes;
	if (syscall(SYS_ioctl, fd, SIOCACCIO, &a) < 0)
		return -1;
	c = calloc(1, sizeof(*c));
	if (!c)
		goto fail_fd;
	c->fd = fd;
	c->rowfd = a.fd;
	c->rx_bytes = a.rx_bytes;
	c->tx_bytes = a.tx_bytes;
	c->row = a.row;
	c->rip = a.remote_ip;
	c->rport = a.remote_port;
	pthread_mutex_init(&c->rx_lock, NULL);
	pthread_mutex_init(&c->tx_lock, NULL);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	c->regs = p;
	c->rx = map_ring(a.fd, a.rx_offset, a.rx_bytes);
	c->tx = map_ring(a.fd, a.tx_offset, a.tx_bytes);
	if (!c->rx || !c->tx)
		goto fail;
	c->rx_rptr = c->regs[ACCIO_ROW_RX_RPTR / 8];
	c->tx_wptr = c->regs[ACCIO_ROW_TX_WPTR / 8];
	c->win_next = c->regs[ACCIO_ROW_MMIO_TX_NEXT / 8];
	/* datagrams that reached the socket before the row existed */
	c->kernel_pending = 1;
	__atomic_store_n(&conns[fd], c, __ATOMIC_RELEASE);
	epoll_migrate(fd, c->rowfd);
	return 0;
fail:
	conn_unmap(c);
	free(c);
	return -1;
fail_fd:
	syscall(SYS_close, a.fd);
	errno = ENOMEM;
	return -1;
}

/* Bind to an ephemeral port if the socket has none yet. */
static int ensure_bound(int fd, uint16_t *lport)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	if (syscall(SYS_getsockname, fd, &sa, &sl) < 0)
		return -1;
	if (!sa.sin_port) {
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		if (syscall(SYS_bind, fd, &sa, sizeof(sa)) < 0)
			return -1;
		sl = sizeof(sa);
		if (syscall(SYS_getsockname, fd, &sa, &sl) < 0)
			return -1;
	}
	*lport = ntohs(sa.sin_port);
	return 0;
}

/* Policy-driven acceleration, tried once per socket. */
static void maybe_accelerate(int fd)
{
	struct sockaddr_in peer;
	socklen_t pl = sizeof(peer);
	uint16_t lport, rport = 0;
	int saved = errno;

	if (fd < 0 || fd >= MAX_FDS || !fd_udp[fd] || conns[fd])
		return;
	pthread_mutex_lock(&table_lock);
	if (fd_tried[fd] || conns[fd]) {
		pthread_mutex_unlock(&table_lock);
		return;
	}
	fd_tried[fd] = 1;
	if (syscall(SYS_getpeername, fd, &peer, &pl) == 0)
		rport = ntohs(peer.sin_port);
	if (ensure_bound(fd, &lport) == 0 && policy_wants(lport, rport))
		do_accelerate(fd);
	pthread_mutex_unlock(&table_lock);
	errno = saved;
}

int accio_accelerate(int fd)
{
	uint16_t lport;
	int err;

	lib_init();
	if (fd < 0 || fd >= MAX_FDS) {
		errno = EBADF;
		return -1;
	}
	if (conns[fd]) {
		errno = EALREADY;
		return -1;
	}
	if (ensure_bound(fd, &lport) < 0)
		return -1;
	pthread_mutex_lock(&table_lock);
	err = do_accelerate(fd);
	fd_tried[fd] = 1;
	pthread_mutex_unlock(&table_lock);
	return err;
}

int accio_is_accelerated(int fd)
{
	return conn_of(fd) != NULL;
}

int accio_stats(int fd, struct accio_stats *st)
{
	struct conn *c = conn_of(fd);

	if (!c) {
		errno = EBADF;
		return -1;
	}
	stats_fill(c, st);
	return 0;
}

static void conn_drop(int fd)
{
	struct conn *c;
	struct accio_stats st;

	if (fd < 0 || fd >= MAX_FDS)
		return;
	c = __atomic_exchange_n(&conns[fd], NULL, __ATOMIC_ACQ_REL);
	fd_udp[fd] = 0;
	fd_tried[fd] = 0;
	if (!c)
		return;
	/*
	 * Datagrams already queued are sent, as with a kernel socket: wait
	 * (bounded) until the engine has taken the whole TX ring.
	 */
	free(c->bounce);
	if (c->tx_wptr != c->regs[ACCIO_ROW_TX_RPTR / 8]) {
		struct accio_wait w = { .dir = ACCIO_WAIT_TX,
					.need = c->tx_bytes, .timeout_ms = 1000 };

		syscall(SYS_ioctl, c->rowfd, ACCIO_IOC_WAIT, &w);
	}
	if (print_stats) {
		char line[384];
		int len;

		stats_fill(c, &st);
		/* one write, so that lines of concurrent processes stay whole */
		len = snprintf(line, sizeof(line),
			"accio: fd=%d row=%u rx_pkts=%llu tx_pkts=%llu rx_drops=%llu "
			"rx_ring=%llu tx_ring=%llu tx_mmio=%llu rx_kernel=%llu "
			"tx_kernel=%llu waits=%llu prot_faults=%llu\n",
			fd, st.row, (unsigned long long)st.rx_pkts,
			(unsigned long long)st.tx_pkts,
			(unsigned long long)st.rx_drops,
			(unsigned long long)st.rx_ring,
			(unsigned long long)st.tx_ring,
			(unsigned long long)st.tx_mmio,
			(unsigned long long)st.rx_kernel,
			(unsigned long long)st.tx_kernel,
			(unsigned long long)st.waits,
			(unsigned long long)st.prot_faults);
		if (len > 0)
			syscall(SYS_write, 2, line, (size_t)len);
	}
	conn_unmap(c);
	free(c);
}

static void stats_at_exit(void)
{
	int fd;

	for (fd = 0; fd < MAX_FDS; fd++)
		if (conns[fd])
			conn_drop(fd);
}

/* A forked child has neither the row mappings nor the rows. */
static void atfork_child(void)
{
	int fd;

	for (fd = 0; fd < MAX_FDS; fd++) {
		if (conns[fd]) {
			free(conns[fd]);
			conns[fd] = NULL;
			fd_tried[fd] = 1;
		}
	}
}

__attribute__((constructor)) static void accio_ctor(void)
{
	lib_init();
	pthread_atfork(NULL, NULL, atfork_child);
	atexit(stats_at_exit);
}

/* ---- rings ------------------------------------------------------------ */

/* The rings are mapped twice in a row: a record never needs splitting. */
static void ring_read(const uint8_t *ring, uint32_t size, uint64_t ptr,
		      void *dst, size_t len)
{
	memcpy(dst, ring + (ptr & (size - 1)), len);
}

static void ring_write(uint8_t *ring, uint32_t size, uint64_t ptr,
		       const void *src, size_t len)
{
	memcpy(ring + (ptr & (size - 1)), src, len);
}

/* Stores to the ring reach memory before the MMIO store that publishes. */
static inline void wmb_io(void)
{
#if defined(__riscv)
	__asm__ volatile("fence w,o" ::: "memory");
#else
	__sync_synchronize();
#endif
}

static inline void rmb_io(void)
{
#if defined(__riscv)
	__asm__ volatile("fence i,r" ::: "memory");
#else
	__sync_synchronize();
#endif
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

/* The deadline (in now_us() time) of a blocking call, 0 for none. */
static uint64_t deadline_of(int timeo_ms)
{
	return timeo_ms > 0 ? now_us() + timeo_ms * 1000ull : 0;
}

/*
 * Sleep in the kernel until a side is ready or the deadline passes (the
 * socket's SO_RCVTIMEO/SO_SNDTIMEO); returns ACCIO_READY_* or -1 (EAGAIN
 * at the deadline, EINTR for a signal when a timeout is set, as Linux).
 */
static int conn_wait(struct conn *c, int dir, uint32_t need, uint64_t deadline)
{
	struct accio_wait w = { .dir = dir, .need = need, .timeout_ms = -1 };
	uint64_t now;

	if (deadline) {
		now = now_us();
		if (now >= deadline) {
			errno = EAGAIN;
			return -1;
		}
		w.timeout_ms = (deadline - now + 999) / 1000;
	}
	c->st.waits++;
	if (syscall(SYS_ioctl, c->rowfd, ACCIO_IOC_WAIT, &w) < 0)
		return -1;
	return w.ready;
}

/* Buffers in the first page are never valid: EFAULT, as from the kernel. */
static int bad_iov(const struct iovec *iov, int iovcnt)
{
	int i;

	for (i = 0; i < iovcnt; i++)
		if (iov[i].iov_len && (uintptr_t)iov[i].iov_base < 4096)
			return 1;
	return 0;
}

static int rx_empty(struct conn *c)
{
	return c->regs[ACCIO_ROW_RX_WPTR / 8] == c->rx_rptr;
}

/* ---- transmit timestamps ---------------------------------------------- */

/*
 * SOF_TIMESTAMPING_TX_HARDWARE: the engine writes TX_TSTAMP together with
 * the TX_PKTS increment of each frame it sends for the row, so the stamp of
 * datagram number k is readable while TX_PKTS == k. The library keeps one
 * outstanding stamp per socket, the most recent datagram's.
 */
static void tx_stamp_want(struct conn *c)
{
	if (fd_tstamp[c->fd] & SOF_TIMESTAMPING_TX_HARDWARE)
		c->ts_seq = c->st.tx_ring + c->st.tx_mmio;
}

/* The stamp of datagram seq: 1 found, 0 not sent yet, -1 gone (overwritten). */
static int tx_stamp_read(struct conn *c, uint64_t seq, uint64_t *ns)
{
	uint64_t a, b;
	int tries;

	for (tries = 0; tries < 4; tries++) {
		a = c->regs[ACCIO_ROW_TX_PKTS / 8];
		*ns = c->regs[ACCIO_ROW_TX_TSTAMP / 8];
		b = c->regs[ACCIO_ROW_TX_PKTS / 8];
		if (a != b)
			continue;
		return a == seq ? 1 : a < seq ? 0 : -1;
	}
	return 0;
}

/*
 * recvmsg(MSG_ERRQUEUE): the transmit timestamp as Linux reports it with
 * SOF_TIMESTAMPING_OPT_TSONLY: no payload, an SCM_TIMESTAMPING message
 * (hardware time in ts[2]) and an IP_RECVERR message of origin
 * SO_EE_ORIGIN_TIMESTAMPING. Stamps of datagrams the kernel sent are in
 * the kernel's error queue.
 */
static ssize_t errqueue_recv(struct conn *c, struct msghdr *msg, int flags)
{
	struct sock_extended_err ee;
	struct timespec ts[3];
	struct cmsghdr *cm;
	uint64_t ns;
	int r;

	pthread_mutex_lock(&c->tx_lock);
	r = c->ts_seq ? tx_stamp_read(c, c->ts_seq, &ns) : 0;
	if (r)
		c->ts_seq = 0;
	pthread_mutex_unlock(&c->tx_lock);
	if (r <= 0)
		return syscall(SYS_recvmsg, c->fd, msg, flags);
	if (!msg->msg_control ||
	    msg->msg_controllen < CMSG_SPACE(sizeof(ts)) + CMSG_SPACE(sizeof(ee))) {
		msg->msg_flags = MSG_ERRQUEUE | MSG_CTRUNC;
		msg->msg_controllen = 0;
		return 0;
	}
	memset(ts, 0, sizeof(ts));
	ts[2].tv_sec = ns / 1000000000ull;
	ts[2].tv_nsec = ns % 1000000000ull;
	memset(&ee, 0, sizeof(ee));
	ee.ee_errno = ENOMSG;
	ee.ee_origin = SO_EE_ORIGIN_TIMESTAMPING;
	ee.ee_info = SCM_TSTAMP_SND;
	cm = CMSG_FIRSTHDR(msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SO_TIMESTAMPING;
	cm->cmsg_len = CMSG_LEN(sizeof(ts));
	memcpy(CMSG_DATA(cm), ts, sizeof(ts));
	cm = (struct cmsghdr *)((char *)cm + CMSG_SPACE(sizeof(ts)));
	cm->cmsg_level = SOL_IP;
	cm->cmsg_type = IP_RECVERR;
	cm->cmsg_len = CMSG_LEN(sizeof(ee));
	memcpy(CMSG_DATA(cm), &ee, sizeof(ee));
	msg->msg_controllen = CMSG_SPACE(sizeof(ts)) + CMSG_SPACE(sizeof(ee));
	msg->msg_flags = MSG_ERRQUEUE;
	msg->msg_namelen = 0;
	return 0;
}

/* ---- receive ---------------------------------------------------------- */

struct rx_args {
	struct iovec *iov;
	int iovcnt;
	int flags;
	struct sockaddr_in *from;
	socklen_t *fromlen;
	struct msghdr *msg;	/* for msg_flags and control data */
};

static ssize_t kernel_recv(struct conn *c, struct rx_args *a, int flags)
{
	struct msghdr m;
	ssize_t n;

	if (a->msg) {
		m = *a->msg;
	} else {
		memset(&m, 0, sizeof(m));
		m.msg_iov = a->iov;
		m.msg_iovlen = a->iovcnt;
		m.msg_name = a->from;
		m.msg_namelen = a->fromlen ? *a->fromlen : 0;
	}
	n = syscall(SYS_recvmsg, c->fd, &m, flags);
	if (n >= 0) {
		c->st.rx_kernel++;
		if (a->msg)
			*a->msg = m;
		else if (a->fromlen)
			*a->fromlen = m.msg_namelen;
	}
	return n;
}

static void put_tstamp(struct conn *c, struct msghdr *msg, uint64_t hw)
{
	struct cmsghdr *cm;
	struct timespec ts[3];

	if (!msg || !msg->msg_control)
		return;
	if (!(fd_tstamp[c->fd] & SOF_TIMESTAMPING_RX_HARDWARE) ||
	    msg->msg_controllen < CMSG_SPACE(sizeof(ts))) {
		msg->msg_controllen = 0;
		return;
	}
	memset(ts, 0, sizeof(ts));
	ts[2].tv_sec = hw / 1000000000ull;
	ts[2].tv_nsec = hw % 1000000000ull;
	cm = CMSG_FIRSTHDR(msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SO_TIMESTAMPING;
	cm->cmsg_len = CMSG_LEN(sizeof(ts));
	memcpy(CMSG_DATA(cm), ts, sizeof(ts));
	msg->msg_controllen = CMSG_SPACE(sizeof(ts));
}

static ssize_t ring_recv(struct conn *c, struct rx_args *a)
{
	uint8_t hdr[ACCIO_RX_HDR];
	uint16_t len, sport;
	uint32_t sip;
	uint64_t ts, ptr;
	size_t done = 0, n;
	int i;

	rmb_io();
	ring_read(c->rx, c->rx_bytes, c->rx_rptr, hdr, sizeof(hdr));
	memcpy(&len, hdr, 2);
	memcpy(&sport, hdr + 2, 2);
	memcpy(&sip, hdr + 4, 4);
	memcpy(&ts, hdr + 8, 8);
	ptr = c->rx_rptr + ACCIO_RX_HDR;
	if (bad_iov(a->iov, a->iovcnt)) {
		/* the kernel drops a datagram it cannot copy out, too */
		if (!(a->flags & MSG_PEEK)) {
			c->rx_rptr += PAD8(ACCIO_RX_HDR + len);
			c->regs[ACCIO_ROW_RX_RPTR / 8] = c->rx_rptr;
		}
		errno = EFAULT;
		return -1;
	}
	for (i = 0; i < a->iovcnt && done < len; i++) {
		n = a->iov[i].iov_len < len - done ? a->iov[i].iov_len : len - done;
		ring_read(c->rx, c->rx_bytes, ptr + done, a->iov[i].iov_base, n);
		done += n;
	}
	if (a->from && a->fromlen) {
		struct sockaddr_in sa = {
			.sin_family = AF_INET,
			.sin_port = htons(sport),
			.sin_addr.s_addr = htonl(sip),
		};
		socklen_t l = *a->fromlen < sizeof(sa) ? *a->fromlen : sizeof(sa);

		memcpy(a->from, &sa, l);
		*a->fromlen = sizeof(sa);
	}
	if (a->msg) {
		a->msg->msg_flags = done < len ? MSG_TRUNC : 0;
		put_tstamp(c, a->msg, ts);
	}
	if (!(a->flags & MSG_PEEK)) {
		c->rx_rptr += PAD8(ACCIO_RX_HDR + len);
		c->regs[ACCIO_ROW_RX_RPTR / 8] = c->rx_rptr;
		c->st.rx_ring++;
	}
	return (a->flags & MSG_TRUNC) ? len : done;
}

static ssize_t conn_recv(struct conn *c, struct rx_args *a)
{
	int nonblock = fd_nonblock[c->fd] || (a->flags & MSG_DONTWAIT);
	uint64_t deadline = deadline_of(fd_rcvtimeo[c->fd]);
	ssize_t n;
	int ready;

	/*
	 * Only flags that change a UDP receive leave the ring: MSG_OOB (an
	 * error at once) and MSG_ERRQUEUE (the socket's error queue). The
	 * kernel ignores the others on a datagram socket, so must we: handing
	 * such a receive to the kernel socket would block there while the
	 * datagram waits in the ring (sockperf receives with MSG_NOSIGNAL).
	 */
	if (a->flags & (MSG_OOB | MSG_ERRQUEUE))
		return kernel_recv(c, a, a->flags);
	pthread_mutex_lock(&c->rx_lock);
	for (;;) {
		if (c->zc_rx) {
			/* a zero-copy datagram is held: the next one is after it */
			c->rx_rptr += c->zc_rx;
			c->regs[ACCIO_ROW_RX_RPTR / 8] = c->rx_rptr;
			c->zc_rx = 0;
		}
		if (!rx_empty(c)) {
			n = ring_recv(c, a);
			break;
		}
		if (c->kernel_pending) {
			n = kernel_recv(c, a, a->flags | MSG_DONTWAIT);
			if (n >= 0 || errno != EAGAIN)
				break;
			c->kernel_pending = 0;
		}
		if (nonblock) {
			/* the engine passed nothing and the ring is empty */
			n = kernel_recv(c, a, a->flags | MSG_DONTWAIT);
			break;
		}
		if (spin_us > 0) {
			uint64_t end = now_us() + spin_us;

			while (rx_empty(c) && now_us() < end)
				;
			if (!rx_empty(c))
				continue;
		}
		pthread_mutex_unlock(&c->rx_lock);
		ready = conn_wait(c, ACCIO_WAIT_RX, 0, deadline);
		pthread_mutex_lock(&c->rx_lock);
		if (ready < 0) {
			n = -1;
			break;
		}
		if (ready & ACCIO_READY_SOCKET)
			c->kernel_pending = 1;
	}
	pthread_mutex_unlock(&c->rx_lock);
	return n;
}

/* ---- transmit --------------------------------------------------------- */

/* May the engine carry a datagram to ip? One ioctl per new destination. */
static int dest_ok(struct conn *c, uint32_t ip)
{
	struct accio_route r = { .ip = ip };
	int i, state;

	if (!ip || ip == c->rip)
		return !!c->rip || ip;
	for (i = 0; i < NDEST; i++)
		if (c->dests[i].state != DEST_FREE && c->dests[i].ip == ip)
			return c->dests[i].state == DEST_OK;
	state = syscall(SYS_ioctl, c->rowfd, ACCIO_IOC_ROUTE, &r) == 0 ?
		DEST_OK : DEST_KERNEL;
	for (i = 0; i < NDEST; i++) {
		if (c->dests[i].state == DEST_FREE) {
			c->dests[i].ip = ip;
			c->dests[i].state = state;
			break;
		}
	}
	if (i == NDEST) {	/* table full: recycle a slot */
		i = ip % NDEST;
		c->dests[i].ip = ip;
		c->dests[i].state = state;
	}
	return state == DEST_OK;
}

static uint64_t tx_used(struct conn *c)
{
	return c->tx_wptr - c->regs[ACCIO_ROW_TX_RPTR / 8];
}

/* Room for rec bytes in the TX ring, waiting if allowed. 0 or -1. */
static int tx_room(struct conn *c, uint32_t rec, int nonblock)
{
	uint64_t deadline = deadline_of(fd_sndtimeo[c->fd]);

	while (tx_used(c) + rec > c->tx_bytes) {
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
		if (spin_us > 0) {
			uint64_t end = now_us() + spin_us;

			while (tx_used(c) + rec > c->tx_bytes && now_us() < end)
				;
			continue;
		}
		if (conn_wait(c, ACCIO_WAIT_TX, rec, deadline) < 0)
			return -1;
	}
	return 0;
}

static void tx_publish(struct conn *c, uint32_t rec)
{
	c->tx_wptr += rec;
	wmb_io();
	c->regs[ACCIO_ROW_TX_WPTR / 8] = c->tx_wptr;
	c->regs[ACCIO_ROW_DOORBELL / 8] = 1;
}

static void make_txhdr(uint8_t *hdr, size_t len, uint32_t ip, uint16_t port)
{
	uint16_t l = len, p = ntohs(port);
	uint32_t d = ntohl(ip);

	memcpy(hdr, &l, 2);
	memcpy(hdr + 2, &p, 2);
	memcpy(hdr + 4, &d, 4);
}

/* Direct MMIO transmit: 8-byte stores into the row's window. */
static void mmio_send(struct conn *c, const uint8_t *hdr,
		      const struct iovec *iov, int iovcnt, size_t len)
{
	uint8_t buf[WIN_BYTES];
	uint32_t rec = PAD8(ACCIO_TX_HDR + len), i;
	volatile uint64_t *win = c->regs + ACCIO_ROW_MMIO_TX / 8;
	size_t done = 0;
	uint64_t w;
	int k;

	memcpy(buf, hdr, ACCIO_TX_HDR);
	for (k = 0; k < iovcnt; k++) {
		memcpy(buf + ACCIO_TX_HDR + done, iov[k].iov_base, iov[k].iov_len);
		done += iov[k].iov_len;
	}
	memset(buf + ACCIO_TX_HDR + len, 0, rec - ACCIO_TX_HDR - len);
	for (i = 0; i < rec; i += 8) {
		memcpy(&w, buf + i, 8);
		win[((c->win_next + i) % WIN_BYTES) / 8] = w;
	}
	c->win_next += rec;
	c->st.tx_mmio++;
}

static ssize_t kernel_send(struct conn *c, const struct msghdr *m, int flags)
{
	ssize_t n = syscall(SYS_sendmsg, c->fd, m, flags);

	if (n >= 0)
		c->st.tx_kernel++;
	return n;
}

static ssize_t conn_sendmsg(struct conn *c, const struct msghdr *m, int flags)
{
	const struct sockaddr_in *to = m->msg_name;
	uint8_t hdr[ACCIO_TX_HDR];
	uint32_t ip, rec;
	uint16_t port;
	size_t len = 0, done = 0;
	int i, nonblock;

	for (i = 0; i < (int)m->msg_iovlen; i++)
		len += m->msg_iov[i].iov_len;
	if (flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL) || m->msg_controllen ||
	    len > ACCIO_MAX_PAYLOAD)
		return kernel_send(c, m, flags);
	if (bad_iov(m->msg_iov, m->msg_iovlen)) {
		errno = EFAULT;
		return -1;
	}
	if (to) {
		if (m->msg_namelen < sizeof(*to) || to->sin_family != AF_INET)
			return kernel_send(c, m, flags);
		ip = to->sin_addr.s_addr;
		port = to->sin_port;
		if (!port || !dest_ok(c, ip))
			return kernel_send(c, m, flags);
	} else {
		if (!c->rip) {
			errno = EDESTADDRREQ;
			return -1;
		}
		ip = 0;
		port = 0;
	}
	nonblock = fd_nonblock[c->fd] || (flags & MSG_DONTWAIT);
	make_txhdr(hdr, len, ip, port);
	rec = PAD8(ACCIO_TX_HDR + len);
	pthread_mutex_lock(&c->tx_lock);
	if ((int)len <= mmio_max) {
		mmio_send(c, hdr, m->msg_iov, m->msg_iovlen, len);
		tx_stamp_want(c);
		pthread_mutex_unlock(&c->tx_lock);
		return len;
	}
	if (tx_room(c, rec, nonblock) < 0) {
		pthread_mutex_unlock(&c->tx_lock);
		return -1;
	}
	ring_write(c->tx, c->tx_bytes, c->tx_wptr, hdr, ACCIO_TX_HDR);
	for (i = 0; i < (int)m->msg_iovlen; i++) {
		ring_write(c->tx, c->tx_bytes, c->tx_wptr + ACCIO_TX_HDR + done,
			   m->msg_iov[i].iov_base, m->msg_iov[i].iov_len);
		done += m->msg_iov[i].iov_len;
	}
	tx_publish(c, rec);
	c->st.tx_ring++;
	tx_stamp_want(c);
	pthread_mutex_unlock(&c->tx_lock);
	return len;
}

/* ---- zero copy -------------------------------------------------------- */

void *accio_zc_alloc(int fd, size_t len)
{
	struct conn *c = conn_of(fd);
	uint32_t rec, off;

	if (!c) {
		errno = EBADF;
		return NULL;
	}
	if (len > ACCIO_MAX_PAYLOAD) {
		errno = EMSGSIZE;
		return NULL;
	}
	rec = PAD8(ACCIO_TX_HDR + len);
	pthread_mutex_lock(&c->tx_lock);
	if (tx_room(c, rec, fd_nonblock[fd]) < 0) {
		pthread_mutex_unlock(&c->tx_lock);
		return NULL;
	}
	off = (c->tx_wptr + ACCIO_TX_HDR) & (c->tx_bytes - 1);
	c->zc_tx = c->tx + off;
	c->zc_len = len;
	pthread_mutex_unlock(&c->tx_lock);
	return c->zc_tx;
}

ssize_t accio_zc_send(int fd, void *buf, size_t len,
		      const struct sockaddr_in *dst)
{
	struct conn *c = conn_of(fd);
	uint8_t hdr[ACCIO_TX_HDR];
	uint32_t ip = 0;
	uint16_t port = 0;

	if (!c) {
		errno = EBADF;
		return -1;
	}
	pthread_mutex_lock(&c->tx_lock);
	if (!c->zc_tx || buf != c->zc_tx || len > c->zc_len) {
		pthread_mutex_unlock(&c->tx_lock);
		errno = EINVAL;
		return -1;
	}
	if (dst) {
		ip = dst->sin_addr.s_addr;
		port = dst->sin_port;
		if (dst->sin_family != AF_INET || !port || !dest_ok(c, ip)) {
			pthread_mutex_unlock(&c->tx_lock);
			errno = EINVAL;
			return -1;
		}
	} else if (!c->rip) {
		pthread_mutex_unlock(&c->tx_lock);
		errno = EDESTADDRREQ;
		return -1;
	}
	make_txhdr(hdr, len, ip, port);
	ring_write(c->tx, c->tx_bytes, c->tx_wptr, hdr, ACCIO_TX_HDR);
	c->zc_tx = NULL;
	tx_publish(c, PAD8(ACCIO_TX_HDR + len));
	c->st.tx_ring++;
	tx_stamp_want(c);
	pthread_mutex_unlock(&c->tx_lock);
	return len;
}

/* A datagram from the kernel socket into the connection's bounce buffer. */
static ssize_t zc_kernel(struct conn *c, const void **buf,
			 struct sockaddr_in *src, uint64_t *hw_time_ns)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	ssize_t n;

	if (!c->bounce && !(c->bounce = malloc(65536))) {
		errno = ENOMEM;
		return -1;
	}
	n = syscall(SYS_recvfrom, c->fd, c->bounce, 65536, MSG_DONTWAIT, &sa, &sl);
	if (n < 0)
		return -1;
	*buf = c->bounce;
	c->bounce_held = 1;
	if (src)
		*src = sa;
	if (hw_time_ns)
		*hw_time_ns = 0;	/* the kernel path's time is not kept */
	c->st.rx_kernel++;
	return n;
}

ssize_t accio_zc_recv(int fd, const void **buf, struct sockaddr_in *src,
		      uint64_t *hw_time_ns)
{
	struct conn *c = conn_of(fd);
	uint8_t hdr[ACCIO_RX_HDR];
	uint16_t len, sport;
	uint32_t sip, off;
	int ready;

	if (!c) {
		errno = EBADF;
		return -1;
	}
	pthread_mutex_lock(&c->rx_lock);
	if (c->zc_rx) {
		c->rx_rptr += c->zc_rx;
		c->regs[ACCIO_ROW_RX_RPTR / 8] = c->rx_rptr;
		c->zc_rx = 0;
	}
	c->bounce_held = 0;
	while (rx_empty(c)) {
		if (c->kernel_pending || fd_nonblock[fd]) {
			/* the kernel socket's datagrams: from a private buffer */
			ssize_t n = zc_kernel(c, buf, src, hw_time_ns);

			if (n >= 0 || errno != EAGAIN || fd_nonblock[fd]) {
				pthread_mutex_unlock(&c->rx_lock);
				return n;
			}
			c->kernel_pending = 0;
		}
		pthread_mutex_unlock(&c->rx_lock);
		ready = conn_wait(c, ACCIO_WAIT_RX, 0, 0);
		pthread_mutex_lock(&c->rx_lock);
		if (ready < 0) {
			pthread_mutex_unlock(&c->rx_lock);
			return -1;
		}
		if (ready & ACCIO_READY_SOCKET)
			c->kernel_pending = 1;
	}
	rmb_io();
	ring_read(c->rx, c->rx_bytes, c->rx_rptr, hdr, sizeof(hdr));
	memcpy(&len, hdr, 2);
	memcpy(&sport, hdr + 2, 2);
	memcpy(&sip, hdr + 4, 4);
	off = (c->rx_rptr + ACCIO_RX_HDR) & (c->rx_bytes - 1);
	*buf = c->rx + off;
	if (src) {
		memset(src, 0, sizeof(*src));
		src->sin_family = AF_INET;
		src->sin_port = htons(sport);
		src->sin_addr.s_addr = htonl(sip);
	}
	if (hw_time_ns)
		memcpy(hw_time_ns, hdr + 8, 8);
	c->zc_rx = PAD8(ACCIO_RX_HDR + len);
	c->st.rx_ring++;
	pthread_mutex_unlock(&c->rx_lock);
	return len;
}

int accio_zc_release(int fd, const void *buf)
{
	struct conn *c = conn_of(fd);
	uint32_t off;

	if (!c) {
		errno = EBADF;
		return -1;
	}
	pthread_mutex_lock(&c->rx_lock);
	if (c->bounce_held && buf == c->bounce) {
		c->bounce_held = 0;
		pthread_mutex_unlock(&c->rx_lock);
		return 0;
	}
	off = (c->rx_rptr + ACCIO_RX_HDR) & (c->rx_bytes - 1);
	if (!c->zc_rx || buf != c->rx + off) {
		pthread_mutex_unlock(&c->rx_lock);
		errno = EINVAL;
		return -1;
	}
	c->rx_rptr += c->zc_rx;
	c->regs[ACCIO_ROW_RX_RPTR / 8] = c->rx_rptr;
	c->zc_rx = 0;
	pthread_mutex_unlock(&c->rx_lock);
	return 0;
}

/* ---- the POSIX calls -------------------------------------------------- */

int socket(int domain, int type, int protocol)
{
	int fd = syscall(SYS_socket, domain, type, protocol);

	if (fd >= 0 && fd < MAX_FDS) {
		fd_udp[fd] = domain == AF_INET &&
			     (type & 0xf) == SOCK_DGRAM &&
			     (protocol == 0 || protocol == IPPROTO_UDP);
		fd_tried[fd] = 0;
		fd_nonblock[fd] = !!(type & SOCK_NONBLOCK);
		fd_rcvtimeo[fd] = 0;
		fd_sndtimeo[fd] = 0;
		fd_tstamp[fd] = 0;
		conns[fd] = NULL;
	}
	return fd;
}

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	int r = syscall(SYS_bind, fd, sa, len);

	if (r == 0)
		maybe_accelerate(fd);
	return r;
}

int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct conn *c = conn_of(fd);
	int r;

	if (c) {
		/* the row holds the old 5-tuple: rebuild it */
		pthread_mutex_lock(&table_lock);
		conn_drop(fd);
		fd_udp[fd] = 1;
		pthread_mutex_unlock(&table_lock);
	}
	r = syscall(SYS_connect, fd, sa, len);
	if (r == 0)
		maybe_accelerate(fd);
	return r;
}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	struct conn *c = conn_of(fd);

	if (!c && fd >= 0 && fd < MAX_FDS && fd_udp[fd] && !fd_tried[fd]) {
		maybe_accelerate(fd);
		c = conn_of(fd);
	}
	if (!c)
		return syscall(SYS_sendmsg, fd, m, flags);
	return conn_sendmsg(c, m, flags);
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags,
	       const struct sockaddr *to, socklen_t tolen)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = {
		.msg_name = (void *)to, .msg_namelen = to ? tolen : 0,
		.msg_iov = &iov, .msg_iovlen = 1,
	};
	struct conn *c = conn_of(fd);

	if (!c && !(fd >= 0 && fd < MAX_FDS && fd_udp[fd] && !fd_tried[fd]))
		return syscall(SYS_sendto, fd, buf, len, flags, to, tolen);
	return sendmsg(fd, &m, flags);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	return sendto(fd, buf, len, flags, NULL, 0);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	if (!conn_of(fd))
		return syscall(SYS_write, fd, buf, len);
	return sendto(fd, buf, len, 0, NULL, 0);
}

ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	struct conn *c = conn_of(fd);
	struct rx_args a;

	if (!c)
		return syscall(SYS_recvmsg, fd, m, flags);
	if (flags & MSG_ERRQUEUE)
		return errqueue_recv(c, m, flags);
	a.iov = m->msg_iov;
	a.iovcnt = m->msg_iovlen;
	a.flags = flags;
	a.from = m->msg_name;
	a.fromlen = m->msg_name ? &m->msg_namelen : NULL;
	a.msg = m;
	return conn_recv(c, &a);
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
		 struct sockaddr *from, socklen_t *fromlen)
{
	struct conn *c = conn_of(fd);
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct rx_args a = {
		.iov = &iov, .iovcnt = 1, .flags = flags,
		.from = (struct sockaddr_in *)from,
		.fromlen = from ? fromlen : NULL,
	};

	if (!c)
		return syscall(SYS_recvfrom, fd, buf, len, flags, from, fromlen);
	return conn_recv(c, &a);
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	return recvfrom(fd, buf, len, flags, NULL, NULL);
}

ssize_t read(int fd, void *buf, size_t len)
{
	if (!conn_of(fd))
		return syscall(SYS_read, fd, buf, len);
	return recvfrom(fd, buf, len, 0, NULL, NULL);
}

int close(int fd)
{
	int i;

	if (fd >= 0 && fd < MAX_FDS) {
		pthread_mutex_lock(&table_lock);
		conn_drop(fd);
		fd_nonblock[fd] = 0;
		fd_rcvtimeo[fd] = 0;
		fd_sndtimeo[fd] = 0;
		fd_tstamp[fd] = 0;
		for (i = 0; i < nep_regs; i++) {
			if (ep_regs[i].fd == fd || ep_regs[i].epfd == fd)
				ep_regs[i--] = ep_regs[--nep_regs];
		}
		pthread_mutex_unlock(&table_lock);
	}
	return syscall(SYS_close, fd);
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	int r = syscall(SYS_setsockopt, fd, level, name, val, len);
	const struct timeval *tv = val;

	if (r < 0 || fd < 0 || fd >= MAX_FDS || level != SOL_SOCKET)
		return r;
	if (name == SO_TIMESTAMPING && len >= sizeof(int))
		fd_tstamp[fd] = *(const int *)val;
	/* the kernel accepted it, so the value is well formed */
	if ((name == SO_RCVTIMEO || name == SO_SNDTIMEO) && len >= sizeof(*tv)) {
		long long ms = tv->tv_sec * 1000LL + (tv->tv_usec + 999) / 1000;

		if (ms > INT32_MAX || tv->tv_sec < 0)
			ms = 0;		/* negative or huge: no timeout */
		if (name == SO_RCVTIMEO)
			fd_rcvtimeo[fd] = ms;
		else
			fd_sndtimeo[fd] = ms;
	}
	return r;
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	long arg;
	int r;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	r = syscall(SYS_fcntl, fd, cmd, arg);
	if (r == 0 && cmd == F_SETFL && fd >= 0 && fd < MAX_FDS)
		fd_nonblock[fd] = !!(arg & O_NONBLOCK);
	return r;
}

/* glibc and musl declare ioctl's request differently */
#ifdef __GLIBC__
int ioctl(int fd, unsigned long req, ...)
#else
int ioctl(int fd, int req, ...)
#endif
{
	va_list ap;
	void *arg;
	int r;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == FIONREAD && conn_of(fd) && arg) {
		/* the size of the next datagram, as for a UDP socket */
		struct conn *c = conn_of(fd);
		uint16_t len;

		pthread_mutex_lock(&c->rx_lock);
		if (!c->zc_rx && !rx_empty(c)) {
			rmb_io();
			ring_read(c->rx, c->rx_bytes, c->rx_rptr, &len, 2);
			pthread_mutex_unlock(&c->rx_lock);
			*(int *)arg = len;
			return 0;
		}
		pthread_mutex_unlock(&c->rx_lock);
	}
	r = syscall(SYS_ioctl, fd, req, arg);
	if (r == 0 && req == FIONBIO && fd >= 0 && fd < MAX_FDS)
		fd_nonblock[fd] = !!*(int *)arg;
	if (r == 0 && (unsigned int)req == SIOCACCIO && fd >= 0 && fd < MAX_FDS)
		fd_tried[fd] = 1;	/* the caller manages this row itself */
	return r;
}

/* poll, select and epoll wait on the row fd: readiness from the ring. */
static int rowfd_of(int fd)
{
	struct conn *c = conn_of(fd);

	return c ? c->rowfd : fd;
}

/* poll and ppoll: the kernel waits on the row fds of accelerated sockets */
static int poll_rows(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
		     const sigset_t *ss)
{
	struct timespec ts, *tp = NULL;
	struct pollfd local[64], *p = n <= 64 ? local : malloc(n * sizeof(*p));
	nfds_t i;
	int r;

	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < n; i++) {
		p[i] = fds[i];
		p[i].fd = rowfd_of(fds[i].fd);
	}
	if (tmo) {
		ts = *tmo;		/* the kernel writes back what is left */
		tp = &ts;
	}
	r = syscall(SYS_ppoll, p, n, tp, ss, _NSIG / 8);
	for (i = 0; i < n; i++)
		fds[i].revents = p[i].revents;
	if (p != local)
		free(p);
	return r;
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct timespec ts;

	if (timeout < 0)
		return poll_rows(fds, n, NULL, NULL);
	ts.tv_sec = timeout / 1000;
	ts.tv_nsec = (timeout % 1000) * 1000000L;
	return poll_rows(fds, n, &ts, NULL);
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
	  const sigset_t *ss)
{
	return poll_rows(fds, n, tmo, ss);
}

/* select and pselect: the kernel waits on the row fds of accelerated sockets;
 * tsp (in and out) is the time left, NULL to wait without limit.
 */
static int select_rows(int n, fd_set *rd, fd_set *wr, fd_set *ex,
		       struct timespec *tsp, const sigset_t *ss)
{
	struct { const sigset_t *ss; size_t len; } mask = { ss, _NSIG / 8 };
	fd_set r2, w2, e2;
	int fd, m = 0, r, rf;

	FD_ZERO(&r2);
	FD_ZERO(&w2);
	FD_ZERO(&e2);
	for (fd = 0; fd < n && fd < FD_SETSIZE; fd++) {
		rf = rowfd_of(fd);
		if (rd && FD_ISSET(fd, rd))
			FD_SET(rf, &r2);
		if (wr && FD_ISSET(fd, wr))
			FD_SET(rf, &w2);
		if (ex && FD_ISSET(fd, ex))
			FD_SET(rf, &e2);
		if ((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) ||
		    (ex && FD_ISSET(fd, ex)))
			m = rf + 1 > m ? rf + 1 : m;
	}
	r = syscall(SYS_pselect6, m, rd ? &r2 : NULL, wr ? &w2 : NULL,
		    ex ? &e2 : NULL, tsp, ss ? &mask : NULL);
	if (r < 0)
		return r;
	for (fd = 0; fd < n && fd < FD_SETSIZE; fd++) {
		rf = rowfd_of(fd);
		if (rd && FD_ISSET(fd, rd) && !FD_ISSET(rf, &r2))
			FD_CLR(fd, rd);
		if (wr && FD_ISSET(fd, wr) && !FD_ISSET(rf, &w2))
			FD_CLR(fd, wr);
		if (ex && FD_ISSET(fd, ex) && !FD_ISSET(rf, &e2))
			FD_CLR(fd, ex);
	}
	return r;
}

int select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	struct timespec ts;
	int r;

	if (!tv)
		return select_rows(n, rd, wr, ex, NULL, NULL);
	ts.tv_sec = tv->tv_sec;
	ts.tv_nsec = tv->tv_usec * 1000;
	r = select_rows(n, rd, wr, ex, &ts, NULL);
	if (r >= 0) {
		/* Linux reports the time left */
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return r;
}

int pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex,
	    const struct timespec *tmo, const sigset_t *ss)
{
	struct timespec ts;

	if (!tmo)
		return select_rows(n, rd, wr, ex, NULL, ss);
	ts = *tmo;		/* pselect leaves the caller's timeout as it is */
	return select_rows(n, rd, wr, ex, &ts, ss);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	int r, i;

	r = syscall(SYS_epoll_ctl, epfd, op, rowfd_of(fd), ev);
	if (r < 0 || fd < 0 || fd >= MAX_FDS || !fd_udp[fd])
		return r;
	pthread_mutex_lock(&table_lock);
	for (i = 0; i < nep_regs; i++)
		if (ep_regs[i].epfd == epfd && ep_regs[i].fd == fd)
			break;
	if (op == EPOLL_CTL_DEL) {
		if (i < nep_regs)
			ep_regs[i] = ep_regs[--nep_regs];
	} else if (i < nep_regs) {
		ep_regs[i].ev = *ev;
		ep_regs[i].fired = 0;
	} else if (nep_regs < (int)(sizeof(ep_regs) / sizeof(ep_regs[0]))) {
		ep_regs[nep_regs].epfd = epfd;
		ep_regs[nep_regs].fd = fd;
		ep_regs[nep_regs].fired = 0;
		ep_regs[nep_regs++].ev = *ev;
	}
	pthread_mutex_unlock(&table_lock);
	return r;
}

/* A socket registered with epoll before acceleration moves to its row fd. */
static void epoll_migrate(int fd, int rowfd)
{
	int i;

	for (i = 0; i < nep_regs; i++) {
		if (ep_regs[i].fd != fd)
			continue;
		syscall(SYS_epoll_ctl, ep_regs[i].epfd, EPOLL_CTL_DEL, fd, NULL);
		syscall(SYS_epoll_ctl, ep_regs[i].epfd, EPOLL_CTL_ADD, rowfd,
			&ep_regs[i].ev);
	}
}

/*
 * epoll_wait on an epoll set with accelerated sockets: their readiness is
 * read from the rings first, in user space (a thread that runs has its
 * wake-ups held back by the uncore, so the kernel may not have seen the
 * data yet). Ready sockets are reported without sleeping, together with
 * whatever the kernel has ready at once; otherwise the kernel waits.
 */
static int ring_events(int epfd, struct epoll_event *evs, int max)
{
	struct conn *c;
	uint32_t want, got;
	int i, n = 0;

	if (!nep_regs)
		return 0;
	pthread_mutex_lock(&table_lock);
	for (i = 0; i < nep_regs && n < max; i++) {
		if (ep_regs[i].epfd != epfd || ep_regs[i].fired)
			continue;
		c = conn_of(ep_regs[i].fd);
		if (!c)
			continue;
		want = ep_regs[i].ev.events;
		got = 0;
		if ((want & EPOLLIN) && !c->zc_rx && !rx_empty(c))
			got |= EPOLLIN | (want & EPOLLRDNORM);
		if (!got)
			continue;
		if (want & EPOLLONESHOT)
			ep_regs[i].fired = 1;
		evs[n].events = got;
		evs[n++].data = ep_regs[i].ev.data;
	}
	pthread_mutex_unlock(&table_lock);
	return n;
}

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

/* The kernel's wait: a timeout in ms, or (ts_form) a timespec, NULL: none. */
static int epoll_sys(int epfd, struct epoll_event *evs, int max, int timeout,
		     int ts_form, const struct timespec *ts, const sigset_t *sigmask)
{
	if (ts_form)
		return syscall(SYS_epoll_pwait2, epfd, evs, max, ts, sigmask, _NSIG / 8);
	return syscall(SYS_epoll_pwait, epfd, evs, max, timeout, sigmask, _NSIG / 8);
}

static int epoll_both(int epfd, struct epoll_event *evs, int max, int timeout,
		      int ts_form, const struct timespec *ts, const sigset_t *sigmask)
{
	static const struct timespec zero;
	int n, m, i, j, k;

	if (max <= 0 || max > 65536)
		return epoll_sys(epfd, evs, max, timeout, ts_form, ts, sigmask);
	n = ring_events(epfd, evs, max);
	if (!n)
		return epoll_sys(epfd, evs, max, timeout, ts_form, ts, sigmask);
	if (n == max)
		return n;
	m = epoll_sys(epfd, evs + n, max - n, 0, ts_form, &zero, sigmask);
	if (m < 0)
		return n;
	/* a socket both sides report once, with the union of its events */
	for (i = n, k = n; i < n + m; i++) {
		for (j = 0; j < n; j++)
			if (evs[j].data.u64 == evs[i].data.u64)
				break;
		if (j < n)
			evs[j].events |= evs[i].events;
		else
			evs[k++] = evs[i];
	}
	return k;
}

int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	return epoll_both(epfd, evs, max, timeout, 0, NULL, NULL);
}

int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout,
		const sigset_t *sigmask)
{
	return epoll_both(epfd, evs, max, timeout, 0, NULL, sigmask);
}

int epoll_pwait2(int epfd, struct epoll_event *evs, int max,
		 const struct timespec *tmo, const sigset_t *sigmask)
{
	return epoll_both(epfd, evs, max, 0, 1, tmo, sigmask);
}

/* ---- vectored and batched I/O ------------------------------------------ */

ssize_t readv(int fd, const struct iovec *iov, int n)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

	if (!conn_of(fd))
		return syscall(SYS_readv, fd, iov, n);
	return recvmsg(fd, &m, 0);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

	if (!conn_of(fd))
		return syscall(SYS_writev, fd, iov, n);
	return sendmsg(fd, &m, 0);
}

/* musl and glibc declare the flags of the mmsg calls differently */
#ifdef __GLIBC__
#define MMSG_FLAGS int
#else
#define MMSG_FLAGS unsigned int
#endif

/*
 * recvmmsg on an accelerated socket: one recvmsg per message. As in the
 * kernel, later messages wait too unless MSG_DONTWAIT or MSG_WAITFORONE is
 * given, the timeout is checked after each datagram, and an error after
 * the first datagram ends the batch with the count so far.
 */
int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, MMSG_FLAGS flags,
	     struct timespec *tmo)
{
	uint64_t deadline = 0;
	unsigned int i;
	int f = (int)flags & ~MSG_WAITFORONE;
	ssize_t r;

	if (!conn_of(fd))
		return syscall(SYS_recvmmsg, fd, v, n, flags, tmo);
	if (tmo)
		deadline = now_us() + tmo->tv_sec * 1000000ull + tmo->tv_nsec / 1000;
	for (i = 0; i < n; i++) {
		r = recvmsg(fd, &v[i].msg_hdr, f);
		if (r < 0)
			return i ? (int)i : -1;
		v[i].msg_len = r;
		if ((int)flags & MSG_WAITFORONE)
			f |= MSG_DONTWAIT;
		if (deadline && now_us() >= deadline)
			return i + 1;
	}
	return n;
}

int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, MMSG_FLAGS flags)
{
	unsigned int i;
	ssize_t r;

	if (!conn_of(fd) && !(fd >= 0 && fd < MAX_FDS && fd_udp[fd] && !fd_tried[fd]))
		return syscall(SYS_sendmmsg, fd, v, n, flags);
	for (i = 0; i < n; i++) {
		r = sendmsg(fd, &v[i].msg_hdr, (int)flags);
		if (r < 0)
			return i ? (int)i : -1;
		v[i].msg_len = r;
	}
	return n;
}

/* ---- glibc's fortified entry points (_FORTIFY_SOURCE) ------------------ */

#ifdef __GLIBC__
extern void __chk_fail(void) __attribute__((noreturn));
#define chk_fail() __chk_fail()
#else
#define chk_fail() abort()
#endif

ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen)
		chk_fail();
	return recv(fd, buf, len, flags);
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
		       struct sockaddr *from, socklen_t *fromlen)
{
	if (len > buflen)
		chk_fail();
	return recvfrom(fd, buf, len, flags, from, fromlen);
}

ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		chk_fail();
	return read(fd, buf, len);
}

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		chk_fail();
	return poll(fds, n, timeout);
}

int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
		const sigset_t *ss, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		chk_fail();
	return ppoll(fds, n, tmo, ss);
}
