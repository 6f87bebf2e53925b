#!/usr/bin/env python3
"""Fidelity table: published training figures against Loom's predictions.

Reads tests/fidelity/fidelity.json, plans every row with `loom plan` (one
iteration, the row's model, cluster preset, parallel config, manifest and a
workload written from the row), and prints

    row | source | metric | published | predicted | error % | sample | status

One tolerance, 10 %, holds for every row. A row whose metric is a ratio of
two predictions (speedup, mfu_ratio, time_ratio) is derived: printed, not
counted. A counted row is in-sample when an efficiency factor of its
cluster was fitted on it (`in_sample`), else held out; the two are
reported apart. A row outside 10 % is a miss and stays in the table with
its `cause`. A row whose plan (or its baseline's) exceeds the memory cap
is infeasible: it gets no figure and counts as a miss. The script prints
"N of M within 10 %" and exits 1 on a miss;
with --known-miss ID (repeatable) it exits 1 only when the misses are not
exactly those rows, so a new miss and a fixed one both show.

A row's workload is either written from the row (`microbatches` of the
`samples` or of `per_microbatch` copies of `sample`), drawn by Loom's own
generator (`family`, `iterations`, `microbatches`, `seed`, and optionally
`sequence_tokens` and `tokens_per_image`: `loom workload generate`; with
`global_batch` B, `loom plan --generate` draws the whole batch of the dp
replicas and plans the heaviest, the step's MFU counting every replica's
FLOPs, and `seed` is the search's too), or
spread (`spread`: `images` images over the `microbatches` sequences of
every iteration, at most `most_images` in one, every way of spreading
them alike likely; with `iterations`, `seed`, `sequence_tokens` and
`tokens_per_image`); a drawn workload is planned iteration by iteration, and the
row's figure is taken over all of them (model FLOPs over GPU time for `mfu`,
the mean iteration for `time_s`).
Every row uses the shipped cluster presets and cost-model defaults: there is
no per-row tuning. A row's `params` state its run's setup only (the TF32
Oobleck run's 4-byte elements and unfused attention, the one virtual stage
of PipeWeaver's Megatron-LM baseline, torchtitan's layer split and float8,
the settings of NVIDIA's Megatron-Bridge and NeMo recipes);
`average_over` averages the
figure over a param's values (the Oobleck run's node counts).
--cluster PRESET=FILE plans the rows of a cluster preset with a cluster
file instead (e.g. h800=H.json: the H800 rows under other factors).
--seeds N also plans every drawn-workload row with seeds 1..N and
prints the spread of its figure (min, median, max), so a row's reading can
be told from its seed's luck.
--param ROLE.KEY=VALUE plans every selected row, and its baseline, with
that param in place of the row's own setting of ROLE.KEY (repeatable):
what a row reads under another setting, e.g. tp_comm_overlap off.
Usage: tools/bench/fidelity.py [--build build] [--table FILE] [--known-miss ID ...]
           [--only ID ...] [--cluster PRESET=FILE ...] [--param ROLE.KEY=VALUE ...]
           [--seeds N]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOLERANCE = 0.10  # every row's
DERIVED = ("speedup", "mfu_ratio", "time_ratio")  # ratios of two predictions


class Infeasible(Exception):
    """A plan of the row exceeds the memory cap: no prediction, a miss."""


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


def spread_counts(rng, images, sequences, most):
    """The image counts of `sequences` sequences holding `images` images,
    at most `most` in one, every such composition equally likely: with no
    other constraint known, the spread that assumes least (maximum
    entropy). Exact, with no redraws: ways[k][n] counts the compositions
    of n images into k sequences, and each sequence in turn takes j images
    with probability ways[k - 1][n - j] / ways[k][n]."""
    if sequences < 1 or images < 0 or most < 0 or images > sequences * most:
        raise SystemExit("fidelity: %d images do not fit %d sequences of at most %d"
                         % (images, sequences, most))
    ways = [[1] + [0] * images]
    for k in range(1, sequences + 1):
        row = ways[-1]
        ways.append([sum(row[n - j] for j in range(min(most, n) + 1)) for n in range(images + 1)])
    parts, left = [], images
    for k in range(sequences, 0, -1):
        x = rng.randrange(ways[k][left])
        for j in range(min(most, left) + 1):
            x -= ways[k - 1][left - j]
            if x < 0:
                break
        parts.append(j)
        left -= j
    return parts


def spread_lines(w):
    """The JSON lines of a `spread` workload (see the module comment)."""
    rng = random.Random(w.get("seed", 1))
    seq, per_image = w.get("sequence_tokens", 8192), w.get("tokens_per_image", 169)
    lines = []
    for it in range(w["iterations"]):
        c = spread_counts(rng, w["spread"]["images"], w["microbatches"],
                          w["spread"]["most_images"])
        samples = [{"text_tokens": seq - per_image * n, "images": n, "microbatch": m}
                   for m, n in enumerate(c)]
        lines.append(json.dumps({"iteration": it, "samples": samples}))
    return lines


def drawn(w):
    """1 when workload w is drawn (generated or spread), with a seed."""
    return "family" in w or "spread" in w


def write_workload(loom, w, path):
    """Writes the row's workload to `path`; returns its iteration count."""
    if "spread" in w:
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in spread_lines(w)))
        return w["iterations"]
    if "family" in w:
        subprocess.run([loom, "workload", "generate", "--family", w["family"],
                        "--iterations", str(w["iterations"]),
                        "--microbatches", str(w["microbatches"]),
                        "--seed", str(w.get("seed", 1)),
                        "--sequence-tokens", str(w.get("sequence_tokens", 8192)),
                        "--tokens-per-image", str(w.get("tokens_per_image", 169)),
                        "--packing-window", str(w.get("packing_window", 1)),
                        "--out", path],
                       check=True, stdout=subprocess.DEVNULL)
        return w["iterations"]
    with open(path, "w") as f:
        f.write(workload_line(w) + "\n")
    return 1


