// SPDX-License-Identifier: MIT
/*
 * The POSIX surface libaccio takes over. Every call falls back to the
 * kernel through syscall(), so the library works the same linked
 * statically, dynamically or preloaded, and a program that resolves these
 * calls at run time (dlsym(RTLD_NEXT/RTLD_DEFAULT)) gets them too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/*
 * The accelerated connection of fd, after a first acceleration attempt for
 * a UDP socket not tried yet (may_bind: a send binds an unbound socket, as
 * the kernel would; a receive does not).
 */
static inline __attribute__((always_inline)) struct conn *conn_use(int fd, int may_bind)
{
	struct sock *s = fd_sock_classify(fd);

	if (!s)
		return NULL;
	if ((!s->tried || s->kpath == ACCIO_KPATH_SHARED) && !s->conn)
		maybe_accelerate(fd, may_bind);
	return sock_conn(s);
}

/*
 * The datagram calls' first look: a descriptor the table knows as an
 * accelerated UDP socket, with no call, so that the fast paths need no
 * stack frame. NULL sends the call to its general path.
 */
static inline struct conn *conn_fast(int fd)
{
	struct fdent *e = fd_ent(fd);
	struct sock *s;

	if (!e || e->kind != FD_UDP)
		return NULL;
	s = __atomic_load_n(&e->sock, __ATOMIC_ACQUIRE);
	return sock_conn(s);
}

/* ---- sockets ------------------------------------------------------------ */

int socket(int domain, int type, int protocol)
{
	int fd = syscall(SYS_socket, domain, type, protocol);

	if (fd >= 0)
		fd_new_socket(fd, domain, (domain == AF_INET || domain == AF_INET6) &&
				  (type & 0xf) == SOCK_DGRAM &&
				  (protocol == 0 || protocol == IPPROTO_UDP),
			      !!(type & SOCK_NONBLOCK));
	return fd;
}

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	int r = syscall(SYS_bind, fd, sa, len);

	if (r == 0)
		maybe_accelerate(fd, 1);
	return r;
}

int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct sock *s = fd_sock_classify(fd);
	int r;

	if (sock_conn(s)) {
		/* the row holds the old 5-tuple: rebuild it */
		pthread_mutex_lock(&accio_table_lock);
		conn_release(s, 0);
		s->tried = s->kpath != 0;
		pthread_mutex_unlock(&accio_table_lock);
	}
	r = CANCELLABLE(syscall(SYS_connect, fd, sa, len));
	/* connect(AF_UNSPEC) dissolves the association: no new port here */
	if (r == 0 && s && !s->tried)
		maybe_accelerate(fd, sa && len >= sizeof(sa_family_t) &&
				     sa->sa_family != AF_UNSPEC);
	return r;
}

/*
 * The socket leaves its row for good (its unread datagrams go back to the
 * kernel socket) and stays on the kernel path, for why; an IPv6 socket
 * keeps its own reason. Returns NULL, the connection its calls now use.
 */
static __attribute__((noinline)) struct conn *kernel_for_good(int fd, int why)
{
	struct sock *s = fd_sock_classify(fd);
	int saved = errno;

	if (!s || s->kpath == why || s->kpath == ACCIO_KPATH_IPV6)
		return NULL;
	pthread_mutex_lock(&accio_table_lock);
	if (s->conn)
		conn_release(s, 0);
	s->kpath = why;
	s->tried = 1;
	stats_attach_kernel(s);
	pthread_mutex_unlock(&accio_table_lock);
	errno = saved;
	return NULL;
}

/*
 * A send with MSG_MORE starts or extends a datagram that the kernel holds
 * until a send without it, and only the kernel socket can add to it, so
 * every part of every datagram goes that way (kernel:msg_more).
 */
#define more_leaves_row(fd) kernel_for_good(fd, ACCIO_KPATH_MSG_MORE)

/*
 * shutdown(): what a shut side does - a receive returns 0 once nothing is
 * queued, a send fails with EPIPE - is the kernel socket's, which also
 * wakes the threads waiting to receive; the socket leaves its row for
 * good (kernel:shutdown). As on Linux, an unconnected socket is shut
 * though the call fails with ENOTCONN.
 */
int shutdown(int fd, int how)
{
	int r = syscall(SYS_shutdown, fd, how);

	if ((r == 0 || errno == ENOTCONN) && how >= SHUT_RD && how <= SHUT_RDWR)
		kernel_for_good(fd, ACCIO_KPATH_SHUTDOWN);
	return r;
}

