// SPDX-License-Identifier: MIT
/*
 * udp_pingpong: UDP round trips to an echo server on plain POSIX sockets,
 * with a latency histogram and the client processing time of the Accio
 * paper (section 8.1): RTT_sw - RTT_hw, where RTT_sw is measured by the
 * program and RTT_hw between the NIC's hardware timestamps of the request
 * leaving and the reply arriving. Run it as it is (Linux sockets) or with
 * LD_PRELOAD=/usr/lib/libaccio.so.
 *
 * usage: udp_pingpong [-s HOST] [-p PORT] [-m SIZE] [-n COUNT] [-w WARMUP]
 *                     [-i IFACE] [-t MS] [-q] [-M] [-b] [-H] [-C] [-B US [-P]]
 *                     [-z | -R | -U FLAGS]
 *
 * -H: no hardware timestamps (no SIOCSHWTSTAMP, no SO_TIMESTAMPING, so no
 * error-queue read after each round trip): between two requests the
 * program does only its own work (fill, check), for a processing time
 * taken from a capture of the NIC's wire (eval/wirecap.py). No proc_*
 * lines then.
 *
 * -z: libaccio's zero-copy API (accio.h) instead of send/recvmsg: the
 * request is written into a buffer inside the socket's TX ring
 * (accio_zc_alloc, accio_zc_send), the reply read from its place in the RX
 * ring (accio_zc_recv, with the NIC's receive timestamp) and copied out
 * (accio_zc_release): the shortest path the library has, for comparison
 * with the POSIX calls. Needs libaccio (LD_PRELOAD=libaccio.so); not with
 * -t.
 *
 * -R: the floor of a round trip through a row. The program accelerates its
 * socket itself (SIOCACCIO, no libaccio) and does in each round trip only
 * what the hardware asks for: the record's header word and the payload
 * copied into the TX ring in 8-byte words, the write pointer and the
 * doorbell; then it spins on the RX write pointer, copies the reply out and
 * stores the read pointer. With one request in flight the TX ring always
 * has room (the reply came, so the engine took the request), and nothing
 * else is shared. The NIC's stamps are read after the measured window: the
 * request's from the row's TX_TSTAMP, the reply's from its record. For
 * eval/breakdown.py (mode raw); not with -z or -t, nor under LD_PRELOAD.
 *
 * -B US: Linux's busy polling on the socket (SO_BUSY_POLL): a receive that
 * finds no datagram runs the NIC's NAPI poll on its own hart for up to US
 * microseconds before it sleeps. Prints busy_poll_rx=N, the datagrams the
 * kernel took by busy polling during the run (BusyPollRxPackets of
 * /proc/net/netstat, all sockets). With -P the socket prefers busy polling
 * (SO_PREFER_BUSY_POLL): with the interface's napi_defer_hard_irqs and
 * gro_flush_timeout set, the NIC's interrupt stays masked while the
 * program polls, so the poll, not the interrupt, takes the reply.
 *
 * -U FLAGS: the round trips through an io_uring (Debian's liburing; only
 * in the glibc build, udp_pingpong-glibc): each round trip queues a send
 * and a recvmsg and reaps both completions. FLAGS, comma-separated:
 * "plain" (one io_uring_enter a round trip submits both and waits),
 * "sqpoll" (IORING_SETUP_SQPOLL: a kernel thread on the next hart takes
 * the submissions, no system call to submit), "multishot" (one recvmsg
 * armed once with a ring of provided buffers, a completion per datagram:
 * only the send is submitted each round trip), "spin" (the completions are
 * polled in user space instead of waited for in io_uring_enter). Prints
 * uring_cqes=N (completions reaped) and uring_enters=N (calls into the
 * kernel liburing made to submit or wait, by its return path counters).
 *
 * -C: the hart census: after each measured round trip (outside its window)
 * the program asks which hart it runs on (sched_getcpu, a system call) and
 * prints rx_harts=H:N,... (how many replies it took on each hart), so that a
 * figure of a client the kernel may place anywhere says where it ran (on
 * the hart that takes the NIC's interrupt, a blocking reply needs no wake-up
 * on another hart).
 *
 * -b: a barrier between the warm-up and the measured round trips, for a
 * launcher of many clients (udp_multi): after its warm-up the client writes
 * one byte to fd 3 and waits until fd 4 reaches end of file. Clients then
 * measure together, in the steady state, not while others still start up
 * (exec, dynamic linking, their sockets and rows). The CPU times (cpu_*)
 * then start before the barrier: the wait there counts in them. After the
 * measured round trips, where fd 5 is a pipe too, the client writes a byte
 * to it and waits until fd 6 reaches end of file before it sorts, prints
 * and exits, so that no client's end shares the harts with others' round
 * trips.
 *
 * -t MS: a reply that has not come after MS milliseconds is lost (counted
 * in lost=N; a reply that comes later is skipped); without it the program
 * waits for every reply. The first loss prints what the kernel knows of the
 * connection ("diag" lines: the fdinfo of its Accio row fds and the
 * socket's line of /proc/net/udp), so that a loss can be explained.
 *
 * Every reply is checked against the request. Prints key=value lines:
 * ctx_voluntary=N, how often the program gave up its hart (slept) during
 * the measured round trips (getrusage), a blocking receive's wait once per
 * round trip, a spinning one's never;
 * RTT percentiles, a log2 histogram (hist_us_LO=N), hardware RTT and
 * processing time where the NIC timestamps are available, and the CPU
 * time of the guest from /proc/stat. Hardware timestamping is switched on
 * for IFACE (default eth0, SIOCSHWTSTAMP, needs CAP_NET_ADMIN); the
 * request's transmit timestamp is read from the socket's error queue
 * (SOF_TIMESTAMPING_OPT_TSONLY) and matched to the request by its key
 * (SOF_TIMESTAMPING_OPT_ID), the reply's receive timestamp from its
 * control message, as any SO_TIMESTAMPING program does. A transmit stamp
 * that arrives after the reply (a busy kernel completes sends late) is
 * matched when it comes, up to a millisecond after the last round trip;
 * hw_samples counts the round trips that have both stamps. proc_cdf_us lists the processing time's percentiles 1, 5, 10,
 * ..., 95, 99 and 100; proc_hist_ns all of them in buckets of 1/16 of an
 * octave (proc_hist() says how to read it), for pooling many clients;
 * cpu_self_us the program's CPU time over the measured round trips.
 *
 * Each measured round trip (send to receive) is marked for
 * eval/breakdown.py's instruction counter by two RISC-V hint
 * instructions, no-ops on every core; -M prints the program's memory map
 * at the end ("map " lines from /proc/self/maps) so that its user-space
 * addresses can be named.
 */
