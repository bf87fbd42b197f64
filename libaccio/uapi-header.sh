#!/bin/sh
# Print include/uapi/linux/accio.h as the kernel series leaves it: the file
# the series adds, kernel-patches/src/include/uapi/linux/accio.h. The C
# library's headers do not know the series' system call numbers, so the
# ones its hooks add to asm-generic/unistd.h follow, each where not defined.
#   uapi-header.sh [KERNEL-PATCHES-DIR [FILE]]
# With FILE (another uapi header of the series, e.g.
# include/uapi/rdma/accio-abi.h), print that file instead, as it is.
set -eu
dir=$(cd "${1:-$(dirname "$0")/../kernel-patches}" && pwd)
f=${2:-include/uapi/linux/accio.h}
[ -f "$dir/src/$f" ] || { echo "uapi-header.sh: the kernel series adds no $f" >&2; exit 1; }
cat "$dir/src/$f"
[ $# -lt 2 ] || exit 0
awk '
	/^diff --git / { on = ($3 == "a/include/uapi/asm-generic/unistd.h"); next }
	on && /^\+#define __NR_accio_/ {
		if (!n++)
			print "\n/* system calls of the series (asm-generic/unistd.h) */"
		printf "#ifndef %s\n#define %s %s\n#endif\n", $2, $2, $3
	}
' "$dir"/hooks/*.diff
