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
