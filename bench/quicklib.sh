# What bench/quick.sh and bench/quick-consumer.sh share: sourced after scripts/lib.sh.

# quick_setup DIR TOPIC [CONF-LINE ...]: DIR/quick.conf from conf/seckill.conf,
# bench/conf/bench.conf, the topic and a consumer group of the same name, and the given
# `key = value` lines; exports CONF and defines ctl; starts the services (log in
# DIR/stack.log) and sets port to the gateway's.
quick_setup() {
  local dir=$1 topic=$2
  shift 2
  mkdir -p "$dir"
  conf=$dir/quick.conf
  { cat conf/seckill.conf bench/conf/bench.conf
    echo "kafka.topic = $topic"
    echo "consumer.group-id = ${topic//./-}"
    for l in "$@"; do echo "$l"; done; } > "$conf"
  export CONF=$conf
  ctl() { build/seckillctl -c "$conf" "$@"; }
  bash scripts/stack.sh up --services-only > "$dir/stack.log" 2>&1 || die "the services did not start ($dir/stack.log)"
  port=$(ctl config get http.port)
}

# quick_forget COUPON ACTIVITY: what the run sold leaves Redis (run from the EXIT trap, the
# services still up): the coupon ends now and is archived, which removes its users' coupon
# records, and the sale's keys are unlinked. Its rows stay in MariaDB. Without it every
# quick run left its sale (tens of MB per million orders) in the bench's Redis, and the
# big-sale figures of the next `make bench` measured a larger Redis.
quick_forget() {
  local coupon=$1 aid=$2 rport db
  [ -n "$coupon" ] && [ -n "$aid" ] || return 0
  db=$(ctl config get mysql.database)
  mariadb --no-defaults --socket="$VAR/mariadb/mysqld.sock" -uroot -N -e \
    "UPDATE coupon SET end_time = NOW(3) - INTERVAL 1 SECOND WHERE id = $coupon AND end_time > NOW(3)" "$db" \
    && ctl coupon archive "$coupon" > /dev/null
  rport=$(ctl config get redis.port)
  redis-cli -p "$rport" --scan --pattern "*{$aid}*" | xargs -r -n 1000 redis-cli -p "$rport" unlink > /dev/null
  redis-cli -p "$rport" srem seckill:activities "$aid" > /dev/null
}
