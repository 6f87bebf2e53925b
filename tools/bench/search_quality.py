#!/usr/bin/env python3
"""search_quality.py - compares ranker settings at fixed evaluation counts.

Plans one iteration of a model for every workload seed with each variant
(a ranker evaluation count plus parameter overrides), in deterministic mode
so that a result depends only on the seed and the evaluation count, not on
the machine's speed. For every seed the best makespan over all variants is
the reference; each variant's line gives the mean and median gap to it and
how many seeds it got within 1 %.

usage: tools/bench/search_quality.py [--build build] [--model vlm-l]
           [--seeds 20] [--search-seeds "S ..."] [--threads 2] [--manifest FILE]
           --variant NAME=EVALS[,ROLE.KEY=VALUE...][@BUILD] [--variant ...]

A variant ending in @BUILD runs that build tree's loom instead of --build's,
so two builds compare on the same workloads. --search-seeds plans every
workload seed once per search seed (ranker.seed), each run compared with the
best of all variants for its workload and search seed.

example (the late-acceptance walk against the plain one, and a long run):
  tools/bench/search_quality.py --variant default-600=600 \\
      --variant plain-600=600,ranker.late_acceptance=0 --variant default-4800=4800
example (this build against an older one, 10 workloads x 3 search seeds):
  tools/bench/search_quality.py --seeds 10 --search-seeds "101 102 103" \\
      --variant new-700=700 --variant old-700=700@OLD/build
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_variant(text):
    """NAME=EVALS[,ROLE.KEY=VALUE...][@BUILD] -> (name, evals, [params], build)."""
    text, at, build = text.partition("@")
    if at and not build:
        raise argparse.ArgumentTypeError("variant '%s': expected a build tree after '@'" % text)
    name, sep, rest = text.partition("=")
    parts = rest.split(",") if sep else []
    if not name or not parts or not parts[0].isdigit() or int(parts[0]) < 1:
        raise argparse.ArgumentTypeError(
            "expected NAME=EVALS[,ROLE.KEY=VALUE...], found '%s'" % text)
    for p in parts[1:]:
        if "=" not in p or "." not in p.split("=")[0]:
            raise argparse.ArgumentTypeError(
                "variant '%s': expected ROLE.KEY=VALUE, found '%s'" % (name, p))
    return name, int(parts[0]), parts[1:], build or None


def plan(args, build, seed, search_seed, evals, params):
    cmd = [os.path.join(build, "bin", "loom"), "plan", "--manifest", args.manifest,
           "--model", args.model, "--iterations", "1", "--seed", str(seed), "--json", "--quiet",
           "--param", "ranker.max_evaluations=%d" % evals,
           "--param", "ranker.budget_ms=2000000000",
           "--param", "ranker.threads=%d" % args.threads]
    if search_seed is not None:
        cmd += ["--param", "ranker.seed=%d" % search_seed]
    for p in params:
        cmd += ["--param", p]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        sys.exit("search_quality.py: %s, seed %d: %s" % (build, seed, out.stderr.strip()))
    return json.loads(out.stdout)["makespan_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", default="vlm-l")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--search-seeds", default="",
                    help="ranker seeds, each run on every workload seed (default: the run's seed)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--manifest", default="examples/manifests/pipeweaver.json")
    ap.add_argument("--variant", type=parse_variant, action="append", required=True)
    args = ap.parse_args()
    try:
        search_seeds = [int(x) for x in args.search_seeds.split()] or [None]
    except ValueError:
        sys.exit("search_quality.py: --search-seeds: expected integers, found '%s'"
                 % args.search_seeds)
    for build in {v[3] or args.build for v in args.variant}:
        if not os.access(os.path.join(ROOT, build, "bin", "loom"), os.X_OK):
            sys.exit("search_quality.py: %s/bin/loom not found; build first (make build)" % build)

    runs = [(w, s) for s in search_seeds for w in range(1, args.seeds + 1)]
    ms = {}
    for name, evals, params, build in args.variant:
        ms[name] = [plan(args, build or args.build, w, s, evals, params) for w, s in runs]
        print("search_quality.py: %s done" % name, file=sys.stderr)
    best = [min(ms[name][i] for name in ms) for i in range(len(runs))]

    print("%s, %d workload seeds x %d search seeds, %d threads; gap = makespan / best of all "
          "variants for the run - 1" % (args.model, args.seeds, len(search_seeds), args.threads))
    print("%-24s %8s %14s %10s %12s %10s" % ("variant", "evals", "mean makespan", "mean gap",
                                            "median gap", "within 1%"))
    for name, evals, _, _ in args.variant:
        gaps = [(m / b - 1) * 100 for m, b in zip(ms[name], best)]
        print("%-24s %8d %11.1f ms %9.2f%% %11.2f%% %7d/%d" % (
            name, evals, statistics.mean(ms[name]), statistics.mean(gaps),
            statistics.median(gaps), sum(g <= 1.0 for g in gaps), len(gaps)))


if __name__ == "__main__":
    main()
