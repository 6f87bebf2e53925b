#!/usr/bin/env python3
"""hetero_bench.py - the best single-layout plan against the best
per-module plan at equal GPU counts (docs/benchmarks.md, "Per-module
layouts").

For every VLM preset and DistTrain MLLM preset, with the model's own
parallel config (its GPUs N = tp * cp * pp * dp) and one seeded workload
file shared by all runs:

  single      hetero.json with partitioner.single_layout=true: every module
              on one layout, TP in {1,2,4,8} and PP searched within N GPUs
  per-module  hetero.json: each non-backbone module colocated at its own TP
              or on its own GPUs with its own TP, PP and DP, within N GPUs
  megatron    megatron-1f1b.json on the model's own layout (reference)

Both hetero runs share the ranker, interleaver and memory tuner, so the
difference is the layout alone. Prints one Markdown row per model: mean
predicted iteration time of each, the per-module plan's speedup over the
single layout, and the layouts chosen (from plan.json "layouts").

usage: tools/bench/hetero_bench.py [--build DIR] [--iterations N] [--seed S]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

MODELS = ["vlm-s", "vlm-m", "vlm-l", "vlm-xl", "disttrain-mllm-9b", "disttrain-mllm-15b",
          "disttrain-mllm-72b"]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit("hetero_bench: %s failed (%d): %s" % (" ".join(cmd), p.returncode,
                                                       p.stderr.strip()[-400:]))
    return p


def plan(loom, src, model, workload, out, manifest, extra):
    run([loom, "plan", "--manifest", os.path.join(src, "examples/manifests", manifest),
         "--model", model, "--workload", workload, "--quiet", "--json", "--out", out] + extra)
    times, layout = [], ""
    for it in sorted(os.listdir(out)):
        path = os.path.join(out, it, "plan.json") if os.path.isdir(os.path.join(out, it)) \
            else os.path.join(out, "plan.json")
        if not os.path.exists(path):
            continue
        d = json.load(open(path))
        m = d["metrics"]
        times.append(m["makespan_ms"] if m["feasible"] else float("inf"))
        if "layouts" in d and not layout:
            layout = " ".join("%s:t%dp%dd%d%s" % (l["module"], l["tp"], l["pp"], l["dp"],
                                                  "D" if l["placement"] == "disjoint" else "")
                              for l in d["layouts"])
        if path == os.path.join(out, "plan.json"):
            break
    return (sum(times) / len(times) if times else float("inf")), layout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    loom = os.path.join(args.build, "bin", "loom")
    if not os.access(loom, os.X_OK):
        sys.exit("hetero_bench: no loom binary in %s/bin (build first)" % args.build)
    print("| model | GPUs | megatron ms | single-layout ms | per-module ms | speedup | "
          "single layout | per-module layout |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="loom-hetero-") as tmp:
        for model in MODELS:
            spec = os.path.join(src, "examples/models", model + ".json")
            par = json.load(open(spec))["parallel"]
            gpus = par["tp"] * par["pp"] * par.get("dp", 1) * par.get("cp", 1)
            mbs = par.get("microbatches", 4 * par["pp"])
            family = json.load(open(spec)).get("workload_family", "interleaved")
            work = os.path.join(tmp, model + ".jsonl")
            with open(work, "w") as f:
                f.write(run([loom, "workload", "generate", "--family", family, "--iterations",
                             str(args.iterations), "--microbatches", str(mbs), "--seed",
                             str(args.seed)]).stdout)
            meg, _ = plan(loom, src, spec, work, os.path.join(tmp, model + "-meg"),
                          "megatron-1f1b.json", [])
            one, lay1 = plan(loom, src, spec, work, os.path.join(tmp, model + "-one"),
                             "hetero.json", ["--param", "partitioner.single_layout=true"])
            per, layn = plan(loom, src, spec, work, os.path.join(tmp, model + "-per"),
                             "hetero.json", [])
            speed = one / per if per > 0 and per != float("inf") else float("nan")
            fmt = lambda v: "INFEASIBLE" if v == float("inf") else "%.1f" % v
            print("| %s | %d | %s | %s | %s | %.3f | %s | %s |" % (
                model, gpus, fmt(meg), fmt(one), fmt(per), speed, lay1, layn))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
