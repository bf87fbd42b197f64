/* SPDX-License-Identifier: MIT */
/*
 * libaccio's settings (accio(7), ENVIRONMENT): read once from the
 * environment into accio_cfg. The parsers are functions of their strings
 * alone, returning what they refuse as a message, so that they are tested
 * on the host (libaccio/tests) without a guest. Bottom layer: calls
 * nothing of the library.
 */
#ifndef ACCIO_CONFIG_H
#define ACCIO_CONFIG_H

#include <stdint.h>

#define ACCIO_CONFIG_PORTS	32	/* ports an ACCIO_ACCEL list holds */
#define ACCIO_SPIN_AUTO_MAX	50	/* us: Linux's busy-poll default too */

enum { ACCEL_NONE, ACCEL_ALL, ACCEL_PORTS };		/* ACCIO_ACCEL */
enum { FORK_READER, FORK_RELEASE, FORK_KEEP };		/* ACCIO_FORK */

struct accio_config {
	int accel;		/* ACCEL_* */
	uint16_t ports[ACCIO_CONFIG_PORTS];	/* ACCEL_PORTS: local or remote */
	int nports;
	int spin_us;		/* ACCIO_SPIN_US=N */
	int spin_auto;		/* ACCIO_SPIN_US=auto[:MAX]: MAX, else 0 */
	int mmio_max;		/* ACCIO_MMIO_TX_MAX: bytes, 0: off */
	unsigned int ring_bytes;	/* ACCIO_RING_BYTES, 0: per socket */
	int print_stats;	/* ACCIO_STATS=1 */
	int fork_mode;		/* ACCIO_FORK: FORK_* */
};

/* The process's settings: read by lib_init() before any socket is looked at */
extern struct accio_config accio_cfg __attribute__((visibility("hidden")));

/*
 * One setting each, from its variable's value (NULL: unset). NULL, or
 * the message for a value refused; the setting then takes its safe
 * default (no acceleration, no spinning, FORK_READER).
 */
const char *config_accel(struct accio_config *c, const char *s);
const char *config_spin(struct accio_config *c, const char *s);
const char *config_fork(struct accio_config *c, const char *s);
/* ACCIO_MMIO_TX_MAX: at most what the window holds after a header */
void config_mmio_max(struct accio_config *c, const char *s, int window);

/*
 * Every setting through get (getenv); accel_default: ACCIO_ACCEL's value
 * when unset. Refusals are printed to stderr.
 */
void config_read(struct accio_config *c, char *(*get)(const char *),
		 const char *accel_default, int window);

/* Does the policy accelerate a socket with these ports (host order)? */
int config_wants(const struct accio_config *c, uint16_t lport, uint16_t rport);

#endif /* ACCIO_CONFIG_H */
