// SPDX-License-Identifier: MIT
/*
 * The library's start and exit, what to accelerate (config.h: the
 * environment), io_uring, and the public calls of accio.h other than zero
 * copy. The top of the middle layer: the descriptor table's socket events
 * are handled here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* ---- the descriptor table's socket events (table lock held) ------------ */

/* A socket the program made on the kernel path (IPv6): in `accio stat` at once. */
static void sock_made(struct sock *s)
{
	if (s->kpath)
		stats_attach_kernel(s);
}

/* Its statistics slot names the descriptor it is known by. */
static void sock_renamed(struct sock *s)
{
	if (s->conn)
		stats_attach(s->conn, s->fd);
	else if (s->slot >= 0)
		stats_attach_kernel(s);
}

/* Its last descriptor is closed, or the process exits. */
static void sock_closed(struct sock *s)
{
	conn_release(s, 1);
	sock_kernel_done(s);
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/*
 * The settings, and what the table's socket events do: at the library's
 * start (accio_ctor), at the latest before a first row (policy_wants).
 */
static void init(void)
{
#ifdef ACCIO_SHARED
	const char *accel = "all";	/* preloaded into an unmodified binary */
#else
	const char *accel = "none";	/* linked in: the app opts in itself */
#endif
	config_read(&accio_cfg, getenv, accel, WIN_BYTES - ACCIO_TX_HDR);
	fd_hooks.sock_made = sock_made;
	fd_hooks.sock_renamed = sock_renamed;
	fd_hooks.sock_closed = sock_closed;
}

void lib_init(void)
{
	pthread_once(&init_once, init);
}

static int policy_wants(uint16_t lport, uint16_t rport)
{
	lib_init();
	return config_wants(&accio_cfg, lport, rport);
}

/* ---- io_uring -------------------------------------------------------- */

/*
 * Operations a program submits through an io_uring (epoll_ctl, recvmsg,
 * sendmsg; libuv batches its epoll changes that way) never pass through
 * the library: on a socket with a row they would wait on the kernel socket
 * while the datagrams sit in the ring. A process with an io_uring keeps its
 * UDP sockets on the kernel path (`kernel:io_uring`): the library looks for
 * one in its address space (the rings are mapped) before the first row, and
 * sees io_uring_setup made through syscall(3), after which every row goes.
 * A ring set up with a raw system call after a socket got its row is not
 * seen.
 */
static int uring_state;	/* 0: not looked yet, 1: none, 2: the process has one */

static int maps_have_uring(void)
{
	static const char pat[] = "[io_uring]";
	char buf[4096 + sizeof(pat)];
	size_t keep = 0, len;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), found = 0;

	if (fd < 0)
		return 0;
	/* a line may straddle two reads: the tail of each is kept */
	while (!found && (n = syscall(SYS_read, fd, buf + keep, 4096)) > 0) {
		len = keep + n;
		found = memmem(buf, len, pat, sizeof(pat) - 1) != NULL;
		keep = len < sizeof(pat) - 1 ? len : sizeof(pat) - 1;
		memmove(buf, buf + len - keep, keep);
	}
	syscall(SYS_close, fd);
	return found;
}

static int uring_in_process(void)
{
	if (!uring_state)
		uring_state = maps_have_uring() ? 2 : 1;
	return uring_state == 2;
}

#if defined(__riscv) && __riscv_xlen == 64
static void uring_release(struct sock *s)
{
	if (!s->conn || s->explicit_accel)
		return;
	conn_release(s, 0);
	s->kpath = ACCIO_KPATH_IO_URING;
	s->tried = 1;
	stats_attach_kernel(s);
}

/* The process made an io_uring: its rows go, its sockets stay on the kernel. */
static void uring_seen(void)
{
	pthread_mutex_lock(&accio_table_lock);
	uring_state = 2;
	fd_foreach_sock(uring_release);
	pthread_mutex_unlock(&accio_table_lock);
}

/*
 * syscall(3): the C library's, plus a look at io_uring_setup. An ecall
 * with the number in a7 and six arguments, errno as the C libraries set it.
 */
long syscall(long nr, ...)
{
	va_list ap;
	long a[6], r;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	{
		register long a0 __asm__("a0") = a[0];
		register long a1 __asm__("a1") = a[1];
		register long a2 __asm__("a2") = a[2];
		register long a3 __asm__("a3") = a[3];
		register long a4 __asm__("a4") = a[4];
		register long a5 __asm__("a5") = a[5];
		register long a7 __asm__("a7") = nr;

		__asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a3), "r"(a4),
				 "r"(a5), "r"(a7) : "memory");
		r = a0;
	}
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	if (nr == SYS_io_uring_setup)
		uring_seen();
	return r;
}
#endif

/* ---- acceleration ------------------------------------------------------ */

/* Why the kernel gave no row (conn_create's errno), for the statistics. */
static int kpath_of_errno(int e)
{
	switch (e) {
	case EALREADY:
		return ACCIO_KPATH_SHARED;	/* another process's row */
	case ENOSPC:
		return ACCIO_KPATH_NOROW;
	case EADDRNOTAVAIL:
		return ACCIO_KPATH_NOTNIC;
	default:
		return ACCIO_KPATH_REFUSED;
	}
}

