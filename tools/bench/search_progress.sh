#!/usr/bin/env bash
# search_progress.sh - best makespan against search time for the mcts,
# random and exhaustive rankers on one VLM-L iteration (PipeWeaver §8.3,
# Fig. 12).
#
# Runs `loom plan` once per ranker with the same manifest, model and
# iteration (a ranker the manifest already uses keeps its params there;
# the others are swapped in with --use and their defaults), asks each for
# its best-vs-time curve (--progress-csv) and
# prints the three curves side by side on a common time grid: at every
# grid time, the best makespan each ranker had found by then.
#
# Usage: tools/bench/search_progress.sh [options]
#   --build DIR       build tree holding bin/loom (default: build)
#   --budget-ms N     search budget per ranker (default: 10000)
#   --threads N       worker threads per ranker (default: 1)
#   --model NAME      model preset (default: vlm-l)
#   --manifest FILE   planner manifest (default: examples/manifests/pipeweaver.json)
#   --points N        rows of the printed table (default: 20)
#   --out DIR         where the per-ranker CSVs go (default: out/search-progress)
#
# Needs from `loom plan`: --model, --iterations, --manifest, --use,
# --param and --progress-csv FILE (one row per improvement:
# iteration,elapsed_ms,best_makespan_ms,evaluations). The script says which one is
# missing when the CLI refuses.
set -euo pipefail

build=build
budget_ms=10000
threads=1
model=vlm-l
manifest=examples/manifests/pipeweaver.json
points=20
out=out/search-progress

while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --budget-ms) budget_ms=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --manifest) manifest=$2; shift 2 ;;
    --points) points=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "search_progress.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done

loom="$build/bin/loom"
if [ ! -x "$loom" ]; then
  echo "search_progress.sh: $loom not found; build first (make build)" >&2
  exit 2
fi
mkdir -p "$out"

rankers=(mcts random exhaustive)
for r in "${rankers[@]}"; do
  csv="$out/progress-$r.csv"
  log="$out/plan-$r.log"
  rm -f "$csv"
  params=(--param "ranker.budget_ms=$budget_ms" --param "ranker.threads=$threads")
  use=(--use "ranker=$r")
  if grep -Eq '"role": *"ranker", *"use": *"'"$r"'"' "$manifest"; then
    use=()
  fi
  echo "search_progress.sh: $r, ${budget_ms} ms, $threads thread(s) ..." >&2
  if ! "$loom" plan --model "$model" --iterations 1 --manifest "$manifest" \
       "${use[@]}" "${params[@]}" --progress-csv "$csv" >"$log" 2>&1; then
    echo "search_progress.sh: 'loom plan' failed for ranker $r:" >&2
    sed 's/^/  /' "$log" >&2
    if grep -q -- "progress-csv" "$log"; then
      echo "search_progress.sh: this loom has no --progress-csv FILE; it needs" \
           "the best-vs-time curve (loom_engine_progress_curve) written as" \
           "iteration,elapsed_ms,best_makespan_ms,evaluations rows" >&2
    fi
    exit 1
  fi
  if [ ! -s "$csv" ]; then
    echo "search_progress.sh: $r wrote no progress rows to $csv" >&2
    exit 1
  fi
done

# Merge: the best makespan of each ranker at points evenly spaced over the
# budget (a ranker's curve is a step function of its improvements).
awk -v points="$points" -v budget="$budget_ms" -v names="${rankers[*]}" '
  BEGIN { n = split(names, name, " ") }
  FNR == 1 { k++ }
  $1 ~ /^[0-9.eE+-]+$/ {
    split($0, f, ",")  # iteration,elapsed_ms,best_makespan_ms,evaluations
    m[k]++; t[k, m[k]] = f[2] + 0; best[k, m[k]] = f[3] + 0; ev[k, m[k]] = f[4] + 0
  }
  END {
    printf "%12s", "elapsed_ms"
    for (i = 1; i <= n; i++) printf " %14s", name[i]
    printf "\n"
    for (p = 1; p <= points; p++) {
      at = budget * p / points
      printf "%12.0f", at
      for (i = 1; i <= n; i++) {
        v = ""
        for (j = 1; j <= m[i]; j++) if (t[i, j] <= at) v = best[i, j]
        if (v == "") printf " %14s", "-"; else printf " %14.3f", v
      }
      printf "\n"
    }
    printf "%12s", "evals@last"
    for (i = 1; i <= n; i++) printf " %14d", ev[i, m[i]]
    printf "\n"
  }' FS=, "$out/progress-mcts.csv" "$out/progress-random.csv" "$out/progress-exhaustive.csv"
