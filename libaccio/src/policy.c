// SPDX-License-Identifier: MIT
/*
 * What to accelerate (config.h: the environment), the library's start and exit, the
 * public calls of accio.h other than zero copy, and the per-process
 * statistics file (statfile.h) that `accio stat` reads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
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

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void)
{
#ifdef ACCIO_SHARED
	const char *accel = "all";	/* preloaded into an unmodified binary */
#else
	const char *accel = "none";	/* linked in: the app opts in itself */
#endif
	config_read(&accio_cfg, getenv, accel, WIN_BYTES - ACCIO_TX_HDR);
}

void lib_init(void)
{
	pthread_once(&init_once, init);
}

int policy_wants(uint16_t lport, uint16_t rport)
{
	lib_init();
	return config_wants(&accio_cfg, lport, rport);
}

/* ---- the statistics file ---------------------------------------------- */

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

int uring_in_process(void)
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

/* ---- start and exit ---------------------------------------------------- */

static void release_at_exit(struct sock *s)
{
	conn_release(s, 1);
	sock_kernel_done(s);
}

static void at_exit(void)
{
	pthread_mutex_lock(&accio_table_lock);
	fd_foreach_sock(release_at_exit);
	pthread_mutex_unlock(&accio_table_lock);
	if (statfile && statfile->pid == getpid())
		unlink(statfile_path);
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
 * work, through the kernel.
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
	register_atfork(fd_fork_prepare, fd_fork_parent, fd_fork_child);
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
