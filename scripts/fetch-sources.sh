#!/usr/bin/env bash
# Fetch the Debian source packages the build uses into the cache. Idempotent.
# When the archive serves the upstream tarball but not the Debian packaging
# of a version (backports lag behind the pool), the verified upstream tarball
# is unpacked on its own: the build uses no Debian patches.
set -euo pipefail
. "$(dirname "$0")/common.sh"

fetch() { # spec dir-glob orig-glob
	local spec=$1 want=$2 orig=$3
	compgen -G "$SRC/$want" >/dev/null && return 0
	log "apt-get source $spec"
	(cd "$SRC" && apt-get source -qq "$spec" >/dev/null 2>&1) || true
	compgen -G "$SRC/$want" >/dev/null && return 0
	local tb
	tb=$(compgen -G "$SRC/$orig" | head -n1 || true)
	[ -n "$tb" ] || { log "could not fetch $spec"; exit 1; }
	log "unpacking $(basename "$tb")"
	(cd "$SRC" && tar --no-same-owner -xf "$tb")
	compgen -G "$SRC/$want" >/dev/null || { log "unexpected layout in $tb"; exit 1; }
}

mkdir -p "$SRC"
fetch qemu/bookworm-backports "qemu-10.0*/" "qemu_10.0*.orig.tar.*"
fetch musl "musl-1.*/" "musl_1.*.orig.tar.*"
fetch busybox "busybox-1.*/" "busybox_1.*.orig.tar.*"
log "sources in $SRC"
