#!/usr/bin/env python3
"""compact_plan.py - plan.json and trace.json of a plan just above and just
below the compact threshold (65536 stages; docs/outputs.md, "Compact form").

Plans two stage-times problems of 4 ranks with forward and backward stages:
8192 microbatches (65536 stages, the full form) and 8193 (65544, the compact
form). Checks, for both, the plan.json schema (on the first 2048 entries of
each per-stage list); for the compact plan that
  - "stages" is a table whose columns are the full form's stage fields
    (less layer_policies, plus fill_hosts) and whose rows are the stage ids
    in order; the first microbatch's stages (ids 0..7, microbatch-major)
    hold the values the full plan's stages of the same ids hold, since
    1F1B runs them before any later microbatch can change them;
  - "rank_actions" is null and "rank_orders" lists every stage exactly once,
    on its own rank, in the order of its start times;
  - trace.json keeps one slice per stage with its id only, and no flows;
and for the full plan that it still writes rank_actions and flows.

Usage: compact_plan.py LOOM_BINARY SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

import jsonschema


def plan(loom, tmp, microbatches):
    st = {"kind": "stage-times", "ranks": 4, "microbatches": microbatches,
          "forward_ms": [1, 1.5, 1, 2], "backward_ms": 2, "p2p_ms": 0.25,
          "activation_bytes": 1}
    src = os.path.join(tmp, "st-%d.json" % microbatches)
    with open(src, "w") as f:
        json.dump(st, f)
    out = os.path.join(tmp, "out-%d" % microbatches)
    subprocess.run([loom, "plan", "--quiet", "--stage-times", src, "--use", "interleaver=1f1b",
                    "--out", out], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "plan.json")) as f:
        doc = json.load(f)
    with open(os.path.join(out, "trace.json")) as f:
        trace = json.load(f)
    return doc, trace


def sample(doc):
    """The document with its per-stage lists cut to their first 2048
    entries: the schema validator takes seconds per thousand rows, and
    the checks below cover every row."""
    doc = dict(doc)
    if isinstance(doc["stages"], list):
        doc["stages"] = doc["stages"][:2048]
        doc["rank_actions"] = [dict(e, actions=e["actions"][:2048]) for e in doc["rank_actions"]]
    else:
        doc["stages"] = dict(doc["stages"], rows=doc["stages"]["rows"][:2048])
        doc["rank_orders"] = [o[:2048] for o in doc["rank_orders"]]
    return doc


def fail(msg):
    print("compact_plan: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    loom, root = sys.argv[1], sys.argv[2]
    with open(os.path.join(root, "docs", "schemas", "plan.schema.json")) as f:
        schema = jsonschema.Draft202012Validator(json.load(f))
    with tempfile.TemporaryDirectory() as tmp:
        full, full_trace = plan(loom, tmp, 8192)
        compact, compact_trace = plan(loom, tmp, 8193)
    for name, doc in (("full", full), ("compact", compact)):
        errors = sorted(schema.iter_errors(sample(doc)), key=lambda e: list(e.path))
        if errors:
            fail("%s plan.json: %s at %s" % (name, errors[0].message,
                                            "/".join(map(str, errors[0].path))))

    if not isinstance(full["stages"], list) or len(full["stages"]) != 65536:
        fail("65536 stages: expected the full form, found %s" % type(full["stages"]).__name__)
    if full["rank_actions"] is None or "rank_orders" in full:
        fail("65536 stages: expected rank_actions and no rank_orders")
    if not any(e.get("ph") == "s" for e in full_trace["traceEvents"]):
        fail("65536 stages: expected flow events in trace.json")

    table = compact["stages"]
    if not isinstance(table, dict):
        fail("65544 stages: expected the compact form, found a %s" % type(table).__name__)
    want = [k for k in full["stages"][0] if k != "layer_policies"] + ["fill_hosts"]
    if table["columns"] != want:
        fail("compact columns: expected %s, found %s" % (want, table["columns"]))
    rows = table["rows"]
    if [r[0] for r in rows] != list(range(65544)):
        fail("compact rows: expected stage ids 0..65543 in order")
    if any(len(r) != len(want) for r in rows):
        fail("compact rows: expected %d values in every row" % len(want))
    col = {c: i for i, c in enumerate(table["columns"])}
    # stage ids are microbatch-major, so the stages of the first microbatch
    # (ids 0..7) and their fields are the same in both plans
    for s in range(8):
        a, b = full["stages"][s], rows[s]
        for c in want[:-1]:
            if a[c] != b[col[c]]:
                fail("stage %d %s: full form %r, compact %r" % (s, c, a[c], b[col[c]]))
    if compact["rank_actions"] is not None:
        fail("compact rank_actions: expected null")
    orders = compact["rank_orders"]
    seen = sorted(s for order in orders for s in order)
    if seen != list(range(65544)):
        fail("rank_orders: expected every stage exactly once")
    for r, order in enumerate(orders):
        starts = [rows[s][col["start_ms"]] for s in order]
        if any(rows[s][col["rank"]] != r for s in order):
            fail("rank_orders[%d]: holds a stage of another rank" % r)
        if starts != sorted(starts):
            fail("rank_orders[%d]: stages not in start order" % r)
    slices = [e for e in compact_trace["traceEvents"] if e.get("ph") == "X"]
    if len(slices) != 65544 or any(set(e["args"]) != {"stage"} for e in slices):
        fail("compact trace.json: expected 65544 slices whose args hold the stage id only")
    if any(e.get("ph") in ("s", "f") for e in compact_trace["traceEvents"]):
        fail("compact trace.json: expected no flow events")
    print("compact_plan: 65536 stages full, 65544 compact; schema, rows, rank_orders and "
          "trace checked")


if __name__ == "__main__":
    main()
