#!/usr/bin/env python3
"""v_schedules.py - makespan, bubble and peak activation memory of the
V-shape interleavers (zb-v: ZB-V / V-ZB, V-Half, V-Min) against 1F1B on
uniform stage-times problems (docs/search.md, section zb-v).

Each (P, M) case is a stage-times problem on the V placement with chunk
F = I = W = 1 ms and one byte per chunk, and the same layers as a P-stage
1F1B problem (F = 2, B = 4, two bytes per stage). Every run goes through
`loom plan --stage-times --json`; the table prints makespan ms / bubble /
largest per-rank peak.

usage: tools/bench/v_schedules.py [--build build] [--cases 4x8,4x16,8x16,8x32]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def plan(loom, path, interleaver, variant):
    cmd = [loom, "plan", "--stage-times", path, "--use", "interleaver=" + interleaver,
           "--json", "--quiet"]
    if variant:
        cmd += ["--param", "interleaver.variant=" + variant]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return "%g / %.1f %% / %d" % (doc["makespan_ms"], 100 * doc["bubble_ratio"],
                                  max(doc["peak_mem_bytes"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--cases", default="4x8,4x16,8x16,8x32")
    args = ap.parse_args()
    loom = os.path.join(args.build, "bin", "loom")
    print("| P, M | 1F1B | zb-v | v-half | v-min |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases.split(","):
            p, m = (int(x) for x in case.split("x"))
            v_path = os.path.join(tmp, "v.json")
            o_path = os.path.join(tmp, "1f1b.json")
            with open(v_path, "w", encoding="utf-8") as f:
                json.dump({"kind": "stage-times", "ranks": p, "microbatches": m,
                           "virtual_stages": 2, "placement": "v", "forward_ms": 1,
                           "input_grad_ms": 1, "weight_grad_ms": 1}, f)
            with open(o_path, "w", encoding="utf-8") as f:
                json.dump({"kind": "stage-times", "ranks": p, "microbatches": m,
                           "forward_ms": 2, "backward_ms": 4, "activation_bytes": 2}, f)
            row = [plan(loom, o_path, "1f1b", None)]
            row += [plan(loom, v_path, "zb-v", v) for v in ("zb-v", "v-half", "v-min")]
            print("| %d, %d | %s |" % (p, m, " | ".join(row)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
