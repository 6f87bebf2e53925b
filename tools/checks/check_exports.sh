#!/usr/bin/env bash
# check_exports.sh LIBLOOM SRC_DIR [MAX [TOOL...]] - libloom exports exactly the functions
# its public headers declare: every LOOM_EXPORT function of
# core/include/loom (api.h and the tooling API in sys/) and every
# non-inline function the SDK headers declare. Prints the differences and
# exits 1 when the two sets differ, or when libloom exports more than
# MAX functions (default 110; the tooling API stays no wider than its users:
# what only the core and its tests call is declared in core-internal
# headers, docs/architecture.md). With TOOL binaries (the `loom` CLI and
# the other programs linked against libloom) it also exits 1 when a
# function of the tooling API (loom/sys/) is imported by none of them:
# such a function belongs in a core-internal header. loom/api.h, the
# embedding API, is exempt. Prints the count.
set -euo pipefail
lib=$1 src=$2
max_exports=${3:-110}
shift $(( $# < 3 ? $# : 3 ))
declared=$(mktemp) exported=$(mktemp)
trap 'rm -f "$declared" "$exported"' EXIT
{
  grep -rhoE '^LOOM_EXPORT [^(]*\bloom_[a-z0-9_]+\(' "$src/core/include/loom" |
    grep -oE 'loom_[a-z0-9_]+\($' | tr -d '('
  { grep -rhE '^[a-z][a-z0-9_ ]*[ *]loom_[a-z0-9_]+\(' "$src/sdk/include/loom" || true; } |
    { grep -vE '^(static|typedef|return)' || true; } | { grep -oE 'loom_[a-z0-9_]+\(' || true; } |
    tr -d '('
} | sort -u >"$declared"
nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "W" { print $3 }' | sort -u >"$exported"
if ! diff -u --label declared --label exported "$declared" "$exported"; then
  echo "check_exports: libloom's exported functions differ from its public headers" >&2
  exit 1
fi
n=$(wc -l <"$exported")
n_api=$({ grep -hoE '^LOOM_EXPORT [^(]*\bloom_[a-z0-9_]+\(' "$src/core/include/loom/api.h" || true; } |
  sort -u | wc -l)
if [ "$n" -gt "$max_exports" ]; then
  echo "check_exports: libloom exports $n functions, expected at most $max_exports" >&2
  exit 1
fi
if [ $# -gt 0 ]; then
  api=$(mktemp) used=$(mktemp)
  trap 'rm -f "$declared" "$exported" "$api" "$used"' EXIT
  { grep -hoE '^LOOM_EXPORT [^(]*\bloom_[a-z0-9_]+\(' "$src/core/include/loom/api.h" || true; } |
    grep -oE 'loom_[a-z0-9_]+' | sort -u >"$api"
  nm -D --undefined-only "$@" | awk '{ sub(/@.*/, "", $NF); print $NF }' | sort -u >"$used"
  unused=$(comm -23 "$exported" "$api" | comm -23 - "$used")
  if [ -n "$unused" ]; then
    echo "check_exports: exported from loom/sys/ but called by none of the tools" \
         "($*): $(echo $unused | tr ' ' ',' | sed 's/,/, /g'); declare them in a" \
         "core-internal header" >&2
    exit 1
  fi
fi
echo "check_exports: $n exported functions ($n_api in loom/api.h, $((n - n_api)) in loom/sys/)," \
     "all declared in public headers; at most $max_exports${1:+; every loom/sys/ one called by a tool}"
