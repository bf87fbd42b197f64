// SPDX-License-Identifier: MIT
/*
 * sockcheck: what the POSIX UDP calls return, case by case, against an
 * echo peer. A plain sockets program: run it as it is (Linux sockets) and
 * with LD_PRELOAD=/usr/lib/libaccio.so; the two outputs must be equal.
 *
 * usage: sockcheck HOST PORT
 *
 * HOST is reached from the guest's address 10.0.2.15 (control messages).
 *
 * Each line is "NAME ret=R errno=E [details]": the return value, the errno
 * name when the call failed, and what the call produced (flags, lengths,
 * readiness, whether the data was right). Nothing in a line depends on
 * timing: readiness is awaited with poll before every receive that expects
 * data. Exit status 0 when the program ran to the end.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/net_tstamp.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef SOL_UDP
#define SOL_UDP IPPROTO_UDP
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

static struct sockaddr_in peer;
static char buf[70000], out[70000];

static const char *ename(int e)
{
	static char other[16];

	switch (e) {
	case EAGAIN: return "EAGAIN";
	case EBADF: return "EBADF";
	case EFAULT: return "EFAULT";
	case EINVAL: return "EINVAL";
	case EMSGSIZE: return "EMSGSIZE";
	case EDESTADDRREQ: return "EDESTADDRREQ";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOTCONN: return "ENOTCONN";
	case EPIPE: return "EPIPE";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EISCONN: return "EISCONN";
	case ENOTSOCK: return "ENOTSOCK";
	case EINTR: return "EINTR";
	}
	snprintf(other, sizeof(other), "E%d", e);
	return other;
}

/* Print one case: NAME ret=R errno=E, then the details. */
static void report(const char *name, long ret, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void report(const char *name, long ret, int err, const char *fmt, ...)
{
	char details[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(details, sizeof(details), fmt, ap);
	va_end(ap);
	printf("%s ret=%ld errno=%s%s%s\n", name, ret, ret < 0 ? ename(err) : "-",
	       *details ? " " : "", details);
}

#define CASE(name, call, ...) do {					\
	long r_;							\
	errno = 0;							\
	r_ = (long)(call);						\
	report(name, r_, errno, __VA_ARGS__);				\
} while (0)

static void fill(char *p, size_t n, int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (char)(seed * 31 + i * 7 + (i >> 8));
}

/* Wait (bounded) until fd is readable; the answer is part of the output. */
static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static int udp_socket(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0) {
		perror("socket");
		exit(1);
	}
	return fd;
}

/*
 * epoll_pwait2 is newer than this musl: a weak reference finds libaccio's
 * when it is preloaded, the system call otherwise.
 */
extern int epoll_pwait2(int, struct epoll_event *, int, const struct timespec *,
			const sigset_t *) __attribute__((weak));

static int pwait2(int ep, struct epoll_event *ev, int max, const struct timespec *ts,
		  const sigset_t *ss)
{
	if (epoll_pwait2)
		return epoll_pwait2(ep, ev, max, ts, ss);
	return syscall(SYS_epoll_pwait2, ep, ev, max, ts, ss, _NSIG / 8);
}

