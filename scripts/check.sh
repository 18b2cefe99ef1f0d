#!/usr/bin/env bash
# make check: the tests that need no running service and no root, in seconds: the line-length
# rule of the C tree (scripts/linelength.sh), the cmocka unit tests (ASan+UBSan) and the
# pytest tests that use none of the stacks (those not marked `stack`:
# test/integration/conftest.py marks every test whose fixtures reach the services, a cluster
# or a stack of its own). Ends with one line "N passed, N failed".
# make test runs all of these too.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1

# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$ROOT/scripts/testlib.sh"
suite_start
echo "== line length (C sources and headers: at most 110 columns)"
step_run "line length" bash scripts/linelength.sh
echo "== include graph (each part's modules in layers: no circle)"
step_run "include graph" python3 scripts/includes.py

# The binaries too: some of these tests run seckillctl, seckill-admin or the gateway alone,
# and test_delayproxy.py the latency benchmark's proxy.
make -s -j"$jobs" SANITIZE=1 BUILD=build/asan all unit-tests build/asan/bench/delayproxy || die "sanitizer build failed"
# The release seckillctl as well: it finds the checkout's config from build/, one level
# above where the sanitizer build sits (test_admin.py runs both).
make -s -j"$jobs" build/seckillctl || die "release build of seckillctl failed"

echo "== unit tests (cmocka, ASan+UBSan, no I/O)"
unit_tests_run build/asan

echo "== tests that need no service (pytest -m 'not stack')"
junit=build/pytest-check-junit.xml
rm -f "$junit"
SECKILL_BIN=$ROOT/build/asan SECKILL_ROOT=$ROOT SECKILL_CONF=$CONF "$PY" -m pytest -q -p no:cacheprovider \
  -m "not stack" --junitxml="$junit" test/integration test/cluster
junit_add "$junit" "pytest (no service)"

suite_end check
