"""A plan executed by PyTorch's own pipelining runtime (docs/executor.md,
"Runtimes"): each rank builds a torch.distributed.pipelining.PipelineStage
per position it holds, loads the schedule.csv lying beside plan.json into
_PipelineScheduleRuntime with _load_csv(format="compute_only") and runs
one step(). PyTorch decides every send, receive, forward and (split)
backward; this module only supplies the stage modules, the data and the
checks' bookkeeping.

Numbering (docs/outputs.md, "PyTorch schedule CSV"): PyTorch stage g is
the g-th position counting flow by flow (one flow: the flow's position g;
a chain of flows, each fed by the one before, as a DistTrain plan has);
PyTorch microbatch u is each flow's u-th (microbatch, sub) unit (without
sub-microbatches: microbatch u).

PyTorch 2.13's PipelineStage allocates every receive buffer once, from one
shape per stage boundary (given here statically, so no metadata inference
runs), so a boundary's tensor has the same rows for every microbatch. A
Loom plan's microbatches hold different samples and token counts: each
stage therefore hands on its real rows followed by zero rows up to the
largest microbatch's count at that boundary, and the next stage reads the
real rows only (it knows its microbatch from the `mb` keyword argument the
runtime passes to every stage; at a flow's start it takes its samples' rows
out of the previous flow's output, as Loom's runtime does). The padding rows carry no computation and
get zero gradient; every microbatch holds exactly the plan's samples.
"""

import csv as _csv
import datetime
import logging
import os
import re
import pickle
import time
import traceback

import torch
import torch.distributed as dist
import torch.utils.checkpoint
from torch import nn

from . import layers as L
from .driver import join_group
from .engine import _offload_pack, _offload_unpack
from .errors import CheckError, InputError
from .runtime import chunk_pieces

SCHEDULES_LOGGER = "torch.distributed.pipelining.schedules"
ACTION_CELL = re.compile(r"^(\d+)([FBIW])(\d+)$")
OVERLAP_CELL = re.compile(r"^\((.*);(.*)\)OVERLAP_F_B$")  # ScheduleDualPipeV's pairs
KIND_WORDS = {"F": "forward", "B": "backward", "I": "input-gradient backward",
              "W": "weight-gradient backward", "SEND_F": "send of the activations",
              "RECV_F": "receive of the activations", "SEND_B": "send of the gradient",
              "RECV_B": "receive of the gradient"}


# -- which plans PyTorch's runtime can run ------------------------------------

def schedule_csv_path(plan):
    """The schedule.csv beside the plan's plan.json."""
    return os.path.join(os.path.dirname(os.path.abspath(plan.path)), "schedule.csv")


def _reason(obj, key):
    """obj[key] as a reason text, or a placeholder when absent."""
    r = obj.get(key) if isinstance(obj, dict) else None
    return r if isinstance(r, str) and r else "no reason given"


def pipelining_missing():
    """None when this PyTorch has the pipelining runtime used here, else why not."""
    try:
        from torch.distributed.pipelining import PipelineStage  # noqa: F401
        from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime
    except ImportError as e:
        return "this PyTorch (%s) has no torch.distributed.pipelining runtime (%s)" % (
            torch.__version__, e)
    if not hasattr(_PipelineScheduleRuntime, "_load_csv"):
        return "this PyTorch's (%s) _PipelineScheduleRuntime has no _load_csv" % torch.__version__
    return None


def not_expressible(plan):
    """None when PyTorch's runtime can run the plan, else why not: the
    plan's own verdicts (schedule_csv, placement) first, then what this
    runtime needs besides (one flow, one sub per microbatch, the CSV, a
    PyTorch with the runtime)."""
    sc, pl = plan.doc.get("schedule_csv"), plan.doc.get("placement")
    if not isinstance(sc, dict) or sc.get("written") is not True:
        return "plan.json's schedule_csv.written is not true: %s" % _reason(sc, "reason")
    if not isinstance(pl, dict) or pl.get("style") is None:
        return "plan.json's placement.style is null: %s" % _reason(pl, "reason")
    for f, fl in enumerate(plan.flows):
        if fl["inputs"] != ([f - 1] if f else []):
            return ("flow %d's inputs are %s: PyTorch's runtime runs one chain of stages (each "
                    "flow fed by the one before)" % (f, fl["inputs"]))
        units = pipeline_units(plan, f)
        if len(units) != len(pipeline_units(plan, 0)):
            return ("flow %d has %d (sub-)microbatches, flow 0 %d: PyTorch's runtime has one "
                    "microbatch count" % (f, len(units), len(pipeline_units(plan, 0))))
        missing = [u for u in units if (f, u[0], u[1]) not in plan.units]
        if missing:
            return "flow %d microbatch %d sub %d has no data entry" % ((f,) + missing[0])
    stages = pipeline_stages(plan)
    early = [g for g, (f, p) in enumerate(stages[:-1]) if plan.flows[f]["positions"][p]["out_loss"]]
    if early:
        return "stage %d computes a loss before the last stage" % early[0]
    ranks = [plan.flows[f]["positions"][p]["rank"] for f, p in stages]
    if pl.get("stage_ranks") != ranks:
        return ("placement.stage_ranks %s differs from the partition's position ranks %s"
                % (pl.get("stage_ranks"), ranks))
    csv = schedule_csv_path(plan)
    if not os.path.isfile(csv):
        return "%s is missing (plan.json's schedule_csv.written is true)" % csv
    return pipelining_missing() or loss_order_problem(csv, len(stages), len(pipeline_units(plan, 0)))


