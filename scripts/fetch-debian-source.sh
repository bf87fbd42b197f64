#!/usr/bin/env bash
# fetch-debian-source.sh PACKAGE VERSION SUITE MARKER: fetch a Debian source
# package's upstream (orig) tarball into the cache, unpack it and print the
# unpacked folder ($CACHE/src/PACKAGE-VERSION). MARKER is a file inside the
# tree that shows the unpacked copy is complete. Idempotent.
# apt-get source is not used (the archive does not serve every .dsc); the
# tarball is checked against the SHA-256 in SUITE's source index (Sources.xz),
# itself checked against SUITE's InRelease, signed by the host's
# debian-archive-keyring.
# Exit status 3: the archive cannot be read and no copy is cached.
set -euo pipefail
. "$(dirname "$0")/common.sh"

[ $# = 4 ] || { echo "usage: $0 PACKAGE VERSION SUITE MARKER" >&2; exit 2; }
PKG=$1 VERSION=$2 SUITE=$3 MARKER=$4
MIRROR=http://deb.debian.org/debian
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
DIR=$SRC/$PKG-$VERSION

if [ -f "$DIR/$MARKER" ]; then
	echo "$DIR"
	exit 0
fi
mkdir -p "$SRC"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
get() { curl -fsSL --retry 2 -o "$2" "$1"; }
unavailable() { log "$*"; exit 3; }

TARBALL=$(ls "$SRC/${PKG}_$VERSION.orig.tar."* 2>/dev/null | head -n1 || true)
if [ -z "$TARBALL" ]; then
	log "$PKG $VERSION: checking $SUITE's source index"
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
	# the package's stanza of this version: the orig tarball's hash, name and
	# folder (awk reads to the end: no broken pipe under pipefail)
	xz -dc "$tmp/Sources.xz" | awk -v p="$PKG" -v v="$VERSION" '
		/^Package: / { pkg = $2 } /^Directory: / { dir = $2 }
		/^Checksums-Sha256:/ { sums = 1; next } /^[^ ]/ { sums = 0 }
		sums && index($3, p "_" v ".orig.tar.") == 1 { sum = $1; name = $3 }
		/^$/ { if (pkg == p && sum != "" && !found) { print sum, name, dir; found = 1 }
		       pkg = dir = sum = name = "" }' > "$tmp/orig"
	read -r sum name dir < "$tmp/orig" || { log "$PKG $VERSION is not in $SUITE's sources"; exit 1; }
	log "downloading $dir/$name"
	get "$MIRROR/$dir/$name" "$tmp/$name" || unavailable "cannot download $name"
	echo "$sum  $tmp/$name" | sha256sum -c --quiet - ||
		{ log "$name does not match $SUITE's Sources"; exit 1; }
	mv "$tmp/$name" "$SRC/$name"
	TARBALL=$SRC/$name
fi
log "unpacking $(basename "$TARBALL")"
mkdir "$tmp/x"
tar --no-same-owner -xf "$TARBALL" -C "$tmp/x"
top=$(ls "$tmp/x")
[ "$(echo "$top" | wc -l)" = 1 ] && [ -f "$tmp/x/$top/$MARKER" ] ||
	{ log "unexpected layout in $TARBALL"; exit 1; }
rm -rf "$DIR"
mv "$tmp/x/$top" "$DIR"
echo "$DIR"
