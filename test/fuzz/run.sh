#!/usr/bin/env bash
# Runs libFuzzer harnesses for a bounded time each (make fuzz / make fuzz-smoke).
#   FUZZ_DIR=build/fuzz test/fuzz/run.sh SECONDS fuzz_json fuzz_config ...
# Each harness starts from a fresh copy of its committed seeds (test/fuzz/corpus/NAME) in
# FUZZ_DIR/corpus/NAME, so a run never edits the repository and two runs start alike.
# Prints one line per harness, "fuzz NAME: ok, ..." or "fuzz NAME: FAILED ...", with the
# reproducer's path on failure, and exits non-zero if any failed.
# FUZZ_JOBS=N runs N harnesses at a time (default 1); the lines keep the order of NAME...
set -uo pipefail

[ $# -ge 2 ] || { echo "usage: FUZZ_DIR=build/fuzz $0 SECONDS NAME..." >&2; exit 2; }
seconds=$1
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${FUZZ_DIR:-build/fuzz}
status=0

fuzz_one() {
  local name=$1 bin work artifacts log rc runs speed cov files repro args
  bin=$dir/bin/$name
  work=$dir/corpus/$name
  artifacts=$dir/artifacts/$name
  log=$dir/logs/$name.log
  rm -rf "$work" "$artifacts"
  mkdir -p "$work" "$artifacts" "$dir/logs"
  if [ -d "$here/corpus/$name" ]; then
    cp -R "$here/corpus/$name/." "$work/"
  fi
  args=(-max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$artifacts/")
  [ -f "$here/$name.dict" ] && args+=(-dict="$here/$name.dict")

  "$bin" "${args[@]}" "$work" >"$log" 2>&1
  rc=$?

  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
  files=$(find "$work" -type f | wc -l)
  # Slow inputs are reported, not failures; anything else in the artifacts is.
  repro=$(find "$artifacts" -type f ! -name 'slow-unit-*' | head -n 1)
  if [ "$rc" -eq 0 ] && [ -z "$repro" ] && [ -n "$runs" ]; then
    echo "fuzz $name: ok, $runs runs in ${seconds} s (${speed}/s), ${cov:-cov: ?}, corpus $files files"
    return 0
  fi
  echo "fuzz $name: FAILED (exit $rc) after ${runs:-?} runs; log: $log"
  grep -E 'ERROR: |SUMMARY: |runtime error: |Test unit written' "$log" | head -n 8 | sed 's/^/    /'
  if [ -n "$repro" ]; then
    echo "    reproducer: $repro"
    echo "    rerun: $bin $repro"
  fi
  return 1
}

jobs=${FUZZ_JOBS:-1}
results=$dir/results
rm -rf "$results"
mkdir -p "$results"
for name in "$@"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  fuzz_one "$name" > "$results/$name" 2>&1 &
done
wait
for name in "$@"; do
  cat "$results/$name"
  grep -q "^fuzz $name: ok," "$results/$name" || status=1
done
exit "$status"
