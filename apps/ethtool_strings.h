/* SPDX-License-Identifier: MIT */
/*
 * ethtool_strings: fetch one of an interface's ethtool string sets
 * (ETH_SS_STATS, ETH_SS_FEATURES, ...) with SIOCETHTOOL.
 */
#ifndef ETHTOOL_STRINGS_H
#define ETHTOOL_STRINGS_H

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

/*
 * Returns the strings (n of them, ETH_GSTRING_LEN bytes each, in ->data) of
 * set @sset of @ifname, to be freed by the caller; NULL with errno on error.
 */
static inline struct ethtool_gstrings *ethtool_strings(int fd, const char *ifname,
						       uint32_t sset, uint32_t *n)
{
	struct {
		struct ethtool_sset_info hdr;
		uint32_t len;
	} info = { .hdr = { .cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ull << sset } };
	struct ethtool_gstrings *names;
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&info;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0)
		return NULL;
	*n = info.hdr.sset_mask ? info.len : 0;
	names = calloc(1, sizeof(*names) + (size_t)*n * ETH_GSTRING_LEN);
	if (!names)
		return NULL;
	names->cmd = ETHTOOL_GSTRINGS;
	names->string_set = sset;
	names->len = *n;
	ifr.ifr_data = (void *)names;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0) {
		free(names);
		return NULL;
	}
	return names;
}

#endif /* ETHTOOL_STRINGS_H */
