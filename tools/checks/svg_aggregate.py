#!/usr/bin/env python3
"""svg_aggregate.py - timeline.svg just above and just below the compact
threshold (65536 stages; docs/outputs.md, "SVG timeline").

Plans stage-times problems of 4 ranks:
  - 8192 microbatches of F and B under 1F1B (65536 stages): the full form,
    one <rect class="stage"> per stage and no note;
  - 8193 microbatches of F and B under 1F1B (65544 stages) and 2800 of F,
    I and W on two chunks a rank under interleaved 1F1B (67200 stages):
    the aggregated form; and 32 microbatches on one rank of 2048 chunks
    (131072 stages, 2048 colour groups), whose columns the busy-cell budget
    caps. For these it checks that the file is XML, that it carries the
    note and no stage rectangles, that its size is within the documented
    bound
        65536 + 400 * G + R * (2048 + 60 * W + 400 * min(W, 16 * G)) bytes
    (R ranks, W columns per row, G colour groups), that W is within the
    cell budgets (R * W <= 2^20 and W * 4G <= 2^22, or 16), and that every
    rank row draws exactly the columns recomputed here from plan.json: for each column the (chunk, kind) with
    most busy time (fills left out) and the busy share rounded up to a
    quarter, as runs of one path per class, with hatched copies for I and W.

Usage: svg_aggregate.py LOOM_BINARY
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
THRESHOLD = 65536
CELLS = 1048576
BUSY_CELLS = 4194304
MIN_COLS = 16
KINDS = "FBIW"
KIND_LABEL = {"F": "F forward", "B": "B backward", "I": "I input gradient",
              "W": "W weight gradient"}


def fail(msg):
    print("svg_aggregate: " + msg, file=sys.stderr)
    sys.exit(1)


def plan(loom, tmp, name, st, interleaver="1f1b"):
    src = os.path.join(tmp, name + ".json")
    with open(src, "w") as f:
        json.dump(st, f)
    out = os.path.join(tmp, name)
    subprocess.run([loom, "plan", "--quiet", "--stage-times", src, "--use", "interleaver=" + interleaver,
                    "--out", out], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "plan.json")) as f:
        doc = json.load(f)
    path = os.path.join(out, "timeline.svg")
    return doc, path


def expected_rows(doc, cols, span):
    """Per rank: {(chunk, kind, quarter): [(first column, length), ...]},
    the aggregation out_svg_agg.c performs, in the same float steps."""
    table = doc["stages"]
    ix = {c: i for i, c in enumerate(table["columns"])}
    rows = table["rows"]
    col_ms = span / cols if span > 0 else 1.0
    result = []
    for order in doc["rank_orders"]:
        busy = [dict() for _ in range(cols)]
        for s in order:
            row = rows[s]
            if row[ix["fill_hosts"]]:
                continue
            key = row[ix["chunk"]] * 4 + KINDS.index(row[ix["kind"]])
            t0, t1 = row[ix["start_ms"]], row[ix["end_ms"]]
            if not t1 > t0:
                continue
            c0 = min(max(math.floor(t0 / col_ms), 0), cols - 1)
            c1 = min(max(math.floor(t1 / col_ms), 0), cols - 1)
            for c in range(c0, c1 + 1):
                lo = c * col_ms
                hi = t1 if c == cols - 1 else (c + 1) * col_ms
                ov = min(t1, hi) - max(t0, lo)
                if ov > 0:
                    busy[c][key] = busy[c].get(key, 0.0) + ov
        cls = []
        for b in busy:
            total, best = 0.0, None
            for k in sorted(b):
                total += b[k]
                if best is None or b[k] > b[best]:
                    best = k
            if total <= col_ms * 1e-9:
                cls.append(None)
                continue
            quarter = min(max(math.ceil(total / col_ms * 4), 1), 4)
            cls.append((best // 4, KINDS[best % 4], quarter))
        runs = {}
        c = 0
        while c < cols:
            e = c + 1
            while e < cols and cls[e] == cls[c]:
                e += 1
            if cls[c] is not None:
                runs.setdefault(cls[c], []).append((c, e - c))
            c = e
        result.append(runs)
    return result


def drawn_rows(root, ranks, col_px, left, top, lane, gap):
    """Per rank: {(chunk, kind, quarter): runs} read back from the paths."""
    rows = [dict() for _ in range(ranks)]
    hatches = [[] for _ in range(ranks)]
    title_re = re.compile(r"rank (\d+): mostly (\w) [a-z ]+, chunk (\d+); busy (\d+)-(\d+) % "
                          r"of each column$")
    run_re = re.compile(r"M(\d+) (\d+)h(\d+)v(\d+)h-(\d+)z")
    for path in root.iter(NS + "path"):
        d = path.get("d")
        rects = run_re.findall(d)
        if "".join("M%s %sh%sv%sh-%sz" % r for r in rects) != d:
            fail("path data %r is not a list of rectangles" % d[:80])
        ys = {int(r[1]) for r in rects}
        if len(ys) != 1:
            fail("one path spans several rows: %s" % sorted(ys))
        y = ys.pop()
        rank, rem = divmod(y - top, lane + gap)
        if rem or not 0 <= rank < ranks:
            fail("path at y=%d is on no rank row" % y)
        runs = []
        for x, _, w, h, w2 in rects:
            x, w = int(x), int(w)
            if int(h) != lane or int(w2) != w or (x - left) % col_px or w % col_px:
                fail("rank %d: rectangle M%s off the column grid" % (rank, x))
            runs.append(((x - left) // col_px, w // col_px))
        if path.get("class") == "hatch":
            hatches[rank].append((path.get("fill"), runs))
            continue
        title = path.find(NS + "title").text
        m = title_re.match(title)
        if not m or int(m.group(1)) != rank:
            fail("rank %d: path title %r" % (rank, title))
        quarter = int(m.group(5)) // 25
        if int(m.group(4)) != 25 * (quarter - 1):
            fail("title %r: busy range is not a quarter" % title)
        opacity = path.get("fill-opacity")
        if (opacity is None) != (quarter == 4) or (opacity and float(opacity) != quarter / 4):
            fail("title %r with fill-opacity %r" % (title, opacity))
        key = (int(m.group(3)), m.group(2), quarter)
        if key in rows[rank]:
            fail("rank %d: two paths for %s" % (rank, key))
        rows[rank][key] = runs
    return rows, hatches


def check_aggregated(loom, tmp, name, st, interleaver="1f1b"):
    doc, path = plan(loom, tmp, name, st, interleaver)
    n_stages = len(doc["stages"]["rows"])
    if n_stages <= THRESHOLD:
        fail("%s: %d stages, expected more than %d" % (name, n_stages, THRESHOLD))
    size = os.path.getsize(path)
    root = ET.parse(path).getroot()
    notes = [t.text for t in root.iter(NS + "text") if t.get("class") == "note"]
    want = ("Aggregated view: the plan has %d stages, more than %d, so each rank row is drawn as "
            % (n_stages, THRESHOLD))
    if len(notes) != 2 or not notes[0].startswith(want):
        fail("%s: note %r, expected it to start with %r" % (name, notes, want))
    m = re.search(r"drawn as (\d+) columns of (\d+) px, ", notes[0])
    cols, col_px = int(m.group(1)), int(m.group(2))
    if root.find(".//%srect[@class='stage']" % NS) is not None:
        fail("%s: aggregated picture still has stage rectangles" % name)
    ranks = st["ranks"]
    lanes = [r for r in root.iter(NS + "rect") if r.get("class") == "lane"]
    if len(lanes) != ranks or any(int(r.get("width")) != cols * col_px for r in lanes):
        fail("%s: lanes are not %d x %d px wide" % (name, cols, col_px))
    groups = 1 + max(r[6] for r in doc["stages"]["rows"])
    if cols > max(MIN_COLS, min(CELLS // ranks, BUSY_CELLS // (4 * groups))):
        fail("%s: %d columns for %d ranks and %d groups exceed the cell budgets"
             % (name, cols, ranks, groups))
    bound = 65536 + 400 * groups + ranks * (2048 + 60 * cols + 400 * min(cols, 16 * groups))
    if size > bound:
        fail("%s: timeline.svg is %d bytes, over the bound %d" % (name, size, bound))
    left, top = int(lanes[0].get("x")), int(lanes[0].get("y"))
    lane = int(lanes[0].get("height"))
    gap = int(lanes[1].get("y")) - top - lane if ranks > 1 else 0
    span = max([doc["metrics"]["makespan_ms"]] + [r[12] for r in doc["stages"]["rows"]])
    want_rows = expected_rows(doc, cols, span)
    got_rows, hatches = drawn_rows(root, ranks, col_px, left, top, lane, gap)
    for r in range(ranks):
        if got_rows[r] != want_rows[r]:
            got = {(k, tuple(v)) for k, v in got_rows[r].items()}
            want = {(k, tuple(v)) for k, v in want_rows[r].items()}
            diff = ["%s %s: %s" % ("drawn" if d in got else "expected", d[0], d[1][:4])
                    for d in sorted(got ^ want, key=str)[:4]]
            fail("%s: rank %d draws other columns than plan.json gives: %s"
                 % (name, r, "; ".join(diff)))
        want_h = sorted(("url(#hatch-%s)" % ("light" if k[1] == "I" else "dark"), v)
                        for k, v in want_rows[r].items() if k[1] in "IW")
        if sorted(hatches[r]) != want_h:
            fail("%s: rank %d hatching differs from its I and W columns" % (name, r))
    print("%s: %d stages, %d ranks x %d columns of %d px, %d bytes (bound %d), %d paths"
          % (name, n_stages, ranks, cols, col_px, size, bound,
             sum(len(x) for x in got_rows)))


def check_full(loom, tmp):
    st = {"kind": "stage-times", "ranks": 4, "microbatches": 8192, "forward_ms": [1, 1.5, 1, 2],
          "backward_ms": 2, "p2p_ms": 0.25, "activation_bytes": 1}
    _, path = plan(loom, tmp, "full", st)
    root = ET.parse(path).getroot()
    stages = sum(1 for r in root.iter(NS + "rect") if r.get("class") == "stage")
    notes = [t for t in root.iter(NS + "text") if t.get("class") == "note"]
    if stages != 65536 or notes or root.find(".//%spath" % NS) is not None:
        fail("65536 stages: %d stage rectangles, %d notes; expected the full form"
             % (stages, len(notes)))
    print("full: 65536 stage rectangles, no note")


def main():
    if len(sys.argv) != 2:
        fail("usage: svg_aggregate.py LOOM_BINARY")
    loom = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        check_full(loom, tmp)
        check_aggregated(loom, tmp, "fb", {
            "kind": "stage-times", "ranks": 4, "microbatches": 8193,
            "forward_ms": [1, 1.5, 1, 2], "backward_ms": 2, "p2p_ms": 0.25,
            "activation_bytes": 1})
        check_aggregated(loom, tmp, "fiw", {
            "kind": "stage-times", "ranks": 4, "microbatches": 2800, "virtual_stages": 2,
            "forward_ms": 1, "input_grad_ms": [1, 0.5] * 4, "weight_grad_ms": 0.75,
            "p2p_ms": 0.1, "activation_bytes": 1}, "interleaved-1f1b")
        check_aggregated(loom, tmp, "chunks", {
            "kind": "stage-times", "ranks": 1, "microbatches": 32, "virtual_stages": 2048,
            "forward_ms": 1, "backward_ms": 2, "p2p_ms": 0, "activation_bytes": 1},
            "interleaved-1f1b")
    print("svg_aggregate: ok")


if __name__ == "__main__":
    main()
