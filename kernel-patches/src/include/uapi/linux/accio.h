/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Accio: accelerated UDP sockets on the Accio uncore.
 *
 * A bound UDP socket is accelerated with ioctl(sock, SIOCACCIO, &accel).
 * The kernel allocates a row of the I/O Connection Table (ICT), pins an RX
 * and a TX ring, programs the row and returns a row file descriptor. The
 * caller maps the row's register page and the two rings from that fd and
 * then moves datagrams without system calls. The socket itself stays
 * usable as the fallback path. Closing the row fd (or exit) frees the row.
 *
 * The hardware's side of the contract - the row page's register offsets
 * (ACCIO_ROW_*), the RX and TX ring record layouts (ACCIO_RX_REC_*,
 * ACCIO_TX_REC_*, little endian, records padded to ACCIO_REC_ALIGN bytes,
 * ring pointers free-running byte counts) and the engine's numbers - is
 * linux/accio_contract.h, generated from the uncore's register map.
 */
#ifndef _UAPI_LINUX_ACCIO_H
#define _UAPI_LINUX_ACCIO_H

#include <linux/accio_contract.h>
#include <linux/ioctl.h>
#include <linux/sockios.h>
#include <linux/types.h>

#define ACCIO_UAPI_VERSION	1

/* Socket ioctl: accelerate a bound UDP/IPv4 socket. */
#define SIOCACCIO		(SIOCPROTOPRIVATE + 10)

/*
 * Ring sizes SIOCACCIO takes (bytes, powers of two). A size of 0 is
 * ACCIO_RING_DEFAULT for the TX ring; the RX ring then holds as many
 * datagrams of the largest size as the socket's receive buffer
 * (SO_RCVBUF) would, and at least ACCIO_RING_DEFAULT bytes.
 */
#define ACCIO_RING_MIN		4096
#define ACCIO_RING_MAX		(1U << 20)
#define ACCIO_RING_DEFAULT	(64U << 10)

/*
 * struct accio_accel flags. ACCIO_ACCEL_ROCE: the row carries RoCEv2 (the
 * verbs of drivers/infiniband/hw/accio). It takes UDP port ACCIO_ROCE_PORT
 * of the socket's address, whatever port the socket is bound to, but only
 * the datagrams of the queue pair the verbs driver names (many such rows
 * share the port, up to half of the table: ENOSPC). The engine writes the
 * invariant CRC into the last 4 bytes of each transmitted payload of 16
 * bytes or more and drops a received datagram whose ICRC is wrong (the
 * payload delivered still ends with it).
 */
#define ACCIO_ACCEL_ROCE	(1U << 0)

struct accio_accel {
	__u32 version;		/* in: ACCIO_UAPI_VERSION */
	__u32 flags;		/* in: ACCIO_ACCEL_* */
	__u32 rx_bytes;		/* in: RX ring size, 0: the default; out: its size */
	__u32 tx_bytes;		/* in: TX ring size, 0: the default; out: its size */
	__s32 fd;		/* out: the row file descriptor (close-on-exec) */
	__u32 row;		/* out: ICT row index */
	__u32 local_ip;		/* out: local IPv4, network order */
	__u32 remote_ip;	/* out: remote IPv4, network order, 0 for any */
	__u16 local_port;	/* out: network order */
	__u16 remote_port;	/* out: network order, 0 for any */
	__u32 reserved0;
	__u64 rx_offset;	/* out: mmap offset of the RX ring on fd */
	__u64 tx_offset;	/* out: mmap offset of the TX ring on fd */
	__u64 status_offset;	/* out: mmap offset of the status page on fd */
	__u32 paths_gen;	/* out: the paths_gen what this call told holds for */
	__u32 reserved1;
	__u64 reserved[2];
};

