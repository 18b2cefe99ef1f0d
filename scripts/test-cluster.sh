#!/usr/bin/env bash
# make test-cluster: the integration tests on the tests' cluster (the modules marked
# `cluster`: test/integration/conftest.py), with the ASan+UBSan binaries: two gateways on
# one port and two consumers on a Redis Cluster of three masters and three replicas and
# three Kafka nodes (build/conf/test-cluster.conf), slot migration, failover, a lost
# broker. Brings the cluster up once and down after. Ends with one line "N passed, N failed".
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1

started_at=$(date +%s)
bash scripts/install-deps.sh || die "installing dependencies failed"
PY=$(bash scripts/venv.sh) || die "setting up the test Python (scripts/venv.sh) failed"
jobs=$(nproc 2>/dev/null || echo 2)
make -s -j"$jobs" SANITIZE=1 BUILD=build/asan all || die "sanitizer build failed"

# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$ROOT/scripts/testlib.sh"
passed=0
failed=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "== integration tests on the cluster (pytest, ASan+UBSan binaries)"
junit=build/pytest-cluster-junit.xml
rm -f "$junit"
SECKILL_BIN=$ROOT/build/asan SECKILL_ROOT=$ROOT SECKILL_CONF=$CONF "$PY" -m pytest -q -p no:cacheprovider \
  -m cluster --junitxml="$junit" test/integration
counts=$(junit_counts "$junit")
passed=$((passed + ${counts% *}))
failed=$((failed + ${counts#* }))

echo "make test-cluster took $(( $(date +%s) - started_at )) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
