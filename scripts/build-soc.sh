#!/usr/bin/env bash
# The Accio Rocket SoC as a Verilator model, and its bare-metal programs.
#   scripts/build-soc.sh [HARTS [diplomatic]]      (HARTS 1 to 4, default 1)
# Steps, each cached under $ACCIO_CACHE/soc by a hash of its inputs:
#   rocket  rocket-chip 1.2.6 (Maven) elaborates ExampleRocketSystem with our
#           configuration (hardware/soc/src) and boot ROM: Verilog, the AXI
#           ID map of its MMIO port
#   uncore  the uncore's Chisel (hardware/rtl) emitted with 16 rows, HARTS harts,
#           with the NIC in front of it (AccioNicUncore; the diplomatic SoC:
#           the uncore alone)
#   sim     the Verilog top (hardware/soc/gen_top.py), the MMIO bridge
#           (hardware/soc/vsrc) and the harness (hardware/soc/harness)
#           compiled by Verilator
# Output: build/soc/soc-simN (HARTS=N), build/soc/sw/*.elf.
# With "diplomatic", Rocket is AccioRocketSystem: the uncore attached by the
# WithAccioUncore config fragment (rocket-chip's diplomacy) instead of the
# Verilog top; output build/soc/soc-simN-dip and build/soc/sw-dip/*.elf
# (the programs built for its address map, -DSOC_DIPLOMATIC=N).
set -euo pipefail
. "$(dirname "$0")/common.sh"
HARTS=${1:-1}
DIP=${2:-}
case "$DIP" in ""|diplomatic) ;; *) log "second argument: diplomatic or nothing"; exit 2 ;; esac
SFX=${DIP:+-dip}
ROWS=${SOC_ROWS:-16}
case "$HARTS" in 1|2|3|4) ;; *) log "HARTS must be 1 to 4"; exit 2 ;; esac
SOC=$ROOT/hardware/soc
OUT=$ROOT/build/soc
SC=$CACHE/soc
SW=$OUT/sw$SFX
mkdir -p "$SW" "$SC"
RV="riscv64-linux-gnu-gcc -march=rv64imac_zicsr_zifencei -mabi=lp64 -mcmodel=medany"

# the boot ROM image (baked into the Rocket Verilog)
$RV -nostdlib -c "$SOC/sw/bootrom.S" -o "$SW/bootrom.o"
riscv64-linux-gnu-objcopy -O binary "$SW/bootrom.o" "$SW/bootrom.img"

# bare-metal programs
for c in "$SOC"/sw/*.c; do
	$RV ${DIP:+-DSOC_DIPLOMATIC=$HARTS} -fno-pie -no-pie -Wl,--build-id=none,--no-warn-rwx-segments \
		-ffreestanding -nostdlib -nostartfiles -static -O2 -Wall -Werror -I"$SOC/sw" \
		-I"$ROOT/hardware/generated" -T "$SOC/sw/link.ld" \
		-o "$SW/$(basename "$c" .c).elf" "$SOC/sw/crt0.S" "$c"
done

export MAVEN_OPTS=${MAVEN_OPTS:--Xmx6g}
rkey=$(hash_inputs "$SOC/pom.xml" "$SOC/src" "$SW/bootrom.img"; echo "$HARTS $DIP")
rkey=$(echo "$rkey" | sha256sum | cut -c1-16)
R=$SC/rocket-$HARTS$SFX-$rkey
if [ ! -f "$R/AccioRocket$HARTS.v" ]; then
	log "rocket-chip 1.2.6: elaborating $HARTS hart(s) (about two minutes)"
	rm -rf "$R.tmp"
	mkdir -p "$R.tmp"
	cp "$SW/bootrom.img" "$R.tmp/bootrom.img"
	(cd "$SOC" && run_logged "$R.tmp/emit.log" rocket mvn -B -q -Dstyle.color=never compile \
		exec:java -Dexec.mainClass=accio.soc.Emit \
		-Dexec.args="$R.tmp $HARTS $R.tmp/bootrom.img $DIP")
	rm -f "$R.tmp"/*.fir
	rm -rf "$R" && mv "$R.tmp" "$R"
fi

if [ -n "$DIP" ]; then UTOP=AccioUncore; NIC=; else UTOP=AccioNicUncore; NIC=nic; fi
ukey=$(hash_inputs "$ROOT/hardware/rtl/src/main" "$ROOT/hardware/rtl/pom.xml" \
	"$ROOT/hardware/generated/AccioRegs.scala"; echo "$ROWS $HARTS $UTOP")
ukey=$(echo "$ukey" | sha256sum | cut -c1-16)
U=$SC/uncore-$ROWS-$HARTS-$ukey
if [ ! -f "$U/$UTOP.sv" ]; then
	log "uncore: $ROWS rows, $HARTS hart(s) ($UTOP)"
	rm -rf "$U.tmp"
	run_logged "$SC/uncore.log" uncore make -C "$ROOT/hardware/rtl" verilog ROWS="$ROWS" \
		HARTS="$HARTS" OUTDIR="$U.tmp" NIC="$NIC"
	rm -rf "$U" && mv "$U.tmp" "$U"
fi

TOP=$OUT/AccioSoC$HARTS$SFX.sv
if [ -n "$DIP" ]; then
	python3 "$SOC/gen_top.py" --diplomatic "$R/AccioRocket$HARTS.v" "$HARTS" "$TOP"
else
	python3 "$SOC/gen_top.py" "$R/AccioRocket$HARTS.v" "$R/mmio-ids.txt" "$HARTS" "$TOP"
fi
TRACE=${TRACE:-0}
VFLAGS="-O2 --x-assign fast --x-initial fast --noassert --savable -Wno-fatal -Wno-lint -Wno-style
	-Wno-PINCONNECTEMPTY +define+PRINTF_COND=0 +define+STOP_COND=0"
[ "$TRACE" = 1 ] && VFLAGS="$VFLAGS --trace-fst"
skey=$(hash_inputs "$TOP" "$SOC/vsrc" "$SOC/harness" "$U/$UTOP.sv" \
	"$R/AccioRocket$HARTS.v"; echo "$VFLAGS"; verilator --version)
skey=$(echo "$skey" | sha256sum | cut -c1-16)
S=$SC/sim-$HARTS$SFX-$skey
if [ ! -x "$S/soc-sim" ]; then
	log "verilator: the SoC with $HARTS hart(s) (a minute or two)"
	rm -rf "$S.tmp"
	mkdir -p "$S.tmp"
	# shellcheck disable=SC2086
	run_logged "$S.tmp/verilator.log" verilator verilator --cc --exe --build -j "$JOBS" $VFLAGS \
		--top-module AccioSoC -Mdir "$S.tmp/obj" -o ../soc-sim \
		-CFLAGS "-O1 -std=c++17 -DSOC_SAVABLE ${NIC:+-DSOC_NIC}" -LDFLAGS "-static-libstdc++" \
		"$TOP" "$SOC/vsrc/AccioMmioBridge.sv" "$U/$UTOP.sv" \
		"$R/AccioRocket$HARTS.v" "$R/plusarg_reader.v" "$SOC/harness/harness.cc"
	rm -rf "$S.tmp/obj"
	rm -rf "$S" && mv "$S.tmp" "$S"
fi
ln -sfn "$S/soc-sim" "$OUT/soc-sim$HARTS$SFX"
log "ready: build/soc/soc-sim$HARTS$SFX, build/soc/sw$SFX/*.elf"
