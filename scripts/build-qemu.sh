#!/usr/bin/env bash
# Build qemu-system-riscv64 (QEMU 10.0 from Debian's bookworm-backports source)
# with the Accio devices: hardware/qemu/accio/* is copied into the tree
# (hw/accio, include/hw/accio) and hardware/qemu/patches/*.patch hook it into
# the virt machine; TCG plugins are enabled (eval/breakdown.py). Output: $CACHE/qemu/qemu-system-riscv64-<hash>, linked
# from build/qemu-system-riscv64. The object tree and ccache persist.
set -euo pipefail
. "$(dirname "$0")/common.sh"

Q=$CACHE/qemu
srcdir=$(compgen -G "$SRC/qemu-10.0*/" | head -n1 || true)
[ -n "$srcdir" ] || { log "QEMU source missing (run scripts/fetch-sources.sh)"; exit 1; }
key=$( (basename "$srcdir"; hash_inputs "$ROOT/hardware/qemu" "$ROOT/hardware/model/accio_uncore.c" \
	"$ROOT/hardware/model/accio_uncore.h" "$ROOT/hardware/generated/accio_offsets.h" \
	"$ROOT/hardware/generated/accio_contract.h" "$0") | sha256sum | cut -c1-16)
out=$Q/qemu-system-riscv64-$key
reuse_cached "$out" qemu-system-riscv64 QEMU

T=$Q/tree
GIT=(git -C "$T" -c safe.directory='*' -c user.name=accio -c user.email=accio@localhost)
if [ ! -d "$T/.git" ] || [ "$(cat "$Q/tree.src" 2>/dev/null)" != "$srcdir" ]; then
	log "preparing source tree from $srcdir"
	rm -rf "$T" "$Q/obj"
	mkdir -p "$Q"
	cp -r "$srcdir" "$T"
	"${GIT[@]}" init -q
	"${GIT[@]}" add -f -A .
	"${GIT[@]}" commit -q -m base
	"${GIT[@]}" tag base
	echo "$srcdir" > "$Q/tree.src"
fi
# Re-apply the series only when it changed, so that the tree's timestamps
# (and so the incremental build) survive ordinary model edits.
series=$(hash_inputs "$ROOT/hardware/qemu/patches")
if [ "$(cat "$Q/tree.series" 2>/dev/null)" != "$series" ]; then
	"${GIT[@]}" am --abort >/dev/null 2>&1 || true
	"${GIT[@]}" checkout -q -f -B work base
	rm -rf "$T/hw/accio" "$T/include/hw/accio"
	for p in "$ROOT"/hardware/qemu/patches/*.patch; do
		"${GIT[@]}" am -q "$p"
	done
	echo "$series" > "$Q/tree.series"
fi
# Copy a file into the tree only when its content differs, with a fresh
# time: the incremental build then rebuilds exactly what changed (a copy
# that kept the source's time could look older than an object built from
# the copy before it).
put() {
	local dst=${@: -1} f
	for f in "${@:1:$#-1}"; do
		cmp -s "$f" "$dst/$(basename "$f")" || cp "$f" "$dst/"
	done
}
mkdir -p "$T/hw/accio" "$T/include/hw/accio"
put "$ROOT"/hardware/qemu/accio/*.c "$ROOT"/hardware/qemu/accio/meson.build \
	"$ROOT"/hardware/qemu/accio/Kconfig "$T/hw/accio"
put "$ROOT"/hardware/qemu/accio/*.h "$ROOT/hardware/generated/accio_offsets.h" \
	"$ROOT/hardware/generated/accio_contract.h" "$ROOT/hardware/model/accio_uncore.h" \
	"$T/include/hw/accio"
# the uncore model itself, built as part of the device
put "$ROOT/hardware/model/accio_uncore.c" "$ROOT/hardware/model/accio_uncore.h" \
	"$ROOT/hardware/generated/accio_offsets.h" "$ROOT/hardware/generated/accio_contract.h" \
	"$T/hw/accio"

B=$Q/obj
if [ ! -f "$B/build.ninja" ]; then
	log "configuring"
	mkdir -p "$B"
	(cd "$B" && "$T/configure" --target-list=riscv64-softmmu --python=/usr/bin/python3 \
		--without-default-features --enable-slirp --enable-fdt=system \
		--enable-tcg --enable-plugins --disable-docs --disable-werror --disable-install-blobs >"$Q/configure.log" 2>&1) \
		|| { tail -30 "$Q/configure.log"; exit 1; }
fi
log "building (jobs=$JOBS)"
run_logged "$Q/build.log" ninja ninja -C "$B" -j"$JOBS" qemu-system-riscv64
cp "$B/qemu-system-riscv64" "$out.tmp" && mv "$out.tmp" "$out"
ln -sf "$out" "$ROOT/build/qemu-system-riscv64"
log "QEMU $out"