#define _GNU_SOURCE		/* sched_getcpu */
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/accio.h>
#include <linux/net_tstamp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <linux/errqueue.h>	/* after time.h: struct timespec */
#ifdef HAVE_LIBURING
#include <liburing.h>
#endif

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SCM_TIMESTAMPING
#define SCM_TIMESTAMPING SO_TIMESTAMPING
#endif

#include "prof_marks.h"
#include "row.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The hardware timestamp a control message carries, 0 if none. */
static uint64_t hw_stamp_cmsg(const struct cmsghdr *c)
{
	struct timespec ts[3];

	if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPING)
		return 0;
	memcpy(ts, CMSG_DATA(c), sizeof(ts));
	return ts[2].tv_sec * 1000000000ull + ts[2].tv_nsec;
}

/* Hardware timestamp of a message, 0 if none. */
static uint64_t hw_stamp(struct msghdr *m)
{
	struct cmsghdr *c;
	uint64_t t;

	for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
		if ((t = hw_stamp_cmsg(c)))
			return t;
	return 0;
}

/* One counter of /proc/net/netstat ("TcpExt" NAME), -1 if none. */
static long netstat(const char *name)
{
	char keys[4096], vals[4096], *k, *v, *ks, *vs;
	FILE *f = fopen("/proc/net/netstat", "r");
	long r = -1;

	while (f && fgets(keys, sizeof(keys), f) && fgets(vals, sizeof(vals), f)) {
		k = strtok_r(keys, " \n", &ks);
		v = strtok_r(vals, " \n", &vs);
		while (k && v) {
			if (!strcmp(k, name))
				r = atol(v);
			k = strtok_r(NULL, " \n", &ks);
			v = strtok_r(NULL, " \n", &vs);
		}
	}
	if (f)
		fclose(f);
	return r;
}

/*
 * One transmit timestamp from the socket's error queue, or 0; *id: the
 * datagram's key (SOF_TIMESTAMPING_OPT_ID: 0 for the socket's first).
 */
/* The transmit timestamp and its key in an error-queue message, 0 if none. */
static uint64_t tx_stamp_msg(struct msghdr *m, uint32_t *id)
{
	struct sock_extended_err ee;
	struct cmsghdr *c;

	*id = UINT32_MAX;
	for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR &&
		    c->cmsg_len >= CMSG_LEN(sizeof(ee))) {
			memcpy(&ee, CMSG_DATA(c), sizeof(ee));
			if (ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING)
				*id = ee.ee_data;
		}
	}
	return hw_stamp(m);
}

static uint64_t tx_stamp(int fd, char *ctl, size_t len, uint32_t *id)
{
	struct msghdr m = { .msg_control = ctl, .msg_controllen = len };

	if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
		return 0;
	return tx_stamp_msg(&m, id);
}

/*
 * Every transmit timestamp in the error queue, each into stamps[key - base]
 * (the measured round trips' requests; a warm-up's is passed over).
 */
static void tx_stamps_drain(int fd, char *ctl, size_t len, uint64_t *stamps,
			    long base, long count)
{
	uint64_t t;
	uint32_t id;

	while ((t = tx_stamp(fd, ctl, len, &id)))
		if ((long)id >= base && (long)id - base < count)
			stamps[id - base] = t;
}

/*
 * proc_hist_ns=K:N,...: the processing times (sorted) in buckets of 1/16
 * of an octave, so that many clients' samples pool exactly (within 6 %)
 * into one distribution: key K < 16 is K ns; else K = 16 e + s holds
 * [(16 + s) << (e - 4), (17 + s) << (e - 4)) ns, e = floor(log2(ns)).
 */
static unsigned int hist_key(uint64_t ns)
{
	unsigned int e = 63 - __builtin_clzll(ns | 1);

	return ns < 16 ? ns : e * 16 + ((ns >> (e - 4)) & 15);
}

static void proc_hist(const uint64_t *sorted, size_t n)
{
	size_t i = 0, j;

	printf("proc_hist_ns=");
	while (i < n) {
		unsigned int k = hist_key(sorted[i]);

		for (j = i; j < n && hist_key(sorted[j]) == k; j++)
			;
		printf("%s%u:%zu", i ? "," : "", k, j - i);
		i = j;
	}
	printf("\n");
}