def loss_order_problem(csv, n_stages, n_micro):
    """None when the last stage runs its forwards in microbatch order 0, 1,
    ..., else why PyTorch 2.13's runtime cannot run the file: it keeps the
    last stage's losses in the order the forwards ran and hands microbatch
    u's backward the u-th of them (_maybe_get_loss). A file PyTorch's loader
    would refuse anyway is left to it (None)."""
    last = n_stages - 1
    order = []
    try:
        with open(csv, newline="") as fh:
            for row in _csv.reader(fh):
                for cell in row:
                    pair = OVERLAP_CELL.match(cell.strip())
                    for sub in pair.groups() if pair else (cell,):
                        m = ACTION_CELL.match(sub.strip())
                        if m and int(m.group(1)) == last and m.group(2) == "F":
                            order.append(int(m.group(3)))
    except (OSError, UnicodeDecodeError, _csv.Error):
        return None
    if sorted(order) != list(range(n_micro)) or order == sorted(order):
        return None
    return ("%s: the last stage (%d) runs its forwards in the microbatch order %s; PyTorch %s's "
            "_PipelineScheduleRuntime keeps the last stage's losses in the order its forwards ran "
            "and gives microbatch u's backward the u-th of them (_maybe_get_loss), so it runs only "
            "schedules whose last stage takes microbatches 0, 1, ... in order"
            % (csv, last, ", ".join(str(u) for u in order), torch.__version__.split("+")[0]))


def pipeline_stages(plan):
    """PyTorch's stages in order: (flow, position), flow by flow."""
    return [(f, p) for f, fl in enumerate(plan.flows) for p in range(len(fl["positions"]))]


def pipeline_units(plan, f):
    """Flow f's (microbatch, sub) units in PyTorch microbatch order."""
    return [(mb, sub) for mb in range(plan.microbatches)
            for sub in range(plan.flows[f]["subs"][mb])]


# -- the stage modules ---------------------------------------------------------

def out_layout(plan, f, p, u, loss_rows):
    """[(key, rows)] of what position p of flow f hands on for PyTorch
    microbatch u, and that unit."""
    mb, sub = pipeline_units(plan, f)[u]
    unit = plan.unit(f, mb, sub, loss_rows)
    pos = plan.flows[f]["positions"][p]
    return plan.layout(unit, pos["out_keys"], pos["out_module"]), unit


def boundary_rows(plan, loss_rows):
    """Per stage: rows of the tensor leaving it, the largest over the
    microbatches (its state keys stacked in canonical order)."""
    rows = []
    for f, p in pipeline_stages(plan):
        rows.append(max(sum(r for _, r in out_layout(plan, f, p, u, loss_rows)[0])
                        for u in range(len(pipeline_units(plan, f)))))
    return rows


def run_piece(pc, P, unit, state):
    """Runs one piece on `state` with its graph kept: a recomputed piece
    through torch.utils.checkpoint (recomputed in the backward), an
    offloaded one with saved-tensor hooks copying what autograd saves."""
    ins = {k: state[k] for k in pc.reads}
    if pc.recompute:
        keys = list(pc.reads)

        def fn(*tensors):
            """The piece on positional tensors, as checkpoint() calls it."""
            res = pc.fn(P, unit, dict(zip(keys, tensors)))
            return tuple(res[k] for k in pc.writes)
        vals = torch.utils.checkpoint.checkpoint(fn, *[ins[k] for k in keys], use_reentrant=False)
        out = dict(zip(pc.writes, vals))
    elif pc.offload:
        with torch.autograd.graph.saved_tensors_hooks(_offload_pack, _offload_unpack):
            out = pc.fn(P, unit, ins)
    else:
        out = pc.fn(P, unit, ins)
    for k in pc.drops:
        state.pop(k, None)
    state.update(out)


