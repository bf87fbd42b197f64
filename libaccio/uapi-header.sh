#!/bin/sh
# Print include/uapi/linux/accio.h as the kernel series leaves it: the uapi
# header has one source, the patches that create and change it (applied in
# order to that one file). The C library's headers do not know the series'
# system call numbers, so the ones it adds to asm-generic/unistd.h follow,
# each where not defined.
#   uapi-header.sh [PATCH-DIR [FILE]]
# With FILE (another uapi header of the series, e.g.
# include/uapi/rdma/accio-abi.h), print that file instead, as it is.
set -eu
dir=$(cd "${1:-$(dirname "$0")/../kernel-patches}" && pwd)
f=${2:-include/uapi/linux/accio.h}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# outside any repository, wherever the temporary folder is
export GIT_CEILING_DIRECTORIES=$(dirname "$tmp")
for p in "$dir"/*.patch; do
	(cd "$tmp" && git apply --include="$f" "$p")
done
cat "$tmp/$f"
[ $# -lt 2 ] || exit 0
awk '
	/^diff --git / { on = ($3 == "a/include/uapi/asm-generic/unistd.h"); next }
	on && /^\+#define __NR_accio_/ {
		if (!n++)
			print "\n/* system calls of the series (asm-generic/unistd.h) */"
		printf "#ifndef %s\n#define %s %s\n#endif\n", $2, $2, $3
	}
' "$dir"/*.patch
