#!/usr/bin/env bash
# make test: install what is missing, build (release and ASan+UBSan), start Redis, Kafka and
# MariaDB, set up the test Python (scripts/venv.sh), then run the cmocka unit tests, a short libFuzzer smoke run and the pytest
# integration suite against them, and the short chaos run (test/chaos).
# The pytest suite runs in two lanes at once, on two stacks (CONF and CONF_2).
# Ends with one line "N passed, N failed". Services that were already running stay up;
# services this run started are stopped again.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1

# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$ROOT/scripts/testlib.sh"
suite_start
# phase NAME: the time since the last phase, on one line, so that a slow run says where.
phase_at=$started_at
phase() {
  local now
  now=$(date +%s)
  printf '%-28s %4d s\n' "$1" "$((now - phase_at))"
  phase_at=$now
}
phase "packages and venv"

# The pytest suite runs in two lanes, each on a stack of its own: CONF's, on which every
# other part runs too, and CONF_2's (build/conf/test-2.conf). Both stacks' services start
# in the background while the binaries build (they need only the packages).
CONF_2=${CONF_2:-build/conf/test-2.conf}
mkdir -p build
was_up=false
bash scripts/stack.sh running --services-only && was_up=true
was_up_2=false
CONF=$CONF_2 bash scripts/stack.sh running --services-only && was_up_2=true
lane_log=build/test-lane-1-up.log
lane_2_log=build/test-lane-2-up.log
bash scripts/stack.sh up --services-only > "$lane_log" 2>&1 &
lane_up=$!
CONF=$CONF_2 bash scripts/stack.sh up --services-only > "$lane_2_log" 2>&1 &
lane_2_up=$!

make -s -j"$jobs" all || die "build failed"
make -s -j"$jobs" SANITIZE=1 BUILD=build/asan all unit-tests integration-c-tests build/asan/bench/delayproxy \
  || die "sanitizer build failed"
phase "builds"
wait "$lane_up" || { cat "$lane_log" >&2; die "starting the services failed"; }
cat "$lane_log"
phase "services"

export SECKILL_TEST_REDIS_PORT=${SECKILL_TEST_REDIS_PORT:-$(conf_get redis.port)}
# test_persist_race.c finds the MariaDB in the same file.
export SECKILL_CONF=${SECKILL_CONF:-$CONF}

echo "== line length (C sources and headers: at most 110 columns)"
step_run "line length" bash scripts/linelength.sh

echo "== unit tests (cmocka, ASan+UBSan, no I/O)"
unit_tests_run build/asan

echo "== C integration tests (cmocka against the real Redis, ASan+UBSan)"
for src in test/integration/c/test_*.c; do
  t=build/asan/itest/$(basename "$src" .c)
  if [ -x "$t" ]; then cmocka_run "$t"; else warn "$t was not built from $src"; failed=$((failed + 1)); fi
done

echo "== fuzz smoke (libFuzzer, ASan+UBSan, a few seconds per harness)"
# One test per harness; the full run is make fuzz.
out=$(make -s -j"$jobs" fuzz-smoke FUZZ_JOBS="$jobs" 2>&1)
rc=$?
printf '%s\n' "$out"
ok=$(printf '%s\n' "$out" | grep -c '^fuzz [a-z_]*: ok')
bad=$(printf '%s\n' "$out" | grep -c '^fuzz [a-z_]*: FAILED')
if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
  bad=1  # the harnesses did not build, or the runner stopped before reporting
fi
passed=$((passed + ok))
failed=$((failed + bad))
printf '%-28s %3d passed, %d failed\n' "fuzz-smoke" "$ok" "$bad"

phase "unit, C, fuzz smoke"
wait "$lane_2_up" || { cat "$lane_2_log" >&2; die "starting the second lane's services ($CONF_2) failed"; }
phase "second lane's services"

echo "== integration tests (pytest, real services, ASan+UBSan binaries, two lanes)"
junit=build/pytest-junit.xml
rm -f "$junit"
# Each module runs whole on one lane (test/integration/conftest.py). The modules on the
# tests' cluster are make test-cluster's (test/cluster, scripts/test-cluster.sh).
SECKILL_BIN=$ROOT/build/asan SECKILL_ROOT=$ROOT SECKILL_CONF=$CONF SECKILL_LANE_CONFS="$CONF $CONF_2" \
  "$PY" -m pytest -q -p no:cacheprovider -n 2 --junitxml="$junit" test/integration
junit_add "$junit" "pytest (two lanes)"
phase "pytest"

echo "== chaos, short (consumer kill -9 mid-batch, Kafka broker stopped 10 s; ASan+UBSan binaries)"
# The scenarios of make chaos marked `short` (test/chaos, docs/chaos.md): a sale under load
# while the fault hits, then I1-I6 and seckillctl verify. They stop and restart the stack's
# Kafka on purpose. One test per scenario.
chaos_junit=build/pytest-chaos-junit.xml
rm -f "$chaos_junit"
SECKILL_BIN=$ROOT/build/asan SECKILL_ROOT=$ROOT SECKILL_CONF=$CONF SECKILL_CHAOS_OUT=$ROOT/build/chaos-short \
  "$PY" -m pytest -q -s -p no:cacheprovider -m short --junitxml="$chaos_junit" test/chaos
junit_add "$chaos_junit" "chaos-short"

phase "chaos, short"
if [ "$was_up" = false ]; then
  bash scripts/stack.sh down >/dev/null 2>&1 || warn "stopping the services failed"
fi
if [ "$was_up_2" = false ]; then
  CONF=$CONF_2 bash scripts/stack.sh down >/dev/null 2>&1 || warn "stopping the second lane's services failed"
fi
suite_end test
