// SPDX-License-Identifier: MIT
/*
 * An accelerated socket: SIOCACCIO gives a row fd, whose mmap gives the
 * row's register page and the two rings (each mapped twice, back to back,
 * so that a record never wraps in virtual memory). The receive and
 * transmit paths, the sleeps in ACCIO_IOC_WAIT and transmit timestamps.
 *
 * An accelerated socket keeps its kernel socket as the fallback: datagrams
 * that arrived before acceleration, and whatever the engine passes to the
 * normal path, are read from it when the ring is empty; datagrams the
 * engine cannot send are sent through it. When the row is released while
 * the socket stays open (connect, fork), the kernel hands the datagrams
 * still in the RX ring back to the socket.
 */
#define _GNU_SOURCE
#include <endian.h>		/* byte order inline: musl's ntohl is a call */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>		/* before linux/errqueue.h */
#include <linux/errqueue.h>
#include <linux/futex.h>
#include <linux/net_tstamp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <net/if.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "mmio_fence.h"

/* ---- system calls ------------------------------------------------------ */

/*
 * The kernel's msghdr and cmsghdr have size_t lengths where musl's 64-bit
 * ones have an int and padding, which the C library clears before its
 * system calls (a program's msghdr on the stack has whatever was there).
 * The library's own calls do the same: the musl build always, the glibc
 * build when it was preloaded into a musl program (policy.c), where its
 * size_t lengths are musl's int and padding (little-endian: the low half).
 */
int accio_foreign_libc;

#if __SIZEOF_LONG__ > 4
#ifdef __GLIBC__
#define MSGHDR_PADS accio_foreign_libc
static inline void msg_pads_clear(struct msghdr *h)
{
	h->msg_iovlen = (uint32_t)h->msg_iovlen;
	h->msg_controllen = (uint32_t)h->msg_controllen;
}

static inline void cmsg_pad_clear(struct cmsghdr *cm)
{
	cm->cmsg_len = (uint32_t)cm->cmsg_len;
}
#else
#define MSGHDR_PADS 1
static inline void msg_pads_clear(struct msghdr *h)
{
	h->__pad1 = 0;
	h->__pad2 = 0;
}

static inline void cmsg_pad_clear(struct cmsghdr *cm)
{
	cm->__pad1 = 0;
}
#endif
#endif

#define SANE_CMSG_MAX 1024

ssize_t sys_sendmsg(int fd, const struct msghdr *m, int flags)
{
#ifdef MSGHDR_PADS
	union {
		struct cmsghdr align;
		unsigned char b[SANE_CMSG_MAX];
	} ctl;
	struct msghdr h;
	struct cmsghdr *cm;

	if (MSGHDR_PADS && m && (uintptr_t)m >= 4096) {
		h = *m;
		msg_pads_clear(&h);
		if (h.msg_control && h.msg_controllen) {
			if (h.msg_controllen > sizeof(ctl.b)) {
				errno = ENOMEM;
				return -1;
			}
			memcpy(ctl.b, h.msg_control, h.msg_controllen);
			h.msg_control = ctl.b;
			for (cm = CMSG_FIRSTHDR(&h); cm; cm = CMSG_NXTHDR(&h, cm))
				cmsg_pad_clear(cm);
		}
		m = &h;
	}
#endif
	return syscall(SYS_sendmsg, fd, m, flags);
}

ssize_t sys_recvmsg(int fd, struct msghdr *m, int flags)
{
#ifdef MSGHDR_PADS
	struct msghdr h;
	ssize_t r;

	if (MSGHDR_PADS && m && (uintptr_t)m >= 4096) {
		h = *m;
		msg_pads_clear(&h);
		r = syscall(SYS_recvmsg, fd, &h, flags);
		if (r >= 0) {
			m->msg_namelen = h.msg_namelen;
			m->msg_controllen = h.msg_controllen;
			m->msg_flags = h.msg_flags;
		}
		return r;
	}
#endif
	return syscall(SYS_recvmsg, fd, m, flags);
}

/* the batched calls' headers, in place (as the C library does) */
void mmsg_clear_pads(struct mmsghdr *v, unsigned int n)
{
#ifdef MSGHDR_PADS
	if (!MSGHDR_PADS || !v || (uintptr_t)v < 4096)
		return;
	for (; n; n--, v++)
		msg_pads_clear(&v->msg_hdr);
#endif
}

/* ---- the row ------------------------------------------------------------ */

static void conn_unmap(struct conn *c)
{
	if (c->r.fd >= 0)
		fd_mark_rowfd(c->r.fd, 0);
	/* the status page stays readable until the graveyard frees c */
	accio_row_retire(&c->r);
}

void stats_fill(struct conn *c, struct accio_stats *st)
{
	*st = *c->st;
	st->row = c->r.index;
	st->owner_asid = row_reg(&c->r, ACCIO_ROW_OWNER_ASID);
	st->rx_pkts = row_reg(&c->r, ACCIO_ROW_RX_PKTS);
	st->rx_bytes = row_reg(&c->r, ACCIO_ROW_RX_BYTES);
	st->rx_drops = row_reg(&c->r, ACCIO_ROW_RX_DROPS);
	st->tx_pkts = row_reg(&c->r, ACCIO_ROW_TX_PKTS);
	st->tx_bytes = row_reg(&c->r, ACCIO_ROW_TX_BYTES);
	st->tx_errors = row_reg(&c->r, ACCIO_ROW_TX_ERRORS);
	st->prot_faults = row_reg(&c->r, ACCIO_ROW_PROT_FAULTS);
}

/*
 * The interface of the local address ip (network order): its index, as
 * IP_PKTINFO reports it (0 if no interface has ip), and the largest UDP
 * payload one IPv4 frame of it carries, its MTU less 28 bytes of headers,
 * at most the engine's ACCIO_MAX_PAYLOAD (that, where the MTU is unknown).
 */
static int ifindex_of(int fd, uint32_t ip, uint32_t *max_payload)
{
	struct ifreq ifr[16];
	struct ifconf ifc = { .ifc_len = sizeof(ifr), .ifc_req = ifr };
	uint32_t most = ACCIO_MAX_PAYLOAD;
	int i, n, index = 0;

	n = syscall(SYS_ioctl, fd, SIOCGIFCONF, &ifc) < 0 ? 0 : ifc.ifc_len / sizeof(ifr[0]);
	for (i = 0; i < n; i++) {
		struct sockaddr_in *sa = (struct sockaddr_in *)&ifr[i].ifr_addr;
		struct ifreq q = ifr[i];

		if (sa->sin_family != AF_INET || sa->sin_addr.s_addr != ip)
			continue;
		if (syscall(SYS_ioctl, fd, SIOCGIFMTU, &q) == 0 && q.ifr_mtu >= 68 &&
		    (uint32_t)q.ifr_mtu - 28 < ACCIO_MAX_PAYLOAD)
			most = q.ifr_mtu - 28;
		if (syscall(SYS_ioctl, fd, SIOCGIFINDEX, &ifr[i]) == 0)
			index = ifr[i].ifr_ifindex;
		break;
	}
	/* one store: a sender on another thread sees the old or the new */
	__atomic_store_n(max_payload, most, __ATOMIC_RELAXED);
	return index;
}

/*
 * The ring for a socket buffer of bytes: the power of two at least that
 * large (Linux charges each datagram more than its record takes, so the
 * ring holds at least as many), 4 KiB to 1 MiB.
 */
uint32_t ring_size_for(int bytes)
{
	uint32_t r = 4096;

	while (r < (uint32_t)bytes && r < (1u << 20))
		r <<= 1;
	return r;
}

