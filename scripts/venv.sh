#!/usr/bin/env bash
# The Python the test suites run with: a virtual environment in var/venv, made from
# Debian's interpreter (/usr/bin/python3, package python3-venv) and holding exactly the
# pins of test/requirements.txt, installed from PyPI with pip. Whatever python3 comes
# first on PATH plays no part.
#   scripts/venv.sh          prints the venv's interpreter (var/venv/bin/python)
# Idempotent: a venv whose requirements and base interpreter are unchanged is left alone
# (no network); otherwise it is made again from scratch.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VENV=$TOOLS/venv
REQ=$ROOT/test/requirements.txt
BASE=/usr/bin/python3
[ -x "$BASE" ] || BASE=$(command -v python3) || die "no python3 to make $VENV from (install python3-venv)"
STAMP=$VENV/.seckill-requirements

# What the venv was made from: the requirements and the base interpreter's version.
want=$({ cat "$REQ"; "$BASE" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d ' ' -f 1)
ready() { [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; }

if ! ready; then
  take_lock venv "$TOOLS"
  if ! ready; then
    warn "making $VENV from $BASE and $REQ (pip, from PyPI)"
    "$BASE" -m venv --clear "$VENV" >&2 ||
      die "$BASE -m venv failed (Debian: apt-get install python3-venv)"
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQ" >&2 ||
      die "pip could not install $REQ into $VENV"
    echo "$want" >"$STAMP"
  fi
fi
echo "$VENV/bin/python"
