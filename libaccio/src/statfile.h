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

#define ACCIO_STATFILE_MAGIC	"ACCIOST1"
#define ACCIO_STATFILE_SLOTS	64
#define ACCIO_STATFILE_DIR	"/run/accio"

struct accio_statslot {
	int32_t fd;		/* a descriptor of the socket; -1: slot free */
	uint32_t rowfd;
	struct accio_stats st;	/* row, and the library's counters */
};

struct accio_statfile {
	char magic[8];
	int32_t pid;
	uint32_t nslots;
	uint64_t overflow;	/* accelerated sockets without a slot */
	struct accio_statslot slot[ACCIO_STATFILE_SLOTS];
};

#endif /* ACCIO_STATFILE_H */
