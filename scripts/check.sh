#!/usr/bin/env bash
# make check: the tests that need no running service and no root, in seconds: the cmocka
# unit tests (ASan+UBSan) and the pytest tests that use none of the stacks (those not
# marked `stack`: test/integration/conftest.py marks every test whose fixtures reach the
# services, a cluster or a stack of its own). Ends with one line "N passed, N failed".
# make test runs all of these too.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1

started_at=$(date +%s)
bash scripts/install-deps.sh || die "installing dependencies failed"
PY=$(bash scripts/venv.sh) || die "setting up the test Python (scripts/venv.sh) failed"
jobs=$(nproc 2>/dev/null || echo 2)
# The binaries too: some of these tests run seckillctl, seckill-admin or the gateway alone.
make -s -j"$jobs" SANITIZE=1 BUILD=build/asan all unit-tests || die "sanitizer build failed"

# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$ROOT/scripts/testlib.sh"
passed=0
failed=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "== unit tests (cmocka, ASan+UBSan, no I/O)"
unit_tests_run build/asan

echo "== tests that need no service (pytest -m 'not stack')"
junit=build/pytest-check-junit.xml
rm -f "$junit"
SECKILL_BIN=$ROOT/build/asan SECKILL_ROOT=$ROOT SECKILL_CONF=$CONF "$PY" -m pytest -q -p no:cacheprovider \
  -m "not stack" --junitxml="$junit" test/integration
counts=$(junit_counts "$junit")
passed=$((passed + ${counts% *}))
failed=$((failed + ${counts#* }))
printf '%-28s %3d passed, %d failed\n' "pytest (no service)" "${counts% *}" "${counts#* }"

echo "make check took $(( $(date +%s) - started_at )) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
