#!/usr/bin/env python3
"""Loom's layer times against layer times measured on a real GPU.

tests/fidelity/measured/h200/ holds what tools/measure/gpu_profile.py
measured on one NVIDIA H200 (bf16, PyTorch eager, cuBLAS and fused
attention): a GEMM sweep, an attention sweep and per-layer forward and
backward times of three models' layers. This command prints

  1. the GEMM sweep against Loom's size curve eff * F / (F + half): the
     best eff and half for the sweep, and the rms error of that curve and
     of the curve examples/clusters/h200.json carries;
  2. the fit: `loom calibrate` on the vlm-s profile (the training set),
     whose factors must reproduce examples/clusters/h200.json;
  3. the rms residual of every profile, the vlm-s one and two held out
     (the PipeWeaver 37B layers, t2v-s), under the Hopper preset factors
     and under the calibrated h200.json;
  4. whole training iterations measured by tools/measure/gpu_iteration.py
     (iterations/: 4-layer Llama-3-8B and Qwen2-7B shapes with their
     vocabularies, pp = tp = dp = 1) against `loom plan` with h200.json,
     with the measurement's own parts (its unfused fp32 gradient
     accumulation, the Adam step) beside Loom's, and the same iterations
     priced by `loom calibrate --measured --fit none`, and the Adam step's
     measured HBM efficiency against h200.json's efficiency.optimizer.

--check exits 1 when the fit does not reproduce h200.json (1 % per
factor), a held-out profile's rms residual under h200.json exceeds
--max-holdout (default 12 %), or a whole iteration's error exceeds
--max-iteration (default 30 %).
Usage: tools/bench/measured_profiles.py [--build build] [--check]
"""
import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "fidelity", "measured", "h200")
CLUSTER = os.path.join(ROOT, "examples", "clusters", "h200.json")
PEAK = 989e12
PROFILES = [("vlm-s", "examples/models/vlm-s.json", "training"),
            ("pw-37b", "tools/measure/models/pw-37b.json", "held out"),
            ("t2v-s", "examples/models/t2v-s.json", "held out")]
FIT = "eff_gemm,eff_attention,eff_memory,kernel_launch_us"


def gemm_curve():
    """(eff, half, rms %) of the size curve that best fits the GEMM sweep's
    times, with h200.json's launch overhead added to every product, and
    the rms % of h200.json's own curve; h200.json's efficiency object."""
    with open(CLUSTER) as f:
        e = json.load(f)["efficiency"]
    launch_ms = e.get("kernel_launch_us", 0.0) / 1e3
    rows = []
    with open(os.path.join(DATA, "gemm.csv")) as f:
        for r in csv.DictReader(f):
            rows.append((float(r["flops"]), float(r["ms"])))

    def rms(eff, half):
        err = [(F / (PEAK * eff * F / (F + half)) * 1e3 + launch_ms) / ms - 1.0
               for F, ms in rows]
        return math.sqrt(sum(x * x for x in err) / len(err))

    best = None
    for i in range(161):  # half from 1e8 to 1e12, log-spaced
        half = 10 ** (8 + i * 0.025)
        for j in range(1, 201):
            eff = j * 0.005
            r = rms(eff, half)
            if best is None or r < best[2]:
                best = (eff, half, r)
    return best, rms(e["gemm"], e["gemm_half_flops"]), e


def residual(loom, cluster, model, profile):
    """rms residual % of `profile` under `cluster`, no fit."""
    out = subprocess.run([loom, "calibrate", "--cluster", cluster, "--model", model,
                          "--profile", profile, "--fit", "none", "--max-residual", "1000"],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"rms residual ([0-9.]+) %", out).group(1))


