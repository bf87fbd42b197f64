#!/usr/bin/env bash
# Fetch rdma-core's upstream source (Debian trixie's orig tarball) into the
# cache and print the unpacked folder; libaccio/verbs compiles its verbs
# provider against the provider API in it (libibverbs/driver.h). Idempotent.
# The archive does not serve trixie's .dsc of this version, so apt-get source
# cannot be used: the tarball is checked against the SHA-256 in trixie's
# source index (Sources.xz), itself checked against the InRelease file signed
# by the host's debian-archive-keyring.
# Exit status 3: the archive cannot be read and no copy is cached.
set -euo pipefail
. "$(dirname "$0")/common.sh"

VERSION=${RDMA_CORE_VERSION:-56.1}
SUITE=trixie
MIRROR=http://deb.debian.org/debian
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
DIR=$SRC/rdma-core-$VERSION
TARBALL=$SRC/rdma-core_$VERSION.orig.tar.gz

if [ -f "$DIR/libibverbs/driver.h" ]; then
	echo "$DIR"
	exit 0
fi
mkdir -p "$SRC"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
get() { curl -fsSL --retry 2 -o "$2" "$1"; }
unavailable() { log "$*"; exit 3; }

if [ ! -f "$TARBALL" ]; then
	log "rdma-core $VERSION: checking trixie's source index"
	get "$MIRROR/dists/$SUITE/InRelease" "$tmp/InRelease" ||
		unavailable "cannot read $MIRROR/dists/$SUITE/InRelease"
	gpgv --keyring "$KEYRING" --output "$tmp/Release" "$tmp/InRelease" 2>"$tmp/gpgv.log" ||
		{ cat "$tmp/gpgv.log" >&2; log "bad signature on $SUITE's InRelease"; exit 1; }
	want=$(awk '/^SHA256:/ { on = 1; next } /^[^ ]/ { on = 0 }
		on && $3 == "main/source/Sources.xz" { print $1 }' "$tmp/Release")
	[ -n "$want" ] || { log "no main/source/Sources.xz in $SUITE's Release"; exit 1; }
	get "$MIRROR/dists/$SUITE/main/source/Sources.xz" "$tmp/Sources.xz" ||
		unavailable "cannot read $SUITE's Sources.xz"
	echo "$want  $tmp/Sources.xz" | sha256sum -c --quiet - ||
		unavailable "$SUITE's Sources.xz does not match its Release file (a mirror sync?)"
	# the rdma-core stanza of this version: the orig tarball's hash and folder
	# (awk reads to the end: no broken pipe under pipefail)
	xz -dc "$tmp/Sources.xz" | awk -v v="$VERSION" '
		/^Package: / { pkg = $2 } /^Directory: / { dir = $2 }
		/^Checksums-Sha256:/ { sums = 1; next } /^[^ ]/ { sums = 0 }
		sums && $3 == "rdma-core_" v ".orig.tar.gz" { sum = $1 }
		/^$/ { if (pkg == "rdma-core" && sum != "" && !found) { print sum, dir; found = 1 }
		       pkg = dir = sum = "" }' > "$tmp/orig"
	read -r sum dir < "$tmp/orig" || { log "rdma-core $VERSION is not in $SUITE's sources"; exit 1; }
	log "downloading $dir/rdma-core_$VERSION.orig.tar.gz"
	get "$MIRROR/$dir/rdma-core_$VERSION.orig.tar.gz" "$tmp/orig.tar.gz" ||
		unavailable "cannot download rdma-core_$VERSION.orig.tar.gz"
	echo "$sum  $tmp/orig.tar.gz" | sha256sum -c --quiet - ||
		{ log "rdma-core_$VERSION.orig.tar.gz does not match $SUITE's Sources"; exit 1; }
	mv "$tmp/orig.tar.gz" "$TARBALL"
fi
log "unpacking $(basename "$TARBALL")"
tar --no-same-owner -xzf "$TARBALL" -C "$tmp"
[ -f "$tmp/rdma-core-$VERSION/libibverbs/driver.h" ] || { log "unexpected layout in $TARBALL"; exit 1; }
rm -rf "$DIR"
mv "$tmp/rdma-core-$VERSION" "$DIR"
echo "$DIR"
