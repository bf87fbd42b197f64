// SPDX-License-Identifier: MIT
/*
 * Socket options: which of them a socket's row reproduces, and which keep
 * (or send back) the socket on the kernel path.
 *
 * The options are read from the kernel itself (getsockopt), when a socket
 * is about to get a row and after every setsockopt the kernel accepted, so
 * options set before exec, by a raw system call or by another process that
 * shares the socket count as well as the program's own.
 *
 * Reproduced on the ring, as Linux writes them:
 *   IP_PKTINFO, IP_RECVORIGDSTADDR (a row receives only datagrams to its
 *   local address, on the Accio NIC), SO_TIMESTAMP, SO_TIMESTAMPNS (old and
 *   new forms; the time the datagram reached the NIC, on CLOCK_REALTIME),
 *   SO_TIMESTAMPING with the receive flags (software and hardware) and the
 *   hardware transmit flag, IP_RECVERR (errors stay in the kernel's queue),
 *   SO_RCVBUF/SO_SNDBUF (the ring sizes), IP_MTU_DISCOVER (the row's
 *   STATE.NO_DF: frames without DF where Linux sends them so) and
 *   SO_REUSEPORT (the row's STATE.GROUP: the engine spreads the group's
 *   datagrams over its rows). The kernel programs both bits from the socket
 *   when it makes the row: a socket that changes them later gets a new row.
 * Not reproduced - the socket goes to the kernel path, counted in the
 * statistics file with the reason:
 *   IP_RECVTOS, IP_RECVTTL, IP_RECVOPTS, IP_RETOPTS, IP_RECVFRAGSIZE,
 *   IP_CHECKSUM, IP_PASSSEC (the RX record has no such header fields),
 *   SO_RXQ_OVFL (the ring's drop count is not known per datagram),
 *   SO_TIMESTAMPING flags beyond those above, IP_TOS and IP_TTL values
 *   that make the kernel's IPv4 header differ from the engine's (TOS 0,
 *   TTL 64), and the UDP options that make the kernel join or cut the
 *   datagrams sent (UDP_CORK, UDP_SEGMENT) or take those that arrive
 *   (UDP_ENCAP: ESP in UDP for the kernel's IPsec). Likewise the file flag
 *   O_ASYNC (F_SETFL, FIOASYNC): the kernel sends SIGIO when its socket
 *   gets a datagram, which a ring's datagram never is; and a socket filter
 *   (SO_ATTACH_FILTER, SO_ATTACH_BPF), which the engine does not run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/net_tstamp.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "statfile.h"


/* SO_TIMESTAMPING flags the ring serves (the rest: kernel path) */
#define TS_RING (SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_RX_SOFTWARE | \
		 SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_RAW_HARDWARE | \
		 SOF_TIMESTAMPING_SYS_HARDWARE | SOF_TIMESTAMPING_TX_HARDWARE | \
		 SOF_TIMESTAMPING_OPT_TSONLY | SOF_TIMESTAMPING_OPT_CMSG | \
		 SOF_TIMESTAMPING_OPT_ID)

static int getopt_int(int fd, int level, int name)
{
	int v = 0;
	socklen_t l = sizeof(v);

	if (syscall(SYS_getsockopt, fd, level, name, &v, &l) < 0)
		return 0;
	return v;
}

/* Receive options the RX record cannot reproduce, and their reasons. */
static const struct {
	int level, name, why;
} kernel_only[] = {
	{ SOL_IP, IP_RECVOPTS, ACCIO_KPATH_RECVOPTS },
	{ SOL_IP, IP_RETOPTS, ACCIO_KPATH_RECVOPTS },
	{ SOL_IP, IP_RECVFRAGSIZE, ACCIO_KPATH_RECVOPTS },
	{ SOL_IP, IP_CHECKSUM, ACCIO_KPATH_RECVOPTS },
	{ SOL_IP, IP_PASSSEC, ACCIO_KPATH_RECVOPTS },
	{ SOL_SOCKET, SO_RXQ_OVFL, ACCIO_KPATH_RXQ_OVFL },
	{ IPPROTO_UDP, UDP_CORK, ACCIO_KPATH_UDP_CORK },
	{ IPPROTO_UDP, UDP_SEGMENT, ACCIO_KPATH_UDP_SEGMENT },
	{ IPPROTO_UDP, UDP_ENCAP, ACCIO_KPATH_UDP_ENCAP },
};