/* sendmsg() past its cancellation point: sendmmsg() looks once for all */
static ssize_t sendmsg_on(int fd, const struct msghdr *m, int flags)
{
	struct conn *c = (flags & MSG_MORE) ? more_leaves_row(fd) : conn_use(fd, 1);

	if (!c)
		return kernel_io(fd, 1, CANCELLABLE(sys_sendmsg(fd, m, flags)));
	return conn_sendmsg(c, fd, m, flags);
}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	CANCEL_POINT();
	return sendmsg_on(fd, m, flags);
}

static __attribute__((noinline)) ssize_t
sendto_slow(int fd, const void *buf, size_t len, int flags,
	    const struct sockaddr *to, socklen_t tolen)
{
	struct conn *c;

	CANCEL_POINT();
	c = (flags & MSG_MORE) ? more_leaves_row(fd) : conn_use(fd, 1);
	if (!c)
		return kernel_io(fd, 1, CANCELLABLE(syscall(SYS_sendto, fd, buf, len, flags,
							     to, tolen)));
	return conn_send(c, fd, buf, len, flags, to, tolen);
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags,
	       const struct sockaddr *to, socklen_t tolen)
{
	struct conn *c = conn_fast(fd);

	/* a leaf but for the general path, which looks for a cancel too */
	if (c && !(flags & MSG_MORE) && !CANCELS())
		return conn_send(c, fd, buf, len, flags, to, tolen);
	return sendto_slow(fd, buf, len, flags, to, tolen);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	return sendto(fd, buf, len, flags, NULL, 0);
}

static __attribute__((noinline)) ssize_t write_slow(int fd, const void *buf, size_t len)
{
	struct conn *c;

	CANCEL_POINT();
	c = conn_use(fd, 1);
	if (!c)
		return kernel_io(fd, 1, CANCELLABLE(syscall(SYS_write, fd, buf, len)));
	return conn_send(c, fd, buf, len, 0, NULL, 0);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	struct conn *c = conn_fast(fd);

	if (c && !CANCELS())
		return conn_send(c, fd, buf, len, 0, NULL, 0);
	return write_slow(fd, buf, len);
}

static inline void rx_args_of_msg(struct rx_args *a, int fd, struct msghdr *m, int flags)
{
	a->fd = fd;
	a->iov = m->msg_iov;
	a->iovcnt = m->msg_iovlen;
	a->flags = flags;
	a->from = m->msg_name;
	a->fromlen = m->msg_name ? &m->msg_namelen : NULL;
	a->msg = m;
}

/* The receives' general lookup: the first acceleration attempt and unknown fds. */
static __attribute__((noinline)) struct conn *conn_use_slow(int fd)
{
	return conn_use(fd, 0);
}

static __attribute__((noinline)) ssize_t recvmsg_slow(int fd, struct msghdr *m, int flags)
{
	struct conn *c = conn_use(fd, 0);
	struct rx_args a;

	if (!c && (flags & MSG_ERRQUEUE))
		return CANCELLABLE(sys_recvmsg(fd, m, flags));	/* not a datagram */
	if (!c)
		return kernel_io(fd, 0, CANCELLABLE(sys_recvmsg(fd, m, flags)));
	if (flags & MSG_ERRQUEUE)
		return errqueue_recv(c, fd, m, flags);
	rx_args_of_msg(&a, fd, m, flags);
	return conn_recv(c, &a);
}

/* recvmsg() past its cancellation point: recvmmsg() looks once for all.
 * The general path in its own function: the common one saves no registers.
 */
static inline ssize_t recvmsg_on(int fd, struct msghdr *m, int flags)
{
	struct conn *c = conn_fast(fd);
	struct rx_args a;

	if (!c || (flags & MSG_ERRQUEUE))
		return recvmsg_slow(fd, m, flags);
	rx_args_of_msg(&a, fd, m, flags);
	return conn_recv(c, &a);
}

ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	CANCEL_POINT();
	return recvmsg_on(fd, m, flags);
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
		 struct sockaddr *from, socklen_t *fromlen)
{
	struct conn *c;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct rx_args a = {
		.fd = fd, .iov = &iov, .iovcnt = 1, .flags = flags,
		.from = (struct sockaddr_in *)from,
		.fromlen = from ? fromlen : NULL,
	};

	CANCEL_POINT();
	c = conn_fast(fd);
	if (!c && !(c = conn_use_slow(fd)))
		return kernel_io(fd, 0, CANCELLABLE(syscall(SYS_recvfrom, fd, buf, len, flags,
							     from, fromlen)));
	return conn_recv(c, &a);
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	return recvfrom(fd, buf, len, flags, NULL, NULL);
}

