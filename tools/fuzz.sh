#!/usr/bin/env bash
# fuzz.sh - builds Loom's libFuzzer harnesses (tests/fuzz/) with clang and
# runs each one for FUZZ_SECONDS, after replaying its regression inputs
# (tests/fuzz/regressions/<harness>/). Prints executions and seconds per
# harness; exits non-zero when any harness crashes, leaks, times out or
# runs out of memory, naming the input that did it.
#
# Environment:
#   FUZZ_SECONDS   seconds per harness (default 60)
#   FUZZ_BUILD     build directory (default build-fuzz)
#   FUZZ_JOBS      harnesses run at the same time (default 1)
#   FUZZ_ONLY      space-separated harness names to run (default: all), e.g.
#                  "model workload"
#   FUZZ_NO_BUILD  1: use the harnesses already built in FUZZ_BUILD
#
# Corpora live in FUZZ_BUILD/fuzz-corpus/<harness>/ (seeded from examples/
# and tests/fuzz/seeds/, grown by every run); crashing inputs land in
# FUZZ_BUILD/fuzz-artifacts/<harness>/. Copy a crashing input into
# tests/fuzz/regressions/<harness>/ once its bug is fixed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-1}
all=(json plugin_manifest planner_manifest model cluster workload stage_times table parallel suite
     replan cp_balance parallel_file calib_profile calib_iters tune_shard batch)
read -r -a only <<<"${FUZZ_ONLY:-${all[*]}}"

case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: FUZZ_SECONDS must be a whole number, found '$seconds'" >&2; exit 2;; esac
case "$jobs" in ''|*[!0-9]*|0) echo "fuzz.sh: FUZZ_JOBS must be a positive number, found '$jobs'" >&2; exit 2;; esac

if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  if ! command -v clang >/dev/null; then
    echo "fuzz.sh: clang not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
    exit 2
  fi
  if ! grep -q '^LOOM_FUZZ:[A-Z]*=ON' "$build/CMakeCache.txt" 2>/dev/null; then
    CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_FUZZ=ON \
      -DLOOM_BUILD_TESTS=OFF >"$build.configure.log" 2>&1 ||
      { cat "$build.configure.log" >&2; exit 2; }
    rm -f "$build.configure.log"
  fi
  cmake --build "$build" --target loom-fuzzers -j 2 >/dev/null ||
    { cmake --build "$build" --target loom-fuzzers -j 1; exit 2; }
fi

