#!/usr/bin/env bash
# bench/quick.sh [CONF-LINE ...]: a two-minute look at the contended sale, for comparing two
# builds or settings on the same machine (make bench is the report of record).
#
# Starts the services (its own Kafka topic and consumer group), a release gateway with
# conf/seckill.conf + bench/conf/bench.conf + the given `key = value` lines, a sale that
# never sells out, a 6 s unmeasured warm-up, then wrk at 64 and 256 connections (CONNS,
# SECS per run, default 8) and prints per run req/s, p99 and the CPU µs per request of the
# gateway, Redis and the Kafka broker (utime + stime from /proc), then the gateway's batch
# and delivery counters. PERF=1 also records the gateway and Redis with perf during the
# 256-connection run (var/quick/perf-{gateway,redis}.data, for bench/flamegraph.py).
#   bash bench/quick.sh "kafka.producer.linger.ms = 5"
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/quicklib.sh"
cd "$ROOT" || exit 1
out_dir=$VAR/quick
quick_setup "$out_dir" seckill.quick "$@"
build/seckill-server -c "$conf" > "$out_dir/gateway.log" 2>&1 &
gw=$!
cid= aid=
trap 'kill $gw 2>/dev/null; wait $gw 2>/dev/null; quick_forget "$cid" "$aid"; bash scripts/stack.sh down >/dev/null 2>&1' EXIT
wait_until 30 "the gateway" curl -sf "127.0.0.1:$port/healthz" || die "the gateway did not answer"
cid=$(ctl coupon create --name quick --type CASH --amount 1.00 --total 100000000 --start now --end +1d | tail -1)
aid=$(ctl activity create --coupon "$cid" --stock 50000000 --start now --end +50m | tail -1)
wait_until 30 "the sale in the gateway's cache" sh -c "curl -s 127.0.0.1:$port/seckill/activities/$aid | grep -q ACTIVE" \
  || die "the gateway never saw activity $aid"
redis=$(cat "$VAR/redis/redis.pid")
kafka=$(pgrep -f kafka.Kafka | head -1)
tck=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
us_per() { echo $(( ($2 - $1) * 1000000 / tck / $3 )); }
wrk -t2 -c128 -d"${WARM:-6}"s -s bench/wrkexecute.lua "http://127.0.0.1:$port" -- "$aid" 900000000000 >/dev/null 2>&1
base=1000000000
for c in ${CONNS:-64 256}; do
  g0=$(ticks $gw); r0=$(ticks "$redis"); k0=$(ticks "$kafka")
  if [ -n "${PERF:-}" ] && [ "$c" = 256 ]; then
    perf record -F 499 --call-graph dwarf,32768 -o "$out_dir/perf-gateway.data" -p $gw -- sleep 4 >/dev/null 2>&1 &
    perf record -F 499 --call-graph dwarf,32768 -o "$out_dir/perf-redis.data" -p "$redis" -- sleep 4 >/dev/null 2>&1 &
  fi
  run=$(wrk --latency -t2 -c"$c" -d"${SECS:-8}"s -s bench/wrkexecute.lua "http://127.0.0.1:$port" -- "$aid" $base 2>&1)
  g1=$(ticks $gw); r1=$(ticks "$redis"); k1=$(ticks "$kafka")
  base=$((base + 10000000000))
  n=$(printf '%s\n' "$run" | awk '/requests in/ {print $1}')
  [ "${n:-0}" -gt 0 ] || die "wrk ran no request at $c connections: $run"
  rps=$(printf '%s\n' "$run" | awk '/Requests\/sec/ {print $2}')
  p99=$(printf '%s\n' "$run" | awk '/ 99%/ {print $2}')
  echo "connections $c: $rps req/s, p99 $p99, CPU us per request: gateway $(us_per "$g0" "$g1" "$n")" \
       "redis $(us_per "$r0" "$r1" "$n") kafka $(us_per "$k0" "$k1" "$n")"
done
curl -s "127.0.0.1:$port/metrics" | grep -E '^seckill_(execute_batch_size|kafka_delivery_seconds)_(sum|count)|^seckill_orders_accepted_total '
