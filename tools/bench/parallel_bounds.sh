#!/usr/bin/env bash
# parallel_bounds.sh - planning time and peak memory at the parallel
# config's layer bound (docs/formats.md, "Parallel config": the model's
# layers x microbatches): every example manifest on VLM-S and VLM-L with
# as many microbatches as the bound allows (--bound, default 2^21), one
# iteration, no --out. Prints wall seconds, maximum resident memory (GNU
# time's %e and %M) and the exit status of each, killed after --limit
# seconds (status 124).
#
# Usage: tools/bench/parallel_bounds.sh [--build DIR] [--bound N] [--limit S]
set -uo pipefail

build=build
bound=$((1 << 21))
limit=60
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --bound) bound=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--bound N] [--limit S]" >&2; exit 2 ;;
  esac
done
loom=$build/bin/loom
[ -x "$loom" ] || { echo "parallel_bounds: $loom not found (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "parallel_bounds: needs GNU time (/usr/bin/time)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '%-28s %-6s %12s %8s %12s %6s\n' manifest model microbatches wall_s max_rss_MiB status
for model in vlm-s vlm-l; do
  layers=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(sum(x["layers"]["count"] for x in m["modules"]))' "$root/examples/models/$model.json")
  mbs=$((bound / layers))
  for manifest in "$root"/examples/manifests/*.json; do
    /usr/bin/time -f '%e %M' -o "$tmp/time" timeout "$limit" \
      "$loom" plan --manifest "$manifest" --model "$model" --parallel "mb=$mbs" \
      --iterations 1 --quiet >/dev/null 2>"$tmp/err"
    status=$?
    read -r w m < <(tail -1 "$tmp/time")
    printf '%-28s %-6s %12s %8.2f %12.0f %6s\n' "$(basename "$manifest")" "$model" "$mbs" \
      "${w:-0}" "$(( ${m:-0} / 1024 ))" "$status"
  done
done
