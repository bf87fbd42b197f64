#!/usr/bin/env bash
# The offline image builder: assemble the guest initramfs from the package
# list in buildroot-config/packages.txt. Output: build/initramfs.cpio.gz.
set -euo pipefail
. "$(dirname "$0")/common.sh"

B=$ROOT/build
[ -x "$B/sysroot/bin/musl-gcc" ] && [ -x "$B/busybox" ] || { log "run scripts/build-userspace.sh first"; exit 1; }
make -s -C "$ROOT/libaccio" CC="$B/sysroot/bin/musl-gcc" OUT="$B/libaccio"
make -s -C "$ROOT/apps" GUEST_CC="$B/sysroot/bin/musl-gcc" OUT="$B/apps" LIBACCIO="$B/libaccio"

R=$B/rootfs
rm -rf "$R"
mkdir -p "$R"/{bin,sbin,usr/bin,usr/sbin,lib,dev,proc,sys,tmp,run,root,etc}
mkdir -p "$R/var" && ln -s ../run "$R/var/run"
while read -r kind name rest; do
	case "$kind" in
	""|\#*) continue ;;
	base)
		case "$name" in
		musl) cp "$B/sysroot/lib/libc.so" "$R/lib/ld-musl-riscv64.so.1" ;;
		busybox)
			cp "$B/busybox" "$R/bin/busybox"
			while read -r link; do
				[ "$link" = /bin/busybox ] && continue
				mkdir -p "$R$(dirname "$link")"
				ln -sf /bin/busybox "$R$link"
			done < "$(dirname "$(readlink -f "$B/busybox")")/busybox.links" ;;
		*) log "unknown base package $name"; exit 1 ;;
		esac ;;
	overlay) cp -a "$ROOT/buildroot-config/$name/." "$R/" ;;
	app) install -m 755 "$B/apps/$name" "$R/usr/bin/$name" ;;
	lib) mkdir -p "$R/usr/lib" && install -m 755 "$B/$name/$name.so" "$R/usr/lib/$name.so" ;;
	glibc-lib) mkdir -p "$R/usr/lib/riscv64-linux-gnu" && \
		install -m 755 "$B/$name/glibc/$name.so" "$R/usr/lib/riscv64-linux-gnu/$name.so" ;;
	glibc-app) install -m 755 "$B/apps/glibc/$name" "$R/usr/bin/$name-glibc" ;;
	*) log "unknown package kind $kind"; exit 1 ;;
	esac
done < "$ROOT/buildroot-config/packages.txt"

# Debian's riscv64 packages (buildroot-config/debian-packages.txt) as a second,
# uncompressed archive after the first: the kernel unpacks both at boot.
# Cached by package versions (scripts/debian.py); paths the musl image has
# are left out of it.
# Without the archive (exit status 3: its index cannot be read and no layer
# was built before), the image is built without the layer, loudly, and
# build/debian-unavailable says why: the tests that need Debian's programs
# report themselves skipped with that reason.
rm -f "$B/debian-unavailable"
rc=0
python3 "$ROOT/scripts/debian.py" layer --list "$ROOT/buildroot-config/debian-packages.txt" \
	--skip-root "$R" -o "$B/debian.cpio" 2>"$B/debian.err" || rc=$?
cat "$B/debian.err" >&2
if [ "$rc" = 3 ]; then
	log "WARNING: Debian's archive is unavailable; the image has no Debian layer"
	cp "$B/debian.err" "$B/debian-unavailable"
	: > "$B/debian.cpio"
elif [ "$rc" != 0 ]; then
	exit "$rc"
fi
# sysroot_part NAME PACKAGE WHAT: Debian's PACKAGE unpacked to compile
# against, its folder in $sysroot (status 0); without the archive (exit
# status 3 of debian.py: its index cannot be read and nothing was unpacked
# before) WHAT is left out, loudly, and build/NAME-unavailable says why
# (status 1: the tests that need it report themselves skipped).
sysroot_part() {
	local src=0
	rm -f "$B/$1-unavailable"
	if [ "$rc" != 0 ]; then
		echo "Debian's archive is unavailable: no $3" > "$B/$1-unavailable"
		return 1
	fi
	sysroot=$(python3 "$ROOT/scripts/debian.py" sysroot "$2" 2>"$B/$1.err") || src=$?
	cat "$B/$1.err" >&2
	if [ "$src" = 3 ]; then
		log "WARNING: Debian's archive is unavailable; no $3"
		cp "$B/$1.err" "$B/$1-unavailable"
		return 1
	fi
	[ "$src" = 0 ] || exit "$src"
}
# udp_pingpong-glibc: udp_pingpong with io_uring round trips (-U), compiled
# against Debian's liburing (its liburing2 is in the Debian layer).
if sysroot_part uring liburing-dev "udp_pingpong-glibc (io_uring)"; then
	make -s -C "$ROOT/apps" uring URING="$sysroot" OUT="$B/apps" LIBACCIO="$B/libaccio"
	install -m 755 "$B/apps/glibc/udp_pingpong" "$R/usr/bin/udp_pingpong-glibc"