class PlanStage(nn.Module):
    """Position p of flow f as the module of its PyTorch stage: forward(x,
    mb) runs the position's layers on the samples of the flow's unit mb,
    under that unit's layer policies, and returns the padded output (or, at
    the last stage, the unit's share of the loss)."""

    def __init__(self, plan, f, p, params, seed, loss_rows, rows_out):
        """`params`: name -> nn.Parameter of every layer the position holds."""
        super().__init__()
        self.plan, self.f, self.p, self.seed, self.loss_rows = plan, f, p, seed, loss_rows
        self.pos = plan.flows[f]["positions"][p]
        self.units = pipeline_units(plan, f)
        self.rows_out = rows_out
        self.P = params
        for name, t in params.items():
            self.register_parameter(name.replace(".", "__"), t)
        self.chunks = {}

    def pieces(self, u):
        """The pieces of unit u (its stage's layer policies), made once."""
        mb, sub = self.units[u]
        sid = self.plan.stage_of[(self.f, self.p, mb, sub, "F")]
        pols = tuple(self.plan.stages[sid]["policies"])
        if pols not in self.chunks:
            self.chunks[pols] = chunk_pieces(self.plan, self.f, self.p, list(pols), self.seed)
        return self.chunks[pols]

    def input_state(self, x, u, unit):
        """The state the position starts from, taken from the real rows of x:
        within a flow split by key; at a flow's start, per key the rows of
        this unit's samples out of the previous flow's last stage's output."""
        if self.p == 0 and self.f == 0:
            return {}
        if self.p > 0:
            lay = self.plan.layout(unit, self.pos["in_keys"], self.pos["in_module"])
            sizes = [r for _, r in lay]
            parts = torch.split(x[:sum(sizes)], sizes, 0) if sizes else []
            return {k: part for (k, _), part in zip(lay, parts)}
        prev = self.f - 1
        lay, punit = out_layout(self.plan, prev, len(self.plan.flows[prev]["positions"]) - 1, u,
                                self.loss_rows)
        rows, off = {}, 0
        for k, _ in lay:
            for s, n in zip(punit.samples, punit.own(self.plan.spec.by_name[k[4:]])):
                rows[(k, s)] = (off, n)
                off += n
        state = {}
        for k in self.pos["in_keys"]:
            own = unit.own(self.plan.spec.by_name[k[4:]])
            parts = []
            for s, n in zip(unit.samples, own):
                if n and (k, s) not in rows:
                    raise CheckError("flow %d unit %s holds sample %d, which flow %d's unit %s "
                                     "lacks" % (self.f, self.units[u], s, prev, self.units[u]))
                o = rows.get((k, s), (0, 0))[0]
                parts.append(x[o:o + n])
            state[k] = torch.cat(parts, 0) if parts else x[:0]
        return state

    def forward(self, x, mb):
        """x: the previous stage's padded output (stage 0: the microbatch id);
        mb: the PyTorch microbatch id, a one-element tensor."""
        u = int(mb.reshape(-1)[0])
        unit = self.plan.unit(self.f, self.units[u][0], self.units[u][1], self.loss_rows)
        state = self.input_state(x, u, unit)
        for pc in self.pieces(u):
            run_piece(pc, self.P, unit, state)
        if self.pos["out_loss"]:
            return state["loss"]
        real = torch.cat([state[k] for k in self.pos["out_keys"]], 0)
        pad = self.rows_out - real.shape[0]
        out = torch.cat([real, real.new_zeros(pad, real.shape[1])], 0) if pad else real
        # every boundary carries a gradient, as the plan's transfers do; the
        # output of frozen layers only becomes a leaf that takes it
        return out if out.requires_grad else out.requires_grad_(True)


def stage_params(plan, f, p, seed):
    """The parameters of the layers of flow f's position p, as
    nn.Parameters (frozen modules' without gradients), seeded as everywhere
    else."""
    layers = {(m, layer) for m, first, n in plan.flows[f]["positions"][p]["spans"]
              for layer in range(first, first + n)}
    names = {n for n, (_, where) in L.param_shapes(plan.spec).items() if where in layers}
    return {n: nn.Parameter(t.detach(), requires_grad=t.requires_grad)
            for n, t in L.make_params(plan.spec, seed, names).items()}


