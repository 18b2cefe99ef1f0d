#!/usr/bin/env bash
# Installs the Debian packages the build, the services and the tests need. The tests'
# Python packages come from PyPI into var/venv instead (scripts/venv.sh); python3-requests
# is for bench/ (which runs the first python3 on PATH).
# Idempotent: packages already present are not touched and apt is not updated.
#   scripts/install-deps.sh [--browser]   --browser: also Chromium and its WebDriver, which
#                                         only the console's browser tests use (make test),
#                                         so that make run never downloads a browser
set -euo pipefail

packages=(
  build-essential pkg-config
  libevent-dev libhiredis-dev librdkafka-dev libcjson-dev libmariadb-dev libcmocka-dev libssl-dev
  redis-server mariadb-server mariadb-client
  python3 python3-venv python3-requests
  curl wrk valgrind gnuplot-nox clang libclang-rt-14-dev
  openjdk-17-jre-headless maven
  prometheus   # promtool: checks and unit-tests deploy/prometheus
  systemd      # systemd-analyze: verifies deploy/systemd (a minimal Debian, a container, has none)
  iproute2 nftables   # the hosts topology's namespaces and its network faults (scripts/hosts.sh)
)
if [ "${1:-}" = "--browser" ]; then
  packages+=(chromium chromium-driver)   # test/integration/test_console.py
elif [ $# -gt 0 ]; then
  echo "usage: $0 [--browser]" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"

# The Debian packages enable and start system-wide services; ours run on their own
# ports under var/, so the stock ones are stopped to keep the machine quiet.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now redis-server mariadb prometheus >/dev/null 2>&1 || true
fi
