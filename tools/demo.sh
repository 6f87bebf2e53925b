#!/usr/bin/env bash
# tools/demo.sh - what `make demo` runs: a quiet build (one progress line,
# warnings if any, the log's tail if it fails), then PipeWeaver against the
# strongest Megatron-LM baseline Loom ships (megatron-tuned: the fastest
# plan that fits over uniform and balanced splits, every dividing vpp and the
# recomputation settings, docs/baselines.md) on one VLM preset, side by side
# in one small table, with every output (report.html first) in
# $DEMO_OUT/<manifest>/ and a loom ab comparison in $DEMO_OUT/ab.html.
#
# Environment: BUILD (build), JOBS (nproc), WERROR (ON), CMAKE_ARGS,
# DEMO_OUT (demo-out), DEMO_MODEL (vlm-l), DEMO_BUDGET_MS (500: PipeWeaver's
# MCTS search budget per iteration, a short search).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
WERROR=${WERROR:-ON}
OUT=${DEMO_OUT:-demo-out}
MODEL=${DEMO_MODEL:-vlm-l}
BUDGET=${DEMO_BUDGET_MS:-500}
BASE=megatron-tuned
NEW=pipeweaver
mkdir -p "$BUILD"
log="$BUILD/demo-build.log"

# ---- build: one line --------------------------------------------------------
tty=0
[ -t 1 ] && tty=1
progress() { # reads the build output, shows the percentage on a terminal
  local pct=""
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    if [[ $line =~ ^\[\ *([0-9]+)%\] ]] && [ "$tty" = 1 ] && [ "${BASH_REMATCH[1]}" != "$pct" ]; then
      pct=${BASH_REMATCH[1]}
      printf '\rbuild   %3s%%' "$pct"
    fi
  done
}
: >"$log"
status=0
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  # shellcheck disable=SC2086 # CMAKE_ARGS holds several arguments
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_WERROR="$WERROR" \
    $CMAKE_ARGS >>"$log" 2>&1 || status=$?
fi
if [ "$status" = 0 ]; then
  { rc=0; cmake --build "$BUILD" -j "$JOBS" 2>&1 || rc=$?; echo "exit $rc"; } | progress
  status=$(tail -n 1 "$log" | sed -n 's/^exit //p')
  sed -i '$d' "$log" # the status line
fi
[ "$tty" = 1 ] && printf '\r\033[K'
if [ "${status:-1}" != 0 ]; then
  echo "build   FAILED; the last lines of $log:"
  tail -n 30 "$log"
  exit 1
fi
warnings=$(grep -c 'warning:' "$log" || true)
echo "build   ok ($BUILD/, $JOBS jobs, $warnings warnings; log: $log)"
if [ "$warnings" != 0 ]; then
  grep 'warning:' "$log" | sort -u | head -n 5
fi

# ---- plan both ----------------------------------------------------------------
loom="$BUILD/bin/loom"
rm -rf "${OUT:?}/$BASE" "${OUT:?}/$NEW" "$OUT/ab.html" "$OUT/ab.json"
mkdir -p "$OUT"
run() { # name, args...: plans into $OUT/name, prints the error on failure
  local name=$1
  shift
  if ! LOOM_PLUGIN_PATH= "$loom" plan --quiet --model "$MODEL" --iterations 1 \
      --out "$OUT/$name" "$@" >"$OUT/$name.log" 2>&1; then
    echo "loom plan failed for $name:"
    tail -n 20 "$OUT/$name.log"
    exit 1
  fi
  rm -f "$OUT/$name.log"
}
run "$BASE" --manifest "examples/manifests/$BASE.json"
run "$NEW" --manifest "examples/manifests/$NEW.json" --param "ranker.budget_ms=$BUDGET"
# The same comparison over 4 iterations with a confidence interval (the
# manifests as shipped: --param would reach the baseline's ranker too).
ab_rc=0
LOOM_PLUGIN_PATH= "$loom" ab "examples/manifests/$BASE.json" "examples/manifests/$NEW.json" \
  --model "$MODEL" --iterations 4 --quiet \
  --json "$OUT/ab.json" --html "$OUT/ab.html" >/dev/null 2>"$OUT/ab.log" || ab_rc=$?

# ---- the table ---------------------------------------------------------------
python3 - "$OUT" "$BASE" "$NEW" "$MODEL" "$BUDGET" "$ab_rc" <<'EOF'
import html, json, os, re, sys
out, base, new, model, budget, ab_rc = sys.argv[1:]
GIB = 1024.0 ** 3

