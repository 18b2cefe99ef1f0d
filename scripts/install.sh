#!/usr/bin/env bash
# make install / make uninstall (docs/operations.md, "Install"). Run by the Makefile, which passes
# the layout in the environment: DESTDIR, BINDIR, DATADIR, SYSCONFDIR, UNITDIR and
# INSTALL_BUILD (where it linked the binaries for that layout).
#
#   install     the four binaries, the Lua scripts (DATADIR/lua, where the binaries look),
#               the MySQL schema (DATADIR/schema), the config (SYSCONFDIR/seckill) and the
#               systemd units (UNITDIR); then DATADIR/installed-files, the list of them
#   uninstall   removes exactly the files of that list, then the project's own directories
#               if nothing else is left in them
#
# A config that already exists and differs from the shipped one is the operator's: it is
# kept, left off the list, and so survives uninstall too.
set -euo pipefail
ROOT=$(CDPATH="" cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PROG=install
die() { printf '%s: %s\n' "$PROG" "$*" >&2; exit 1; }

for v in BINDIR DATADIR SYSCONFDIR UNITDIR; do
  [ -n "${!v:-}" ] || die "$v is not set (run make install / make uninstall)"
  case ${!v} in /*) ;; *) die "$v=${!v}: expected an absolute path" ;; esac
done
DESTDIR=${DESTDIR:-}
MANIFEST=$DATADIR/installed-files
CONFDIR=$SYSCONFDIR/seckill
# Directories that hold nothing but ours; bin/ and the unit directory are shared.
OWN_DIRS=("$DATADIR/lua" "$DATADIR/schema" "$DATADIR" "$CONFDIR")

installed=()
put() {  # put MODE SOURCE TARGET (TARGET without DESTDIR)
  install -D -m "$1" "$2" "$DESTDIR$3"
  installed+=("$3")
}

# The units name the default prefix's paths; the installed ones name this layout's.
unit() {
  local src=$1 target=$UNITDIR/$(basename "$1") tmp
  tmp=$(mktemp)
  sed -e "s|/usr/local/bin/|$BINDIR/|g" -e "s|/usr/local/etc/seckill/|$CONFDIR/|g" "$src" > "$tmp"
  put 0644 "$tmp" "$target"
  rm -f "$tmp"
}

do_install() {
  : "${INSTALL_BUILD:?INSTALL_BUILD is not set (run make install)}"
  for b in seckill-server order-consumer seckillctl seckill-admin; do
    [ -x "$INSTALL_BUILD/$b" ] || die "$INSTALL_BUILD/$b is missing (run make install)"
    put 0755 "$INSTALL_BUILD/$b" "$BINDIR/$b"
  done
  for f in schema/lua/*.lua; do
    put 0644 "$f" "$DATADIR/lua/$(basename "$f")"
  done
  put 0644 schema/mysql.sql "$DATADIR/schema/mysql.sql"
  local conf=$CONFDIR/seckill.conf
  if [ -e "$DESTDIR$conf" ] && ! cmp -s conf/seckill.conf "$DESTDIR$conf"; then
    printf '%s: kept %s (it differs from conf/seckill.conf); the shipped one is %s\n' \
      "$PROG" "$DESTDIR$conf" "$DATADIR/seckill.conf.dist" >&2
  else
    # It holds the MySQL password: root's alone; the units read it as a credential.
    put 0600 conf/seckill.conf "$conf"
  fi
  put 0644 conf/seckill.conf "$DATADIR/seckill.conf.dist"
  for u in deploy/systemd/*.service; do
    unit "$u"
  done
  # A file of an earlier install that this one no longer ships stays on the list, so
  # that uninstall still removes it.
  if [ -f "$DESTDIR$MANIFEST" ]; then
    local old
    while IFS= read -r old; do
      [[ -e $DESTDIR$old && " ${installed[*]} " != *" $old "* ]] && installed+=("$old")
    done < "$DESTDIR$MANIFEST"
  fi
  printf '%s\n' "${installed[@]}" > "$DESTDIR$MANIFEST"
  printf '%s: %d files under %s (list: %s)\n' "$PROG" "${#installed[@]}" "${DESTDIR:-/}" "$MANIFEST"
}

do_uninstall() {
  PROG=uninstall
  [ -f "$DESTDIR$MANIFEST" ] || die "$DESTDIR$MANIFEST not found: nothing installed there"
  local n=0 f
  while IFS= read -r f; do
    case $f in
      "$BINDIR"/* | "$DATADIR"/* | "$CONFDIR"/* | "$UNITDIR"/*) ;;
      *) die "$MANIFEST names $f, outside this layout: not removing anything" ;;
    esac
  done < "$DESTDIR$MANIFEST"
  while IFS= read -r f; do
    rm -f "$DESTDIR$f"
    n=$((n + 1))
  done < "$DESTDIR$MANIFEST"
  rm -f "$DESTDIR$MANIFEST"
  for d in "${OWN_DIRS[@]}"; do
    [ -d "$DESTDIR$d" ] && rmdir --ignore-fail-on-non-empty "$DESTDIR$d"
  done
  printf '%s: removed %d files under %s\n' "$PROG" "$n" "${DESTDIR:-/}"
}

case ${1:-} in
  install) do_install ;;
  uninstall) do_uninstall ;;
  *) die "usage: $0 install|uninstall" ;;
esac
