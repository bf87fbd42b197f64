/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * Verbs on the Accio uncore (drivers/infiniband/hw/accio): the driver data
 * of the user-space provider's commands.
 *
 * A UD queue pair is bound at creation to a row: the provider binds a UDP
 * socket to port 4791, accelerates it with SIOCACCIO and ACCIO_ACCEL_ROCE
 * (linux/accio.h) and passes the row fd. The row must belong to the
 * caller's address space. The QP's send queue is the row's TX ring, its
 * receive queue the RX ring.
 */
#ifndef ACCIO_ABI_USER_H
#define ACCIO_ABI_USER_H

#include <linux/types.h>

#define ACCIO_IB_UVERBS_ABI_VERSION	1

struct accio_ib_create_qp {
	__s32 row_fd;
	__u32 reserved;
};

struct accio_ib_create_qp_resp {
	__u32 qpn;
	__u32 row;	/* the ICT row at creation (rows may move) */
};

#endif /* ACCIO_ABI_USER_H */