/* this process's CPU time (the scheduler's own count), ns */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void cpu_times(unsigned long long *busy, unsigned long long *total)
{
	unsigned long long v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int i;

	*busy = *total = 0;
	if (!f)
		return;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
		for (i = 0; i < 8; i++)
			*total += v[i];
		*busy = *total - v[3] - v[4];	/* minus idle and iowait */
	}
	fclose(f);
}

/* -b: ready after the warm-up (a byte on fd 3), go at end of file on fd 4 */
static int wait_barrier(void)
{
	char c = 'r';

	if (write(3, &c, 1) != 1) {
		perror("udp_pingpong: -b: fd 3");
		return -1;
	}
	close(3);
	while (read(4, &c, 1) > 0)
		;
	return 0;
}

/*
 * -b, after the measured round trips: say so on fd 5 and wait for the end
 * of file on fd 6, so that no client sorts and prints while another still
 * measures (udp_multi). Without those fds (a launcher that has only the
 * first barrier), nothing.
 */
static void finish_barrier(void)
{
	struct stat st;
	char c = 'm';

	if (fstat(5, &st) < 0 || !S_ISFIFO(st.st_mode) || write(5, &c, 1) != 1)
		return;
	close(5);
	while (read(6, &c, 1) > 0)
		;
	close(6);
}

/* What the kernel shows of this process's connection: "diag" lines. */
static void diagnose(int fd, long round)
{
	struct sockaddr_in me;
	socklen_t len = sizeof(me);
	char path[300], link[128], line[256], port[8];
	struct dirent *e;
	DIR *d;
	FILE *f;

	printf("diag lost round %ld\n", round);
	d = opendir("/proc/self/fd");
	while (d && (e = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strstr(link, "accio"))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			printf("diag fd %s %s", e->d_name, line);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	if (getsockname(fd, (struct sockaddr *)&me, &len) < 0)
		return;
	snprintf(port, sizeof(port), ":%04X ", ntohs(me.sin_port));
	f = fopen("/proc/net/udp", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, port))
			printf("diag udp %s", line);
	if (f)
		fclose(f);
	fflush(stdout);
}

/* libaccio's zero-copy API, found at run time (-z) */
static void *(*zc_alloc)(int, size_t);
static ssize_t (*zc_send)(int, void *, size_t, const struct sockaddr_in *);
static ssize_t (*zc_recv)(int, const void **, struct sockaddr_in *, uint64_t *);
static int (*zc_release)(int, const void *);

static int zc_find(void)
{
	zc_alloc = (void *(*)(int, size_t))dlsym(RTLD_DEFAULT, "accio_zc_alloc");
	zc_send = (ssize_t (*)(int, void *, size_t, const struct sockaddr_in *))
		dlsym(RTLD_DEFAULT, "accio_zc_send");
	zc_recv = (ssize_t (*)(int, const void **, struct sockaddr_in *, uint64_t *))
		dlsym(RTLD_DEFAULT, "accio_zc_recv");
	zc_release = (int (*)(int, const void *))dlsym(RTLD_DEFAULT, "accio_zc_release");
	return zc_alloc && zc_send && zc_recv && zc_release ? 0 : -1;
}

/* One round trip through the zero-copy API: the reply's length, -1 on error. */
static ssize_t zc_round_trip(int fd, const uint8_t *tx, uint8_t *rx, int size,
			     uint64_t *rx_hw)
{
	const void *rb;
	void *b = zc_alloc(fd, size);
	ssize_t n;

	if (!b)
		return -1;
	memcpy(b, tx, size);
	if (zc_send(fd, b, size, NULL) != size)
		return -1;
	n = zc_recv(fd, &rb, NULL, rx_hw);
	if (n < 0)
		return -1;
	memcpy(rx, rb, n);
	if (zc_release(fd, rb) < 0)
		return -1;
	return n;
}

/* -U: the round trips through an io_uring */
struct uring {
	int sqpoll, multishot, spin, sq_hart;
	long cqes, enters;
	/* the transmit stamps, as tx_stamps_drain() stores them */
	uint64_t *stamps;
	long base, count;
#ifdef HAVE_LIBURING
	struct msghdr em;	/* the error queue's recvmsg */
	char ectl[256];
	int err_armed;
	struct io_uring ring;
	struct io_uring_buf_ring *br;
	uint8_t *bufs;
	struct msghdr mmsg;	/* the multishot recvmsg's layout */
	int armed;
#endif
};

#define URING_BUFS	8	/* provided buffers of the multishot receive */
#define URING_BUF_LEN	2048
#define URING_BGID	1