def plan_paths(out, iterations):
    """The plan.json files `loom plan --out OUT --iterations N` writes."""
    if iterations == 1:
        return [os.path.join(out, "plan.json")]
    return [os.path.join(out, "iter-%03d" % i, "plan.json") for i in range(iterations)]


def pooled(metrics):
    """One iteration's metrics standing for several: the mean makespan, and
    the MFU and HFU of all of them together (FLOPs over GPU time, so a long
    iteration weighs by its length)."""
    if len(metrics) == 1:
        return metrics[0]
    total_ms = sum(m["makespan_ms"] for m in metrics)
    out = dict(metrics[0])
    out["feasible"] = all(m.get("feasible", True) for m in metrics)
    out["makespan_ms"] = total_ms / len(metrics)
    for key in ("mfu", "hfu"):
        out[key] = sum(m[key] * m["makespan_ms"] for m in metrics) / total_ms
    return out


def plan(loom, row, tmp, model_path, log=None):
    """Plans the row's workload (every iteration of it); returns plan.json's
    metrics, pooled over the iterations. With a list `log`, the plugins'
    info lines (LOOM_LOG=info) are appended to it."""
    w = row["workload"]
    if "global_batch" in w:  # loom plan draws the whole batch itself
        iterations = w["iterations"]
        source = ["--generate", w["family"], "--global-batch", str(w["global_batch"]),
                  "--seed", str(w.get("seed", 1)), "--seq-len", str(w.get("sequence_tokens", 8192)),
                  "--packing-window", str(w.get("packing_window", 1))]
    else:
        wl = os.path.join(tmp, "workload.jsonl")
        iterations = write_workload(loom, w, wl)
        source = ["--workload", wl]
    out = os.path.join(tmp, "out")
    cluster = row["cluster"]
    if os.path.exists(os.path.join(ROOT, cluster)):
        cluster = os.path.join(ROOT, cluster)  # else a preset name
    parallel = row["parallel"]
    if parallel.endswith(".json"):
        parallel = os.path.join(ROOT, parallel)  # a parallel config file
    cmd = [loom, "plan", "--manifest", os.path.join(ROOT, row["manifest"]),
           "--model", model_path, "--cluster", cluster,
           "--parallel", parallel] + source + ["--iterations", str(iterations),
           "--out", out] + ([] if log is not None else ["--quiet"])
    for p in row.get("params", []):
        cmd += ["--param", p]
    env = dict(os.environ, LOOM_LOG="info") if log is not None else None
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE if log is not None else None, text=True, env=env)
    if log is not None:
        log.extend(r.stderr.splitlines())
    if r.returncode != 0:
        if log is not None:
            sys.stderr.write(r.stderr)
        raise SystemExit("fidelity: row %s: loom plan exited with %d (its message above)"
                         % (row["id"], r.returncode))
    metrics = []
    for path in plan_paths(out, iterations):
        with open(path) as f:
            metrics.append(json.load(f)["metrics"])
    for i, m in enumerate(metrics):
        if not m.get("feasible", True):
            peak = max(m["peak_mem_bytes"]) if m.get("peak_mem_bytes") else 0
            raise Infeasible("the plan of %s%s exceeds the memory cap (peak %.3g GiB on a "
                             "rank, cap %.3g GiB): infeasible, not a prediction"
                             % (row["manifest"], " (iteration %d)" % i if len(metrics) > 1 else "",
                                peak / 2**30, m.get("memory_cap_bytes", 0) / 2**30))
    return pooled(metrics)


