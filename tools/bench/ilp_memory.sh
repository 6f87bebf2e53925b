#!/usr/bin/env bash
# ilp_memory.sh - how long the "ilp-memory" memory tuner takes on VLM-M iterations
# (PipeWeaver section 6.3 reports < 10 ms per ILP solve).
#
# Two measurements:
#  1. `loom plan` of VLM-M with the PipeWeaver manifest and memory_tuner=ilp-memory
#     under a memory cap that binds, with LOOM_LOG=debug: the tuner logs one
#     line per evaluation of the search with the time of its ILP part
#     (rows, bounds, LPs, branch and bound); the script prints the median,
#     the 90th percentile and how many evaluations the search made.
#  2. loom_bench_ilp_memory (tools/bench/ilp_memory/): one VLM-M iteration's
#     stage graph and schedule handed to the tuner alone, the cap halfway
#     between the most frugal and the all-NONE peak; median wall time of a
#     whole tune() call (candidates, greedy warm starts, ILP) and of the
#     greedy tuner on the same instance.
#
# Usage: tools/bench/ilp_memory.sh [options]
#   --build DIR        build tree (default: build)
#   --model NAME       model preset (default: vlm-m)
#   --memory-cap B     per-rank cap for the loom plan run (default: 30e9, which
#                      binds on VLM-M: its peak is about 38 GiB uncapped)
#   --iterations N     iterations planned by loom plan (default: 2)
#   --runs N           tune() calls timed by the benchmark (default: 21)
#   --gap G            the tuner's relative gap (default: its own, 0.05)
set -euo pipefail

build=build
model=vlm-m
cap=30000000000
iterations=2
runs=21
gap=
manifest=examples/manifests/pipeweaver.json

while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --memory-cap) cap=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --gap) gap=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "ilp_memory.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

loom="$build/bin/loom"
bench="$build/bin/loom_bench_ilp_memory"
for f in "$loom" "$bench"; do
  if [ ! -x "$f" ]; then
    echo "ilp_memory.sh: $f not found; build first (cmake --build $build)" >&2
    exit 2
  fi
done

gap_param=()
gap_bench=()
if [ -n "$gap" ]; then
  gap_param=(--param "memory_tuner.gap=$gap")
  gap_bench=(--gap "$gap")
fi

echo "== loom plan --model $model --use memory_tuner=ilp-memory --memory-cap $cap"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
LOOM_LOG=debug "$loom" plan --manifest "$manifest" --model "$model" \
  --iterations "$iterations" --use memory_tuner=ilp-memory --memory-cap "$cap" \
  "${gap_param[@]}" >"$log" 2>&1 || { tail -5 "$log" >&2; exit 1; }
grep -E '^ *(iter|[0-9]+ )' "$log" | head -n $((iterations + 1)) || true
# "..., 4.467 ms; 0 ranks improved, ..." -> 4.467
grep -o 'MIPs, [0-9.]* ms' "$log" | awk '{print $2}' | sort -n >"$log.ms" || true
n=$(wc -l <"$log.ms")
if [ "$n" -gt 0 ]; then
  median=$(awk -v n="$n" 'NR == int((n + 1) / 2) {print}' "$log.ms")
  p90=$(awk -v n="$n" 'NR == int(n * 0.9 + 0.999) {print}' "$log.ms")
  echo "ILP part of the tuner over $n evaluations: median $median ms, p90 $p90 ms"
else
  echo "the tuner never had to solve (the cap did not bind): lower --memory-cap"
fi
rm -f "$log.ms"

echo
echo "== loom_bench_ilp_memory --model $model (tuner alone)"
"$bench" --model "$model" --runs "$runs" "${gap_bench[@]}"
