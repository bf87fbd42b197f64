// SPDX-License-Identifier: MIT
/*
 * Descriptors. Each descriptor the library has seen has an entry: what it
 * is (a UDP/IPv4 socket, something else, a row fd of the library) and, for
 * a UDP socket, the struct sock it shares with its duplicates. Entries sit
 * in chunks of 1024 allocated on first use, so descriptors above 1024 work
 * and lookups take no lock.
 *
 * Descriptors the library did not see created (inherited across exec,
 * created by a raw system call) are learnt on first use with getsockopt.
 *
 * fork: a row has one reader, the process that owns it. By default
 * (ACCIO_FORK unset or "reader") every UDP socket that exists at fork()
 * leaves its row in the parent before the fork - the row is released and
 * the kernel hands datagrams still in the RX ring back to the socket - and
 * the first process that then receives on it (recv*, read, epoll_ctl) takes
 * a new row: the child of a prefork server that serves while its parent
 * waits, or the parent that keeps serving while its child does something
 * else. Sending does not take the row, so a process that only sends never
 * starves one that receives. The other processes reach the socket through
 * the kernel, which gives them what the engine does not take (nothing
 * while the row exists), and try for the row again at most every 100 ms
 * while they receive: when its owner exits or closes the socket, the next
 * receiver takes it over. `accio stat` shows them as "shared".
 * ACCIO_FORK=release: both processes use the socket through the kernel
 * from then on. ACCIO_FORK=keep, and sockets the program accelerated itself
 * (accio_accelerate), keep the parent's row; the child then reaches such a
 * socket only through the kernel, which sees no datagram while the parent
 * owns the row.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

struct fdent *fd_chunks[FD_NCHUNKS];
pthread_mutex_t accio_table_lock = PTHREAD_MUTEX_INITIALIZER;

static struct fdent *ent_new(int fd)
{
	struct fdent *c, *n, *expect = NULL;

	if (fd < 0 || fd >= FD_CHUNK * FD_NCHUNKS)
		return NULL;
	c = __atomic_load_n(&fd_chunks[fd >> FD_CHUNK_BITS], __ATOMIC_ACQUIRE);
	if (c)
		return &c[fd & (FD_CHUNK - 1)];
	n = calloc(FD_CHUNK, sizeof(*n));
	if (!n)
		return NULL;
	if (!__atomic_compare_exchange_n(&fd_chunks[fd >> FD_CHUNK_BITS], &expect, n,
					 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(n);
		n = expect;
	}
	return &n[fd & (FD_CHUNK - 1)];
}

struct sock *fd_sock(int fd)
{
	struct fdent *e = fd_ent(fd);

	return e ? __atomic_load_n(&e->sock, __ATOMIC_ACQUIRE) : NULL;
}

static struct sock *sock_new(int fd, int nonblock)
{
	struct sock *s = calloc(1, sizeof(*s));

	if (s) {
		s->refs = 1;
		s->fd = fd;
		s->nonblock = nonblock;
		s->slot = -1;
	}
	return s;
}

/* Another descriptor that refers to s, or -1. */
static int other_fd(struct sock *s, int fd)
{
	struct fdent *c;
	int i, j;

	for (i = 0; i < FD_NCHUNKS; i++) {
		c = fd_chunks[i];
		for (j = 0; c && j < FD_CHUNK; j++)
			if (c[j].sock == s && i * FD_CHUNK + j != fd)
				return i * FD_CHUNK + j;
	}
	return -1;
}

static void sock_unref(struct sock *s, int fd)
{
	if (--s->refs > 0) {
		if (s->fd == fd) {
			s->fd = other_fd(s, fd);
			if (s->conn)
				stats_attach(s->conn, s->fd);
			else if (s->slot >= 0)
				stats_attach_kernel(s);
		}
		return;
	}
	conn_release(s, 1);
	sock_kernel_done(s);
	free(s);
}

/* Table lock held. */
static void forget_locked(int fd)
{
	struct fdent *e = fd_ent(fd);
	struct sock *s;

	if (!e || e->kind == FD_ROW)
		return;
	s = e->sock;
	__atomic_store_n(&e->sock, NULL, __ATOMIC_RELEASE);
	e->kind = FD_UNKNOWN;
	epoll_forget(fd);
	if (s)
		sock_unref(s, fd);
}

