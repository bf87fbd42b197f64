/* SPDX-License-Identifier: MIT */
/*
 * libaccio internals, shared by its parts. The parts are in layers; a part
 * calls only parts of the layers below it and, within its layer, those
 * listed before it:
 *
 * bottom, which calls nothing of the library:
 *   row.c        one ICT row: SIOCACCIO, mappings, records, the wait
 *   config.c     the settings from the environment
 *
 * the table, which calls nothing of the library either and tells the
 * layers above of its events through fd_hooks:
 *   fdtable.c    descriptors: which are UDP sockets, which share a socket
 *                (dup), inherited ones, row fds
 *
 * middle:
 *   stats.c      the per-process statistics file read by `accio stat`
 *   conn.c       an accelerated socket: its row, rings, waits, the receive
 *                and transmit paths, transmit timestamps
 *   sockopt.c    socket options: those a row reproduces, and those that
 *                keep a socket on the kernel path
 *   fork.c       which process keeps or takes a socket's row at fork
 *   policy.c     the library's start and exit, what to accelerate, io_uring,
 *                the calls of accio.h other than zero copy
 *
 * top, the interposed calls and the zero-copy API:
 *   readiness.c  poll, select and epoll over rows and kernel descriptors
 *   zerocopy.c   the zero-copy API of accio.h
 *   posix.c      the interposed POSIX surface (socket calls, read/write,
 *                dup and close families, fcntl/ioctl, fortified entries)
 */
#ifndef ACCIO_INTERNAL_H
#define ACCIO_INTERNAL_H

#include <linux/accio.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "accio.h"
#include "config.h"
#include "prof_marks.h"	/* a busy-wait is waiting: count_pause, count_resume */
#include "row.h"
#include "statfile.h"

#define NDEST		16
#define WIN_BYTES	ACCIO_ROW_MMIO_TX_BYTES
#define HIDDEN		__attribute__((visibility("hidden")))

enum { DEST_FREE, DEST_OK, DEST_KERNEL };

struct dest {
	uint32_t ip;		/* network order */
	int state;
};

/*
 * A connection's ring lock: one atomic operation to take it and one to
 * release it when nobody else wants it (the C library's mutex costs several
 * times that on the datagram path); contended, waiters sleep on a futex.
 */
struct rlock {
	int v;			/* 0 free, 1 taken, 2 taken and waited for */
};

HIDDEN void rlock_take_slow(struct rlock *l);
HIDDEN void rlock_wake(struct rlock *l);

static inline void rlock_init(struct rlock *l)
{
	l->v = 0;
}