def load(name):
    d = os.path.join(out, name)
    plan = json.load(open(os.path.join(d, "plan.json")))
    summary = open(os.path.join(d, "summary.txt")).read()
    page = open(os.path.join(d, "report.html")).read()
    m = re.search(r"plan time\s+([0-9.]+) ms \((\d+) evaluations?\)", summary)
    kv = dict((k, html.unescape(v)) for k, v in re.findall(
        r'<span class="k">([^<]*)</span><span class="v">(.*?)</span>\n', page))
    return plan, float(m.group(1)), int(m.group(2)), kv

a, a_ms, a_ev, kv = load(base)
b, b_ms, b_ev, _ = load(new)
ma, mb = a["metrics"], b["metrics"]
cap = ma.get("memory_cap_bytes") or 0
layout = re.sub(r"<[^>]*>", "", kv.get("parallel layout", "?"))
cluster = re.sub(r"<[^>]*>", "", kv.get("cluster", "?")).split(",")[0]
print()
print("PipeWeaver vs megatron-tuned (the fastest Megatron-LM plan that fits: uniform or "
      "balanced split, vpp, recomputation)")
print("%s on %s: %s, %d microbatches, 1 iteration%s" % (
    model, cluster, layout, a["microbatches"],
    ", cap %.0f GiB per rank" % (cap / GIB) if cap else ""))
print()
w = max(len(base), len(new), 12)
fmt = "  %-16s %" + str(w) + "s  %" + str(w) + "s  %s"


def row(*cells):
    print((fmt % cells).rstrip())


row("", base, new, "")
speed = ma["makespan_ms"] / mb["makespan_ms"]
faster = "%.2fx %s" % (speed if speed >= 1 else 1 / speed, "faster" if speed >= 1 else "slower")
row("iteration time", "%.1f ms" % ma["makespan_ms"], "%.1f ms" % mb["makespan_ms"], faster)
row("bubble", "%.1f %%" % (100 * ma["bubble_ratio"]), "%.1f %%" % (100 * mb["bubble_ratio"]), "")
mfu = lambda m: "%.1f %%" % (100 * m["mfu"]) if m.get("mfu") is not None else "n/a"
row("MFU", mfu(ma), mfu(mb), "")
row("plan time", "%.0f ms" % a_ms, "%.0f ms" % b_ms,
    "short search: MCTS, %s ms budget, %d evaluations" % (budget, b_ev))
print("  peak memory per rank" + (" (GiB of %.0f)" % (cap / GIB) if cap else " (GiB)"))
pa, pb = ma["peak_mem_bytes"], mb["peak_mem_bytes"]
flag = lambda v: " !" if cap and v > cap else "  "
ranks = list(range(max(len(pa), len(pb))))
if len(ranks) > 8:  # keep to one screen: the fullest and the emptiest rank of each
    ranks = sorted(set([pa.index(max(pa)), pa.index(min(pa)), pb.index(max(pb)),
                        pb.index(min(pb))]))
for r in ranks:
    va = "%.1f%s" % (pa[r] / GIB, flag(pa[r])) if r < len(pa) else "-"
    vb = "%.1f%s" % (pb[r] / GIB, flag(pb[r])) if r < len(pb) else "-"
    row("    rank %d" % r, va, vb, "")
over = lambda m: "%d over cap" % m.get("cap_violations", 0)
row("", over(ma), over(mb), "")
try:
    ab = json.load(open(os.path.join(out, "ab.json")))
    c = ab["cases"][0]
    r = c["makespan_ratio"]
    # time decides; memory only against the cap (docs/ab-testing.md)
    why = {"infeasible": "a plan over the memory cap loses"}.get(
        c.get("reason"), "time decides, both plans fit the cap")
    print("  loom ab over 4 iterations: %s/%s makespan %.3f (95 %% CI %.3f-%.3f), %s (%s; "
          "exit %s)" % (new, base, r["mean"], r["ci95"][0], r["ci95"][1], c["verdict"], why,
                        ab_rc))
except (OSError, ValueError, KeyError, TypeError, IndexError):
    print("  loom ab over 4 iterations: failed (exit %s), see %s" % (
        ab_rc, os.path.join(out, "ab.log")))
print()
print("Open %s/%s/report.html in a browser (also %s/%s/report.html, %s/ab.html)." % (
    out, new, out, base, out))
EOF
[ "$ab_rc" = 0 ] && rm -f "$OUT/ab.log"
exit 0
