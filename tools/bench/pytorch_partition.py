#!/usr/bin/env python3
"""pytorch_partition.py - Loom's layer splits against PyTorch's pipeline
auto-partitioner, both priced by Loom's simulator.

The auto-partitioner (pytorch/pytorch PR #179212, from torchtitan PR #2113)
is not in a PyTorch release, so this script imports it from a file the user
supplies (--partition-file). It is fed the per-layer forward and backward
times a profiler would give it: the chain of issue 35 from its layer table,
VLM-L from Loom's own roofline (one plan with one layer per position, each
layer's stage times averaged over the iteration's microbatches). Its split
is then planned by Loom through `uniform` with `layers_per_position`, beside
`balanced-dp`'s min-max split and its simulated refinement, under the
schedule it was chosen for:

  PyTorch 1F1B                       Loom 1f1b, vpp 1
  PyTorch Interleaved1F1B, v = 2     Loom interleaved-1f1b, vpp 2
  PyTorch InterleavedZeroBubble, v = 2  Loom zero-bubble, vpp 2

Prints one Markdown table of makespans (ms) and the auto-partitioner's own
predicted times (its simulator, compute only, in the same ms).

Usage: tools/bench/pytorch_partition.py --partition-file FILE
         [--build DIR] [--budget N] [--models chain,vlm-l]
"""
import argparse
import csv
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

CHAIN = "tools/bench/chain"
SCHEDULES = [  # (PyTorch schedule, v, Loom interleaver)
    ("1F1B", 1, "1f1b"),
    ("Interleaved1F1B", 2, "interleaved-1f1b"),
    ("InterleavedZeroBubble", 2, "zero-bubble"),
]
NS = 1e6  # the partitioner takes integers: times in ns


def fail(msg):
    print(f"pytorch_partition.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load_partitioner(path):
    """Imports the auto-partitioner module from `path`."""
    if not os.path.isfile(path):
        fail(f"{path}: no such file (the auto-partitioner's _partition.py)")
    sys.dont_write_bytecode = True  # leave no __pycache__ beside the user's file
    spec = importlib.util.spec_from_file_location("pt_partition", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # the user's file: report, do not trace
        fail(f"{path}: cannot import: {e}")
    if not hasattr(mod, "optimize_partition_model_layers"):
        fail(f"{path}: no optimize_partition_model_layers(); expected the auto-partitioner")
    return mod


def model_args(model):
    """`loom plan` arguments of the model, as tools/bench/partition_refine.sh plans it."""
    if model == "chain":
        return ["--model", f"{CHAIN}/model.json", "--cluster", f"{CHAIN}/cluster.json",
                "--workload", f"{CHAIN}/workload.jsonl", "--use", "cost_model=table",
                "--param", f"cost_model.file={CHAIN}/layers.csv"]
    return ["--model", model, "--iterations", "1"]


def loom(build, args, out=None):
    """Runs `loom plan` with args; returns its --json metrics."""
    cmd = [os.path.join(build, "bin", "loom"), "plan"] + args + ["--json", "--quiet"]
    if out:
        cmd += ["--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)} failed:\n{r.stderr.strip()}")
    return json.loads(r.stdout)


def chain_costs():
    """Per-layer (forward, backward) ms of the chain: its layer table by
    module, in model order."""
    per_module = {}
    with open(f"{CHAIN}/layers.csv") as f:
        for row in csv.DictReader(f):
            per_module[row["module"]] = (float(row["forward_ms"]),
                                         float(row["input_grad_ms"]) + float(row["weight_grad_ms"]))
    with open(f"{CHAIN}/model.json") as f:
        model = json.load(f)
    costs = []
    for m in model["modules"]:
        costs += [per_module[m["name"]]] * m["layers"]["count"]
    return costs


def planned_costs(build, model, pp):
    """Per-layer (forward, backward) ms of a preset: a plan with one layer per
    position (uniform split, pp x L/pp positions, no memory cap), each
    position's F and B stage times averaged over the microbatches."""
    with open(f"examples/models/{model}.json") as f:
        n_layers = sum(m["layers"]["count"] for m in json.load(f)["modules"])
    if n_layers % pp:
        fail(f"{model}: {n_layers} layers do not fill pp {pp} evenly")
    with tempfile.TemporaryDirectory() as tmp:
        loom(build, model_args(model) + ["--parallel", f"pp={pp},vpp={n_layers // pp}",
                                         "--use", "partitioner=uniform", "--use",
                                         "interleaver=interleaved-1f1b", "--memory-cap", "1e15"],
             tmp)
        with open(os.path.join(tmp, "plan.json")) as f:
            stages = json.load(f)["stages"]
    sums = [[0.0, 0.0, 0] for _ in range(n_layers)]
    for s in stages:
        t = s["end_ms"] - s["start_ms"]
        if s["kind"] == "F":
            sums[s["position"]][0] += t
            sums[s["position"]][2] += 1
        else:
            sums[s["position"]][1] += t
    return [(f / n, b / n) for f, b, n in sums]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partition-file", required=True,
                    help="the auto-partitioner: torch/distributed/pipelining/_partition.py of "
                         "PR #179212, or torchtitan's experiments/autopartition/infra/_partition.py")
    ap.add_argument("--build", default="build")
    ap.add_argument("--budget", type=int, default=64,
                    help="balanced-dp's refine_evaluations (default 64)")
    ap.add_argument("--models", default="chain,vlm-l")
    a = ap.parse_args()
    pt = load_partitioner(a.partition_file)
    print("| model | schedule | PyTorch min-max | PyTorch refined | balanced-dp min-max "
          f"| balanced-dp refined ({a.budget}) | PyTorch's own prediction (min-max / refined) "
          "| PyTorch split |")
    print("|---|---|---:|---:|---:|---:|---|---|")
    for model in a.models.split(","):
        args = model_args(model)
        if model == "chain":
            costs, pp, mbs = chain_costs(), 4, 8
        else:
            pp, mbs = 8, 32
            costs = planned_costs(a.build, model, pp)
        fwd = [round(f * NS) for f, _ in costs]
        bwd = [round(b * NS) for _, b in costs]
        for kind, v, inter in SCHEDULES:
            r = pt.optimize_partition_model_layers(kind, fwd, bwd, 0, 1, 1, pp, mbs,
                                                   virtual_stages_per_rank=v)
            base = [len(p) for p in r.base_plan.stage_partitions]
            best = [len(p) for p in r.best_plan.stage_partitions]
            sched = args + ["--parallel", f"pp={pp},vpp={v},mb={mbs}",
                            "--use", f"interleaver={inter}"]
            given = lambda sizes: loom(a.build, sched + [
                "--use", "partitioner=uniform", "--param",
                "partitioner.layers_per_position=" + ",".join(map(str, sizes))])["makespan_ms"]
            dp = lambda n: loom(a.build, sched + [
                "--use", "partitioner=balanced-dp", "--param",
                f"partitioner.refine_evaluations={n}"])["makespan_ms"]
            label = kind if v == 1 else f"{kind} v={v}"
            print(f"| {model} | {label} | {given(base):.1f} | {given(best):.1f} | {dp(0):.1f} "
                  f"| {dp(a.budget):.1f} | {r.base_iteration_time / NS:.1f} / "
                  f"{r.best_iteration_time / NS:.1f} | {','.join(map(str, best))} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
