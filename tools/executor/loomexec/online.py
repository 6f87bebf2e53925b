"""Online mode: planning in the loop. Each iteration draws a new dynamic
batch (a workload file's next record, or the generator's), and while
iteration i executes, iteration i+1 is planned through libloom's C API
(the python/ package's ctypes binding) on a background thread. Reports how
much of the planning time the execution hid."""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from .errors import CheckError, InputError
from .profile import find_cli

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def load_binding():
    """The python/ package of this tree (libloom through ctypes)."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    try:
        import loom
    except ImportError as e:
        raise InputError("cannot import the loom Python package from %s: %s"
                         % (os.path.join(ROOT, "python"), e))
    return loom


def batches(args):
    """The iterations' samples: the workload file's records, or the
    generator's (`loom workload generate`)."""
    path = args.workload
    tmp = None
    if path is None:
        mb = 4
        for part in (args.parallel or "").split(","):
            if part.startswith("mb="):
                mb = int(part[3:])
        tmp = tempfile.NamedTemporaryFile(prefix="loom-online-", suffix=".jsonl", delete=False)
        tmp.close()
        path = tmp.name
        cmd = [find_cli(args), "workload", "generate", "--family", args.generate, "--iterations",
               str(args.iterations), "--microbatches", str(mb), "--seed", str(args.seed), "--out", path]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            os.unlink(path)
            raise InputError("generating the workload failed: %s" % r.stderr.strip())
    out = []
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    raise InputError("%s:%d: malformed JSON: %s" % (path, n, e))
                if not isinstance(rec, dict) or not isinstance(rec.get("samples"), list):
                    raise InputError("%s:%d: samples: expected an array of samples" % (path, n))
                out.append(rec["samples"])
                if len(out) == args.iterations:
                    break
    except OSError as e:
        raise InputError("%s: cannot read the workload: %s" % (path, e.strerror))
    finally:
        if tmp is not None:
            os.unlink(path)
    if not out:
        raise InputError("%s: no iterations" % path)
    return out


class Background:
    """Plans one batch on a thread; records when planning ran."""

    def __init__(self, planner, samples):
        self.planner, self.samples = planner, samples
        self.result = self.error = None
        self.start = self.end = 0.0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.start = time.perf_counter()
        try:
            self.result = self.planner.plan(self.samples)
        except Exception as e:  # raised in the main thread by get()
            self.error = e
        self.end = time.perf_counter()

    def get(self):
        """The planned result (waits for the thread)."""
        self.thread.join()
        if self.error is not None:
            raise InputError("planning failed: %s" % self.error)
        return self.result


def online_mode(args):
    """Online mode (see the module docstring); returns the result dict."""
    from .driver import Ranks, check
    from .model_spec import ModelSpec
    from .plan import Plan

    loom = load_binding()
    spec = ModelSpec(args.model, args.hidden, args.token_scale)
    work = batches(args)
    try:
        planner = loom.Planner(manifest=args.manifest, model=args.model, parallel=args.parallel,
                               memory_cap_bytes=args.memory_cap, seed=args.seed)
    except loom.LoomError as e:
        raise InputError("opening the planner: %s" % e)
    lines, rows = [], []
    passed = True
    first = None
    try:
        t0 = time.perf_counter()
        pending = Background(planner, work[0])
        current = pending.get()
        first_plan_s = pending.end - pending.start
        for i in range(len(work)):
            name = "<iteration %d>" % i
            if args.keep_plans:
                os.makedirs(args.keep_plans, exist_ok=True)
                name = os.path.join(args.keep_plans, "iter-%03d.json" % i)
                with open(name, "w") as f:
                    json.dump(current.plan_json, f)
            plan = Plan(name, spec, current.plan_json)
            plan.check_tensors()
            ranks = Ranks(plan, args.seed, args.timeout)   # fork before the planning thread
            e0 = time.perf_counter()
            nxt = Background(planner, work[i + 1]) if i + 1 < len(work) else None
            reports = ranks.collect()
            e1 = time.perf_counter()
            ok, res = check(plan, reports, args.seed, args.rtol, args.atol)
            if first is None:
                first = res
            if not ok:
                passed = False
                first = res
            row = {"iteration": i, "samples": len(work[i]), "execute_ms": (e1 - e0) * 1e3,
                   "predicted_ms": plan.makespan_ms, "passed": ok}
            if nxt is not None:
                current = nxt.get()
                plan_s = nxt.end - nxt.start
                hidden = max(0.0, min(nxt.end, e1) - max(nxt.start, e0))
                row.update(next_plan_ms=plan_s * 1e3, hidden_ms=hidden * 1e3,
                           loom_plan_time_ms=current.plan_time_ms)
            rows.append(row)
            if not ok:
                break
        total_s = time.perf_counter() - t0
    finally:
        planner.close()
    planned = sum(r.get("next_plan_ms", 0.0) for r in rows)
    hidden = sum(r.get("hidden_ms", 0.0) for r in rows)
    share = hidden / planned * 100.0 if planned > 0 else 0.0
    for r in rows:
        lines.append("iter %3d  %3d samples  executed %8.1f ms%s  %s" % (
            r["iteration"], r["samples"], r["execute_ms"],
            "  planned next %7.1f ms, %7.1f ms hidden" % (r["next_plan_ms"], r["hidden_ms"])
            if "next_plan_ms" in r else "", "ok" if r["passed"] else "FAIL"))
    lines.append("online    %d iterations in %.2f s; planning of iterations 1..%d took %.1f ms, "
                 "%.1f ms of it (%.1f %%) hidden behind execution (iteration 0's %.1f ms not hidden)"
                 % (len(rows), total_s, len(rows) - 1, planned, hidden, share, first_plan_s * 1e3))
    if first is None:
        raise CheckError("no iteration ran")
    res = dict(first)
    res["online"] = {"iterations": rows, "planning_ms": planned, "hidden_ms": hidden,
                     "hidden_pct": share, "first_plan_ms": first_plan_s * 1e3, "lines": lines}
    res.update(plan="(online)", ranks=plan.ranks, sample_count=len(work[0]), passed=passed)
    return res
