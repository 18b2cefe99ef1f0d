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
    --set seckill.max-requests-per-ip=100000000 --set seckill.enable-anti-brush=true
    --set seckill.anti-brush-threshold=1000)
off=(--set seckill.enable-rate-limit=false --set seckill.enable-anti-brush=false)

base=$(( $(date +%s) * 100000000000 ))
run() {  # run LABEL ARGS...
  local label=$1
  shift
  build/seckill-server -c "$CONF" "${common[@]}" "$@" >"var/log/protection-$label.log" 2>&1 &
  local pid=$!
  wait_until 20 "gateway on :$PORT" curl -fsS "http://127.0.0.1:$PORT/healthz"
  base=$((base + 10000000000))
  local rps
  rps=$(wrk -t2 -c"$CONNS" -d"${SECONDS_EACH}s" -s bench/execute.lua "http://127.0.0.1:$PORT" -- \
          "$activity" "$base" | awk '/Requests\/sec/ { print $2 }')
  kill -TERM "$pid"
  wait "$pid" || true
  echo "$label $rps"
}

mkdir -p var/log
results=()
for _ in $(seq "$ROUNDS"); do
  results+=("$(run on "${on[@]}")")
  results+=("$(run off "${off[@]}")")
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