ssize_t read(int fd, void *buf, size_t len)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct rx_args a = { .fd = fd, .iov = &iov, .iovcnt = 1 };
	struct conn *c;

	CANCEL_POINT();
	c = conn_fast(fd);
	if (!c && !(c = conn_use_slow(fd)))
		return kernel_io(fd, 0, CANCELLABLE(syscall(SYS_read, fd, buf, len)));
	return conn_recv(c, &a);
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	int r = syscall(SYS_setsockopt, fd, level, name, val, len);
	const struct timeval *tv = val;
	struct sock *s;

	if (r < 0 || (level != SOL_SOCKET && level != SOL_IP && level != IPPROTO_UDP))
		return r;
	s = fd_sock_classify(fd);
	if (!s)
		return r;
	if (s->kpath != ACCIO_KPATH_IPV6)
		sock_setopt(s, level, name);
	if (level != SOL_SOCKET)
		return r;
	/* the kernel accepted it, so the value is well formed */
	if ((name == SO_RCVTIMEO || name == SO_SNDTIMEO) && len >= sizeof(*tv)) {
		long long ms = tv->tv_sec * 1000LL + (tv->tv_usec + 999) / 1000;

		if (ms > INT32_MAX || tv->tv_sec < 0)
			ms = 0;		/* negative or huge: no timeout */
		if (name == SO_RCVTIMEO)
			s->rcvtimeo = ms;
		else
			s->sndtimeo = ms;
	}
	return r;
}

/* ---- descriptors: close, dup, fcntl, ioctl ------------------------------- */

/*
 * Row fds are the library's: a program that closes descriptors it never
 * opened (a loop over all numbers) leaves them open, and one that dups
 * onto such a number gets it after the row fd moved away.
 */
int close(int fd)
{
	if (fd_is_rowfd(fd))
		return 0;
	fd_forget(fd);
	return syscall(SYS_close, fd);
}

int dup(int fd)
{
	int r = syscall(SYS_dup, fd);

	if (r >= 0)
		fd_dup(fd, r);
	return r;
}

static int move_from = -1;

static void move_one(struct sock *s)
{
	struct conn *c = s->conn;
	int n;

	if (!c || c->r.fd != move_from)
		return;
	n = syscall(SYS_fcntl, move_from, F_DUPFD_CLOEXEC, 0);
	if (n < 0)
		return;
	/* before the close: epoll keeps a closed number whose file lives on */
	epoll_follow(s, move_from, n);
	fd_mark_rowfd(move_from, 0);
	fd_mark_rowfd(n, 1);
	syscall(SYS_close, move_from);
	c->r.fd = n;
}

/* A program dups onto the number of a row fd: the row fd moves first. */
static void rowfd_move(int fd)
{
	pthread_mutex_lock(&accio_table_lock);
	move_from = fd;
	fd_foreach_sock(move_one);
	move_from = -1;
	pthread_mutex_unlock(&accio_table_lock);
}

int dup3(int oldfd, int newfd, int flags)
{
	int r;

	if (oldfd != newfd && fd_is_rowfd(newfd))
		rowfd_move(newfd);
	r = syscall(SYS_dup3, oldfd, newfd, flags);
	if (r >= 0)
		fd_dup(oldfd, r);
	return r;
}

int dup2(int oldfd, int newfd)
{
	if (oldfd == newfd) {
		/* dup2 checks the descriptor and returns it */
		return syscall(SYS_fcntl, oldfd, F_GETFD) < 0 ? -1 : newfd;
	}
	return dup3(oldfd, newfd, 0);
}

int close_range(unsigned int first, unsigned int last, int flags)
{
	unsigned int from = first;
	int rfd, r;

	if (first > last || (flags & CLOSE_RANGE_CLOEXEC))
		return syscall(SYS_close_range, first, last, flags);
	fd_close_range(first, last);
	/* around the row fds of sockets that stay open */
	while ((rfd = fd_next_rowfd(from, last)) >= 0) {
		if ((unsigned int)rfd > from) {
			r = syscall(SYS_close_range, from, rfd - 1, flags);
			if (r < 0)
				return r;
		}
		if ((unsigned int)rfd == last)
			return 0;
		from = rfd + 1;
	}
	return syscall(SYS_close_range, from, last, flags);
}

