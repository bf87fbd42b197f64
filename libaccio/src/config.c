// SPDX-License-Identifier: MIT
/* libaccio's settings from the environment (config.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN struct accio_config accio_cfg;

/* ACCIO_ACCEL: all, none, or a list of ports. */
HIDDEN const char *config_accel(struct accio_config *c, const char *s)
{
	char *end;

	c->accel = ACCEL_NONE;
	c->nports = 0;
	if (!s || !*s || !strcmp(s, "none"))
		return NULL;
	if (!strcmp(s, "all")) {
		c->accel = ACCEL_ALL;
		return NULL;
	}
	while (*s && c->nports < ACCIO_CONFIG_PORTS) {
		unsigned long p = strtoul(s, &end, 10);

		if (end == s || p > 65535) {
			c->nports = 0;
			return "bad ACCIO_ACCEL port list";
		}
		c->ports[c->nports++] = p;
		s = *end == ',' ? end + 1 : end;
	}
	c->accel = ACCEL_PORTS;
	return NULL;
}

/* ACCIO_SPIN_US: N microseconds, or auto[:MAX] (learnt per connection). */
HIDDEN const char *config_spin(struct accio_config *c, const char *s)
{
	const char *num = s;
	char *end;
	long v;

	c->spin_us = 0;
	c->spin_auto = 0;
	if (!s || !*s)
		return NULL;
	if (!strncmp(s, "auto", 4) && (!s[4] || s[4] == ':'))
		num = s[4] ? s + 5 : NULL;
	v = num ? strtol(num, &end, 10) : ACCIO_SPIN_AUTO_MAX;
	if (num && (end == num || *end || v < 0 || v > 10000000 || (num != s && !v)))
		return "ACCIO_SPIN_US is microseconds, auto or auto:MAX (MAX > 0); not spinning";
	if (num == s)
		c->spin_us = v;
	else
		c->spin_auto = v;	/* spin while waits are short */
	return NULL;
}

/* ACCIO_FORK: reader (default), release or keep. */
HIDDEN const char *config_fork(struct accio_config *c, const char *s)
{
	c->fork_mode = FORK_READER;
	if (!s || !*s || !strcmp(s, "reader"))
		return NULL;
	if (!strcmp(s, "keep"))
		c->fork_mode = FORK_KEEP;
	else if (!strcmp(s, "release"))
		c->fork_mode = FORK_RELEASE;
	else
		return "ACCIO_FORK is reader, release or keep; using reader";
	return NULL;
}

HIDDEN void config_mmio_max(struct accio_config *c, const char *s, int window)
{
	c->mmio_max = s ? atoi(s) : 0;
	if (c->mmio_max > window)
		c->mmio_max = window;
}

static void complain(const char *msg)
{
	if (msg)
		fprintf(stderr, "libaccio: %s\n", msg);
}

HIDDEN void config_read(struct accio_config *c, char *(*get)(const char *),
			const char *accel_default, int window)
{
	const char *s = get("ACCIO_ACCEL");

	complain(config_accel(c, s ? s : accel_default));
	complain(config_spin(c, get("ACCIO_SPIN_US")));
	config_mmio_max(c, get("ACCIO_MMIO_TX_MAX"), window);
	s = get("ACCIO_RING_BYTES");
	c->ring_bytes = s ? strtoul(s, NULL, 0) : 0;
	s = get("ACCIO_STATS");
	c->print_stats = s && *s == '1';
	complain(config_fork(c, get("ACCIO_FORK")));
}

HIDDEN int config_wants(const struct accio_config *c, uint16_t lport, uint16_t rport)
{
	int i;

	if (c->accel != ACCEL_PORTS)
		return c->accel == ACCEL_ALL;
	for (i = 0; i < c->nports; i++)
		if (c->ports[i] == lport || (rport && c->ports[i] == rport))
			return 1;
	return 0;
}
