#!/usr/bin/env python3
"""check_dualpipe_v.py SOURCE_DIR LOOM_BINARY - the dualpipe-v interleaver's
schedule.csv is PyTorch's ScheduleDualPipeV, action for action.

For P ranks (2P stages on the V placement) and M >= 2P microbatches, Loom
plans a uniform stage-times problem with `--use interleaver=dualpipe-v`
and writes schedule.csv. The check then:

1. reads every row with PyTorch's own cell parser (_Action.from_str, which
   _load_csv uses) and compares the row's actions, blanks dropped, with
   ScheduleDualPipeV._calculate_single_rank_operations(rank) of the
   installed PyTorch (the order its constructor builds), by their repr
   (`0F3`, `7I2`, `(0F7;7B3)OVERLAP_F_B`);
2. loads the file with PipelineScheduleMulti._load_csv's reader path
   (_Action.from_str per cell, _validate_and_set_stage_mapping), which
   derives the V stage-to-rank map from it.

A self-test first checks that a file with two actions of a rank swapped
fails. Exit 0 printing one "ok" line per case; exit 1 naming the first rank and
action that differ. Needs torch (the project's venv).
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

CASES = [(2, 4), (2, 5), (3, 6), (3, 8), (4, 8), (4, 10), (4, 13), (5, 12), (8, 16), (8, 21)]


def torch_order(P, M):
    """ScheduleDualPipeV's compute actions per rank, without process groups:
    its constructor needs stages, the order needs only P and M."""
    from torch.distributed.pipelining.schedules import ScheduleDualPipeV
    sched = ScheduleDualPipeV.__new__(ScheduleDualPipeV)
    sched.pp_group_size = P
    sched._n_microbatches = M
    return [[a for a in sched._calculate_single_rank_operations(r) if a is not None]
            for r in range(P)]


def loom_csv(loom, P, M, tmp):
    """Plans the uniform problem; returns schedule.csv's path."""
    st = os.path.join(tmp, "p%d-m%d.json" % (P, M))
    with open(st, "w", encoding="utf-8") as fh:
        json.dump({"kind": "stage-times", "ranks": P, "microbatches": M, "virtual_stages": 2,
                   "placement": "v", "forward_ms": 1, "input_grad_ms": 1, "weight_grad_ms": 1,
                   "p2p_ms": 0, "activation_bytes": 1}, fh)
    out = os.path.join(tmp, "out-p%d-m%d" % (P, M))
    subprocess.run([loom, "plan", "--stage-times", st, "--use", "interleaver=dualpipe-v",
                    "--out", out, "--quiet"], check=True)
    return os.path.join(out, "schedule.csv")


def compare(path, P, M):
    """None when the file's rows are PyTorch's order, else the difference."""
    from torch.distributed.pipelining.schedules import _Action
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [[_Action.from_str(c) for c in row if c.strip()] for row in csv.reader(fh)]
    want = torch_order(P, M)
    if len(rows) != P:
        return "%d rows, expected %d" % (len(rows), P)
    for r in range(P):
        got = [repr(a) for a in rows[r]]
        exp = [repr(a) for a in want[r]]
        for i in range(max(len(got), len(exp))):
            g = got[i] if i < len(got) else "(end)"
            e = exp[i] if i < len(exp) else "(end)"
            if g != e:
                return "rank %d, action %d: schedule.csv has %s, ScheduleDualPipeV %s" % (r, i, g, e)
    return None


def load_with_pytorch(path, P, M):
    """The stage-to-rank map PyTorch's CSV loader derives from the file."""
    from torch.distributed.pipelining.schedules import PipelineScheduleMulti, _Action
    sched = PipelineScheduleMulti.__new__(PipelineScheduleMulti)
    sched.pipeline_order = {}
    sched.pp_group_size = P
    sched._num_stages = 2 * P
    sched._n_microbatches = M
    sched._stages = []
    with open(path, newline="", encoding="utf-8") as fh:
        for rank, row in enumerate(csv.reader(fh)):
            sched.pipeline_order[rank] = [_Action.from_str(s) for s in row]
    sched._validate_and_set_stage_mapping(sched.pipeline_order)
    return dict(sched.stage_index_to_group_rank)


def self_test(tmp):
    """compare() fails a file whose rank 1 runs two actions swapped."""
    rows = [[repr(a) for a in row] for row in torch_order(2, 4)]
    rows[1][0], rows[1][1] = rows[1][1], rows[1][0]
    path = os.path.join(tmp, "swapped.csv")
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    diff = compare(path, 2, 4) or ""
    want = "rank 1, action 0: schedule.csv has %s, ScheduleDualPipeV %s" % (rows[1][0], rows[1][1])
    if diff != want:
        print("FAIL: self-test: %r, expected %r" % (diff, want))
        return 1
    return 0


def main():
    if len(sys.argv) != 3:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    loom = os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        bad = self_test(tmp)
        for P, M in CASES:
            path = loom_csv(loom, P, M, tmp)
            diff = compare(path, P, M)
            if diff is None:
                stages = load_with_pytorch(path, P, M)
                want = {s: (s if s < P else 2 * P - 1 - s) for s in range(2 * P)}
                if stages != want:
                    diff = "PyTorch's loader maps stages %s, expected %s" % (stages, want)
            if diff:
                print("FAIL: P=%d M=%d: %s" % (P, M, diff))
                bad += 1
            else:
                print("ok: P=%d M=%d: schedule.csv is ScheduleDualPipeV's order" % (P, M))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
