#!/usr/bin/env bash
# The whole stack in the background: Redis, MariaDB, Kafka, then the order consumer and
# the gateway (and seckill-admin, the admin API, when admin.port is set).
#   stack.sh up|down|status|running [--services-only|--apps-only]
# It starts stack.gateways gateways and stack.consumers consumers of $STACK_BIN_DIR
# (default build/), and Kafka with one node per address of kafka.brokers.
# status prints what runs and exits 0; running prints nothing and exits 0 only when all of
# it runs. --services-only leaves out the project's own processes (up, status, running);
# `down` always stops everything, since the processes are useless without their services.
# --apps-only (up, down) starts or stops only the consumer and the gateway, for services
# that run already.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

S=$ROOT/scripts
# redis.nodes set: a Redis Cluster (redis-cluster.sh); empty: the one Redis (redis.sh).
if [ -n "$(conf_get redis.nodes)" ]; then REDIS=redis-cluster; else REDIS=redis; fi
# The binaries the consumer and gateway instances run (the tests pass their ASan builds).
BINDIR=${STACK_BIN_DIR:-$ROOT/build}
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

# Kafka takes longest (Maven fetch on a fresh clone, then the JVM), so it starts in the
# background while MariaDB comes up; its report is printed after theirs to keep the output
# in one piece per service. Redis first, on its own: its ports lie in the kernel's
# ephemeral range, and the brokers' first connections to each other, made while a Redis
# Cluster's nodes were still starting one by one, took one of them as a local port once.
services_up() {
  local failed=0 kafka_out kafka_job
  "$S/install-deps.sh"
  "$S/$REDIS.sh" start || failed=1
  kafka_out=$(mktemp)
  "$S/kafka.sh" start create-topics >"$kafka_out" 2>&1 &
  kafka_job=$!
  { "$S/mariadb.sh" start && "$S/mariadb.sh" schema; } || failed=1
  wait "$kafka_job" || failed=1
  cat "$kafka_out"
  rm -f "$kafka_out"
  return "$failed"
}

# The configuration a process runs with: its binary, the file's path and content, the
# SECKILL_* overrides and the instance's own arguments. A start records it beside the pid file; an
# up with another one restarts.
conf_id() {
  { printf '%s\n' "$CONF" "$@"; cat "$CONF"; env | { grep '^SECKILL_' || true; } | sort; } | sha256sum | cut -d ' ' -f 1
}

# Instances: stack.gateways gateways and stack.consumers consumers. One of a kind keeps
# the binary's name (seckill-server, order-consumer); several are NAME-1, NAME-2, ...
# instances BINARY COUNT: prints "instance-name index" lines.
instances() {
  local i
  if [ "$2" = 1 ]; then
    echo "$1 1"
    return
  fi
  for ((i = 1; i <= $2; i++)); do echo "$1-$i $i"; done
}
GATEWAYS=$(conf_get stack.gateways)
CONSUMERS=$(conf_get stack.consumers)

# What sets one instance apart from the others: each consumer its own metrics port
# (consumer.metrics-port, +1 per instance); the gateways share http.port (http.reuse-port).
# On the hosts topology (scripts/hosts.sh) each instance also has an address of its own,
# which it binds (http.host, consumer.metrics-host) inside its namespace.
consumer_args() {
  local base addr
  base=$(conf_get consumer.metrics-port)
  if [ "$CONSUMERS" -gt 1 ] && [ "$base" != 0 ]; then
    echo "--set consumer.metrics-port=$((base + $1 - 1))"
  fi
  addr=$(instance_addr consumer "$1")
  [ -z "$addr" ] || echo "--set consumer.metrics-host=$addr"
}
gateway_args() {
  local addr
  addr=$(instance_addr gateway "$1")
  [ -z "$addr" ] || echo "--set http.host=$addr"
}
# instance_host ROLE INDEX KEY: where instance INDEX listens: its own address, else KEY's.
instance_host() {
  local addr
  addr=$(instance_addr "$1" "$2")
  if [ -n "$addr" ]; then echo "$addr"; else local_host "$(conf_get "$3")"; fi
}
# The address of instance NAME (seckill-server-2, order-consumer, ...), or nothing.
addr_of_instance() {
  local name=$1 role i=1
  case $name in
    seckill-server*) role=gateway ;;
    order-consumer*) role=consumer ;;
    seckill-admin) role=admin ;;
    *) return 0 ;;
  esac
  [[ $name == *-[0-9]* ]] && i=${name##*-}
  instance_addr "$role" "$i"
}
consumer_metrics_port() {
  local base
  base=$(conf_get consumer.metrics-port)
  if [ "$base" = 0 ]; then echo 0; else echo $((base + $1 - 1)); fi
}

