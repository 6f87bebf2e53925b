#!/usr/bin/env python3
"""pytorch_schedule_rules.py CSV [--ranks P] [--stages N] [--microbatches M]

Checks a pipeline schedule CSV (the "compute_only" format that
torch.distributed.pipelining's _load_csv reads) against PyTorch's schedule
rules, as _validate_schedule in torch/distributed/pipelining/schedules.py
states them, plus the pipeline order its runtime executes:

  format    one row per rank; a cell is {stage}{F|I|B|W}{microbatch}, an
            overlapped pair ({stage}F{mb};{stage}B{mb})OVERLAP_F_B (both
            actions in that step, as ScheduleDualPipeV writes them) or empty
            (the rank idles in that step);
  ranks     as many rows as ranks (--ranks, default: the rows);
  stages    stages 0 .. N-1 (--stages, default: the highest stage + 1), each
            on exactly one rank;
  counts    per stage, the F microbatches are exactly 0 .. M-1 (--microbatches,
            default: stage 0's F count), each action at most once, as many I
            as W, and B + (I + W) / 2 == M;
  order     on its rank, the F of (stage, mb) comes before its B or I, and the
            I before its W;
  pipeline  the F of (s, mb) lies in a later column than the F of (s-1, mb),
            the B or I of (s, mb) later than the B or I of (s+1, mb) (of the
            last stage: later than its own F): microbatch mb passes from
            stage s-1 to stage s only.

Exit 0 and print "ok: P ranks, N stages, M microbatches" when every rule
holds; exit 1 with one line naming the rank, step (column), stage and
microbatch of the first violation; exit 2 on usage errors. Python 3
standard library only.
"""
import argparse
import csv
import re
import sys

CELL = re.compile(r"^(\d+)([FIBW])(\d+)$")
OVERLAP = re.compile(r"^\((\d+F\d+);(\d+[BI]\d+)\)OVERLAP_F_B$")


class Violation(Exception):
    """A broken rule; the message names where."""


def parse(path):
    """Rows of (step, stage, kind, mb) per rank, from the CSV file."""
    rows = []
    with open(path, newline="", encoding="utf-8") as fh:
        for rank, row in enumerate(csv.reader(fh)):
            acts = []
            for step, cell in enumerate(row):
                cell = cell.strip()
                if not cell:
                    continue
                pair = OVERLAP.match(cell)
                for sub in pair.groups() if pair else (cell,):
                    m = CELL.match(sub)
                    if not m:
                        raise Violation("rank %d, step %d: cell %r is not {stage}{F|I|B|W}"
                                        "{microbatch} or ({stage}F{mb};{stage}B{mb})OVERLAP_F_B"
                                        % (rank, step, cell))
                    acts.append((step, int(m.group(1)), m.group(2), int(m.group(3))))
            rows.append(acts)
    return rows


def check_ranks_and_stages(rows, ranks, stages):
    """Row count, stage range and one rank per stage; returns (stage -> rank, N)."""
    if ranks is not None and len(rows) != ranks:
        raise Violation("the schedule has %d rows, expected one per rank (%d)" % (len(rows), ranks))
    seen = [s for acts in rows for (_, s, _, _) in acts]
    n = stages if stages is not None else (max(seen) + 1 if seen else 0)
    owner = {}
    for rank, acts in enumerate(rows):
        for step, s, kind, mb in acts:
            if s >= n:
                raise Violation("rank %d, step %d: stage %d is out of range (stages 0..%d)"
                                % (rank, step, s, n - 1))
            if owner.setdefault(s, rank) != rank:
                raise Violation("rank %d, step %d: stage %d is on rank %d and rank %d; each stage "
                                "must be on exactly one rank" % (rank, step, s, owner[s], rank))
    for s in range(n):
        if s not in owner:
            raise Violation("stage %d has no action on any rank" % s)
    return owner, n


def check_order_and_counts(rows, n, microbatches):
    """F before B/I, I before W on each rank; per-stage counts. Returns M and
    the column of every (stage, kind, mb)."""
    col = {}
    for rank, acts in enumerate(rows):
        for step, s, kind, mb in acts:
            key = (s, kind, mb)
            if key in col:
                raise Violation("rank %d, step %d: %d%s%d appears twice" % (rank, step, s, kind, mb))
            if kind in "BI" and (s, "F", mb) not in col:
                raise Violation("rank %d, step %d: %s of stage %d, microbatch %d before its F"
                                % (rank, step, kind, s, mb))
            if kind == "W" and (s, "I", mb) not in col:
                raise Violation("rank %d, step %d: W of stage %d, microbatch %d before its I"
                                % (rank, step, s, mb))
            if kind in "BI" and ((s, "B", mb) in col or (s, "I", mb) in col):
                raise Violation("rank %d, step %d: stage %d, microbatch %d has both B and I"
                                % (rank, step, s, mb))
            col[key] = step
    def count(s, kind):
        return sorted(mb for (st, k, mb) in col if st == s and k == kind)
    m = microbatches if microbatches is not None else len(count(0, "F"))
    for s in range(n):
        f, b, i, w = count(s, "F"), count(s, "B"), count(s, "I"), count(s, "W")
        if f != list(range(m)):
            raise Violation("stage %d runs F of %d microbatches %s, expected %d (0..%d)"
                            % (s, len(f), short(f), m, m - 1))
        if len(i) != len(w):
            raise Violation("stage %d has %d I and %d W; they must be equal" % (s, len(i), len(w)))
        if len(b) + (len(i) + len(w)) // 2 != m:
            raise Violation("stage %d has B=%d, I=%d, W=%d backwards, expected %d"
                            % (s, len(b), len(i), len(w), m))
    return m, col


def check_pipeline(owner, n, m, col):
    """Microbatch mb passes from stage s-1 to stage s only (column order)."""
    for s in range(n):
        for mb in range(m):
            back = "B" if (s, "B", mb) in col else "I"
            f, bk = col[(s, "F", mb)], col[(s, back, mb)]
            if s > 0 and col[(s - 1, "F", mb)] >= f:
                raise Violation("rank %d, step %d: F of stage %d, microbatch %d does not come "
                                "after the F of stage %d (step %d)"
                                % (owner[s], f, s, mb, s - 1, col[(s - 1, "F", mb)]))
            if s + 1 < n:
                nb = col.get((s + 1, "B", mb), col.get((s + 1, "I", mb)))
                if nb >= bk:
                    raise Violation("rank %d, step %d: %s of stage %d, microbatch %d does not "
                                    "come after the backward of stage %d (step %d)"
                                    % (owner[s], bk, back, s, mb, s + 1, nb))
            elif f >= bk:
                raise Violation("rank %d, step %d: %s of the last stage %d, microbatch %d does "
                                "not come after its F (step %d)" % (owner[s], bk, back, s, mb, f))


def short(values):
    """A list, elided past 8 entries."""
    return str(values) if len(values) <= 8 else str(values[:8])[:-1] + ", ...]"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--ranks", type=int)
    ap.add_argument("--stages", type=int)
    ap.add_argument("--microbatches", type=int)
    a = ap.parse_args()
    try:
        rows = parse(a.csv)
        owner, n = check_ranks_and_stages(rows, a.ranks, a.stages)
        m, col = check_order_and_counts(rows, n, a.microbatches)
        check_pipeline(owner, n, m, col)
    except OSError as e:
        print("%s: %s" % (a.csv, e.strerror), file=sys.stderr)
        return 2
    except Violation as v:
        print("%s: %s" % (a.csv, v), file=sys.stderr)
        return 1
    print("ok: %d ranks, %d stages, %d microbatches" % (len(rows), n, m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
