#!/bin/bash
# tune-slurm.sh - `loom tune` over a large layout space as a Slurm job array:
# task K of 8 searches the configurations whose enumeration index i has
# i % 8 == K - 1 (`--shard K/8`) and writes tune-shards/shard-K.json; a job
# that starts when the array is over merges them (`loom tune merge`) into
# tune.json, the bytes one unsharded `loom tune --json` prints, and writes
# the winner's plan with `loom plan --out` (its layout read from tune.json).
#
#   ./tune-slurm.sh submit   # from the folder the paths below are relative to
#
# submits the array and the merge job (sbatch --dependency=afterany, so the
# merge also runs, and names the missing shard, when a task failed). Every
# task must run the same search: the merge compares the model, cluster,
# GPUs, batch, manifests and planning options of every shard file.
# Change SHARDS and --array together.
#SBATCH --job-name=loom-tune
#SBATCH --array=1-8
#SBATCH --cpus-per-task=1
#SBATCH --mem=8G
#SBATCH --time=01:00:00
#SBATCH --output=loom-tune-%A_%a.log

set -u
SHARDS=8
LOOM=${LOOM:-loom}
MODEL=${MODEL:-vlm-xl}
CLUSTER=${CLUSTER:-h100}
GPUS=${GPUS:-1024}
BATCH=${BATCH:-1024}
MANIFEST=${MANIFEST:-examples/manifests/megatron-tuned.json}
OUT=${OUT:-tune-shards}
SEARCH=(--model "$MODEL" --cluster "$CLUSTER" --gpus "$GPUS" --global-batch "$BATCH"
        --manifest "$MANIFEST" --top 10 --quiet)

case "${1:-}" in
submit)
    mkdir -p "$OUT"
    rm -f "$OUT"/shard-*.json
    jid=$(sbatch --parsable "$0") || exit 1
    sbatch --dependency="afterany:$jid" --job-name=loom-tune-merge \
        --output=loom-tune-merge-%j.log --wrap "$(realpath "$0") merge"
    exit
    ;;
merge)
    "$LOOM" tune merge "$OUT"/shard-*.json --json tune.json || exit
    # the winner's layout as loom plan options, then its full plan
    read -r par k < <(python3 -c 'import json; l = json.load(open("tune.json"))["ranked"][0]["layout"]
print("tp=%d,cp=%d,pp=%d,dp=%d,vpp=%d,mb=%d" % (l["tp"], l["cp"], l["pp"], l["dp"], l["vpp"],
      l["microbatches"]), l["micro_batch_size"])')
    "$LOOM" plan --model "$MODEL" --cluster "$CLUSTER" --manifest "$MANIFEST" \
        --parallel "$par" --global-batch "$BATCH" --micro-batch-size "$k" --iterations 1 \
        --evaluations 200 --param 'partitioner[0].vpp_sweep=false' \
        --param 'partitioner[1].vpp_sweep=false' --out tune-winner
    exit
    ;;
esac

K=${SLURM_ARRAY_TASK_ID:?run as a job array task (./tune-slurm.sh submit)}
mkdir -p "$OUT"
"$LOOM" tune "${SEARCH[@]}" --shard "$K/$SHARDS" --json "$OUT/shard-$K.json"
