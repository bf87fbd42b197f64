#!/bin/sh
# eval/results/platform-change.md from the result folders it compares
# (eval/compare.py): the whole evaluation before and after the platform's
# time model, the old platform at three time slices, and this platform
# against its time model's settings. Each folder holds the command that
# made it (COMMAND).
#
#   eval/platform-change.sh            the page again from the folders
#   eval/platform-change.sh --measure  first the settings' quick runs again,
#                                      on this build (about 10 minutes on 2 cores)
set -e
cd "$(dirname "$0")/.."
PY=${PY:-python3}
S=eval/results-platform/settings
OUT=eval/results/platform-change.md
if [ "$1" = --measure ]; then
	# outside the tree while they run: each run wants a clean tree
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	runs="rr2000 rr500 rr125 skew250 serial"
	for s in "rr2000 ACCIO_RR_TIMESLICE=2000" "rr500 ACCIO_RR_TIMESLICE=500" \
		"rr125 ACCIO_RR_TIMESLICE=125" "skew250 ACCIO_ICOUNT_SKEW_NS=250" \
		"serial ACCIO_ICOUNT_PARALLEL=0"; do
		set -- $s
		env ACCIO_SEED=1 "$2" $PY -m eval --quick --only latency,cpu,multiplex,breakdown \
			--out "$tmp/$1" --report "$tmp/$1/REPORT.md"
		echo "ACCIO_SEED=1 $2 python3 -m eval --quick --only latency,cpu,multiplex,breakdown --out DIR" \
			> "$tmp/$1/COMMAND"
	done
	for r in $runs; do
		rm -rf "${S:?}/$r"
		mv "$tmp/$r" "$S/$r"
	done
fi
commit() {
	$PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["configuration"]["commit"])' "$1/latency.json"
}

$PY eval/compare.py --out $OUT --title "Before and after: the whole evaluation" \
	--note "The same evaluation on two platforms, each a full \`python3 -m eval\`. Before: the QEMU of commit 69c8614 (harts in rounds, every hart shown the time of the one that ran furthest; the NIC's bus 64 bits at 50 MHz and its 200 ns pipeline beside harts at 62.5 MHz; uncore loads an instruction; received frames in the rings without bus time), with that stop's image, one SoC at a time. After: eval/results, one build of commit $(commit eval/results) (each hart on its own time, no running hart more than 1 µs ahead of another; one clock for harts, bus, NIC and uncore, calibrated against the RTL SoC; the receive path on the bus). SoC time: the wall time of an experiment's SoCs, summed (what it costs on one core); the evaluation's wall time is less where SoCs ran side by side (--jobs)." \
	before=eval/results-platform/before after=eval/results

$PY eval/compare.py --out $OUT --append --title "The old platform against its time slice" \
	--note "Quick runs (latency, CPU, multiplexing T = 1, 4, 16 with 100 round trips, breakdown), the QEMU of 69c8614 at rr-timeslice 2000 (its setting), 500 and 125 instructions." \
	"rr 2000=$S/old-rr2000" "rr 500=$S/old-rr500" "rr 125=$S/old-rr125"

$PY eval/compare.py --out $OUT --append --title "This platform against its time model's settings" \
	--note "The same quick runs on this platform, commit $(commit $S/rr2000): rr-timeslice 2000 (the default), 500 and 125; the skew bound at 250 ns instead of 1000; and QEMU's own serial icount (ACCIO_ICOUNT_PARALLEL=0, every instruction of every hart on one clock)." \
	"default=$S/rr2000" "rr 500=$S/rr500" "rr 125=$S/rr125" "skew 250 ns=$S/skew250" "serial=$S/serial"
echo "$OUT"
