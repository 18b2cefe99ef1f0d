#!/usr/bin/env bash
# make run: the whole stack in the background, a demo coupon and sale, and commands to try.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

bash scripts/stack.sh up

ctl() { "$SECKILLCTL" -c "$CONF" "$@"; }
coupon=$(ctl coupon create --name "10 off 100" --type CASH --amount 10.00 --min-order 100.00 \
           --total 1000 --start now --end +7d | tail -n 1)
activity=$(ctl activity create --coupon "$coupon" --stock 100 --start now --end +1h \
             --name "demo flash sale" | tail -n 1)

host=$(conf_get http.host)
port=$(conf_get http.port)
case $host in '' | 0.0.0.0) host=127.0.0.1 ;; esac
base="http://$host:$port"
mysql_host=$(conf_get mysql.host)
# The hosts topology's namespaces go with its processes: its down is hosts.sh's.
if [ -e "$NETNS_MAP" ]; then stop="make down TOPOLOGY=hosts"; else stop="make down CONF=${CONF#"$ROOT"/}"; fi
mysql_port=$(conf_get mysql.port)

cat <<TXT

Seckill is running: gateway $base, coupon $coupon, activity $activity (100 in stock, 1 hour).

Grab a coupon as user 1001:
  curl -s -X POST '$base/seckill/execute?userId=1001&activityId=$activity'
Poll the order (SUCCESS once it is in MariaDB):
  curl -s '$base/seckill/result?userId=1001&activityId=$activity'
  curl -s '$base/seckill/orders/<orderNo from the first answer>'
Stock and activity:
  curl -s '$base/seckill/stock/$activity'
  curl -s '$base/seckill/activities/$activity'
  curl -s '$base/healthz'
The row in MariaDB:
  mariadb -h$mysql_host -P$mysql_port -useckill -pseckill seckill -e 'SELECT * FROM seckill_order WHERE activity_id = $activity'
Check every invariant of the sale:
  build/seckillctl -c ${CONF#"$ROOT"/} verify $activity

Stop everything with: $stop
TXT