static int uring_flags(struct uring *u, char *flags)
{
	char *f, *save;

	for (f = strtok_r(flags, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		if (!strcmp(f, "sqpoll"))
			u->sqpoll = 1;
		else if (!strcmp(f, "multishot"))
			u->multishot = 1;
		else if (!strcmp(f, "spin"))
			u->spin = 1;
		else if (strcmp(f, "plain"))
			return -1;
	}
	return 0;
}

#ifdef HAVE_LIBURING
static int uring_open(struct uring *u, size_t ctl_len)
{
	struct io_uring_params p = { 0 };
	int i, ret;

	if (u->sqpoll) {
		/* the submission thread polls on the hart after this one */
		p.flags = IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF;
		u->sq_hart = (sched_getcpu() + 1) % sysconf(_SC_NPROCESSORS_ONLN);
		p.sq_thread_cpu = u->sq_hart;
		p.sq_thread_idle = 1000;	/* ms: it stays up between round trips */
	}
	ret = io_uring_queue_init_params(8, &u->ring, &p);
	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	if (!u->multishot)
		return 0;
	u->br = io_uring_setup_buf_ring(&u->ring, URING_BUFS, URING_BGID, 0, &ret);
	u->bufs = malloc(URING_BUFS * URING_BUF_LEN);
	if (!u->br || !u->bufs) {
		errno = u->br ? ENOMEM : -ret;
		return -1;
	}
	for (i = 0; i < URING_BUFS; i++)
		io_uring_buf_ring_add(u->br, u->bufs + i * URING_BUF_LEN,
				      URING_BUF_LEN, i,
				      io_uring_buf_ring_mask(URING_BUFS), i);
	io_uring_buf_ring_advance(u->br, URING_BUFS);
	u->mmsg.msg_controllen = ctl_len;
	return 0;
}

/* The error queue's recvmsg completed: its transmit stamp to its round trip. */
static void uring_stamp(struct uring *u, const struct io_uring_cqe *cqe)
{
	uint32_t id;
	uint64_t t = cqe->res >= 0 ? tx_stamp_msg(&u->em, &id) : 0;

	if (t && (long)id >= u->base && (long)id - u->base < u->count)
		u->stamps[id - u->base] = t;
	u->err_armed = 0;
}

/* Submit what is queued: a system call unless the SQ thread is awake. */
static void uring_submit(struct uring *u)
{
	if (!u->sqpoll || IO_URING_READ_ONCE(*u->ring.sq.kflags) & IORING_SQ_NEED_WAKEUP)
		u->enters++;
	io_uring_submit(&u->ring);
}

/* The next completion: polled (spin) or waited for. */
static int uring_cqe(struct uring *u, struct io_uring_cqe **cqe)
{
	int ret;

	if (u->spin) {
		while ((ret = io_uring_peek_cqe(&u->ring, cqe)) == -EAGAIN)
			;
		return ret;
	}
	if (!io_uring_peek_cqe(&u->ring, cqe))
		return 0;
	u->enters++;
	return io_uring_wait_cqe(&u->ring, cqe);
}

/*
 * One round trip: the send (and, without multishot, the recvmsg) queued,
 * submitted and reaped. The reply is in @rx (its control messages in @m,
 * or its timestamp in *rx_hw with multishot). Returns its length or -1.
 *
 * With the NIC's timestamps on, a recvmsg of the error queue is in the
 * ring too, armed again each time it completes: the request's transmit
 * stamp makes the socket readable for errors, and until something takes
 * the stamp the receive's poll would fire, retry and re-arm, spinning on
 * the hart until the reply came. Its completion stores the stamp.
 */
static ssize_t uring_round_trip(struct uring *u, int fd, const uint8_t *tx,
				int size, uint8_t *rx, size_t rx_len,
				struct msghdr *m, uint64_t *rx_hw)
{
	struct io_uring_recvmsg_out *o;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct cmsghdr *c;
	int sent = 0, got = 0, bid;
	ssize_t n = -1;
	uint8_t *buf;

	if (u->stamps && !u->err_armed) {
		u->em.msg_control = u->ectl;
		u->em.msg_controllen = sizeof(u->ectl);
		sqe = io_uring_get_sqe(&u->ring);
		io_uring_prep_recvmsg(sqe, fd, &u->em, MSG_ERRQUEUE);
		sqe->user_data = 3;
		u->err_armed = 1;
	}
	sqe = io_uring_get_sqe(&u->ring);
	io_uring_prep_send(sqe, fd, tx, size, 0);
	sqe->user_data = 1;
	sqe = NULL;
	if (!u->multishot) {
		sqe = io_uring_get_sqe(&u->ring);
		io_uring_prep_recvmsg(sqe, fd, m, 0);
	} else if (!u->armed) {
		sqe = io_uring_get_sqe(&u->ring);
		io_uring_prep_recvmsg_multishot(sqe, fd, &u->mmsg, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = URING_BGID;
		u->armed = 1;
	}
	if (sqe)
		sqe->user_data = 2;
	uring_submit(u);
	while (!sent || !got) {
		if (uring_cqe(u, &cqe) < 0)
			return -1;
		u->cqes++;
		if (cqe->user_data == 3) {
			uring_stamp(u, cqe);
		} else if (cqe->user_data == 1) {
			sent = 1;
			if (cqe->res != size) {
				errno = cqe->res < 0 ? -cqe->res : EIO;
				io_uring_cqe_seen(&u->ring, cqe);
				return -1;
			}
		} else if (!u->multishot) {
			got = 1;
			n = cqe->res;
		} else {
			got = 1;
			if (!(cqe->flags & IORING_CQE_F_MORE))
				u->armed = 0;	/* armed again with the next send */
			if (cqe->res < 0 || !(cqe->flags & IORING_CQE_F_BUFFER)) {
				if (cqe->res == -ENOBUFS) {
					got = 0;	/* no buffer: the next one brings it */
					io_uring_cqe_seen(&u->ring, cqe);
					continue;
				}
				errno = cqe->res < 0 ? -cqe->res : EIO;
				io_uring_cqe_seen(&u->ring, cqe);
				return -1;
			}
			bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
			buf = u->bufs + bid * URING_BUF_LEN;
			o = io_uring_recvmsg_validate(buf, cqe->res, &u->mmsg);
			n = -1;
			if (o && !(o->flags & MSG_TRUNC)) {
				n = io_uring_recvmsg_payload_length(o, cqe->res, &u->mmsg);
				if ((size_t)n > rx_len)
					n = rx_len;
				memcpy(rx, io_uring_recvmsg_payload(o, &u->mmsg), n);
				for (c = io_uring_recvmsg_cmsg_firsthdr(o, &u->mmsg); c;
				     c = io_uring_recvmsg_cmsg_nexthdr(o, &u->mmsg, c))
					if ((*rx_hw = hw_stamp_cmsg(c)))
						break;
			}
			io_uring_buf_ring_add(u->br, buf, URING_BUF_LEN, bid,
					      io_uring_buf_ring_mask(URING_BUFS), 0);
			io_uring_buf_ring_advance(u->br, 1);
		}
		io_uring_cqe_seen(&u->ring, cqe);
	}
	if (n < 0 && !u->multishot) {
		errno = -n;
		return -1;
	}
	return n;
}
/* After the last round trip: a transmit stamp the error queue's recvmsg took. */
static void uring_last_stamps(struct uring *u)
{
	struct io_uring_cqe *cqe;

	while (u->err_armed && !io_uring_peek_cqe(&u->ring, &cqe)) {
		if (cqe->user_data == 3)
			uring_stamp(u, cqe);
		io_uring_cqe_seen(&u->ring, cqe);
	}
}
#else
static void uring_last_stamps(struct uring *u)
{
}

static int uring_open(struct uring *u, size_t ctl_len)
{
	errno = ENOSYS;
	return -1;
}

static ssize_t uring_round_trip(struct uring *u, int fd, const uint8_t *tx,
				int size, uint8_t *rx, size_t rx_len,
				struct msghdr *m, uint64_t *rx_hw)
{
	errno = ENOSYS;
	return -1;
}
#endif

/* -R: the socket's row, used with loads and stores only */
struct raw {
	struct accio_row row;
	uint8_t *rx, *tx;
	uint64_t rx_mask, tx_mask, rptr, wptr;
};

static int raw_open(int fd, struct raw *r)
{
	if (accio_row_open(&r->row, fd, 0, 0, 0) < 0)
		return -1;
	r->rx = r->row.rx;
	r->tx = r->row.tx;
	r->rx_mask = r->row.rx_bytes - 1;
	r->tx_mask = r->row.tx_bytes - 1;
	r->rptr = row_reg(&r->row, ACCIO_ROW_RX_RPTR);
	r->wptr = row_reg(&r->row, ACCIO_ROW_TX_WPTR);
	return 0;
}

/*
 * One round trip with the work the hardware needs and nothing else; both
 * buffers are 8-byte aligned and size is a multiple of 8. Returns the
 * reply's length; *rx_hw gets its stamp.
 */
static size_t raw_round_trip(struct raw *r, const uint64_t *tx, uint64_t *rx,
			     size_t size, uint64_t *rx_hw)
{
	uint64_t *d = (uint64_t *)(r->tx + (r->wptr & r->tx_mask));
	const uint64_t *w;
	struct rec_rx h;
	size_t i, len;

	rec_tx_encode((uint8_t *)d, size, 0, 0);	/* to the connected peer */
	for (i = 0; i < size / 8; i++)
		d[ACCIO_TX_HDR / 8 + i] = tx[i];
	r->wptr += rec_tx_bytes(size);
#if defined(__riscv)
	__asm__ volatile("fence w,o" ::: "memory");
#endif
	row_reg_write(&r->row, ACCIO_ROW_TX_WPTR, r->wptr);
	row_doorbell(&r->row);
	count_pause();		/* busy-wait: not counted */
	while (row_reg(&r->row, ACCIO_ROW_RX_WPTR) == r->rptr)
		;
	count_resume();
#if defined(__riscv)
	__asm__ volatile("fence i,r" ::: "memory");
#endif
	w = (const uint64_t *)(r->rx + (r->rptr & r->rx_mask));
	rec_rx_decode((const uint8_t *)w, &h);
	len = h.len;
	*rx_hw = h.tstamp;
	for (i = 0; i < (len + 7) / 8; i++)
		rx[i] = w[ACCIO_RX_HDR / 8 + i];
	r->rptr += rec_rx_bytes(len);
	row_reg_write(&r->row, ACCIO_ROW_RX_RPTR, r->rptr);
	return len;
}

/* The request's stamp: the row's TX_TSTAMP while TX_PKTS is still seq. */
static uint64_t raw_tx_stamp(struct raw *r, uint64_t seq)
{
	uint64_t a = row_reg(&r->row, ACCIO_ROW_TX_PKTS);
	uint64_t ns = row_reg(&r->row, ACCIO_ROW_TX_TSTAMP);

	return a == seq && row_reg(&r->row, ACCIO_ROW_TX_PKTS) == seq ? ns : 0;
}

#define CTL_LEN	256	/* control messages of a receive */

/* The command line. */
struct opts {
	const char *host, *ifname;
	int port, size, warm, quiet, maps, barrier, zc, raw, nohw;
	int census, busy_us, prefer, uring;
	long count, timeout_ms;
};

/* One run's measurements. */
struct run {
	long bad, lost, nrtt, hw_n;
	uint64_t *rtt, *proc, hw_sum, start, end;
	/* per measured round trip: its time, the reply's RX and the request's TX stamp */
	uint64_t *rt_ns, *rt_rx, *rt_tx;
	uint64_t cpu0, cpu1;
	unsigned long long b0, a0, b1, a1;
	struct rusage ru0, ru1;
	long busy0, harts[64];
};

/* Parse and check the command line: 0, or the exit status. */
static int parse_opts(int argc, char **argv, struct opts *o, struct uring *ur)
{
	int opt;

	*o = (struct opts){ .host = "10.0.2.2", .ifname = "eth0", .port = 7777,
			    .size = 64, .warm = 10, .count = 1000 };
	while ((opt = getopt(argc, argv, "s:p:m:n:w:i:t:qMbzRHCB:PU:")) != -1) {
		switch (opt) {
		case 's': o->host = optarg; break;
		case 'p': o->port = atoi(optarg); break;
		case 'm': o->size = atoi(optarg); break;
		case 'n': o->count = atol(optarg); break;
		case 'w': o->warm = atoi(optarg); break;
		case 'i': o->ifname = optarg; break;
		case 't': o->timeout_ms = atol(optarg); break;
		case 'q': o->quiet = 1; break;
		case 'M': o->maps = 1; break;
		case 'b': o->barrier = 1; break;
		case 'z': o->zc = 1; break;
		case 'R': o->raw = 1; break;
		case 'H': o->nohw = 1; break;
		case 'C': o->census = 1; break;
		case 'B': o->busy_us = atoi(optarg); break;
		case 'P': o->prefer = 1; break;
		case 'U':
			o->uring = 1;
			if (uring_flags(ur, optarg) < 0) {
				fprintf(stderr, "udp_pingpong: -U takes plain, sqpoll, "
					"multishot and spin, comma-separated\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: udp_pingpong [-s HOST] [-p PORT] "
				"[-m SIZE] [-n COUNT] [-w WARMUP] [-i IFACE] [-t MS] [-q] [-M] "
				"[-b] [-H] [-C] [-B US [-P]] [-z | -R | -U FLAGS]\n");
			return 2;
		}
	}
#ifndef HAVE_LIBURING
	if (o->uring) {
		fprintf(stderr, "udp_pingpong: -U needs the build with Debian's "
			"liburing: udp_pingpong-glibc\n");
		return 2;
	}
#endif
	if (o->uring && (o->zc || o->raw || o->timeout_ms > 0)) {
		fprintf(stderr, "udp_pingpong: -U takes no -z, -R or -t\n");
		return 2;
	}
	if (o->zc && (o->timeout_ms > 0 || zc_find() < 0)) {
		fprintf(stderr, "udp_pingpong: -z needs libaccio's zero-copy API "
			"(LD_PRELOAD=/usr/lib/libaccio.so) and no -t\n");
		return 2;
	}
	if (o->raw && (o->zc || o->timeout_ms > 0 || o->size % 8)) {
		fprintf(stderr, "udp_pingpong: -R takes no -z or -t, and a size in 8-byte words\n");
		return 2;
	}
	if (o->size < 8 || o->size > 1472 || o->count < 1)
		return 2;
	return 0;
}

/*
 * The connected socket with what the options ask of it: hardware
 * timestamps, a receive timeout, busy polling. -1 when it cannot be had.
 */
static int open_socket(const struct opts *o, struct run *r)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct hwtstamp_config hw = { .tx_type = HWTSTAMP_TX_ON,
				      .rx_filter = HWTSTAMP_FILTER_ALL };
	struct ifreq ifr;
	int fd, flags;

	sa.sin_port = htons(o->port);
	inet_pton(AF_INET, o->host, &sa.sin_addr);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("udp_pingpong: connect");
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", o->ifname);
	ifr.ifr_data = (void *)&hw;
	if (o->nohw) {
		printf("hwtstamp=off (-H)\n");
	} else if (ioctl(fd, SIOCSHWTSTAMP, &ifr) < 0) {
		printf("hwtstamp=off (%s: %s)\n", o->ifname, strerror(errno));
	}
	flags = SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_TX_HARDWARE |
		SOF_TIMESTAMPING_RAW_HARDWARE | SOF_TIMESTAMPING_OPT_TSONLY |
		SOF_TIMESTAMPING_OPT_ID;
	if (!o->nohw)
		setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags));
	if (o->timeout_ms > 0) {
		struct timeval tv = { .tv_sec = o->timeout_ms / 1000,
				      .tv_usec = o->timeout_ms % 1000 * 1000 };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	if (o->busy_us > 0) {
		int prefer = o->prefer;

		if (setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &o->busy_us,
			       sizeof(o->busy_us)) < 0) {
			perror("udp_pingpong: -B: SO_BUSY_POLL");
			return -1;
		}
		if (prefer && setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL,
					 &prefer, sizeof(prefer)) < 0) {
			perror("udp_pingpong: -P: SO_PREFER_BUSY_POLL");
			return -1;
		}
		printf("busy_poll_us=%d\nbusy_poll_prefer=%d\n", o->busy_us, prefer);
		r->busy0 = netstat("BusyPollRxPackets");
	}
	return fd;
}

