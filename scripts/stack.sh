#!/usr/bin/env bash
# The whole stack in the background: Redis, MariaDB, Kafka, then the order consumer and
# the gateway.
#   stack.sh up|down|status|running [--services-only|--apps-only]
# status prints what runs and exits 0; running prints nothing and exits 0 only when all of
# it runs. --services-only leaves out the project's own processes (up, status, running);
# `down` always stops everything, since the processes are useless without their services.
# --apps-only (up, down) starts or stops only the consumer and the gateway, for services
# that run already.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

S=$ROOT/scripts
RUN=$VAR/run
LOGDIR=$VAR/log

usage() { echo "usage: $0 up|down|status|running [--services-only|--apps-only]" >&2; exit 2; }

action=${1:-}
services_only=false
apps_only=false
case ${2:-} in
  '') ;;
  --services-only) services_only=true ;;
  --apps-only) apps_only=true ;;
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

# The configuration a process runs with: the file's path and content and the SECKILL_*
# overrides. A start records it beside the pid file; an up with another one restarts.
conf_id() {
  { printf '%s\n' "$CONF"; cat "$CONF"; env | { grep '^SECKILL_' || true; } | sort; } | sha256sum | cut -d ' ' -f 1
}

# app_reconfigure NAME: stops build/NAME when it runs with another configuration than
# $CONF, so that app_spawn starts it again with this one (a second gateway could not bind
# the same port, and the first one would go on answering with the old settings).
app_reconfigure() {
  local name=$1 bin=$ROOT/build/$1 was
  pid_alive "$RUN/$name.pid" "$bin" || return 0
  was=$(cat "$RUN/$name.conf-id" 2>/dev/null || true)
  [ "$was" != "$(conf_id)" ] || return 0
  echo "$name: running with another configuration, restarting with $CONF"
  stop_pid "$name" "$RUN/$name.pid" 20 "$bin" >/dev/null
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
  conf_id >"$RUN/$name.conf-id"
  # From the repo top, so relative paths in the config mean the same as for the CLI.
  (cd "$ROOT" && spawn "$RUN/$name.pid" "$log" "$bin" -c "$CONF")
}

log_since() { tail -c +"$(( $2 + 1 ))" "$1"; }

# How to tell the consumer is up, in the words of app_wait: "DESCRIPTION|CHECK ARG".
# Its ready gauge, whatever log.level says (warn and error hide the INFO line "ready");
# without a metrics server, the line, which only debug and info show.
consumer_readiness() {
  local host port
  port=$(conf_get consumer.metrics-port)
  if [ "$port" != 0 ]; then
    host=$(conf_get consumer.metrics-host)
    case $host in '' | 0.0.0.0) host=127.0.0.1 ;; '::' | '[::]') host='[::1]' ;; esac
    echo "seckill_consumer_ready 1 on http://$host:$port/metrics|consumer_gauge_ready http://$host:$port/metrics"
    return
  fi
  case $(conf_get log.level) in
    debug | info) echo "order-consumer to log 'order-consumer: ready'|consumer_log_ready -" ;;
    *) echo "nothing (consumer.metrics-port = 0 and log.level hides 'ready'): only that it runs|consumer_runs -" ;;
  esac
}

# The readiness checks take their ARG, then the log offset as their last argument.
consumer_gauge_ready() {
  local body
  body=$(curl -fsS -m 2 "$1") || return 1
  [[ $'\n'$body$'\n' == *$'\nseckill_consumer_ready 1\n'* ]]
}
consumer_log_ready() { log_since "$LOGDIR/order-consumer.log" "$2" | grep -q 'order-consumer: ready'; }
consumer_runs() { :; }
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
  local name failed=0 consumer_off="" gateway_off="" url readiness
  for name in order-consumer seckill-server; do
    if [ ! -x "$ROOT/build/$name" ]; then
      echo "$name: build/$name not built (run make), skipped"
    else
      app_reconfigure "$name"
    fi
  done
  url=$(gateway_url)
  readiness=$(consumer_readiness)
  # Both start at once; neither needs the other to come up.
  [ -x "$ROOT/build/order-consumer" ] && consumer_off=$(app_spawn order-consumer)
  [ -x "$ROOT/build/seckill-server" ] && gateway_off=$(app_spawn seckill-server)
  if [ -n "$consumer_off" ]; then
    # shellcheck disable=SC2086 # "CHECK ARG" splits on purpose
    app_wait order-consumer "$consumer_off" "${readiness%%|*}" consumer_alive_ready ${readiness#*|} || failed=1
  fi
  if [ -n "$gateway_off" ]; then
    app_wait seckill-server "$gateway_off" "$url to answer" gateway_alive_ready "$url" || failed=1
  fi
  return "$failed"
}

consumer_alive_ready() { pid_alive "$RUN/order-consumer.pid" && "$@"; }
gateway_alive_ready() { pid_alive "$RUN/seckill-server.pid" && gateway_ready "$1"; }

up() {
  $apps_only || services_up || exit 1
  $services_only || apps_up || exit 1
}

# Reverse order: the gateway drains in-flight requests and flushes Kafka, the consumer
# finishes its batch and commits, and only then do their services go away.
down() {
  local failed=0
  stop_pid seckill-server "$RUN/seckill-server.pid" 20 "$ROOT/build/seckill-server" || failed=1
  stop_pid order-consumer "$RUN/order-consumer.pid" 20 "$ROOT/build/order-consumer" || failed=1
  rm -f "$RUN/seckill-server.conf-id" "$RUN/order-consumer.conf-id"
  $apps_only && return "$failed"
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
