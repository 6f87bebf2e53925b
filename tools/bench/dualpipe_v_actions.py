#!/usr/bin/env python3
"""dualpipe_v_actions.py LOOM_BINARY - dualpipe-v's simulated makespan against
an action-level replay of PyTorch's ScheduleDualPipeV order.

For uniform V-placement stage-times problems (chunk F, I, W in ms, no P2P
time), prints per (P, M = 2P, F:I:W) Loom's makespan (`loom plan
--stage-times ... --use interleaver=dualpipe-v --json`) and the makespan of
the installed PyTorch's order replayed action by action: each rank runs its
actions in order; an action starts when the rank is free and every input
from outside the action is ready; it lasts the sum of its parts (F, I, W,
B = I + W, OVERLAP_F_B = F + B); all its outputs are ready when it ends
(PyTorch's runtime sends after the whole action). Loom's simulator instead
hands an I's gradient on when the I ends, inside a full backward or a pair
(docs/search.md, dualpipe-v). Needs torch (the project's venv).
"""
import json
import os
import subprocess
import sys
import tempfile

from torch.distributed.pipelining.schedules import ScheduleDualPipeV, _ComputationType as C

KIND = {C.FORWARD: "F", C.BACKWARD_INPUT: "I", C.FULL_BACKWARD: "I", C.BACKWARD_WEIGHT: "W"}


def torch_order(P, M):
    """ScheduleDualPipeV's compute actions per rank (no process group needed)."""
    s = ScheduleDualPipeV.__new__(ScheduleDualPipeV)
    s.pp_group_size = P
    s._n_microbatches = M
    return [[a for a in s._calculate_single_rank_operations(r) if a is not None]
            for r in range(P)]


def inputs(a, n_stages):
    """The (stage, kind, mb) results action part a waits for."""
    s, k, mb = a.stage_index, a.computation_type, a.microbatch_index
    if k == C.FORWARD:
        return [(s - 1, "F", mb)] if s > 0 else []
    if k == C.BACKWARD_WEIGHT:
        return [(s, "I", mb)]
    return [(s + 1, "I", mb)] if s < n_stages - 1 else [(s, "F", mb)]


def replay(P, M, f, i, w):
    """Makespan of the action-level replay."""
    ms = {C.FORWARD: f, C.BACKWARD_INPUT: i, C.BACKWARD_WEIGHT: w, C.FULL_BACKWARD: i + w}
    rows, ready, cur, free = torch_order(P, M), {}, [0] * P, [0.0] * P
    moved = True
    while moved:
        moved = False
        for r in range(P):
            while cur[r] < len(rows[r]):
                parts = rows[r][cur[r]].sub_actions or (rows[r][cur[r]],)
                own = {(x.stage_index, KIND[x.computation_type], x.microbatch_index)
                       for x in parts}
                need = [d for x in parts for d in inputs(x, 2 * P) if d not in own]
                if any(d not in ready for d in need):
                    break
                end = max([free[r]] + [ready[d] for d in need]) + sum(
                    ms[x.computation_type] for x in parts)
                for x in parts:
                    ready[(x.stage_index, KIND[x.computation_type], x.microbatch_index)] = end
                    if x.computation_type == C.FULL_BACKWARD:
                        ready[(x.stage_index, "W", x.microbatch_index)] = end
                free[r] = end
                cur[r] += 1
                moved = True
    assert all(cur[r] == len(rows[r]) for r in range(P)), "the order deadlocks"
    return max(free)


def loom_makespan(loom, P, M, f, i, w, tmp):
    """Loom's simulated makespan of the same problem."""
    path = os.path.join(tmp, "st.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"kind": "stage-times", "ranks": P, "microbatches": M, "virtual_stages": 2,
                   "placement": "v", "forward_ms": f, "input_grad_ms": i, "weight_grad_ms": w,
                   "p2p_ms": 0, "activation_bytes": 1}, fh)
    out = subprocess.run([loom, "plan", "--stage-times", path, "--use", "interleaver=dualpipe-v",
                          "--json", "--quiet"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["makespan_ms"]


def main():
    if len(sys.argv) != 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    loom = os.path.abspath(sys.argv[1])
    print("| F:I:W | P, M | Loom | action-level replay |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for f, i, w in ((1, 1, 1), (2, 1, 1), (1, 2, 1), (1, 1, 2)):
            for P in (2, 4, 8):
                M = 2 * P
                print("| %g:%g:%g | %d, %d | %g | %g |" % (
                    f, i, w, P, M, loom_makespan(loom, P, M, f, i, w, tmp),
                    replay(P, M, f, i, w)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
