#!/bin/sh
# Print include/uapi/linux/accio.h as the kernel series creates it: the
# uapi header has one source, the patch that adds it.
set -eu
dir=${1:-$(dirname "$0")/../kernel-patches}
awk '
	/^diff --git / { on = ($3 == "a/include/uapi/linux/accio.h"); hunk = 0; next }
	on && /^@@/ { hunk = 1; next }
	on && hunk && /^\+/ { print substr($0, 2) }
' "$dir"/*.patch
