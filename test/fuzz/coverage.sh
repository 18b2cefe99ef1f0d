#!/usr/bin/env bash
# Line coverage of the modules each harness reaches (make fuzz-coverage).
#   FUZZ_DIR=build/fuzz test/fuzz/coverage.sh fuzz_json ...
# Replays the corpus of the last make fuzz run (FUZZ_DIR/corpus/NAME), or the committed
# seeds when there is none, through FUZZ_DIR/cov/bin/NAME and prints, per harness, each
# source file it reached with its covered lines.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=${FUZZ_DIR:-build/fuzz}
for tool in llvm-profdata-14 llvm-cov-14; do
  command -v "$tool" >/dev/null || { echo "fuzz-coverage: $tool is missing (apt-get install llvm-14)" >&2; exit 1; }
done

for name in "$@"; do
  corpus=$dir/corpus/$name
  if [ -z "$(ls -A "$corpus" 2>/dev/null)" ]; then
    corpus=$here/corpus/$name
  fi
  raw=$dir/cov/$name.profraw
  data=$dir/cov/$name.profdata
  # -runs=0: replay the corpus once, no mutations.
  LLVM_PROFILE_FILE=$raw "$dir/cov/bin/$name" -runs=0 "$corpus" >"$dir/cov/$name.log" 2>&1 ||
    { echo "fuzz-coverage: $name failed on its corpus, see $dir/cov/$name.log" >&2; exit 1; }
  llvm-profdata-14 merge -o "$data" "$raw" || exit 1
  echo "$name ($(find "$corpus" -type f | wc -l) inputs from ${corpus#"$root"/}):"
  # Columns of llvm-cov report: file, regions (3), functions (3), lines, missed lines, cover.
  llvm-cov-14 report "$dir/cov/bin/$name" -instr-profile="$data" "$root"/src/*/*.c 2>/dev/null |
    awk '$1 ~ /\.c$/ && $9 < $8 { printf "    %-18s %4d/%-4d lines  %s\n", $1, $8 - $9, $8, $10 }'
done