/* Vectored, batched and signal-mask variants of the calls above. */
static void extra_calls(int fd)
{
	struct iovec iov[2];
	struct mmsghdr mm[3];
	struct timespec ts = { 3, 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b2[3][200];
	fd_set rd;
	sigset_t ss;
	long r;
	int ep, i;

	sigemptyset(&ss);
	fill(out, 150, 7);
	iov[0].iov_base = out;
	iov[0].iov_len = 100;
	iov[1].iov_base = out + 100;
	iov[1].iov_len = 50;
	CASE("writev-150", writev(fd, iov, 2), "%s", "");
	r = ppoll(&p, 1, &ts, &ss);
	report("ppoll-150", r, errno, "revents=%#x", p.revents);
	iov[0].iov_base = buf;
	iov[0].iov_len = 60;
	iov[1].iov_base = buf + 60;
	iov[1].iov_len = 1000;
	r = readv(fd, iov, 2);
	report("readv-150", r, errno, "same=%d", r == 150 && !memcmp(buf, out, 150));

	/* three datagrams out in one call, back in one call */
	memset(mm, 0, sizeof(mm));
	for (i = 0; i < 3; i++) {
		fill(b2[i], 50 + i, 10 + i);
		iov[0].iov_base = b2[i];
		iov[0].iov_len = 50 + i;
		mm[i].msg_hdr.msg_iov = malloc(sizeof(struct iovec));
		*mm[i].msg_hdr.msg_iov = iov[0];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	CASE("sendmmsg-3", sendmmsg(fd, mm, 3, 0), "%s", "");
	FD_ZERO(&rd);
	FD_SET(fd, &rd);
	r = pselect(fd + 1, &rd, NULL, NULL, &ts, &ss);
	report("pselect-mmsg", r, errno, "rd=%d", FD_ISSET(fd, &rd));
	for (i = 0; i < 3; i++) {
		mm[i].msg_hdr.msg_iov->iov_base = out + 200 * i;
		mm[i].msg_hdr.msg_iov->iov_len = 200;
		mm[i].msg_len = 0;
	}
	/* wait for all three (they may arrive one by one) */
	r = recvmmsg(fd, mm, 3, 0, NULL);
	report("recvmmsg-3", r, errno, "lens=%u,%u,%u same=%d", mm[0].msg_len, mm[1].msg_len,
	       mm[2].msg_len, r == 3 && !memcmp(out, b2[0], 50) &&
	       !memcmp(out + 200, b2[1], 51) && !memcmp(out + 400, b2[2], 52));
	CASE("recvmmsg-dontwait-empty", recvmmsg(fd, mm, 3, MSG_DONTWAIT, NULL), "%s", "");

	/* epoll_pwait2: a timespec timeout, then a datagram */
	ep = epoll_create1(0);
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	ts.tv_sec = 0;
	ts.tv_nsec = 100000000;
	CASE("epoll-pwait2-empty", pwait2(ep, &ev, 1, &ts, NULL), "%s", "");
	ts.tv_sec = 3;
	CASE("send-20", send(fd, out, 20, 0), "%s", "");
	r = pwait2(ep, &ev, 1, &ts, &ss);
	report("epoll-pwait2-20", r, errno, "events=%#x", r == 1 ? ev.events : 0);
	CASE("recv-20", recv(fd, buf, 100, 0), "%s", "");
	close(ep);
	for (i = 0; i < 3; i++)
		free(mm[i].msg_hdr.msg_iov);
}

static void readiness(int fd, int ep, const char *tag)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
	struct timeval tv = { 0, 0 };
	struct epoll_event ev;
	fd_set rd, wr;
	char name[64];
	int r;

	snprintf(name, sizeof(name), "poll-%s", tag);
	r = poll(&p, 1, 0);
	report(name, r, errno, "revents=%#x", p.revents);
	FD_ZERO(&rd);
	FD_ZERO(&wr);
	FD_SET(fd, &rd);
	FD_SET(fd, &wr);
	snprintf(name, sizeof(name), "select-%s", tag);
	r = select(fd + 1, &rd, &wr, NULL, &tv);
	report(name, r, errno, "rd=%d wr=%d", FD_ISSET(fd, &rd), FD_ISSET(fd, &wr));
	snprintf(name, sizeof(name), "epoll-%s", tag);
	memset(&ev, 0, sizeof(ev));
	r = epoll_wait(ep, &ev, 1, 0);
	report(name, r, errno, "events=%#x data=%d", r == 1 ? ev.events : 0,
	       r == 1 ? ev.data.fd : -1);
}

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* close_range is newer than this musl: as epoll_pwait2 */
extern int close_range(unsigned int, unsigned int, int) __attribute__((weak));

static int do_close_range(unsigned int first, unsigned int last)
{
	if (close_range)
		return close_range(first, last, 0);
	return syscall(SYS_close_range, first, last, 0);
}

/* A datagram out through one descriptor and its echo in through another. */
static void echo_via(const char *name, int sfd, int rfd, size_t len, int seed)
{
	long r;

	fill(out, len, seed);
	errno = 0;
	r = send(sfd, out, len, 0);
	if (r < 0) {
		report(name, r, errno, "%s", "");
		return;
	}
	if (!readable(rfd, 3000)) {
		report(name, -1, ETIMEDOUT, "%s", "");
		return;
	}
	r = recv(rfd, buf, sizeof(buf), 0);
	report(name, r, errno, "same=%d", r == (long)len && !memcmp(buf, out, len));
}

/*
 * Descriptors: duplicates of a socket (dup, dup2, dup3, F_DUPFD) are the
 * same socket, numbers above 1024 work, close_range and close of some
 * duplicates leave the others working, and connect(AF_UNSPEC) dissolves
 * the association. Descriptor numbers the kernel picks are not printed:
 * the library's row fds take numbers too.
 */
static void descriptors(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sockaddr_in from;
	struct sockaddr unspec;
	struct rlimit rl;
	socklen_t fl;
	int fd, d1, d4, d5, ep;
	long r;

	printf("== descriptors\n");
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < 2048)
		rl.rlim_cur = rl.rlim_max < 2048 ? rl.rlim_max : 2048;
	CASE("rlimit-2048", setrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur == 2048,
	     "%s", "");
	fd = udp_socket();
	CASE("dup-connect", connect(fd, (struct sockaddr *)&peer, sizeof(peer)), "%s", "");
	d1 = dup(fd);
	report("dup", d1 >= 0, errno, "%s", "");
	echo_via("echo-dup-to-orig", d1, fd, 120, 20);
	echo_via("echo-orig-to-dup", fd, d1, 121, 21);
	CASE("close-orig", close(fd), "%s", "");
	echo_via("echo-dup-after-close", d1, d1, 122, 22);
	CASE("dup2-1500", dup2(d1, 1500), "%s", "");
	CASE("dup2-same", dup2(1500, 1500), "%s", "");
	echo_via("echo-1500", 1500, 1500, 123, 23);
	ep = epoll_create1(0);
	ev.data.u64 = 1500;
	CASE("epoll-add-1500", epoll_ctl(ep, EPOLL_CTL_ADD, 1500, &ev), "%s", "");
	fill(out, 124, 24);
	CASE("send-1500", send(1500, out, 124, 0), "%s", "");
	r = epoll_wait(ep, &ev, 1, 3000);
	report("epoll-1500", r, errno, "events=%#x data=%llu", r == 1 ? ev.events : 0,
	       r == 1 ? (unsigned long long)ev.data.u64 : 0ULL);
	r = recv(d1, buf, sizeof(buf), 0);
	report("recv-dup-of-1500", r, errno, "same=%d", r == 124 && !memcmp(buf, out, 124));
	close(ep);
	CASE("dup3-1600-cloexec", dup3(1500, 1600, O_CLOEXEC), "%s", "");
	CASE("fd-1600-cloexec", fcntl(1600, F_GETFD) & FD_CLOEXEC, "%s", "");
	CASE("dup3-same", dup3(1600, 1600, 0), "%s", "");
	echo_via("echo-1500-to-1600", 1500, 1600, 125, 25);
	d4 = fcntl(d1, F_DUPFD, 1100);
	report("f-dupfd-1100", d4 >= 1100, errno, "%s", "");
	d5 = fcntl(d1, F_DUPFD_CLOEXEC, 1200);
	report("f-dupfd-cloexec-1200", d5 >= 1200, errno, "cloexec=%d",
	       d5 >= 0 && (fcntl(d5, F_GETFD) & FD_CLOEXEC));
	echo_via("echo-dupfd", d4, d5, 126, 26);
	CASE("close-range-1100-1599", do_close_range(1100, 1599), "%s", "");
	CASE("send-closed-1500", send(1500, out, 10, 0), "%s", "");
	CASE("send-closed-dupfd", send(d4, out, 10, 0), "%s", "");
	echo_via("echo-after-close-range", 1600, d1, 127, 27);
	CASE("close-dup", close(d1), "%s", "");
	echo_via("echo-1600-alone", 1600, 1600, 128, 28);
	memset(&unspec, 0, sizeof(unspec));
	unspec.sa_family = AF_UNSPEC;
	CASE("connect-unspec", connect(1600, &unspec, sizeof(unspec)), "%s", "");
	CASE("send-after-unspec", send(1600, out, 10, 0), "%s", "");
	fill(out, 129, 29);
	CASE("sendto-after-unspec", sendto(1600, out, 129, 0, (struct sockaddr *)&peer,
					   sizeof(peer)), "%s", "");
	report("readable-after-unspec", 0, 0, "yes=%d", readable(1600, 3000));
	fl = sizeof(from);
	memset(&from, 0, sizeof(from));
	r = recvfrom(1600, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
	report("recvfrom-after-unspec", r, errno, "from_peer=%d same=%d",
	       from.sin_port == peer.sin_port && from.sin_addr.s_addr == peer.sin_addr.s_addr,
	       r == 129 && !memcmp(buf, out, 129));
	CASE("close-1600", close(1600), "%s", "");
	CASE("send-closed-1600", send(1600, out, 10, 0), "%s", "");
}

/* ---- control messages ----------------------------------------------------- */

#ifndef SO_TIMESTAMP_NEW
#define SO_TIMESTAMP_NEW	63
#define SO_TIMESTAMPNS_NEW	64
#endif
#ifndef SO_RXQ_OVFL
#define SO_RXQ_OVFL		40
#endif

static int64_t ns_of(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* A receive time (ns, CLOCK_REALTIME) between the send and the receive. */
static int ts_between(int64_t t, const struct timespec *a, const struct timespec *b)
{
	return t >= ns_of(a) - 20000000 && t <= ns_of(b) + 20000000;
}

/*
 * Everything a receive produced in its control buffer, with what the
 * values mean rather than the values where they depend on time.
 */
static void describe(const char *name, long r, int err, struct msghdr *m, int lport,
		     const struct timespec *a, const struct timespec *b)
{
	char d[512], ip1[16], ip2[16];
	struct cmsghdr *cm;
	int off;

	off = snprintf(d, sizeof(d), "flags=0x%x clen=%lu", m->msg_flags,
		       (unsigned long)m->msg_controllen);
	for (cm = m->msg_controllen ? CMSG_FIRSTHDR(m) : NULL; cm && off < 400;
	     cm = CMSG_NXTHDR(m, cm)) {
		unsigned char *p = CMSG_DATA(cm);
		size_t l = cm->cmsg_len;

		off += snprintf(d + off, sizeof(d) - off, " [%d:%d:%lu", cm->cmsg_level,
				cm->cmsg_type, (unsigned long)l);
		if (cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_PKTINFO &&
		    l == CMSG_LEN(sizeof(struct in_pktinfo))) {
			struct in_pktinfo pi;

			memcpy(&pi, p, sizeof(pi));
			inet_ntop(AF_INET, &pi.ipi_spec_dst, ip1, sizeof(ip1));
			inet_ntop(AF_INET, &pi.ipi_addr, ip2, sizeof(ip2));
			off += snprintf(d + off, sizeof(d) - off, " if=%d spec=%s addr=%s",
					pi.ipi_ifindex, ip1, ip2);
		} else if (cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_ORIGDSTADDR &&
			   l == CMSG_LEN(sizeof(struct sockaddr_in))) {
			struct sockaddr_in sa;

			memcpy(&sa, p, sizeof(sa));
			inet_ntop(AF_INET, &sa.sin_addr, ip1, sizeof(ip1));
			off += snprintf(d + off, sizeof(d) - off, " family=%d %s port_is_local=%d",
					sa.sin_family, ip1, ntohs(sa.sin_port) == lport);
		} else if (cm->cmsg_level == SOL_IP &&
			   (cm->cmsg_type == IP_TOS || cm->cmsg_type == IP_TTL) &&
			   l >= CMSG_LEN(1)) {
			int v = cm->cmsg_type == IP_TOS ? p[0] : *(int *)p;

			off += snprintf(d + off, sizeof(d) - off, " value=%d", v);
		} else if (cm->cmsg_level == SOL_SOCKET &&
			   (cm->cmsg_type == SO_TIMESTAMP || cm->cmsg_type == SO_TIMESTAMP_NEW) &&
			   l == CMSG_LEN(16)) {
			int64_t v[2];

			memcpy(v, p, sizeof(v));
			off += snprintf(d + off, sizeof(d) - off, " usec_ok=%d",
					v[1] >= 0 && v[1] < 1000000 &&
					ts_between(v[0] * 1000000000 + v[1] * 1000, a, b));
		} else if (cm->cmsg_level == SOL_SOCKET &&
			   (cm->cmsg_type == SO_TIMESTAMPNS ||
			    cm->cmsg_type == SO_TIMESTAMPNS_NEW) && l == CMSG_LEN(16)) {
			int64_t v[2];

			memcpy(v, p, sizeof(v));
			off += snprintf(d + off, sizeof(d) - off, " nsec_ok=%d",
					v[1] >= 0 && v[1] < 1000000000 &&
					ts_between(v[0] * 1000000000 + v[1], a, b));
		} else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_TIMESTAMPING &&
			   l == CMSG_LEN(3 * sizeof(struct timespec))) {
			struct timespec t[3];

			memcpy(t, p, sizeof(t));
			off += snprintf(d + off, sizeof(d) - off, " sw_ok=%d sys=%d",
					ts_between(ns_of(&t[0]), a, b), ns_of(&t[1]) != 0);
		} else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL &&
			   l == CMSG_LEN(4)) {
			uint32_t v;

			memcpy(&v, p, 4);
			off += snprintf(d + off, sizeof(d) - off, " drops=%u", v);
		}
		off += snprintf(d + off, sizeof(d) - off, "]");
	}
	report(name, r, err, "%s", d);
}

