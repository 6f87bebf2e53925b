"""Starts one process per rank (forked, gloo over 127.0.0.1), collects what
they report and runs the checks: no deadlock, gradients equal to a
single-process reference, every sample through every layer exactly once."""

import math
import multiprocessing
import os
import pickle
import tempfile
import time
import traceback

import torch

from . import layers as L
from .engine import ChunkRun
from .errors import CheckError


def join_group(rank, world, port_queue, timeout_s):
    """Joins the ranks' gloo group. Rank 0 listens on a port the kernel picks and
    hands it to the others through port_queue (a port chosen before the ranks
    start can be taken by then)."""
    import torch.distributed as dist
    timeout = _td(max(timeout_s, 30))
    if rank == 0:
        store = dist.TCPStore("127.0.0.1", 0, world, is_master=True,
                              wait_for_workers=False, timeout=timeout)
        for _ in range(world - 1):
            port_queue.put(store.port)
    else:
        port = port_queue.get(timeout=timeout.total_seconds())
        store = dist.TCPStore("127.0.0.1", port, world, is_master=False, timeout=timeout)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timeout)


def _rank_main(plan, rank, port_queue, seed, timeout_s, out_path, release, iterations):
    """A rank's process: run the actions, write what happened, wait to be released."""
    import torch.distributed as dist

    from .runtime import Rank, Stuck

    result = {"rank": rank}
    try:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        torch.set_num_threads(1)
        join_group(rank, plan.ranks, port_queue, timeout_s)
        walls = []
        r = Rank(plan, rank, seed, timeout_s)
        params = r.P
        for it in range(iterations):
            r = Rank(plan, rank, seed, timeout_s, params=params, record=(it == 0))
            dist.barrier()
            t0 = time.perf_counter()
            r.run()
            walls.append((time.perf_counter() - t0) * 1e3)
            if it == 0:
                result.update(grads=r.grads, loss=r.loss, counts=r.counts)
        dist.barrier()
        result.update(wall_ms=walls, stage_ms=r.stage_ms)
    except Stuck as e:
        result["stuck"] = str(e)
    except CheckError as e:
        result["check"] = str(e)
    except Exception:  # reported by the parent with the rank
        result["crash"] = traceback.format_exc()
    with open(out_path + ".tmp", "wb") as f:
        pickle.dump(result, f)
    os.rename(out_path + ".tmp", out_path)
    release.wait(timeout_s * 2 + 60)
    os._exit(0)


def _td(s):
    """Seconds as a timedelta."""
    import datetime
    return datetime.timedelta(seconds=s)


class Ranks:
    """The rank processes of one run, started; collect() waits for them."""

    def __init__(self, plan, seed, timeout_s, iterations=1, target=None, extra=()):
        """Forks plan.ranks processes running `target` (default: Loom's
        runtime, _rank_main) with the common arguments and `extra`."""
        self.plan, self.timeout_s, self.iterations = plan, timeout_s, iterations
        ctx = multiprocessing.get_context("fork")
        self.release = ctx.Event()
        port_queue = ctx.Queue()   # rank 0's store port, for the other ranks
        self.tmp = tempfile.TemporaryDirectory(prefix="loom-exec-")
        self.paths = [os.path.join(self.tmp.name, "rank-%d.pkl" % r) for r in range(plan.ranks)]
        self.procs = [ctx.Process(target=target or _rank_main,
                                  args=(plan, r, port_queue, seed, timeout_s, self.paths[r],
                                        self.release, iterations) + tuple(extra))
                      for r in range(plan.ranks)]
        for p in self.procs:
            p.start()

    def collect(self):
        """Waits for every rank's report (or its end); returns them by rank."""
        plan, timeout_s = self.plan, self.timeout_s
        deadline = time.monotonic() + timeout_s * (self.iterations + 1) + 120
        reports = {}
        try:
            while len(reports) < plan.ranks and time.monotonic() < deadline:
                for r, path in enumerate(self.paths):
                    if r in reports:
                        continue
                    if os.path.exists(path):
                        with open(path, "rb") as f:
                            reports[r] = pickle.load(f)
                    elif not self.procs[r].is_alive() and not os.path.exists(path):
                        reports[r] = {"rank": r,
                                      "crash": "process ended with status %s" % self.procs[r].exitcode}
                time.sleep(0.005)
        finally:
            self.release.set()
            for r, p in enumerate(self.procs):
                p.join(5)
                if p.is_alive():
                    p.kill()
                    p.join()
                if r not in reports:
                    reports[r] = {"rank": r,
                                  "stuck": "rank %d gave no report within %.0f s" % (r, timeout_s)}
            self.tmp.cleanup()
        return reports


def run_ranks(plan, seed, timeout_s, iterations=1, target=None, extra=()):
    """Runs the plan on plan.ranks processes; returns their reports by rank."""
    return Ranks(plan, seed, timeout_s, iterations, target, extra).collect()