def build_stages(plan, rank, seed, group):
    """The PipelineStages of this rank (ascending stage index) with static
    shapes: stage 0 takes the microbatch id, stage g > 0 the padded
    [rows, hidden] tensor of boundary g - 1 (with a gradient: PyTorch's
    split backward finds a stage's weight gradients through its input), the
    last stage gives the loss."""
    from torch.distributed.pipelining import PipelineStage

    loss_rows = plan.loss_rows()
    rows = boundary_rows(plan, loss_rows)
    order = pipeline_stages(plan)
    n, d = len(order), plan.spec.hidden
    stages, params = [], {}
    for g, (f, p) in enumerate(order):
        if plan.flows[f]["positions"][p]["rank"] != rank:
            continue
        ps = stage_params(plan, f, p, seed)
        params.update(ps)
        mod = PlanStage(plan, f, p, ps, seed, loss_rows, rows[g])
        if g == 0:
            x = torch.zeros(1, dtype=torch.long)
        else:
            x = torch.zeros(rows[g - 1], d, dtype=torch.float64, requires_grad=True)
        if g == n - 1:
            y = torch.zeros((), dtype=torch.float64, requires_grad=True)
        else:
            y = torch.zeros(rows[g], d, dtype=torch.float64, requires_grad=True)
        stages.append(PipelineStage(mod, g, n, torch.device("cpu"), input_args=x, output_args=y,
                                    group=group))
    return stages, params


# -- one rank ------------------------------------------------------------------

def loss_is_output(output, target):
    """The schedule's loss function: the last stage already returns its
    microbatch's loss (summed over its rows / the iteration's loss rows)."""
    return output


class PipelineErrors(logging.Handler):
    """Keeps the step and action PyTorch's runtime logs when an action
    fails (and keeps its schedule dump off stderr)."""

    def __init__(self):
        """An empty record."""
        super().__init__(logging.ERROR)
        self.where = None

    def emit(self, record):
        """Records the first (time_step, action) of a failure."""
        args = record.args if isinstance(record.args, tuple) else ()
        if self.where is None and "caught exception" in str(record.msg) and len(args) == 2:
            self.where = args


def describe_action(action):
    """A PyTorch schedule action in words: `1F2 (stage 1 forward, microbatch 2)`."""
    kind = getattr(action.computation_type, "value", str(action.computation_type))
    words = KIND_WORDS.get(kind, kind)
    mb = "" if action.microbatch_index is None else ", microbatch %d" % action.microbatch_index
    return "%s (stage %d %s%s)" % (action, action.stage_index, words, mb)


def count_calls(stage, plan, counts):
    """Wraps the stage's forward_one_chunk, backward_one_chunk and
    backward_weight_one_chunk (the calls the runtime makes) so every call
    counts the unit's samples through the position's layers, as phase F,
    B (full backward), I (input gradient) or W."""
    fwd, bwd, wgt = stage.forward_one_chunk, stage.backward_one_chunk, stage.backward_weight_one_chunk
    f, p = pipeline_stages(plan)[stage.stage_index]
    units = pipeline_units(plan, f)

    def note(phase, u):
        """Counts unit u's samples through the stage's layers."""
        for m, first, n in plan.flows[f]["positions"][p]["spans"]:
            for s in plan.units[(f,) + units[u]]:
                if plan.spec.rows(m, plan.samples[s]) == 0:
                    continue
                for layer in range(first, first + n):
                    k = (phase, m, layer, s)
                    counts[k] = counts.get(k, 0) + 1

    def forward_one_chunk(mb, *a, **kw):
        """PyTorch's forward of microbatch mb, counted as F."""
        out = fwd(mb, *a, **kw)
        note("F", mb)
        return out

    def backward_one_chunk(mb, *a, **kw):
        """PyTorch's backward of microbatch mb, counted as B or (split) I."""
        out = bwd(mb, *a, **kw)
        note("B" if kw.get("full_backward", a[1] if len(a) > 1 else True) else "I", mb)
        return out

    def backward_weight_one_chunk(mb, *a, **kw):
        """PyTorch's weight-gradient half of microbatch mb, counted as W."""
        out = wgt(mb, *a, **kw)
        note("W", mb)
        return out

    stage.forward_one_chunk = forward_one_chunk
    stage.backward_one_chunk = backward_one_chunk
    stage.backward_weight_one_chunk = backward_weight_one_chunk


