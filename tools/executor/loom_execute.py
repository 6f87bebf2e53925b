#!/usr/bin/env python3
"""Loom's reference executor: runs a plan.json (format 2) on one CPU process
per rank with a scaled-down model and checks it (docs/executor.md), under
PyTorch's pipelining runtime (the plan's schedule.csv) or Loom's own.

    loom_execute.py --plan PLAN.json --model MODEL.json [--runtime torch|loom|auto] [--json]
    loom_execute.py --profile --plan PLAN.json --model MODEL.json --manifest M.json [...]
    loom_execute.py --online --model MODEL.json --manifest M.json --parallel ... [...]

Exit status: 0 the run completed and every check passed, 1 a check failed
(a deadlock, a gradient, a sample count), 2 bad input.
"""

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from loomexec.errors import CheckError, InputError  # noqa: E402

RUNTIMES = ("auto", "torch", "loom")


def parse_args(argv):
    """The command line; bad combinations are InputError (exit 2)."""
    ap = argparse.ArgumentParser(
        prog="loom_execute.py",
        description="Execute a Loom plan with real sends, receives, forward and backward on "
                    "CPU processes and check it (docs/executor.md).")
    ap.add_argument("--plan", help="plan.json (format 2) to execute")
    ap.add_argument("--model", required=True,
                    help="the model the plan was made for: a model JSON, a Hugging Face "
                         "config.json or a preset name (as loom plan --model takes it)")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    ap.add_argument("--runtime", choices=RUNTIMES, default="auto",
                    help="torch: PyTorch's _PipelineScheduleRuntime runs the plan's schedule.csv; "
                         "loom: Loom's runtime runs rank_actions; auto (default): torch where the "
                         "plan is expressible for PyTorch, else loom")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds a rank may wait on one action before it counts as stuck (default 60)")
    ap.add_argument("--hidden", type=int, default=16, help="hidden size of the scaled model (default 16)")
    ap.add_argument("--token-scale", type=int, default=64,
                    help="divide token counts by this (default 64)")
    ap.add_argument("--seed", type=int, default=1, help="seed of parameters and data (default 1)")
    ap.add_argument("--no-tensor-check", action="store_true",
                    help="skip checking the plan's tensor shapes against the model (hand-edited plans)")
    ap.add_argument("--rtol", type=float, default=1e-9, help="gradient relative tolerance (default 1e-9)")
    ap.add_argument("--atol", type=float, default=1e-12, help="gradient absolute tolerance (default 1e-12)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--profile", action="store_true",
                      help="profile the layers, write the CSV, replan with it and time the plan")
    mode.add_argument("--online", action="store_true",
                      help="plan iteration i+1 while iteration i runs (C API), report hidden planning")
    ap.add_argument("--profile-csv", help="profile mode: where to write the per-layer CSV")
    ap.add_argument("--profile-dir", help="profile mode: keep the CSV, scaled model, workload and plan here")
    ap.add_argument("--manifest", help="profile and online modes: the planner manifest")
    ap.add_argument("--parallel", help="profile and online modes: e.g. pp=2,mb=4 (tp is set to 1)")
    ap.add_argument("--workload", help="online mode: workload JSON Lines (default: --generate)")
    ap.add_argument("--generate", default="interleaved", help="online mode: generator family")
    ap.add_argument("--iterations", type=int, default=4, help="profile / online mode iterations")
    ap.add_argument("--param", action="append", default=[],
                    help="profile mode: ROLE.KEY=VAL passed to loom plan")
    ap.add_argument("--keep-plans", help="online mode: write each iteration's plan.json into this folder")
    ap.add_argument("--memory-cap", type=float, default=0.0,
                    help="online mode: per-rank memory cap in bytes (default 0: the GPU's)")
    ap.add_argument("--loom", help="the loom CLI (default: $LOOM_CLI, build/bin/loom, then PATH)")
    args = ap.parse_args(argv)
    if args.hidden < 4 or args.token_scale < 1 or args.timeout <= 0 or args.iterations < 1:
        raise InputError("--hidden >= 4, --token-scale >= 1, --timeout > 0 and --iterations >= 1 expected")
    if not (args.online or args.plan):
        raise InputError("--plan PLAN.json is required (or --online)")
    if (args.profile or args.online) and not args.manifest:
        raise InputError("--manifest is required with --%s" % ("profile" if args.profile else "online"))
    if (args.profile or args.online) and args.runtime == "torch":
        raise InputError("--runtime torch: profile and online modes run Loom's runtime only")
    for x in ("rtol", "atol", "timeout"):
        if not math.isfinite(getattr(args, x)):
            raise InputError("--%s: expected a finite number" % x)
    return args