/*
 * One echo through a socket bound to the wildcard address, received with
 * recvmsg into a control buffer of clen bytes (-1: none), flags rflags.
 */
static long cm_echo(const char *name, int fd, int len, int seed, long clen, int rflags)
{
	union {
		struct cmsghdr align;
		char b[512];
	} ctl;
	struct sockaddr_in from, self;
	socklen_t sl = sizeof(self);
	struct timespec a, b;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr m = {
		.msg_name = &from, .msg_namelen = sizeof(from),
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = clen >= 0 ? ctl.b : NULL,
		.msg_controllen = clen >= 0 ? clen : 0,
	};
	long r;

	getsockname(fd, (struct sockaddr *)&self, &sl);
	fill(out, len, seed);
	clock_gettime(CLOCK_REALTIME, &a);
	sendto(fd, out, len, 0, (struct sockaddr *)&peer, sizeof(peer));
	readable(fd, 3000);
	errno = 0;
	r = recvmsg(fd, &m, rflags);
	clock_gettime(CLOCK_REALTIME, &b);
	if (r == len && memcmp(buf, out, len))
		r = -2;		/* wrong data: shows as a difference */
	describe(name, r, errno, &m, ntohs(self.sin_port), &a, &b);
	return r;
}

static int wild_socket(void)
{
	struct sockaddr_in any = { .sin_family = AF_INET };
	int fd = udp_socket();

	if (bind(fd, (struct sockaddr *)&any, sizeof(any)) < 0)
		perror("bind");
	return fd;
}

static int opt(int fd, int level, int name, int v)
{
	return setsockopt(fd, level, name, &v, sizeof(v));
}

/* A datagram sent with IP_PKTINFO naming a source: ifindex, address. */
static long send_pktinfo(int fd, int ifindex, struct in_addr src, int len, int seed)
{
	union {
		struct cmsghdr align;
		char b[CMSG_SPACE(sizeof(struct in_pktinfo))];
	} ctl;
	struct iovec iov = { .iov_base = out, .iov_len = len };
	struct msghdr m = {
		.msg_name = &peer, .msg_namelen = sizeof(peer),
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.b, .msg_controllen = sizeof(ctl.b),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	struct in_pktinfo pi = { .ipi_ifindex = ifindex, .ipi_spec_dst = src };

	cm->cmsg_level = SOL_IP;
	cm->cmsg_type = IP_PKTINFO;
	cm->cmsg_len = CMSG_LEN(sizeof(pi));
	memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
	fill(out, len, seed);
	return sendmsg(fd, &m, 0);
}

/*
 * An edge-triggered epoll user (rsyslog's imudp): wait, read until EAGAIN,
 * wait again while the next datagram is on its way - three rounds.
 */
static void edge_triggered(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET }, got;
	int fd = udp_socket(), ep = epoll_create1(0), i, n;
	char name[32];
	long r;

	connect(fd, (struct sockaddr *)&peer, sizeof(peer));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	ev.data.fd = fd;
	CASE("et-add", epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), "%s", "");
	for (i = 0; i < 3; i++) {
		fill(out, 90 + i, 60 + i);
		send(fd, out, 90 + i, 0);
		n = epoll_wait(ep, &got, 1, 3000);
		snprintf(name, sizeof(name), "et-wait-%d", i);
		report(name, n, errno, "events=0x%x", n == 1 ? got.events : 0);
		for (n = 0; (r = recv(fd, buf, sizeof(buf), 0)) >= 0; n++)
			;
		snprintf(name, sizeof(name), "et-drain-%d", i);
		report(name, n, 0, "last_errno=%s", ename(errno));
	}
	close(ep);
	close(fd);
}