def iterations(loom, tmp, max_err):
    """Prints the whole-iteration table; returns the rows over max_err %."""
    folder = os.path.join(DATA, "iterations")
    bad, entries = 0, []
    print()
    print("| model | microbatches x tokens | measured ms | less fp32 accumulation | predicted ms "
          "| error | error less accumulation | Adam measured / predicted ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name)) as f:
            m = json.load(f)
        model = os.path.join(ROOT, "tools", "measure", "models", m["model"])
        wl = os.path.join(folder, "mb%d-s%d.jsonl" % (m["microbatches"], m["seq_len"]))
        par = "tp=1,pp=1,dp=1,mb=%d" % m["microbatches"]
        out = os.path.join(tmp, name)
        subprocess.run([loom, "plan", "--manifest",
                        os.path.join(ROOT, "examples", "manifests", "megatron-1f1b.json"),
                        "--model", model, "--cluster", CLUSTER, "--parallel", par,
                        "--workload", wl, "--iterations", "1", "--quiet", "--out", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "plan.json")) as f:
            metrics = json.load(f)["metrics"]
        pred = metrics["makespan_ms"]
        meas = m["median_ms"]
        fused = meas - m["microbatches"] * m["microbatch_parts"]["accumulate_ms"]
        err, err_fused = (pred - meas) / meas * 100, (pred - fused) / fused * 100
        ok = abs(err) <= max_err
        bad += not ok
        print("| %s | %d x %d | %.1f | %.1f | %.1f | %+.1f %%%s | %+.1f %% | %.1f / %.1f |" %
              (m["model"][:-5], m["microbatches"], m["seq_len"], meas, fused, pred, err,
               "" if ok else " (over %g %%)" % max_err, err_fused, m["optimizer_ms"],
               metrics["breakdown"]["optimizer_ms"][0]))
        entries.append({"model": model, "parallel": par, "workload": wl, "measured_ms": meas})
    # the Adam step alone: 34 bytes per parameter over the measured time,
    # as a fraction of HBM bandwidth, against h200.json's eff_optimizer
    with open(CLUSTER) as f:
        c = json.load(f)
    effs = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                m = json.load(f)
            effs.append(m["params"] * 34.0 / (c["hbm_bytes_per_s"] * m["optimizer_ms"] * 1e-3))
    want = c["efficiency"].get("optimizer", c["efficiency"]["memory"])
    far = [e for e in effs if abs(e - want) > 0.02 * want]
    bad += len(far)
    print("Adam step alone: %s of HBM bandwidth (34 bytes per parameter); h200.json's "
          "efficiency.optimizer %g%s" % (", ".join("%.3f" % e for e in effs), want,
                                         "" if not far else " (over 2 % off)"))
    path = os.path.join(tmp, "iterations.json")
    with open(path, "w") as f:
        json.dump({"iterations": entries}, f)
    run = subprocess.run([loom, "calibrate", "--cluster", CLUSTER, "--measured", path, "--fit",
                          "none", "--max-residual", "1000"], capture_output=True, text=True)
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr.strip()
    print("loom calibrate --measured (the same %d iterations, --fit none): %s" %
          (len(entries), last))
    return bad + (run.returncode != 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--max-holdout", type=float, default=12.0)
    ap.add_argument("--max-iteration", type=float, default=30.0)
    args = ap.parse_args()
    loom = os.path.join(args.build, "bin", "loom")
    bad = 0

    (eff, half, r_best), r_file, e = gemm_curve()
    print("GEMM sweep (%s, 72 products, launch %.1f us each): best curve eff %.3f, "
          "half %.3g FLOPs: rms %.1f %%; h200.json's (eff %.3f, half %.3g): rms %.1f %%" %
          (os.path.relpath(os.path.join(DATA, "gemm.csv"), ROOT), e.get("kernel_launch_us", 0),
           eff, half, r_best * 100, e["gemm"], e["gemm_half_flops"], r_file * 100))

    with open(CLUSTER) as f:
        shipped = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        # the uncalibrated start: h200's hardware, the Hopper presets' factors
        start = dict(shipped)
        start["efficiency"] = {"gemm": 0.6, "attention": 0.45, "memory": 0.8,
                               "collective": shipped["efficiency"]["collective"],
                               "gemm_half_flops": 4e9, "attention_half_flops": 4e9,
                               "attention_backward": 2.5}
        start_path = os.path.join(tmp, "h200-start.json")
        with open(start_path, "w") as f:
            json.dump(start, f)
        fitted_path = os.path.join(tmp, "h200-fitted.json")
        cmd = [loom, "calibrate", "--cluster", start_path, "--model",
               os.path.join(ROOT, PROFILES[0][1]), "--profile",
               os.path.join(DATA, "profile-vlm-s.csv"), "--fit", FIT, "--max-residual", "15",
               "--out", fitted_path]
        fit = subprocess.run(cmd, capture_output=True, text=True)
        print("fit: loom calibrate --fit %s on profile-vlm-s.csv: %s" %
              (FIT, fit.stdout.strip().splitlines()[-1] if fit.stdout else fit.stderr.strip()))
        if fit.returncode != 0:
            print("fit failed: %s" % fit.stderr.strip())
            bad += 1
        else:
            with open(fitted_path) as f:
                got = json.load(f)["efficiency"]
            for k in ("gemm", "attention", "memory", "kernel_launch_us"):
                want = shipped["efficiency"][k]
                ok = abs(got[k] - want) <= 0.01 * abs(want) + 1e-9
                bad += not ok
                print("  %-17s fitted %-10.6g h200.json %-10.6g %s" %
                      (k, got[k], want, "ok" if ok else "DIFFERS"))

        print()
        print("| profile | role | rows | rms, Hopper preset factors | rms, h200.json |")
        print("|---|---|---|---|---|")
        for name, model, role in PROFILES:
            prof = os.path.join(DATA, "profile-%s.csv" % name)
            with open(prof) as f:
                n = sum(1 for line in f if line.strip() and not line.startswith("#")) - 1
            before = residual(loom, start_path, os.path.join(ROOT, model), prof)
            after = residual(loom, CLUSTER, os.path.join(ROOT, model), prof)
            ok = role != "held out" or after <= args.max_holdout
            bad += not ok
            print("| %s | %s | %d | %.1f %% | %.1f %%%s |" %
                  (name, role, 2 * n, before, after, "" if ok else " (over %g %%)" % args.max_holdout))
        bad += iterations(loom, tmp, args.max_iteration)
    if args.check and bad:
        print("measured_profiles: %d check(s) failed" % bad, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
