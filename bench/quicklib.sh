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
