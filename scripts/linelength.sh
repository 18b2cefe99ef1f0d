#!/usr/bin/env bash
# The line-length rule of the C tree: no line of a C source or header longer than 110
# columns. Prints each offending line as "file:line: N columns" and exits 1 if there is one.
# make check runs it (scripts/check.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
shopt -s globstar nullglob

max=110
files=(src/**/*.c include/**/*.h test/unit/**/*.c test/unit/*.h test/integration/c/*.c test/fuzz/*.c
       bench/*.c)
[ "${#files[@]}" -gt 0 ] || { echo "linelength: no C files found" >&2; exit 1; }
# Characters, not bytes: a UTF-8 character in a comment or a string takes one column.
LC_ALL=C.UTF-8 awk -v max="$max" '
  length($0) > max { printf "%s:%d: %d columns\n", FILENAME, FNR, length($0); bad = 1 }
  END { exit bad }' "${files[@]}"