static inline void rlock_take(struct rlock *l)
{
	int free = 0;

	if (!__atomic_compare_exchange_n(&l->v, &free, 1, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		rlock_take_slow(l);
}

static inline void rlock_release(struct rlock *l)
{
	if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)
		rlock_wake(l);
}

struct sock;

/*
 * An accelerated socket: its row (registers, rings; the row's remote
 * endpoint is the connected peer, 0: none) and the state of its paths.
 */
struct conn {
	struct accio_row r;
	struct sock *sock;	/* the socket it serves */
	uint64_t rx_rptr, tx_wptr, win_next;
	uint64_t tx_rptr_seen;	/* TX_RPTR when last read: the engine is at least there */
	int ifindex;		/* the interface of lip, 0: unknown */
	uint32_t max_payload;	/* larger datagrams take the kernel (MTU) */
	int remote_kernel;	/* the connected peer is behind another next hop */
	int row_bits;		/* the socket's ROW_* the row follows */
	int hdr_bits;		/* the row's header now (ROW_HDR_BITS): a datagram's
				 * IP_TOS or IP_TTL message may have changed it */
	int kernel_pending;	/* the kernel socket may hold datagrams */
	int backlog;		/* those came before the row: read them first */
	uint8_t *zc_tx;		/* outstanding zero-copy TX buffer */
	uint32_t zc_len;	/* its size */
	uint32_t zc_rx;		/* bytes of the held zero-copy RX record */
	uint64_t ts_seq;	/* engine datagram awaiting its TX stamp, 0: none */
	uint32_t ts_id;		/* its SOF_TIMESTAMPING_OPT_ID key */
	uint8_t *bounce;	/* zero-copy receive of a kernel-path datagram */
	int bounce_held;
	struct dest dests[NDEST];
	struct rlock rx_lock, tx_lock;
	struct accio_stats *st;	/* in the statistics file, or own_st */
	struct accio_stats own_st;
	int slot;		/* statistics file slot, -1: none */
	int dead;		/* released: rings unmapped (under both locks) */
	uint32_t wait_avg_us;	/* ACCIO_SPIN_US=auto: recent receive waits */
	uint64_t rx_wait_from;	/* auto: the leaf's empty ring since (us), for the sleep */
};

/*
 * A UDP/IPv4 socket as this process knows it: one per open socket,
 * shared by the descriptors that refer to it (dup, dup2, F_DUPFD...).
 * Its options are the socket's, so they live here, not per descriptor.
 */
struct sock {
	int refs;		/* descriptors referring to it */
	int fd;			/* one of them, for system calls */
	struct conn *conn;	/* accelerated: atomic, NULL otherwise */
	int tried;		/* acceleration attempted */
	int forked;		/* open at a fork: a row only for a receiving process */
	int explicit_accel;	/* accelerated by accio_accelerate(): kept at fork */
	int nonblock;		/* O_NONBLOCK as the app set it */
	int rcvtimeo, sndtimeo;	/* SO_RCVTIMEO/SO_SNDTIMEO in ms, 0: none */
	int tstamp;		/* SO_TIMESTAMPING flags */
	int rxcm;		/* RXCM_*: control messages asked for on receive */
	int rcvbuf, sndbuf;	/* SO_RCVBUF/SO_SNDBUF set by the program: ring sizes */
	int kpath;		/* ACCIO_KPATH_*: kept on the kernel path, and why */
	int row_bits;		/* ROW_*: what a row made now follows */
	uint64_t retry_at;	/* ACCIO_KPATH_SHARED: next try for a row (us) */
	int slot;		/* statistics file slot while on the kernel path, -1 */
	struct accio_stats kst;	/* its counters while on the kernel path */
};

/*
 * Socket choices the kernel programs into a row (STATE.NO_DF, STATE.GROUP,
 * STATE.TOS, STATE.TTL)
 */
#define ROW_NO_DF	0x01	/* IP_MTU_DISCOVER other than WANT or DO */
#define ROW_GROUP	0x02	/* SO_REUSEPORT */
#define ROW_TOS_SHIFT	8	/* IP_TOS, 8 bits */
#define ROW_TTL_SHIFT	16	/* IP_TTL, 8 bits */
#define ROW_TOS(bits)	(((bits) >> ROW_TOS_SHIFT) & 0xff)
#define ROW_TTL(bits)	(((bits) >> ROW_TTL_SHIFT) & 0xff)
/* what a row takes in place (ACCIO_IOC_HDR), without a new row */
#define ROW_HDR_BITS	(ROW_NO_DF | 0xff << ROW_TOS_SHIFT | 0xff << ROW_TTL_SHIFT)

/* Linux's option numbers the C libraries' headers may lack (asm-generic) */
#ifndef SO_TIMESTAMP_OLD
#define SO_TIMESTAMP_OLD	29
#define SO_TIMESTAMPNS_OLD	35
#define SO_TIMESTAMPING_OLD	37
#endif
#ifndef SO_TIMESTAMP_NEW
#define SO_TIMESTAMP_NEW	63
#define SO_TIMESTAMPNS_NEW	64
#define SO_TIMESTAMPING_NEW	65
#endif
#ifndef SO_RXQ_OVFL
#define SO_RXQ_OVFL		40
#endif
#ifndef IP_PASSSEC
#define IP_PASSSEC		18
#endif
#ifndef IP_RECVORIGDSTADDR
#define IP_RECVORIGDSTADDR	20
#endif
#ifndef IP_ORIGDSTADDR
#define IP_ORIGDSTADDR		IP_RECVORIGDSTADDR
#endif
#ifndef IP_CHECKSUM
#define IP_CHECKSUM		23
#endif
#ifndef IP_RECVFRAGSIZE
#define IP_RECVFRAGSIZE		25
#endif
#ifndef SOL_UDP
#define SOL_UDP			17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT		103
#endif

/* Control messages a receive through the ring reproduces (struct sock.rxcm) */
#define RXCM_PKTINFO	0x01	/* IP_PKTINFO */
#define RXCM_ORIGDST	0x02	/* IP_RECVORIGDSTADDR */
#define RXCM_TS		0x04	/* SO_TIMESTAMP: struct timeval */
#define RXCM_TSNS	0x08	/* SO_TIMESTAMPNS: struct timespec */
#define RXCM_TSNEW	0x10	/* the _NEW forms of the timestamp messages */
#define RXCM_TTL	0x20	/* IP_RECVTTL */
#define RXCM_TOS	0x40	/* IP_RECVTOS */

enum { FD_UNKNOWN, FD_OTHER, FD_UDP };

/* ---- fdtable.c ---- */
/*
 * The descriptor table: entries in chunks of 1024 allocated on first use,
 * so that descriptors above 1024 work and lookups take no lock.
 */
#define FD_CHUNK_BITS	10
#define FD_CHUNK	(1 << FD_CHUNK_BITS)
#define FD_NCHUNKS	1024		/* descriptors below 1,048,576 */

enum { FD_ROW = FD_UDP + 1 };

struct fdent {
	struct sock *sock;
	unsigned char kind;
};

HIDDEN extern struct fdent *fd_chunks[FD_NCHUNKS];

static inline struct fdent *fd_ent(int fd)
{
	struct fdent *c;

	if ((unsigned int)fd >= FD_CHUNK * FD_NCHUNKS)
		return NULL;
	c = __atomic_load_n(&fd_chunks[fd >> FD_CHUNK_BITS], __ATOMIC_ACQUIRE);
	return c ? &c[fd & (FD_CHUNK - 1)] : NULL;
}

HIDDEN extern pthread_mutex_t accio_table_lock;
HIDDEN struct sock *fd_sock(int fd);		/* the fd's UDP socket, or NULL */
HIDDEN struct sock *fd_sock_learn(int fd);	/* an fd the table does not know */

/*
 * What is fd? Learnt once, with the socket options the kernel reports; on
 * the datagram path a table lookup inline, the rest out of line.
 */
static inline struct sock *fd_sock_classify(int fd)
{
	struct fdent *e = fd_ent(fd);

	if (e && e->kind != FD_UNKNOWN)
		return __atomic_load_n(&e->sock, __ATOMIC_ACQUIRE);
	if (fd < 0)
		return NULL;
	return fd_sock_learn(fd);
}
HIDDEN void fd_new_socket(int fd, int family, int udp, int nonblock);
HIDDEN void fd_forget(int fd);			/* closed */
HIDDEN void fd_dup(int oldfd, int newfd);	/* newfd now refers to oldfd's file */
HIDDEN void fd_close_range(unsigned int first, unsigned int last);
HIDDEN int fd_is_rowfd(int fd);
HIDDEN void fd_mark_rowfd(int fd, int on);
HIDDEN void fd_unmark_rowfds(void);
HIDDEN int fd_next_rowfd(unsigned int from, unsigned int last);
HIDDEN void fd_foreach_sock(void (*fn)(struct sock *));	/* table lock held */

/*
 * What follows from the table's events is the layers' above (policy.c sets
 * the socket events at the library's start, readiness.c the others with
 * its first epoll registration). Called with the table lock held; until
 * set, they do nothing.
 */
struct fd_hooks {
	/* socket() made s */
	void (*sock_made)(struct sock *s);
	/* s->fd, s's descriptor for system calls, is now another of its own */
	void (*sock_renamed)(struct sock *s);
	/* s's last descriptor is closed: s is freed on return */
	void (*sock_closed)(struct sock *s);
	/* fd is closed, or refers to another file now (dup2, a new socket) */
	void (*fd_closed)(int fd);
	/* s's kernel waits move from one descriptor to another: its row fd
	 * (from -1: it had none, to -1: it has none, its own descriptors) */
	void (*row_moved)(struct sock *s, int from, int to);
};

HIDDEN extern struct fd_hooks fd_hooks;

static inline struct conn *sock_conn(struct sock *s)
{
	return s ? __atomic_load_n(&s->conn, __ATOMIC_ACQUIRE) : NULL;
}

static inline struct conn *conn_of(int fd)
{
	return sock_conn(fd_sock(fd));
}

/* ---- stats.c ---- */
HIDDEN void stats_attach(struct conn *c, int fd);	/* table lock held */
HIDDEN void stats_detach(struct conn *c);
HIDDEN void stats_attach_kernel(struct sock *s);	/* table lock held */
HIDDEN void stats_detach_kernel(struct sock *s);	/* table lock held */
HIDDEN void sock_kernel_done(struct sock *s);		/* closed or exiting */
HIDDEN ssize_t kernel_io(int fd, int tx, ssize_t n);	/* count a kernel-path call */
HIDDEN ssize_t kernel_io_n(int fd, int tx, ssize_t n);	/* ... of n datagrams */
HIDDEN void stats_forget_after_fork(void);
HIDDEN void stats_file_remove(void);			/* at exit */

/* ---- conn.c ---- */
HIDDEN int conn_create(struct sock *s);			/* table lock held */
HIDDEN void conn_release(struct sock *s, int closing);	/* table lock held */
HIDDEN int conn_set_hdr(struct conn *c, int bits);	/* TX lock held */
HIDDEN int ensure_bound(int fd, uint16_t *lport);
HIDDEN uint32_t ring_size_for(int bytes);
/* the glibc build in a musl program (policy.c finds out): musl's msghdrs */
HIDDEN extern int accio_foreign_libc;
/* system calls with a program's msghdr: musl's padding cleared first */
HIDDEN ssize_t sys_sendmsg(int fd, const struct msghdr *m, int flags);
HIDDEN ssize_t sys_recvmsg(int fd, struct msghdr *m, int flags);
HIDDEN void mmsg_clear_pads(struct mmsghdr *v, unsigned int n);
HIDDEN void stats_fill(struct conn *c, struct accio_stats *st);
HIDDEN int rx_empty(struct conn *c);
HIDDEN int conn_wait(struct conn *c, int dir, uint32_t need, uint64_t deadline);

/*
 * The kernel's part of a call that POSIX makes a cancellation point (read,
 * recvfrom, poll, connect, ...). The C library's own system calls there end
 * a thread that pthread_cancel() reached; libaccio's, made directly, do so
 * with asynchronous cancellation for the length of the call: a cancel sent
 * while the thread sleeps in the kernel, or before, ends it there. Only
 * where the library holds no lock of its own (a ring's, the table's).
 */
HIDDEN int cancel_async(void);		/* returns the type to restore */
/*
 * A pending cancel at a call's entry. The receives and sends are
 * cancellation points: a thread that pthread_cancel() reached ends when it
 * enters one, before it takes or sends anything, though a datagram waits
 * in its ring. The library's fast paths make no system call there, so they
 * look themselves - once the process has cancelled a thread: libaccio's
 * pthread_cancel() sets accio_cancels before it cancels (the shared
 * builds); linked statically, the library looks at every call. One load
 * and a branch on the fast path until then.
 */
HIDDEN extern int accio_cancels;
HIDDEN void cancel_point(void);
#define CANCELS() __builtin_expect(__atomic_load_n(&accio_cancels, __ATOMIC_RELAXED), 0)
#define CANCEL_POINT() do {						\
	if (CANCELS())							\
		cancel_point();						\
} while (0)
HIDDEN void cancel_restore(int type);	/* keeps errno */
#define CANCELLABLE(call) ({					\
	int type_ = cancel_async();				\
	__typeof__(call) ret_ = (call);				\
	cancel_restore(type_);					\
	ret_;							\
})
/* the deadline of a blocking call with SO_RCVTIMEO/SO_SNDTIMEO timeo_ms */
HIDDEN uint64_t deadline_of(int timeo_ms);
HIDDEN int tx_room(struct conn *c, uint32_t rec, int nonblock);
HIDDEN void tx_publish(struct conn *c, uint32_t rec);
HIDDEN void tx_stamp_want(struct conn *c);
HIDDEN int dest_ok(struct conn *c, uint32_t ip);
HIDDEN void paths_renew(struct conn *c);

