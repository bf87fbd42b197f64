/* SPDX-License-Identifier: MIT */
/*
 * The per-process statistics file of libaccio: /run/accio/PID (directory:
 * $ACCIO_STAT_DIR), a shared mapping the library updates in place and
 * `accio stat` reads. Counters of the library's paths only; the row's
 * hardware counters are in the row fd's /proc/PID/fdinfo.
 */
#ifndef ACCIO_STATFILE_H
#define ACCIO_STATFILE_H

#include <stdint.h>

#include "accio.h"

#define ACCIO_STATFILE_MAGIC	"ACCIOST3"
#define ACCIO_STATFILE_SLOTS	64
#define ACCIO_STATFILE_DIR	"/run/accio"

/*
 * Why a UDP socket the library knows is on the kernel path rather than on
 * a row (struct accio_statslot.kpath). Reasons from ACCIO_KPATH_FIRST_OPTION
 * on are socket options: the socket gets a row again once they are off.
 */
enum accio_kpath {
	ACCIO_KPATH_ROW,	/* 0: on its row */
	ACCIO_KPATH_SHARED,	/* another process that shares it holds its row */
	ACCIO_KPATH_FORK,	/* open at a fork, ACCIO_FORK=release */
	ACCIO_KPATH_IPV6,	/* an IPv6 socket: the engine serves IPv4 */
	ACCIO_KPATH_NOROW,	/* every row taken (ENOSPC) */
	ACCIO_KPATH_NOTNIC,	/* bound to an address not on the Accio NIC */
	ACCIO_KPATH_REFUSED,	/* the kernel refused a row for another reason */
	ACCIO_KPATH_IO_URING,	/* the process has an io_uring: calls the library cannot see */
	ACCIO_KPATH_MSG_MORE,	/* it sent with MSG_MORE: the kernel joins the parts */
	ACCIO_KPATH_SHUTDOWN,	/* shut down: the kernel says what a shut side does */
	ACCIO_KPATH_FIRST_OPTION,
	ACCIO_KPATH_RECVTOS = ACCIO_KPATH_FIRST_OPTION,	/* IP_RECVTOS */
	ACCIO_KPATH_RECVTTL,	/* IP_RECVTTL */
	ACCIO_KPATH_RECVOPTS,	/* IP_RECVOPTS, IP_RETOPTS, IP_RECVFRAGSIZE, ... */
	ACCIO_KPATH_RXQ_OVFL,	/* SO_RXQ_OVFL */
	ACCIO_KPATH_TSFLAGS,	/* SO_TIMESTAMPING flags the ring cannot give */
	ACCIO_KPATH_TXHDR,	/* IP_TOS, IP_TTL: another IPv4 header */
	ACCIO_KPATH_UDP_CORK,	/* UDP_CORK: the kernel joins the sends */
	ACCIO_KPATH_UDP_SEGMENT,	/* UDP_SEGMENT: the kernel cuts the sends */
	ACCIO_KPATH_UDP_ENCAP,	/* UDP_ENCAP: the kernel decapsulates what arrives */
	ACCIO_KPATH_O_ASYNC,	/* O_ASYNC: the kernel signals what arrives (SIGIO) */
	ACCIO_KPATH_FILTER,	/* SO_ATTACH_FILTER/_BPF: the kernel filters what arrives */
	ACCIO_KPATH_N
};

#define ACCIO_KPATH_NAMES { "ring", "shared", "fork", "ipv6", "no-row", "not-nic", \
	"refused", "io_uring", "msg_more", "shutdown", "ip_recvtos", "ip_recvttl", "ip_recvopts", \
	"so_rxq_ovfl", "so_timestamping", "ip_header", "udp_cork", "udp_segment", "udp_encap", \
	"o_async", "so_attach_filter" }

struct accio_statslot {
	int32_t fd;		/* a descriptor of the socket; -1: slot free */
	uint32_t rowfd;		/* its row fd; 0 on the kernel path */
	int32_t kpath;		/* enum accio_kpath */
	uint32_t reserved;
	struct accio_stats st;	/* row, and the library's counters */
};

struct accio_statfile {
	char magic[8];
	int32_t pid;
	uint32_t nslots;
	uint64_t overflow;	/* sockets without a slot */
	struct accio_statslot slot[ACCIO_STATFILE_SLOTS];
};

#endif /* ACCIO_STATFILE_H */
