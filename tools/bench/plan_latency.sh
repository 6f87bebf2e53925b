#!/usr/bin/env bash
# plan_latency.sh - how close a short search gets to a long one: plans one
# VLM-L iteration (PP 8) with the PipeWeaver manifest under a short and a
# long ranker budget, per workload seed, and prints both makespans, the
# evaluations each search made (at its last improvement / in all) and the
# gap (short / long - 1). The target is a plan within 1 s that is within
# 1 % of a 30 s search, on 2 cores.
#
# Usage: tools/bench/plan_latency.sh [options]
#   --build DIR        build tree holding bin/loom (default: build)
#   --short-ms N       short ranker budget (default: 920, so the whole plan,
#                      graph building included, stays under 1 s)
#   --long-ms N        long budget (default: 30000)
#   --threads N        ranker worker threads (default: 2)
#   --model NAME       model preset (default: vlm-l)
#   --parallel SPEC    `loom plan --parallel` (default: the preset's layout),
#                      e.g. tp=8,pp=16,dp=128,mb=256 for VLM-XL on 16,384 GPUs
#   --seeds "S ..."    workload and search seeds (default: "1 2 3")
#   --manifest FILE    planner manifest (default: examples/manifests/pipeweaver.json)
#   --param R.K=V      extra `loom plan --param` for both searches (repeatable),
#                      e.g. cost_model.sequence_parallel=false
set -euo pipefail

build=build
short_ms=920
long_ms=30000
threads=2
model=vlm-l
seeds="1 2 3"
manifest=examples/manifests/pipeweaver.json
extra=()
layout=()

while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --short-ms) short_ms=$2; shift 2 ;;
    --long-ms) long_ms=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --parallel) layout=(--parallel "$2"); shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --manifest) manifest=$2; shift 2 ;;
    --param) extra+=(--param "$2"); shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "plan_latency.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done

loom="$build/bin/loom"
if [ ! -x "$loom" ]; then
  echo "plan_latency.sh: $loom not found; build first (make build)" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Prints "makespan_ms plan_time_ms evaluations" of one planned iteration,
# evaluations as "at the last improvement/in all".
plan_once() {
  local seed=$1 budget=$2 csv="$tmp/progress-$1-$2.csv"
  local json
  if ! json=$(LOOM_LOG=info "$loom" plan --manifest "$manifest" --model "$model" "${layout[@]}" --iterations 1 \
        --seed "$seed" --param "ranker.budget_ms=$budget" \
        --param "ranker.threads=$threads" "${extra[@]}" --json --quiet --progress-csv "$csv" 2>"$tmp/err"); then
    echo "plan_latency.sh: loom plan failed (seed $seed, budget $budget ms):" >&2
    sed 's/^/  /' "$tmp/err" >&2
    exit 1
  fi
  local ms plan evals
  ms=$(printf '%s\n' "$json" | sed -n 's/^{"makespan_ms": \([0-9.]*\).*/\1/p' | head -1)
  plan=$(printf '%s\n' "$json" | sed -n 's/.*"plan_time_ms": \([0-9.]*\).*/\1/p' | head -1)
  evals=$(tail -n 1 "$csv" | cut -d, -f4)
  total=$(sed -n 's/.* \([0-9]*\) evaluations in .*/\1/p' "$tmp/err" | head -1)
  echo "$ms $plan $evals/${total:-?}"
}

printf "%-6s %14s %10s %12s   %14s %10s %12s   %7s\n" seed "short_ms" "plan_ms" evals \
  "long_ms" "plan_ms" evals gap
gaps=()
slowest=0
for s in $seeds; do
  read -r a ap ae < <(plan_once "$s" "$short_ms")
  read -r b bp be < <(plan_once "$s" "$long_ms")
  gap=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", (a / b - 1) * 100 }')
  gaps+=("$gap")
  slowest=$(awk -v a="$ap" -v b="$slowest" 'BEGIN { print (a > b) ? a : b }')
  printf "%-6s %14.3f %10.1f %12s   %14.3f %10.1f %12s   %6s%%\n" "$s" "$a" "$ap" "$ae" \
    "$b" "$bp" "$be" "$gap"
done
printf '%s\n' "${gaps[@]}" | sort -g | awk -v slowest="$slowest" '{ v[NR] = $1; if ($1 < 1) within++ } END {
  m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "median gap over %d seeds: %.2f%%, %d of %d within 1%% (budgets '"$short_ms"' ms vs '"$long_ms"' ms, '"$threads"' threads; evals = evaluations at the last improvement / in all)\n", NR, m, within, NR
  printf "slowest short plan: %.1f ms (graph building, screening and search)\n", slowest }'