void fd_forget(int fd)
{
	pthread_mutex_lock(&accio_table_lock);
	forget_locked(fd);
	pthread_mutex_unlock(&accio_table_lock);
}

/*
 * A UDP socket the library keeps an entry for: IPv4 ones may get a row;
 * IPv6 ones (dual-stack or not) stay on the kernel path, counted.
 */
static struct sock *udp_sock_new(int fd, int family, int nonblock)
{
	struct sock *s = sock_new(fd, nonblock);

	if (s && family == AF_INET6) {
		s->kpath = ACCIO_KPATH_IPV6;
		s->tried = 1;
	}
	return s;
}

void fd_new_socket(int fd, int family, int udp, int nonblock)
{
	struct fdent *e;

	pthread_mutex_lock(&accio_table_lock);
	forget_locked(fd);	/* closed behind the library's back */
	e = ent_new(fd);
	if (e) {
		e->kind = udp ? FD_UDP : FD_OTHER;
		if (udp)
			__atomic_store_n(&e->sock, udp_sock_new(fd, family, nonblock),
					 __ATOMIC_RELEASE);
		if (e->sock && e->sock->kpath)
			stats_attach_kernel(e->sock);	/* in `accio stat` at once */
	}
	pthread_mutex_unlock(&accio_table_lock);
}

/* A descriptor the table does not know yet: ask the kernel what it is. */
struct sock *fd_sock_learn(int fd)
{
	struct fdent *e;
	int dom = 0, type = 0, proto = 0, saved = errno, udp, fl;
	socklen_t l = sizeof(int);

	if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0) {
		if (errno == EBADF) {
			errno = saved;
			return NULL;	/* nothing to learn */
		}
		type = -1;
	} else {
		l = sizeof(int);
		syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_DOMAIN, &dom, &l);
		l = sizeof(int);
		syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l);
	}
	udp = (dom == AF_INET || dom == AF_INET6) && type == SOCK_DGRAM &&
	      proto == IPPROTO_UDP;
	fl = udp ? syscall(SYS_fcntl, fd, F_GETFL) : 0;
	errno = saved;
	pthread_mutex_lock(&accio_table_lock);
	e = ent_new(fd);
	if (e && e->kind == FD_UNKNOWN) {
		e->kind = udp ? FD_UDP : FD_OTHER;
		if (udp)
			__atomic_store_n(&e->sock,
					 udp_sock_new(fd, dom, fl > 0 && (fl & O_NONBLOCK)),
					 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&accio_table_lock);
	return e ? e->sock : NULL;
}