fi
# DPDK programs for the guest (apps/dpdk), compiled against Debian's riscv64
# DPDK; tests and eval add them to a run with Debian's DPDK libraries
# (buildroot-config/dpdk-packages.txt).
if sysroot_part dpdk dpdk-dev "DPDK programs"; then
	make -s -C "$ROOT/apps/dpdk" OUT="$B/apps/dpdk" SYSROOT="$sysroot"
fi
# DPDK 22.11 LTS from Debian's source with its driver SDK (scripts/build-dpdk.sh)
# and, built against it, the Accio NIC's own poll-mode driver and the DPDK
# programs (apps/dpdk/net_accio): a tree for /opt/dpdk in build/apps/dpdk-pmd
# that tests and eval add to a run, with Debian's libatomic1
# (buildroot-config/dpdk-pmd-packages.txt).
# Without the archive (exit status 3) and no source fetched before, it is
# left out, loudly; build/dpdk-pmd-unavailable says why.
rm -f "$B/dpdk-pmd-unavailable"
src=0
"$ROOT/scripts/build-dpdk.sh" 2>"$B/dpdk-pmd.err" || src=$?
cat "$B/dpdk-pmd.err" >&2
if [ "$src" = 3 ]; then
	log "WARNING: Debian's archive is unavailable; no DPDK poll-mode driver"
	cp "$B/dpdk-pmd.err" "$B/dpdk-pmd-unavailable"
elif [ "$src" != 0 ]; then
	exit "$src"
else
	make -s -C "$ROOT/apps/dpdk/net_accio" OUT="$B/apps/dpdk-pmd" DPDK="$B/dpdk"
fi
# The verbs provider (libaccio/verbs: libibverbs' "accio" driver, its data
# path an ICT row), compiled against rdma-core's provider API (Debian's
# rdma-core source) and Debian's riscv64 libibverbs, goes into the image at
# the paths Debian's libibverbs reads: the library in its provider folder,
# accio.driver in /etc/libibverbs.d. libibverbs itself comes with the
# Debian packages a run adds (--pkg ibverbs-providers ...).
# Without the archive (exit status 3) and no sysroot or source fetched
# before, it is left out, loudly; build/verbs-unavailable says why.
rm -f "$B/verbs-unavailable"
if [ "$rc" = 0 ]; then
	src=0
	sysroot=$(python3 "$ROOT/scripts/debian.py" sysroot libibverbs-dev 2>"$B/verbs.err") || src=$?
	[ "$src" = 0 ] && { rdma=$("$ROOT/scripts/fetch-rdma-core.sh" 2>>"$B/verbs.err") || src=$?; }
	cat "$B/verbs.err" >&2
	if [ "$src" = 3 ]; then
		log "WARNING: Debian's archive is unavailable; no verbs provider"
		cp "$B/verbs.err" "$B/verbs-unavailable"
	elif [ "$src" != 0 ]; then
		exit "$src"
	elif make -s -C "$ROOT/libaccio/verbs" OUT="$B/verbs" SYSROOT="$sysroot" RDMA_CORE="$rdma" \
			install DESTDIR="$R" >"$B/verbs.err" 2>&1; then
		log "verbs provider: $(cd "$R" && echo usr/lib/riscv64-linux-gnu/libibverbs/libaccio-rdmav*.so etc/libibverbs.d/accio.driver)"
	else
		# e.g. the suite's libibverbs is of another private ABI than the
		# rdma-core source fetched (a fallback to forky): say so, go on
		cat "$B/verbs.err" >&2
		log "WARNING: the verbs provider did not build; no verbs on ICT rows in the image"
		cp "$B/verbs.err" "$B/verbs-unavailable"
	fi
else
	echo "Debian's archive is unavailable: no verbs provider" > "$B/verbs-unavailable"
fi
# libaccio's manual pages (accio(7), accio_wait(2), accio_*(3)) in
# /usr/share/man/man{2,3,7}; after the Debian layer, whose cache key is the
# set of paths the image had when it was asked for.
make -s -C "$ROOT/libaccio" install-man DESTDIR="$R"
# the same archive from any checkout and any day: fixed times
find "$R" -exec touch -h -d @0 {} +
(cd "$R" && find . -print0 | LC_ALL=C sort -z | \
	cpio --null -o -H newc --owner 0:0 --quiet --reproducible) | gzip -9n > "$B/initramfs.cpio.gz.tmp"
if [ -s "$B/debian.cpio" ]; then
	pad=$(( (4 - $(stat -c %s "$B/initramfs.cpio.gz.tmp") % 4) % 4 ))
	head -c "$pad" /dev/zero >> "$B/initramfs.cpio.gz.tmp"
	cat "$B/debian.cpio" >> "$B/initramfs.cpio.gz.tmp"
fi
mv "$B/initramfs.cpio.gz.tmp" "$B/initramfs.cpio.gz"
log "initramfs $(du -h "$B/initramfs.cpio.gz" | cut -f1) ($(find "$R" -type f | wc -l) musl-image files + $(du -h "$B/debian.cpio" | cut -f1) Debian layer)"
