#!/usr/bin/env bash
# partition_refine.sh - what balanced-dp's simulated refinement buys: plans
# the chain of issue 35 (tools/bench/chain: 8 ViT layers F 1 / B 2 ms,
# 16 LLM layers F 2 / B 4, 8 DiT layers F 1.5 / B 3 on 4 ranks, 8
# microbatches, free transfers) and VLM-L's layer costs (roofline, h800,
# one iteration of its default workload) under 1F1B, interleaved 1F1B at
# v = 2 and zero-bubble, with uniform, the min-max split alone
# (refine_evaluations=0) and the refined split (default budget), and prints
# one Markdown table: makespans in ms and the refined plan's time.
#
# Usage: tools/bench/partition_refine.sh [--build DIR] [--budget N]
#   --build DIR   build tree holding bin/loom (default: build)
#   --budget N    partitioner.refine_evaluations of the refined column (default 64)
set -euo pipefail

build=build
budget=64
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift 2 ;;
        --budget) budget=$2; shift 2 ;;
        *) echo "usage: $0 [--build DIR] [--budget N]" >&2; exit 2 ;;
    esac
done
loom=$build/bin/loom
chain=tools/bench/chain
chain_args=(--model $chain/model.json --cluster $chain/cluster.json --workload $chain/workload.jsonl
            --use cost_model=table --param cost_model.file=$chain/layers.csv)
vlm_args=(--model vlm-l --iterations 1)

# makespan_ms and plan_time_ms of one plan: "MS PLAN_MS"
run() {
    "$loom" plan "$@" --json --quiet |
        python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.1f %.0f" % (r["makespan_ms"], r["plan_time_ms"]))'
}

echo "| model | schedule | uniform | balanced-dp, min-max | balanced-dp, refined ($budget) | refined plan ms |"
echo "|---|---|---:|---:|---:|---:|"
for model in chain vlm-l; do
    if [ $model = chain ]; then args=("${chain_args[@]}"); else args=("${vlm_args[@]}"); fi
    for sched in 1f1b "interleaved-1f1b v=2" zero-bubble; do
        inter=(--use interleaver=${sched%% *})
        [ "$sched" = "interleaved-1f1b v=2" ] && inter+=(--parallel vpp=2)
        u=$(run "${args[@]}" "${inter[@]}" --use partitioner=uniform)
        d=$(run "${args[@]}" "${inter[@]}" --use partitioner=balanced-dp \
                --param partitioner.refine_evaluations=0)
        r=$(run "${args[@]}" "${inter[@]}" --use partitioner=balanced-dp \
                --param partitioner.refine_evaluations=$budget)
        echo "| $model | $sched | ${u% *} | ${d% *} | ${r% *} | ${r#* } |"
    done
done
