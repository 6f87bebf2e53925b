#!/usr/bin/env python3
"""Fidelity table: published training figures against Loom's predictions.

Reads tests/fidelity/fidelity.json, plans every row with `loom plan` (one
iteration, the row's model, cluster preset, parallel config, manifest and a
workload written from the row), and prints

    row | metric | published | predicted | error % | tolerance % | ok

Every row uses the shipped cluster presets and cost-model defaults: there is
no per-row tuning. A row's `params` state its run's setup only (the TF32
Oobleck run has no fused attention kernel); `average_over` averages the
figure over a param's values (the Oobleck run's node counts). --check exits 1 when a row is outside its tolerance.
--cluster PRESET=FILE plans the rows of a cluster preset with a cluster
file instead (e.g. h800=H.json: the H800 rows under other factors).
Usage: tools/bench/fidelity.py [--build build] [--table FILE] [--check]
           [--cluster PRESET=FILE ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def workload_line(w):
    """One iteration's JSON line: `microbatches` microbatches, each holding
    the samples of `samples` (or `per_microbatch` copies of `sample`)."""
    per_mb = w.get("samples") or [w["sample"]] * w.get("per_microbatch", 1)
    samples = []
    for mb in range(w["microbatches"]):
        for one in per_mb:
            s = dict(one)
            s["microbatch"] = mb
            samples.append(s)
    return json.dumps({"iteration": 0, "samples": samples})


def plan(loom, row, tmp, model_path):
    """Plans the row once; returns plan.json's metrics."""
    wl = os.path.join(tmp, "workload.jsonl")
    with open(wl, "w") as f:
        f.write(workload_line(row["workload"]) + "\n")
    out = os.path.join(tmp, "out")
    cluster = row["cluster"]
    if os.path.exists(os.path.join(ROOT, cluster)):
        cluster = os.path.join(ROOT, cluster)  # else a preset name
    parallel = row["parallel"]
    if parallel.endswith(".json"):
        parallel = os.path.join(ROOT, parallel)  # a parallel config file
    cmd = [loom, "plan", "--manifest", os.path.join(ROOT, row["manifest"]),
           "--model", model_path, "--cluster", cluster,
           "--parallel", parallel, "--workload", wl, "--iterations", "1",
           "--quiet", "--out", out]
    for p in row.get("params", []):
        cmd += ["--param", p]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "plan.json")) as f:
        return json.load(f)["metrics"]


def with_layers(path, tmp, extra):
    """A copy of a one-module model file with `extra` more layers."""
    with open(path) as f:
        m = json.load(f)
    m["modules"][-1]["layers"]["count"] += extra
    out = os.path.join(tmp, "model-%d.json" % extra)
    with open(out, "w") as f:
        json.dump(m, f)
    return out


def predict(loom, row):
    """The row's predicted figure (see docs/benchmarks.md, Fidelity); with
    `average_over` ({"params": [KEY, ...], "values": [V, ...]}), the mean
    of the figure over the runs that set every KEY to each V in turn."""
    avg = row.get("average_over")
    if not avg:
        return predict_one(loom, row)
    figures = []
    for v in avg["values"]:
        one = dict(row)
        one["params"] = row.get("params", []) + ["%s=%s" % (k, v) for k in avg["params"]]
        figures.append(predict_one(loom, one))
    return sum(figures) / len(figures)


def predict_one(loom, row):
    """The row's figure from one plan (two for a layer or a ratio)."""
    model = row["model"]
    if os.path.exists(os.path.join(ROOT, model)):
        model = os.path.join(ROOT, model)  # else a preset name
    metric = row["metric"]
    with tempfile.TemporaryDirectory() as tmp:
        if metric == "layer_ms":
            # one layer's forward + backward: rank 0's stage time with one
            # layer more, less that without (the first layer of a module
            # pays no input gradient, every later one does)
            a = plan(loom, row, tmp, with_layers(model, tmp, 0))
            b = plan(loom, row, tmp, with_layers(model, tmp, 1))
            return b["breakdown"]["compute_ms"][0] - a["breakdown"]["compute_ms"][0]
        m = plan(loom, row, tmp, model)
        if metric == "mfu_ratio":
            base = dict(row)
            base.update(row["baseline"])
            b = plan(loom, base, tmp, model)
            return m["mfu"] / b["mfu"]
        if metric == "samples_per_s":
            w = row["workload"]
            n = w["microbatches"] * len(w.get("samples") or [w["sample"]] * w.get("per_microbatch", 1))
            return n / (m["makespan_ms"] / 1e3)
        if metric == "speedup":
            # the baseline's iteration time over the row's: the row with
            # the baseline's keys (manifest, parallel, ...) replaced
            base = dict(row)
            base.update(row["baseline"])
            b = plan(loom, base, tmp, model)
            return b["makespan_ms"] / m["makespan_ms"]
        if metric == "time_s":
            return m["makespan_ms"] / 1e3
        if metric == "mfu":
            return m["mfu"]
        raise SystemExit("fidelity: row %s: unknown metric %r" % (row["id"], metric))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--table", default=os.path.join(ROOT, "tests", "fidelity", "fidelity.json"))
    ap.add_argument("--check", action="store_true", help="exit 1 when a row is out of tolerance")
    ap.add_argument("--cluster", action="append", default=[], metavar="PRESET=FILE",
                    help="plan the rows of cluster PRESET with FILE (repeatable)")
    args = ap.parse_args()
    loom = os.path.join(args.build, "bin", "loom")
    with open(args.table) as f:
        rows = json.load(f)["rows"]
    for spec in args.cluster:
        preset, _, path = spec.partition("=")
        if not path:
            raise SystemExit("fidelity: --cluster: expected PRESET=FILE, found %r" % spec)
        for row in rows:
            if row["cluster"] == preset:
                row["cluster"] = os.path.abspath(path)
    bad = 0
    print("| row | source | metric | published | predicted | error % | tolerance % | ok |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        got = predict(loom, row)
        pub = row["published"]
        err = (got - pub) / pub * 100.0
        ok = abs(err) <= row["tolerance"] * 100.0
        bad += not ok
        print("| %s | %s %s | %s | %.4g | %.4g | %+.1f | %.0f | %s |" %
              (row["id"], row["source"], row["section"], row["metric"], pub, got, err,
               row["tolerance"] * 100.0, "yes" if ok else "NO"))
    if args.check and bad:
        print("fidelity: %d row(s) outside their tolerance" % bad, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
