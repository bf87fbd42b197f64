#!/usr/bin/env bash
# Fetch rdma-core's upstream source (Debian trixie's orig tarball) into the
# cache and print the unpacked folder; libaccio/verbs compiles its verbs
# provider against the provider API in it (libibverbs/driver.h). Idempotent.
# Exit status 3: the archive cannot be read and no copy is cached.
exec "$(dirname "$0")/fetch-debian-source.sh" rdma-core "${RDMA_CORE_VERSION:-56.1}" trixie \
	libibverbs/driver.h
