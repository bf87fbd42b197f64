// SPDX-License-Identifier: MIT
/*
 * Zero-copy transmit and receive (accio.h): buffers inside the pinned
 * rings of an accelerated socket.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

void *accio_zc_alloc(int fd, size_t len)
{
	struct conn *c = conn_of(fd);
	uint32_t rec, off;

	if (!c) {
		errno = EBADF;
		return NULL;
	}
	if (len > c->max_payload) {
		errno = EMSGSIZE;
		return NULL;
	}
	rec = rec_tx_bytes(len);
	rlock_take(&c->tx_lock);
	if (c->dead) {
		rlock_release(&c->tx_lock);
		errno = EBADF;
		return NULL;
	}
	if (tx_room(c, rec, c->sock->nonblock) < 0) {
		rlock_release(&c->tx_lock);
		return NULL;
	}
	off = (c->tx_wptr + ACCIO_TX_HDR) & (c->r.tx_bytes - 1);
	c->zc_tx = c->r.tx + off;
	c->zc_len = len;
	rlock_release(&c->tx_lock);
	return c->zc_tx;
}

ssize_t accio_zc_send(int fd, void *buf, size_t len,
		      const struct sockaddr_in *dst)
{
	struct conn *c = conn_of(fd);
	uint8_t hdr[ACCIO_TX_HDR] HDR_ALIGN;
	uint32_t ip = 0;
	uint16_t port = 0;

	if (!c) {
		errno = EBADF;
		return -1;
	}
	if (paths_moved(c))
		paths_renew(c);
	rlock_take(&c->tx_lock);
	if (c->dead || !c->zc_tx || buf != c->zc_tx || len > c->zc_len) {
		rlock_release(&c->tx_lock);
		errno = EINVAL;
		return -1;
	}
	if (len > c->max_payload) {	/* the MTU shrank since the buffer's alloc */
		rlock_release(&c->tx_lock);
		errno = EMSGSIZE;
		return -1;
	}
	if (dst) {
		ip = dst->sin_addr.s_addr;
		port = dst->sin_port;
		if (dst->sin_family != AF_INET || !port || !dest_ok(c, ip)) {
			rlock_release(&c->tx_lock);
			errno = EINVAL;
			return -1;
		}
	} else if (!c->r.remote_ip) {
		rlock_release(&c->tx_lock);
		errno = EDESTADDRREQ;
		return -1;
	} else if (c->remote_kernel) {
		rlock_release(&c->tx_lock);
		errno = EINVAL;
		return -1;
	}
	/* the socket's header, if a datagram's control message changed it */
	if (conn_set_hdr(c, c->row_bits) < 0) {
		rlock_release(&c->tx_lock);
		errno = EIO;
		return -1;
	}
	rec_tx_encode(hdr, len, ip, port);
	ring_write_hdr(c->r.tx, c->r.tx_bytes, c->tx_wptr, hdr, ACCIO_TX_HDR);
	c->zc_tx = NULL;
	tx_publish(c, rec_tx_bytes(len));
	c->st->tx_ring++;
	tx_stamp_want(c);
	rlock_release(&c->tx_lock);
	return len;
}

/* A datagram from the kernel socket into the connection's bounce buffer. */
static ssize_t zc_kernel(struct conn *c, const void **buf,
			 struct sockaddr_in *src, uint64_t *hw_time_ns)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	ssize_t n;

	if (!c->bounce && !(c->bounce = malloc(65536))) {
		errno = ENOMEM;
		return -1;
	}
	n = syscall(SYS_recvfrom, c->sock->fd, c->bounce, 65536, MSG_DONTWAIT, &sa, &sl);
	if (n < 0)
		return -1;
	*buf = c->bounce;
	c->bounce_held = 1;
	if (src)
		*src = sa;
	if (hw_time_ns)
		*hw_time_ns = 0;	/* the kernel path's time is not kept */
	c->st->rx_kernel++;
	return n;
}

