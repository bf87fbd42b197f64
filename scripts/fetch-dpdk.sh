#!/usr/bin/env bash
# Fetch DPDK's upstream source (Debian bookworm's orig tarball of the 22.11
# LTS, the newest dpdk source the archive serves) into the cache and print
# the unpacked folder; scripts/build-dpdk.sh cross-compiles it with the driver
# SDK headers that Debian's libdpdk-dev leaves out. Idempotent.
# Exit status 3: the archive cannot be read and no copy is cached.
exec "$(dirname "$0")/fetch-debian-source.sh" dpdk "${DPDK_VERSION:-22.11.11}" bookworm \
	lib/ethdev/ethdev_driver.h