int fcntl(int fd, int cmd, ...)
{
	struct sock *s;
	va_list ap;
	long arg;
	int r;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	if (cmd == F_SETLKW || cmd == F_OFD_SETLKW)	/* a lock's wait: a cancellation point */
		r = CANCELLABLE(syscall(SYS_fcntl, fd, cmd, arg));
	else
		r = syscall(SYS_fcntl, fd, cmd, arg);
	if (r < 0)
		return r;
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		fd_dup(fd, r);
	if (cmd == F_SETFL && (s = (arg & O_ASYNC) ? fd_sock_classify(fd) : fd_sock(fd))) {
		s->nonblock = !!(arg & O_NONBLOCK);
		/* signal-driven I/O on or off: the kernel path or a row again */
		if (((arg & O_ASYNC) || s->kpath == ACCIO_KPATH_O_ASYNC) &&
		    s->kpath != ACCIO_KPATH_IPV6)
			sock_setopt(s, SOL_SOCKET, 0);
	}
	return r;
}

#ifdef __GLIBC__
/* glibc 2.28+ may route fcntl through fcntl64 */
int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	return fcntl(fd, cmd, arg);
}
#endif

/* glibc and musl declare ioctl's request differently */
#ifdef __GLIBC__
int ioctl(int fd, unsigned long req, ...)
#else
int ioctl(int fd, int req, ...)
#endif
{
	struct conn *c = conn_of(fd);
	struct sock *s;
	va_list ap;
	void *arg;
	int r;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == FIONREAD && c && arg) {
		/* the size of the next datagram, as for a UDP socket */
		uint16_t len;

		rlock_take(&c->rx_lock);
		if (!c->dead && !c->zc_rx && !rx_empty(c)) {
			rmb_io();
			ring_read(c->r.rx, c->r.rx_bytes, c->rx_rptr, &len, 2);
			rlock_release(&c->rx_lock);
			*(int *)arg = len;
			return 0;
		}
		rlock_release(&c->rx_lock);
	}
	r = syscall(SYS_ioctl, fd, req, arg);
	if (r < 0 || !(s = fd_sock_classify(fd)))
		return r;
	if (req == FIONBIO)
		s->nonblock = !!*(int *)arg;
	if (req == FIOASYNC && s->kpath != ACCIO_KPATH_IPV6)
		sock_setopt(s, SOL_SOCKET, 0);	/* as F_SETFL with O_ASYNC */
	if ((unsigned int)req == SIOCACCIO)
		s->tried = 1;	/* the caller manages this row itself */
	return r;
}

/* ---- vectored and batched I/O ------------------------------------------ */

ssize_t readv(int fd, const struct iovec *iov, int n)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

	if (!conn_use(fd, 0))
		return kernel_io(fd, 0, CANCELLABLE(syscall(SYS_readv, fd, iov, n)));
	return recvmsg(fd, &m, 0);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

	if (!conn_use(fd, 1))
		return kernel_io(fd, 1, CANCELLABLE(syscall(SYS_writev, fd, iov, n)));
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

	CANCEL_POINT();
	if (!conn_use(fd, 0)) {
		mmsg_clear_pads(v, n);
		return kernel_io_n(fd, 0, CANCELLABLE(syscall(SYS_recvmmsg, fd, v, n, flags, tmo)));
	}
	if (tmo)
		deadline = now_us() + tmo->tv_sec * 1000000ull + tmo->tv_nsec / 1000;
	for (i = 0; i < n; i++) {
		r = recvmsg_on(fd, &v[i].msg_hdr, f);
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

	CANCEL_POINT();
	if (!conn_use(fd, 1)) {
		mmsg_clear_pads(v, n);
		return kernel_io_n(fd, 1, CANCELLABLE(syscall(SYS_sendmmsg, fd, v, n, flags)));
	}
	for (i = 0; i < n; i++) {
		r = sendmsg_on(fd, &v[i].msg_hdr, (int)flags);
		if (r < 0)
			return i ? (int)i : -1;
		v[i].msg_len = r;
	}
	return n;
}

/* ---- glibc's fortified entry points (_FORTIFY_SOURCE) ------------------ */

#ifdef __GLIBC__
/* weak: so that musl's loader, given this build by mistake, can start the
 * program and policy.c can say so (see wrong_libc there) */
extern void __chk_fail(void) __attribute__((noreturn, weak));
#define chk_fail() (__chk_fail ? __chk_fail() : abort())
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

/* glibc's closefrom closes through its own close_range: take it here. */
void closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	close_range(lowfd, ~0U, 0);
}
