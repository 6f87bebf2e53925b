#!/usr/bin/env python3
"""dynamic_shapes.py - the slowdown of dynamic over static data that Loom
predicts for PipeWeaver's Table 1 (ViT 2B + LM 5B, TP 2 PP 4, Megatron-LM
split by parameters) when the dynamic data keeps everything the paper
publishes about it, for several shapes of what it does not publish.

Published: the computational budget is the same for both runs (Table 1:
12.7 and 12.8 PFLOPs an iteration), a packed sequence holds at most
floor(8192 / 169) = 48 images (section 8.1), and the largest packed sample
costs 4.15 times the compute of the smallest (section 1). Not published: how
the images spread over the sequences. Every shape here packs the static
row's images (34 sequences of 8192 tokens and 68 images an iteration, the
fidelity row pw-t1-vlm-static) into the same 34 sequences differently, so
each iteration has the static row's tokens, images and FLOPs:

  static       2 images in every sequence (the static row itself)
  uniform      0 to 4 images, 7 sequences of each count but one of 2
  spread       every way of spreading the 68 images over the 34 sequences
               with at most 17 in one (the most whose compute stays within
               section 1's 4.15) equally likely: the fidelity row
               pw-t1-vlm-dynamic's workload
  two-point K  68 // K sequences of K images, one of the rest, the others
               none (text only)

The sequences of an iteration are shuffled (seeded; the spread shape is
drawn as the fidelity row draws it, so its line reads the row's figures). Each shape is planned
with the rows' manifest (megatron-param-balanced at one virtual stage; its
memory tuner picks the cheapest recomputation that fits every iteration);
the script prints the largest over the smallest sequence's compute (summed
over its stages, priced without recomputation or a memory cap, as
packing_spread.py prices it), the mean iteration time over the static
shape's, and the MFU. Shapes whose spread passes 4.15 are marked: they
contradict section 1.

Usage: tools/bench/dynamic_shapes.py [--build DIR] [--iterations N]
           [--seed S] [--two-point "4 6 8 12 17 34"]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

from fidelity import ROOT, plan_paths, spread_counts
from packing_spread import microbatch_work

MODEL = os.path.join(ROOT, "tests/fidelity/models/vit2b-lm5b-patches.json")
SEQUENCES = 34          # the static row's microbatches
IMAGES = 68             # and its images an iteration (2 a sequence)
SEQUENCE_TOKENS = 8192  # section 8.1
IMAGE_TOKENS = 169      # section 8.1: what one image takes of a sequence
SPREAD_MOST = 17        # the row's most images in a sequence
LAYOUT = "tp=2,pp=4,dp=1,vpp=1,mb=%d" % SEQUENCES  # the rows' TP 2 PP 4
PUBLISHED_SPREAD = 4.15  # section 1
PUBLISHED_SLOWDOWN = 6.789 / 4.567  # Table 1


def counts(shape, k, rng):
    """The image counts of one iteration's sequences for `shape`."""
    if shape == "spread":
        return spread_counts(rng, IMAGES, SEQUENCES, SPREAD_MOST)
    if shape == "static":
        return [IMAGES // SEQUENCES] * SEQUENCES
    if shape == "uniform":
        c = [n for n in range(5) for _ in range(7)]
        c.remove(2)
        return c
    heavy, rest = divmod(IMAGES, k)
    c = [k] * heavy + ([rest] if rest else [])
    return c + [0] * (SEQUENCES - len(c))


def write_workload(path, shape, k, iterations, seed):
    """Writes `iterations` shuffled iterations of the shape as JSON Lines;
    returns the most images a sequence holds."""
    rng = random.Random(seed)
    most = 0
    with open(path, "w") as f:
        for it in range(iterations):
            c = counts(shape, k, rng)
            if shape != "spread":  # drawn as the fidelity row draws it
                rng.shuffle(c)
            most = max(most, max(c))
            samples = [{"text_tokens": SEQUENCE_TOKENS - IMAGE_TOKENS * n, "images": n,
                        "microbatch": m} for m, n in enumerate(c)]
            f.write(json.dumps({"iteration": it, "samples": samples}) + "\n")
    return most


def plan(loom, wl, out, iterations):
    """Plans wl as the fidelity rows do (megatron-param-balanced at one
    virtual stage); returns every iteration's plan.json, parsed."""
    cmd = [loom, "plan", "--manifest",
           os.path.join(ROOT, "examples/manifests/megatron-param-balanced.json"),
           "--model", MODEL, "--cluster", "h800", "--parallel", LAYOUT,
           "--workload", wl, "--iterations", str(iterations), "--out", out, "--quiet",
           "--param", "partitioner.vpp_sweep=false"]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        sys.exit("dynamic_shapes.py: loom plan exited with %d (its message above)" % r.returncode)
    plans = []
    for path in plan_paths(out, iterations):
        with open(path) as f:
            plans.append(json.load(f))
    return plans


def measure(loom, shape, k, args, tmp):
    """(most images in a sequence, spread, mean iteration ms, MFU) of one
    shape."""
    name = shape if shape != "two-point" else "two-point-%d" % k
    wl = os.path.join(tmp, name + ".jsonl")
    most = write_workload(wl, shape, k, args.iterations, args.seed)
    plans = plan(loom, wl, os.path.join(tmp, name), args.iterations)
    total_ms = sum(p["metrics"]["makespan_ms"] for p in plans)
    mfu = sum(p["metrics"]["mfu"] * p["metrics"]["makespan_ms"] for p in plans) / total_ms
    for p in plans:
        if not p["metrics"].get("feasible", True):
            sys.exit("dynamic_shapes.py: %s: the plan exceeds the memory cap" % name)
    work = microbatch_work(loom, wl, os.path.join(tmp, name + "-bare"), args.iterations,
                           MODEL, "h800", LAYOUT, name)
    return most, max(work) / min(work), total_ms / len(plans), mfu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--two-point", default="4 6 8 12 17 34")
    args = ap.parse_args()
    loom = os.path.join(args.build, "bin", "loom")
    if not os.path.exists(loom):
        sys.exit("dynamic_shapes.py: %s not found; build first (make build)" % loom)
    ks = args.two_point.split()
    if not ks or not all(k.isdigit() and 3 <= int(k) <= 48 for k in ks):
        sys.exit("dynamic_shapes.py: --two-point: expected image counts 3..48, found '%s'"
                 % args.two_point)
    if not 1 <= args.iterations <= 100:
        sys.exit("dynamic_shapes.py: --iterations: expected 1..100, found %d" % args.iterations)
    shapes = [("static", 0), ("uniform", 0), ("spread", 0)] + \
        [("two-point", int(k)) for k in ks]
    print("shape          most_images  spread  slowdown    mfu")
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for shape, k in shapes:
            most, spread, ms, mfu = measure(loom, shape, k, args, tmp)
            base = ms if base is None else base
            name = shape if shape != "two-point" else "two-point %d" % k
            mark = "  spread above section 1's %.2f" % PUBLISHED_SPREAD \
                if spread > PUBLISHED_SPREAD else ""
            print("%-13s  %11d  %6.2f  %8.3f  %.4f%s"
                  % (name, most, spread, ms / base, mfu, mark))
    print("(slowdown: mean iteration time over the static shape's; PipeWeaver Table 1: %.3f)"
          % PUBLISHED_SLOWDOWN)


if __name__ == "__main__":
    main()
