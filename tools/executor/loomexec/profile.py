"""Profile mode: time every kind of layer of the scaled model on this
machine, write the per-layer profile CSV `loom calibrate --profile` reads
(docs/calibration.md) and the same measurements as a `table` cost file
(docs/cost-models.md), plan the same iteration with the table and time
that plan's execution, so that Loom's predicted iteration time stands
beside the measured one."""

import json
import os
import statistics
import subprocess
import tempfile
import time

import torch

from . import layers as L
from .engine import ChunkRun
from .errors import InputError

# loom calibrate --profile (docs/calibration.md) and the table cost model
PROFILE_HEADER = "module,layer,tokens,tp,forward_ms,backward_ms,activation_bytes,seq_len"
TABLE_HEADER = "module,layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,activation_bytes,param_bytes"


def find_cli(args):
    """The loom CLI: --loom, $LOOM_CLI, build/bin/loom beside this tree, PATH."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", "..", ".."))
    for c in (args.loom, os.environ.get("LOOM_CLI"), os.path.join(root, "build", "bin", "loom")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    for d in os.environ.get("PATH", "").split(os.pathsep):
        c = os.path.join(d, "loom")
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise InputError("cannot find the loom CLI: give --loom PATH or set LOOM_CLI")


def _layer_input(spec, m, layer, unit, seed):
    """Random leaves standing in for what layer `layer` of module m receives."""
    g = torch.Generator().manual_seed(seed + 7 * layer + 1000 * m)
    d = spec.hidden
    mod = spec.modules[m]

    def rnd(rows):
        return torch.randn(rows, d, generator=g, dtype=torch.float64).requires_grad_(True)

    if layer == 0:
        return {"out:" + spec.modules[u].name: rnd(sum(unit.own(u))) for u in mod.inputs
                if mod.modality == "text" or mod.cross}
    st = {"h": rnd(sum(unit.rows(m)))}
    if mod.cross:
        st["ctx"] = rnd(sum(unit.ctx(m)))
    return st


def _pieces(spec, m, layer, seed):
    """The pieces of one layer, with the embedding or the loss at a module's ends."""
    mod = spec.modules[m]
    pcs = []
    if layer == 0:
        pcs.append(L.begin_piece(spec, m, [], seed))
    pcs += L.layer_pieces(spec, m, layer, "none")
    if layer == mod.layers - 1:
        pcs.append(L.end_piece(spec, m, seed, False))
    return pcs


def time_layer(spec, m, layer, unit, seed, params, repeats):
    """Median forward, input-gradient and weight-gradient ms of one layer on
    `unit`, the bytes its forward saves for backward, its parameter bytes."""
    fw, ig, wg = [], [], []
    saved = [0]

    def pack(t):
        saved[0] += t.numel() * t.element_size()
        return t

    pieces = _pieces(spec, m, layer, seed)
    for _ in range(repeats + 1):
        state = _layer_input(spec, m, layer, unit, seed)
        grads = {}
        run = ChunkRun(pieces, params, unit, grads)
        saved[0] = 0
        t0 = time.perf_counter()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = run.forward(dict(state))
        t1 = time.perf_counter()
        g_out = {k: torch.ones_like(v) for k, v in out.items()}
        if "loss" in out:
            g_out = {"loss": torch.ones((), dtype=torch.float64)}
        run.backward(g_out, "I")
        t2 = time.perf_counter()
        run.weight_grad()
        t3 = time.perf_counter()
        fw.append((t1 - t0) * 1e3)
        ig.append((t2 - t1) * 1e3)
        wg.append((t3 - t2) * 1e3)
    names = {n for pc in pieces for n in pc.params}
    pbytes = sum(params[n].numel() * params[n].element_size() for n in names)
    # the first run warms up and is left out
    return (statistics.median(fw[1:]), statistics.median(ig[1:]), statistics.median(wg[1:]),
            saved[0], pbytes)


def profile_rows(spec, plan, seed, repeats=5):
    """CSV rows: per module, its first, a middle ("*") and its last layer,
    on units of 1, 2, ... of the iteration's samples that reach it."""
    torch.set_num_threads(1)
    params = L.make_params(spec, seed)
    rows = []
    loss_rows = plan.loss_rows()
    for mod in spec.modules:
        m = mod.index
        reach = [s for s in range(len(plan.samples)) if spec.rows(m, plan.samples[s]) > 0]
        if not reach:
            continue
        sizes = sorted({max(1, round(len(reach) * f)) for f in (0.2, 0.4, 0.6, 0.8, 1.0)})
        layers = sorted({0, min(1, mod.layers - 1), mod.layers - 1})
        for layer in layers:
            label = "*" if 0 < layer < mod.layers - 1 else str(layer)
            seen = set()
            for k in sizes:
                unit = L.Unit(spec, reach[:k], plan.samples, loss_rows)
                tokens = sum(unit.rows(m))
                if tokens in seen or tokens < 1:
                    continue
                seen.add(tokens)
                f, i, w, act, pb = time_layer(spec, m, layer, unit, seed, params, repeats)
                # one sequence length standing for the unit's: tokens x seq_len is
                # the attention work, the sum of the squared sample lengths
                seq = max(1, round(sum(n * n for n in unit.rows(m)) / tokens))
                rows.append((mod.name, label, tokens, f, i, w, act, pb, seq))
    return rows