static void control_messages(void)
{
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6 }, to6, from6;
	struct in_addr local;
	socklen_t fl;
	long r;
	int fd;

	printf("== control\n");
	/* wildcard servers: where a query came to (dnsmasq, chrony, tftpd) */
	fd = wild_socket();
	CASE("cm-pktinfo-on", opt(fd, SOL_IP, IP_PKTINFO, 1), "%s", "");
	cm_echo("cm-pktinfo", fd, 40, 11, 512, 0);
	cm_echo("cm-pktinfo-cloexec", fd, 41, 12, 512, MSG_CMSG_CLOEXEC);
	cm_echo("cm-pktinfo-short", fd, 42, 13, CMSG_LEN(4), 0);
	cm_echo("cm-pktinfo-hdronly", fd, 43, 14, sizeof(struct cmsghdr) - 1, 0);
	cm_echo("cm-pktinfo-nobuf", fd, 44, 15, -1, 0);
	CASE("cm-origdst-on", opt(fd, SOL_IP, IP_RECVORIGDSTADDR, 1), "%s", "");
	cm_echo("cm-pktinfo-origdst", fd, 45, 16, 512, 0);
	cm_echo("cm-pktinfo-origdst-short", fd, 46, 17,
		CMSG_SPACE(sizeof(struct in_pktinfo)) + 20, 0);
	CASE("cm-pktinfo-off", opt(fd, SOL_IP, IP_PKTINFO, 0), "%s", "");
	cm_echo("cm-origdst", fd, 47, 18, 512, 0);
	/* answering from the address the query came to, as a server does */
	inet_pton(AF_INET, "10.0.2.15", &local);
	r = send_pktinfo(fd, 0, local, 48, 19);
	report("cm-send-pktinfo", r, errno, "%s", "");
	r = recv(fd, buf, sizeof(buf), 0);
	report("cm-send-pktinfo-echo", r, errno, "same=%d", r == 48 && !memcmp(buf, out, 48));
	r = send_pktinfo(fd, 0, (struct in_addr){ 0 }, 49, 20);
	report("cm-send-pktinfo-any", r, errno, "%s", "");
	r = recv(fd, buf, sizeof(buf), 0);
	report("cm-send-pktinfo-any-echo", r, errno, "same=%d",
	       r == 49 && !memcmp(buf, out, 49));
	errno = 0;
	r = send_pktinfo(fd, 9999, (struct in_addr){ 0 }, 50, 21);
	report("cm-send-pktinfo-badif", r, errno, "%s", "");
	close(fd);

	/*
	 * receive timestamps: the forms of SO_TIMESTAMP* and SO_TIMESTAMPING.
	 * Linux turns its receive stamps on and off through a static key that
	 * a workqueue flips after the option; a reply that arrives before
	 * then has no stamp. A pause after each change lets the work run.
	 */
	fd = wild_socket();
	CASE("cm-timestamp-on", opt(fd, SOL_SOCKET, SO_TIMESTAMP, 1), "%s", "");
	usleep(20000);
	cm_echo("cm-timestamp", fd, 60, 31, 512, 0);
	CASE("cm-timestampns-on", opt(fd, SOL_SOCKET, SO_TIMESTAMPNS, 1), "%s", "");
	usleep(20000);
	cm_echo("cm-timestampns", fd, 61, 32, 512, 0);
	CASE("cm-timestamp-new-on", opt(fd, SOL_SOCKET, SO_TIMESTAMP_NEW, 1), "%s", "");
	usleep(20000);
	cm_echo("cm-timestamp-new", fd, 62, 33, 512, 0);
	CASE("cm-timestamping-sw-on", opt(fd, SOL_SOCKET, SO_TIMESTAMPING,
					  SOF_TIMESTAMPING_SOFTWARE |
					  SOF_TIMESTAMPING_RX_SOFTWARE |
					  SOF_TIMESTAMPING_OPT_CMSG), "%s", "");
	usleep(20000);
	cm_echo("cm-timestamp-new-and-sw", fd, 63, 34, 512, 0);
	CASE("cm-timestamp-off", opt(fd, SOL_SOCKET, SO_TIMESTAMP, 0), "%s", "");
	usleep(20000);
	cm_echo("cm-timestamping-sw", fd, 64, 35, 512, 0);
	CASE("cm-pktinfo-on-2", opt(fd, SOL_IP, IP_PKTINFO, 1), "%s", "");
	cm_echo("cm-timestamping-sw-pktinfo", fd, 65, 36, 512, 0);
	CASE("cm-recverr-on", opt(fd, SOL_IP, IP_RECVERR, 1), "%s", "");
	cm_echo("cm-recverr", fd, 66, 37, 512, 0);
	CASE("cm-recverr-errqueue", recv(fd, buf, 100, MSG_ERRQUEUE | MSG_DONTWAIT), "%s", "");
	close(fd);

	/*
	 * The IPv4 header's TOS and TTL, which the RX record carries; then
	 * what it does not carry (the drop count): such a socket is served by
	 * the kernel, so the answers are the kernel's.
	 */
	fd = wild_socket();
	CASE("cm-recvtos-on", opt(fd, SOL_IP, IP_RECVTOS, 1), "%s", "");
	cm_echo("cm-recvtos", fd, 70, 41, 512, 0);
	CASE("cm-recvttl-on", opt(fd, SOL_IP, IP_RECVTTL, 1), "%s", "");
	cm_echo("cm-recvtos-recvttl", fd, 71, 42, 512, 0);
	close(fd);
	fd = wild_socket();
	cm_echo("cm-before-rxq-ovfl", fd, 72, 43, 512, 0);
	CASE("cm-rxq-ovfl-on", opt(fd, SOL_SOCKET, SO_RXQ_OVFL, 1), "%s", "");
	cm_echo("cm-rxq-ovfl", fd, 73, 44, 512, 0);
	close(fd);
	fd = wild_socket();
	CASE("cm-tos-on", opt(fd, SOL_IP, IP_TOS, 0x10), "%s", "");
	cm_echo("cm-tos", fd, 74, 45, 512, 0);
	close(fd);

	/*
	 * A receiver that asked for a large buffer holds a burst of 120 KB of
	 * echoes unread, in order: the ring is sized from SO_RCVBUF.
	 */
	fd = udp_socket();
	CASE("rcvbuf-set", opt(fd, SOL_SOCKET, SO_RCVBUF, 262144), "%s", "");
	{
		struct sockaddr_in any = { .sin_family = AF_INET };
		int i, got = 0, order = 1;
		uint32_t seq;

		bind(fd, (struct sockaddr *)&any, sizeof(any));
		for (i = 0; i < 120; i++) {
			fill(out, 1000, i);
			memcpy(out, &i, 4);
			sendto(fd, out, 1000, 0, (struct sockaddr *)&peer, sizeof(peer));
			usleep(2000);
		}
		usleep(500000);
		while ((r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) == 1000) {
			memcpy(&seq, buf, 4);
			if (seq != (uint32_t)got)
				order = 0;
			got++;
		}
		report("rcvbuf-burst", got, 0, "in_order=%d", order);
	}
	close(fd);

	/* a dual-stack IPv6 socket: IPv4 peers as v4-mapped addresses */
	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	report("v6-socket", fd >= 0 ? 0 : -1, errno, "%s", "");
	CASE("v6-v6only-off", opt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 0), "%s", "");
	CASE("v6-bind", bind(fd, (struct sockaddr *)&any6, sizeof(any6)), "%s", "");
	memset(&to6, 0, sizeof(to6));
	to6.sin6_family = AF_INET6;
	to6.sin6_port = peer.sin_port;
	to6.sin6_addr.s6_addr[10] = 0xff;
	to6.sin6_addr.s6_addr[11] = 0xff;
	memcpy(&to6.sin6_addr.s6_addr[12], &peer.sin_addr, 4);
	fill(out, 80, 51);
	CASE("v6-sendto-mapped", sendto(fd, out, 80, 0, (struct sockaddr *)&to6, sizeof(to6)),
	     "%s", "");
	readable(fd, 3000);
	fl = sizeof(from6);
	r = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from6, &fl);
	report("v6-recvfrom-mapped", r, errno, "fromlen=%u from_peer=%d same=%d", fl,
	       !memcmp(&from6.sin6_addr, &to6.sin6_addr, 16) &&
	       from6.sin6_port == to6.sin6_port, r == 80 && !memcmp(buf, out, 80));
	close(fd);
}

