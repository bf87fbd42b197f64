#!/usr/bin/env bash
# Install what the Accio build needs from Debian's archive. Idempotent.
set -euo pipefail

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

need_update=0
src=/etc/apt/sources.list.d/accio.sources
if [ ! -f "$src" ]; then
	$SUDO tee "$src" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	need_update=1
fi

PKGS=(
	build-essential git make ccache ninja-build pkg-config python3-venv
	gcc-riscv64-linux-gnu libc6-dev-riscv64-cross binutils-riscv64-linux-gnu
	libglib2.0-dev libpixman-1-dev libslirp-dev zlib1g-dev libfdt-dev
	flex bison bc libssl-dev libelf-dev cpio xz-utils kmod rsync
	device-tree-compiler linux-source-6.1 dpkg-dev fakeroot
	verilator iproute2 opensbi python3-pip maven openjdk-17-jdk-headless
	sockperf clang-14 libclang-rt-14-dev openmpi-bin libopenmpi-dev
	groff-base
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ] || [ "$need_update" = 1 ]; then
	echo "[bootstrap] apt-get update"
	$SUDO apt-get update -qq
fi
if [ "${#missing[@]}" -gt 0 ]; then
	echo "[bootstrap] installing: ${missing[*]}"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# QEMU 10.0 needs meson >= 1.5: take it from bookworm-backports.
if ! dpkg --compare-versions "$(dpkg-query -W -f='${Version}' meson 2>/dev/null || echo 0)" ge 1.5; then
	echo "[bootstrap] installing meson from bookworm-backports"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t bookworm-backports meson
fi
if ! dpkg-query -W -f='${Status}' python3-pycotap 2>/dev/null | grep -q "install ok installed"; then
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t bookworm-backports python3-pycotap
fi
# OpenSBI 1.1 (bookworm) publishes a hart-start request (HSM state
# START_PENDING) before it stores the start address: a hart that wakes in between jumps to
# the stale cold-boot address and runs the kernel's primary boot path a
# second time under the running kernel, which then hangs silently before its
# console is up (seen in about 1 boot in 150 with the host loaded). Take the
# firmware from bookworm-backports (1.5), which stores the address first.
if ! dpkg --compare-versions "$(dpkg-query -W -f='${Version}' opensbi 2>/dev/null || echo 0)" ge 1.5; then
	echo "[bootstrap] installing opensbi from bookworm-backports (hart-start race in older firmware)"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t bookworm-backports opensbi
fi
echo "[bootstrap] packages ready"