def write_csv(path, header, lines):
    """Writes a CSV atomically (temporary file, then rename)."""
    with open(path + ".tmp", "w") as f:
        f.write(header + "\n")
        for line in lines:
            f.write(line + "\n")
    os.replace(path + ".tmp", path)


def profile_lines(rows):
    """The calibration profile's rows (TP 1; backward = input + weight gradient)."""
    return ["%s,%s,%d,1,%.6f,%.6f,%d,%d" % (n, lb, t, f, i + w, a, seq)
            for n, lb, t, f, i, w, a, _, seq in rows]


def table_lines(rows):
    """The table cost model's rows."""
    return ["%s,%s,%d,%.6f,%.6f,%.6f,%d,%d" % (n, lb, t, f, i, w, a, p)
            for n, lb, t, f, i, w, a, p, _ in rows]


def profile_mode(args):
    """Profile mode (see the module docstring); returns the result dict."""
    from .driver import check, run_ranks
    from .model_spec import ModelSpec
    from .plan import Plan

    spec = ModelSpec(args.model, args.hidden, args.token_scale)
    given = Plan(args.plan, spec)
    cli = find_cli(args)
    lines = []
    with tempfile.TemporaryDirectory(prefix="loom-profile-") as tmp:
        if args.profile_dir:
            tmp = os.path.abspath(args.profile_dir)
            os.makedirs(tmp, exist_ok=True)
        csv = os.path.abspath(args.profile_csv or os.path.join(tmp, "profile.csv"))
        table = os.path.join(tmp, "table.csv")
        t0 = time.perf_counter()
        rows = profile_rows(spec, given, args.seed)
        prof_s = time.perf_counter() - t0
        write_csv(csv, PROFILE_HEADER, profile_lines(rows))
        write_csv(table, TABLE_HEADER, table_lines(rows))
        model_path = os.path.join(tmp, "scaled-model.json")
        with open(model_path, "w") as f:
            json.dump(spec.scaled_doc(), f)
        work = os.path.join(tmp, "scaled-workload.jsonl")
        with open(work, "w") as f:
            f.write(json.dumps({"iteration": given.iteration_index,
                                "samples": [spec.scaled_sample(s) for s in given.samples]}) + "\n")
        parallel = args.parallel or "tp=1,pp=%d,mb=%d" % (given.ranks, given.microbatches)
        out = os.path.join(tmp, "plan")
        cmd = [cli, "plan", "--model", model_path, "--workload", work, "--manifest", args.manifest,
               "--parallel", parallel, "--use", "cost_model=table", "--param",
               "cost_model.file=" + table, "--iterations", "1", "--out", out, "--quiet"]
        for p in args.param:
            cmd += ["--param", p]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise InputError("planning with the profile failed (%s): %s"
                             % (" ".join(cmd), r.stderr.strip()))
        scaled = ModelSpec(model_path, args.hidden, 1)
        plan = Plan(os.path.join(out, "plan.json"), scaled)
        plan.check_tensors()
        iters = max(2, args.iterations)
        reports = run_ranks(plan, args.seed, args.timeout, iterations=iters)
        passed, res = check(plan, reports, args.seed, args.rtol, args.atol)
        if passed and plan.makespan_ms > 0:
            per_iter = [max(reports[r]["wall_ms"][i] for r in reports) for i in range(iters)]
            measured = statistics.median(per_iter[1:])
            predicted = plan.makespan_ms
            err = (measured - predicted) / predicted * 100.0
            res["profile"] = {"csv": csv if (args.profile_csv or args.profile_dir) else None,
                              "table_csv": table if args.profile_dir else None,
                              "dir": args.profile_dir, "profile_s": prof_s, "predicted_ms": predicted,
                              "measured_ms": measured, "error_pct": err, "iterations_ms": per_iter,
                              "ranks": plan.ranks, "cores": os.cpu_count()}
            kept = args.profile_csv or args.profile_dir
            lines.append("profile   %s (%.1f s of profiling)" % (csv if kept else "(not kept)", prof_s))
            lines.append("iteration predicted %.2f ms (Loom, table cost model from the profile), "
                         "measured %.2f ms (median of %d), error %+.1f %% (%d ranks, %d cores)"
                         % (predicted, measured, iters - 1, err, plan.ranks, os.cpu_count()))
            # the stages' own CPU time against Loom's stage times, per rank:
            # what the profile predicts, free of the waits and of other load
            busy = {}
            for st in plan.doc["stages"]:
                busy[st["rank"]] = busy.get(st["rank"], 0.0) + st["end_ms"] - st["start_ms"]
            cpu = {r: sum(x[3] for x in reports[r]["stage_ms"]) for r in reports}
            res["profile"]["busy_predicted_ms"] = [busy.get(r, 0.0) for r in sorted(reports)]
            res["profile"]["busy_cpu_ms"] = [cpu[r] for r in sorted(reports)]
            tot_p, tot_c = sum(busy.values()), sum(cpu.values())
            lines.append("stages    predicted %.2f ms of work over the ranks, their CPU time %.2f ms "
                         "(last iteration), error %+.1f %%" % (tot_p, tot_c, (tot_c - tot_p) / tot_p * 100.0))
            res["profile"]["lines"] = lines
    res.update(plan=args.plan, ranks=plan.ranks, sample_count=len(plan.samples), passed=passed)
    return res
