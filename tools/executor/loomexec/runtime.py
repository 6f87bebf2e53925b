"""One rank of a plan: its actions in order, with real point-to-point sends
and receives over gloo, real forward and backward of its chunks, and the
bookkeeping the checks need (gradients, losses, samples per layer)."""

import datetime
import time

import torch
import torch.distributed as dist

from . import layers as L
from .engine import ChunkRun
from .errors import CheckError


class Stuck(Exception):
    """A wait ran past the timeout: the message names the rank and action."""


def chunk_pieces(plan, f, p, policies, seed):
    """The pieces flow f's position p runs, under the stage's layer policies."""
    spec = plan.spec
    fl = plan.flows[f]
    positions = fl["positions"]
    begins_later = [m for q in positions[p:] for m, first, _ in q["spans"] if first == 0]
    pieces = []
    has_loss = False
    k = 0
    for m, first, n in positions[p]["spans"]:
        mod = spec.modules[m]
        if first == 0:
            keep = [k2 for k2 in ("out:" + spec.modules[u].name for u in mod.inputs)
                    if plan._needed_later(k2, m, begins_later)]
            pieces.append(L.begin_piece(spec, m, keep, seed))
        for layer in range(first, first + n):
            pieces += L.layer_pieces(spec, m, layer, policies[k])
            k += 1
        if first + n == mod.layers:
            pieces.append(L.end_piece(spec, m, seed, has_loss))
            has_loss = has_loss or mod.terminal
    return pieces