def with_layers(path, tmp, extra):
    """A copy of a one-module model file with `extra` more layers."""
    with open(path) as f:
        m = json.load(f)
    m["modules"][-1]["layers"]["count"] += extra
    out = os.path.join(tmp, "model-%d.json" % extra)
    with open(out, "w") as f:
        json.dump(m, f)
    return out


def encoder_in_bubbles(loom, row, tmp, model, kind="fine"):
    """The share of the encoder's work the optimus-bubble interleaver runs
    inside the backbone's bubbles in the chosen plan (Optimus Table 7): its
    log line whose fine makespan is the plan's, read for `kind` "fine"
    (Eff_fine, fine-grained exploitation) or "coarse" (Eff_coarse, the
    coarse schedule alone: encoder forwards before the backbone, backwards
    after it)."""
    log = []
    m = plan(loom, row, tmp, model, log)
    want = "fine %.3f ms," % m["makespan_ms"]
    for line in log:
        if "optimus-bubble" in line and want in line and "efficiency" in line:
            share = line.split("efficiency", 1)[1].split(kind, 1)[1].split("%", 1)[0]
            return float(share) / 100.0
    raise SystemExit("fidelity: row %s: no optimus-bubble report for the plan's makespan %s"
                     % (row["id"], want))


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
        if metric == "encoder_in_bubbles":
            return encoder_in_bubbles(loom, row, tmp, model)
        if metric == "encoder_in_bubbles_coarse":
            return encoder_in_bubbles(loom, row, tmp, model, "coarse")
        m = plan(loom, row, tmp, model)
        if metric in ("dp_share", "pp_share"):
            # the mean over ranks of the exposed DP sync (all-gather and
            # reduce-scatter), or of the idle time that is neither compute,
            # P2P, DP sync nor optimizer (the pipeline bubbles), over the
            # iteration
            b = m["breakdown"]
            key = "dp_sync_ms" if metric == "dp_share" else "bubble_ms"
            return sum(b[key]) / len(b[key]) / m["makespan_ms"]
        if metric == "mfu_ratio":
            base = dict(row)
            base.update(row["baseline"])
            b = plan(loom, base, tmp, model)
            return m["mfu"] / b["mfu"]
        if metric == "time_ratio":
            # the row's iteration time over its baseline's (e.g. dynamic
            # over static data)
            base = dict(row)
            base.update(row["baseline"])
            b = plan(loom, base, tmp, model)
            return m["makespan_ms"] / b["makespan_ms"]
        if metric == "samples_per_s":
            w = row["workload"]
            if drawn(w):
                raise SystemExit("fidelity: row %s: samples_per_s needs a written workload" % row["id"])
            n = w["microbatches"] * len(w.get("samples") or [w["sample"]] * w.get("per_microbatch", 1))
            return n / (m["makespan_ms"] / 1e3)
        if metric == "tokens_per_gpu_s":
            # the tokens of one data-parallel replica's iteration over its
            # time and its GPUs (tp x pp x cp), as torchtitan logs TPS/GPU
            w = row["workload"]
            if drawn(w):
                raise SystemExit("fidelity: row %s: tokens_per_gpu_s needs a written workload"
                                 % row["id"])
            samples = w.get("samples") or [w["sample"]] * w.get("per_microbatch", 1)
            tokens = w["microbatches"] * sum(s["text_tokens"] for s in samples)
            degrees = dict(kv.split("=") for kv in row["parallel"].split(","))
            gpus = 1
            for key in ("tp", "pp", "cp"):
                gpus *= int(degrees.get(key, 1))
            return tokens / (m["makespan_ms"] / 1e3) / gpus
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


def fig(x):
    """A figure as the table prints it: four significant digits, and whole
    numbers from 10000 on (23406 tokens a GPU, not 2.341e+04)."""
    return "%d" % round(x) if 1e4 <= abs(x) < 1e12 else "%.4g" % x


def status(row, err):
    """The row's sample (in-sample, held-out or derived) and status."""
    if row["metric"] in DERIVED:
        return "derived", "not counted"
    sample = "in-sample" if row.get("in_sample") else "held-out"
    return sample, "within 10 %" if abs(err) <= TOLERANCE * 100.0 else "**miss**"


def summary(results):
    """The count lines: all counted rows, then held-out and in-sample apart."""
    lines = []
    for label, keep in (("", None), ("held-out", "held-out"), ("in-sample", "in-sample")):
        rows = [r for r in results if r[1] != "derived" and (keep is None or r[1] == keep)]
        ok = sum(1 for r in rows if r[2] == "within 10 %")
        lines.append("%d of %d%s within 10 %%" % (ok, len(rows), (" " + label) if label else ""))
    return lines


def with_params(params, overrides):
    """`params` with every ROLE.KEY that `overrides` sets replaced by it."""
    keys = {o.split("=", 1)[0] for o in overrides}
    return [p for p in params if p.split("=", 1)[0] not in keys] + list(overrides)