def print_result(res, as_json):
    """The result as a table, or as JSON with --json."""
    if as_json:
        out = {k: v for k, v in res.items() if k != "runtime_line"}
        print(json.dumps(out, indent=1, sort_keys=True, allow_nan=False))
        return
    print("plan      %s (%d ranks, %d samples)" % (res["plan"], res["ranks"], res["sample_count"]))
    print("runtime   %s" % res.get("runtime_line", res["runtime"]))
    if res.get("deadlock"):
        print("deadlock  FAIL")
        for line in res["deadlock"]:
            print("  " + line)
    else:
        print("deadlock  ok (every action completed)")
    for e in res.get("errors") or []:
        print("error     " + e)
    g = res.get("gradients")
    if g:
        w = g["worst_err_over_tolerance"]
        print("gradients %s: %d parameters, %d mismatched (worst %s at %s x tolerance; rtol %g, atol %g)"
              % ("ok" if not g["mismatched"] else "FAIL", g["parameters"], g["mismatched"],
                 g["worst"], "%.3g" % w if w is not None else "a non-finite", g["rtol"], g["atol"]))
    lo = res.get("loss")
    if lo:
        print("loss      %.12g (reference %.12g)" % (lo["executed"], lo["reference"]))
    s = res.get("samples")
    if s:
        print("samples   %s: %d sample-layers checked%s" % (
            "ok" if not s["problems"] else "FAIL", s["sample_layers"],
            "" if not s["problems"] else "; " + s["first_problem"]))
        if s["outside_plan"]:
            print("          %d of %d samples are in no unit of this plan (another replica's share): %s"
                  % (len(s["outside_plan"]), res["sample_count"],
                     " ".join(str(x) for x in s["outside_plan"])))
    for k in ("profile", "online"):
        if k in res:
            for line in res[k]["lines"]:
                print(line)
    print("result    %s" % ("PASS" if res["passed"] else "FAIL"))


def choose_runtime(plan, wanted):
    """(runtime, line for the table): torch where the plan is expressible for
    PyTorch's runtime and wanted is torch or auto; `--runtime torch` on a plan
    that is not is bad input naming the reason."""
    import torch

    from loomexec.torch_runtime import not_expressible, schedule_csv_path

    why = not_expressible(plan) if wanted != "loom" else None
    if wanted == "torch" and why:
        raise InputError("%s: --runtime torch: PyTorch's pipelining runtime cannot run this plan: %s"
                         % (plan.path, why))
    if wanted == "loom" or why:
        note = "--runtime loom" if wanted == "loom" else "auto; not torch: " + why
        return "loom", "loom (Loom's runtime: rank_actions; %s)" % note
    return "torch", ("torch (PyTorch %s torch.distributed.pipelining: _PipelineScheduleRuntime "
                     "running %s; %s)" % (torch.__version__, schedule_csv_path(plan),
                                         "auto" if wanted == "auto" else "--runtime torch"))


def execute(args):
    """Plain mode: run the plan on its ranks under the chosen runtime and check it."""
    from loomexec.driver import check, run_ranks
    from loomexec.model_spec import ModelSpec
    from loomexec.plan import Plan
    from loomexec.torch_runtime import run_torch

    spec = ModelSpec(args.model, args.hidden, args.token_scale)
    plan = Plan(args.plan, spec)
    if not args.no_tensor_check:
        plan.check_tensors()
    runtime, line = choose_runtime(plan, args.runtime)
    if runtime == "torch":
        reports = run_torch(plan, args.seed, args.timeout)
    else:
        reports = run_ranks(plan, args.seed, args.timeout)
    passed, res = check(plan, reports, args.seed, args.rtol, args.atol)
    res.update(plan=args.plan, ranks=plan.ranks, sample_count=len(plan.samples), passed=passed,
               runtime=runtime, runtime_line=line)
    return res


def need_torch():
    """PyTorch with gloo, or bad input naming the fix."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        raise InputError("PyTorch is missing (%s): run this with the project's venv, "
                         "build/venv/bin/python3 (PyTorch 2.13.0 from requirements.txt, `make deps`); "
                         "this is %s" % (e, sys.executable))
    if not dist.is_available() or not dist.is_gloo_available():
        raise InputError("this PyTorch (%s) has no gloo backend for torch.distributed"
                         % torch.__version__)
    # The scaled model's tensors are tiny: one thread computes the reference
    # faster than several (and the ranks, forked from here, use one each).
    torch.set_num_threads(1)


def main(argv=None):
    """Runs the chosen mode; returns the exit status (0, 1 or 2)."""
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        need_torch()
        if args.profile:
            from loomexec.profile import profile_mode
            res = profile_mode(args)
        elif args.online:
            from loomexec.online import online_mode
            res = online_mode(args)
        else:
            res = execute(args)
        res.setdefault("runtime", "loom")
    except InputError as e:
        print("loom_execute: error: %s" % e, file=sys.stderr)
        return 2
    except CheckError as e:
        print("loom_execute: check failed: %s" % e, file=sys.stderr)
        return 1
    print_result(res, args.json)
    return 0 if res["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
