#!/usr/bin/env bash
# offload.sh - activation offload as a memory lever: on the VLM presets at a
# memory cap that binds, the iteration time `loom plan` predicts with the
# knapsack and ilp-memory tuners choosing among recomputation only
# (offload=false) and among recomputation and offload (offload=true), and
# the gain. The PipeWeaver manifest with a fixed number of search
# evaluations and no time limit on the search (mcts is deterministic in
# its seed and evaluation count), so both sides search alike and the
# figures repeat run to run.
#
# Usage: tools/bench/offload.sh [options]
#   --build DIR        build tree (default: build)
#   --models LIST      model presets, comma-separated (default: vlm-s,vlm-m,vlm-l)
#   --memory-cap B     per-rank cap in bytes (default: 30e9, which binds on all
#                      three presets on the default h800 cluster: vlm-s alone
#                      peaks at 41 GB uncapped)
#   --evaluations N    search evaluations per plan (default: 100)
set -euo pipefail

build=build
models=vlm-s,vlm-m,vlm-l
cap=30e9
evaluations=100
manifest=examples/manifests/pipeweaver.json

while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --memory-cap) cap=$2; shift 2 ;;
    --evaluations) evaluations=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "offload.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

loom="$build/bin/loom"
if [ ! -x "$loom" ]; then
  echo "offload.sh: $loom not found; build first (cmake --build $build)" >&2
  exit 2
fi

# makespan_ms of one plan, or "infeasible"
plan_ms() {
  local out
  out=$("$loom" plan --manifest "$manifest" --model "$1" --iterations 1 \
        --evaluations "$evaluations" --param ranker.budget_ms=86400000 --memory-cap "$cap" \
        --use "memory_tuner=$2" --param "memory_tuner.offload=$3" --json 2>/dev/null) || return 1
  python3 -c 'import json,sys; d=json.load(sys.stdin)
print("%.3f" % d["makespan_ms"] if d.get("feasible", True) else "infeasible")' <<<"$out"
}

printf '%-7s %-11s %16s %18s %8s\n' model tuner "recompute (ms)" "+ offload (ms)" gain
IFS=, read -ra list <<<"$models"
status=0
for m in "${list[@]}"; do
  for t in knapsack ilp-memory; do
    a=$(plan_ms "$m" "$t" false)
    b=$(plan_ms "$m" "$t" true)
    gain=$(python3 -c "a,b='$a','$b'
print('%.1f%%' % ((float(a)-float(b))/float(a)*100) if 'inf' not in a+b else '-')")
    printf '%-7s %-11s %16s %18s %8s\n' "$m" "$t" "$a" "$b" "$gain"
    if python3 -c "import sys; sys.exit(0 if float('$b') > float('$a') else 1)" 2>/dev/null; then
      echo "offload.sh: $m $t: offload is slower than recomputation alone" >&2
      status=1
    fi
  done
done
exit $status
