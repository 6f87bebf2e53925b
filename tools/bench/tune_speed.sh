#!/usr/bin/env bash
# tune_speed.sh - how fast `loom tune` chooses a layout, and what it
# chooses where a paper has an answer:
#
#   1. VLM-L on 64 H800, global batch 128 (target: 30 s on 2 cores);
#   2. VLM-XL on 1024 H100, global batch 1024 (target: 2 minutes);
#   3. PipeWeaver §8.3: VLM-M on 64 H800, where the paper's grid search
#      finds DP8 TP2 PP4 best (MFU 29.7 %). The global batch is 128: the 16
#      microbatches per replica of the fidelity row that holds §8.3
#      (tests/fidelity/fidelity.json, pw-s83-vlm-m-dp8) times DP 8, packed
#      first-fit over 3 samples as that row does. Ranks every configuration
#      (--top 100000, so nothing is pruned from the ranking) with
#      megatron-tuned, with megatron-balanced (PipeWeaver's Megatron-LM
#      baseline) and with pipeweaver (K 1), and prints where DP8 TP2 PP4
#      CP1 first appears. §8.3's grid is of single layouts (PipeWeaver's
#      planner places the encoder itself), so these searches are
#      --single-layouts; the VLM-L and VLM-XL searches are the default
#      space, per-module layouts included.
#
# Each line: considered, simulated and pruned configurations, wall seconds
# and CPU seconds (user + system) of the whole `loom tune` process.
#
# usage: tools/bench/tune_speed.sh [BUILD_DIR] [which: all|l|xl|s83]
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
which=${2:-all}
loom="$build/bin/loom"
[ -x "$loom" ] || loom="$here/$build/bin/loom"
if [ ! -x "$loom" ]; then
    echo "tune_speed: no loom binary in $build/bin (build first)" >&2
    exit 2
fi
manifests="$here/examples/manifests"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runs one search; prints its counts and times. $1 label, rest: options.
search() {
    local label=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -f "%U %S" -o "$tmp/cpu" "$loom" tune "$@" --quiet --json "$tmp/$label.json" \
        >/dev/null 2>"$tmp/$label.err" || { cat "$tmp/$label.err" >&2; return 1; }
    t1=$(date +%s.%N)
    python3 - "$tmp/$label.json" "$label" "$t0" "$t1" "$tmp/cpu" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
user, system = map(float, open(sys.argv[5]).read().split()[-2:])
best = d["ranked"][0] if d["ranked"] else None
lay = best["layout"] if best else {}
print("%-10s considered %5d  simulated %5d  pruned %5d  infeasible %5d  %7.1f s wall  %7.1f s cpu"
      "  best tp%s cp%s pp%s dp%s vpp%s K%s M%s %.1f ms MFU %s" % (
          sys.argv[2], d["considered"], d["simulated"], d["pruned"], len(d["infeasible"]),
          float(sys.argv[4]) - float(sys.argv[3]), user + system,
          lay.get("tp"), lay.get("cp"), lay.get("pp"), lay.get("dp"), lay.get("vpp"),
          lay.get("micro_batch_size"), lay.get("microbatches"),
          best["makespan_ms"] if best else 0, best["mfu"] if best else None))
EOF
}

