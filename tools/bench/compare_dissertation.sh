#!/usr/bin/env bash
# compare_dissertation.sh - the Oobleck, Cornstarch and Entrain planners
# against megatron-tuned (the fastest memory-feasible Megatron-LM plan) and
# the naive megatron-1f1b on one generated workload: mean predicted
# iteration time, bubble ratio and planning time of each, and the speedup
# over megatron-tuned (a plan over the memory cap: INFEASIBLE, no time). Runs twice: with the model as given (everything trains)
# and with its encoders frozen (the usual multimodal fine-tuning setting
# where Cornstarch's frozen-aware costs matter).
#
# usage: tools/bench/compare_dissertation.sh [BUILD_DIR] [MODEL] [FAMILY] [ITERATIONS] [SEED]
#        defaults: build vlm-s interleaved 8 1
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
model=${2:-vlm-s}
family=${3:-interleaved}
iters=${4:-8}
seed=${5:-1}
loom="$build/bin/loom"
[ -x "$loom" ] || loom="$here/$build/bin/loom"
if [ ! -x "$loom" ]; then
    echo "compare_dissertation: no loom binary in $build/bin (build first)" >&2
    exit 2
fi
manifests="$here/examples/manifests"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The model file: a preset name becomes examples/models/<name>.json.
model_file="$model"
[ -f "$model_file" ] || model_file="$here/examples/models/$model.json"
if [ ! -f "$model_file" ]; then
    echo "compare_dissertation: no model file for '$model'" >&2
    exit 2
fi
# The same model with every encoder module frozen.
frozen="$tmp/frozen-encoders.json"
awk '/"kind": *"encoder"/ { enc = 1 }
     /"kind": *"(backbone|decoder)"/ { enc = 0 }
     enc && /"frozen": *false/ { sub(/"frozen": *false/, "\"frozen\": true") }
     { print }' "$model_file" > "$frozen"

# Entrain without the deferral step (stratified assignment only).
grep -v '"pairwise-deferral"' "$here/examples/manifests/entrain.json" \
    | sed 's/"name": "entrain"/"name": "entrain-no-deferral"/' > "$tmp/entrain-no-deferral.json"

# Value of a top-level number in `loom plan --json` output.
field() {
    grep -o "\"$1\": *[-0-9.e+]*" "$2" | head -1 | sed 's/.*: *//'
}

# Plans with one planner; prints a table row. Args: label manifest [loom args...]
row() {
    local label=$1 manifest=$2 model_arg=$3
    shift 3
    local out="$tmp/out.json" path="$manifests/$manifest.json"
    [ -f "$path" ] || path="$tmp/$manifest.json"
    if ! "$loom" plan --manifest "$path" --model "$model_arg" \
            --generate "$family" --iterations "$iters" --seed "$seed" --quiet --json \
            "$@" > "$out" 2> "$tmp/err"; then
        printf '%-26s %s\n' "$label" "failed: $(head -c 200 "$tmp/err")"
        return
    fi
    local ms bubble plan
    if grep -q '"feasible": false' "$out"; then
        printf '%-26s %12s\n' "$label" INFEASIBLE
        return
    fi
    ms=$(field mean_iteration_ms "$out")
    bubble=$(field bubble_ratio "$out")
    plan=$(field plan_time_ms "$out")
    [ -n "$base" ] || base=$ms
    awk -v l="$label" -v ms="$ms" -v b="$bubble" -v p="$plan" -v base="$base" \
        'BEGIN { printf "%-26s %12.1f %10.2fx %8.1f%% %10.1f\n", l, ms, base / ms, 100 * b, p }'
}

# One table for a model file.
table() {
    local title=$1 m=$2
    base=
    echo "== $title"
    printf '%-26s %12s %11s %9s %10s\n' planner mean_iter_ms vs_tuned bubble plan_ms
    row "megatron-tuned" megatron-tuned "$m"
    row "megatron-1f1b (naive)" megatron-1f1b "$m"
    row "megatron-balanced" megatron-balanced "$m"
    row "oobleck (f=1)" oobleck "$m"
    row "cornstarch" cornstarch "$m"
    row "cornstarch, unaware" cornstarch "$m" --param partitioner.mode=unaware
    row "entrain" entrain "$m"
    row "entrain, no deferral" entrain-no-deferral "$m"
    echo
}

echo "model $model, workload: $family, $iters iterations, seed $seed"
echo "(mean predicted iteration time over the iterations; oobleck: the slowest"
echo " of its f+1 or more pipelines sharing the batch on the same GPUs)"
echo
table "$model, every module trains" "$model_file"
table "$model, encoders frozen" "$frozen"