/*
 * A socket filter (SO_ATTACH_FILTER, SO_ATTACH_BPF) decides which datagrams
 * the socket gets, in the kernel: SO_GET_FILTER with no room answers a
 * classic filter's length, and EACCES for an eBPF program.
 */
static int has_filter(int fd)
{
	socklen_t len = 0;

	if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_GET_FILTER, NULL, &len) < 0)
		return errno == EACCES;
	return len > 0;
}

/*
 * Read the socket's options from the kernel into s (rxcm, tstamp) and
 * return the reason it must stay on the kernel path, 0 when the ring
 * reproduces all of them.
 */
static int sync_opts(struct sock *s)
{
	int fd = s->fd, rxcm = s->rxcm & RXCM_TSNEW, why = 0, v;
	size_t i;

	if (getopt_int(fd, SOL_IP, IP_PKTINFO))
		rxcm |= RXCM_PKTINFO;
	if (getopt_int(fd, SOL_IP, IP_RECVORIGDSTADDR))
		rxcm |= RXCM_ORIGDST;
	if (getopt_int(fd, SOL_IP, IP_RECVTTL))
		rxcm |= RXCM_TTL;
	if (getopt_int(fd, SOL_IP, IP_RECVTOS))
		rxcm |= RXCM_TOS;
	/* Linux reports each form only while it is the one in force */
	if (getopt_int(fd, SOL_SOCKET, SO_TIMESTAMP_OLD))
		rxcm = (rxcm & ~RXCM_TSNEW) | RXCM_TS;
	else if (getopt_int(fd, SOL_SOCKET, SO_TIMESTAMPNS_OLD))
		rxcm = (rxcm & ~RXCM_TSNEW) | RXCM_TSNS;
	else if (getopt_int(fd, SOL_SOCKET, SO_TIMESTAMP_NEW))
		rxcm |= RXCM_TS | RXCM_TSNEW;
	else if (getopt_int(fd, SOL_SOCKET, SO_TIMESTAMPNS_NEW))
		rxcm |= RXCM_TSNS | RXCM_TSNEW;
	s->tstamp = getopt_int(fd, SOL_SOCKET, SO_TIMESTAMPING);
	s->rxcm = rxcm;
	for (i = 0; i < sizeof(kernel_only) / sizeof(kernel_only[0]) && !why; i++)
		if (getopt_int(fd, kernel_only[i].level, kernel_only[i].name))
			why = kernel_only[i].why;
	if (!why && (s->tstamp & ~TS_RING))
		why = ACCIO_KPATH_TSFLAGS;
	/* signal-driven I/O: only the kernel socket sees a datagram come */
	if (!why && (syscall(SYS_fcntl, fd, F_GETFL) & O_ASYNC))
		why = ACCIO_KPATH_O_ASYNC;
	if (!why && has_filter(fd))
		why = ACCIO_KPATH_FILTER;
	/*
	 * what the row follows: DF (STATE.NO_DF), the group (STATE.GROUP),
	 * the TOS byte and the TTL of its frames (STATE.TOS, STATE.TTL)
	 */
	v = getopt_int(fd, SOL_IP, IP_MTU_DISCOVER);
	s->row_bits = (v != IP_PMTUDISC_WANT && v != IP_PMTUDISC_DO ? ROW_NO_DF : 0) |
		      (getopt_int(fd, SOL_SOCKET, SO_REUSEPORT) ? ROW_GROUP : 0) |
		      (getopt_int(fd, SOL_IP, IP_TOS) & 0xff) << ROW_TOS_SHIFT |
		      (getopt_int(fd, SOL_IP, IP_TTL) & 0xff) << ROW_TTL_SHIFT;
	return why;
}