/*
 * The round trips, warm-up (i < 0) and measured, each reply checked: 0, or
 * the exit status when a call failed.
 */
static int round_trips(const struct opts *o, struct run *r, int fd,
		       struct uring *ur, struct raw *row)
{
	static uint64_t tx64[256], rx64[256];
	uint8_t *tx = (uint8_t *)tx64, *rx = (uint8_t *)rx64;
	uint64_t t0, t1;
	char ctl[CTL_LEN];
	int i;

	cpu_times(&r->b0, &r->a0);
	r->start = now_ns();
	span_mark(1);
	for (i = -o->warm; i < o->count; i++) {
		struct iovec iov = { rx, sizeof(rx64) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = ctl, .msg_controllen = sizeof(ctl) };
		uint64_t rx_hw = 0, tx_hw = 0;
		ssize_t n;
		int seq;

		if (i == 0 && o->barrier) {
			/* the CPU times before the barrier: read by every
			 * client at once after the release, /proc/stat (the
			 * kernel prints every hart's and interrupt's counts)
			 * held each hart's first measured turn back by the
			 * reads of all its other clients
			 */
			cpu_times(&r->b0, &r->a0);
			if (wait_barrier() < 0)
				return 1;
			r->start = now_ns();
		}
		if (i == 0) {
			getrusage(RUSAGE_SELF, &r->ru0);
			r->cpu0 = cpu_ns();
		}
		memset(tx, i & 0xff, o->size);
		memcpy(tx, &i, sizeof(i));
		t0 = now_ns();
		if (i >= 0)
			window_open();
		if (o->raw) {
			n = raw_round_trip(row, tx64, rx64, o->size, &rx_hw);
		} else if (o->uring) {
			n = uring_round_trip(ur, fd, tx, o->size, rx, sizeof(rx64),
					     &m, &rx_hw);
			if (n < 0) {
				perror("udp_pingpong: io_uring round trip");
				return 1;
			}
		} else if (o->zc) {
			n = zc_round_trip(fd, tx, rx, o->size, &rx_hw);
			if (n < 0) {
				perror("udp_pingpong: zero-copy round trip");
				return 1;
			}
		} else {
			if (send(fd, tx, o->size, 0) != o->size) {
				perror("udp_pingpong: send");
				return 1;
			}
			/* with -t, a reply that came after its time is skipped here */
			do {
				m.msg_controllen = sizeof(ctl);
				n = recvmsg(fd, &m, 0);
				memcpy(&seq, rx, sizeof(seq));
			} while (o->timeout_ms > 0 && n == o->size && seq < i);
		}
		if (i >= 0)
			window_close();
		t1 = now_ns();
		if (n < 0 && o->timeout_ms > 0 &&
		    (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!r->lost++)	/* the request or its reply is gone */
				diagnose(fd, i);
			continue;
		}
		if (n != o->size || memcmp(tx, rx, o->size)) {
			r->bad++;
			continue;
		}
		if (!o->zc && !o->raw && !(o->uring && ur->multishot))
			rx_hw = hw_stamp(&m);
		/*
		 * The requests' transmit timestamps, where the kernel has
		 * them: each stamp in the error queue goes to the round trip
		 * whose request has its key (SOF_TIMESTAMPING_OPT_ID: the
		 * request of round trip i is the socket's datagram warm + i),
		 * whenever it comes (a busy kernel completes sends late).
		 */
		if (o->raw) {
			tx_hw = raw_tx_stamp(row, o->warm + i + 1);
			if (i >= 0)
				r->rt_tx[i] = tx_hw;
		} else if (rx_hw && !o->uring) {
			tx_stamps_drain(fd, ctl, sizeof(ctl), r->rt_tx, o->warm, o->count);
		}
		if (i < 0)
			continue;
		if (o->census) {
			int h = sched_getcpu();

			if (h >= 0 && h < 64)
				r->harts[h]++;
		}
		r->rtt[r->nrtt++] = t1 - t0;
		r->rt_ns[i] = t1 - t0;
		r->rt_rx[i] = rx_hw;
	}
	getrusage(RUSAGE_SELF, &r->ru1);
	r->cpu1 = cpu_ns();
	if (!o->raw && !o->nohw) {
		/* the last requests' stamps */
		usleep(1000);
		if (o->uring)
			uring_last_stamps(ur);
		tx_stamps_drain(fd, ctl, sizeof(ctl), r->rt_tx, o->warm, o->count);
	}
	return 0;
}

