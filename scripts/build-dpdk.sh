#!/usr/bin/env bash
# Cross-compile DPDK 22.11 LTS (Debian bookworm's source: scripts/fetch-dpdk.sh)
# for the guest, with the driver SDK headers that Debian's libdpdk-dev leaves
# out, so that the Accio NIC's poll-mode driver (apps/dpdk/net_accio) builds
# out of tree against it. Installed under /opt/dpdk (shared libraries,
# dpdk-testpmd, pkg-config file), staged in $CACHE/dpdk-<hash>/root and
# linked from build/dpdk. Only the bus and mempool drivers the guest uses are
# built. Exit status 3: Debian's archive cannot be read and no source is cached.
set -euo pipefail
. "$(dirname "$0")/common.sh"

CROSS=$ROOT/buildroot-config/dpdk/riscv64-cross.ini
src=$("$ROOT/scripts/fetch-dpdk.sh")
key=$( (basename "$src"; hash_inputs "$CROSS" "$0") | sha256sum | cut -c1-16)
OUT=$CACHE/dpdk-$key
mkdir -p "$ROOT/build"
if [ -f "$OUT/root/opt/dpdk/lib/pkgconfig/libdpdk.pc" ] && [ -z "${FORCE:-}" ]; then
	ln -sfn "$OUT/root" "$ROOT/build/dpdk"
	log "cached DPDK $OUT"
	exit 0
fi
command -v meson >/dev/null && command -v ninja >/dev/null || { log "meson and ninja are needed"; exit 1; }
PY=$CACHE/venv/bin/python
"$PY" -c 'import elftools' 2>/dev/null || { log "pyelftools missing (scripts/venv.sh)"; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT"
log "configuring $(basename "$src") for riscv64"
# meson runs DPDK's Python build tools with the first python3 on PATH: the
# venv's, which has pyelftools
PATH=$CACHE/venv/bin:$PATH run_logged "$OUT/build.log" "DPDK configure" \
	meson setup "$OUT/build" "$src" --cross-file "$CROSS" \
	--prefix=/opt/dpdk --libdir=lib --buildtype=release -Ddefault_library=shared \
	-Denable_driver_sdk=true -Dtests=false -Denable_docs=false -Denable_kmods=false \
	-Dexamples= -Denable_apps=test-pmd -Dmax_lcores=128 -Dmax_numa_nodes=1 \
	-Denable_drivers=bus/vdev,mempool/ring,net/ring \
	-Ddisable_libs=bitratestats,cfgfile,flow_classify,gpudev,gro,gso,kni,jobstats,latencystats,metrics,node,pdump,pipeline,port,power,table,vhost
log "building DPDK (a minute or two on 2 cores when nothing is cached)"
PATH=$CACHE/venv/bin:$PATH run_logged "$OUT/build.log" "DPDK build" ninja -C "$OUT/build" -j"$JOBS"
PATH=$CACHE/venv/bin:$PATH DESTDIR="$OUT/root" run_logged "$OUT/install.log" "DPDK install" \
	meson install -C "$OUT/build" --quiet
ln -sfn "$OUT/root" "$ROOT/build/dpdk"
log "DPDK $(basename "$src") in $OUT/root/opt/dpdk"