def reference(plan, seed):
    """Loss and gradients of the whole iteration in one process (float64)."""
    spec = plan.spec
    params = L.make_params(spec, seed)
    unit = L.Unit(spec, plan.held_samples(), plan.samples, plan.loss_rows())
    pieces = []
    has_loss = False
    order = topo_order(spec)
    for i, m in enumerate(order):
        mod = spec.modules[m]
        keep = ["out:" + spec.modules[u].name for u in mod.inputs
                if any(u in spec.modules[b].inputs for b in order[i + 1:])]
        pieces.append(L.begin_piece(spec, m, keep, seed))
        for layer in range(mod.layers):
            pieces += L.layer_pieces(spec, m, layer, "none")
        pieces.append(L.end_piece(spec, m, seed, has_loss))
        has_loss = has_loss or mod.terminal
    grads = {}
    run = ChunkRun(pieces, params, unit, grads)
    state = run.forward({})
    run.backward({"loss": torch.ones((), dtype=torch.float64)}, "B")
    return float(state["loss"].detach()), grads, params


def topo_order(spec):
    """Module indices with every module after its inputs."""
    done, order = set(), []
    while len(order) < len(spec.modules):
        progressed = False
        for m in spec.modules:
            if m.index not in done and all(u in done for u in m.inputs):
                done.add(m.index)
                order.append(m.index)
                progressed = True
        if not progressed:
            raise CheckError("the model's modules form a cycle")
    return order


def check(plan, reports, seed, rtol, atol):
    """The checks over the ranks' reports; returns (passed, result dict)."""
    out = {"deadlock": None, "errors": [], "gradients": None, "samples": None, "loss": None}
    stuck = [reports[r]["stuck"] for r in sorted(reports) if "stuck" in reports[r]]
    errors = [reports[r]["check"] for r in sorted(reports) if "check" in reports[r]]
    crashes = ["rank %d crashed:\n%s" % (r, reports[r]["crash"]) for r in sorted(reports)
               if "crash" in reports[r]]
    if stuck:
        out["deadlock"] = stuck
    out["errors"] = errors + crashes
    if stuck or errors or crashes:
        return False, out
    ref_loss, ref_grads, ref_params = reference(plan, seed)
    loss = sum(reports[r]["loss"] for r in reports)
    if not (math.isfinite(loss) and math.isfinite(ref_loss)):
        out["errors"].append("the loss is not finite (executed %r, reference %r)" % (loss, ref_loss))
        return False, out
    out["loss"] = {"executed": loss, "reference": ref_loss, "abs_err": abs(loss - ref_loss)}
    ok = abs(loss - ref_loss) <= atol + rtol * abs(ref_loss)
    merged = {}
    for r in sorted(reports):
        for name, g in reports[r]["grads"].items():
            merged[name] = merged[name] + g if name in merged else g
    worst, worst_err, n = None, 0.0, 0
    bad = []
    for name, p in ref_params.items():
        if not p.requires_grad:
            continue
        n += 1
        ref = ref_grads.get(name, torch.zeros_like(p))
        got = merged.get(name, torch.zeros_like(p))
        err = (got - ref).abs()
        lim = atol + rtol * ref.abs()
        excess = float((err / lim).max()) if err.numel() else 0.0
        if not math.isfinite(excess):
            bad.append(name)
            worst, worst_err = name, math.inf
            continue
        if excess > worst_err:
            worst, worst_err = name, excess
        if bool((err > lim).any()):
            bad.append(name)
    out["gradients"] = {"parameters": n, "mismatched": len(bad), "first_mismatch": bad[0] if bad else None,
                        "worst": worst,
                        "worst_err_over_tolerance": worst_err if math.isfinite(worst_err) else None,
                        "rtol": rtol, "atol": atol}
    ok = ok and not bad
    s_ok, s_res = check_samples(plan, reports)
    out["samples"] = s_res
    return ok and s_ok, out


def check_samples(plan, reports):
    """Every sample through every layer of every module it reaches exactly
    once forward and once backward (B, or I and W when split)."""
    spec = plan.spec
    counts = {}
    for r in reports:
        for k, v in reports[r]["counts"].items():
            counts[k] = counts.get(k, 0) + v
    problems = []
    checked = 0
    held = plan.held_samples()
    for m in spec.modules:
        for s in held:
            meta = plan.samples[s]
            if spec.rows(m.index, meta) == 0:
                continue
            for layer in range(m.layers):
                checked += 1
                f = counts.get(("F", m.index, layer, s), 0)
                b = counts.get(("B", m.index, layer, s), 0)
                i = counts.get(("I", m.index, layer, s), 0)
                w = counts.get(("W", m.index, layer, s), 0)
                if f != 1 or b + i != 1 or w != i:
                    problems.append("sample %d, %s layer %d: forward %d, backward %d, input-grad %d, "
                                    "weight-grad %d times (expected once forward, once B or I+W)"
                                    % (s, m.name, layer, f, b, i, w))
    outside = [s for s in range(len(plan.samples)) if s not in set(held)]
    return not problems, {"sample_layers": checked, "problems": len(problems),
                          "first_problem": problems[0] if problems else None,
                          "outside_plan": outside}
