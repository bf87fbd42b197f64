// SPDX-License-Identifier: MIT
/*
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
 * while the row exists), and try for the row again at most every 10 ms
 * while they receive: when its owner exits or closes the socket, the next
 * receiver takes it over. `accio stat` shows them as "shared".
 * ACCIO_FORK=release: both processes use the socket through the kernel
 * from then on. ACCIO_FORK=keep, and sockets the program accelerated itself
 * (accio_accelerate), keep the parent's row; the child then reaches such a
 * socket only through the kernel, which sees no datagram while the parent
 * owns the row.
 *
 * The three handlers are pthread_atfork's, registered at the library's
 * start (policy.c), after the settings are read.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * After a fork, in both processes: a socket that was open at the fork may
 * take a row again only by receiving (ACCIO_FORK=reader), or never
 * (release).
 */
static void fork_mark(struct sock *s)
{
	if (s->kpath == ACCIO_KPATH_IPV6 || s->kpath == ACCIO_KPATH_MSG_MORE ||
	    s->kpath == ACCIO_KPATH_SHUTDOWN || s->kpath >= ACCIO_KPATH_FIRST_OPTION)
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

void fork_prepare(void)
{
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

void fork_parent(void)
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

void fork_child(void)
{
	stats_forget_after_fork();
	fd_foreach_sock(fork_forget_conn);
	fd_unmark_rowfds();	/* inherited row fds are ordinary descriptors of the child */
	pthread_mutex_init(&accio_table_lock, NULL);
}