/* A connected socket with nothing to read: every way of not blocking. */
static void empty_socket(int fd, int ep)
{
	struct iovec iov[1];
	struct msghdr m;
	int one = 1, zero = 0;

	CASE("recv-dontwait-empty", recv(fd, buf, 100, MSG_DONTWAIT), "%s", "");
	readiness(fd, ep, "empty");
	CASE("fcntl-nonblock", fcntl(fd, F_SETFL, O_NONBLOCK), "%s", "");
	CASE("read-nonblock-empty", read(fd, buf, 100), "%s", "");
	CASE("recvfrom-nonblock-empty", recvfrom(fd, buf, 100, 0, NULL, NULL), "%s", "");
	memset(&m, 0, sizeof(m));
	iov[0].iov_base = buf;
	iov[0].iov_len = 100;
	m.msg_iov = iov;
	m.msg_iovlen = 1;
	CASE("recvmsg-nonblock-empty", recvmsg(fd, &m, 0), "%s", "");
	CASE("fcntl-block", fcntl(fd, F_SETFL, 0), "%s", "");
	CASE("fionbio-on", ioctl(fd, FIONBIO, &one), "%s", "");
	CASE("recv-fionbio-empty", recv(fd, buf, 100, 0), "%s", "");
	CASE("fionbio-off", ioctl(fd, FIONBIO, &zero), "%s", "");
	CASE("errqueue-empty", recv(fd, buf, 100, MSG_ERRQUEUE), "%s", "");
}

/* A receive timeout ends a blocking recv with EAGAIN. */
static void receive_timeout(int fd)
{
	struct timespec t0;
	struct timeval tv;
	long r;

	tv.tv_sec = 0;
	tv.tv_usec = 200000;
	CASE("so-rcvtimeo", setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), "%s", "");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	errno = 0;
	r = recv(fd, buf, 100, 0);
	report("recv-timeout", r, errno, "waited_150ms=%d", ms_since(&t0) >= 150);
	tv.tv_usec = 0;
	CASE("so-rcvtimeo-off", setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), "%s", "");
}

/* One datagram: readiness, peeking, truncation. */
static void one_datagram(int fd, int ep)
{
	struct iovec iov[1];
	struct msghdr m;
	int avail = -1;
	long r;

	fill(out, 100, 1);
	CASE("send-100", send(fd, out, 100, 0), "%s", "");
	report("readable-100", 0, 0, "yes=%d", readable(fd, 3000));
	CASE("fionread", ioctl(fd, FIONREAD, &avail), "avail=%d", avail);
	readiness(fd, ep, "data");
	memset(buf, 0, 100);
	r = recv(fd, buf, 50, MSG_PEEK);
	report("peek-50", r, errno, "same=%d", r == 50 && !memcmp(buf, out, 50));
	CASE("peek-trunc-10", recv(fd, buf, 10, MSG_PEEK | MSG_TRUNC), "%s", "");
	memset(&m, 0, sizeof(m));
	iov[0].iov_base = buf;
	iov[0].iov_len = 10;
	m.msg_iov = iov;
	m.msg_iovlen = 1;
	r = recvmsg(fd, &m, 0);
	report("recvmsg-trunc", r, errno, "trunc=%d same=%d",
	       !!(m.msg_flags & MSG_TRUNC), r == 10 && !memcmp(buf, out, 10));
	CASE("recv-dontwait-after", recv(fd, buf, 100, MSG_DONTWAIT), "%s", "");
}

/* Gather on send, scatter on receive, the source address. */
static void gather_scatter(int fd)
{
	struct sockaddr_in from;
	struct iovec iov[3];
	struct msghdr m;
	long r;

	fill(out, 300, 2);
	iov[0].iov_base = out;
	iov[0].iov_len = 100;
	iov[1].iov_base = out + 100;
	iov[1].iov_len = 0;
	iov[2].iov_base = out + 100;
	iov[2].iov_len = 200;
	memset(&m, 0, sizeof(m));
	m.msg_iov = iov;
	m.msg_iovlen = 3;
	CASE("sendmsg-gather", sendmsg(fd, &m, 0), "%s", "");
	report("readable-gather", 0, 0, "yes=%d", readable(fd, 3000));
	memset(buf, 0, 400);
	iov[0].iov_base = buf;
	iov[0].iov_len = 150;
	iov[1].iov_base = buf + 150;
	iov[1].iov_len = 200;
	memset(&m, 0, sizeof(m));
	memset(&from, 0, sizeof(from));
	m.msg_iov = iov;
	m.msg_iovlen = 2;
	m.msg_name = &from;
	m.msg_namelen = sizeof(from) + 4;
	r = recvmsg(fd, &m, 0);
	report("recvmsg-scatter", r, errno, "same=%d namelen=%u from_peer=%d flags=%#x",
	       r == 300 && !memcmp(buf, out, 300), m.msg_namelen,
	       from.sin_port == peer.sin_port &&
	       from.sin_addr.s_addr == peer.sin_addr.s_addr, m.msg_flags);
}

/*
 * Odd receives: a short address buffer (truncated, the full length
 * reported), a zero-length read (consumes the datagram), a bad buffer
 * (EFAULT, and the datagram is gone).
 */
static void odd_receives(int fd)
{
	struct sockaddr_in from;
	socklen_t fl = 4;
	long r;

	CASE("send-20", send(fd, out, 20, 0), "%s", "");
	report("readable-20", 0, 0, "yes=%d", readable(fd, 3000));
	memset(&from, 0xee, sizeof(from));
	r = recvfrom(fd, buf, 100, 0, (struct sockaddr *)&from, &fl);
	report("recvfrom-short-addr", r, errno, "fromlen=%u family_ok=%d untouched=%d",
	       fl, from.sin_family == AF_INET,
	       ((unsigned char *)&from)[4] == 0xee);

	CASE("send-30", send(fd, out, 30, 0), "%s", "");
	report("readable-30", 0, 0, "yes=%d", readable(fd, 3000));
	CASE("recv-len0", recv(fd, buf, 0, 0), "%s", "");
	CASE("recv-after-len0", recv(fd, buf, 100, MSG_DONTWAIT), "%s", "");

	CASE("send-null", send(fd, NULL, 10, 0), "%s", "");
	CASE("send-40", send(fd, out, 40, 0), "%s", "");
	report("readable-40", 0, 0, "yes=%d", readable(fd, 3000));
	CASE("recv-null", recv(fd, NULL, 40, 0), "%s", "");
	CASE("recv-after-null", recv(fd, buf, 100, MSG_DONTWAIT), "%s", "");
}

/*
 * Odd sends: larger than the engine's datagrams (the kernel fragments
 * it), sendto on a connected socket, flags UDP does not have.
 */
static void odd_sends(int fd)
{
	long r;

	fill(out, 2000, 3);
	CASE("send-2000", send(fd, out, 2000, 0), "%s", "");
	report("readable-2000", 0, 0, "yes=%d", readable(fd, 3000));
	r = recv(fd, buf, sizeof(buf), 0);
	report("recv-2000", r, errno, "same=%d", r == 2000 && !memcmp(buf, out, 2000));
	CASE("send-70000", send(fd, out, 70000, 0), "%s", "");

	fill(out, 64, 4);
	CASE("sendto-connected", sendto(fd, out, 64, 0, (struct sockaddr *)&peer,
					sizeof(peer)), "%s", "");
	report("readable-64", 0, 0, "yes=%d", readable(fd, 3000));
	r = read(fd, buf, 100);
	report("read-64", r, errno, "same=%d", r == 64 && !memcmp(buf, out, 64));
	CASE("sendto-short-addr", sendto(fd, out, 64, 0, (struct sockaddr *)&peer, 8), "%s", "");
	CASE("send-oob", send(fd, out, 64, MSG_OOB), "%s", "");
}

