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
 * The table calls nothing of the library: what follows from its events (a
 * socket's last close releases its row, epoll registrations of a closed
 * descriptor go) is done by the layers above, through fd_hooks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

struct fdent *fd_chunks[FD_NCHUNKS];
pthread_mutex_t accio_table_lock = PTHREAD_MUTEX_INITIALIZER;

static void no_sock_event(struct sock *s)
{
}

static void no_fd_event(int fd)
{
}

static void no_row_event(struct sock *s, int from, int to)
{
}

/* Nothing to do until a layer above sets its own. */
struct fd_hooks fd_hooks = {
	.sock_made = no_sock_event,
	.sock_renamed = no_sock_event,
	.sock_closed = no_sock_event,
	.fd_closed = no_fd_event,
	.row_moved = no_row_event,
};

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
			fd_hooks.sock_renamed(s);
		}
		return;
	}
	fd_hooks.sock_closed(s);
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
	fd_hooks.fd_closed(fd);
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
		if (e->sock)
			fd_hooks.sock_made(e->sock);
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

/* Every row fd an ordinary descriptor: a forked child's, which has no rows. */
void fd_unmark_rowfds(void)
{
	struct fdent *c;
	int i, j;

	for (i = 0; i < FD_NCHUNKS; i++) {
		c = fd_chunks[i];
		for (j = 0; c && j < FD_CHUNK; j++)
			if (c[j].kind == FD_ROW)
				c[j].kind = FD_UNKNOWN;
	}
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
