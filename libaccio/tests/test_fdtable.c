// SPDX-License-Identifier: MIT
/*
 * The descriptor table (fdtable.c) and fork (fork.c) on the host, without
 * the rest of the library: the table's hooks are doubles here that count
 * the events, and what fork.c calls of connections and statistics is
 * replaced by doubles too. Real descriptors are learnt from the kernel (a
 * UDP socket, a TCP socket, a pipe, a closed number).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

/* ---- the table's hooks, and what fork.c calls: doubles ----------------- */

static int n_release, n_release_closing, n_made, n_renamed, n_closed;
static int n_fd_closed, n_after_fork;

void conn_release(struct sock *s, int closing)
{
	struct conn *c = s->conn;

	if (!c)
		return;
	n_release++;
	n_release_closing += closing;
	s->conn = NULL;
	free(c);
}

void stats_attach_kernel(struct sock *s) { }
void stats_detach_kernel(struct sock *s) { }
void stats_forget_after_fork(void) { n_after_fork++; }

static void sock_made(struct sock *s)
{
	n_made++;
}

static void sock_renamed(struct sock *s)
{
	n_renamed++;
}

/* as policy.c's: the row goes with the last descriptor */
static void sock_closed(struct sock *s)
{
	n_closed++;
	CHECK(s->refs == 0);
	conn_release(s, 1);
}

static void fd_closed(int fd)
{
	n_fd_closed++;
}

static struct conn *fake_conn(struct sock *s)
{
	struct conn *c = calloc(1, sizeof(*c));

	c->sock = s;
	c->r.fd = -1;
	s->conn = c;
	return c;
}

/* ---- tests ---------------------------------------------------------------- */

static void dup_and_close(void)
{
	struct sock *s;
	int n;

	fd_new_socket(40, AF_INET, 1, 0);
	s = fd_sock(40);
	CHECK(s && s->refs == 1 && s->fd == 40 && !s->nonblock && n_made == 1);
	fake_conn(s);
	fd_dup(40, 41);
	CHECK(fd_sock(41) == s && s->refs == 2);
	fd_dup(40, 40);			/* onto itself: nothing */
	CHECK(s->refs == 2);
	n = n_fd_closed;
	fd_forget(40);			/* the socket lives on in 41 */
	CHECK(!fd_sock(40) && fd_sock(41) == s && s->refs == 1 && s->fd == 41);
	CHECK(n_release == 0 && n_renamed == 1);	/* its slot names 41 now */
	CHECK(n_fd_closed == n + 1);
	fd_forget(41);
	CHECK(!fd_sock(41) && n_fd_closed == n + 2);
	CHECK(n_release == 1 && n_release_closing == 1 && n_closed == 1);
	fd_forget(41);			/* twice: the descriptor, nothing more */
	CHECK(n_release == 1 && n_closed == 1 && n_renamed == 1);
}

static void dup_onto_open(void)
{
	struct sock *a, *b;

	fd_new_socket(50, AF_INET, 1, 1);
	fd_new_socket(51, AF_INET, 1, 0);
	a = fd_sock(50);
	b = fd_sock(51);
	CHECK(a && b && a != b && a->nonblock);
	fd_dup(50, 51);			/* dup2: 51's own socket goes */
	CHECK(fd_sock(51) == a && a->refs == 2 && n_closed == 2);
	fd_new_socket(50, AF_INET, 0, 0);	/* reused number, not UDP */
	CHECK(!fd_sock(50) && fd_sock(51) == a && a->refs == 1 && a->fd == 51);
	CHECK(n_renamed == 2);
	fd_forget(51);
	fd_forget(50);
}

static void high_numbers(void)
{
	unsigned int fd;
	int n = n_closed;

	/* chunks allocated on first use, far apart */
	for (fd = 1000; fd < 1100; fd += 7)
		fd_new_socket(fd, AF_INET, 1, 0);
	fd_new_socket(FD_CHUNK * 3 + 5, AF_INET, 1, 0);
	fd_new_socket(FD_CHUNK * FD_NCHUNKS - 1, AF_INET, 1, 0);
	CHECK(fd_sock(1000) && fd_sock(1098) && !fd_sock(1001));
	CHECK(fd_sock(FD_CHUNK * 3 + 5) && fd_sock(FD_CHUNK * FD_NCHUNKS - 1));
	CHECK(!fd_sock(FD_CHUNK * FD_NCHUNKS) && !fd_sock(-1));
	fd_new_socket(FD_CHUNK * FD_NCHUNKS, AF_INET, 1, 0);	/* beyond: ignored */
	CHECK(!fd_sock(FD_CHUNK * FD_NCHUNKS));
	fd_close_range(1000, ~0u);
	CHECK(!fd_sock(1000) && !fd_sock(FD_CHUNK * 3 + 5) && !fd_sock(FD_CHUNK * FD_NCHUNKS - 1));
	CHECK(n_closed - n == 15 + 2);
}

