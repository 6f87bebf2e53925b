#!/usr/bin/env python3
"""packing_spread.py - how uneven packed microbatches are: for each packing
window, generates a workload with `loom workload generate`, prices it with
`loom plan` (the given model, cluster and layout; no recomputation and no
memory cap, so every microbatch costs its plain forward and backward) and
prints the largest microbatch's compute time over the smallest's (summed
over its stages on all ranks), with the images a microbatch holds.

PipeWeaver section 1 reports the largest packed sample at 4.15 times the
compute of the smallest; docs/benchmarks.md ("Packing") compares the
fidelity rows' workloads with that.

Usage: tools/bench/packing_spread.py [--build DIR] [--model FILE]
           [--cluster C] [--parallel P] [--family F] [--iterations N]
           [--microbatches M] [--seed S] [--windows "1 2 3"]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

from fidelity import ROOT, plan_paths, write_workload

FAMILIES = ("image-pairs", "interleaved", "video", "rise-and-fall", "text")


def run(cmd, what):
    """Runs a loom command; exits naming the script run and `what` when it
    fails (loom's own message is on stderr above)."""
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        sys.exit("%s: %s: %s exited with %d (its message above)"
                 % (os.path.basename(sys.argv[0]), what, " ".join(cmd[:2]), r.returncode))


def spread(args, loom, window, tmp):
    """(largest over smallest microbatch compute, mean images, most images)."""
    wl = os.path.join(tmp, "w%d.jsonl" % window)
    write_workload(loom, {"family": args.family, "iterations": args.iterations,
                          "microbatches": args.microbatches, "seed": args.seed,
                          "packing_window": window}, wl)
    images = []
    with open(wl) as f:
        for line in f:
            count = collections.Counter()
            for s in json.loads(line)["samples"]:
                count[s["microbatch"]] += s.get("images", 0)
            images.extend(count[m] for m in range(args.microbatches))
    work = microbatch_work(loom, wl, os.path.join(tmp, "o%d" % window), args.iterations,
                           args.model, args.cluster, args.parallel, "window %d" % window)
    return max(work) / min(work), sum(images) / len(images), max(images)


def microbatch_work(loom, wl, out, iterations, model, cluster, parallel, what):
    """Every microbatch's compute time in the workload file wl, summed over
    its stages on all ranks: `loom plan` with megatron-1f1b on the model,
    cluster and layout, without recomputation or a memory cap, so each
    microbatch costs its plain forward and backward (plans under out)."""
    run([loom, "plan", "--manifest", os.path.join(ROOT, "examples/manifests/megatron-1f1b.json"),
         "--use", "memory_tuner=none", "--memory-cap", "1000000GiB",
         "--model", model, "--cluster", cluster, "--parallel", parallel,
         "--workload", wl, "--iterations", str(iterations), "--out", out, "--quiet"], what)
    work = []
    for path in plan_paths(out, iterations):
        with open(path) as f:
            stages = json.load(f)["stages"]
        per = collections.Counter()
        for s in stages:
            per[s["microbatch"]] += s["end_ms"] - s["start_ms"]
        work.extend(per.values())
    return work


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", default=os.path.join(ROOT, "tests/fidelity/models/vit2b-lm5b-patches.json"))
    ap.add_argument("--cluster", default="h800")
    ap.add_argument("--parallel", default="tp=2,pp=4,dp=1,vpp=1,mb=12")
    ap.add_argument("--family", default="interleaved", choices=FAMILIES)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--microbatches", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--windows", default="1 2 3 4 8 64 4096")
    args = ap.parse_args()
    loom = os.path.join(args.build, "bin", "loom")
    if not os.path.exists(loom):
        sys.exit("packing_spread.py: %s not found; build first (make build)" % loom)
    windows = args.windows.split()
    if not windows or not all(w.isdigit() and 1 <= int(w) <= 4096 for w in windows):
        sys.exit("packing_spread.py: --windows: expected packing windows 1..4096, found '%s'"
                 % args.windows)
    print("window  spread  mean_images  most_images")
    with tempfile.TemporaryDirectory() as tmp:
        for w in windows:
            s, mean, most = spread(args, loom, int(w), tmp)
            print("%-6s  %6.2f  %11.1f  %11d" % (w, s, mean, most))


if __name__ == "__main__":
    main()
