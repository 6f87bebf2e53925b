#!/usr/bin/env bash
# plan_identity.sh - do two builds plan the same? Runs `loom plan --json --out DIR` with an old and
# a new build on every example manifest and model preset (deterministic mode), and compares the
# printed metrics, every plan.json and every schedule.csv byte for byte, planning times aside.
#
#   tools/bench/plan_identity.sh OLD_BUILD NEW_BUILD [extra loom plan options...]
#
# e.g. tools/bench/plan_identity.sh /tmp/old/build build --use interleaver=zero-bubble
# Prints one line per case and a count; exits 1 when any case differs.
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 OLD_BUILD NEW_BUILD [loom plan options...]" >&2
    exit 2
fi
old=$1
new=$2
shift 2
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run BUILD DIR ARGS...: the metrics, exit status and written plans of one run, timings removed
run() {
    local build=$1 dir=$2
    shift 2
    "$build/bin/loom" plan "$@" --out "$dir" 2>&1
    echo "rc=$?"
    find "$dir" \( -name plan.json -o -name schedule.csv \) 2>/dev/null | sort | xargs -r cat
}

same=0
differ=0
for manifest in examples/manifests/*.json; do
    for model in vlm-s vlm-m vlm-l t2v-s t2v-l; do
        args=(--manifest "$manifest" --model "$model" --iterations 1 --evaluations 60 --json
              --quiet "$@")
        rm -rf "$work/old" "$work/new"
        a=$(run "$old" "$work/old" "${args[@]}" | sed -E 's/"plan_time_ms": [0-9.]+//g')
        b=$(run "$new" "$work/new" "${args[@]}" | sed -E 's/"plan_time_ms": [0-9.]+//g')
        if [ "$a" == "$b" ]; then
            same=$((same + 1))
            echo "same    $(basename "$manifest") $model (${#a} bytes)"
        else
            differ=$((differ + 1))
            echo "DIFFERS $(basename "$manifest") $model"
        fi
    done
done
echo "identical $same, different $differ"
[ "$differ" -eq 0 ]