/*
 * Ring sizes: ACCIO_RING_BYTES where set, else the socket's buffer where
 * the program set one (SO_RCVBUF, SO_SNDBUF), else the kernel's default.
 */
static uint32_t ring_bytes(int buf)
{
	if (accio_cfg.ring_bytes)
		return accio_cfg.ring_bytes;
	return buf ? ring_size_for(buf) : 0;
}

/* Does the kernel socket hold a datagram (of any length)? No waiting. */
static int socket_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec zero = { 0, 0 };

	return syscall(SYS_ppoll, &p, 1, &zero, NULL, 0) == 1 && (p.revents & POLLIN);
}

/* Hand a bound UDP socket to the uncore. Table lock held. */
int conn_create(struct sock *s)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c) {
		errno = ENOMEM;
		return -1;
	}
	if (accio_row_open(&c->r, s->fd, 0, ring_bytes(s->rcvbuf),
			   ring_bytes(s->sndbuf)) < 0) {
		free(c);
		return -1;
	}
	c->sock = s;
	/* c->r.paths_gen is SIOCACCIO's: a change since is seen at the first send */
	c->ifindex = ifindex_of(s->fd, c->r.local_ip, &c->max_payload);
	c->row_bits = s->row_bits;
	c->hdr_bits = s->row_bits & ROW_HDR_BITS;
	c->st = &c->own_st;
	c->slot = -1;
	fd_mark_rowfd(c->r.fd, 1);
	rlock_init(&c->rx_lock);
	rlock_init(&c->tx_lock);
	c->rx_rptr = row_reg(&c->r, ACCIO_ROW_RX_RPTR);
	c->tx_wptr = row_reg(&c->r, ACCIO_ROW_TX_WPTR);
	c->tx_rptr_seen = row_reg(&c->r, ACCIO_ROW_TX_RPTR);
	c->win_next = row_reg(&c->r, ACCIO_ROW_MMIO_TX_NEXT);
	/*
	 * Datagrams that reached the socket before the row existed (or that
	 * an earlier row handed back) are older than any in the ring: they
	 * are read first. Whatever the socket holds now came before the row.
	 */
	c->kernel_pending = 1;
	c->backlog = socket_readable(s->fd);
	stats_attach(c, s->fd);
	__atomic_store_n(&s->conn, c, __ATOMIC_RELEASE);
	fd_hooks.row_moved(s, -1, c->r.fd);
	return 0;
}

/* Bind to an ephemeral port if the socket has none yet. */
int ensure_bound(int fd, uint16_t *lport)
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