# Where DP8 TP2 PP4 CP1 ranks in a full ranking. $1 label.
where_dp8() {
    python3 - "$tmp/$1.json" "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["ranked"]
hit = [x for x in r if (x["layout"]["tp"], x["layout"]["pp"], x["layout"]["dp"],
                         x["layout"]["cp"]) == (2, 4, 8, 1)]
print("  %s: %d feasible configurations ranked; best %s" % (sys.argv[2], len(r),
      " ".join("%s%d" % (k, r[0]["layout"][k]) for k in ("tp", "cp", "pp", "dp", "vpp",
               "micro_batch_size")) + " %.1f ms MFU %.3f" % (r[0]["makespan_ms"], r[0]["mfu"])))
# the best layout of each (tp, cp, pp, dp), in order: the grid PipeWeaver searched
seen, grid = set(), []
for x in r:
    k = (x["layout"]["tp"], x["layout"]["cp"], x["layout"]["pp"], x["layout"]["dp"])
    if k not in seen:
        seen.add(k)
        grid.append(x)
for i, x in enumerate(grid[:8]):
    l = x["layout"]
    print("    %d. tp%d cp%d pp%d dp%d (best vpp%d K%d M%d) %.1f ms MFU %.3f bubble %.1f %%" % (
        i + 1, l["tp"], l["cp"], l["pp"], l["dp"], l["vpp"], l["micro_batch_size"],
        l["microbatches"], x["makespan_ms"], x["mfu"], 100 * x["bubble_ratio"]))
# PipeWeaver's own grid: powers of two, tp <= 8, no cp, one sequence a microbatch
paper = [g for g in grid if g["layout"]["cp"] == 1 and g["layout"]["micro_batch_size"] == 1]
paper_keys = []
for x in r:
    l = x["layout"]
    k = (l["tp"], l["pp"], l["dp"])
    if l["cp"] == 1 and l["micro_batch_size"] == 1 and k not in paper_keys:
        paper_keys.append(k)
if (2, 4, 8) in paper_keys:
    print("  in PipeWeaver's grid (cp 1, K 1): DP8 TP2 PP4 ranks %d of %d; ahead of it: %s" % (
        paper_keys.index((2, 4, 8)) + 1, len(paper_keys),
        ", ".join("tp%d pp%d dp%d" % k for k in paper_keys[:paper_keys.index((2, 4, 8))][:6])))
if hit:
    x = hit[0]
    pos = r.index(x) + 1
    gpos = [g["layout"] for g in grid].index(x["layout"]) + 1
    l = x["layout"]
    print("  DP8 TP2 PP4: configuration rank %d, layout-grid rank %d of %d: vpp%d K%d M%d "
          "%.1f ms MFU %.3f (%.1f %% slower than the best)" % (
              pos, gpos, len(grid), l["vpp"], l["micro_batch_size"], l["microbatches"],
              x["makespan_ms"], x["mfu"], 100 * (x["makespan_ms"] / r[0]["makespan_ms"] - 1)))
else:
    print("  DP8 TP2 PP4: not feasible")
    for x in d["infeasible"]:
        l = x["layout"]
        if (l["tp"], l["pp"], l["dp"], l["cp"]) == (2, 4, 8, 1):
            print("    vpp%d K%d: %s" % (l["vpp"], l["micro_batch_size"], x["reason"][:200]))
EOF
}

if [ "$which" = all ] || [ "$which" = l ]; then
    search vlm-l-64 --model vlm-l --cluster h800 --gpus 64 --global-batch 128
fi
if [ "$which" = all ] || [ "$which" = xl ]; then
    search vlm-xl-1k --model vlm-xl --cluster h100 --gpus 1024 --global-batch 1024
fi
if [ "$which" = all ] || [ "$which" = s83 ]; then
    for m in megatron-tuned megatron-balanced; do
        search "s83-$m" --model vlm-m --cluster h800 --gpus 64 --global-batch 128 \
            --packing-window 3 --manifest "$manifests/$m.json" --top 100000 --single-layouts
        where_dp8 "s83-$m"
    done
    # PipeWeaver's own planner (a 200-evaluation MCTS per configuration, so
    # one sequence a microbatch as in §8.3's grid: 64 layouts, ~1.5 CPU min)
    search s83-pipeweaver --model vlm-m --cluster h800 --gpus 64 --global-batch 128 \
        --packing-window 3 --micro-batch-size 1 --manifest "$manifests/pipeweaver.json" \
        --top 100000 --single-layouts
    where_dp8 s83-pipeweaver
fi
