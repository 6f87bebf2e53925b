#!/usr/bin/env python3
"""plan_quality.py - simulated iteration time of planner manifests on the
PipeWeaver Table 4 models (PipeWeaver section 8.1), plus the Table 5
ablation on one model.

For every model it plans the same generated dynamic workload (fixed seed,
the model's own workload family) with each manifest through `loom plan
--json`, and prints the mean iteration time, the speed-up of the first
manifest over each other one, and the mean bubble ratio. megatron-tuned is
the honest baseline (the fastest memory-feasible Megatron-LM plan);
megatron-param-balanced is the paper's own baseline (PipeWeaver section 8.1:
interleaved 1F1B, chunks of about equal parameters) at its best virtual-stage
count and recomputation setting; megatron-1f1b is the naive one (uniform
split, vpp 1) and labelled so. A
planner whose plan exceeds the memory cap in some iteration is printed as
INFEASIBLE with no time and no gain.

usage: tools/bench/plan_quality.py [--build build] [--iterations 20]
           [--models vlm-s,vlm-m,vlm-l,t2v-s,t2v-l] [--seed 7]
           [--budget-ms 500] [--ablation vlm-s] [--no-ablation]
           [--param ROLE.KEY=VALUE ...] [--packing-window N]
           [--budget-iterations X]

--budget-iterations X also ends every MCTS search after X of its reference
plan's predicted iterations (ranker.budget_iterations; PipeWeaver section 1:
the search overlaps one training iteration); --budget-ms still caps it.
--packing-window packs the generated iterations first-fit over N samples
drawn ahead (loom plan --packing-window; default next-fit). --param is passed to every planner (e.g. cost_model.sequence_parallel=false
for plain tensor parallelism in every manifest's cost model).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def plan(loom, manifest, model, iterations, seed, extra):
    cmd = [loom, "plan", "--manifest", manifest, "--model", model,
           "--iterations", str(iterations), "--seed", str(seed), "--json", "--quiet"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1:] or ["exit %d" % out.returncode]
    return json.loads(out.stdout), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--models", default="vlm-s,vlm-m,vlm-l,t2v-s,t2v-l")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--budget-ms", type=int, default=500)
    ap.add_argument("--ablation", default="vlm-s")
    ap.add_argument("--no-ablation", action="store_true")
    ap.add_argument("--param", action="append", default=[], metavar="ROLE.KEY=VALUE",
                    help="a loom plan --param for every planner (repeatable)")
    ap.add_argument("--packing-window", type=int, default=0, metavar="N",
                    help="pack the generated iterations first-fit over N samples drawn ahead")
    ap.add_argument("--budget-iterations", type=float, default=0, metavar="X",
                    help="end each MCTS search after X reference iterations (0: budget-ms alone)")
    a = ap.parse_args()
    search = ["--param", "ranker.budget_ms=%d" % a.budget_ms]
    if a.budget_iterations > 0:
        search += ["--param", "ranker.budget_iterations=%g" % a.budget_iterations]
    common = [x for p in a.param for x in ("--param", p)]
    if a.packing_window > 0:
        common += ["--packing-window", str(a.packing_window)]
    loom = os.path.join(ROOT, a.build, "bin", "loom")
    mdir = os.path.join(ROOT, "examples", "manifests")
    planners = [("pipeweaver", search),
                ("megatron-tuned", []), ("megatron-param-balanced", []), ("megatron-1f1b", []),
                ("megatron-balanced", []), ("optimus", [])]
    planners = [(n, x) for n, x in planners if os.path.exists(os.path.join(mdir, n + ".json"))]

    print("Mean simulated iteration time over %d generated iterations (seed %d), H800 presets"
          % (a.iterations, a.seed))
    label = {"megatron-1f1b": "1f1b (naive)", "megatron-param-balanced": "param-balanced"}
    head = "%-7s" % "model" + "".join(" %16s" % label.get(n, n) for n, _ in planners) + \
        "".join(" %18s" % ("gain vs " + label.get(n, n)) for n, _ in planners[1:]) + \
        " %14s" % "pw bubble"
    print(head)
    for model in a.models.split(","):
        res = {}
        for name, extra in planners:
            r, e = plan(loom, os.path.join(mdir, name + ".json"), model, a.iterations, a.seed,
                        extra + common)
            res[name] = r if r else e
        row = "%-7s" % model
        for name, _ in planners:
            r = res[name]
            if isinstance(r, dict) and not r.get("feasible", True):
                row += " %16s" % "INFEASIBLE"
            else:
                row += " %16s" % ("%.1f ms" % r["mean_iteration_ms"] if isinstance(r, dict)
                                  else "failed")
        pw = res[planners[0][0]]
        for name, _ in planners[1:]:
            r = res[name]
            ok = isinstance(r, dict) and isinstance(pw, dict) and r.get("feasible", True) and \
                pw.get("feasible", True)
            if ok:
                row += " %17.1f%%" % (100.0 * (r["mean_iteration_ms"] / pw["mean_iteration_ms"] - 1))
            else:
                row += " %18s" % "n/a"
        row += " %13.2f%%" % (100 * pw["bubble_ratio"]) if isinstance(pw, dict) else " %14s" % "n/a"
        print(row)
        for name, _ in planners:
            if not isinstance(res[name], dict):
                print("    %s on %s failed: %s" % (name, model, " ".join(res[name])))
    print("(gain = mean iteration time of the other planner / PipeWeaver's - 1: the throughput gain;"
          " n/a next to an INFEASIBLE plan, which exceeds the memory cap)")

    if a.no_ablation:
        return 0
    m = a.ablation
    steps = [
        ("Megatron-LM (uniform + 1F1B)", os.path.join(mdir, "megatron-1f1b.json"), []),
        ("+ modality-aware partitioner", os.path.join(mdir, "pipeweaver.json"),
         ["--use", "ranker=fifo", "--use", "interleaver=gpipe", "--use", "memory_tuner=none"]),
        ("+ dual-queue interleaving", os.path.join(mdir, "pipeweaver.json"),
         ["--use", "ranker=fifo", "--use", "memory_tuner=none"]),
        ("+ MCTS ranking", os.path.join(mdir, "pipeweaver.json"),
         ["--use", "memory_tuner=none"] + search),
        ("+ memory tuning (pipeweaver)", os.path.join(mdir, "pipeweaver.json"), search),
    ]
    print("\nAblation on %s (PipeWeaver Table 5 structure), %d iterations" % (m, a.iterations))
    print("%-32s %14s %10s %10s %10s" % ("technique", "iter time", "gain", "bubble", "over cap"))
    base = None
    for label, manifest, extra in steps:
        r, e = plan(loom, manifest, m, a.iterations, a.seed, extra + common)
        if not r:
            print("%-32s failed: %s" % (label, " ".join(e)))
            continue
        t = r["mean_iteration_ms"]
        base = base or t
        over = sum(1 for it in r["iterations"] if max(it["peak_mem_bytes"]) > 80 * 2**30)
        print("%-32s %11.1f ms %9.1f%% %9.2f%% %7d/%d" % (label, t, 100 * (base / t - 1),
                                                      100 * r["bubble_ratio"], over, a.iterations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
