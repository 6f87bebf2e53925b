#!/usr/bin/env python3
"""search_quality.py - compares ranker settings at fixed evaluation counts.

Plans one iteration of a model for every workload seed with each variant
(a ranker evaluation count plus parameter overrides), in deterministic mode
so that a result depends only on the seed and the evaluation count, not on
the machine's speed. For every seed the best makespan over all variants is
the reference; each variant's line gives the mean and median gap to it and
how many seeds it got within 1 %.

usage: tools/bench/search_quality.py [--build build] [--model vlm-l]
           [--seeds 20] [--threads 2] [--manifest FILE]
           --variant NAME=EVALS[,ROLE.KEY=VALUE...] [--variant ...]

example (the late-acceptance walk against the plain one, and a long run):
  tools/bench/search_quality.py --variant default-600=600 \\
      --variant plain-600=600,ranker.late_acceptance=0 --variant default-4800=4800
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_variant(text):
    """NAME=EVALS[,ROLE.KEY=VALUE...] -> (name, evals, [params])."""
    name, sep, rest = text.partition("=")
    parts = rest.split(",") if sep else []
    if not name or not parts or not parts[0].isdigit() or int(parts[0]) < 1:
        raise argparse.ArgumentTypeError(
            "expected NAME=EVALS[,ROLE.KEY=VALUE...], found '%s'" % text)
    for p in parts[1:]:
        if "=" not in p or "." not in p.split("=")[0]:
            raise argparse.ArgumentTypeError(
                "variant '%s': expected ROLE.KEY=VALUE, found '%s'" % (name, p))
    return name, int(parts[0]), parts[1:]


def plan(args, seed, evals, params):
    cmd = [os.path.join(args.build, "bin", "loom"), "plan", "--manifest", args.manifest,
           "--model", args.model, "--iterations", "1", "--seed", str(seed), "--json", "--quiet",
           "--param", "ranker.max_evaluations=%d" % evals,
           "--param", "ranker.budget_ms=2000000000",
           "--param", "ranker.threads=%d" % args.threads]
    for p in params:
        cmd += ["--param", p]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        sys.exit("search_quality.py: seed %d: %s" % (seed, out.stderr.strip()))
    return json.loads(out.stdout)["makespan_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", default="vlm-l")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--manifest", default="examples/manifests/pipeweaver.json")
    ap.add_argument("--variant", type=parse_variant, action="append", required=True)
    args = ap.parse_args()
    if not os.access(os.path.join(ROOT, args.build, "bin", "loom"), os.X_OK):
        sys.exit("search_quality.py: %s/bin/loom not found; build first (make build)" % args.build)

    seeds = range(1, args.seeds + 1)
    ms = {}
    for name, evals, params in args.variant:
        ms[name] = [plan(args, s, evals, params) for s in seeds]
        print("search_quality.py: %s done" % name, file=sys.stderr)
    best = [min(ms[name][i] for name in ms) for i in range(len(seeds))]

    print("%s, %d workload seeds, %d threads; gap = makespan / best of all variants for the seed - 1"
          % (args.model, args.seeds, args.threads))
    print("%-24s %8s %14s %10s %12s %10s" % ("variant", "evals", "mean makespan", "mean gap",
                                            "median gap", "within 1%"))
    for name, evals, _ in args.variant:
        gaps = [(m / b - 1) * 100 for m, b in zip(ms[name], best)]
        print("%-24s %8d %11.1f ms %9.2f%% %11.2f%% %7d/%d" % (
            name, evals, statistics.mean(ms[name]), statistics.mean(gaps),
            statistics.median(gaps), sum(g <= 1.0 for g in gaps), len(gaps)))


if __name__ == "__main__":
    main()