static void stats_print(struct conn *c, int fd)
{
	struct accio_stats st;
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

/*
 * A released connection's memory is kept for a while: a thread that slept
 * in the kernel on it (its row fd stays alive until that thread returns)
 * wakes, takes a lock and finds it dead. Bounded: the oldest is freed once
 * 256 are kept. Table lock held.
 */
#define GRAVEYARD 256
static struct conn *graveyard[GRAVEYARD];
static unsigned int graveyard_next;

static void graveyard_add(struct conn *c)
{
	struct conn **slot = &graveyard[graveyard_next++ % GRAVEYARD];

	if (*slot)
		accio_row_forget(&(*slot)->r);
	free(*slot);
	*slot = c;
}

/*
 * Wait until the engine has taken every record of the TX ring, at most
 * ms milliseconds in all: a wait's readiness is a hint, so look again
 * after each. A stopped engine (EIO) or a signal ends it early.
 */
static void tx_drain(struct conn *c, unsigned int ms)
{
	uint64_t end = now_us() + ms * 1000ull, now;

	while (c->tx_wptr != row_reg(&c->r, ACCIO_ROW_TX_RPTR)) {
		now = now_us();
		if (now >= end ||
		    accio_row_wait(c->r.fd, ACCIO_WAIT_TX, c->r.tx_bytes,
				   (end - now + 999) / 1000) < 0)
			return;
	}
}

/*
 * The socket leaves the fast path (table lock held): datagrams already in
 * the TX ring are sent, as with a kernel socket (bounded wait until the
 * engine has taken the ring); closing the row fd frees the row, and the
 * kernel gives datagrams still in the RX ring back to the socket if it
 * stays open. closing: the socket's last descriptor goes too.
 */
void conn_release(struct sock *s, int closing)
{
	struct conn *c = __atomic_exchange_n(&s->conn, NULL, __ATOMIC_ACQ_REL);

	if (!c)
		return;
	/* threads inside a ring access finish first; later ones see dead */
	rlock_take(&c->rx_lock);
	rlock_take(&c->tx_lock);
	free(c->bounce);
	c->bounce = NULL;
	tx_drain(c, 1000);
	if (accio_cfg.print_stats)
		stats_print(c, s->fd);
	stats_detach(c);
	if (!closing)
		fd_hooks.row_moved(s, c->r.fd, -1);
	conn_unmap(c);
	c->dead = 1;
	rlock_release(&c->tx_lock);
	rlock_release(&c->rx_lock);
	graveyard_add(c);
}

/*
 * The row's frames from now on carry the TOS, TTL and DF of bits (ROW_*),
 * set in place once the TX ring's datagrams, sent with the old ones, have
 * left. 0, or -1 when they could not leave or the kernel cannot (an older
 * one): the caller then takes the kernel's path. TX lock held.
 */
int conn_set_hdr(struct conn *c, int bits)
{
	struct accio_hdr h = {
		.tos = ROW_TOS(bits), .ttl = ROW_TTL(bits), .df = !(bits & ROW_NO_DF),
	};

	bits &= ROW_HDR_BITS;
	if (bits == c->hdr_bits)
		return 0;
	tx_drain(c, 1000);
	if (c->tx_wptr != row_reg(&c->r, ACCIO_ROW_TX_RPTR) ||
	    syscall(SYS_ioctl, c->r.fd, ACCIO_IOC_HDR, &h) < 0)
		return -1;
	c->hdr_bits = bits;
	return 0;
}

/* ---- ring locks ------------------------------------------------------- */

/* Contended: mark the lock as having waiters and sleep until released. */
void rlock_take_slow(struct rlock *l)
{
	while (__atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

void rlock_wake(struct rlock *l)
{
	syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---- rings ------------------------------------------------------------ */

void rmb_io(void)
{
	rmb_io_inline();
}

uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

/*
 * The clock of a busy-wait's budget: the hart's time CSR where its
 * frequency is known (the devicetree's timebase-frequency), one
 * instruction instead of a clock_gettime system call on every check.
 */
static uint32_t tb_khz;	/* 0: not known yet, 1: not available */

uint64_t spin_clock_us(void)
{
#if defined(__riscv)
	uint64_t t;

	if (!tb_khz) {
		unsigned char be[4];
		FILE *f = fopen("/proc/device-tree/cpus/timebase-frequency", "re");
		uint32_t hz = 0;

		if (f && fread(be, 1, 4, f) == 4)
			hz = (uint32_t)be[0] << 24 | be[1] << 16 | be[2] << 8 | be[3];
		if (f)
			fclose(f);
		tb_khz = hz >= 1000000 ? hz / 1000 : 1;
	}
	if (tb_khz > 1) {
		__asm__ volatile("rdtime %0" : "=r"(t));
		return t * 1000 / tb_khz;
	}
#endif
	return now_us();
}

/* The time CSR in ns: the clock of the NIC's and the uncore's timestamps. */
uint64_t hw_clock_ns(void)
{
#if defined(__riscv)
	uint64_t t;

	spin_clock_us();	/* learns the frequency */
	if (tb_khz > 1) {
		__asm__ volatile("rdtime %0" : "=r"(t));
		return t / tb_khz * 1000000ull + t % tb_khz * 1000000ull / tb_khz;
	}
#endif
	return 0;
}

/* The deadline (in now_us() time) of a blocking call, 0 for none. */
uint64_t deadline_of(int timeo_ms)
{
	return timeo_ms > 0 ? now_us() + timeo_ms * 1000ull : 0;
}

/*
 * Sleep in the kernel until a side is ready or the deadline passes (the
 * socket's SO_RCVTIMEO/SO_SNDTIMEO); returns ACCIO_READY_* or -1 (EAGAIN
 * at the deadline, EINTR for a signal when a timeout is set, as Linux).
 * Past the deadline the kernel still takes one look (a wait of 0 ms), as
 * Linux's receive looks at its queue before it gives up: a thread that did
 * not run for longer than its timeout (a busy hart) must not report a
 * datagram that came meanwhile as missing.
 */
int conn_wait(struct conn *c, int dir, uint32_t need, uint64_t deadline)
{
	int timeout_ms = -1;
	uint64_t now;

	if (deadline) {
		now = now_us();
		timeout_ms = now >= deadline ? 0 : (int)((deadline - now + 999) / 1000);
	}
	c->st->waits++;
	/* a sender's wait holds the TX lock: not a place to end a thread */
	if (dir != ACCIO_WAIT_RX)
		return accio_row_wait(c->r.fd, dir, need, timeout_ms);
	return CANCELLABLE(accio_row_wait(c->r.fd, dir, need, timeout_ms));
}

#ifdef ACCIO_SHARED
int accio_cancels;

/* The C library's pthread_cancel(), after the flag the fast paths look at. */
int pthread_cancel(pthread_t t)
{
	static int (*real)(pthread_t);
	int (*f)(pthread_t) = __atomic_load_n(&real, __ATOMIC_ACQUIRE);

	if (!f) {
		f = (int (*)(pthread_t))dlsym(RTLD_NEXT, "pthread_cancel");
		if (!f)
			return ENOSYS;
		__atomic_store_n(&real, f, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&accio_cancels, 1, __ATOMIC_SEQ_CST);
	return f(t);
}
#else
int accio_cancels = 1;	/* linked statically: the C library's own call */
#endif

void cancel_point(void)
{
	pthread_testcancel();
}

int cancel_async(void)
{
	int type = PTHREAD_CANCEL_DEFERRED;

	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &type);
	return type;
}

void cancel_restore(int type)
{
	int e = errno;

	pthread_setcanceltype(type, &type);
	errno = e;
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

/*
 * Nothing in the RX ring? Without touching the registers of a row another
 * connection took: the look would install it again, and a program that
 * looks at many sockets (epoll_wait, a non-blocking receive on each) would
 * make its rows evict each other at every look.
 */
int rx_empty(struct conn *c)
{
	return row_rx_wptr(&c->r) == c->rx_rptr;
}

/* ---- transmit timestamps ---------------------------------------------- */

/*
 * SOF_TIMESTAMPING_TX_HARDWARE: the engine writes TX_TSTAMP together with
 * the TX_PKTS increment of each frame it sends for the row, so the stamp of
 * datagram number k is readable while TX_PKTS == k. The library keeps one
 * outstanding stamp per socket, the most recent datagram's.
 */
void tx_stamp_want(struct conn *c)
{
	if (c->sock->tstamp & SOF_TIMESTAMPING_TX_HARDWARE) {
		c->ts_seq = c->st->tx_ring + c->st->tx_mmio;
		/*
		 * SOF_TIMESTAMPING_OPT_ID: the datagram's key, as the kernel
		 * counts a UDP socket's datagrams (0 for the first): every one
		 * the connection sent, ring, window and kernel path
		 */
		c->ts_id = (uint32_t)(c->ts_seq + c->st->tx_kernel - 1);
	}
}

/* The stamp of datagram seq: 1 found, 0 not sent yet, -1 gone (overwritten). */
static int tx_stamp_read(struct conn *c, uint64_t seq, uint64_t *ns)
{
	uint64_t a, b;
	int tries;

	for (tries = 0; tries < 4; tries++) {
		a = row_reg(&c->r, ACCIO_ROW_TX_PKTS);
		*ns = row_reg(&c->r, ACCIO_ROW_TX_TSTAMP);
		b = row_reg(&c->r, ACCIO_ROW_TX_PKTS);
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
 * SO_EE_ORIGIN_TIMESTAMPING, whose ee_data is the datagram's key with
 * SOF_TIMESTAMPING_OPT_ID. Stamps of datagrams the kernel sent are in
 * the kernel's error queue.
 */
ssize_t errqueue_recv(struct conn *c, int fd, struct msghdr *msg, int flags)
{
	struct sock_extended_err ee;
	struct timespec ts[3];
	struct cmsghdr *cm;
	uint32_t id = c->ts_id;
	uint64_t ns;
	int r;

	rlock_take(&c->tx_lock);
	r = c->ts_seq && !c->dead ? tx_stamp_read(c, c->ts_seq, &ns) : 0;
	if (r) {
		c->ts_seq = 0;
		id = c->ts_id;
	}
	rlock_release(&c->tx_lock);
	if (r <= 0)
		return sys_recvmsg(fd, msg, flags);
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
	if (c->sock->tstamp & SOF_TIMESTAMPING_OPT_ID)
		ee.ee_data = id;
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
	n = sys_recvmsg(a->fd, &m, flags);
	if (n >= 0) {
		if (c)
			c->st->rx_kernel++;
		if (a->msg)
			*a->msg = m;
		else if (a->fromlen)
			*a->fromlen = m.msg_namelen;
	}
	return n;
}

/* ---- receive control messages ---------------------------------------- */

/* The control buffer being filled, as the kernel's put_cmsg() does it. */
struct cmsg_out {
	struct msghdr *msg;
	uint8_t *p;
	size_t left;
};

static void cm_put(struct cmsg_out *o, int level, int type, const void *data, size_t len)
{
	struct cmsghdr h;
	size_t cmlen = CMSG_LEN(len), space = CMSG_SPACE(len);

	if (!o->p || o->left < sizeof(h)) {
		o->msg->msg_flags |= MSG_CTRUNC;
		return;
	}
	if (o->left < cmlen) {
		o->msg->msg_flags |= MSG_CTRUNC;
		cmlen = o->left;
	}
	memset(&h, 0, sizeof(h));
	h.cmsg_len = cmlen;
	h.cmsg_level = level;
	h.cmsg_type = type;
	memcpy(o->p, &h, sizeof(h));
	memcpy(o->p + CMSG_LEN(0), data, cmlen - CMSG_LEN(0));
	if (space > o->left)
		space = o->left;
	o->p += space;
	o->left -= space;
}

/*
 * The NIC's receive time hw (ns, the uncore's clock: the time CSR's) on
 * CLOCK_REALTIME: now on that clock less how long ago hw was.
 */
static struct timespec hw_to_realtime(uint64_t hw)
{
	struct timespec rt;
	uint64_t now, ago = 0, ns;

	/*
	 * The two clocks are read back to back: the first call in a process
	 * learns the time CSR's frequency from the devicetree first (a file
	 * read, which on a busy host took tens of milliseconds between them)
	 */
	hw_clock_ns();
	clock_gettime(CLOCK_REALTIME, &rt);
	now = hw_clock_ns();
	if (now > hw)
		ago = now - hw;
	ns = (uint64_t)rt.tv_sec * 1000000000ull + rt.tv_nsec;
	ns = ago < ns ? ns - ago : 0;
	rt.tv_sec = ns / 1000000000ull;
	rt.tv_nsec = ns % 1000000000ull;
	return rt;
}

/*
 * The control messages of a datagram from the ring, in Linux's order
 * (udp_recvmsg: the socket's timestamps, then the IP level's): the form
 * and the truncation (MSG_CTRUNC) of the kernel's. hw: the record's
 * receive time.
 */
static __attribute__((noinline)) void put_cmsgs(struct conn *c, struct msghdr *msg,
						uint64_t hw, const uint8_t *hdr)
{
	struct sock *s = c->sock;
	struct cmsg_out o = { .msg = msg, .p = msg->msg_control,
			      .left = msg->msg_control ? msg->msg_controllen : 0 };
	int rxcm = s->rxcm, tsf = s->tstamp, isnew = rxcm & RXCM_TSNEW, empty = 1;
	int sw = (rxcm & (RXCM_TS | RXCM_TSNS)) || (tsf & SOF_TIMESTAMPING_RX_SOFTWARE);
	struct timespec rt = { 0, 0 }, ts[3];
	struct rec_rx h;
	int64_t t[2];
	uint32_t dip;

	rec_rx_decode_ip(hdr, &h);
	/* the datagram's destination, which is the row's address if it has one */
	dip = h.dip ? htobe32(h.dip) : c->r.local_ip;
	if (sw)
		rt = hw_to_realtime(hw);
	if (rxcm & (RXCM_TS | RXCM_TSNS)) {
		t[0] = rt.tv_sec;
		t[1] = rxcm & RXCM_TSNS ? rt.tv_nsec : rt.tv_nsec / 1000;
		cm_put(&o, SOL_SOCKET,
		       rxcm & RXCM_TSNS ? (isnew ? SO_TIMESTAMPNS_NEW : SO_TIMESTAMPNS_OLD) :
					  (isnew ? SO_TIMESTAMP_NEW : SO_TIMESTAMP_OLD),
		       t, sizeof(t));
	}
	memset(ts, 0, sizeof(ts));
	if (sw && (tsf & SOF_TIMESTAMPING_SOFTWARE)) {
		ts[0] = rt;
		empty = 0;
	}
	if (tsf & SOF_TIMESTAMPING_RX_HARDWARE) {
		ts[2].tv_sec = hw / 1000000000ull;
		ts[2].tv_nsec = hw % 1000000000ull;
		empty = 0;
	}
	if (!empty)
		cm_put(&o, SOL_SOCKET, isnew ? SO_TIMESTAMPING_NEW : SO_TIMESTAMPING_OLD,
		       ts, sizeof(ts));
	if (rxcm & RXCM_PKTINFO) {
		/* a row receives only datagrams to an address of its NIC */
		struct in_pktinfo pi = {
			.ipi_ifindex = c->ifindex,
			.ipi_spec_dst.s_addr = dip,
			.ipi_addr.s_addr = dip,
		};

		cm_put(&o, SOL_IP, IP_PKTINFO, &pi, sizeof(pi));
	}
	if (rxcm & RXCM_TTL) {
		int ttl = h.ttl;

		cm_put(&o, SOL_IP, IP_TTL, &ttl, sizeof(ttl));
	}
	if (rxcm & RXCM_TOS)
		cm_put(&o, SOL_IP, IP_TOS, &h.tos, 1);
	if (rxcm & RXCM_ORIGDST) {
		struct sockaddr_in sa = {
			.sin_family = AF_INET,
			.sin_port = c->r.local_port,
			.sin_addr.s_addr = dip,
		};

		cm_put(&o, SOL_IP, IP_ORIGDSTADDR, &sa, sizeof(sa));
	}
	msg->msg_controllen = o.p ? (size_t)(o.p - (uint8_t *)msg->msg_control) : 0;
}

/*
 * inline: part of conn_recv()'s leaf path. The common case with control
 * data - a hardware receive timestamp into a buffer large enough - is
 * written in place; everything else is put_cmsgs()'s.
 */
static inline __attribute__((always_inline)) void
put_tstamp(struct conn *c, struct msghdr *msg, uint64_t hw, const uint8_t *hdr)
{
	struct cmsghdr *cm;
	struct timespec ts[3], *t;
	int tsf = c->sock->tstamp;

	if (c->sock->rxcm || (tsf & (SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE)) ||
	    ((tsf & SOF_TIMESTAMPING_RX_HARDWARE) &&
	     (!msg->msg_control || msg->msg_controllen < CMSG_SPACE(sizeof(ts))))) {
		put_cmsgs(c, msg, hw, hdr);
		return;
	}
	if (!(tsf & SOF_TIMESTAMPING_RX_HARDWARE)) {
		msg->msg_controllen = 0;
		return;
	}
	cm = CMSG_FIRSTHDR(msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = c->sock->rxcm & RXCM_TSNEW ? SO_TIMESTAMPING_NEW : SO_TIMESTAMPING_OLD;
	cm->cmsg_len = CMSG_LEN(sizeof(ts));
	/*
	 * Control buffers are aligned for struct cmsghdr, as POSIX requires:
	 * the stamps are stored in place, software stamps zero.
	 */
	t = __builtin_assume_aligned(CMSG_DATA(cm), 8);
	t[0].tv_sec = 0;
	t[0].tv_nsec = 0;
	t[1].tv_sec = 0;
	t[1].tv_nsec = 0;
	t[2].tv_sec = hw / 1000000000ull;
	t[2].tv_nsec = hw % 1000000000ull;
	msg->msg_controllen = CMSG_SPACE(sizeof(ts));
}

/*
 * Payload copies between a ring and the program's buffer: 8 bytes a step
 * when the buffer is 8-byte aligned, as the buffers of datagram programs
 * usually are (a ring record's payload always is), the C library's memcpy
 * otherwise. For the short datagrams of request/response traffic the call
 * into the C library and its size dispatch cost more than the copy.
 */
#define COPY_WORDS_MAX 512

/*
 * The whole 8-byte words of len bytes from *w to *d, both aligned; the
 * pointers move past them and the rest (len % 8) is returned. Inline into
 * the leaf paths, and a loop rather than a memcpy call.
 */
static inline __attribute__((always_inline)) size_t
copy_words(uint64_t **dp, const uint64_t **wp, size_t len)
{
	uint64_t *d = *dp, w0, w1, w2, w3;
	const uint64_t *w = *wp;

	for (; len >= 32; len -= 32) {
		w0 = w[0];
		w1 = w[1];
		w2 = w[2];
		w3 = w[3];
		d[0] = w0;
		d[1] = w1;
		d[2] = w2;
		d[3] = w3;
		d += 4;
		w += 4;
		/* keep the compiler from making the loop a memcpy call */
		__asm__("" : "+r"(d), "+r"(w));
	}
	for (; len >= 8; len -= 8) {
		*d++ = *w++;
		__asm__("" : "+r"(d), "+r"(w));
	}
	*dp = d;
	*wp = w;
	return len;
}

static inline void copy_payload(void *dst, const void *src, size_t len)
{
	uint64_t *d = dst;
	const uint64_t *w = src;
	uint8_t *db;
	const uint8_t *sb;

	if ((((uintptr_t)dst | (uintptr_t)src) & 7) || len > COPY_WORDS_MAX) {
		memcpy(dst, src, len);
		return;
	}
	len = copy_words(&d, &w, len);
	db = (uint8_t *)d;
	sb = (const uint8_t *)w;
	for (; len; len--) {
		*db++ = *sb++;
		__asm__("" : "+r"(db), "+r"(sb));
	}
}

static ssize_t ring_recv(struct conn *c, struct rx_args *a)
{
	uint8_t hdr[ACCIO_RX_HDR] HDR_ALIGN;
	struct rec_rx h;
	uint16_t len, sport;
	uint32_t sip;
	uint64_t ts, ptr;
	size_t done = 0, n;
	int i;

	rmb_io();
	ring_read_hdr(c->r.rx, c->r.rx_bytes, c->rx_rptr, hdr, sizeof(hdr));
	rec_rx_decode(hdr, &h);
	len = h.len;
	sport = h.sport;
	sip = h.sip;
	ts = h.tstamp;
	ptr = c->rx_rptr + ACCIO_RX_HDR;
	if (bad_iov(a->iov, a->iovcnt)) {
		/* the kernel drops a datagram it cannot copy out, too */
		if (!(a->flags & MSG_PEEK)) {
			c->rx_rptr += rec_rx_bytes(len);
			row_reg_write(&c->r, ACCIO_ROW_RX_RPTR, c->rx_rptr);
		}
		errno = EFAULT;
		return -1;
	}
	for (i = 0; i < a->iovcnt && done < len; i++) {
		n = a->iov[i].iov_len < len - done ? a->iov[i].iov_len : len - done;
		copy_payload(a->iov[i].iov_base,
			     c->r.rx + ((ptr + done) & (c->r.rx_bytes - 1)), n);
		done += n;
	}
	if (a->from && a->fromlen) {
		struct sockaddr_in sa = {
			.sin_family = AF_INET,
			.sin_port = htobe16(sport),
			.sin_addr.s_addr = htobe32(sip),
		};
		socklen_t l = *a->fromlen < sizeof(sa) ? *a->fromlen : sizeof(sa);

		memcpy(a->from, &sa, l);
		*a->fromlen = sizeof(sa);
	}
	if (a->msg) {
		a->msg->msg_flags = (done < len ? MSG_TRUNC : 0) | (a->flags & MSG_CMSG_CLOEXEC);
		put_tstamp(c, a->msg, ts, hdr);
	}
	if (!(a->flags & MSG_PEEK)) {
		c->rx_rptr += rec_rx_bytes(len);
		row_reg_write(&c->r, ACCIO_ROW_RX_RPTR, c->rx_rptr);
		c->st->rx_ring++;
	}
	return (a->flags & MSG_TRUNC) ? len : done;
}

/*
 * ACCIO_SPIN_US=auto: spin-then-block with a budget learnt per connection.
 * Each receive that found the ring empty measures how long the datagram
 * took to come (spinning or asleep); while the recent average is under the
 * limit (auto:MAX, default 50 us) the next empty ring is polled for twice
 * that average before the thread sleeps, beyond it the thread sleeps at
 * once. A connection starts sleeping: nothing is known of its peer yet.
 */
static int auto_spin_us(struct conn *c)
{
	int avg = (int)c->wait_avg_us;	/* at most 1e6 */

	if (!accio_cfg.spin_auto || !avg || avg > accio_cfg.spin_auto)
		return 0;
	return 2 * avg < accio_cfg.spin_auto ? 2 * avg : accio_cfg.spin_auto;
}

/* A receive waited us microseconds for its datagram. */
static inline void auto_learn(struct conn *c, uint64_t us)
{
	uint64_t w = us + 1;		/* 0 means "unknown" */

	if (w > 1000000)
		w = 1000000;
	c->wait_avg_us = c->wait_avg_us ? (3 * (uint64_t)c->wait_avg_us + w) / 4 : w;
}

static void auto_spin_learn(struct conn *c, uint64_t from)
{
	if (accio_cfg.spin_auto && from)
		auto_learn(c, spin_clock_us() - from);
}

/*
 * The kernel socket's receiving side is shut (shutdown(SHUT_RD), perhaps
 * by a call the library did not see): the row's wait reports the socket
 * readable though nothing is queued, and a receive that would block
 * returns 0 at once, as the kernel's does.
 */
static int rcv_shut(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	return syscall(SYS_ppoll, &p, 1, &(struct timespec){ 0, 0 }, NULL, 0) == 1 &&
	       (p.revents & POLLRDHUP);
}

/*
 * The general receive. wait_now: called by conn_recv() with the RX lock
 * held after it found the ring empty (and spun, where the program asked
 * for it): sleep at once.
 */
static __attribute__((noinline)) ssize_t recv_general(struct conn *c, struct rx_args *a,
						       int wait_now)
{
	int nonblock = c->sock->nonblock || (a->flags & MSG_DONTWAIT);
	uint64_t deadline = deadline_of(c->sock->rcvtimeo);
	uint64_t wait_from = 0;
	ssize_t n;
	int ready, spin, empty;

	if (wait_now) {
		/* the leaf found the ring empty at rx_wait_from (auto) */
		wait_from = c->rx_wait_from;
		c->rx_wait_from = 0;
	}

	/*
	 * Only flags that change a UDP receive leave the ring: MSG_OOB (an
	 * error at once) and MSG_ERRQUEUE (the socket's error queue). The
	 * kernel ignores the others on a datagram socket, so must we: handing
	 * such a receive to the kernel socket would block there while the
	 * datagram waits in the ring (sockperf receives with MSG_NOSIGNAL).
	 */
	if (wait_now)
		goto wait;
	if (a->flags & (MSG_OOB | MSG_ERRQUEUE))
		return kernel_recv(c, a, a->flags);
	rlock_take(&c->rx_lock);
	for (;;) {
		if (c->dead) {
			/* released meanwhile: the socket is the kernel's again */
			rlock_release(&c->rx_lock);
			return CANCELLABLE(kernel_recv(NULL, a, a->flags));
		}
		if (c->zc_rx) {
			/* a zero-copy datagram is held: the next one is after it */
			c->rx_rptr += c->zc_rx;
			row_reg_write(&c->r, ACCIO_ROW_RX_RPTR, c->rx_rptr);
			c->zc_rx = 0;
		}
		if (c->backlog) {
			/* what came before the row, in order, before the ring */
			n = kernel_recv(c, a, a->flags | MSG_DONTWAIT);
			if (n >= 0 || errno != EAGAIN)
				goto out;
			c->backlog = 0;
		}
		if (!rx_empty(c))
			break;
		if (c->kernel_pending) {
			n = kernel_recv(c, a, a->flags | MSG_DONTWAIT);
			if (n >= 0 || errno != EAGAIN)
				goto out;
			c->kernel_pending = 0;
			if (!nonblock && rcv_shut(c->sock->fd)) {
				n = 0;
				goto out;
			}
		}
		if (nonblock) {
			/* the engine passed nothing and the ring is empty */
			n = kernel_recv(c, a, a->flags | MSG_DONTWAIT);
			goto out;
		}
		if (accio_cfg.spin_auto && !wait_from)
			wait_from = spin_clock_us();
		spin = accio_cfg.spin_us > 0 ? accio_cfg.spin_us : auto_spin_us(c);
		if (spin > 0) {
			uint64_t end = spin_clock_us() + spin;

			count_pause();
			while ((empty = rx_empty(c)) && spin_clock_us() < end)
				;
			count_resume();
			if (!empty)
				break;	/* the datagram came while spinning */
		}
wait:
		rlock_release(&c->rx_lock);
		ready = conn_wait(c, ACCIO_WAIT_RX, 0, deadline);
		rlock_take(&c->rx_lock);
		if (ready < 0 && c->dead)
			continue;	/* the row fd went with the row */
		if (ready < 0) {
			n = -1;
			goto out;
		}
		if ((ready & ACCIO_READY_NOROW) && !c->dead) {
			/*
			 * No row, its ring read: the socket's datagrams are
			 * the oldest, and the ring's registers would install
			 * the row again.
			 */
			n = kernel_recv(c, a, a->flags | MSG_DONTWAIT);
			if (n >= 0 || errno != EAGAIN)
				goto out;
		}
		if (ready & ACCIO_READY_SOCKET)
			c->kernel_pending = 1;
	}
	auto_spin_learn(c, wait_from);
	n = ring_recv(c, a);
out:
	rlock_release(&c->rx_lock);
	return n;
}

static __attribute__((noinline)) ssize_t rlock_wake_ret(struct rlock *l, ssize_t ret)
{
	rlock_wake(l);
	return ret;
}

static __attribute__((noinline)) ssize_t recv_unlock_general(struct conn *c, struct rx_args *a)
{
	rlock_release(&c->rx_lock);
	return recv_general(c, a, 0);
}

ssize_t conn_recv(struct conn *c, struct rx_args *a);

/*
 * A blocking receive found the ring empty (RX lock held, no timeout, the
 * kernel socket known empty): sleep until the row is ready, then receive
 * again from the top - in the common case conn_recv()'s leaf path.
 */
static __attribute__((noinline)) ssize_t recv_sleep(struct conn *c, struct rx_args *a)
{
	int ready;

	if (c->sock->rcvtimeo)
		return recv_general(c, a, 1);
	rlock_release(&c->rx_lock);
	ready = conn_wait(c, ACCIO_WAIT_RX, 0, 0);
	if (ready < 0 && !c->dead)
		return -1;
	if (ready > 0 && (ready & ACCIO_READY_SOCKET)) {
		ssize_t n;

		rlock_take(&c->rx_lock);
		c->kernel_pending = 1;
		if ((ready & ACCIO_READY_NOROW) && !c->dead && !c->backlog) {
			/* no row, its ring read: the socket first (recv_general) */
			n = kernel_recv(c, a, a->flags | MSG_DONTWAIT);
			if (n >= 0 || errno != EAGAIN) {
				rlock_release(&c->rx_lock);
				return n;
			}
		}
		rlock_release(&c->rx_lock);
	}
	return conn_recv(c, a);
}

/*
 * recv(), recvfrom(), recvmsg() and read(). The common case is a leaf
 * function, as conn_send(): the lock free, the datagram in the ring or
 * coming while the thread spins (ACCIO_SPIN_US, the time CSR inline), one
 * aligned buffer; then the header, the copy in 8-byte words, the source
 * address and the timestamp message, the read pointer. Everything else -
 * sleeping, the kernel path, several buffers - is recv_general()'s,
 * which starts over. ACCIO_SPIN_US=auto spins here for the budget the
 * connection has learnt, and learns from the wait.
 */
ssize_t conn_recv(struct conn *c, struct rx_args *a)
{
	struct msghdr *msg = a->msg;
	uint64_t wptr, rptr, end, now, from, ts, sz, w0;
	uint64_t *d;
	const uint64_t *w;
	uint16_t len, sport;
	uint32_t sip, mask;
	size_t n, want;
	uint8_t *rec;
	struct rec_rx h;
	int free = 0;

	if ((a->flags & (MSG_OOB | MSG_ERRQUEUE)) || a->iovcnt != 1 ||
	    !__atomic_compare_exchange_n(&c->rx_lock.v, &free, 1, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return recv_general(c, a, 0);
	if (c->dead || c->zc_rx || c->backlog)
		return recv_unlock_general(c, a);
	/* under the lock: another thread may have taken a datagram meanwhile */
	rptr = c->rx_rptr;
	wptr = row_rx_wptr(&c->r);	/* a row another took stays there */
	if (wptr == rptr) {
		if (c->kernel_pending || c->sock->nonblock || (a->flags & MSG_DONTWAIT) ||
		    ((accio_cfg.spin_us > 0 || accio_cfg.spin_auto) && tb_khz <= 1))
			return recv_unlock_general(c, a);
		if (accio_cfg.spin_us <= 0 && !accio_cfg.spin_auto)
			return recv_sleep(c, a);		/* lock held */
#if defined(__riscv)
		__asm__ volatile("rdtime %0" : "=r"(now));
#else
		now = 0;
#endif
		from = now;
		/* auto: the budget learnt, 0 (sleep at once) when none */
		end = now + (uint64_t)(accio_cfg.spin_auto ? auto_spin_us(c) : accio_cfg.spin_us) *
			    tb_khz / 1000;
		count_pause();
		while ((wptr = row_reg(&c->r, ACCIO_ROW_RX_WPTR)) == rptr) {
#if defined(__riscv)
			__asm__ volatile("rdtime %0" : "=r"(now));
#endif
			if (now >= end)
				break;
		}
		count_resume();
		if (wptr == rptr) {
			if (!accio_cfg.spin_auto)
				return recv_sleep(c, a);	/* spun enough */
			/* the sleep's general path learns from the same start */
			c->rx_wait_from = from * 1000 / tb_khz;
			return recv_general(c, a, 1);
		}
		if (accio_cfg.spin_auto)
			auto_learn(c, (now - from) * 1000 / tb_khz);
	}
	rmb_io();
	mask = c->r.rx_bytes - 1;
	rec = c->r.rx + (rptr & mask);
	rec_rx_decode(rec, &h);
	len = h.len;
	sport = h.sport;
	sip = h.sip;
	ts = h.tstamp;
	d = a->iov[0].iov_base;
	want = a->iov[0].iov_len;
	if ((uintptr_t)d < 4096 || ((uintptr_t)d & 7))
		return recv_unlock_general(c, a);	/* EFAULT or memcpy there */
	n = want < len ? want : len;
	w = __builtin_assume_aligned(c->r.rx + ((rptr + ACCIO_RX_HDR) & mask), 8);
	sz = copy_words(&d, &w, n);
	if (sz) {
		uint8_t *db = (uint8_t *)d;

		for (w0 = *w; sz; sz--, w0 >>= 8) {
			*db++ = w0;
			__asm__("" : "+r"(db));
		}
	}
	if (a->from && a->fromlen) {
		struct sockaddr_in *sa = a->from;

		if (*a->fromlen >= sizeof(*sa)) {
			sa->sin_family = AF_INET;
			sa->sin_port = htobe16(sport);
			sa->sin_addr.s_addr = htobe32(sip);
			memset(sa->sin_zero, 0, sizeof(sa->sin_zero));
		} else {
			struct sockaddr_in tmp = {
				.sin_family = AF_INET,
				.sin_port = htobe16(sport),
				.sin_addr.s_addr = htobe32(sip),
			};
			uint8_t *o = (uint8_t *)sa;
			const uint8_t *i = (const uint8_t *)&tmp;
			socklen_t k;

			for (k = 0; k < *a->fromlen; k++) {
				o[k] = i[k];
				__asm__("" : "+r"(o));
			}
		}
		*a->fromlen = sizeof(*sa);
	}
	if (msg) {
		msg->msg_flags = (n < len ? MSG_TRUNC : 0) | (a->flags & MSG_CMSG_CLOEXEC);
		put_tstamp(c, msg, ts, rec);
	}
	if (!(a->flags & MSG_PEEK)) {
		c->rx_rptr = rptr + rec_rx_bytes(len);
		row_reg_write(&c->r, ACCIO_ROW_RX_RPTR, c->rx_rptr);
		c->st->rx_ring++;
	}
	if (__atomic_exchange_n(&c->rx_lock.v, 0, __ATOMIC_RELEASE) == 2)
		return rlock_wake_ret(&c->rx_lock, (a->flags & MSG_TRUNC) ? len : n);
	return (a->flags & MSG_TRUNC) ? len : n;
}

/* ---- transmit --------------------------------------------------------- */

/*
 * A route or the MTU changed (the status page's paths_gen moved): what the
 * connection learnt of its paths no longer holds. The destinations are
 * asked again as they are sent to; the connected peer now, as the leaf
 * send needs its answer (the row takes the first next hop asked for after
 * the change); the largest datagram follows the MTU as it is now.
 */
void paths_renew(struct conn *c)
{
	uint32_t gen = row_paths_gen(&c->r);
	struct accio_route r = { .ip = c->r.remote_ip };
	int i;

	if (c->dead)
		return;		/* released: the send finds it so under its lock */
	for (i = 0; i < NDEST; i++)
		c->dests[i].state = DEST_FREE;
	c->ifindex = ifindex_of(c->sock->fd, c->r.local_ip, &c->max_payload);
	if (c->r.remote_ip)
		c->remote_kernel = syscall(SYS_ioctl, c->r.fd, ACCIO_IOC_ROUTE, &r) != 0;
	__atomic_store_n(&c->r.paths_gen, gen, __ATOMIC_RELEASE);
}

/* May the engine carry a datagram to ip? One ioctl per new destination. */
int dest_ok(struct conn *c, uint32_t ip)
{
	struct accio_route r = { .ip = ip };
	int i, state;

	if (!ip || ip == c->r.remote_ip)
		return c->r.remote_ip ? !c->remote_kernel : 0;
	for (i = 0; i < NDEST; i++)
		if (c->dests[i].state != DEST_FREE && c->dests[i].ip == ip)
			return c->dests[i].state == DEST_OK;
	state = syscall(SYS_ioctl, c->r.fd, ACCIO_IOC_ROUTE, &r) == 0 ?
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
	c->tx_rptr_seen = row_reg(&c->r, ACCIO_ROW_TX_RPTR);
	return c->tx_wptr - c->tx_rptr_seen;
}

/* Room for rec bytes in the TX ring, waiting if allowed. 0 or -1. */
int tx_room(struct conn *c, uint32_t rec, int nonblock)
{
	uint64_t deadline;
	int spun = 0;

	/* the engine's read pointer only moves forward: the last one seen */
	if (c->tx_wptr + rec - c->tx_rptr_seen <= c->r.tx_bytes)
		return 0;
	deadline = deadline_of(c->sock->sndtimeo);
	while (tx_used(c) + rec > c->r.tx_bytes) {
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
		/* spin once, up to ACCIO_SPIN_US, then sleep */
		if (accio_cfg.spin_us > 0 && !spun) {
			uint64_t end = spin_clock_us() + accio_cfg.spin_us;

			count_pause();
			while (tx_used(c) + rec > c->r.tx_bytes && spin_clock_us() < end)
				;
			count_resume();
			spun = 1;
			continue;
		}
		if (conn_wait(c, ACCIO_WAIT_TX, rec, deadline) < 0)
			return -1;
	}
	return 0;
}

void tx_publish(struct conn *c, uint32_t rec)
{
	c->tx_wptr += rec;
	wmb_io();
	row_reg_write(&c->r, ACCIO_ROW_TX_WPTR, c->tx_wptr);
	row_doorbell(&c->r);
}

/* Direct MMIO transmit: 8-byte stores into the row's window. */
static void mmio_send(struct conn *c, const uint8_t *hdr,
		      const struct iovec *iov, int iovcnt, size_t len)
{
	uint8_t buf[WIN_BYTES];
	uint32_t rec = rec_tx_bytes(len), i;
	volatile uint64_t *win = c->r.regs + ACCIO_ROW_MMIO_TX / 8;
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
	c->st->tx_mmio++;
}

static ssize_t kernel_send(struct conn *c, int fd, const struct msghdr *m, int flags)
{
	ssize_t n = sys_sendmsg(fd, m, flags);

	if (n >= 0)
		c->st->tx_kernel++;
	return n;
}

/*
 * Control messages a datagram may carry on the ring: IP_PKTINFO that names
 * the row's own source - address 0 or the row's, interface 0 or the row's
 * (what a server that answers from the address a query came to passes) -,
 * IP_TOS and IP_TTL (*tos, *ttl: the row's header for this datagram; an
 * ECN-capable sender marks every datagram so), and UDP_SEGMENT (*gso: the
 * send is cut into datagrams of that size, as QUIC stacks send). Anything
 * else, and malformed ones (the kernel's errors), go to the kernel.
 */
static int tx_cmsgs_ok(struct conn *c, const struct msghdr *m, uint16_t *gso,
		       int *tos, int *ttl)
{
	const uint8_t *p = m->msg_control, *end = p + m->msg_controllen;
	struct cmsghdr h;
	struct in_pktinfo pi;

	if (m->msg_controllen && !p)
		return 0;
	while ((size_t)(end - p) >= sizeof(h)) {
		memcpy(&h, p, sizeof(h));
		if (h.cmsg_len < sizeof(h) || h.cmsg_len > (size_t)(end - p))
			return 0;
		if (h.cmsg_level == SOL_UDP && h.cmsg_type == UDP_SEGMENT &&
		    h.cmsg_len == CMSG_LEN(sizeof(*gso))) {
			/* the send is cut into datagrams of this size */
			memcpy(gso, p + CMSG_LEN(0), sizeof(*gso));
		} else if (h.cmsg_level != SOL_IP) {
			return 0;
		} else if (h.cmsg_type == IP_TOS || h.cmsg_type == IP_TTL) {
			/* this datagram's TOS byte or TTL; what the kernel refuses goes there */
			int v = -1;
			uint8_t b;

			if (h.cmsg_len == CMSG_LEN(sizeof(v))) {
				memcpy(&v, p + CMSG_LEN(0), sizeof(v));
			} else if (h.cmsg_type == IP_TOS && h.cmsg_len == CMSG_LEN(1)) {
				memcpy(&b, p + CMSG_LEN(0), 1);
				v = b;
			}
			if (v < (h.cmsg_type == IP_TTL) || v > 255)
				return 0;
			*(h.cmsg_type == IP_TOS ? tos : ttl) = v;
		} else if (h.cmsg_type != IP_PKTINFO || h.cmsg_len != CMSG_LEN(sizeof(pi))) {
			return 0;
		} else {
			memcpy(&pi, p + CMSG_LEN(0), sizeof(pi));
			if ((pi.ipi_ifindex && pi.ipi_ifindex != c->ifindex) ||
			    (pi.ipi_spec_dst.s_addr && pi.ipi_spec_dst.s_addr != c->r.local_ip))
				return 0;
		}
		if (CMSG_ALIGN(h.cmsg_len) >= (size_t)(end - p))
			break;
		p += CMSG_ALIGN(h.cmsg_len);
	}
	return 1;
}

/*
 * The len bytes of m into the TX ring as datagrams of seg bytes and the
 * rest (seg = len: one; a UDP_SEGMENT control message: several), one record
 * each, all in the ring or none, as the kernel sends them all or fails.
 * TX lock held; released.
 */
static ssize_t send_records(struct conn *c, int fd, const struct msghdr *m, int flags,
			    size_t len, size_t seg, uint32_t ip, uint16_t port, int nonblock)
{
	uint8_t hdr[ACCIO_TX_HDR] HDR_ALIGN;
	size_t nseg = len ? (len + seg - 1) / seg : 1, last = len - (nseg - 1) * seg;
	size_t k, n, take, done, off = 0;
	uint32_t total = (nseg - 1) * rec_tx_bytes(seg) + rec_tx_bytes(last);
	uint64_t w;
	int i = 0;

	if (total > c->r.tx_bytes) {
		rlock_release(&c->tx_lock);
		return kernel_send(c, fd, m, flags);
	}
	if (tx_room(c, total, nonblock) < 0) {
		rlock_release(&c->tx_lock);
		return -1;
	}
	w = c->tx_wptr;
	for (k = 0; k < nseg; k++) {
		n = k + 1 < nseg ? seg : last;
		rec_tx_encode(hdr, n, ip, port);
		ring_write_hdr(c->r.tx, c->r.tx_bytes, w, hdr, ACCIO_TX_HDR);
		for (done = 0; done < n; done += take) {
			while (off == m->msg_iov[i].iov_len) {
				i++;
				off = 0;
			}
			take = m->msg_iov[i].iov_len - off;
			if (take > n - done)
				take = n - done;
			ring_write(c->r.tx, c->r.tx_bytes, w + ACCIO_TX_HDR + done,
				   (const uint8_t *)m->msg_iov[i].iov_base + off, take);
			off += take;
		}
		w += rec_tx_bytes(n);
	}
	tx_publish(c, total);
	c->st->tx_ring += nseg;
	tx_stamp_want(c);
	rlock_release(&c->tx_lock);
	return len;
}

ssize_t conn_sendmsg(struct conn *c, int fd, const struct msghdr *m, int flags)
{
	const struct sockaddr_in *to = m->msg_name;
	uint8_t hdr[ACCIO_TX_HDR] HDR_ALIGN;
	uint32_t ip;
	uint16_t port, gso = 0;
	size_t len = 0;
	int i, nonblock, tos = -1, ttl = -1, want;

	if (paths_moved(c))
		paths_renew(c);
	for (i = 0; i < (int)m->msg_iovlen; i++)
		len += m->msg_iov[i].iov_len;
	if (flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL) ||
	    (m->msg_controllen && !tx_cmsgs_ok(c, m, &gso, &tos, &ttl)))
		return kernel_send(c, fd, m, flags);
	if (gso && len <= gso)
		gso = 0;	/* one datagram, as the kernel sends it */
	/*
	 * Segments larger than a frame, or more than the kernel's 64: the
	 * kernel's error
	 */
	if ((gso ? gso > c->max_payload || len > 64 * (size_t)gso : len > c->max_payload))
		return kernel_send(c, fd, m, flags);
	if (bad_iov(m->msg_iov, m->msg_iovlen)) {
		errno = EFAULT;
		return -1;
	}
	if (to) {
		if (m->msg_namelen < sizeof(*to) || to->sin_family != AF_INET)
			return kernel_send(c, fd, m, flags);
		ip = to->sin_addr.s_addr;
		port = to->sin_port;
		if (!port || !dest_ok(c, ip))
			return kernel_send(c, fd, m, flags);
	} else {
		if (!c->r.remote_ip) {
			errno = EDESTADDRREQ;
			return -1;
		}
		if (c->remote_kernel)
			return kernel_send(c, fd, m, flags);
		ip = 0;
		port = 0;
	}
	nonblock = c->sock->nonblock || (flags & MSG_DONTWAIT);
	rlock_take(&c->tx_lock);
	if (c->dead) {
		rlock_release(&c->tx_lock);
		return sys_sendmsg(fd, m, flags);
	}
	/* the header this datagram asks for: its control messages', else the socket's */
	want = c->row_bits;
	if (tos >= 0)
		want = (want & ~(0xff << ROW_TOS_SHIFT)) | tos << ROW_TOS_SHIFT;
	if (ttl >= 0)
		want = (want & ~(0xff << ROW_TTL_SHIFT)) | ttl << ROW_TTL_SHIFT;
	if ((want & ROW_HDR_BITS) != c->hdr_bits && conn_set_hdr(c, want) < 0) {
		rlock_release(&c->tx_lock);
		return kernel_send(c, fd, m, flags);
	}
	if (!gso && (int)len <= accio_cfg.mmio_max) {
		rec_tx_encode(hdr, len, ip, port);
		mmio_send(c, hdr, m->msg_iov, m->msg_iovlen, len);
		tx_stamp_want(c);
		rlock_release(&c->tx_lock);
		return len;
	}
	return send_records(c, fd, m, flags, len, gso ? gso : len, ip, port, nonblock);
}


static __attribute__((noinline)) ssize_t
send_general(struct conn *c, int fd, const void *buf, size_t len, int flags,
	     const struct sockaddr *to, socklen_t tolen)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = {
		.msg_name = (void *)to, .msg_namelen = to ? tolen : 0,
		.msg_iov = &iov, .msg_iovlen = 1,
	};

	return conn_sendmsg(c, fd, &m, flags);
}

static __attribute__((noinline)) ssize_t
send_unlock_general(struct conn *c, int fd, const void *buf, size_t len, int flags,
		    const struct sockaddr *to, socklen_t tolen)
{
	rlock_release(&c->tx_lock);
	return send_general(c, fd, buf, len, flags, to, tolen);
}

/*
 * send(), sendto() and write(): one buffer. The common case of a
 * request/response program - a datagram to the connected peer from an
 * 8-byte aligned buffer, room in the TX ring as far as the engine's read
 * pointer last seen shows (it only moves forward), the lock free - is a
 * leaf function: lookups, a record header word, the copy in 8-byte words,
 * the write pointer and the doorbell. Anything else goes to conn_sendmsg().
 */
ssize_t conn_send(struct conn *c, int fd, const void *buf, size_t len, int flags,
		  const struct sockaddr *to, socklen_t tolen)
{
	uint32_t rec = rec_tx_bytes(len), mask;
	uint64_t *d, w0, wptr;
	const uint64_t *w;
	size_t n;
	int free = 0;

	if ((flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL)) || to || !c->r.remote_ip ||
	    paths_moved(c) || c->remote_kernel ||
	    c->hdr_bits != (c->row_bits & ROW_HDR_BITS) ||
	    len > c->max_payload || (int)len <= accio_cfg.mmio_max ||
	    ((uintptr_t)buf & 7) || (len && (uintptr_t)buf < 4096) ||
	    !__atomic_compare_exchange_n(&c->tx_lock.v, &free, 1, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return send_general(c, fd, buf, len, flags, to, tolen);
	wptr = c->tx_wptr;
	if (c->dead || wptr + rec - c->tx_rptr_seen > c->r.tx_bytes)
		return send_unlock_general(c, fd, buf, len, flags, to, tolen);
	mask = c->r.tx_bytes - 1;
	/* the header: port and address 0, the connected peer */
	rec_tx_encode(c->r.tx + (wptr & mask), len, 0, 0);
	d = __builtin_assume_aligned(c->r.tx + ((wptr + ACCIO_TX_HDR) & mask), 8);
	w = buf;
	n = copy_words(&d, &w, len);
	if (n) {
		/* the record is padded to 8 bytes: the last word in part */
		const uint8_t *b = (const uint8_t *)w;
		size_t i;

		for (w0 = 0, i = 0; i < n; i++) {
			w0 |= (uint64_t)b[i] << (8 * i);
			__asm__("" : "+r"(b));
		}
		*d = w0;
	}
	tx_publish(c, rec);
	c->st->tx_ring++;
	if (c->sock->tstamp & SOF_TIMESTAMPING_TX_HARDWARE)
		tx_stamp_want(c);
	if (__atomic_exchange_n(&c->tx_lock.v, 0, __ATOMIC_RELEASE) == 2)
		return rlock_wake_ret(&c->tx_lock, len);
	return len;
}