ssize_t accio_zc_recv(int fd, const void **buf, struct sockaddr_in *src,
		      uint64_t *hw_time_ns)
{
	struct conn *c = conn_of(fd);
	uint8_t hdr[ACCIO_RX_HDR] HDR_ALIGN;
	struct rec_rx h;
	uint16_t len, sport;
	uint32_t sip, off;
	uint64_t deadline;
	int ready;

	if (!c) {
		errno = EBADF;
		return -1;
	}
	/* SO_RCVTIMEO bounds the wait, as it does recv()'s */
	deadline = deadline_of(c->sock->rcvtimeo);
	rlock_take(&c->rx_lock);
	if (c->dead)
		goto dead;
	if (c->zc_rx) {
		c->rx_rptr += c->zc_rx;
		row_reg_write(&c->r, ACCIO_ROW_RX_RPTR, c->rx_rptr);
		c->zc_rx = 0;
	}
	c->bounce_held = 0;
	if (c->backlog) {
		/* what came before the row first, as recv() does */
		ssize_t n = zc_kernel(c, buf, src, hw_time_ns);

		if (n >= 0 || errno != EAGAIN) {
			rlock_release(&c->rx_lock);
			return n;
		}
		c->backlog = 0;
	}
	while (rx_empty(c)) {
		if (c->kernel_pending || c->sock->nonblock) {
			/* the kernel socket's datagrams: from a private buffer */
			ssize_t n = zc_kernel(c, buf, src, hw_time_ns);

			if (n >= 0 || errno != EAGAIN || c->sock->nonblock) {
				rlock_release(&c->rx_lock);
				return n;
			}
			c->kernel_pending = 0;
		}
		if (accio_cfg.spin_us > 0) {
			/* ACCIO_SPIN_US: spin before sleeping, as recv() does */
			uint64_t end = spin_clock_us() + accio_cfg.spin_us;
			int empty;

			count_pause();
			while ((empty = rx_empty(c)) && spin_clock_us() < end)
				;
			count_resume();
			if (!empty)
				break;
		}
		rlock_release(&c->rx_lock);
		ready = conn_wait(c, ACCIO_WAIT_RX, 0, deadline);
		rlock_take(&c->rx_lock);
		if (c->dead)
			goto dead;
		if (ready < 0) {
			rlock_release(&c->rx_lock);
			return -1;
		}
		if (ready & ACCIO_READY_SOCKET)
			c->kernel_pending = 1;
	}
	rmb_io();
	ring_read_hdr(c->r.rx, c->r.rx_bytes, c->rx_rptr, hdr, sizeof(hdr));
	rec_rx_decode(hdr, &h);
	len = h.len;
	sport = h.sport;
	sip = h.sip;
	off = (c->rx_rptr + ACCIO_RX_HDR) & (c->r.rx_bytes - 1);
	*buf = c->r.rx + off;
	if (src) {
		memset(src, 0, sizeof(*src));
		src->sin_family = AF_INET;
		src->sin_port = htons(sport);
		src->sin_addr.s_addr = htonl(sip);
	}
	if (hw_time_ns)
		*hw_time_ns = h.tstamp;
	c->zc_rx = rec_rx_bytes(len);
	c->st->rx_ring++;
	rlock_release(&c->rx_lock);
	return len;
dead:
	/* the socket left the fast path meanwhile */
	rlock_release(&c->rx_lock);
	errno = EBADF;
	return -1;
}

int accio_zc_release(int fd, const void *buf)
{
	struct conn *c = conn_of(fd);
	uint32_t off;

	if (!c) {
		errno = EBADF;
		return -1;
	}
	rlock_take(&c->rx_lock);
	if (c->dead) {
		rlock_release(&c->rx_lock);
		errno = EBADF;
		return -1;
	}
	if (c->bounce_held && buf == c->bounce) {
		c->bounce_held = 0;
		rlock_release(&c->rx_lock);
		return 0;
	}
	off = (c->rx_rptr + ACCIO_RX_HDR) & (c->r.rx_bytes - 1);
	if (!c->zc_rx || buf != c->r.rx + off) {
		rlock_release(&c->rx_lock);
		errno = EINVAL;
		return -1;
	}
	c->rx_rptr += c->zc_rx;
	row_reg_write(&c->r, ACCIO_ROW_RX_RPTR, c->rx_rptr);
	c->zc_rx = 0;
	rlock_release(&c->rx_lock);
	return 0;
}

