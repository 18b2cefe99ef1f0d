#!/usr/bin/env bash
# make test-cluster: the integration tests on the tests' cluster (test/cluster, its fixtures
# in test/cluster/conftest.py), with the ASan+UBSan binaries: two gateways on
# one port and two consumers on a Redis Cluster of three masters with two replicas each and
# three Kafka nodes (build/conf/test-cluster.conf), slot migration, failover, a lost
# broker. Brings the cluster up once and down after. Ends with one line "N passed, N failed".
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1

# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$ROOT/scripts/testlib.sh"
suite_start
make -s -j"$jobs" SANITIZE=1 BUILD=build/asan all || die "sanitizer build failed"


echo "== integration tests on the cluster (pytest, ASan+UBSan binaries)"
junit=build/pytest-cluster-junit.xml
rm -f "$junit"
SECKILL_BIN=$ROOT/build/asan SECKILL_ROOT=$ROOT SECKILL_CONF=$CONF "$PY" -m pytest -q -p no:cacheprovider \
  --junitxml="$junit" test/cluster
junit_add "$junit" "pytest (cluster)"

suite_end test-cluster
