/* SPDX-License-Identifier: MIT */
/*
 * libaccio: POSIX UDP sockets on the Accio uncore, without system calls on
 * the data path.
 *
 * Linked in (or preloaded with LD_PRELOAD=libaccio.so), the library takes
 * over socket, bind, connect, send, sendto, sendmsg, recv, recvfrom,
 * recvmsg, read, write, close, fcntl, ioctl(FIONBIO), poll, select and
 * epoll_ctl. A UDP/IPv4 socket chosen by the policy is handed to the
 * uncore with the SIOCACCIO ioctl once it is bound (explicitly, by
 * connect, or by its first send); its datagrams then move between the NIC
 * and rings mapped into the process. Whatever the engine cannot carry
 * (other protocols, datagrams over 1472 bytes, destinations behind another
 * next hop, more sockets than ICT rows) goes through the kernel socket,
 * transparently. See accio(7).
 *
 * Environment:
 *   ACCIO_ACCEL=all|none|PORT[,PORT...]  which UDP sockets to accelerate
 *                          (a port list matches the local or remote port);
 *                          default "all" for libaccio.so, "none" for
 *                          libaccio.a (the app calls accio_accelerate())
 *   ACCIO_SPIN_US=N        spin up to N microseconds on an empty (full)
 *                          ring before sleeping (default 0)
 *   ACCIO_SPIN_US=auto[:MAX]  receive: spin for twice the connection's
 *                          recent wait while that is under MAX (default
 *                          50) microseconds, else sleep at once
 *   ACCIO_MMIO_TX_MAX=N    datagrams of at most N bytes go through the
 *                          direct MMIO transmit window (default 0: off)
 *   ACCIO_RING_BYTES=N     RX and TX ring size (power of two, 4 KiB-1 MiB)
 *   ACCIO_STATS=1          print per-socket counters to stderr on close
 */
#ifndef ACCIO_H
#define ACCIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <netinet/in.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Explicit opt-in: accelerate a UDP socket (bound, or bound now to an
 * ephemeral port). 0, or -1 with errno (see SIOCACCIO). */
int accio_accelerate(int fd);

/* 1 when fd is served by the uncore in this process, else 0. */
int accio_is_accelerated(int fd);

struct accio_stats {
	uint32_t row;			/* ICT row */
	uint32_t owner_asid;		/* the row's owner ASID (hardware) */
	uint64_t rx_pkts, rx_bytes, rx_drops;	/* row counters (hardware) */
	uint64_t tx_pkts, tx_bytes, tx_errors;
	uint64_t prot_faults;
	uint64_t rx_ring, tx_ring, tx_mmio;	/* datagrams on each path */
	uint64_t rx_kernel, tx_kernel;		/* fallback datagrams */
	uint64_t waits;				/* sleeps in the kernel */
};

/* Counters of an accelerated socket; -1/EBADF when not accelerated. */
int accio_stats(int fd, struct accio_stats *st);

/*
 * Zero-copy transmit: a buffer of len bytes (at most 1472) inside the
 * socket's pinned TX ring, then accio_zc_send() queues it to dst (NULL:
 * the connected peer). Only the most recent buffer may be sent; a pointer
 * that is not that buffer gives EINVAL.
 */
void *accio_zc_alloc(int fd, size_t len);
ssize_t accio_zc_send(int fd, void *buf, size_t len,
		      const struct sockaddr_in *dst);

/*
 * Zero-copy receive: *buf points at the next datagram inside the pinned RX
 * ring (blocking as recv does, after spinning up to ACCIO_SPIN_US);
 * accio_zc_release() hands it back. A
 * datagram that came the kernel's way (a fragmented one, or one that
 * arrived before acceleration) is copied once into a buffer of the
 * library instead, with *hw_time_ns 0.
 */
ssize_t accio_zc_recv(int fd, const void **buf, struct sockaddr_in *src,
		      uint64_t *hw_time_ns);
int accio_zc_release(int fd, const void *buf);

#ifdef __cplusplus
}
#endif

#endif /* ACCIO_H */
