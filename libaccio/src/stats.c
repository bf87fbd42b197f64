// SPDX-License-Identifier: MIT
/*
 * The per-process statistics file (statfile.h) that `accio stat` reads: a
 * slot for each accelerated socket (its counters live there) and for each
 * socket kept on the kernel path for a reason, with its kernel-path
 * datagrams. Below the connections: uses only the descriptor table and
 * the settings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "statfile.h"

static struct accio_statfile *statfile;
static int statfile_failed;
static char statfile_path[256];

static struct accio_statfile *statfile_open(void)
{
	const char *dir = getenv("ACCIO_STAT_DIR");
	struct accio_statfile *f;
	int fd, i;

	if (statfile || statfile_failed)
		return statfile;
	statfile_failed = 1;
	if (!dir || !*dir)
		dir = ACCIO_STATFILE_DIR;
	mkdir(dir, 01777);	/* exists already, as a rule */
	if (snprintf(statfile_path, sizeof(statfile_path), "%s/%d", dir,
		     (int)getpid()) >= (int)sizeof(statfile_path))
		return NULL;
	fd = open(statfile_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, sizeof(*f)) < 0) {
		syscall(SYS_close, fd);
		unlink(statfile_path);
		return NULL;
	}
	f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	syscall(SYS_close, fd);
	if (f == MAP_FAILED) {
		unlink(statfile_path);
		return NULL;
	}
	f->pid = getpid();
	f->nslots = ACCIO_STATFILE_SLOTS;
	for (i = 0; i < ACCIO_STATFILE_SLOTS; i++)
		f->slot[i].fd = -1;
	memcpy(f->magic, ACCIO_STATFILE_MAGIC, 8);
	statfile = f;
	statfile_failed = 0;
	return f;
}

/* A free slot of the file, or -1 (counted in overflow). Table lock held. */
static int free_slot(struct accio_statfile *f)
{
	int i;

	for (i = 0; i < ACCIO_STATFILE_SLOTS; i++)
		if (f->slot[i].fd < 0)
			return i;
	f->overflow++;
	return -1;
}

/* Count the connection in the file (table lock held); fd: its descriptor. */
void stats_attach(struct conn *c, int fd)
{
	struct accio_statfile *f = statfile_open();
	int i;

	if (!f)
		return;
	if (c->slot < 0) {
		if ((i = free_slot(f)) < 0)
			return;
		c->slot = i;
		f->slot[i].st = *c->st;
		f->slot[i].st.row = c->r.index;
		f->slot[i].rowfd = c->r.fd;
		f->slot[i].kpath = ACCIO_KPATH_ROW;
		c->st = &f->slot[i].st;
	}
	__atomic_store_n(&f->slot[c->slot].fd, fd, __ATOMIC_RELEASE);
}

/*
 * A socket on the kernel path for a reason (s->kpath) has a slot too, so
 * that `accio stat` shows it with the reason and its datagrams. Table lock
 * held.
 */
void stats_attach_kernel(struct sock *s)
{
	struct accio_statfile *f = statfile_open();
	int i;

	if (!f || !s->kpath)
		return;
	if (s->slot < 0) {
		if ((i = free_slot(f)) < 0)
			return;
		s->slot = i;
		memset(&f->slot[i].st, 0, sizeof(f->slot[i].st));
		f->slot[i].st.rx_kernel = s->kst.rx_kernel;
		f->slot[i].st.tx_kernel = s->kst.tx_kernel;
		f->slot[i].rowfd = 0;
	}
	f->slot[s->slot].kpath = s->kpath;
	__atomic_store_n(&f->slot[s->slot].fd, s->fd, __ATOMIC_RELEASE);
}

void stats_detach_kernel(struct sock *s)
{
	if (s->slot < 0 || !statfile)
		return;
	s->kst = statfile->slot[s->slot].st;
	__atomic_store_n(&statfile->slot[s->slot].fd, -1, __ATOMIC_RELEASE);
	s->slot = -1;
}

/* A socket on the kernel path is closed, or the process exits. */
void sock_kernel_done(struct sock *s)
{
	static const char *const names[] = ACCIO_KPATH_NAMES;
	struct accio_stats st = s->kst;
	char line[160];
	int len;

	if (!s->kpath || s->conn)
		return;
	if (s->slot >= 0 && statfile)
		st = statfile->slot[s->slot].st;
	if (accio_cfg.print_stats && s->kpath > 0 && s->kpath < ACCIO_KPATH_N) {
		len = snprintf(line, sizeof(line),
			       "accio: kernel-path fd=%d reason=%s rx_kernel=%llu tx_kernel=%llu\n",
			       s->fd, names[s->kpath], (unsigned long long)st.rx_kernel,
			       (unsigned long long)st.tx_kernel);
		if (len > 0)
			syscall(SYS_write, 2, line, (size_t)len);
	}
	stats_detach_kernel(s);
}

/* k datagrams of fd went through the kernel: count them. */
static void count_kernel(int fd, int tx, ssize_t k)
{
	struct sock *s = fd_sock(fd);
	struct accio_stats *st;
	int saved = errno;

	if (k <= 0 || !s || !s->kpath || sock_conn(s))
		return;
	if (s->slot < 0) {
		pthread_mutex_lock(&accio_table_lock);
		if (s->slot < 0 && fd_sock(fd) == s)
			stats_attach_kernel(s);
		pthread_mutex_unlock(&accio_table_lock);
	}
	st = s->slot >= 0 && statfile ? &statfile->slot[s->slot].st : &s->kst;
	if (tx)
		st->tx_kernel += k;
	else
		st->rx_kernel += k;
	errno = saved;
}

/* A datagram call of fd went to the kernel (n: its result). */
ssize_t kernel_io(int fd, int tx, ssize_t n)
{
	count_kernel(fd, tx, n >= 0);
	return n;
}

/* A batched call of fd went to the kernel (n: datagrams or -1). */
ssize_t kernel_io_n(int fd, int tx, ssize_t n)
{
	count_kernel(fd, tx, n);
	return n;
}

void stats_detach(struct conn *c)
{
	if (c->slot < 0 || !statfile)
		return;
	c->own_st = *c->st;
	c->st = &c->own_st;
	__atomic_store_n(&statfile->slot[c->slot].fd, -1, __ATOMIC_RELEASE);
	c->slot = -1;
}

/* A forked child writes its own file, if it accelerates anything. */
void stats_forget_after_fork(void)
{
	if (statfile)
		munmap(statfile, sizeof(*statfile));
	statfile = NULL;
	statfile_failed = 0;
}

/* The process exits: its file goes (a forked child's is its own). */
void stats_file_remove(void)
{
	if (statfile && statfile->pid == getpid())
		unlink(statfile_path);
}