/* The processing times: each round trip less its stamps' time on the wire. */
static void processing_times(const struct opts *o, struct run *r)
{
	long i;

	for (i = 0; i < o->count; i++) {
		uint64_t rx_hw = r->rt_rx[i], tx_hw = r->rt_tx[i];

		/* a pair the round trip cannot contain is not a sample */
		if (!rx_hw || !tx_hw || rx_hw <= tx_hw || r->rt_ns[i] <= rx_hw - tx_hw)
			continue;
		r->proc[r->hw_n++] = r->rt_ns[i] - (rx_hw - tx_hw);
		r->hw_sum += rx_hw - tx_hw;
	}
}

/* The round trips' times: percentiles and a histogram in octaves of us. */
static void print_rtt(const struct opts *o, struct run *r)
{
	uint64_t hist[32] = { 0 };
	long i;

	for (i = 0; i < r->nrtt; i++) {
		int b = 0;
		uint64_t us = r->rtt[i] / 1000;

		while (us > 1 && b < 31) {
			us >>= 1;
			b++;
		}
		hist[b]++;
	}
	qsort(r->rtt, r->nrtt, sizeof(*r->rtt), cmp);
	printf("size=%d datagrams=%ld bad=%ld\n", o->size, o->count, r->bad);
	if (o->timeout_ms > 0)
		printf("lost=%ld\n", r->lost);
	printf("rtt_p50_us=%.1f\nrtt_p90_us=%.1f\nrtt_p99_us=%.1f\nrtt_max_us=%.1f\n",
	       r->rtt[r->nrtt / 2] / 1e3, r->rtt[r->nrtt * 9 / 10] / 1e3,
	       r->rtt[r->nrtt * 99 / 100] / 1e3, r->rtt[r->nrtt - 1] / 1e3);
	if (!o->quiet)
		for (i = 0; i < 32; i++)
			if (hist[i])
				printf("hist_us_%u=%llu\n", i ? 1u << i : 0,
				       (unsigned long long)hist[i]);
}

