// SPDX-License-Identifier: MIT
/*
 * Readiness: poll, ppoll, select, pselect and the epoll calls. The kernel
 * waits on the row fd of an accelerated socket instead of the socket (the
 * row fd is readable when the RX ring or the fallback socket holds data,
 * writable when the TX ring has room); epoll_wait also reads readiness
 * from the rings in user space first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* Epoll registrations of UDP sockets, moved to the row fd on acceleration. */
struct ep_reg {
	int epfd, fd;
	struct epoll_event ev;
	int fired;		/* EPOLLONESHOT reported, until EPOLL_CTL_MOD */
};
static struct ep_reg *ep_regs;
static int nep_regs, ep_cap;

static int rowfd_of(int fd)
{
	struct conn *c = conn_of(fd);

	return c ? c->r.fd : fd;
}

/*
 * The copy of more than 64 pollfds: the thread's own, kept for its next
 * poll and freed when it exits, so that a thread cancelled in the kernel's
 * wait leaves nothing behind (no cleanup handler: glibc's are symbols the
 * glibc build must not need, musl's loader may be given it).
 */
struct poll_copy {
	nfds_t n;
	struct pollfd p[];
};
static pthread_key_t poll_copy_key;
static pthread_once_t poll_copy_once = PTHREAD_ONCE_INIT;

static void poll_copy_init(void)
{
	pthread_key_create(&poll_copy_key, free);
}

static struct pollfd *poll_copy(nfds_t n)
{
	struct poll_copy *b, *nb;

	pthread_once(&poll_copy_once, poll_copy_init);
	b = pthread_getspecific(poll_copy_key);
	if (b && b->n >= n)
		return b->p;
	if (n > (SIZE_MAX - sizeof(*b)) / sizeof(struct pollfd))
		return NULL;
	nb = realloc(b, sizeof(*b) + n * sizeof(struct pollfd));
	if (!nb)
		return NULL;
	nb->n = n;
	pthread_setspecific(poll_copy_key, nb);
	return nb->p;
}

/* poll and ppoll: the kernel waits on the row fds of accelerated sockets */
static int poll_rows(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
		     const sigset_t *ss)
{
	struct timespec ts, *tp = NULL;
	struct pollfd local[64], *p = n <= 64 ? local : poll_copy(n);
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
	r = CANCELLABLE(syscall(SYS_ppoll, p, n, tp, ss, _NSIG / 8));
	for (i = 0; i < n; i++)
		fds[i].revents = p[i].revents;
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
	r = CANCELLABLE(syscall(SYS_pselect6, m, rd ? &r2 : NULL, wr ? &w2 : NULL,
				ex ? &e2 : NULL, tsp, ss ? &mask : NULL));
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

static struct ep_reg *ep_find(int epfd, int fd)
{
	int i;

	for (i = 0; i < nep_regs; i++)
		if (ep_regs[i].epfd == epfd && ep_regs[i].fd == fd)
			return &ep_regs[i];
	return NULL;
}

/*
 * A row fd is registered level-triggered: the kernel arms a row for its
 * wake-up when epoll polls the row fd, and with EPOLLET epoll does not poll
 * it again after reporting it, while the program empties the ring in user
 * space - the row would never be armed again, and a datagram arriving
 * later would not wake the program. The user-space check of epoll_wait
 * reports such a socket while its ring holds data, as ET programs expect
 * (they read until EAGAIN).
 */
static struct epoll_event *row_event(const struct epoll_event *ev, struct epoll_event *tmp)
{
	if (!ev)
		return NULL;
	*tmp = *ev;
	tmp->events &= ~EPOLLET;
	return tmp;
}

/*
 * A socket's epoll registrations follow its row fd while it is accelerated
 * (table lock held): on acceleration from the socket to the row fd, when
 * the row is released back.
 */
static void epoll_migrate(struct sock *s, int rowfd)
{
	struct epoll_event tmp;
	int i;

	for (i = 0; i < nep_regs; i++) {
		if (fd_sock(ep_regs[i].fd) != s)
			continue;
		syscall(SYS_epoll_ctl, ep_regs[i].epfd, EPOLL_CTL_DEL,
			ep_regs[i].fd, NULL);
		syscall(SYS_epoll_ctl, ep_regs[i].epfd, EPOLL_CTL_ADD, rowfd,
			row_event(&ep_regs[i].ev, &tmp));
	}
}

static void epoll_restore(struct sock *s, int rowfd)
{
	int i;

	for (i = 0; i < nep_regs; i++) {
		if (fd_sock(ep_regs[i].fd) != s)
			continue;
		syscall(SYS_epoll_ctl, ep_regs[i].epfd, EPOLL_CTL_DEL, rowfd,
			NULL);
		syscall(SYS_epoll_ctl, ep_regs[i].epfd, EPOLL_CTL_ADD,
			ep_regs[i].fd, &ep_regs[i].ev);
	}
}

/* s's kernel waits move from descriptor from to to (-1: its own ones). */
void epoll_follow(struct sock *s, int from, int to)
{
	if (from >= 0)
		epoll_restore(s, from);
	if (to >= 0)
		epoll_migrate(s, to);
}

/* fd was closed: as an epoll set, or as a registered socket. */
static void epoll_forget(int fd)
{
	int i;

	for (i = 0; i < nep_regs; i++) {
		if (ep_regs[i].fd == fd || ep_regs[i].epfd == fd)
			ep_regs[i--] = ep_regs[--nep_regs];
	}
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct epoll_event tmp;
	struct ep_reg *e, *n;
	int r, kfd;

	if (op == EPOLL_CTL_ADD)
		maybe_accelerate(fd, 0);
	kfd = rowfd_of(fd);
	r = syscall(SYS_epoll_ctl, epfd, op, kfd, kfd != fd ? row_event(ev, &tmp) : ev);
	if (r < 0 || !fd_sock_classify(fd))
		return r;
	pthread_mutex_lock(&accio_table_lock);
	e = ep_find(epfd, fd);
	if (op == EPOLL_CTL_DEL) {
		if (e)
			*e = ep_regs[--nep_regs];
	} else if (e) {
		e->ev = *ev;
		e->fired = 0;
	} else {
		if (nep_regs == ep_cap) {
			n = realloc(ep_regs, (ep_cap ? 2 * ep_cap : 64) * sizeof(*n));
			if (n) {
				ep_regs = n;
				ep_cap = ep_cap ? 2 * ep_cap : 64;
			}
		}
		if (nep_regs < ep_cap) {
			/* from the first on, closes and row moves concern them */
			fd_hooks.fd_closed = epoll_forget;
			fd_hooks.row_moved = epoll_follow;
			e = &ep_regs[nep_regs++];
			e->epfd = epfd;
			e->fd = fd;
			e->fired = 0;
			e->ev = *ev;
		}
	}
	pthread_mutex_unlock(&accio_table_lock);
	return r;
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
	pthread_mutex_lock(&accio_table_lock);
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
	pthread_mutex_unlock(&accio_table_lock);
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
		return CANCELLABLE(syscall(SYS_epoll_pwait2, epfd, evs, max, ts, sigmask,
					   _NSIG / 8));
	return CANCELLABLE(syscall(SYS_epoll_pwait, epfd, evs, max, timeout, sigmask,
				   _NSIG / 8));
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

