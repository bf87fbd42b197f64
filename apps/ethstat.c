// SPDX-License-Identifier: MIT
/*
 * ethstat: print an interface's driver statistics (what "ethtool -S" shows)
 * as "name value" lines.
 *
 * usage: ethstat [IFNAME]      (default eth0)
 */
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ethtool_strings.h"

int main(int argc, char **argv)
{
	const char *ifname = argc > 1 ? argv[1] : "eth0";
	struct ethtool_gstrings *names;
	struct ethtool_stats *stats;
	struct ifreq ifr;
	uint32_t n, i;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	names = fd < 0 ? NULL : ethtool_strings(fd, ifname, ETH_SS_STATS, &n);
	if (!names) {
		perror("ethstat: ethtool string set");
		return 1;
	}
	stats = calloc(1, sizeof(*stats) + n * sizeof(uint64_t));
	if (!stats)
		return 1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	stats->cmd = ETHTOOL_GSTATS;
	stats->n_stats = n;
	ifr.ifr_data = (void *)stats;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0) {
		perror("ethstat: ETHTOOL_GSTATS");
		return 1;
	}
	for (i = 0; i < n; i++)
		printf("%.*s %llu\n", ETH_GSTRING_LEN,
		       (char *)names->data + i * ETH_GSTRING_LEN,
		       (unsigned long long)stats->data[i]);
	close(fd);
	return 0;
}