/* A datagram to the peer and its echo: lines send-TAG, readable-TAG, recv-TAG. */
static void round_trip(int fd, const char *tag, int len, int seed)
{
	char name[64];
	long r;
	int e;

	fill(out, len, seed);
	snprintf(name, sizeof(name), "send-%s", tag);
	CASE(name, send(fd, out, len, 0), "%s", "");
	snprintf(name, sizeof(name), "readable-%s", tag);
	report(name, 0, 0, "yes=%d", readable(fd, 3000));
	r = recv(fd, buf, sizeof(buf), 0);
	e = errno;
	snprintf(name, sizeof(name), "recv-%s", tag);
	report(name, r, e, "same=%d", r == len && !memcmp(buf, out, len));
}

/*
 * The datagrams one send of len bytes of out was cut into, seg bytes each
 * and the rest: each readable and received whole, in order.
 */
static void recv_cut(const char *tag, int fd, int seg, int len)
{
	char readable_tag[64], recv_tag[64];
	int at, n;
	long r;

	snprintf(readable_tag, sizeof(readable_tag), "readable-%s", tag);
	snprintf(recv_tag, sizeof(recv_tag), "recv-%s", tag);
	for (at = 0; at < len; at += seg) {
		n = len - at < seg ? len - at : seg;
		report(readable_tag, 0, 0, "yes=%d", readable(fd, 3000));
		r = recv(fd, buf, sizeof(buf), 0);
		report(recv_tag, r, errno, "same=%d", r == n && !memcmp(buf, out + at, n));
	}
}

/*
 * Datagrams whose bounds the sender sets across calls: MSG_MORE and
 * UDP_CORK append to one datagram until it is released; UDP_SEGMENT cuts
 * one send into datagrams of that size. A plain round trip before and
 * after the options must find the socket as it was.
 */
static void sender_bounds(void)
{
	int fd = udp_socket();
	long r;

	printf("== bounds\n");
	/*
	 * A UDP_SEGMENT control message cuts one sendmsg, from two buffers,
	 * into datagrams of 400 bytes and the rest; one larger than a frame
	 * carries is refused.
	 */
	{
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(uint16_t))];
		} cm;
		struct iovec iov[2] = { { out, 700 }, { out + 700, 300 } };
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2,
				    .msg_control = cm.b, .msg_controllen = sizeof(cm.b) };
		uint16_t gso = 400;

		fill(out, 3000, 16);
		memset(&cm, 0, sizeof(cm));
		cm.h.cmsg_level = SOL_UDP;
		cm.h.cmsg_type = UDP_SEGMENT;
		cm.h.cmsg_len = CMSG_LEN(sizeof(gso));
		memcpy(CMSG_DATA(&cm.h), &gso, sizeof(gso));
		CASE("gso-connect", connect(fd, (struct sockaddr *)&peer, sizeof(peer)), "%s", "");
		CASE("send-gso-cmsg", sendmsg(fd, &m, 0), "%s", "");
		recv_cut("gso", fd, 400, 1000);
		gso = 1500;
		memcpy(CMSG_DATA(&cm.h), &gso, sizeof(gso));
		iov[0].iov_len = 1600;
		iov[1].iov_len = 1400;
		CASE("send-gso-too-large", sendmsg(fd, &m, 0), "%s", "");
		close(fd);
	}
	fd = udp_socket();
	CASE("bounds-connect", connect(fd, (struct sockaddr *)&peer, sizeof(peer)), "%s", "");

	fill(out, 300, 11);
	CASE("send-more-1", send(fd, out, 100, MSG_MORE), "%s", "");
	CASE("send-more-2", send(fd, out + 100, 100, MSG_MORE), "%s", "");
	CASE("send-more-end", send(fd, out + 200, 100, 0), "%s", "");
	report("readable-more", 0, 0, "yes=%d", readable(fd, 3000));
	r = recv(fd, buf, sizeof(buf), 0);
	report("recv-more", r, errno, "same=%d", r == 300 && !memcmp(buf, out, 300));
	CASE("recv-more-after", recv(fd, buf, sizeof(buf), MSG_DONTWAIT), "%s", "");
	close(fd);

	fd = udp_socket();
	CASE("bounds-connect-2", connect(fd, (struct sockaddr *)&peer, sizeof(peer)), "%s", "");
	round_trip(fd, "before-cork", 64, 15);
	fill(out, 200, 12);
	CASE("cork-on", opt(fd, SOL_UDP, UDP_CORK, 1), "%s", "");
	CASE("send-corked-1", send(fd, out, 120, 0), "%s", "");
	CASE("send-corked-2", send(fd, out + 120, 80, 0), "%s", "");
	CASE("cork-off", opt(fd, SOL_UDP, UDP_CORK, 0), "%s", "");
	report("readable-cork", 0, 0, "yes=%d", readable(fd, 3000));
	r = recv(fd, buf, sizeof(buf), 0);
	report("recv-cork", r, errno, "same=%d", r == 200 && !memcmp(buf, out, 200));
	CASE("recv-cork-after", recv(fd, buf, sizeof(buf), MSG_DONTWAIT), "%s", "");

	fill(out, 1200, 13);
	CASE("segment-500", opt(fd, SOL_UDP, UDP_SEGMENT, 500), "%s", "");
	CASE("send-segmented", send(fd, out, 1200, 0), "%s", "");
	recv_cut("segment", fd, 500, 1200);
	CASE("segment-off", opt(fd, SOL_UDP, UDP_SEGMENT, 0), "%s", "");

	round_trip(fd, "bounds-plain", 64, 14);
	close(fd);
}

/* A receive that blocks until shutdown() ends it (3 s at most). */
static long blocked_ret;
static int blocked_errno;

static void *blocked_receive(void *arg)
{
	int fd = *(int *)arg;
	struct timeval tv = { .tv_sec = 3 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	blocked_ret = recv(fd, buf, sizeof(buf), 0);
	blocked_errno = errno;
	return NULL;
}

static int revents(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT | POLLRDHUP };

	poll(&p, 1, 0);
	return p.revents;
}

/*
 * shutdown(): a receiver blocked when the receiving side is shut returns
 * 0, as does a receive with nothing queued; a datagram queued still comes;
 * a send after the sending side is shut fails with EPIPE; poll reports
 * the shut sides. An unconnected socket is shut too, with ENOTCONN.
 */
static void shutdowns(void)
{
	int fd = udp_socket(), u = udp_socket();
	pthread_t t;
	long r;

	printf("== shutdown\n");
	CASE("shut-connect", connect(fd, (struct sockaddr *)&peer, sizeof(peer)), "%s", "");
	round_trip(fd, "before-shut", 64, 16);
	pthread_create(&t, NULL, blocked_receive, &fd);
	usleep(300000);
	CASE("shut-rd", shutdown(fd, SHUT_RD), "%s", "");
	pthread_join(t, NULL);
	report("shut-rd-wakes-reader", blocked_ret, blocked_errno, "%s", "");
	report("shut-rd-poll", 0, 0, "revents=%#x", revents(fd));
	CASE("recv-shut-rd-empty", recv(fd, buf, sizeof(buf), MSG_DONTWAIT), "%s", "");
	fill(out, 80, 17);
	CASE("send-shut-rd", send(fd, out, 80, 0), "%s", "");
	usleep(300000);
	r = recv(fd, buf, sizeof(buf), 0);
	report("recv-shut-rd-queued", r, errno, "same=%d", r == 80 && !memcmp(buf, out, 80));
	CASE("shut-wr", shutdown(fd, SHUT_WR), "%s", "");
	CASE("send-shut-wr", send(fd, out, 80, MSG_NOSIGNAL), "%s", "");
	report("shut-rdwr-poll", 0, 0, "revents=%#x", revents(fd));
	close(fd);
	CASE("shut-unconnected", shutdown(u, SHUT_RDWR), "%s", "");
	CASE("sendto-shut-unconnected", sendto(u, out, 8, MSG_NOSIGNAL, (struct sockaddr *)&peer,
					       sizeof(peer)), "%s", "");
	close(u);
}