/*
 * A socket another process holds the row of (a child forked a moment ago,
 * still exiting or exec'ing) asks again this often: a failed SIOCACCIO is
 * a few microseconds, and a server that forks helpers gets its row back
 * soon after each one lets the socket go.
 */
#define SHARED_RETRY_US 10000

/*
 * Policy-driven acceleration, tried once per socket. may_bind: a send may
 * bind an unbound socket (the kernel would too); a receive may not. A
 * socket open at a fork gets a row only for a receive (fork.c); one
 * whose row another process holds tries again at most every 100 ms.
 */
void maybe_accelerate(int fd, int may_bind)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	uint16_t lport, rport = 0;
	struct sock *s = fd_sock_classify(fd);
	int saved = errno;

	if (!s || s->conn)
		return;
	if (s->kpath == ACCIO_KPATH_SHARED) {
		if (may_bind || now_us() < s->retry_at)
			return;
	} else if (s->tried || (s->forked && may_bind)) {
		return;
	}
	if (!may_bind && (syscall(SYS_getsockname, fd, &sa, &sl) < 0 || !sa.sin_port)) {
		errno = saved;
		return;
	}
	pthread_mutex_lock(&accio_table_lock);
	if (s->conn || fd_sock(fd) != s ||
	    (s->tried && s->kpath != ACCIO_KPATH_SHARED)) {
		pthread_mutex_unlock(&accio_table_lock);
		errno = saved;
		return;
	}
	s->tried = 1;
	sl = sizeof(sa);
	if (syscall(SYS_getpeername, fd, &sa, &sl) == 0)
		rport = ntohs(sa.sin_port);
	if (ensure_bound(fd, &lport) < 0 || !policy_wants(lport, rport)) {
		/* not ours to accelerate */
	} else if (uring_in_process()) {
		s->kpath = ACCIO_KPATH_IO_URING;
		stats_attach_kernel(s);
	} else if (sock_may_accelerate(s)) {
		if (conn_create(s) == 0) {
			stats_detach_kernel(s);
			s->kpath = 0;
		} else {
			s->kpath = kpath_of_errno(errno);
			s->retry_at = now_us() + SHARED_RETRY_US;
			stats_attach_kernel(s);
		}
	}
	pthread_mutex_unlock(&accio_table_lock);
	errno = saved;
}

/* ---- start and exit ---------------------------------------------------- */

static void at_exit(void)
{
	pthread_mutex_lock(&accio_table_lock);
	fd_foreach_sock(sock_closed);
	pthread_mutex_unlock(&accio_table_lock);
	stats_file_remove();
}

#ifdef __GLIBC__
extern const char *gnu_get_libc_version(void) __attribute__((weak));
/*
 * glibc's pthread_atfork is a small wrapper, linked from libc_nonshared.a,
 * around __register_atfork with the object's handle: that is called
 * directly here, and weak, so that this build also loads where it is missing.
 */
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void),
			     void *) __attribute__((weak));
extern void *__dso_handle __attribute__((weak, visibility("hidden")));

static void register_atfork(void (*prepare)(void), void (*parent)(void),
			    void (*child)(void))
{
	if (__register_atfork)
		__register_atfork(prepare, parent, child, &__dso_handle);
}
#else
#define register_atfork(p, a, c) pthread_atfork(p, a, c)
#endif

/*
 * The glibc build preloaded into a musl program (musl's loader maps glibc's
 * libc.so.6 to itself): say so and stay out of the way. The calls still
 * work, through the kernel, with the program's msghdrs read as musl's
 * (accio_foreign_libc, conn.c).
 */
static int wrong_libc(void)
{
#ifdef __GLIBC__
	static const char msg[] =
		"libaccio: this is the glibc build, preloaded into a program linked "
		"with another C library (musl?): not accelerating; preload "
		"/usr/lib/libaccio.so instead\n";

	if (!gnu_get_libc_version) {
		syscall(SYS_write, 2, msg, sizeof(msg) - 1);
		accio_foreign_libc = 1;
		return 1;
	}
#endif
	return 0;
}

__attribute__((constructor)) static void accio_ctor(void)
{
	lib_init();
	if (wrong_libc()) {
		config_accel(&accio_cfg, "none");
		return;
	}
	register_atfork(fork_prepare, fork_parent, fork_child);
	atexit(at_exit);
}

/* ---- accio.h ------------------------------------------------------------ */

int accio_accelerate(int fd)
{
	struct sock *s;
	uint16_t lport;
	int err, type;
	socklen_t l = sizeof(type);

	lib_init();
	s = fd_sock_classify(fd);
	if (!s) {
		if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, &type, &l) == 0)
			errno = EPROTONOSUPPORT;	/* a socket, not UDP/IPv4 */
		return -1;
	}
	if (sock_conn(s)) {
		errno = EALREADY;
		return -1;
	}
	if (ensure_bound(fd, &lport) < 0)
		return -1;
	pthread_mutex_lock(&accio_table_lock);
	err = s->conn ? (errno = EALREADY, -1) : conn_create(s);
	s->tried = 1;
	if (!err)
		s->explicit_accel = 1;
	pthread_mutex_unlock(&accio_table_lock);
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