/*
 * The status page of a row fd: one page, read-only (PROT_READ), at
 * accio_accel.status_offset. It tells the owner what it may know without
 * touching the row's registers, which installs a connection that lost its
 * hardware row again (a page fault that evicts another).
 *
 * installed: 1 while the connection holds a hardware row. While it is 0,
 * rx_wptr is the RX ring's write pointer as it was when the row went: the
 * ring holds records up to there, and the connection's datagrams go to the
 * socket meanwhile. rx_wptr is written before installed becomes 0, so an
 * owner that reads installed (with acquire order) and sees 0 may take
 * rx_wptr; the row may be installed again just after, when rx_wptr is
 * older than the register, never ahead of it.
 *
 * paths_gen moves once an IPv4 route or rule (of any table) or the MTU of
 * an Accio NIC changed, after the change took effect. What the owner learnt
 * at an older gen - which destinations ACCIO_IOC_ROUTE admitted, the
 * connected peer's next hop included, and the largest datagram a frame of
 * the NIC carries - may no longer hold: it asks ACCIO_IOC_ROUTE again for
 * each destination before it queues a datagram there (the first answer at
 * a new gen gives the row its next hop anew) and reads the MTU again.
 * SIOCACCIO tells in accio_accel.paths_gen the gen its answer holds for.
 */
struct accio_row_status {
	__u32 installed;
	__u32 paths_gen;
	__u64 rx_wptr;
};

/* Row fd ioctls. */
#define ACCIO_WAIT_RX		0	/* until the RX ring holds a record */
#define ACCIO_WAIT_TX		1	/* until the TX ring has room for need */

struct accio_wait {
	__u32 dir;		/* in: ACCIO_WAIT_RX or ACCIO_WAIT_TX */
	__u32 need;		/* in: TX bytes that must fit */
	__s32 timeout_ms;	/* in: -1 forever, 0 no sleep */
	__u32 ready;		/* out: ACCIO_READY_* */
};

#define ACCIO_READY_RING	0x1	/* the ring side is ready (a hint: look) */
#define ACCIO_READY_SOCKET	0x2	/* the socket has queued datagrams */
/*
 * With ACCIO_READY_SOCKET on a receive: the connection has no row (another
 * took it) and its RX ring held nothing when it lost it, so the socket's
 * datagrams are the oldest. Read them first: looking at the ring's
 * registers would install the row again.
 */
#define ACCIO_READY_NOROW	0x4

struct accio_route {
	__u32 ip;		/* in: destination IPv4, network order */
	__u32 reserved;
};

/* Sleep until a side of the row is ready (RX data, TX room). The same wait
 * is the system call accio_wait(row_fd, dir, need, timeout_ms) (__NR_accio_wait
 * in asm-generic/unistd.h), which returns ACCIO_READY_* instead of filling
 * ready: no ioctl dispatch and no copies, for a thread that waits often.
 */
#define ACCIO_IOC_WAIT		_IOWR('a', 1, struct accio_wait)
/*
 * 0 if the engine can send to ip (the same next hop as the row's), else
 * EXDEV; the row takes the next hop of the first destination asked since
 * the status page's paths_gen last moved (the connected peer's at SIOCACCIO).
 */
#define ACCIO_IOC_ROUTE		_IOW('a', 2, struct accio_route)
/*
 * The row's owner says that a completion is there on one side (__u32: 0
 * receive, 1 send): the verbs driver reports the completion queue of that
 * side to its channel, if it asked for an event. For the RC queue pairs of
 * drivers/infiniband/hw/accio, whose transport runs in user space. ENXIO
 * if the row serves no queue pair.
 */
#define ACCIO_IOC_NOTIFY	_IOW('a', 3, __u32)
/*
 * The IPv4 header fields of the frames the engine builds for the row from
 * now on (STATE.TOS, STATE.TTL, STATE.NO_DF), in place: the row keeps its
 * rings, its datagrams and its place in a SO_REUSEPORT group. The owner
 * sets what the socket's options or a datagram's control messages ask
 * for (IP_TOS, IP_TTL, IP_MTU_DISCOVER), once the datagrams already in the
 * TX ring have left. EINVAL: TTL 0, df above 1, reserved not 0.
 */
struct accio_hdr {
	__u8 tos;		/* the TOS byte, ECN bits included */
	__u8 ttl;		/* 1 to 255 */
	__u8 df;		/* 1: Don't Fragment set, 0: clear */
	__u8 reserved[5];
};

#define ACCIO_IOC_HDR		_IOW('a', 4, struct accio_hdr)

#endif /* _UAPI_LINUX_ACCIO_H */
