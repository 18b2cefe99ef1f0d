#!/usr/bin/env bash
# make chaos: the chaos suite (docs/chaos.md) with the release binaries against the
# stack's Redis, Kafka and MariaDB (CONF names the stack's config). A service that is
# down is started first and stopped again at the end; one that was running is left
# running (the faults restart it, so its pid changes). The gateway and consumer the suite
# runs are its own (own ports, topic and consumer group), never the stack's.
#   [TOPOLOGY=cluster] test/chaos/run.sh [pytest args...]     e.g. -k S3, or -m short
# Ends with the scenario x invariant table; the details go to build/chaos/report.md.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../../scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
cd "$ROOT" || exit 1

# Stopping Kafka, MariaDB or Redis under someone else's feet would break their run.
if pid_alive "$VAR/run/order-consumer.pid" || pid_alive "$VAR/run/seckill-server.pid"; then
  warn "note: the stack's own gateway/consumer are running; the faults will hit them too"
fi

started=()
redis_script=redis
[ -z "$(conf_get redis.nodes)" ] || redis_script=redis-cluster
for svc in "$redis_script" mariadb kafka; do
  bash "scripts/$svc.sh" status >/dev/null 2>&1 || started+=("$svc")
done
if [ ${#started[@]} -gt 0 ]; then
  echo "chaos: starting ${started[*]} (stopped again at the end)"
  bash scripts/stack.sh up --services-only || die "starting the services failed"
fi

# The project's test Python (var/venv, test/requirements.txt), not the first python3 on PATH.
PY=$(bash scripts/venv.sh) || die "setting up the test Python (scripts/venv.sh) failed"
# TOPOLOGY=cluster: the scenarios of several gateways, consumers and brokers.
case ${TOPOLOGY:-single} in
  cluster) scenarios=test/chaos/test_chaos_cluster.py ;;
  *) scenarios=test/chaos/test_chaos.py ;;
esac
SECKILL_BIN=${SECKILL_BIN:-$ROOT/build} SECKILL_ROOT=$ROOT SECKILL_CONF=$CONF \
  "$PY" -m pytest -q -s -p no:cacheprovider "$scenarios" "$@"
rc=$?

for svc in "${started[@]}"; do
  bash "scripts/$svc.sh" stop >/dev/null || warn "stopping $svc failed"
done
exit "$rc"