/* The processing times' percentiles and distribution. */
static void print_proc(struct run *r)
{
	long n = r->hw_n, i;

	if (!n) {
		printf("rtt_hw_avg_us=n/a\n");
		return;
	}
	qsort(r->proc, n, sizeof(*r->proc), cmp);
	printf("hw_samples=%ld\n", n);
	printf("rtt_hw_avg_us=%.1f\nproc_p50_us=%.1f\nproc_p99_us=%.1f\n",
	       r->hw_sum / 1e3 / n, r->proc[n / 2] / 1e3,
	       r->proc[n * 99 / 100] / 1e3);
	/* the distribution: percentiles 1, 5, 10, ..., 95, 99, 100 */
	printf("proc_cdf_us=%.1f", r->proc[n / 100] / 1e3);
	for (i = 5; i < 100; i += 5)
		printf(",%.1f", r->proc[n * i / 100] / 1e3);
	printf(",%.1f,%.1f\n", r->proc[n * 99 / 100] / 1e3, r->proc[n - 1] / 1e3);
	proc_hist(r->proc, n);
}

/* What the run cost: switches, CPU time, busy polls, io_uring, harts. */
static void print_costs(const struct opts *o, struct run *r, struct uring *ur)
{
	long i;

	printf("ctx_voluntary=%ld\n", r->ru1.ru_nvcsw - r->ru0.ru_nvcsw);
	printf("cpu_self_us=%.1f\n", (r->cpu1 - r->cpu0) / 1e3);
	if (o->busy_us > 0)
		printf("busy_poll_rx=%ld\n", netstat("BusyPollRxPackets") - r->busy0);
	if (o->uring)
		printf("uring_cqes=%ld\nuring_enters=%ld\n", ur->cqes, ur->enters);
	if (o->census) {
		const char *sep = "";

		printf("rx_harts=");
		for (i = 0; i < 64; i++)
			if (r->harts[i]) {
				printf("%s%ld:%ld", sep, i, r->harts[i]);
				sep = ",";
			}
		printf("\n");
	}
	printf("elapsed_us=%llu\ncpu_busy_pct=%.1f\n",
	       (unsigned long long)(r->end - r->start) / 1000,
	       r->a1 > r->a0 ? 100.0 * (r->b1 - r->b0) / (r->a1 - r->a0) : 0.0);
	if (o->maps) {
		FILE *f = fopen("/proc/self/maps", "r");
		char line[512];

		while (f && fgets(line, sizeof(line), f))
			printf("map %s", line);
		if (f)
			fclose(f);
	}
}