/*
 * A socket filter decides what the socket gets: one that drops everything
 * leaves the echo unseen, one that keeps everything lets it through, and
 * without a filter the socket works as before.
 */
static void socket_filter(void)
{
	struct sock_filter drop[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_filter keep[] = { BPF_STMT(BPF_RET | BPF_K, 0xffff) };
	struct sock_fprog pd = { 1, drop }, pk = { 1, keep };
	int fd = udp_socket(), none = 0;

	printf("== filter\n");
	CASE("filter-connect", connect(fd, (struct sockaddr *)&peer, sizeof(peer)), "%s", "");
	round_trip(fd, "before-filter", 64, 26);
	CASE("filter-attach-drop", setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &pd, sizeof(pd)),
	     "%s", "");
	fill(out, 60, 27);
	CASE("filter-send", send(fd, out, 60, 0), "%s", "");
	report("filter-dropped", 0, 0, "readable=%d", readable(fd, 500));
	CASE("filter-attach-keep", setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &pk, sizeof(pk)),
	     "%s", "");
	round_trip(fd, "filter-keep", 64, 28);
	CASE("filter-detach", setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &none, sizeof(none)),
	     "%s", "");
	round_trip(fd, "after-filter", 64, 29);
	close(fd);
}

/*
 * Signal-driven I/O: with O_ASYNC (F_SETFL, later FIOASYNC) and F_SETSIG, a
 * datagram that arrives raises the signal at the owner with POLLIN in
 * si_band; with it off again the socket works as before.
 */
static volatile sig_atomic_t sigio_in;

static void on_sigio(int sig, siginfo_t *si, void *ctx)
{
	if (si->si_band & POLLIN)
		sigio_in++;
}

static void sigio_arrival(int fd, const char *tag, int len, int seed)
{
	char name[64];
	long r;
	int i;

	sigio_in = 0;
	fill(out, len, seed);
	snprintf(name, sizeof(name), "%s-send", tag);
	CASE(name, send(fd, out, len, 0), "%s", "");
	for (i = 0; i < 300 && !sigio_in; i++)
		usleep(10000);
	snprintf(name, sizeof(name), "%s-raised", tag);
	report(name, 0, 0, "pollin=%d", sigio_in > 0);
	r = recv(fd, buf, sizeof(buf), 0);
	snprintf(name, sizeof(name), "%s-recv", tag);
	report(name, r, errno, "same=%d", r == len && !memcmp(buf, out, len));
}

static void signal_driven(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigio, .sa_flags = SA_SIGINFO | SA_RESTART };
	int fd = udp_socket(), on = 1, off = 0;

	printf("== sigio\n");
	sigaction(SIGIO, &sa, NULL);
	CASE("sigio-connect", connect(fd, (struct sockaddr *)&peer, sizeof(peer)), "%s", "");
	round_trip(fd, "before-async", 64, 21);
	CASE("sigio-setown", fcntl(fd, F_SETOWN, getpid()), "%s", "");
	CASE("sigio-setsig", fcntl(fd, F_SETSIG, SIGIO), "%s", "");
	CASE("sigio-setfl", fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC), "%s", "");
	sigio_arrival(fd, "sigio", 70, 22);
	CASE("sigio-setfl-off", fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_ASYNC), "%s", "");
	round_trip(fd, "after-async", 64, 23);
	CASE("fioasync-on", ioctl(fd, FIOASYNC, &on), "%s", "");
	sigio_arrival(fd, "fioasync", 71, 24);
	CASE("fioasync-off", ioctl(fd, FIOASYNC, &off), "%s", "");
	round_trip(fd, "after-fioasync", 64, 25);
	close(fd);
}

/*
 * pthread_cancel() of a thread blocked in each receive and wait that POSIX
 * makes a cancellation point, on an accelerated socket (connected, nothing
 * sent to it) and on a pipe: the thread ends in the call, its cleanup
 * handler runs, pthread_join() gets PTHREAD_CANCELED. A thread still there
 * after 10 s is reported (ETIMEDOUT) and left in its call.
 */
static const char *const cancel_calls[] = {
	"recv", "recvfrom", "recvmsg", "recvmmsg", "read", "readv",
	"poll", "ppoll", "select", "pselect", "epoll_wait", "read-pipe", "poll-pipe",
};
static int cancel_sock, cancel_pipe, cancel_cleaned;

static void cancel_cleanup(void *arg)
{
	__atomic_fetch_add(&cancel_cleaned, 1, __ATOMIC_RELAXED);
}

/* The call, blocking on fd (a socket or the pipe); its return value. */
static long cancel_call(const char *call, int fd)
{
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct mmsghdr mm = { .msg_hdr = m };
	struct pollfd p = { fd, POLLIN, 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	int ep;
	fd_set rd;

	FD_ZERO(&rd);
	FD_SET(fd, &rd);
	if (!strcmp(call, "recv"))
		return recv(fd, buf, sizeof(buf), 0);
	if (!strcmp(call, "recvfrom"))
		return recvfrom(fd, buf, sizeof(buf), 0, NULL, NULL);
	if (!strcmp(call, "recvmsg"))
		return recvmsg(fd, &m, 0);
	if (!strcmp(call, "recvmmsg"))
		return recvmmsg(fd, &mm, 1, 0, NULL);
	if (!strncmp(call, "read", 4) && strcmp(call, "readv"))
		return read(fd, buf, sizeof(buf));
	if (!strcmp(call, "readv"))
		return readv(fd, &iov, 1);
	if (!strncmp(call, "poll", 4))
		return poll(&p, 1, -1);
	if (!strcmp(call, "ppoll"))
		return ppoll(&p, 1, NULL, NULL);
	if (!strcmp(call, "select"))
		return select(fd + 1, &rd, NULL, NULL, NULL);
	if (!strcmp(call, "pselect"))
		return pselect(fd + 1, &rd, NULL, NULL, NULL, NULL);
	ep = epoll_create1(0);
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	return epoll_wait(ep, &ev, 1, -1);
}

static void *cancel_victim(void *arg)
{
	const char *call = arg;

	pthread_cleanup_push(cancel_cleanup, NULL);
	cancel_call(call, strstr(call, "pipe") ? cancel_pipe : cancel_sock);
	pthread_cleanup_pop(0);
	return NULL;	/* the call returned: not cancelled */
}

/*
 * A cancel already pending when the thread enters a receive or a send: the
 * call ends the thread before it takes or sends anything, though a
 * datagram waits for it. The thread disables cancellation, sees the
 * datagram come (the receive), is cancelled, enables cancellation again
 * (which does not act on it) and makes its call.
 */
static int pending_stage;

static void *pending_victim(void *arg)
{
	const char *call = arg;
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	if (!strcmp(call, "recv"))
		readable(cancel_sock, 3000);
	__atomic_store_n(&pending_stage, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&pending_stage, __ATOMIC_ACQUIRE) != 2)
		sched_yield();
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	pthread_cleanup_push(cancel_cleanup, NULL);
	if (!strcmp(call, "recv"))
		recv(cancel_sock, buf, sizeof(buf), 0);
	else
		send(cancel_sock, out, 40, 0);
	pthread_cleanup_pop(0);
	return NULL;	/* the call returned: not cancelled */
}

