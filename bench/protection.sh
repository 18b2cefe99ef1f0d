#!/usr/bin/env bash
# The hot-path cost of the protection layers, measured in one run: the contended sale
# with every check on (global token bucket, per-user and per-IP limits and the anti-brush
# counter inside the execute script, with limits too high to refuse anything) against the
# same sale with them off, alternating, ROUNDS times each.
#   bash bench/protection.sh          (needs the stack up: make up, or make bench's services)
# Prints one line per run and the medians. Uses the release gateway on a spare port.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$ROOT"

ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-8}
CONNS=${CONNS:-64}
PORT=${PORT:-18970}
CTL=(build/seckillctl -c "$CONF")

coupon=$("${CTL[@]}" coupon create --name "protection bench" --type GIFT --total 100000000 \
           --start now --end +1d | tail -n 1)
activity=$("${CTL[@]}" activity create --coupon "$coupon" --stock 50000000 --start now --end +1h \
             --name "protection bench" 2>/dev/null | tail -n 1)

common=(--set "http.port=$PORT" --set log.level=warn)
on=(--set seckill.enable-rate-limit=true --set seckill.rate-limit.permits-per-second=100000000
    --set seckill.rate-limit.burst-capacity=100000000 --set seckill.max-requests-per-user=1000
    --set seckill.rate-limit.per-ip-local-permits-per-second=100000000
    --set seckill.rate-limit.per-ip-local-burst=100000000
    --set seckill.max-requests-per-ip=100000000 --set seckill.enable-anti-brush=true
    --set seckill.anti-brush-threshold=1000)
off=(--set seckill.enable-rate-limit=false --set seckill.enable-anti-brush=false)

# Users stay below 2^53 (ids travel as JSON numbers): a time-based base, 10^10 apart per run.
base=$(( ($(date +%s) % 100000) * 10000000000 ))
run() {  # run LABEL RUN_NUMBER ARGS...  (runs in a subshell: its users come from RUN_NUMBER)
  local label=$1 users=$((base + $2 * 10000000000))
  shift 2
  build/seckill-server -c "$CONF" "${common[@]}" "$@" >"var/log/protection-$label.log" 2>&1 &
  local pid=$!
  wait_until 20 "gateway on :$PORT" curl -fsS "http://127.0.0.1:$PORT/healthz"
  local out rps requests accepted
  out=$(wrk -t2 -c"$CONNS" -d"${SECONDS_EACH}s" -s bench/wrkexecute.lua "http://127.0.0.1:$PORT" -- \
          "$activity" "$users")
  rps=$(awk '/Requests\/sec/ { print $2 }' <<<"$out")
  requests=$(awk '/requests in/ { print $1 }' <<<"$out")
  # Every request must have been an accepted order, or the comparison means nothing.
  accepted=$(curl -fsS "http://127.0.0.1:$PORT/metrics" | awk '/^seckill_orders_accepted_total/ { print $2 }')
  kill -TERM "$pid"
  wait "$pid" || true
  [ "$accepted" -ge "$requests" ] || die "$label: $requests requests but $accepted accepted orders"
  echo "$label $rps"
}

mkdir -p var/log
results=()
for round in $(seq "$ROUNDS"); do
  results+=("$(run on $((2 * round)) "${on[@]}")")
  results+=("$(run off $((2 * round + 1)) "${off[@]}")")
done
printf '%s\n' "${results[@]}"
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
runs = {}
for line in sys.stdin:
    label, rps = line.split()
    runs.setdefault(label, []).append(float(rps))
on, off = statistics.median(runs["on"]), statistics.median(runs["off"])
print(f"median req/s: protection on {on:,.0f}, off {off:,.0f}, cost {100 * (1 - on / off):.1f} %")
'
"${CTL[@]}" activity cancel "$activity" >/dev/null
