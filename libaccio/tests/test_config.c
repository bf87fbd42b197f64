// SPDX-License-Identifier: MIT
/*
 * libaccio's settings (config.h) on the host: every form of ACCIO_ACCEL,
 * ACCIO_SPIN_US and ACCIO_FORK, what is refused and what a refusal leaves,
 * the MMIO bound, and a whole environment read through config_read().
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"

static void accel(void)
{
	struct accio_config c;

	memset(&c, 0, sizeof(c));
	CHECK(!config_accel(&c, NULL) && c.accel == ACCEL_NONE);
	CHECK(!config_accel(&c, "") && c.accel == ACCEL_NONE);
	CHECK(!config_accel(&c, "none") && c.accel == ACCEL_NONE);
	CHECK(!config_accel(&c, "all") && c.accel == ACCEL_ALL);
	CHECK(config_wants(&c, 1, 0) && config_wants(&c, 65535, 9));
	CHECK(!config_accel(&c, "7000,7001") && c.accel == ACCEL_PORTS && c.nports == 2);
	CHECK(config_wants(&c, 7000, 0));	/* local */
	CHECK(config_wants(&c, 40000, 7001));	/* remote */
	CHECK(!config_wants(&c, 40000, 0));
	CHECK(!config_wants(&c, 7002, 7003));
	CHECK(!config_accel(&c, "7000,") && c.nports == 1);
	/* refused: nothing is accelerated */
	CHECK(config_accel(&c, "7000,x") && c.accel == ACCEL_NONE && !config_wants(&c, 7000, 0));
	CHECK(config_accel(&c, "65536") && c.accel == ACCEL_NONE);
	CHECK(config_accel(&c, ",") && c.accel == ACCEL_NONE);
	CHECK(config_accel(&c, "al") && c.accel == ACCEL_NONE);
}

static void accel_many(void)
{
	struct accio_config c;
	char list[512] = "";
	int i;

	/* ports beyond the list's room are ignored, not refused */
	for (i = 0; i < ACCIO_CONFIG_PORTS + 4; i++)
		sprintf(list + strlen(list), "%s%d", i ? "," : "", 1000 + i);
	memset(&c, 0, sizeof(c));
	CHECK(!config_accel(&c, list) && c.nports == ACCIO_CONFIG_PORTS);
	CHECK(config_wants(&c, 1000 + ACCIO_CONFIG_PORTS - 1, 0));
	CHECK(!config_wants(&c, 1000 + ACCIO_CONFIG_PORTS, 0));
}

static void spin(void)
{
	struct accio_config c;

	memset(&c, 0, sizeof(c));
	CHECK(!config_spin(&c, NULL) && !c.spin_us && !c.spin_auto);
	CHECK(!config_spin(&c, "20") && c.spin_us == 20 && !c.spin_auto);
	CHECK(!config_spin(&c, "0") && !c.spin_us && !c.spin_auto);
	CHECK(!config_spin(&c, "auto") && !c.spin_us && c.spin_auto == ACCIO_SPIN_AUTO_MAX);
	CHECK(!config_spin(&c, "auto:200") && c.spin_auto == 200);
	CHECK(config_spin(&c, "auto:0") && !c.spin_auto && !c.spin_us);
	CHECK(config_spin(&c, "auto:") && !c.spin_auto);
	CHECK(config_spin(&c, "-1") && !c.spin_us);
	CHECK(config_spin(&c, "10us") && !c.spin_us);
	CHECK(config_spin(&c, "autox") && !c.spin_us && !c.spin_auto);
	CHECK(config_spin(&c, "10000001") && !c.spin_us);
	CHECK(!config_spin(&c, "10000000") && c.spin_us == 10000000);
}

static void fork_mode(void)
{
	struct accio_config c;

	memset(&c, 0, sizeof(c));
	CHECK(!config_fork(&c, NULL) && c.fork_mode == FORK_READER);
	CHECK(!config_fork(&c, "keep") && c.fork_mode == FORK_KEEP);
	CHECK(!config_fork(&c, "release") && c.fork_mode == FORK_RELEASE);
	CHECK(!config_fork(&c, "reader") && c.fork_mode == FORK_READER);
	c.fork_mode = FORK_KEEP;
	CHECK(config_fork(&c, "parent") && c.fork_mode == FORK_READER);
}

static const char *const *env;

static char *fake_getenv(const char *name)
{
	int i;

	for (i = 0; env[i]; i += 2)
		if (!strcmp(env[i], name))
			return (char *)env[i + 1];
	return NULL;
}

static void read_all(void)
{
	static const char *const some[] = {
		"ACCIO_SPIN_US", "auto:80", "ACCIO_MMIO_TX_MAX", "4000",
		"ACCIO_RING_BYTES", "0x10000", "ACCIO_STATS", "1", "ACCIO_FORK", "keep", NULL,
	};
	static const char *const none[] = { NULL };
	struct accio_config c;

	env = some;
	memset(&c, 0xff, sizeof(c));
	config_read(&c, fake_getenv, "all", 2040);
	CHECK(c.accel == ACCEL_ALL);		/* unset: the default given */
	CHECK(c.spin_auto == 80 && !c.spin_us);
	CHECK(c.mmio_max == 2040);		/* bounded by the window */
	CHECK(c.ring_bytes == 65536);
	CHECK(c.print_stats == 1 && c.fork_mode == FORK_KEEP);
	env = none;
	config_read(&c, fake_getenv, "none", 2040);
	CHECK(c.accel == ACCEL_NONE && !c.spin_us && !c.spin_auto && !c.mmio_max);
	CHECK(!c.ring_bytes && !c.print_stats && c.fork_mode == FORK_READER);
}

int main(void)
{
	accel();
	accel_many();
	spin();
	fork_mode();
	read_all();
	CHECK_DONE("config");
}