# app_reconfigure NAME BINARY ARGS...: stops instance NAME when it runs with another
# configuration than $CONF and ARGS, so that app_spawn starts it again with this one (a
# second gateway could not bind the same port, and the first one would go on answering
# with the old settings).
app_reconfigure() {
  local name=$1 binary=$2 bin=$BINDIR/$2 was
  shift 2
  pid_alive "$RUN/$name.pid" "/$binary" || return 0
  was=$(cat "$RUN/$name.conf-id" 2>/dev/null || true)
  [ "$was" != "$(conf_id "$bin" "$@")" ] || return 0
  echo "$name: running with another configuration, restarting with $CONF"
  stop_pid "$name" "$RUN/$name.pid" 20 "/$binary" >/dev/null
}

# app_spawn NAME BINARY ARGS...: starts $BINDIR/BINARY -c $CONF ARGS as instance NAME
# unless it runs already. Prints the byte offset its log had before, so that readiness
# only looks at lines this start wrote.
app_spawn() {
  local name=$1 binary=$2 bin=$BINDIR/$2 log=$LOGDIR/$1.log
  shift 2
  if pid_alive "$RUN/$name.pid" "/$binary"; then
    echo "already"
    return 0
  fi
  mkdir -p "$RUN" "$LOGDIR"
  touch "$log"
  stat -c %s "$log"
  conf_id "$bin" "$@" >"$RUN/$name.conf-id"
  at_prefix "$(addr_of_instance "$name")"
  # From the repo top, so relative paths in the config mean the same as for the CLI.
  (cd "$ROOT" && spawn "$RUN/$name.pid" "$log" "${AT[@]}" "$bin" -c "$CONF" "$@")
}

log_since() { tail -c +"$(( $2 + 1 ))" "$1"; }

local_host() {
  # A wildcard bind is reached through loopback.
  case $1 in '' | 0.0.0.0) echo 127.0.0.1 ;; '::' | '[::]') echo '[::1]' ;; *) echo "$1" ;; esac
}

# How to tell consumer instance NAME (index I) is up, in the words of app_wait:
# "DESCRIPTION|CHECK ARG". Its ready gauge, whatever log.level says (warn and error hide
# the INFO line "ready"); without a metrics server, the line, which only debug and info
# show.
consumer_readiness() {
  local name=$1 port host
  port=$(consumer_metrics_port "$2")
  if [ "$port" != 0 ]; then
    host=$(instance_host consumer "$2" consumer.metrics-host)
    echo "seckill_consumer_ready 1 on http://$host:$port/metrics|consumer_gauge_ready http://$host:$port/metrics"
    return
  fi
  case $(conf_get log.level) in
    debug | info) echo "$name to log 'order-consumer: ready'|consumer_log_ready $LOGDIR/$name.log" ;;
    *) echo "nothing (consumer.metrics-port = 0 and log.level hides 'ready'): only that it runs|consumer_runs -" ;;
  esac
}

