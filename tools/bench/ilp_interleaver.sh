#!/usr/bin/env bash
# ilp_interleaver.sh - the exact "ilp" interleaver on the zero-bubble
# paper's settings (Qi et al., ICLR 2024, section 3; split backward, at most
# P microbatches' activations per rank), next to the zero-bubble heuristic:
#   zb-p4m8    P = 4, M = 8,  F = I = W = 1            (optimum 27)
#   zb-hetero  P = 4, M = 8,  F = [2,1,1,1], I = [2,1,1,2], W = 1 (optimum 41)
#   zb-p8m16   P = 8, M = 16, F = I = W = 1            (optimum 55)
#   dynapipe-hetero  P = 4, M = 8, F = 1, B = 2 (not split), no cap,
#              microbatch scales 1, .8, 1.2, .9, 1.1, .7, 1.4, .6
#   mb-scales  P = 4, M = 8, F = I = W = 1, cap 4, the same scales
# (The unsplit one is compared with dual-queue, as zero-bubble needs split
# backward stages.) For each: makespan, whether ilp proved it (plan.json interleaver_bound_ms
# equals makespan_ms), the lower bound and gap from plan.json, and the
# planning time `loom plan --json` reports (partition + search + final
# replay, one ilp search per plan).
#
# With --random N it then plans N random problems of the same shape as
# the first (P = 4, M = 8, split backward, cap 4; F and I drawn from
# {1, 1.5, 2}, W from {0.5, 1}, transfer 0 or 0.25 ms; every other one
# with uneven microbatch scales from {0.75, 1, 1.25}; seed 3), where the
# search does not always finish within the time limit.
#
# Usage: tools/bench/ilp_interleaver.sh [--build DIR] [--timeout-ms MS] [--random N]
set -euo pipefail

build=build
timeout_ms=10000
random_n=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --timeout-ms) timeout_ms=$2; shift 2 ;;
    --random) random_n=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--timeout-ms MS] [--random N]" >&2; exit 2 ;;
  esac
done

here=$(cd "$(dirname "$0")" && pwd)
loom=$build/bin/loom
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

dir=$here/ilp
problems="zb-p4m8 zb-hetero zb-p8m16 dynapipe-hetero mb-scales"
if [ "$random_n" -gt 0 ]; then
  python3 - "$tmp" "$random_n" <<'PY'
import json, random, sys
random.seed(3)
for t in range(int(sys.argv[2])):
    st = {"kind": "stage-times", "ranks": 4, "microbatches": 8,
          "forward_ms": [random.choice([1, 1.5, 2]) for _ in range(4)],
          "input_grad_ms": [random.choice([1, 1.5, 2]) for _ in range(4)],
          "weight_grad_ms": [random.choice([0.5, 1]) for _ in range(4)],
          "activation_bytes": 1, "memory_cap_bytes": 4, "p2p_ms": random.choice([0, 0.25])}
    if t % 2:
        st["microbatch_scale"] = [random.choice([0.75, 1, 1.25]) for _ in range(8)]
    json.dump(st, open("%s/random-%d.json" % (sys.argv[1], t), "w"))
PY
fi

printf '%-15s %-12s %10s %7s %10s %8s %12s\n' problem interleaver makespan proven bound gap plan_ms
for p in $problems $(seq -f 'random-%g' 0 $((random_n - 1)) 2>/dev/null | head -n "$random_n"); do
  src=$dir/$p.json
  case $p in random-*) src=$tmp/$p.json ;; esac
  heuristic=zero-bubble # needs split backward; whole backward stages: dual-queue
  if grep -q '"backward_ms"' "$src"; then heuristic=dual-queue; fi
  for il in ilp $heuristic; do
    args=(plan --quiet --stage-times "$src" --use "interleaver=$il" --out "$tmp/$p-$il" --json)
    if [ "$il" = ilp ]; then args+=(--param "interleaver.timeout_ms=$timeout_ms"); fi
    LOOM_PLUGIN_PATH= "$loom" "${args[@]}" > "$tmp/$p-$il.json" 2>/dev/null
    python3 - "$tmp/$p-$il.json" "$tmp/$p-$il/plan.json" "$p" "$il" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))["metrics"]
proven = m["interleaver_bound_ms"] is not None and m["optimality_gap"] == 0
print("%-15s %-12s %10.6g %7s %10.6g %8.4f %12.3f" % (
    sys.argv[3], sys.argv[4], m["makespan_ms"], "yes" if proven else "no",
    m["lower_bound_ms"], m["optimality_gap"], summary["plan_time_ms"]))
PY
  done
done
