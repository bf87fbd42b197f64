#!/usr/bin/env bash
# Cross-build the riscv64 userspace toolchain and base system from Debian
# sources: musl (static and shared, with a musl-gcc wrapper; the patches in
# buildroot-config/musl-patches) and a static
# busybox linked against it. The Linux UAPI headers are installed into the
# musl sysroot from Debian's linux-source-6.1.
# Outputs: $CACHE/sysroot-<hash>/ (musl + headers, bin/musl-gcc) and
#          $CACHE/busybox-<hash>/busybox; linked from build/sysroot, build/busybox.
set -euo pipefail
. "$(dirname "$0")/common.sh"

musl_src=$(compgen -G "$SRC/musl-1.*/" | head -n1 || true)
bb_src=$(compgen -G "$SRC/busybox-1.*/" | head -n1 || true)
[ -n "$musl_src" ] && [ -n "$bb_src" ] || { log "sources missing (run scripts/fetch-sources.sh)"; exit 1; }
TARBALL=/usr/src/linux-source-6.1.tar.xz
MUSL_PATCHES=$ROOT/buildroot-config/musl-patches
key=$( (basename "$musl_src"; stat -c %s "$TARBALL"; echo 1; hash_inputs "$MUSL_PATCHES") | sha256sum | cut -c1-16)
SYS=$CACHE/sysroot-$key
bbkey=$( (echo "$key"; basename "$bb_src"; hash_inputs "$ROOT/buildroot-config/busybox.config") | sha256sum | cut -c1-16)
BB=$CACHE/busybox-$bbkey
mkdir -p "$ROOT/build"

if [ ! -x "$SYS/bin/musl-gcc" ]; then
	log "building musl $(basename "$musl_src")"
	W=$CACHE/work-musl
	rm -rf "$W" "$SYS.tmp"
	cp -r "$musl_src" "$W"
	for p in "$MUSL_PATCHES"/*.patch; do
		patch -s -d "$W" -p1 < "$p"
	done
	(cd "$W" && ./configure --target=riscv64-linux-gnu --prefix="$SYS.tmp" \
		--syslibdir="$SYS.tmp/lib" CROSS_COMPILE=riscv64-linux-gnu- \
		CC=riscv64-linux-gnu-gcc >/dev/null && \
	 make -j"$JOBS" >/dev/null && make install >/dev/null)
	# The wrapper must name the final prefix.
	sed -i "s#$SYS.tmp#$SYS#g" "$SYS.tmp/bin/musl-gcc" "$SYS.tmp/lib/musl-gcc.specs"
	# Programs run in the guest, where the loader is /lib/ld-musl-riscv64.so.1.
	sed -i "s#-dynamic-linker [^ ]*#-dynamic-linker /lib/ld-musl-riscv64.so.1#" "$SYS.tmp/lib/musl-gcc.specs"
	log "installing Linux UAPI headers"
	H=$CACHE/work-headers
	rm -rf "$H" && mkdir -p "$H"
	tar -C "$H" --no-same-owner -xf "$TARBALL" linux-source-6.1
	make -s -C "$H/linux-source-6.1" ARCH=riscv headers_install INSTALL_HDR_PATH="$SYS.tmp" >/dev/null
	rm -rf "$H" "$W"
	mv "$SYS.tmp" "$SYS"
fi
ln -sfn "$SYS" "$ROOT/build/sysroot"

if [ ! -x "$BB/busybox" ]; then
	log "building busybox $(basename "$bb_src")"
	W=$CACHE/work-busybox
	rm -rf "$W" && cp -r "$bb_src" "$W"
	cp "$ROOT/buildroot-config/busybox.config" "$W/.config"
	make -s -C "$W" CROSS_COMPILE=riscv64-linux-gnu- CC="$SYS/bin/musl-gcc" HOSTCC=gcc oldconfig </dev/null >/dev/null
	make -s -C "$W" -j"$JOBS" CROSS_COMPILE=riscv64-linux-gnu- CC="$SYS/bin/musl-gcc" HOSTCC=gcc \
		CONFIG_EXTRA_CFLAGS="" busybox busybox.links >"$CACHE/busybox-build.log" 2>&1 || { tail -30 "$CACHE/busybox-build.log"; exit 1; }
	mkdir -p "$BB.tmp" && cp "$W/busybox" "$W/busybox.links" "$BB.tmp/" && rm -rf "$BB" && mv "$BB.tmp" "$BB"
	rm -rf "$W"
fi
ln -sfn "$BB/busybox" "$ROOT/build/busybox"
log "sysroot $SYS, busybox $BB/busybox"