/* Did a route or the NIC's MTU change since c last looked? */
static inline int paths_moved(const struct conn *c)
{
	return row_paths_gen(&c->r) != c->r.paths_gen;
}
/*
 * The rings are mapped twice in a row: a record never needs splitting.
 * Inline, so that a record header's fixed-size copy is a few loads and
 * stores rather than a call into the C library.
 */
static inline void ring_read(const uint8_t *ring, uint32_t size, uint64_t ptr,
			     void *dst, size_t len)
{
	memcpy(dst, ring + (ptr & (size - 1)), len);
}

static inline void ring_write(uint8_t *ring, uint32_t size, uint64_t ptr,
			      const void *src, size_t len)
{
	memcpy(ring + (ptr & (size - 1)), src, len);
}

/* A record header: at an 8-byte aligned ring offset, into an aligned buffer. */
#define HDR_ALIGN __attribute__((aligned(8)))

static inline void ring_read_hdr(const uint8_t *ring, uint32_t size, uint64_t ptr,
				 void *dst, size_t len)
{
	memcpy(__builtin_assume_aligned(dst, 8),
	       __builtin_assume_aligned(ring + (ptr & (size - 1)), 8), len);
}

static inline void ring_write_hdr(uint8_t *ring, uint32_t size, uint64_t ptr,
				  const void *src, size_t len)
{
	memcpy(__builtin_assume_aligned(ring + (ptr & (size - 1)), 8),
	       __builtin_assume_aligned(src, 8), len);
}
HIDDEN void rmb_io(void);
HIDDEN uint64_t now_us(void);
HIDDEN uint64_t spin_clock_us(void);	/* the time CSR in us where known */
HIDDEN uint64_t hw_clock_ns(void);	/* the time CSR in ns, 0: unknown */

