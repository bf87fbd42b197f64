#!/usr/bin/env bash
# The Python environment for the register-map generator and the tests (PyPI).
set -euo pipefail
. "$(dirname "$0")/common.sh"
REQ=$ROOT/scripts/requirements.txt
stamp=$CACHE/venv/.req-$(sha256sum "$REQ" | cut -c1-16)
[ -f "$stamp" ] && exit 0
log "creating $CACHE/venv"
rm -rf "$CACHE/venv"
/usr/bin/python3 -m venv "$CACHE/venv"
"$CACHE/venv/bin/pip" install -q --disable-pip-version-check -r "$REQ"
touch "$stamp"
