#!/usr/bin/env bash
# Build the Accio kernel: Debian's linux-source-6.1 + kernel-patches/series/*.patch
# + kernel-patches/config/accio.config, for riscv64.
# Output: $CACHE/linux/Image-<hash>, linked from build/Image. Incremental:
# the source tree is a git repository reset to its base before the series is
# applied, and the object tree and ccache persist under $CACHE/linux.
set -euo pipefail
. "$(dirname "$0")/common.sh"

L=$CACHE/linux
TARBALL=/usr/src/linux-source-6.1.tar.xz
[ -f "$TARBALL" ] || { log "missing $TARBALL (run scripts/bootstrap.sh)"; exit 1; }
# the series and the configuration, not the folder's documentation
key=$( (ls -l --time-style=+ "$TARBALL" | awk '{print $5}'
	hash_inputs "$ROOT"/kernel-patches/series/*.patch "$ROOT/kernel-patches/config" "$0") |
	sha256sum | cut -c1-16)
out=$L/Image-$key
[ -f "$out.map" ] && ln -sf "$out.map" "$ROOT/build/System.map"
reuse_cached "$out" Image kernel

T=$L/tree
if [ ! -d "$T/.git" ]; then
	log "unpacking linux-source-6.1"
	rm -rf "$T" "$L/linux-source-6.1"
	mkdir -p "$L"
	tar -C "$L" --no-same-owner -xf "$TARBALL"
	mv "$L/linux-source-6.1" "$T"
	(cd "$T" && git init -q && git add -f -A . && \
	 git -c user.name=accio -c user.email=accio@localhost commit -q -m base && git tag base)
fi
cd "$T"
git am --abort >/dev/null 2>&1 || true
git checkout -q -f base 2>/dev/null || git checkout -q -f -B work base
git checkout -q -f -B work base
git clean -qfdx
shopt -s nullglob
patches=("$ROOT"/kernel-patches/series/*.patch)
if [ "${#patches[@]}" -gt 0 ]; then
	log "applying ${#patches[@]} patches"
	git -c user.name=accio -c user.email=accio@localhost am -q "${patches[@]}"
fi

B=$L/obj
mkdir -p "$B"
MK=(make -C "$T" O="$B" ARCH=riscv CROSS_COMPILE=riscv64-linux-gnu- "CC=ccache riscv64-linux-gnu-gcc" LOCALVERSION= -j"$JOBS")
"${MK[@]}" -s defconfig >/dev/null
(cd "$B" && "$T/scripts/kconfig/merge_config.sh" -m -O "$B" "$B/.config" "$ROOT/kernel-patches/config/accio.config" >/dev/null)
"${MK[@]}" -s olddefconfig >/dev/null
# Every option of the fragment must have survived the merge.
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*) grep -qxF "$line" "$B/.config" || { log "config: $line did not take"; exit 1; } ;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }; opt=${opt%% *}
		! grep -q "^$opt=" "$B/.config" || { log "config: $opt is still set"; exit 1; } ;;
	esac
done < "$ROOT/kernel-patches/config/accio.config"
log "building Image (jobs=$JOBS)"
run_logged "$L/build.log" kernel "${MK[@]}" KBUILD_BUILD_TIMESTAMP="2026-01-01 00:00:00 UTC" \
	KBUILD_BUILD_VERSION=1 KBUILD_BUILD_USER=accio KBUILD_BUILD_HOST=accio Image
# System.map beside the Image: the host names the functions the harts are
# in when a guest stops making progress (tools/accio.py diagnostics).
cp "$B/System.map" "$out.map"
cp "$B/arch/riscv/boot/Image" "$out.tmp" && mv "$out.tmp" "$out"
ln -sf "$out" "$ROOT/build/Image"
ln -sf "$out.map" "$ROOT/build/System.map"
log "kernel $out"
