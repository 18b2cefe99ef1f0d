#!/usr/bin/env bash
# The whole stack in the background: Redis, MariaDB, Kafka, then the order consumer and
# the gateway.
#   stack.sh up|down|status|running [--services-only]
# status prints what runs and exits 0; running prints nothing and exits 0 only when all of
# it runs. --services-only leaves out the project's own processes (up, status, running);
# `down` always stops everything, since the processes are useless without their services.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

S=$ROOT/scripts
RUN=$VAR/run
LOGDIR=$VAR/log

usage() { echo "usage: $0 up|down|status|running [--services-only]" >&2; exit 2; }

action=${1:-}
services_only=false
case ${2:-} in
  '') ;;
  --services-only) services_only=true ;;
  *) usage ;;
esac

gateway_url() {
  local host port
  host=$(conf_get http.host)
  port=$(conf_get http.port)
  # A wildcard bind is reached through loopback.
  case $host in '' | 0.0.0.0) host=127.0.0.1 ;; '::' | '[::]') host='[::1]' ;; esac
  echo "http://$host:$port/healthz"
}

# Kafka takes longest (Maven fetch on a fresh clone, then the JVM), so it starts in the
# background first (kafka.sh start runs kafka-fetch.sh) while Redis and MariaDB come up;
# its report is printed after theirs to keep the output in one piece per service.
services_up() {
  local failed=0 kafka_out kafka_job
  "$S/install-deps.sh"
  kafka_out=$(mktemp)
  "$S/kafka.sh" start create-topics >"$kafka_out" 2>&1 &
  kafka_job=$!
  "$S/redis.sh" start || failed=1
  { "$S/mariadb.sh" start && "$S/mariadb.sh" schema; } || failed=1
  wait "$kafka_job" || failed=1
  cat "$kafka_out"
  rm -f "$kafka_out"
  return "$failed"
}

# app_spawn NAME: starts build/NAME unless it runs already. Prints the byte offset its
# log had before, so that readiness only looks at lines this start wrote.
app_spawn() {
  local name=$1 bin=$ROOT/build/$1 log=$LOGDIR/$1.log
  if pid_alive "$RUN/$name.pid" "$bin"; then
    echo "already"
    return 0
  fi
  mkdir -p "$RUN" "$LOGDIR"
  touch "$log"
  stat -c %s "$log"
  # From the repo top, so relative paths in the config mean the same as for the CLI.
  (cd "$ROOT" && spawn "$RUN/$name.pid" "$log" "$bin" -c "$CONF")
}

log_since() { tail -c +"$(( $2 + 1 ))" "$1"; }
consumer_ready() { log_since "$LOGDIR/order-consumer.log" "$1" | grep -q 'order-consumer: ready'; }
gateway_ready() { curl -fsS -m 2 -o /dev/null "$1"; }

# app_wait NAME OFFSET DESCRIPTION CHECK...: readiness of a just-started process.
app_wait() {
  local name=$1 offset=$2 desc=$3 pid
  shift 3
  pid=$(pid_read "$RUN/$name.pid")
  if [ "$offset" = already ]; then
    # Idempotent up: a process that runs and answers is left alone.
    if "$@" 0 >/dev/null 2>&1; then
      echo "$name: already running (pid $pid)"
      return 0
    fi
    offset=0
  fi
  if ! WAIT_PID=$pid wait_until 30 "$desc" "$@" "$offset"; then
    show_log "$LOGDIR/$name.log"
    warn "$name did not come up"
    return 1
  fi
  echo "$name: started (pid $pid)"
}

apps_up() {
  local name failed=0 consumer_off="" gateway_off="" url
  for name in order-consumer seckill-server; do
    if [ ! -x "$ROOT/build/$name" ]; then
      echo "$name: build/$name not built (run make), skipped"
    fi
  done
  url=$(gateway_url)
  # Both start at once; neither needs the other to come up.
  [ -x "$ROOT/build/order-consumer" ] && consumer_off=$(app_spawn order-consumer)
  [ -x "$ROOT/build/seckill-server" ] && gateway_off=$(app_spawn seckill-server)
  if [ -n "$consumer_off" ]; then
    app_wait order-consumer "$consumer_off" "order-consumer to log 'order-consumer: ready'" \
      consumer_alive_ready || failed=1
  fi
  if [ -n "$gateway_off" ]; then
    app_wait seckill-server "$gateway_off" "$url to answer" gateway_alive_ready "$url" || failed=1
  fi
  return "$failed"
}

# The readiness checks take the log offset as their last argument.
consumer_alive_ready() { pid_alive "$RUN/order-consumer.pid" && consumer_ready "$1"; }
gateway_alive_ready() { pid_alive "$RUN/seckill-server.pid" && gateway_ready "$1"; }

up() {
  services_up || exit 1
  $services_only || apps_up || exit 1
}

# Reverse order: the gateway drains in-flight requests and flushes Kafka, the consumer
# finishes its batch and commits, and only then do their services go away.
down() {
  local failed=0
  stop_pid seckill-server "$RUN/seckill-server.pid" 20 "$ROOT/build/seckill-server" || failed=1
  stop_pid order-consumer "$RUN/order-consumer.pid" 20 "$ROOT/build/order-consumer" || failed=1
  "$S/kafka.sh" stop || failed=1
  "$S/mariadb.sh" stop || failed=1
  "$S/redis.sh" stop || failed=1
  return "$failed"
}

# parts_status: one line per part; sets TOTAL and STOPPED.
parts_status() {
  local part
  TOTAL=0 STOPPED=0
  for part in redis mariadb kafka; do
    TOTAL=$((TOTAL + 1))
    "$S/$part.sh" status || STOPPED=$((STOPPED + 1))
  done
  if ! $services_only; then
    TOTAL=$((TOTAL + 2))
    status_line order-consumer "$RUN/order-consumer.pid" "$ROOT/build/order-consumer" || STOPPED=$((STOPPED + 1))
    status_line seckill-server "$RUN/seckill-server.pid" "$ROOT/build/seckill-server" || STOPPED=$((STOPPED + 1))
  fi
}

# A report for people (make status): a stopped stack is an answer, not an error, so it
# exits 0 whatever runs. Scripts ask `running` instead.
status() {
  parts_status
  if ((STOPPED == 0)); then
    echo "stack: up"
  elif ((STOPPED == TOTAL)); then
    echo "stack: down (make up starts it)"
  else
    echo "stack: partly down, $STOPPED of $TOTAL parts stopped (make up starts them)"
  fi
}

# Exit status 0 when every part runs, 1 otherwise; prints nothing.
running() {
  parts_status >/dev/null 2>&1
  ((STOPPED == 0))
}

case $action in
  up) take_lock stack; up ;;
  down) take_lock stack; down ;;
  status) status ;;
  running) running ;;
  *) usage ;;
esac