# Prints the seed files of one harness (paths relative to the root).
seeds_for() {
  case "$1" in
    json) ls examples/models/*.json examples/clusters/*.json examples/manifests/*.json \
             examples/stage-times/*.json examples/parallel/*.json \
             examples/calibration/*.json examples/plugin-template/manifest.json ;;
    plugin_manifest) ls examples/plugin-template/manifest.json plugins/*/manifest.json ;;
    planner_manifest) ls examples/manifests/*.json ;;
    model) ls examples/models/*.json ;;
    cluster) ls examples/clusters/*.json ;;
    workload) ls examples/workloads/*.jsonl ;;
    stage_times) ls examples/stage-times/*.json tests/fuzz/seeds/stage_times/* ;;
    parallel_file) ls examples/parallel/*.json tests/fuzz/seeds/parallel_file/* ;;
    calib_profile) ls examples/calibration/*.csv tests/fuzz/seeds/calib_profile/* ;;
    calib_iters) ls examples/calibration/*.json tests/fuzz/seeds/calib_iters/* ;;
    suite) ls examples/ci/suite.json tests/fuzz/seeds/suite/* ;;
    replan) ls examples/replan/*.json tests/fuzz/seeds/replan/* ;;
    tune_shard) ls tests/fuzz/seeds/tune_shard/* ;;
    table|parallel|cp_balance|batch) ls tests/fuzz/seeds/"$1"/* ;;
  esac
}

# Copies the seeds of harness $1 into its corpus (workloads: the first
# lines only, so that seeds stay small and mutations stay fast).
seed_corpus() {
  local h=$1 dir=$build/fuzz-corpus/$1 f
  mkdir -p "$dir"
  for f in $(seeds_for "$h"); do
    local dst
    dst="$dir/seed-$(echo "$f" | tr '/' '_')"
    [ -e "$dst" ] && continue
    if [ "$h" = workload ]; then head -n 4 "$f" >"$dst"; else cp "$f" "$dst"; fi
  done
}

# Runs harness $1: regressions first, then fuzzing; writes a result line
# "name executions seconds status" to $build/fuzz-logs/$1.result.
run_one() {
  local h=$1 exe log res status=ok execs=0 start end secs
  exe=$build/fuzz/loom-fuzz-${h//_/-}
  log=$build/fuzz-logs/$h.log
  res=$build/fuzz-logs/$h.result
  local tmp=$build/fuzz-tmp/$h
  mkdir -p "$build/fuzz-artifacts/$h" "$tmp"
  : >"$log"
  local dict=()
  case "$h" in
    parallel|cp_balance) ;;
    calib_profile) dict=(-dict=tests/fuzz/csv.dict) ;;
    *) dict=(-dict=tests/fuzz/json.dict) ;;
  esac
  local regs=()
  if [ -d "tests/fuzz/regressions/$h" ]; then
    while IFS= read -r -d '' f; do regs+=("$f"); done \
      < <(find "tests/fuzz/regressions/$h" -type f ! -name '*.md' -print0 | sort -z)
  fi
  if [ ${#regs[@]} -gt 0 ]; then
    if ! TMPDIR=$tmp "$exe" "${regs[@]}" >>"$log" 2>&1; then
      echo "$h 0 0 regression-failed" >"$res"
      return 0
    fi
  fi
  start=$(date +%s.%N)
  if ! TMPDIR=$tmp "$exe" -max_total_time="$seconds" -print_final_stats=1 -timeout=30 \
       -rss_limit_mb=2048 -artifact_prefix="$build/fuzz-artifacts/$h/" "${dict[@]}" \
       "$build/fuzz-corpus/$h" >>"$log" 2>&1; then
    status=crash
  fi
  end=$(date +%s.%N)
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }')
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  [ -n "$execs" ] || execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
  [ -n "$execs" ] || execs=0
  if grep -qE '^==[0-9]+==ERROR|deadly signal|ALARM: working on the last Unit|out-of-memory|runtime error:' "$log"; then
    status=crash
  fi
  echo "$h $execs $secs $status ${#regs[@]}" >"$res"
}

mkdir -p "$build/fuzz-logs"
for h in "${only[@]}"; do
  if [[ " ${all[*]} " != *" $h "* ]]; then
    echo "fuzz.sh: unknown harness '$h' (expected some of: ${all[*]})" >&2
    exit 2
  fi
  seed_corpus "$h"
  rm -f "$build/fuzz-logs/$h.result"
done

echo "fuzz.sh: ${#only[@]} harnesses, ${seconds} s each, ${jobs} at a time (build: $build)"
running=0
for h in "${only[@]}"; do
  run_one "$h" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=0
printf '%-18s %14s %8s %10s %8s  %s\n' harness executions seconds exec/s corpus result
for h in "${only[@]}"; do
  read -r name execs secs status nregs <"$build/fuzz-logs/$h.result" ||
    { name=$h; execs=0; secs=0; status=no-result; nregs=0; }
  rate=$(awk -v e="$execs" -v s="$secs" 'BEGIN { printf "%.0f", (s > 0 ? e / s : 0) }')
  corpus=$(find "$build/fuzz-corpus/$h" -type f | wc -l)
  printf '%-18s %14s %8s %10s %8s  %s (%s regression inputs)\n' "$name" "$execs" "$secs" \
    "$rate" "$corpus" "$status" "${nregs:-0}"
  if [ "$status" != ok ]; then
    failed=1
    echo "---- $h: last lines of $build/fuzz-logs/$h.log" >&2
    tail -n 40 "$build/fuzz-logs/$h.log" >&2
    ls "$build/fuzz-artifacts/$h"/* 2>/dev/null | sed 's/^/crashing input: /' >&2 || true
  fi
done
rm -rf "$build/fuzz-tmp"
exit "$failed"