# The readiness checks take their ARG, then the log offset as their last argument.
consumer_gauge_ready() {
  local body
  body=$(curl -fsS -m 2 "$1") || return 1
  [[ $'\n'$body$'\n' == *$'\nseckill_consumer_ready 1\n'* ]]
}
# The line as log.format = text or json writes it.
consumer_log_ready() { log_since "$1" "$2" | grep -qE 'order-consumer: ready|"component":"order-consumer","message":"ready'; }
consumer_runs() { :; }
# A gateway is up once the shared port answers and this process holds a listening socket
# on it: with several gateways on one port (SO_REUSEPORT) the answer may come from another.
# A gateway on an address of its own (hosts topology) is the only one answering there.
gateway_ready() {
  local url=$1 pid=$2 port=$3 own=${4:-}
  curl -fsS -m 2 -o /dev/null "$url" || return 1
  [ "$GATEWAYS" = 1 ] && return 0
  [ -z "$own" ] || return 0
  ss -Hltnp "sport = :$port" 2>/dev/null | grep -q "pid=$pid,"
}

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

# Instances left over from an up with more of them than now are stopped.
apps_prune() {
  local pidfile name keep
  keep=" $(instances order-consumer "$CONSUMERS" | cut -d ' ' -f 1 | tr '\n' ' ') $(instances seckill-server "$GATEWAYS" | cut -d ' ' -f 1 | tr '\n' ' ') "
  for pidfile in "$RUN"/order-consumer*.pid "$RUN"/seckill-server*.pid; do
    [ -e "$pidfile" ] || continue
    name=$(basename "$pidfile" .pid)
    case $keep in *" $name "*) continue ;; esac
    stop_pid "$name" "$pidfile" 20 "/${name%-[0-9]*}"
    rm -f "$RUN/$name.conf-id"
  done
}

# The admin API (seckill-admin) runs when admin.port is set (not 0 or empty).
admin_port() {
  local port
  port=$(conf_get admin.port)
  echo "${port:-0}"
}

# admin_up: starts seckill-admin when admin.port is set, and stops one that runs while it
# is not; sets failed=1 when it does not come up.
admin_up() {
  local port host url offset
  port=$(admin_port)
  if [ "$port" = 0 ]; then
    [ -e "$RUN/seckill-admin.pid" ] && apps_down seckill-admin
    return 0
  fi
  if [ ! -x "$BINDIR/seckill-admin" ]; then
    echo "seckill-admin: build/seckill-admin not built (run make), skipped"
    return 0
  fi
  host=$(admin_host)
  url="http://$host:$port/healthz"
  app_reconfigure seckill-admin seckill-admin
  offset=$(app_spawn seckill-admin seckill-admin)
  app_wait seckill-admin "$offset" "$url to answer" app_alive seckill-admin admin_ready "$url"
}
admin_ready() { curl -fsS -m 2 -o /dev/null "$1"; }
# Where seckill-admin is reached from here: where it is advertised, else where it binds.
admin_host() {
  local advertised
  advertised=$(conf_get admin.advertised-host)
  if [ -n "$advertised" ]; then echo "$advertised"; else local_host "$(conf_get admin.host)"; fi
}

