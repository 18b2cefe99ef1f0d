# shellcheck shell=bash
# Shared helpers for the service scripts. Sourced, never run.
#
# Everything a service writes lives under $VAR/<service>/; nothing goes to /etc and
# nothing is registered with systemd, so a clone can run next to another one as long
# as the ports in its config differ.

ROOT=$(CDPATH="" cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# What every stack of this checkout shares: the test Python (venv) and Kafka's jars.
TOOLS=$ROOT/var
CONF=${CONF:-$ROOT/conf/seckill.conf}
# The server processes are started with -c "$CONF" from another working directory.
case $CONF in /*) ;; *) CONF=$PWD/$CONF ;; esac
export CONF
SECKILLCTL=$ROOT/build/seckillctl
PROG=$(basename "$0" .sh)

warn() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { warn "$*"; exit 1; }

# Prints the value of a configuration key. The project's own loader is the only
# authority (defaults, validation, SECKILL_* overrides), so it is used whenever it
# has been built.
conf_get() {
  if [ -x "$SECKILLCTL" ]; then
    "$SECKILLCTL" -c "$CONF" config get "$1" || die "cannot read config key $1 from $CONF"
    return
  fi
  # FALLBACK, only while build/seckillctl does not exist yet (fresh clone before
  # `make`, or the scripts being worked on alone): a minimal reading of `key = value`
  # lines (comments and quotes as the loader has them, no escapes), an approximation of the loader's SECKILL_<KEY> override (dots and dashes
  # become underscores), and the defaults of the keys these scripts use.
  local env_name value
  env_name=SECKILL_$(printf '%s' "$1" | tr 'a-z.-' 'A-Z__')
  if [ -n "${!env_name+set}" ]; then
    printf '%s\n' "${!env_name}"
    return
  fi
  if [ -r "$CONF" ]; then
    value=$(awk -v key="$1" '
      /^[ \t]*#/ { next }
      index($0, "=") {
        k = substr($0, 1, index($0, "=") - 1); v = substr($0, index($0, "=") + 1)
        gsub(/^[ \t]+|[ \t\r]+$/, "", k); sub(/^[ \t]+/, "", v)
        if (v ~ /^"/) { v = substr(v, 2); sub(/".*/, "", v) }
        else { sub(/^#.*/, "", v); sub(/[ \t]#.*/, "", v); gsub(/[ \t\r]+$/, "", v) }
        if (k == key) { val = v; found = 1 }
      }
      END { if (found) print val; exit !found }' "$CONF") && { printf '%s\n' "$value"; return; }
  fi
  case $1 in
    redis.host | kafka.host | mysql.host | http.host) echo 127.0.0.1 ;;
    redis.port) echo 16379 ;;
    redis.appendfsync) echo everysec ;;
    redis.nodes) echo "" ;;
    redis.cluster-node-timeout-ms) echo 2000 ;;
    redis.cluster-replicas) echo 2 ;;
    kafka.brokers) echo 127.0.0.1:19092 ;;
    kafka.topic) echo seckill.orders ;;
    kafka.dead-letter-topic) echo seckill.orders.dlq ;;
    kafka.outcome-topic) echo seckill.outcomes ;;
    kafka.topic-partitions) echo 6 ;;
    mysql.port) echo 13306 ;;
    mysql.user | mysql.password | mysql.database) echo seckill ;;
    http.port) echo 8080 ;;
    stack.data-dir) echo var ;;
    *) die "config key $1 not in $CONF and no default known (build/seckillctl not built)" ;;
  esac
}

