#!/usr/bin/env bash
# make bench: the flash-sale benchmark, from a stack that is down (or up) to a report.
#
#   bash bench/run.sh          (make bench builds the release binaries and bench/baseline first)
#
# 1. writes the run's configuration: conf/seckill.conf, then bench/conf/bench.conf, then a
#    Kafka topic and consumer group of this run alone (later lines win);
# 2. starts Redis, MariaDB and Kafka with it (scripts/stack.sh up --services-only); the
#    project's own gateway and consumer of `make up`, if they run, are stopped for the
#    duration (they would hold the gateway's port and share the CPU) and started again after;
# 3. bench/bench.py runs every scenario and writes the figures as JSON;
# 4. the cluster topology (BENCH_CLUSTER=0 leaves it out): conf/cluster.conf, then
#    bench/conf/bench.conf, then bench/conf/cluster-namespace.conf (its own ports and
#    var/bench-cluster); its services are started, bench/cluster.py runs the contended sale
#    on its gateways, and the services are stopped and their data removed;
# 5. bench/report.py writes bench/results/<UTC time>.{md,json} and latest.{md,json,png};
# 6. stops what it started and deletes the run's Kafka topic, leaving the stack as it was.
#
# SECKILL_<KEY> variables override the configuration as everywhere (bench/README.md: a run
# next to another stack on other ports). BENCH_* variables: see bench/bench.py.
set -uo pipefail
ROOT=$(CDPATH="" cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

export BUILD=${BUILD:-build}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RUNDIR=$ROOT/var/bench/$STAMP
mkdir -p "$RUNDIR" bench/results
export CONF=$RUNDIR/bench.conf
{
  cat conf/seckill.conf
  printf '\n# ==== bench/conf/bench.conf ====\n'
  cat bench/conf/bench.conf
  printf '\n# ==== this run (bench/run.sh) ====\n'
  printf 'kafka.topic = seckill.bench.%s\n' "$STAMP"
  printf 'consumer.group-id = seckill-bench-%s\n' "$STAMP"
} >"$CONF"

# shellcheck source-path=SCRIPTDIR source=../scripts/lib.sh
. "$ROOT/scripts/lib.sh"
S=$ROOT/scripts
PROG=bench
SECKILLCTL=$ROOT/$BUILD/seckillctl
[ -x "$SECKILLCTL" ] || die "$BUILD/seckillctl is not built (make bench builds it)"
[ -x "$ROOT/$BUILD/bench/baseline" ] || die "$BUILD/bench/baseline is not built (make bench builds it)"
for tool in wrk gnuplot python3 mariadb; do
  command -v "$tool" >/dev/null || die "$tool not found (run scripts/install-deps.sh)"
done
log() { printf 'bench: %s\n' "$*"; }

# ---- what runs now, so that the end leaves it so --------------------------------------------
started_services=()
for svc in redis mariadb kafka; do
  "$S/$svc.sh" status >/dev/null 2>&1 || started_services+=("$svc")
done
stopped_apps=()      # "name conf" of the stack's own processes stopped for the run
app_conf() {         # the -c argument a running process was started with
  tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | awk 'prev == "-c" { print; exit } { prev = $0 }'
}

# The run's Kafka topic goes away with the run (its events are in MariaDB by then).
# shellcheck disable=SC2317 # called from the EXIT trap
delete_topic() {
  local brokers
  brokers=$(conf_get kafka.brokers) || return 1
  timeout 60 java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m \
    -Dlog4j2.configurationFile="$VAR/kafka/tools-log4j2.properties" -cp "$VAR/kafka/libs/*" \
    org.apache.kafka.tools.TopicCommand --bootstrap-server "${brokers%%,*}" \
    --command-config "$VAR/kafka/admin.properties" --delete --topic "$1" >"$RUNDIR/delete-topic.log" 2>&1 \
    || { cat "$RUNDIR/delete-topic.log" >&2; return 1; }
}

# shellcheck disable=SC2317 # runs from the EXIT trap
cleanup() {
  local rc=$? f pid svc entry conf
  trap - EXIT INT TERM
  # Processes of bench.py left behind by a crash of it.
  for f in "$RUNDIR"/run/*.pid; do
    [ -e "$f" ] || continue
    pid=$(pid_read "$f")
    if pid_running "$pid"; then
      log "stopping leftover $(basename "$f" .pid) (pid $pid)"
      kill -TERM "$pid" 2>/dev/null
      WAIT_PID="" wait_until 30 "pid $pid to exit" pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$f"
  done
  if [ -n "${CLUSTER_CONF:-}" ] && [ -n "${CLUSTER_VAR:-}" ] && [ -d "$CLUSTER_VAR" ]; then
    CONF=$CLUSTER_CONF bash "$S/stack.sh" down || rc=1
    rm -rf "$CLUSTER_VAR"
  fi
  if "$S/kafka.sh" status >/dev/null 2>&1; then
    delete_topic "seckill.bench.$STAMP" || warn "could not delete topic seckill.bench.$STAMP"
  fi
  for svc in "${started_services[@]}"; do
    "$S/$svc.sh" stop || rc=1
  done
  for entry in "${stopped_apps[@]}"; do
    conf=${entry#* }
    log "starting the stack's processes again (CONF=$conf)"
    CONF=$conf bash "$S/stack.sh" up || rc=1
    break  # stack.sh up starts both
  done
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for name in seckill-server order-consumer; do
  pid=$(pid_read "$VAR/run/$name.pid")
  if pid_running "$pid" "$ROOT/build/$name"; then
    conf=$(app_conf "$pid")
    case $conf in /*) ;; *) conf=$ROOT/$conf ;; esac
    log "the stack's $name (pid $pid) is running: stopped for the benchmark, started again after"
    stop_pid "$name" "$VAR/run/$name.pid" 30 "$ROOT/build/$name" || die "cannot stop $name"
    stopped_apps+=("$name $conf")
  fi
done

host=$(conf_get http.host)
port=$(conf_get http.port)
case $host in '' | 0.0.0.0) host=127.0.0.1 ;; esac
port_open "$host" "$port" && die "$host:$port (http.port) is taken by another process"

log "run $STAMP, configuration $CONF"
if [ "${BENCH_ONLY:-}" = cluster ]; then
  started_services=()  # the single stack's services are not needed
else
  [ ${#started_services[@]} -eq 0 ] || log "starting ${started_services[*]}"
  bash "$S/stack.sh" up --services-only || die "starting the services failed"
fi

t0=$(date +%s)
bench_rc=0
# BENCH_ONLY=cluster: the cluster part alone (its JSON, no report): for a number of its own.
if [ "${BENCH_ONLY:-}" != cluster ]; then
  python3 bench/bench.py --conf "$CONF" --out "$RUNDIR/result.json" --logs "$RUNDIR" \
    --baseline "$ROOT/$BUILD/bench/baseline"
  bench_rc=$?
  [ -s "$RUNDIR/result.json" ] || die "bench.py wrote no results (logs in $RUNDIR)"
fi

cluster_args=()
if [ "${BENCH_CLUSTER:-1}" != 0 ]; then
  CLUSTER_CONF=$RUNDIR/bench-cluster.conf
  {
    cat conf/cluster.conf
    printf '\n# ==== bench/conf/bench.conf ====\n'
    cat bench/conf/bench.conf
    printf '\n# ==== bench/conf/cluster-namespace.conf ====\n'
    cat bench/conf/cluster-namespace.conf
    printf '\n# ==== this run (bench/run.sh) ====\n'
    printf 'kafka.topic = seckill.bench.%s\n' "$STAMP"
    printf 'consumer.group-id = seckill-bench-%s\n' "$STAMP"
  } >"$CLUSTER_CONF"
  CLUSTER_VAR=$(CONF=$CLUSTER_CONF conf_get stack.data-dir)
  case $CLUSTER_VAR in /*) ;; *) CLUSTER_VAR=$ROOT/$CLUSTER_VAR ;; esac
  log "cluster topology: configuration $CLUSTER_CONF"
  if CONF=$CLUSTER_CONF bash "$S/stack.sh" up --services-only; then
    python3 bench/cluster.py --conf "$CLUSTER_CONF" --out "$RUNDIR/cluster.json" --logs "$RUNDIR/cluster" \
      || bench_rc=1
  else
    warn "starting the cluster's services failed"
    bench_rc=1
  fi
  CONF=$CLUSTER_CONF bash "$S/stack.sh" down || bench_rc=1
  # A namespace of the benchmark alone: nothing in it outlives the run.
  rm -rf "$CLUSTER_VAR"
  [ -s "$RUNDIR/cluster.json" ] && cluster_args=(--cluster "$RUNDIR/cluster.json")
fi

if [ "${BENCH_ONLY:-}" = cluster ]; then
  log "done in $(( $(date +%s) - t0 ))s: ${RUNDIR#"$ROOT"/}/cluster.json (BENCH_ONLY=cluster: no report)"
  exit "$bench_rc"
fi
python3 bench/report.py "$RUNDIR/result.json" "${cluster_args[@]}" --stamp "$STAMP" --results bench/results \
  --command "make bench" || die "report failed"
log "done in $(( $(date +%s) - t0 ))s: bench/results/$STAMP.md (latest.md, latest.json, latest.png); logs in ${RUNDIR#"$ROOT"/}"
exit "$bench_rc"