/* Where the kernel keeps the socket's buffer size, the ring's size */
static int buf_size(int fd, int name)
{
	int v = getopt_int(fd, SOL_SOCKET, name);

	return v > 0 ? v : 0;
}

/* Table lock held: may the socket (still) have a row? */
static int sock_check(struct sock *s)
{
	int why = sync_opts(s);

	if (why) {
		if (s->conn)
			conn_release(s, 0);	/* unread datagrams go back */
		s->kpath = why;
		s->tried = 1;
		stats_attach_kernel(s);
		return why;
	}
	if (s->kpath >= ACCIO_KPATH_FIRST_OPTION) {
		/* the option that kept it away is gone: try again on next use */
		s->kpath = 0;
		s->tried = 0;
		stats_detach_kernel(s);
	}
	return 0;
}

int sock_may_accelerate(struct sock *s)
{
	return sock_check(s) == 0;
}

/*
 * After a setsockopt the kernel accepted (table lock not held). A socket
 * whose ring is smaller than its new buffer, or whose group choice
 * changed, gets a new row; its unread datagrams come back through the
 * kernel socket, in order. A new TOS, TTL or DF choice the row takes in
 * place: a relay that passes each datagram's TTL on sets IP_TTL often, and
 * a new row would also leave and rejoin its SO_REUSEPORT group, which
 * moves the group's flows for that moment.
 */
void sock_setopt(struct sock *s, int level, int name)
{
	struct conn *c;
	int resize = 0;

	if (level != SOL_SOCKET && level != SOL_IP && level != IPPROTO_UDP)
		return;
	pthread_mutex_lock(&accio_table_lock);
	if (level == SOL_SOCKET && (name == SO_RCVBUF || name == SO_RCVBUFFORCE))
		s->rcvbuf = buf_size(s->fd, SO_RCVBUF);
	if (level == SOL_SOCKET && (name == SO_SNDBUF || name == SO_SNDBUFFORCE))
		s->sndbuf = buf_size(s->fd, SO_SNDBUF);
	if (level == SOL_SOCKET) {
		/* the last of these to be set decides the messages' form */
		if (name == SO_TIMESTAMP_NEW || name == SO_TIMESTAMPNS_NEW ||
		    name == SO_TIMESTAMPING_NEW)
			s->rxcm |= RXCM_TSNEW;
		else if (name == SO_TIMESTAMP_OLD || name == SO_TIMESTAMPNS_OLD ||
			 name == SO_TIMESTAMPING)
			s->rxcm &= ~RXCM_TSNEW;
	}
	if (s->kpath && s->kpath < ACCIO_KPATH_FIRST_OPTION) {
		pthread_mutex_unlock(&accio_table_lock);
		return;		/* no row for another reason */
	}
	sock_check(s);
	c = s->conn;
	if (c && ((s->rcvbuf && c->r.rx_bytes < ring_size_for(s->rcvbuf)) ||
		  (s->sndbuf && c->r.tx_bytes < ring_size_for(s->sndbuf)) ||
		  ((c->row_bits ^ s->row_bits) & ~ROW_HDR_BITS)))
		resize = 1;	/* the kernel programs a new row as it is now */
	else if (c && c->row_bits != s->row_bits) {
		rlock_take(&c->tx_lock);
		c->row_bits = s->row_bits;
		if (conn_set_hdr(c, c->row_bits) < 0)
			resize = 1;
		rlock_release(&c->tx_lock);
	}
	if (resize) {
		conn_release(s, 0);
		if (conn_create(s) < 0)
			s->tried = 1;
	}
	pthread_mutex_unlock(&accio_table_lock);
}
