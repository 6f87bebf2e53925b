#!/bin/bash
# loom-ab-slurm.sh - `loom ab` over a large suite as a Slurm job array: task
# K of 8 runs the suite's cases whose 0-based index i has i % 8 == K - 1
# (`--shard K/8`) and writes ab-shards/shard-K.json; a job that starts when
# the array is over merges the shard reports into the report of the whole
# suite (`loom ab merge`), the same bytes and exit code as one `loom ab`.
#
#   ./loom-ab-slurm.sh submit   # from the folder the paths below are relative to
#
# submits the array and the merge job (sbatch --dependency=afterany, so the
# merge also runs, and names the missing shard, when a task failed). Every
# task must see the same manifests, suite and options: the merge checks the
# paths, the files' digests, the threshold and the planning options.
# Change SHARDS and --array together.
#SBATCH --job-name=loom-ab
#SBATCH --array=1-8
#SBATCH --cpus-per-task=1
#SBATCH --mem=16G
#SBATCH --time=02:00:00
#SBATCH --output=loom-ab-%A_%a.log

set -u
SHARDS=8
LOOM=${LOOM:-loom}
A=${A:-base.json}
B=${B:-candidate.json}
SUITE=${SUITE:-suite.json}
OUT=${OUT:-ab-shards}

case "${1:-}" in
submit)
    mkdir -p "$OUT"
    rm -f "$OUT"/shard-*.json
    jid=$(sbatch --parsable "$0") || exit 1
    sbatch --dependency="afterany:$jid" --job-name=loom-ab-merge \
        --output=loom-ab-merge-%j.log --wrap "$(realpath "$0") merge"
    exit
    ;;
merge)
    "$LOOM" ab merge "$OUT"/shard-*.json --markdown ab.md --json ab.json --junit ab.xml
    exit  # the verdict: 0 no regression, 1 regression, 2 bad input, 3 plugin failure
    ;;
esac

K=${SLURM_ARRAY_TASK_ID:?run as a job array task (./loom-ab-slurm.sh submit)}
mkdir -p "$OUT"
# the plugin's own limits per iteration and child process, as in loom-ab.yml
"$LOOM" ab "$A" "$B" --suite "$SUITE" --threshold 0.01 \
    --timeout-ms 120000 --memory-limit-mb 8192 --quiet \
    --shard "$K/$SHARDS" --json "$OUT/shard-$K.json"
code=$?
# 0-3 carry a report (the verdict is the merge's); anything else did not
test -s "$OUT/shard-$K.json" || exit $code