def load_schedule(plan, stages, csv):
    """_PipelineScheduleRuntime over the stages with schedule.csv loaded;
    InputError when PyTorch refuses the file or its stage-to-rank map is
    not the plan's."""
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

    sched = _PipelineScheduleRuntime(stages, len(pipeline_units(plan, 0)), loss_fn=loss_is_output,
                                     scale_grads=False)
    try:
        sched._load_csv(csv, format="compute_only")
    except Exception as e:  # PyTorch raises AssertionError, RuntimeError, ValueError, KeyError
        first = " ".join((str(e).strip().splitlines() or [""])[0].split())
        raise InputError("%s: PyTorch's _PipelineScheduleRuntime._load_csv(format=\"compute_only\") "
                         "refused it: %s: %s" % (csv, type(e).__name__, first))
    want = {g: plan.flows[f]["positions"][p]["rank"] for g, (f, p) in enumerate(pipeline_stages(plan))}
    got = dict(sched.stage_index_to_group_rank)
    for g in sorted(want):
        if got.get(g) != want[g]:
            raise InputError("%s: stage %d: PyTorch maps it to rank %s, plan.json's partition "
                             "to rank %d (the file is not this plan's schedule)"
                             % (csv, g, got.get(g), want[g]))
    return sched


def where_text(errors):
    """` at step N of its PyTorch schedule, action A` when the runtime logged
    the failing action, else empty."""
    if errors.where is None:
        return ""
    step, action = errors.where
    return " at step %s of its PyTorch schedule, action %s" % (step, describe_action(action))


def stuck_line(rank, errors, timeout_s, e):
    """The deadlock report of a rank whose transfer timed out."""
    return "rank %d is stuck%s: no progress in %.0f s (%s)" % (
        rank, where_text(errors), timeout_s, str(e).strip().splitlines()[0].split("]")[-1].strip())


def run_rank(plan, rank, port_queue, seed, timeout_s, csv, result):
    """This rank's part: stages, schedule, one step; fills `result`."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    join_group(rank, plan.ranks, port_queue, timeout_s)
    group = dist.new_group(timeout=datetime.timedelta(seconds=timeout_s))
    stages, params = build_stages(plan, rank, seed, group)
    sched = load_schedule(plan, stages, csv)
    counts = {}
    for st in stages:
        count_calls(st, plan, counts)
    ids = torch.arange(len(pipeline_units(plan, 0)))
    losses = []
    t0 = time.perf_counter()
    sched.step(ids, target=torch.zeros(len(ids), dtype=torch.float64), losses=losses,
               return_outputs=False, mb=ids)
    wall = (time.perf_counter() - t0) * 1e3
    grads = {n: p.grad.detach().clone() for n, p in params.items() if p.grad is not None}
    result.update(grads=grads, loss=sum(float(x) for x in losses), counts=counts,
                  wall_ms=[wall], stage_ms=[])


def torch_rank_main(plan, rank, port_queue, seed, timeout_s, out_path, release, iterations, csv):
    """A rank's process under PyTorch's runtime (driver.Ranks' target):
    run, write the report, wait to be released."""
    errors = PipelineErrors()
    log = logging.getLogger(SCHEDULES_LOGGER)
    log.addHandler(errors)
    log.propagate = False
    result = {"rank": rank}
    try:
        run_rank(plan, rank, port_queue, seed, timeout_s, csv, result)
    except InputError as e:
        result["input"] = str(e)
    except Exception as e:  # reported by the parent with the rank
        if "Timed out" in str(e) or "timed out" in str(e):
            result["stuck"] = stuck_line(rank, errors, timeout_s, e)
        else:
            where = where_text(errors).strip()
            result["crash"] = ("(%s)\n" % where if where else "") + traceback.format_exc()
    with open(out_path + ".tmp", "wb") as f:
        pickle.dump(result, f)
    os.rename(out_path + ".tmp", out_path)
    release.wait(timeout_s * 2 + 60)
    os._exit(0)


def run_torch(plan, seed, timeout_s):
    """Runs the plan on plan.ranks processes under PyTorch's runtime;
    returns their reports by rank (driver.check's input). A schedule.csv
    PyTorch refuses is bad input (InputError)."""
    from .driver import run_ranks

    reports = run_ranks(plan, seed, timeout_s, target=torch_rank_main,
                        extra=(schedule_csv_path(plan),))
    refused = [reports[r]["input"] for r in sorted(reports) if "input" in reports[r]]
    if refused:
        raise InputError(refused[0])
    return reports
