#!/usr/bin/env python3
"""Plans with the loom CLI and executes the plan with loom_execute.py; exits
0 only when the executor exits 0 and prints its "result PASS" line (a
non-zero status, or a missing or FAIL result line, is a failure). Used by
the ctest entries executor_* (tools/executor/tests/CMakeLists.txt), which
therefore judge by the exit code.

    plan_and_run.py --loom build/bin/loom [--exec-arg=--timeout=30] -- <loom plan options>

Every `loom plan` option after `--` is passed through; --out and --quiet
are added. Extra `--exec-arg` values go to the executor, which otherwise
runs its default runtime, `auto`: PyTorch's pipelining runtime on the
plan's schedule.csv where the plan is expressible for it, Loom's runtime
otherwise (its `runtime` line says which; `--exec-arg=--runtime=torch`
insists on PyTorch's).
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXECUTOR = os.path.join(os.path.dirname(HERE), "loom_execute.py")


def model_of(plan_args):
    """The --model value among the loom plan options."""
    for i, a in enumerate(plan_args):
        if a == "--model" and i + 1 < len(plan_args):
            return plan_args[i + 1]
    raise SystemExit("plan_and_run.py: give --model FILE among the loom plan options")


def main():
    """Plans, then executes; the executor's status."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--loom", required=True)
    ap.add_argument("--exec-arg", action="append", default=[])
    ap.add_argument("plan_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    plan_args = [a for a in args.plan_args if a != "--"]
    with tempfile.TemporaryDirectory(prefix="loom-exec-test-") as tmp:
        out = os.path.join(tmp, "plan")
        cmd = [args.loom, "plan", *plan_args, "--iterations", "1", "--out", out, "--quiet"]
        print("$ " + " ".join(cmd), flush=True)
        r = subprocess.run(cmd)
        if r.returncode != 0:
            print("plan_and_run.py: loom plan failed with status %d" % r.returncode)
            return 2
        cmd = [sys.executable, EXECUTOR, "--plan", os.path.join(out, "plan.json"),
               "--model", model_of(plan_args), *args.exec_arg]
        print("$ " + " ".join(cmd), flush=True)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        sys.stdout.write(r.stdout)
        passed = any(line.split() == ["result", "PASS"] for line in r.stdout.splitlines())
        if r.returncode != 0:
            print("plan_and_run.py: the executor failed with status %d" % r.returncode)
            return r.returncode
        if not passed:
            print("plan_and_run.py: the executor exited 0 without a \"result PASS\" line")
            return 1
        return 0


if __name__ == "__main__":
    sys.exit(main())
