#!/usr/bin/env bash
# oobleck_plan.sh - planning time and peak memory of the `oobleck` manifest,
# whose ranker (oobleck-instantiate) scores thousands of template-and-share
# candidates: GPT-3 6.7B on 30 A40 nodes with 512 microbatches (the
# fidelity row oobleck-gpt3-6.7b, its workload as tools/bench/fidelity.py
# writes it: two 2048-token samples a microbatch), and a deeper model of
# the same shape class, 96 layers of GPT-3 2.7B's width, on the same
# nodes; and GPT-3 6.7B again with each count of --microbatches beyond
# 512 (a larger batch of the same samples). Prints wall seconds and
# maximum resident memory (GNU time's %e and %M), the median of --repeat
# runs each, and the plan's makespan.
#
# Usage: tools/bench/oobleck_plan.sh [--build DIR] [--repeat N] [--microbatches "4096 16384"]
set -euo pipefail

build=build
repeat=1
more=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --microbatches) more=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--repeat N] [--microbatches \"M ...\"]" >&2; exit 2 ;;
  esac
done
loom=$build/bin/loom
[ -x "$loom" ] || { echo "oobleck_plan: $loom not found (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "oobleck_plan: needs GNU time (/usr/bin/time)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$tmp" "$root" 512 $more <<'PY'
import json, sys
tmp, root = sys.argv[1], sys.argv[2]
for mbs in sys.argv[3:]:
    samples = [{"text_tokens": 2048, "images": 0, "microbatch": m}
               for m in range(int(mbs)) for _ in range(2)]
    with open(tmp + "/workload-%s.jsonl" % mbs, "w") as f:
        f.write(json.dumps({"iteration": 0, "samples": samples}) + "\n")
model = json.load(open(root + "/tests/fidelity/models/gpt3-2.7b.json"))
model["name"] = "gpt-96x2560"
model["modules"][0]["layers"]["count"] = 96
json.dump(model, open(tmp + "/gpt-96x2560.json", "w"))
PY

printf '%-14s %12s %10s %12s %14s\n' model microbatches wall_s max_rss_MiB makespan_ms
cases="$root/tests/fidelity/models/gpt3-6.7b.json:512 $tmp/gpt-96x2560.json:512"
for mbs in $more; do cases="$cases $root/tests/fidelity/models/gpt3-6.7b.json:$mbs"; done
for case in $cases; do
  model=${case%:*} mbs=${case##*:}
  walls=() rss=()
  for _ in $(seq "$repeat"); do
    /usr/bin/time -f '%e %M' -o "$tmp/time" \
      "$loom" plan --manifest "$root/examples/manifests/oobleck.json" --model "$model" \
      --cluster "$root/tests/fidelity/clusters/a40-tf32-1gpn.json" \
      --parallel "tp=1,pp=15,dp=2,vpp=1,mb=$mbs" --workload "$tmp/workload-$mbs.jsonl" \
      --iterations 1 --json 2>/dev/null >"$tmp/out.json"
    read -r w m <"$tmp/time"
    walls+=("$w") rss+=("$m")
  done
  w=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')
  m=$(printf '%s\n' "${rss[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')
  ms=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["makespan_ms"])' "$tmp/out.json")
  printf '%-14s %12s %10.2f %12.0f %14s\n' "$(basename "$model" .json)" "$mbs" "$w" "$((m / 1024))" "$ms"
done
