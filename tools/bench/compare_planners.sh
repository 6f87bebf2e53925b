#!/usr/bin/env bash
# compare_planners.sh - the Optimus and DistTrain planners against
# megatron-tuned (the fastest memory-feasible Megatron-LM plan) and the
# naive megatron-1f1b (and pipeweaver, when its manifest exists) on the
# same generated workloads, then the structure of Optimus's Table 7 and
# DistTrain's planning-time target.
#
#  1. For VLM-S and the DistTrain MLLM-9B preset: one seeded workload file
#     per model, planned by every manifest; a table of mean predicted
#     iteration time, speedup over megatron-tuned, bubble ratio and
#     planning time (a plan over the memory cap: INFEASIBLE, no time).
#  2. Optimus Table 7 in simulation: ViT-22B + GPT-175B (vlm-xl), PP 8,
#     TP 8, N_mb 32 / 24 / 16 (GBS 1536 on 1536 / 2048 / 3072 GPUs):
#     scheduling efficiency of the coarse (encoder-first) and the fine
#     (Algorithm 2) order and the bubble scheduler's run time, from the
#     optimus-bubble log of the chosen plan.
#  3. DistTrain Table 2: MLLM-72B on 1296 GPUs with global batch 1920,
#     median planning time of disttrain-alloc (bin/bench-disttrain-alloc).
#
# usage: tools/bench/compare_planners.sh [BUILD_DIR] [ITERATIONS] [SEED] [FAMILY]
#        defaults: build 4 1 interleaved
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
iters=${2:-4}
seed=${3:-1}
family=${4:-interleaved}
[ -d "$build" ] || build="$here/$build"
loom="$build/bin/loom"
if [ ! -x "$loom" ]; then
    echo "compare_planners: no loom binary in $build/bin (build first)" >&2
    exit 2
fi
manifests="$here/examples/manifests"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Value of a top-level number in `loom plan --json` output.
field() {
    grep -o "\"$1\": *[-0-9.e+]*" "$2" | head -1 | sed 's/.*: *//'
}

# Microbatches of a model file's parallel config (16 when absent).
model_mbs() {
    local mb
    mb=$(grep -o '"microbatches": *[0-9]*' "$1" | head -1 | sed 's/.*: *//')
    echo "${mb:-16}"
}

# One planner on one workload file; prints a table row.
# Args: manifest model_file workload
row() {
    local name=$1 model=$2 wl=$3 out="$tmp/out.json"
    if ! "$loom" plan --manifest "$manifests/$name.json" --model "$model" \
            --workload "$wl" --quiet --json > "$out" 2> "$tmp/err"; then
        printf '%-16s %s\n' "$name" "failed: $(head -c 300 "$tmp/err")"
        return
    fi
    local ms bubble plan label=$name
    [ "$name" = megatron-1f1b ] && label="1f1b (naive)"
    if grep -q '"feasible": false' "$out"; then
        printf '%-16s %12s\n' "$label" INFEASIBLE
        return
    fi
    ms=$(field mean_iteration_ms "$out")
    bubble=$(field bubble_ratio "$out")
    plan=$(field plan_time_ms "$out")
    [ -n "$base" ] || base=$ms
    awk -v l="$label" -v ms="$ms" -v b="$bubble" -v p="$plan" -v base="$base" \
        'BEGIN { printf "%-16s %12.1f %10.2fx %8.1f%% %10.1f\n", l, ms, base / ms, 100 * b, p }'
}

echo "## 1. Mean predicted iteration time on the same workloads"
echo "   ($family workload, $iters iterations, seed $seed; cluster h800; one"
echo "   backbone pipeline's GPUs and global batch for every planner)"
for model in vlm-s disttrain-mllm-9b; do
    model_file="$here/examples/models/$model.json"
    wl="$tmp/$model.jsonl"
    "$loom" workload generate --family "$family" --iterations "$iters" \
        --microbatches "$(model_mbs "$model_file")" --seed "$seed" --out "$wl"
    base=
    echo
    echo "== $model"
    printf '%-16s %12s %11s %9s %10s\n' planner mean_iter_ms vs_tuned bubble plan_ms
    for name in megatron-tuned megatron-1f1b optimus disttrain pipeweaver; do
        [ -f "$manifests/$name.json" ] || continue
        row "$name" "$model_file" "$wl"
    done
done

echo
echo "## 2. Optimus Table 7 structure: ViT-22B + GPT-175B, PP 8, TP 8, GBS 1536"
printf '%-6s %5s %10s %10s %12s %12s %12s\n' gpus n_mb eff_coarse eff_fine coarse_ms fine_ms sched_ms
for setting in "1536 24 32" "2048 32 24" "3072 48 16"; do
    set -- $setting
    gpus=$1 dp=$2 mbs=$3
    log="$tmp/t7-$mbs.log"
    if ! LOOM_LOG=info "$loom" plan --manifest "$manifests/optimus.json" --model vlm-xl \
            --parallel "tp=8,pp=8,dp=$dp,mb=$mbs" --generate "$family" --iterations 1 \
            --seed "$seed" --quiet > /dev/null 2> "$log"; then
        LOOM_LOG=info "$loom" plan --manifest "$manifests/optimus.json" --model vlm-xl \
            --parallel "tp=8,pp=8,dp=$dp,mb=$mbs" --generate "$family" --iterations 1 \
            --seed "$seed" > /dev/null 2> "$log" || true
    fi
    line=$(grep 'optimus-bubble: coarse' "$log" | tail -1 || true)
    if [ -z "$line" ]; then
        printf '%-6s %5s %s\n' "$gpus" "$mbs" "failed: $(grep -v '^loom: org' "$log" | head -c 300)"
        continue
    fi
    echo "$line" | sed -E 's/.*coarse ([0-9.]+) ms, fine ([0-9.]+) ms.*efficiency coarse ([0-9.]+)% fine ([0-9.]+)%.* in ([0-9.]+) ms.*/\1 \2 \3 \4 \5/' |
        awk -v g="$gpus" -v n="$mbs" '{ printf "%-6s %5s %9.1f%% %9.1f%% %12.1f %12.1f %12.1f\n", g, n, $3, $4, $1, $2, $5 }'
done

echo
echo "## 3. DistTrain planning time: MLLM-72B, 1296 GPUs, global batch 1920"
bench="$build/bin/bench-disttrain-alloc"
if [ -x "$bench" ]; then
    "$bench" 11
else
    echo "(no $bench: build the disttrain-alloc plugin folder)"
fi