void fd_dup(int oldfd, int newfd)
{
	struct fdent *o, *n;

	if (oldfd == newfd)
		return;
	fd_sock_classify(oldfd);
	pthread_mutex_lock(&accio_table_lock);
	forget_locked(newfd);
	o = fd_ent(oldfd);
	n = ent_new(newfd);
	if (n && o && o->kind != FD_ROW) {
		n->kind = o->kind;
		if (o->sock) {
			o->sock->refs++;
			__atomic_store_n(&n->sock, o->sock, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&accio_table_lock);
}

void fd_close_range(unsigned int first, unsigned int last)
{
	unsigned int fd;

	pthread_mutex_lock(&accio_table_lock);
	for (fd = first; fd <= last && fd < FD_CHUNK * FD_NCHUNKS; fd++) {
		if (!fd_chunks[fd >> FD_CHUNK_BITS]) {
			fd |= FD_CHUNK - 1;	/* the whole chunk is unknown */
			continue;
		}
		forget_locked(fd);
	}
	pthread_mutex_unlock(&accio_table_lock);
}

int fd_is_rowfd(int fd)
{
	struct fdent *e = fd_ent(fd);

	return e && e->kind == FD_ROW;
}

void fd_mark_rowfd(int fd, int on)
{
	struct fdent *e = ent_new(fd);

	if (e) {
		e->kind = on ? FD_ROW : FD_UNKNOWN;
		e->sock = NULL;
	}
}

/* Every socket once (duplicates share one). Table lock held. */
void fd_foreach_sock(void (*fn)(struct sock *))
{
	struct fdent *c;
	struct sock *s;
	int i, j;

	for (i = 0; i < FD_NCHUNKS; i++) {
		c = fd_chunks[i];
		for (j = 0; c && j < FD_CHUNK; j++) {
			s = c[j].sock;
			if (s && s->fd == i * FD_CHUNK + j)
				fn(s);
		}
	}
}

/*
 * After a fork, in both processes: a socket that was open at the fork may
 * take a row again only by receiving (ACCIO_FORK=reader), or never
 * (release).
 */
static void fork_mark(struct sock *s)
{
	if (s->kpath == ACCIO_KPATH_IPV6 || s->kpath >= ACCIO_KPATH_FIRST_OPTION)
		return;		/* on the kernel path for its own reasons */
	s->forked = 1;
	if (accio_cfg.fork_mode == FORK_RELEASE) {
		s->kpath = ACCIO_KPATH_FORK;
		s->tried = 1;
	} else {
		s->kpath = 0;
		s->tried = 0;
	}
}

static void fork_release(struct sock *s)
{
	if (s->explicit_accel || accio_cfg.fork_mode == FORK_KEEP)
		return;		/* the parent keeps its row */
	conn_release(s, 0);
	fork_mark(s);
}

void fd_fork_prepare(void)
{
	lib_init();
	pthread_mutex_lock(&accio_table_lock);
	fd_foreach_sock(fork_release);
}

/* The parent's sockets without a row: their statistics slots as they were. */
static void fork_parent_stats(struct sock *s)
{
	if (!s->conn && s->kpath)
		stats_attach_kernel(s);
	else if (!s->conn)
		stats_detach_kernel(s);
}

void fd_fork_parent(void)
{
	fd_foreach_sock(fork_parent_stats);
	pthread_mutex_unlock(&accio_table_lock);
}

/*
 * The child has neither the row mappings (never inherited) nor the rows,
 * nor the parent's statistics file: a socket the parent kept its row for
 * (keep) is the parent's, the others are the child's to take.
 */
static void fork_forget_conn(struct sock *s)
{
	struct conn *c = s->conn;

	s->slot = -1;
	memset(&s->kst, 0, sizeof(s->kst));
	if (!c) {
		if (!s->forked)
			fork_mark(s);
		return;
	}
	s->conn = NULL;
	s->forked = 1;
	s->kpath = ACCIO_KPATH_SHARED;
	s->tried = 1;
	s->retry_at = 0;
	free(c->bounce);
	free(c);
}

void fd_fork_child(void)
{
	struct fdent *c;
	int i, j;

	stats_forget_after_fork();
	fd_foreach_sock(fork_forget_conn);
	/* inherited row fds are ordinary descriptors of the child */
	for (i = 0; i < FD_NCHUNKS; i++) {
		c = fd_chunks[i];
		for (j = 0; c && j < FD_CHUNK; j++)
			if (c[j].kind == FD_ROW)
				c[j].kind = FD_UNKNOWN;
	}
	pthread_mutex_init(&accio_table_lock, NULL);
}

/* The lowest row fd in [from, last], or -1. */
int fd_next_rowfd(unsigned int from, unsigned int last)
{
	unsigned int fd;

	for (fd = from; fd <= last && fd < FD_CHUNK * FD_NCHUNKS; fd++) {
		if (!fd_chunks[fd >> FD_CHUNK_BITS]) {
			fd |= FD_CHUNK - 1;
			continue;
		}
		if (fd_chunks[fd >> FD_CHUNK_BITS][fd & (FD_CHUNK - 1)].kind == FD_ROW)
			return fd;
	}
	return -1;
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
	epoll_restore(s, move_from);
	fd_mark_rowfd(move_from, 0);
	fd_mark_rowfd(n, 1);
	syscall(SYS_close, move_from);
	c->r.fd = n;
	epoll_migrate(s, n);
}

/* A program dups onto the number of a row fd: the row fd moves first. */
void fd_move_rowfd(int fd)
{
	pthread_mutex_lock(&accio_table_lock);
	move_from = fd;
	fd_foreach_sock(move_one);
	move_from = -1;
	pthread_mutex_unlock(&accio_table_lock);
}
