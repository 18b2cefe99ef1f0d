#!/usr/bin/env bash
# scripts/fresh-check.sh [run|test]: the README's first command on a fresh Debian 12 machine.
# The machine is a minimal Debian 12 root made by debootstrap (var/fresh/base, made once
# and then copied for each check) with only git and make added: none of the project's
# build packages, no Redis, MariaDB, Java, Maven, wrk or Prometheus, no Maven or pip cache.
# In a copy of it, chrooted, sharing this machine's network:
#   run   clones HEAD, runs `make run` once, sells one order through the curl line the demo
#         printed, checks the order's answer, runs `make down`;
#   test  clones HEAD and runs `make test` once.
# Exits non-zero when any step fails; the logs stay in var/fresh/. Needs root, debootstrap
# and the ports of the stack it starts free on this machine (the demo's for run, the
# tests' for test). Leaves this machine's packages alone.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mode=${1:-run}
case $mode in run|test) ;; *) die "usage: scripts/fresh-check.sh [run|test]" ;; esac
[ "$(id -u)" -eq 0 ] || die "fresh-check makes a chroot: run it as root"
command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"

mirror=${FRESH_MIRROR:-http://deb.debian.org/debian}
dir=$ROOT/var/fresh
base=$dir/base
box=$dir/box
log=$dir/$mode.log
mkdir -p "$dir"

if [ ! -f "$base/.complete" ]; then
  echo "fresh-check: making a minimal Debian 12 in $base (debootstrap, once)"
  rm -rf "$base.tmp"
  debootstrap --variant=minbase bookworm "$base.tmp" "$mirror" > "$dir/debootstrap.log" 2>&1 \
    || die "debootstrap failed (see $dir/debootstrap.log)"
  touch "$base.tmp/.complete"
  rm -rf "$base"
  mv "$base.tmp" "$base"
fi

in_box() { chroot "$box" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
             LANG=C.UTF-8 CI="${CI:-}" /bin/bash -c "$1"; }

# Every process whose root is the box, so that none outlives the check.
box_pids() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$box" ] && echo "${p#/proc/}"
  done
  return 0
}

cleanup() {
  local rc=$?
  if [ -d "$box/root/seckill" ]; then in_box "cd /root/seckill && make -s down" >> "$log" 2>&1 || true; fi
  local pids
  pids=$(box_pids)
  [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
  for m in dev/pts dev proc sys; do umount -l "$box/$m" 2>/dev/null || true; done
  if [ "$rc" -eq 0 ]; then
    echo "fresh-check: $mode passed on a fresh Debian 12"
  else
    echo "fresh-check: $mode FAILED (log: $log)" >&2
  fi
  exit "$rc"
}

rm -rf "$box"
cp -a "$base" "$box"
trap cleanup EXIT
: > "$log"
mount -t proc proc "$box/proc"
mount -t sysfs sys "$box/sys"
mount --bind /dev "$box/dev"
mount --bind /dev/pts "$box/dev/pts"
# What any machine on this network has and debootstrap does not make: the name of the
# host and localhost, the resolver, and the certificate authorities the network's TLS
# is signed by (where it intercepts it), so that Maven Central and PyPI can be reached.
cp /etc/resolv.conf /etc/hosts "$box/etc/"
[ ! -f /etc/pip.conf ] || cp /etc/pip.conf "$box/etc/"
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$box/usr/local/share/ca-certificates"
  cp -r /usr/local/share/ca-certificates/. "$box/usr/local/share/ca-certificates/"
fi
# Debian's packages start their services on install; a real machine has systemd for
# install-deps.sh to stop them again, a chroot does not, and they must not take ports.
printf '#!/bin/sh\nexit 101\n' > "$box/usr/sbin/policy-rc.d"
chmod +x "$box/usr/sbin/policy-rc.d"

echo "fresh-check: adding git and make to the fresh machine"
in_box "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends git make ca-certificates" >> "$log" 2>&1 \
  || die "installing git and make in the fresh machine failed (see $log)"
for p in pkg-config cc redis-server mariadbd java mvn wrk promtool; do
  ! in_box "command -v $p" >/dev/null 2>&1 || die "the fresh machine already has $p"
done

git clone -q "$ROOT" "$box/root/seckill"
echo "fresh-check: make $mode, first try (HEAD $(git -C "$ROOT" rev-parse --short HEAD))"
started=$(date +%s)
if [ "$mode" = test ]; then
  in_box "cd /root/seckill && make test" 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || die "make test failed on its first run"
  echo "fresh-check: make test took $(( $(date +%s) - started )) s"
  exit 0
fi

in_box "cd /root/seckill && make run" >> "$log" 2>&1 || { tail -n 30 "$log" >&2; die "make run failed on its first run"; }
echo "fresh-check: make run took $(( $(date +%s) - started )) s"
grab=$(grep -m 1 "curl -s -X POST '.*/seckill/execute" "$log" | sed "s/^ *//") \
  || die "make run printed no curl line for /seckill/execute"
echo "fresh-check: $grab"
answer=$(in_box "$grab")
echo "fresh-check: -> $answer"
printf '%s' "$answer" | grep -q '"success":true' || die "the demo's curl line did not sell an order"
in_box "cd /root/seckill && make -s down" >> "$log" 2>&1 || die "make down failed (see $log)"
