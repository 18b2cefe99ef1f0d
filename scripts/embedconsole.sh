#!/usr/bin/env bash
# The operator console's files (src/admin/console/) as one C file: each file's bytes
# (scripts/embed.sh), then adminconsole_assets, the table seckill-admin serves /console/
# from, so that an installed binary needs no file beside it.
#   scripts/embedconsole.sh FILE...   prints the C file
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 FILE..." >&2; exit 2; }
here=$(dirname "${BASH_SOURCE[0]}")
names=()
for f in "$@"; do
  n=console_$(basename "$f" | tr -c 'A-Za-z0-9\n' '_')
  names+=("$n")
  bash "$here/embed.sh" "$n" "$f" admin/adminconsole.h
done
echo "const struct adminconsole_asset adminconsole_assets[] = {"
i=0
for f in "$@"; do
  echo "    { \"$(basename "$f")\", ${names[$i]}_text, sizeof(${names[$i]}_text) - 1 },"
  i=$((i + 1))
done
echo "};"
echo "const size_t adminconsole_count = sizeof(adminconsole_assets) / sizeof(adminconsole_assets[0]);"
