#!/usr/bin/env bash
# bench/quick-consumer.sh [CONF-LINE ...]: a few minutes' look at the order consumer, for
# comparing two builds or settings on the same machine (make bench is the report of record).
#
# Starts the services (its own Kafka topic and consumer group), a release gateway with
# conf/seckill.conf + bench/conf/bench.conf + the given `key = value` lines, queues ORDERS
# orders (default 300000) with wrk while no consumer runs, then starts a release
# order-consumer and prints the orders per second from its ready line to the last row in
# MariaDB, the CPU µs per order of the consumer, MariaDB, Redis and the Kafka broker over
# the drain (utime + stime from /proc), how busy the machine was, and the consumer's mean
# time per batch step (from its DEBUG batch lines).
#   bash bench/quick-consumer.sh "consumer.batch-size = 2000"
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/quicklib.sh"
cd "$ROOT" || exit 1
out_dir=$VAR/quick-consumer
want=${ORDERS:-300000}
quick_setup "$out_dir" "seckill.quick.$(date +%s)" "$@"
build/seckill-server -c "$conf" > "$out_dir/gateway.log" 2>&1 &
gw=$!
cons=
cid= aid=
trap 'kill $gw $cons 2>/dev/null; wait $gw $cons 2>/dev/null; quick_forget "$cid" "$aid"; bash scripts/stack.sh down >/dev/null 2>&1' EXIT
wait_until 30 "the gateway" curl -sf "127.0.0.1:$port/healthz" || die "the gateway did not answer"
cid=$(ctl coupon create --name quick --type CASH --amount 1.00 --total 100000000 --start now --end +1d | tail -1)
aid=$(ctl activity create --coupon "$cid" --stock "$want" --start now --end +50m | tail -1)
wait_until 30 "the sale in the gateway's cache" sh -c "curl -s 127.0.0.1:$port/seckill/activities/$aid | grep -q ACTIVE" \
  || die "the gateway never saw activity $aid"
accepted() { curl -s "127.0.0.1:$port/metrics" | awk '/^seckill_orders_accepted_total / {print int($2)}'; }
base=1000000000
while [ "$(accepted)" -lt "$want" ]; do
  wrk -t2 -c256 -d10s -s bench/wrkexecute.lua "http://127.0.0.1:$port" -- "$aid" $base >/dev/null 2>&1
  base=$((base + 10000000000))
done
n=$(accepted)
kill $gw; wait $gw 2>/dev/null
echo "queued $n orders of activity $aid"
db=$(ctl config get mysql.database)
sql() { mariadb --no-defaults --socket="$VAR/mariadb/mysqld.sock" -uroot -N -e "$1" "$db"; }
rows() { sql "SELECT COUNT(*) FROM seckill_order WHERE activity_id = $aid"; }
redis=$(cat "$VAR/redis/redis.pid")
kafka=$(pgrep -f kafka.Kafka | head -1)
mysqld=$(cat "$VAR/mariadb/mariadbd.pid")
tck=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
machine() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat; }
r0=$(ticks "$redis"); k0=$(ticks "$kafka"); m0=$(ticks "$mysqld"); read -r busy0 all0 < <(machine)
t0=$(date +%s.%N)
build/order-consumer -c "$conf" --set log.level=debug > "$out_dir/consumer.log" 2>&1 &
cons=$!
wait_until 60 "the consumer's ready line" grep -q "ready (group" "$out_dir/consumer.log" || die "the consumer never got ready"
t_ready=$(date +%s.%N)
until [ "$(rows)" -ge "$n" ]; do
  kill -0 $cons 2>/dev/null || die "the consumer exited ($out_dir/consumer.log)"
  sleep 0.05
done
t1=$(date +%s.%N)
c1=$(ticks $cons); r1=$(ticks "$redis"); k1=$(ticks "$kafka"); m1=$(ticks "$mysqld"); read -r busy1 all1 < <(machine)
us() { echo "scale=1; ($2 - $1) * 1000000 / $tck / $n" | bc; }
echo "drained $n orders: $(echo "scale=0; $n / ($t1 - $t_ready)" | bc) orders/s after ready" \
     "(started $(echo "scale=2; $t_ready - $t0" | bc) s after launch)"
echo "CPU us per order: consumer $(us 0 "$c1") mariadb $(us "$m0" "$m1") redis $(us "$r0" "$r1") kafka $(us "$k0" "$k1")"
echo "machine busy: $(echo "scale=0; 100 * ($busy1 - $busy0) / ($all1 - $all0)" | bc) %"
grep -o 'fill [0-9]* ms, dead [0-9]* ms, claim [0-9]* ms, persist [0-9]* ms, publish [0-9]* ms, finalize [0-9]* ms, abandon [0-9]* ms, commit [0-9]* ms' \
  "$out_dir/consumer.log" | awk '{f+=$2; d+=$5; c+=$8; p+=$11; pu+=$14; fi+=$17; a+=$20; co+=$23; k++}
  END {if (k) printf "per batch (%d batches), mean ms: fill %.1f dead %.1f claim %.1f persist %.1f publish %.1f finalize %.1f abandon %.1f commit %.1f\n",
       k, f/k, d/k, c/k, p/k, pu/k, fi/k, a/k, co/k}'
