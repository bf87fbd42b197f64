# Shared settings for the build scripts.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${ACCIO_CACHE:-$HOME/.cache/accio}
SRC=$CACHE/src
JOBS=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache}
log() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*" >&2; }
# hash_inputs FILE|DIR...: a short content hash of the given inputs
hash_inputs() {
	(for f in "$@"; do
		if [ -d "$f" ]; then find "$f" -type f -print0 | sort -z | xargs -0 sha256sum; else sha256sum "$f"; fi
	done) | sed "s#$ROOT/##" | sha256sum | cut -c1-16
}
# run_logged LOG LABEL CMD...: run CMD with its output in LOG, report progress
# (elapsed time and the log's last line) every 15 s, show the log's tail on failure.
run_logged() {
	local logf=$1 label=$2 pid t=0
	shift 2
	"$@" >"$logf" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		t=$((t + 1))
		if [ $((t % 15)) -eq 0 ]; then
			log "$label: ${t}s, $(tail -n1 "$logf" | tr -s ' ' | cut -c1-70)"
		fi
	done
	if ! wait "$pid"; then
		tail -n 40 "$logf" >&2
		return 1
	fi
}
# reuse_cached OUT LINK WHAT: when OUT was built before (and FORCE is unset),
# point build/LINK at it and end the calling script.
reuse_cached() {
	mkdir -p "$ROOT/build"
	if [ -f "$1" ] && [ -z "${FORCE:-}" ]; then
		ln -sf "$1" "$ROOT/build/$2"
		log "cached $3 $1"
		exit 0
	fi
}