struct rx_args {
	int fd;			/* the descriptor the call came on */
	struct iovec *iov;
	int iovcnt;
	int flags;
	struct sockaddr_in *from;
	socklen_t *fromlen;
	struct msghdr *msg;	/* for msg_flags and control data */
};

HIDDEN ssize_t conn_recv(struct conn *c, struct rx_args *a);
HIDDEN ssize_t conn_sendmsg(struct conn *c, int fd, const struct msghdr *m, int flags);
HIDDEN ssize_t conn_send(struct conn *c, int fd, const void *buf, size_t len, int flags,
			 const struct sockaddr *to, socklen_t tolen);
HIDDEN ssize_t errqueue_recv(struct conn *c, int fd, struct msghdr *msg, int flags);

/* ---- sockopt.c ---- */
HIDDEN void sock_setopt(struct sock *s, int level, int name);
HIDDEN int sock_may_accelerate(struct sock *s);	/* table lock held */

/* ---- fork.c: pthread_atfork's handlers ---- */
HIDDEN void fork_prepare(void);
HIDDEN void fork_parent(void);
HIDDEN void fork_child(void);

/* ---- policy.c ---- */
HIDDEN void lib_init(void);
HIDDEN void maybe_accelerate(int fd, int may_bind);

/* ---- readiness.c ---- */
HIDDEN void epoll_follow(struct sock *s, int from, int to);	/* table lock held */

#endif /* ACCIO_INTERNAL_H */
