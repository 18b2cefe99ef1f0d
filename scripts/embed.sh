#!/usr/bin/env bash
# Turns a file into C source, for data a binary must carry instead of finding on disk.
#   scripts/embed.sh NAME FILE HEADER   prints a C file defining NAME_text (FILE's bytes,
#                                       then a NUL) and NAME_len (without the NUL),
#                                       including HEADER, which declares them
# od and awk only, so it needs nothing beyond a base system (no xxd).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 NAME FILE HEADER" >&2; exit 2; }
name=$1 file=$2 header=$3
[ -r "$file" ] || { echo "$0: cannot read $file" >&2; exit 1; }
echo "/* Generated from $file by scripts/embed.sh: do not edit. */"
echo "#include \"$header\""
echo "const unsigned char ${name}_text[] = {"
od -An -v -tx1 "$file" | awk '{ line = ""; for (i = 1; i <= NF; i++) line = line "0x" $i ","; print line }'
echo "0x00 };"
echo "const size_t ${name}_len = sizeof(${name}_text) - 1;"