apps_up() {
  local name i failed=0 url port readiness
  local -A offsets=()
  port=$(conf_get http.port)
  apps_prune
  # Every instance starts at once; none needs another to come up.
  if [ ! -x "$BINDIR/order-consumer" ]; then
    echo "order-consumer: build/order-consumer not built (run make), skipped"
  else
    while read -r name i; do
      # shellcheck disable=SC2046 # the instance's arguments split on purpose
      app_reconfigure "$name" order-consumer $(consumer_args "$i")
      # shellcheck disable=SC2046
      offsets[$name]=$(app_spawn "$name" order-consumer $(consumer_args "$i"))
    done < <(instances order-consumer "$CONSUMERS")
  fi
  if [ ! -x "$BINDIR/seckill-server" ]; then
    echo "seckill-server: build/seckill-server not built (run make), skipped"
  else
    while read -r name i; do
      # shellcheck disable=SC2046
      app_reconfigure "$name" seckill-server $(gateway_args "$i")
      # shellcheck disable=SC2046
      offsets[$name]=$(app_spawn "$name" seckill-server $(gateway_args "$i"))
    done < <(instances seckill-server "$GATEWAYS")
  fi
  if [ -x "$BINDIR/order-consumer" ]; then
    while read -r name i; do
      readiness=$(consumer_readiness "$name" "$i")
      # shellcheck disable=SC2086 # "CHECK ARG" splits on purpose
      app_wait "$name" "${offsets[$name]}" "${readiness%%|*}" app_alive "$name" ${readiness#*|} || failed=1
    done < <(instances order-consumer "$CONSUMERS")
  fi
  if [ -x "$BINDIR/seckill-server" ]; then
    while read -r name i; do
      url="http://$(instance_host gateway "$i" http.host):$port/healthz"
      app_wait "$name" "${offsets[$name]}" "$url to answer" app_alive "$name" gateway_ready_of "$name" "$url" "$port" \
        "$(instance_addr gateway "$i")" || failed=1
    done < <(instances seckill-server "$GATEWAYS")
  fi
  admin_up || failed=1
  return "$failed"
}

# app_alive NAME CHECK ARGS...: instance NAME runs, and CHECK ARGS succeeds.
app_alive() {
  local name=$1
  shift
  pid_alive "$RUN/$name.pid" && "$@"
}
gateway_ready_of() {
  local name=$1 url=$2 port=$3 own=$4
  gateway_ready "$url" "$(pid_read "$RUN/$name.pid")" "$port" "$own"
}

up() {
  $apps_only || services_up || exit 1
  $services_only || apps_up || exit 1
}

# apps_down BINARY: stops every instance of it, however many the last up started; the
# instances drain at the same time.
apps_down() {
  local pidfile name failed=0
  local -a jobs=()
  for pidfile in "$RUN/$1.pid" "$RUN/$1"-[0-9]*.pid; do
    [ -e "$pidfile" ] || continue
    name=$(basename "$pidfile" .pid)
    { stop_pid "$name" "$pidfile" 20 "/$1"; rm -f "$RUN/$name.conf-id"; } &
    jobs+=($!)
  done
  for pidfile in "${jobs[@]}"; do wait "$pidfile" || failed=1; done
  [ "${#jobs[@]}" -gt 0 ] || echo "$1: not running"
  return "$failed"
}

# Reverse order: the gateway drains in-flight requests and flushes Kafka, the consumer
# finishes its batch and commits, and only then do their services go away.
down() {
  local failed=0
  if [ -e "$RUN/seckill-admin.pid" ]; then apps_down seckill-admin || failed=1; fi
  apps_down seckill-server || failed=1
  apps_down order-consumer || failed=1
  $apps_only && return "$failed"
  "$S/kafka.sh" stop || failed=1
  "$S/mariadb.sh" stop || failed=1
  "$S/$REDIS.sh" stop || failed=1
  return "$failed"
}

# parts_status: one line per part; sets TOTAL and STOPPED.
parts_status() {
  local part
  TOTAL=0 STOPPED=0
  for part in "$REDIS" mariadb kafka; do
    TOTAL=$((TOTAL + 1))
    "$S/$part.sh" status || STOPPED=$((STOPPED + 1))
  done
  if ! $services_only; then
    local name i port host
    while read -r name i; do
      TOTAL=$((TOTAL + 1))
      host=$(instance_host consumer "$i" consumer.metrics-host)
      port=$(consumer_metrics_port "$i")
      status_line "$name" "$RUN/$name.pid" /order-consumer \
        "$([ "$port" = 0 ] && echo "no metrics" || echo "metrics http://$host:$port")" || STOPPED=$((STOPPED + 1))
    done < <(instances order-consumer "$CONSUMERS")
    while read -r name i; do
      TOTAL=$((TOTAL + 1))
      host=$(instance_host gateway "$i" http.host)
      status_line "$name" "$RUN/$name.pid" /seckill-server \
        "http://$host:$(conf_get http.port)" || STOPPED=$((STOPPED + 1))
    done < <(instances seckill-server "$GATEWAYS")
    port=$(admin_port)
    if [ "$port" != 0 ]; then
      TOTAL=$((TOTAL + 1))
      status_line seckill-admin "$RUN/seckill-admin.pid" /seckill-admin \
        "http://$(admin_host):$port/admin" || STOPPED=$((STOPPED + 1))
    fi
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