static void learnt(void)
{
	int udp = socket(AF_INET, SOCK_DGRAM, 0);
	int udp6 = socket(AF_INET6, SOCK_DGRAM, 0);
	int tcp = socket(AF_INET, SOCK_STREAM, 0);
	int nb = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	int p[2], closed, n = n_made;
	struct sock *s;

	CHECK(udp >= 0 && tcp >= 0 && nb >= 0 && !pipe(p));
	s = fd_sock_classify(udp);
	CHECK(s && s->fd == udp && !s->kpath && !s->nonblock);
	CHECK(fd_sock_classify(udp) == s);	/* learnt once */
	s = fd_sock_classify(nb);
	CHECK(s && s->nonblock);
	CHECK(!fd_sock_classify(tcp) && fd_ent(tcp) && fd_ent(tcp)->kind == FD_OTHER);
	CHECK(!fd_sock_classify(p[0]) && fd_ent(p[0])->kind == FD_OTHER);
	if (udp6 >= 0) {
		s = fd_sock_classify(udp6);
		CHECK(s && s->kpath == ACCIO_KPATH_IPV6 && s->tried);
		fd_forget(udp6);
		close(udp6);
	}
	CHECK(n_made == n);		/* learnt, not made */
	fd_new_socket(77, AF_INET6, 1, 0);	/* made by the program: counted at once */
	CHECK(n_made == n + 1 && fd_sock(77)->kpath == ACCIO_KPATH_IPV6);
	fd_forget(77);
	closed = dup(p[1]);
	close(closed);
	errno = 1234;
	CHECK(!fd_sock_classify(closed) && errno == 1234);	/* EBADF: nothing kept */
	CHECK(!fd_ent(closed) || fd_ent(closed)->kind == FD_UNKNOWN);
	fd_forget(udp);
	fd_forget(nb);
	fd_forget(tcp);
	fd_forget(p[0]);
	close(udp);
	close(nb);
	close(tcp);
	close(p[0]);
	close(p[1]);
}

static void row_fds(void)
{
	int n = n_fd_closed;

	fd_mark_rowfd(60, 1);
	fd_mark_rowfd(2000, 1);
	CHECK(fd_is_rowfd(60) && fd_is_rowfd(2000) && !fd_is_rowfd(61));
	CHECK(fd_next_rowfd(0, ~0u) == 60 && fd_next_rowfd(61, ~0u) == 2000);
	CHECK(fd_next_rowfd(61, 1999) == -1);
	fd_forget(60);			/* the program cannot make it forget a row fd */
	CHECK(fd_is_rowfd(60) && n_fd_closed == n);
	fd_close_range(0, 3000);
	CHECK(fd_is_rowfd(60) && fd_is_rowfd(2000));
	fd_dup(60, 62);			/* a row fd's duplicate is nothing of ours */
	CHECK(!fd_is_rowfd(62) && !fd_sock(62));
	fd_mark_rowfd(60, 0);
	fd_mark_rowfd(2000, 0);
	CHECK(!fd_is_rowfd(60) && fd_next_rowfd(0, ~0u) == -1);
}

static void fork_reader(void)
{
	struct sock *a, *b, *k;

	accio_cfg.fork_mode = FORK_READER;
	fd_new_socket(70, AF_INET, 1, 0);
	fd_new_socket(71, AF_INET, 1, 0);
	fd_new_socket(72, AF_INET, 1, 0);
	a = fd_sock(70);
	b = fd_sock(71);
	k = fd_sock(72);
	fake_conn(a);
	fake_conn(k);
	k->explicit_accel = 1;		/* accio_accelerate(): kept */
	fd_dup(70, 73);
	n_release = 0;
	fork_prepare();
	CHECK(n_release == 1);		/* a's row, once for its two descriptors */
	CHECK(!a->conn && a->forked && !a->kpath && !a->tried);
	CHECK(!b->conn && b->forked && !b->tried);	/* the next receiver takes a row */
	CHECK(k->conn != NULL);
	fork_parent();
	CHECK(k->conn != NULL);
	/* the child: a kept row is the parent's, a socket without one is the child's */
	fork_prepare();
	fork_child();
	CHECK(n_after_fork == 1);
	CHECK(!k->conn && k->kpath == ACCIO_KPATH_SHARED && k->tried && k->forked);
	CHECK(b->forked && !b->tried && !b->kpath);
	fd_close_range(70, 73);
	CHECK(!fd_sock(70) && !fd_sock(73));
}

static void fork_release_mode(void)
{
	struct sock *s;

	accio_cfg.fork_mode = FORK_RELEASE;
	fd_new_socket(80, AF_INET, 1, 0);
	s = fd_sock(80);
	fake_conn(s);
	fork_prepare();
	fork_parent();
	CHECK(!s->conn && s->kpath == ACCIO_KPATH_FORK && s->tried);
	fd_forget(80);
	accio_cfg.fork_mode = FORK_READER;
}

/* The child: inherited row fds are ordinary descriptors. */
static void fork_row_fds(void)
{
	fd_mark_rowfd(90, 1);
	fd_mark_rowfd(3000, 1);
	fork_prepare();
	fork_child();
	CHECK(!fd_is_rowfd(90) && !fd_is_rowfd(3000) && fd_next_rowfd(0, ~0u) == -1);
}

int main(void)
{
	fd_hooks.sock_made = sock_made;
	fd_hooks.sock_renamed = sock_renamed;
	fd_hooks.sock_closed = sock_closed;
	fd_hooks.fd_closed = fd_closed;
	dup_and_close();
	dup_onto_open();
	high_numbers();
	learnt();
	row_fds();
	fork_reader();
	fork_release_mode();
	fork_row_fds();
	CHECK_DONE("fdtable");
}