static void cancel_pending(const char *call)
{
	char name[64];
	struct timespec until;
	void *res = NULL;
	pthread_t t;
	int r, before = cancel_cleaned;

	snprintf(name, sizeof(name), "cancel-pending-%s", call);
	__atomic_store_n(&pending_stage, 0, __ATOMIC_RELAXED);
	pthread_create(&t, NULL, pending_victim, (void *)call);
	while (__atomic_load_n(&pending_stage, __ATOMIC_ACQUIRE) != 1)
		sched_yield();
	pthread_cancel(t);
	__atomic_store_n(&pending_stage, 2, __ATOMIC_RELEASE);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	r = pthread_timedjoin_np(t, &res, &until);
	report(name, r ? -1 : 0, r, "cancelled=%d cleanup=%d", res == PTHREAD_CANCELED,
	       cancel_cleaned - before);
}

static void cancellation(void)
{
	struct timespec until;
	unsigned int i;
	int pfd[2];

	printf("== cancel\n");
	cancel_sock = udp_socket();
	CASE("cancel-connect", connect(cancel_sock, (struct sockaddr *)&peer, sizeof(peer)),
	     "%s", "");
	CASE("cancel-pipe", pipe(pfd), "%s", "");
	cancel_pipe = pfd[0];
	for (i = 0; i < sizeof(cancel_calls) / sizeof(cancel_calls[0]); i++) {
		char name[64];
		void *res = NULL;
		pthread_t t;
		int r, before = cancel_cleaned;

		snprintf(name, sizeof(name), "cancel-%s", cancel_calls[i]);
		pthread_create(&t, NULL, cancel_victim, (void *)cancel_calls[i]);
		usleep(100000);	/* in its call by now (the result is the same if not) */
		pthread_cancel(t);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 10;
		r = pthread_timedjoin_np(t, &res, &until);
		report(name, r ? -1 : 0, r, "cancelled=%d cleanup=%d", res == PTHREAD_CANCELED,
		       cancel_cleaned - before);
	}
	/* the socket still works after its readers were cancelled */
	fill(out, 90, 18);
	CASE("cancel-send-after", send(cancel_sock, out, 90, 0), "%s", "");
	report("cancel-readable-after", 0, 0, "yes=%d", readable(cancel_sock, 3000));
	{
		long r = recv(cancel_sock, buf, sizeof(buf), 0);

		report("cancel-recv-after", r, errno, "same=%d", r == 90 && !memcmp(buf, out, 90));
	}
	/* the datagram the cancelled receive found is still there; the
	 * cancelled send sent nothing (its echo never comes)
	 */
	fill(out, 70, 19);
	CASE("cancel-send-pending", send(cancel_sock, out, 70, 0), "%s", "");
	cancel_pending("recv");
	cancel_pending("send");
	{
		long r = recv(cancel_sock, buf, sizeof(buf), 0);

		report("cancel-pending-kept", r, errno, "same=%d", r == 70 && !memcmp(buf, out, 70));
	}
	report("cancel-pending-sent-nothing", 0, 0, "readable=%d", readable(cancel_sock, 500));
	close(cancel_sock);
	close(pfd[0]);
	close(pfd[1]);
}

/*
 * A blocking receive: the reply arrives while the caller sleeps. Flags a
 * UDP receive ignores must not move it off the ring: a datagram waits for
 * the caller, who asked with MSG_NOSIGNAL (the receive timeout bounds the
 * wait if it went to the wrong place).
 */
static void blocking_receives(int fd)
{
	struct timeval tv;
	long r;

	fill(out, 500, 5);
	CASE("write-500", write(fd, out, 500), "%s", "");
	r = recv(fd, buf, sizeof(buf), 0);
	report("recv-blocking", r, errno, "same=%d", r == 500 && !memcmp(buf, out, 500));

	tv.tv_sec = 2;
	tv.tv_usec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	fill(out, 300, 6);
	CASE("send-300", send(fd, out, 300, 0), "%s", "");
	r = recv(fd, buf, sizeof(buf), MSG_NOSIGNAL);
	report("recv-nosignal", r, errno, "same=%d", r == 300 && !memcmp(buf, out, 300));
	CASE("send-301", send(fd, out, 301, MSG_NOSIGNAL), "%s", "");
	r = recv(fd, buf, sizeof(buf), MSG_CMSG_CLOEXEC | MSG_WAITALL);
	report("recv-cloexec-waitall", r, errno, "same=%d", r == 301 && !memcmp(buf, out, 301));
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* An unconnected socket: send refused, sendto and recvfrom with addresses. */
static void unconnected(void)
{
	struct sockaddr_in from;
	socklen_t fl;
	int fd2;
	long r;

	fd2 = udp_socket();
	CASE("send-unconnected", send(fd2, out, 10, MSG_DONTWAIT), "%s", "");
	CASE("sendto-unconnected", sendto(fd2, out, 10, 0, (struct sockaddr *)&peer,
					  sizeof(peer)), "%s", "");
	report("readable-unconnected", 0, 0, "yes=%d", readable(fd2, 3000));
	fl = sizeof(from);
	memset(&from, 0, sizeof(from));
	r = recvfrom(fd2, buf, 100, 0, (struct sockaddr *)&from, &fl);
	report("recvfrom-unconnected", r, errno, "fromlen=%u from_peer=%d same=%d", fl,
	       from.sin_port == peer.sin_port &&
	       from.sin_addr.s_addr == peer.sin_addr.s_addr,
	       r == 10 && !memcmp(buf, out, 10));
	CASE("close-unconnected", close(fd2), "%s", "");
}

/* The socket's error, its close, and calls on the closed descriptor. */
static void closing(int fd)
{
	socklen_t fl;
	int n = 0;

	fl = sizeof(n);
	CASE("so-error", getsockopt(fd, SOL_SOCKET, SO_ERROR, &n, &fl), "value=%d", n);
	CASE("close", close(fd), "%s", "");
	CASE("send-closed", send(fd, out, 10, 0), "%s", "");
	CASE("recv-closed", recv(fd, buf, 10, MSG_DONTWAIT), "%s", "");
	CASE("close-again", close(fd), "%s", "");
}

int main(int argc, char **argv)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd, ep;

	if (argc != 3) {
		fprintf(stderr, "usage: sockcheck HOST PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&peer, 0, sizeof(peer));
	peer.sin_family = AF_INET;
	peer.sin_port = htons(atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &peer.sin_addr) != 1) {
		fprintf(stderr, "sockcheck: bad address %s\n", argv[1]);
		return 2;
	}

	fd = udp_socket();
	ep = epoll_create1(0);
	ev.data.fd = fd;
	CASE("epoll-add-before-connect", epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), "%s", "");
	CASE("connect", connect(fd, (struct sockaddr *)&peer, sizeof(peer)), "%s", "");

	empty_socket(fd, ep);
	receive_timeout(fd);
	one_datagram(fd, ep);
	gather_scatter(fd);
	odd_receives(fd);
	odd_sends(fd);
	blocking_receives(fd);
	extra_calls(fd);
	unconnected();
	closing(fd);
	close(ep);
	descriptors();
	control_messages();
	edge_triggered();
	sender_bounds();
	shutdowns();
	cancellation();
	signal_driven();
	socket_filter();
	printf("done\n");
	return 0;
}
