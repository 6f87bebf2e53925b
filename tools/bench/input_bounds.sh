#!/usr/bin/env bash
# input_bounds.sh - planning time and peak memory at the largest stage-times
# input docs/formats.md allows (P x V x M = 2^20 forward stages): 4096
# ranks of 256 microbatches, under every interleaver that plans it, plus
# the V placement for zb-v (2048 ranks, V = 2, 256 microbatches; P x V is
# at most 4096). No --out: the figure
# is the plan, not the writing of multi-GB files. Prints a table of wall
# seconds and maximum resident memory (GNU time's %e and %M), the median
# of --repeat runs each.
#
# Usage: tools/bench/input_bounds.sh [--build DIR] [--repeat N]
set -euo pipefail

build=build
repeat=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--repeat N]" >&2; exit 2 ;;
  esac
done
loom=$build/bin/loom
[ -x "$loom" ] || { echo "input_bounds: $loom not found (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "input_bounds: needs GNU time (/usr/bin/time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/whole.json" <<'EOF'
{"kind": "stage-times", "ranks": 4096, "microbatches": 256, "virtual_stages": 1,
 "forward_ms": 1, "backward_ms": 2, "p2p_ms": 0, "activation_bytes": 1}
EOF
cat >"$tmp/split.json" <<'EOF'
{"kind": "stage-times", "ranks": 4096, "microbatches": 256, "virtual_stages": 1,
 "forward_ms": 1, "input_grad_ms": 1, "weight_grad_ms": 1, "p2p_ms": 0, "activation_bytes": 1}
EOF
cat >"$tmp/vshape.json" <<'EOF'
{"kind": "stage-times", "ranks": 2048, "microbatches": 256, "virtual_stages": 2,
 "placement": "v", "forward_ms": 0.5, "input_grad_ms": 0.5, "weight_grad_ms": 0.5,
 "p2p_ms": 0, "activation_bytes": 1}
EOF

printf '%-13s %-8s %10s %12s\n' interleaver input wall_s max_rss_MiB
for case in 1f1b:whole gpipe:whole dual-queue:whole 1f1b:split zero-bubble:split zb-v:vshape; do
  il=${case%%:*} input=${case#*:}
  walls=() rss=()
  for _ in $(seq "$repeat"); do
    /usr/bin/time -f '%e %M' -o "$tmp/time" \
      "$loom" plan --quiet --stage-times "$tmp/$input.json" --use "interleaver=$il" >/dev/null
    read -r w m <"$tmp/time"
    walls+=("$w") rss+=("$m")
  done
  w=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')
  m=$(printf '%s\n' "${rss[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')
  printf '%-13s %-8s %10.2f %12.0f\n' "$il" "$input" "$w" "$((m / 1024))"
done