int main(int argc, char **argv)
{
	struct raw row = { 0 };
	struct uring ur = { 0 };
	struct run r = { 0 };
	struct opts o;
	int fd, rc;

	rc = parse_opts(argc, argv, &o, &ur);
	if (rc)
		return rc;
	r.rtt = calloc(o.count, sizeof(*r.rtt));
	r.proc = calloc(o.count, sizeof(*r.proc));
	r.rt_ns = calloc(o.count, sizeof(*r.rt_ns));
	r.rt_rx = calloc(o.count, sizeof(*r.rt_rx));
	r.rt_tx = calloc(o.count, sizeof(*r.rt_tx));
	fd = open_socket(&o, &r);
	if (fd < 0)
		return 1;
	if (o.uring) {
		if (uring_open(&ur, CTL_LEN) < 0) {
			perror("udp_pingpong: -U: io_uring");
			return 1;
		}
		if (ur.sqpoll)
			printf("uring_sq_hart=%d\n", ur.sq_hart);
		if (!o.nohw) {
			ur.stamps = r.rt_tx;
			ur.base = o.warm;
			ur.count = o.count;
		}
	}
	if (o.raw && raw_open(fd, &row) < 0) {
		perror("udp_pingpong: -R: SIOCACCIO and the row's mappings");
		return 1;
	}
	rc = round_trips(&o, &r, fd, &ur, &row);
	if (rc)
		return rc;
	processing_times(&o, &r);
	span_mark(0);
	r.end = now_ns();
	cpu_times(&r.b1, &r.a1);
	if (o.barrier)
		finish_barrier();
	if (!r.nrtt) {
		printf("size=%d datagrams=%ld bad=%ld\nlost=%ld\n", o.size, o.count,
		       r.bad, r.lost);
		return 1;
	}
	print_rtt(&o, &r);
	print_proc(&r);
	print_costs(&o, &r, &ur);
	/*
	 * all of it before libaccio's exit line (ACCIO_STATS) on stderr, which
	 * would otherwise land inside a line the buffer had half written
	 */
	fflush(stdout);
	return r.bad ? 1 : 0;
}