def override_params(rows, overrides):
    """Applies --param to every row and to its baseline's own params."""
    for o in overrides:
        key, eq, _ = o.partition("=")
        role, dot, name = key.partition(".")
        if not eq or not dot or not role or not name:
            raise SystemExit("fidelity: --param: expected ROLE.KEY=VALUE, found %r" % o)
    for row in rows:
        row["params"] = with_params(row.get("params", []), overrides)
        if "baseline" in row and "params" in row["baseline"]:
            row["baseline"]["params"] = with_params(row["baseline"]["params"], overrides)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--table", default=os.path.join(ROOT, "tests", "fidelity", "fidelity.json"))
    ap.add_argument("--known-miss", action="append", default=None, metavar="ID",
                    help="a row known to miss (repeatable): exit 1 only when the misses differ")
    ap.add_argument("--only", action="append", default=[], metavar="ID",
                    help="plan only this row (repeatable)")
    ap.add_argument("--cluster", action="append", default=[], metavar="PRESET=FILE",
                    help="plan the rows of cluster PRESET with FILE (repeatable)")
    ap.add_argument("--seeds", type=int, default=0, metavar="N",
                    help="also plan drawn-workload rows with seeds 1..N and print the spread")
    ap.add_argument("--param", action="append", default=[], metavar="ROLE.KEY=VALUE",
                    help="plan every row and baseline with this param instead of its own "
                         "setting of ROLE.KEY (repeatable)")
    args = ap.parse_args()
    loom = os.path.join(args.build, "bin", "loom")
    with open(args.table) as f:
        rows = json.load(f)["rows"]
    if args.only:
        ids = {r["id"] for r in rows}
        for rid in args.only:
            if rid not in ids:
                raise SystemExit("fidelity: --only: no row %r in %s" % (rid, args.table))
        rows = [r for r in rows if r["id"] in args.only]
    override_params(rows, args.param)
    for spec in args.cluster:
        preset, _, path = spec.partition("=")
        if not path:
            raise SystemExit("fidelity: --cluster: expected PRESET=FILE, found %r" % spec)
        for row in rows:
            if row["cluster"] == preset:
                row["cluster"] = os.path.abspath(path)
    results = []
    print("| row | source | metric | published | predicted | error % | sample | status |")
    print("|---|---|---|---|---|---|---|---|")
    infeasible = {}
    for row in rows:
        pub = row["published"]
        try:
            got = predict(loom, row)
        except Infeasible as e:
            infeasible[row["id"]] = str(e)
            sample, _ = status(row, 0.0)
            state = "not counted" if sample == "derived" else "**infeasible**"
            results.append((row, sample, state))
            print("| %s | %s %s | %s | %s | infeasible | n/a | %s | %s |" %
                  (row["id"], row["source"], row["section"], row["metric"], fig(pub), sample,
                   state))
            continue
        err = (got - pub) / pub * 100.0
        sample, state = status(row, err)
        results.append((row, sample, state))
        print("| %s | %s %s | %s | %s | %s | %+.1f | %s | %s |" %
              (row["id"], row["source"], row["section"], row["metric"], fig(pub), fig(got),
               err, sample, state))
    print()
    for line in summary(results):
        print(line)
    if args.param:
        print("every row planned with %s" % ", ".join(args.param))
    misses = [r for r, _, state in results if state == "**miss**"]
    for row in misses:
        print("miss %s: %s" % (row["id"], row.get("cause", "no cause recorded")))
    for rid, why in infeasible.items():
        print("infeasible %s: %s" % (rid, why))
    misses += [r for r, _, state in results if state == "**infeasible**"]
    for row in rows if args.seeds > 0 else []:
        if not drawn(row["workload"]):
            continue
        figures = []
        for seed in range(1, args.seeds + 1):
            one = json.loads(json.dumps(row))
            one["workload"]["seed"] = seed
            try:
                figures.append(predict(loom, one))
            except Infeasible as e:
                print("%s: seed %d: %s" % (row["id"], seed, e))
        if not figures:
            continue
        figures.sort()
        print("%s: seeds 1-%d: min %s, median %s, max %s (published %s)" %
              (row["id"], args.seeds, fig(figures[0]), fig(figures[len(figures) // 2]),
               fig(figures[-1]), fig(row["published"])))
    found = {r["id"] for r in misses}
    if args.known_miss is None:
        return 1 if found else 0
    known = set(args.known_miss)
    if args.only:
        known &= {r["id"] for r in rows}
    if found != known:
        for rid in sorted(found - known):
            print("fidelity: %s misses and is not a known miss" % rid, file=sys.stderr)
        for rid in sorted(known - found):
            print("fidelity: %s is listed as a known miss but is within 10 %%" % rid,
                  file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
