#!/usr/bin/env bash
# replan_bounds.sh - `loom replan` wall time and peak memory at and near
# the documented bound of the divide and conquer (loom_oobleck_work <=
# 2^31 layer splits, docs/formats.md): 8-GPU nodes, fault tolerance 1,
# 512 microbatches, node 3 failed, per-layer costs that vary (an embedding,
# a head and a repeating pattern), plus one job of equal layers (ties).
#
#   small      24 layers, 4 nodes (templates of 1..3 nodes)
#   diss-96    the dissertation's 96 layers, 9 nodes (templates up to 8)
#   max-8n     102 layers, 9 nodes: the most layers within the bound on 8
#   max-7n     111 layers, 8 nodes: the most layers within the bound on 7
#   equal-111  111 equal layers, 8 nodes
#   wide-64g   45 layers, 4 nodes of 64 GPUs (templates up to 3): the
#              most layers within the bound on 64-GPU nodes
#   many-32n   72 layers, 33 nodes (templates up to 32): the most layers
#              within the bound on 32 nodes
#   pow2-40    40 layers, 5 nodes of 4 GPUs, power-of-two stages,
#              efficiency 0.45, max_stages 10 (stages of 1 and 4 GPUs)
#   gpu1-48    48 layers, 12 nodes of one GPU, min_nodes 2
#
# --jobs LIST (comma-separated names) runs a subset; the default runs all.
# Prints wall seconds, CPU seconds (user + system) and maximum resident
# memory (GNU time's %e, %U + %S and %M), the median of --repeat runs each;
# on a shared machine the CPU seconds are the steadier figure. --old DIR runs a second build in the
# same loop and adds its median and the ratio old / new; --check compares
# the two builds' --json reports byte for byte. --keep DIR leaves the jobs
# (and with --check the reports) there.
#
# Usage: tools/bench/replan_bounds.sh [--build DIR] [--old DIR] [--repeat N]
#                                     [--check] [--keep DIR] [--jobs LIST]
set -euo pipefail

build=build
old=
repeat=1
check=0
keep=
jobs=small,diss-96,max-8n,max-7n,equal-111,wide-64g,many-32n,pow2-40,gpu1-48
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --check) check=1; shift ;;
    --keep) keep=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--old DIR] [--repeat N] [--check] [--keep DIR] [--jobs LIST]" >&2
       exit 2 ;;
  esac
done
loom=$build/bin/loom
[ -x "$loom" ] || { echo "replan_bounds: $loom not found (build first)" >&2; exit 2; }
if [ -n "$old" ]; then
  [ -x "$old/bin/loom" ] || { echo "replan_bounds: $old/bin/loom not found" >&2; exit 2; }
fi
[ "$check" = 0 ] || [ -n "$old" ] || { echo "replan_bounds: --check needs --old" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "replan_bounds: needs GNU time (/usr/bin/time)" >&2; exit 2; }
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  tmp=$keep
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi

# job NAME NODES GPUS LAYERS VARIED EXTRA: writes $tmp/NAME.json; EXTRA is
# more JSON fields (with a trailing comma) or empty
job() {
  awk -v nodes="$2" -v gpus="$3" -v layers="$4" -v varied="$5" -v extra="$6" 'BEGIN {
    printf "{\"nodes\": %d, \"gpus_per_node\": %d, \"fault_tolerance\": 1,\n", nodes, gpus
    printf " \"microbatches\": 512, %s\n", extra == "" ? "\"tp_efficiency\": 0.85," : extra
    if (!varied) {
      printf " \"layers\": {\"count\": %d, \"forward_ms\": 1.0, \"backward_ms\": 2.0}}\n", layers
      exit
    }
    printf " \"layers\": ["
    for (l = 0; l < layers; l++) {
      f = 1.0 + 0.25 * (l % 3) + 0.125 * (l % 7 == 0)
      if (l == 0) f = 2.5
      if (l == layers - 1) f = 3.75
      printf "%s{\"forward_ms\": %.4f, \"backward_ms\": %.4f}", l ? ", " : "", f, 2 * f + 0.0625 * (l % 5)
    }
    printf "]}\n"
  }' >"$tmp/$1.json"
}
job small 4 8 24 1 ""
job diss-96 9 8 96 1 ""
job max-8n 9 8 102 1 ""
job max-7n 8 8 111 1 ""
job equal-111 8 8 111 0 ""
job wide-64g 4 64 45 1 ""
job many-32n 33 8 72 1 ""
job pow2-40 5 4 40 1 '"pow2_gpus": true, "tp_efficiency": 0.45, "max_stages": 10,'
job gpu1-48 12 1 48 1 '"min_nodes": 2,'

# median of the numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }

# run BIN NAME OUTFILE: one timed replan, "wall cpu rss_kib" on stdout
run() {
  /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" \
    "$1" replan --job "$tmp/$2.json" --failed-nodes 3 --json >"$3"
  awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$tmp/time"
}

if [ -n "$old" ]; then
  printf '%-10s %8s %7s %8s %8s %7s %8s %8s\n' job wall_s cpu_s rss_MiB old_wall old_cpu old_rss old/new
else
  printf '%-10s %8s %7s %8s\n' job wall_s cpu_s rss_MiB
fi
status=0
for name in ${jobs//,/ }; do
  [ -f "$tmp/$name.json" ] || { echo "replan_bounds: no job $name" >&2; exit 2; }
  walls=() cpus=() rss=() owalls=() ocpus=() orss=()
  for _ in $(seq "$repeat"); do
    read -r w c m < <(run "$loom" "$name" "$tmp/$name.new.json")
    walls+=("$w") cpus+=("$c") rss+=("$m")
    if [ -n "$old" ]; then
      read -r w c m < <(run "$old/bin/loom" "$name" "$tmp/$name.old.json")
      owalls+=("$w") ocpus+=("$c") orss+=("$m")
    fi
  done
  w=$(printf '%s\n' "${walls[@]}" | median)
  c=$(printf '%s\n' "${cpus[@]}" | median)
  m=$(printf '%s\n' "${rss[@]}" | median)
  if [ -n "$old" ]; then
    ow=$(printf '%s\n' "${owalls[@]}" | median)
    oc=$(printf '%s\n' "${ocpus[@]}" | median)
    om=$(printf '%s\n' "${orss[@]}" | median)
    # old / new CPU seconds (the wall ratio suffers the machine's load)
    ratio=$(awk -v a="$oc" -v b="$c" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    printf '%-10s %8.2f %7.2f %8.0f %8.2f %7.2f %8.0f %8s\n' "$name" "$w" "$c" "$((m / 1024))" \
      "$ow" "$oc" "$((om / 1024))" "$ratio"
  else
    printf '%-10s %8.2f %7.2f %8.0f\n' "$name" "$w" "$c" "$((m / 1024))"
  fi
  if [ "$check" = 1 ]; then
    if cmp -s "$tmp/$name.new.json" "$tmp/$name.old.json"; then
      echo "  $name: reports identical ($(wc -c <"$tmp/$name.new.json") bytes)"
    else
      echo "  $name: REPORTS DIFFER" >&2
      status=1
    fi
  fi
done
exit $status