class Rank:
    """The state of one rank while it runs its actions."""

    def __init__(self, plan, rank, seed, timeout_s, params=None, record=True):
        self.plan, self.rank, self.seed = plan, rank, seed
        self.timeout = datetime.timedelta(seconds=timeout_s)
        self.spec = plan.spec
        self.loss_rows = plan.loss_rows()
        names = set()
        for fl in plan.flows:
            for pos in fl["positions"]:
                if pos["rank"] == rank:
                    for pc_names in self._param_names(pos):
                        names.add(pc_names)
        self.P = params if params is not None else L.make_params(self.spec, seed, names)
        self.grads = {}
        self.record = record
        self.fwd_out = {}       # F stage -> output tensor (detached)
        self.runs = {}          # F stage -> (ChunkRun, assembly)
        self.recv_act = {}      # (producer F, consumer F) -> tensor
        self.grad_acc = {}      # F stage -> accumulated output gradient
        self.got_grad = {}      # F stage -> consumers whose gradient arrived
        self.expect = {}        # F stage -> consumers that need to send one
        self.to_send = {}       # (consumer F, producer F) -> gradient tensor
        self.pending = {}       # (kind, stage, peer_stage) -> (work, tensor, action)
        self.loss = 0.0
        self.counts = {}        # (phase, module, layer, sample) -> times
        self.stage_ms = []      # (stage id, kind, ms)
        self.edges = {}         # (producer F, consumer F) -> slices (see edge())
        self.backward_done = set()  # F stages whose B or I has run

    def _param_names(self, pos):
        """Names of the parameters of the layers a position holds."""
        shapes = L.param_shapes(self.spec)
        layers = set()
        for m, first, n in pos["spans"]:
            for layer in range(first, first + n):
                layers.add((m, layer))
        return [name for name, (_, where) in shapes.items() if where in layers]

    # -- helpers ---------------------------------------------------------------

    def fwd(self, sid):
        """The forward stage of stage sid's pair."""
        s = self.plan.stages[sid]
        return self.plan.stage_of[(s["flow"], s["position"], s["mb"], s["sub"], "F")]

    def describe(self, a):
        """An action in words, for messages."""
        st = self.plan.stages[a["stage"]]
        txt = "action %d (%s stage %d: %s flow %d position %d microbatch %d sub %d" % (
            a["index"], a["action"], a["stage"], st["kind"], st["flow"], st["position"],
            st["mb"], st["sub"])
        if "peer" in a:
            txt += ", peer rank %d stage %d" % (a["peer"], a["peer_stage"])
        return txt + ")"

    def tag(self, producer, consumer):
        """The point-to-point tag of the edge producer -> consumer (unique)."""
        return producer * (len(self.plan.stages) + 1) + consumer

    def wait(self, work, a):
        """Waits for a transfer; Stuck naming the rank and action after the timeout."""
        try:
            work.wait(timeout=self.timeout)
        except RuntimeError as e:
            raise Stuck("rank %d is stuck on %s: no progress in %.0f s (%s)"
                        % (self.rank, self.describe(a), self.timeout.total_seconds(),
                           str(e).split("]")[-1].strip()))

    def out_layout(self, sid):
        """[(key, rows)] of F stage sid's output and its current module."""
        st = self.plan.stages[sid]
        pos = self.plan.flows[st["flow"]]["positions"][st["position"]]
        unit = self.plan.unit(st["flow"], st["mb"], st["sub"], self.loss_rows)
        return self.plan.layout(unit, pos["out_keys"], pos["out_module"]), unit

    def edge(self, producer, consumer):
        """The rows of F stage `producer`'s output that cross to F stage
        `consumer`: None within a flow (all of them); across flows the
        (key, sample, offset, rows) slices of the samples both units hold."""
        ck = (producer, consumer)
        if ck in self.edges:
            return self.edges[ck]
        p, c = self.plan.stages[producer], self.plan.stages[consumer]
        if p["flow"] == c["flow"]:
            self.edges[ck] = None
            return None
        lay, punit = self.out_layout(producer)
        common = set(self.plan.units[(c["flow"], c["mb"], c["sub"])])
        slices, off = [], 0
        for k, _ in lay:
            m = self.spec.by_name[k[4:]]
            for s in punit.samples:
                n = self.spec.own_rows(m, self.plan.samples[s])
                if s in common:
                    slices.append((k, s, off, n))
                off += n
        self.edges[ck] = slices
        return slices

    def edge_rows(self, producer, consumer):
        """Rows crossing the edge producer -> consumer."""
        sl = self.edge(producer, consumer)
        if sl is None:
            return sum(r for _, r in self.out_layout(producer)[0])
        return sum(n for _, _, _, n in sl)

    def edge_tensor(self, producer, consumer, full):
        """The edge's rows taken from the producer's whole output."""
        sl = self.edge(producer, consumer)
        if sl is None:
            return full
        parts = [full[o:o + n] for _, _, o, n in sl]
        return torch.cat(parts, 0) if parts else full[:0]

    def edge_grad_full(self, producer, consumer, g):
        """An edge's gradient spread over the producer's whole output."""
        sl = self.edge(producer, consumer)
        if sl is None:
            return g
        rows = sum(r for _, r in self.out_layout(producer)[0])
        full = torch.zeros(rows, self.spec.hidden, dtype=torch.float64)
        e = 0
        for _, _, o, n in sl:
            full[o:o + n] += g[e:e + n]
            e += n
        return full

    def uses(self, consumer, producer):
        """True when F stage `consumer` takes rows from F stage `producer`."""
        return self.edge(producer, consumer) is None or self.edge_rows(producer, consumer) > 0

    # -- actions ---------------------------------------------------------------

    def run(self):
        """Every action of this rank in order, then the sends still pending."""
        for a in self.plan.actions[self.rank]:
            getattr(self, "do_" + a["action"])(a)
        for key, (work, _, a) in list(self.pending.items()):
            if key[0] == "send":
                self.wait(work, a)
        left = [a for key, (_, _, a) in self.pending.items() if key[0] == "recv"]
        if left:
            raise CheckError("rank %d: %s was posted but never waited for"
                             % (self.rank, self.describe(left[0])))

    def do_isend(self, a):
        """Posts the send of an activation or of a gradient."""
        sid, peer_stage = a["stage"], a["peer_stage"]
        st = self.plan.stages[sid]
        if st["kind"] == "F":
            t = self.fwd_out.get(sid)
            if t is None:
                raise CheckError("rank %d: %s: stage %d has not run yet" % (self.rank, self.describe(a), sid))
            cons = self.fwd(peer_stage)
            if self.uses(cons, sid):
                self.expect.setdefault(sid, set()).add(cons)
            t = self.edge_tensor(sid, cons, t)
        else:
            key = (self.fwd(sid), self.fwd(peer_stage))
            t = self.to_send.pop(key, None)
            if t is None:
                if self.fwd(sid) not in self.backward_done:
                    raise CheckError("rank %d: %s: stage %d has not run yet" % (self.rank, self.describe(a), sid))
                t = torch.zeros(self.edge_rows(self.fwd(peer_stage), self.fwd(sid)), self.spec.hidden,
                                dtype=torch.float64)
        t = t.contiguous()
        work = dist.isend(t, a["peer"], tag=self.tag(sid, peer_stage))
        self.pending[("send", sid, peer_stage)] = (work, t, a)

    def do_wait_isend(self, a):
        """Waits for a posted send."""
        key = ("send", a["stage"], a["peer_stage"])
        if key not in self.pending:
            raise CheckError("rank %d: %s: no isend before it" % (self.rank, self.describe(a)))
        work, _, _ = self.pending.pop(key)
        self.wait(work, a)

    def do_irecv(self, a):
        """Posts the receive into a buffer of the edge's rows."""
        sid, prod = a["stage"], a["peer_stage"]
        if self.plan.stages[prod]["kind"] == "F":
            rows = self.edge_rows(prod, sid)
        else:
            rows = self.edge_rows(self.fwd(sid), self.fwd(prod))
        buf = torch.zeros(rows, self.spec.hidden, dtype=torch.float64)
        work = dist.irecv(buf, a["peer"], tag=self.tag(prod, sid))
        self.pending[("recv", sid, prod)] = (work, buf, a)

    def do_wait_irecv(self, a):
        """Waits for a receive and files the activation or gradient."""
        key = ("recv", a["stage"], a["peer_stage"])
        if key not in self.pending:
            raise CheckError("rank %d: %s: no irecv before it" % (self.rank, self.describe(a)))
        work, buf, _ = self.pending.pop(key)
        self.wait(work, a)
        prod = a["peer_stage"]
        if self.plan.stages[prod]["kind"] == "F":
            self.recv_act[(prod, a["stage"])] = buf
        else:
            mine, cons = self.fwd(a["stage"]), self.fwd(prod)
            self.add_grad(mine, cons, self.edge_grad_full(mine, cons, buf))

    def add_grad(self, producer, consumer, g):
        """Adds a consumer's gradient to a forward stage's output gradient."""
        if producer in self.grad_acc:
            self.grad_acc[producer] = self.grad_acc[producer] + g
        else:
            self.grad_acc[producer] = g
        self.got_grad.setdefault(producer, set()).add(consumer)

    # -- forward ---------------------------------------------------------------

    def producer_tensor(self, prod, sid, a):
        """The edge tensor from a producer: kept on this rank or received."""
        if self.plan.stages[prod]["rank"] == self.rank:
            t = self.fwd_out.get(prod)
            if t is None:
                raise CheckError("rank %d: %s needs the output of stage %d (this rank), which has "
                                 "not run yet" % (self.rank, self.describe(a), prod))
            self.expect.setdefault(prod, set()).add(sid)
            return self.edge_tensor(prod, sid, t)
        t = self.recv_act.pop((prod, sid), None)
        if t is None:
            raise CheckError("rank %d: %s needs the output of stage %d (rank %d), which has not "
                             "been received (no wait_irecv for it before)"
                             % (self.rank, self.describe(a), prod, self.plan.stages[prod]["rank"]))
        return t

    def assemble(self, sid, a):
        """The input state of F stage sid: leaves per producer tensor, and the
        state built from them (with its graph, for the backward)."""
        plan, spec = self.plan, self.spec
        st = plan.stages[sid]
        f, p = st["flow"], st["position"]
        fl = plan.flows[f]
        pos = fl["positions"][p]
        unit = plan.unit(f, st["mb"], st["sub"], self.loss_rows)
        leaves = {}
        state = {}
        if p > 0:
            prod = plan.stage_of[(f, p - 1, st["mb"], st["sub"], "F")]
            t = self.producer_tensor(prod, sid, a).detach().requires_grad_(True)
            leaves[prod] = t
            with torch.enable_grad():
                lay = plan.layout(unit, pos["in_keys"], pos["in_module"])
                parts = torch.split(t, [r for _, r in lay], 0) if lay else []
                for (k, _), part in zip(lay, parts):
                    state[k] = part
            return unit, leaves, state
        for key in pos["in_keys"]:
            u = spec.by_name[key[4:]]
            src = None
            for g in fl["inputs"]:
                last = plan.flows[g]["positions"][-1]
                if key in last["out_keys"]:
                    src = g
            if src is None:
                raise CheckError("flow %d needs %s, which none of its input flows outputs" % (f, key[4:]))
            last_p = len(plan.flows[src]["positions"]) - 1
            pieces = []
            for s in unit.samples:
                n = spec.own_rows(u, plan.samples[s])
                if n == 0:
                    continue
                if (src, s) not in plan.unit_of:
                    raise CheckError("sample %d reaches flow %d but no unit of flow %d holds it"
                                     % (s, f, src))
                mb2, sub2 = plan.unit_of[(src, s)]
                prod = plan.stage_of[(src, last_p, mb2, sub2, "F")]
                if prod not in leaves:
                    leaves[prod] = self.producer_tensor(prod, sid, a).detach().requires_grad_(True)
                off = 0
                for k, s2, _, n2 in self.edge(prod, sid):
                    if (k, s2) == (key, s):
                        break
                    off += n2
                pieces.append((prod, off, n))
            with torch.enable_grad():
                if pieces:
                    state[key] = torch.cat([leaves[pr][o:o + n] for pr, o, n in pieces], 0)
                else:
                    state[key] = torch.zeros(0, spec.hidden, dtype=torch.float64)
        return unit, leaves, state

    def count(self, phase, sid):
        """Counts the unit's samples through the stage's layers (phase F, B, I or W)."""
        if not self.record:
            return
        st = self.plan.stages[sid]
        pos = self.plan.flows[st["flow"]]["positions"][st["position"]]
        samples = self.plan.units[(st["flow"], st["mb"], st["sub"])]
        for m, first, n in pos["spans"]:
            for s in samples:
                if self.spec.rows(m, self.plan.samples[s]) == 0:
                    continue
                for layer in range(first, first + n):
                    k = (phase, m, layer, s)
                    self.counts[k] = self.counts.get(k, 0) + 1

    def do_forward_stage(self, a):
        """Runs a forward stage: assemble the input, run the chunk, keep the output."""
        t0, c0 = time.perf_counter(), time.process_time()
        sid = a["stage"]
        st = self.plan.stages[sid]
        if st["kind"] != "F":
            raise CheckError("rank %d: %s: a forward_stage action for a %s stage"
                             % (self.rank, self.describe(a), st["kind"]))
        unit, leaves, state_in = self.assemble(sid, a)
        key = (st["flow"], st["position"], tuple(st["policies"]), self.seed)
        pieces = self.plan.piece_cache.get(key)
        if pieces is None:
            pieces = chunk_pieces(self.plan, st["flow"], st["position"], st["policies"], self.seed)
            self.plan.piece_cache[key] = pieces
        run = ChunkRun(pieces, self.P, unit, self.grads)
        state = run.forward(dict(state_in))
        pos = self.plan.flows[st["flow"]]["positions"][st["position"]]
        if pos["out_loss"]:
            self.loss += float(state["loss"].detach())
        if pos["out_keys"]:
            self.fwd_out[sid] = torch.cat([state[k].detach() for k in pos["out_keys"]], 0)
        self.runs[sid] = (run, leaves, state_in, state)
        self.count("F", sid)
        self.stage_ms.append((sid, "F", (time.perf_counter() - t0) * 1e3,
                              (time.process_time() - c0) * 1e3))

    # -- backward --------------------------------------------------------------

    def do_backward_stage(self, a):
        """Runs B, I or W of a stage and files the input gradients."""
        t0, c0 = time.perf_counter(), time.process_time()
        sid = a["stage"]
        st = self.plan.stages[sid]
        kind = st["kind"]
        fsid = self.fwd(sid)
        if fsid not in self.runs:
            raise CheckError("rank %d: %s runs before its forward stage %d" % (self.rank, self.describe(a), fsid))
        run, leaves, state_in, state = self.runs[fsid]
        if kind == "W":
            run.weight_grad()
            del self.runs[fsid]
            self.count("W", sid)
            self.stage_ms.append((sid, kind, (time.perf_counter() - t0) * 1e3,
                              (time.process_time() - c0) * 1e3))
            return
        if kind not in ("B", "I"):
            raise CheckError("rank %d: %s: a backward_stage action for an F stage" % (self.rank, self.describe(a)))
        pos = self.plan.flows[st["flow"]]["positions"][st["position"]]
        g_out = {}
        if pos["out_loss"]:
            g_out["loss"] = torch.ones((), dtype=torch.float64)
        if pos["out_keys"]:
            missing = self.expect.get(fsid, set()) - self.got_grad.get(fsid, set())
            if missing:
                m = min(missing)
                raise CheckError("rank %d: %s runs before the gradient from stage %d (rank %d) arrived"
                                 % (self.rank, self.describe(a), m, self.plan.stages[m]["rank"]))
            g = self.grad_acc.pop(fsid, None)
            lay, _ = self.out_layout(fsid)
            if g is not None:
                for (k, _), part in zip(lay, torch.split(g, [r for _, r in lay], 0)):
                    g_out[k] = part
        g_in = run.backward(g_out, kind)
        # gradients of the producers' tensors
        keys = [k for k in state_in if g_in.get(k) is not None and state_in[k].requires_grad]
        grads = {}
        if keys and leaves:
            res = torch.autograd.grad([state_in[k] for k in keys], list(leaves.values()),
                                      grad_outputs=[g_in[k] for k in keys], allow_unused=True)
            grads = dict(zip(leaves.keys(), res))
        for prod, leaf in leaves.items():
            gr = grads.get(prod)
            if gr is None:
                gr = torch.zeros_like(leaf)
            if self.plan.stages[prod]["rank"] == self.rank:
                self.add_grad(prod, fsid, self.edge_grad_full(prod, fsid, gr.detach()))
            else:
                self.to_send[(fsid, prod)] = gr.detach()
        self.backward_done.add(fsid)
        if kind == "B":
            del self.runs[fsid]
        self.count(kind, sid)
        self.stage_ms.append((sid, kind, (time.perf_counter() - t0) * 1e3,
                              (time.process_time() - c0) * 1e3))
