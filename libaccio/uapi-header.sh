#!/bin/sh
# Print include/uapi/linux/accio.h as the kernel series leaves it: the uapi
# header has one source, the patches that create and change it (applied in
# order to that one file). The C library's headers do not know the series'
# system call numbers, so the ones it adds to asm-generic/unistd.h follow,
# each where not defined.
set -eu
dir=$(cd "${1:-$(dirname "$0")/../kernel-patches}" && pwd)
f=include/uapi/linux/accio.h
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# outside any repository, wherever the temporary folder is
export GIT_CEILING_DIRECTORIES=$(dirname "$tmp")
for p in "$dir"/*.patch; do
	(cd "$tmp" && git apply --include="$f" "$p")
done
cat "$tmp/$f"
awk '
	/^diff --git / { on = ($3 == "a/include/uapi/asm-generic/unistd.h"); next }
	on && /^\+#define __NR_accio_/ {
		if (!n++)
			print "\n/* system calls of the series (asm-generic/unistd.h) */"
		printf "#ifndef %s\n#define %s %s\n#endif\n", $2, $2, $3
	}
' "$dir"/*.patch