# The data of this configuration's stack (stack.data-dir): services' files, pid files,
# logs. Set once CONF is known, since conf_get is defined above.
stack_var() {
  local dir
  dir=$(conf_get stack.data-dir) || exit 1
  case $dir in /*) printf '%s\n' "$dir" ;; *) printf '%s\n' "$ROOT/$dir" ;; esac
}
# shellcheck disable=SC2034 # used by the scripts that source this file
VAR=$(stack_var)

now_us() { local t=${EPOCHREALTIME/[.,]/}; echo "$t"; }

# wait_until TIMEOUT_SECONDS DESCRIPTION CMD...
# Polls CMD (output discarded) until it succeeds. Returns 1 with a message on timeout.
# With WAIT_PID=<pid> in the environment it gives up as soon as that process is gone,
# so a service that dies on start-up is reported at once instead of after the timeout.
wait_until() {
  local timeout=$1 desc=$2 deadline
  shift 2
  deadline=$(( $(now_us) + timeout * 1000000 ))
  while :; do
    if "$@" >/dev/null 2>&1; then
      return 0
    fi
    if [ -n "${WAIT_PID:-}" ] && ! pid_running "$WAIT_PID"; then
      warn "process $WAIT_PID exited while waiting for $desc"
      return 1
    fi
    if (( $(now_us) >= deadline )); then
      warn "timed out after ${timeout}s waiting for $desc"
      return 1
    fi
    sleep 0.2
  done
}

# pid_running PID [CMDLINE_SUBSTRING]
# kill -0 alone is not enough: nothing guarantees that PID 1 reaps our orphans, and a
# zombie still answers kill -0. The optional substring guards against a stale pid file
# naming a recycled pid after a reboot.
pid_running() {
  local pid=$1 stat cmdline
  case $pid in '' | *[!0-9]*) return 1 ;; esac
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ] || return 1
  if [ -n "${2:-}" ]; then
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ $cmdline == *"$2"* ]] || return 1
  fi
}

pid_gone() { ! pid_running "$@"; }

pid_read() {
  local pid=""
  [ -r "$1" ] && read -r pid <"$1" 2>/dev/null
  printf '%s\n' "$pid"
}

# pid_alive PIDFILE [CMDLINE_SUBSTRING]
pid_alive() {
  pid_running "$(pid_read "$1")" "${2:-}"
}

# take_lock NAME [DIR]: serializes the starts and stops of one component between concurrent
# callers (parallel test runners all running `make up`). The lock lives in DIR, the
# stack's $VAR by default ($TOOLS for what all stacks share). It is always fd 9, which
# spawn closes: a daemon inheriting it would hold the lock for its whole life.
take_lock() {
  local dir=${2:-$VAR}
  mkdir -p "$dir"
  exec 9>"$dir/.$1.lock"
  flock -w 300 9 || die "waited 300s for $dir/.$1.lock (another start or stop of $1 hung?)"
}

# spawn PIDFILE LOGFILE CMD... : runs CMD detached from our session and terminal, with
# no inherited stdio (a caller reading our output through a pipe must not wait for the
# daemon to exit).
spawn() {
  local pidfile=$1 logfile=$2
  shift 2
  mkdir -p "$(dirname "$pidfile")" "$(dirname "$logfile")"
  # A background job of a non-interactive shell is not a process-group leader, so setsid
  # does not fork again and $! is the daemon's own pid.
  setsid "$@" </dev/null >>"$logfile" 2>&1 9>&- &
  echo $! >"$pidfile"
}

# stop_pid NAME PIDFILE TIMEOUT [CMDLINE_SUBSTRING]: SIGTERM, wait, SIGKILL as a last resort.
stop_pid() {
  local name=$1 pidfile=$2 timeout=$3 match=${4:-} pid
  pid=$(pid_read "$pidfile")
  if ! pid_running "$pid" "$match"; then
    rm -f "$pidfile"
    echo "$name: not running"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_until "$timeout" "$name (pid $pid) to exit" pid_gone "$pid"; then
    warn "$name: still running after ${timeout}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    wait_until 10 "$name (pid $pid) to die" pid_gone "$pid" || return 1
  fi
  rm -f "$pidfile"
  echo "$name: stopped"
}

# status_line NAME PIDFILE [CMDLINE_SUBSTRING [ADDRESS]]: one line, succeeds when running.
status_line() {
  local pid
  pid=$(pid_read "$2")
  if pid_running "$pid" "${3:-}"; then
    printf '%-18s running (pid %s%s)\n' "$1:" "$pid" "${4:+, $4}"
  else
    printf '%-18s stopped%s\n' "$1:" "${4:+ ($4)}"
    return 1
  fi
}

# show_log FILE...: the end of a service's logs, after a failed start.
show_log() {
  local f
  for f in "$@"; do
    [ -s "$f" ] || continue
    printf -- '--- last 40 lines of %s ---\n' "$f" >&2
    tail -n 40 "$f" >&2
  done
}

# ---- hosts: one network namespace per address (scripts/hosts.sh) -------------------------
# The hosts topology gives every process an address of its own, each in a Linux network
# namespace; hosts.sh writes which namespace holds which address into $VAR/netns.map
# ("ADDRESS NAMESPACE [ROLE INDEX]" lines). Without that file (every other stack) the
# processes start here, as before.
NETNS_MAP=$VAR/netns.map

# netns_of ADDRESS: the namespace holding ADDRESS, or nothing.
netns_of() {
  [ -r "$NETNS_MAP" ] || return 0
  awk -v a="$1" '$1 == a { print $2; exit }' "$NETNS_MAP"
}

# at_addr ADDRESS CMD...: runs CMD on the "machine" of ADDRESS: inside its namespace when
# the map names one (ip netns exec execs CMD itself, so a pid taken with $! is CMD's), here
# otherwise.
at_addr() {
  local ns
  ns=$(netns_of "$1")
  shift
  if [ -n "$ns" ]; then
    ip netns exec "$ns" "$@"
  else
    "$@"
  fi
}

# at_prefix ADDRESS: sets AT to the words that put a command on ADDRESS's machine (empty
# here), for commands that go through another wrapper first (spawn's setsid).
at_prefix() {
  local ns
  AT=()
  ns=$(netns_of "$1")
  [ -z "$ns" ] || AT=(ip netns exec "$ns")
}

# instance_addr ROLE INDEX: the address of instance INDEX of ROLE (gateway, consumer) in
# the map, or nothing.
instance_addr() {
  [ -r "$NETNS_MAP" ] || return 0
  awk -v r="$1" -v i="$2" '$3 == r && $4 == i { print $1; exit }' "$NETNS_MAP"
}

# port_open HOST PORT: something accepts TCP connections there.
port_open() {
  # shellcheck disable=SC2016 # expanded by the inner bash
  timeout 1 bash -c ': <"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}
