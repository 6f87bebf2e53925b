"""plan.json (format 2, docs/outputs.md) read, checked against the model and
indexed for the ranks: stages, units (flow, microbatch, sub) with their
samples, the pieces each position runs and the state layout at every
position boundary."""

import json

from . import layers as L
from .errors import InputError, describe

PLAN_FORMAT = 2
POLICIES = ("none", "selective", "full", "offload")
ACTIONS = ("forward_stage", "backward_stage", "isend", "irecv", "wait_isend", "wait_irecv")
KEY_ORDER = {"h": 1, "ctx": 2}
TP_DEGREES = (1, 2, 4, 8, 16, 32, 64)


def key_sort(spec):
    """Canonical order of state keys: finished outputs by module, then h, ctx."""
    return lambda k: (0, spec.by_name[k[4:]]) if k.startswith("out:") else (KEY_ORDER[k], 0)


class Plan:
    """A format-2 plan for `spec`'s model."""

    def __init__(self, path, spec, doc=None):
        self.path = str(path)
        self.spec = spec
        self.unit_cache, self.piece_cache = {}, {}
        if doc is not None:
            self.load(doc)
            return
        try:
            with open(path, "rb") as f:
                doc = json.loads(f.read().decode("utf-8"))
        except OSError as e:
            raise InputError("%s: cannot read the plan: %s" % (self.path, e.strerror))
        except (UnicodeDecodeError, ValueError) as e:
            raise InputError("%s: malformed JSON: %s" % (self.path, e))
        self.load(doc)

    # -- field access with messages naming the JSON path --------------------

    def need(self, obj, key, where, typ):
        """obj[key] of type typ, or InputError naming the JSON path."""
        if not isinstance(obj, dict) or key not in obj:
            raise InputError("%s: %s: missing field" % (self.path, where))
        v = obj[key]
        good = {
            int: lambda x: isinstance(x, int) and not isinstance(x, bool),
            float: lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
            str: lambda x: isinstance(x, str),
            list: lambda x: isinstance(x, list),
            dict: lambda x: isinstance(x, dict),
        }[typ](v)
        if not good:
            want = {int: "an integer", float: "a number", str: "a string", list: "an array",
                    dict: "an object"}[typ]
            raise InputError("%s: %s: expected %s, found %s" % (self.path, where, want, describe(v)))
        return v

    def bad(self, where, expected, found):
        """InputError: where, expected, found."""
        raise InputError("%s: %s: expected %s, found %s" % (self.path, where, expected, found))

    def load(self, doc):
        """Reads and checks every part of the plan."""
        if not isinstance(doc, dict):
            self.bad("(root)", "a plan object", describe(doc))
        if "loom_plan" not in doc:
            raise InputError("%s: loom_plan: missing field (not a plan.json?)" % self.path)
        if doc["loom_plan"] != PLAN_FORMAT:
            raise InputError("%s: loom_plan: expected %d, found %s: a plan from another Loom "
                             "version; replan it with this Loom (`loom plan --out DIR`)"
                             % (self.path, PLAN_FORMAT, describe(doc["loom_plan"])))
        problem = self.need(doc, "problem", "problem", str)
        if problem != "model":
            self.bad("problem", '"model" (a stage-times plan has no model to execute)',
                     describe(problem))
        model = self.need(doc, "model", "model", str)
        if model != self.spec.name:
            raise InputError("%s: model: the plan is for model %s but %s is model %s "
                             "(wrong model for the plan)"
                             % (self.path, describe(model), self.spec.path, describe(self.spec.name)))
        self.doc = doc
        self.ranks = self.need(doc, "ranks", "ranks", int)
        if self.ranks < 1:
            self.bad("ranks", "an integer >= 1", str(self.ranks))
        self.makespan_ms = self.need(self.need(doc, "metrics", "metrics", dict), "makespan_ms",
                                     "metrics.makespan_ms", float)
        self.load_iteration(doc)
        self.load_partition(doc)
        self.load_data(doc)
        self.load_stages(doc)
        self.load_actions(doc)

    def load_iteration(self, doc):
        """iteration: the samples' metadata."""
        it = self.need(doc, "iteration", "iteration", dict)
        self.iteration_index = self.need(it, "index", "iteration.index", int)
        samples = self.need(it, "samples", "iteration.samples", list)
        if not samples:
            self.bad("iteration.samples", "at least one sample", "none")
        self.samples = []
        for i, s in enumerate(samples):
            w = "iteration.samples[%d]" % i
            if not isinstance(s, dict):
                self.bad(w, "an object", describe(s))
            meta = {
                "text_tokens": self.need(s, "text_tokens", w + ".text_tokens", int),
                "images": self.need(s, "images", w + ".images", int),
                "video_seconds": float(self.need(s, "video_seconds", w + ".video_seconds", float)),
                "audio_seconds": float(self.need(s, "audio_seconds", w + ".audio_seconds", float)),
            }
            for k, v in meta.items():
                if v < 0:
                    self.bad(w + "." + k, "a value >= 0", describe(v))
            self.samples.append(meta)

    def load_partition(self, doc):
        """partition: flows, positions and spans against the model."""
        spec = self.spec
        part = self.need(doc, "partition", "partition", dict)
        self.split_backward = bool(part.get("split_backward", False))
        self.tp = self.need(part, "tp", "partition.tp", int)
        self.microbatches = self.need(part, "microbatches", "partition.microbatches", int)
        flows = self.need(part, "flows", "partition.flows", list)
        if not flows:
            self.bad("partition.flows", "at least one flow", "none")
        covered = {}
        self.flows = []
        for f, fl in enumerate(flows):
            w = "partition.flows[%d]" % f
            if not isinstance(fl, dict):
                self.bad(w, "an object", describe(fl))
            mod = fl.get("module")
            if mod is not None and mod not in spec.by_name:
                self.bad(w + ".module", "a module of %s (%s)" % (spec.name, ", ".join(spec.by_name)),
                         describe(mod))
            ins = self.need(fl, "inputs", w + ".inputs", list)
            for k, u in enumerate(ins):
                if not isinstance(u, int) or isinstance(u, bool) or not 0 <= u < len(flows) or u == f:
                    self.bad("%s.inputs[%d]" % (w, k), "the index of another flow", describe(u))
            subs = self.need(fl, "subs", w + ".subs", list)
            if len(subs) != self.microbatches:
                self.bad(w + ".subs", "%d entries (one per microbatch)" % self.microbatches,
                         "%d" % len(subs))
            positions = []
            for p, pos in enumerate(self.need(fl, "positions", w + ".positions", list)):
                pw = "%s.positions[%d]" % (w, p)
                rank = self.need(pos, "rank", pw + ".rank", int)
                if not 0 <= rank < self.ranks:
                    self.bad(pw + ".rank", "a rank in [0, %d]" % (self.ranks - 1), str(rank))
                spans = []
                for k, sp in enumerate(self.need(pos, "spans", pw + ".spans", list)):
                    sw = "%s.spans[%d]" % (pw, k)
                    name = self.need(sp, "module", sw + ".module", str)
                    if name not in spec.by_name:
                        raise InputError("%s: %s.module: the plan names module %s, which model %s (%s) "
                                         "does not have (wrong model for the plan)"
                                         % (self.path, sw, describe(name), spec.name, spec.path))
                    m = spec.by_name[name]
                    first = self.need(sp, "first_layer", sw + ".first_layer", int)
                    n = self.need(sp, "layers", sw + ".layers", int)
                    count = spec.modules[m].layers
                    if n < 1 or first < 0 or first + n > count:
                        raise InputError("%s: %s: layers %d..%d of module %s, which has %d layers in %s "
                                         "(wrong model for the plan)"
                                         % (self.path, sw, first, first + n - 1, name, count, spec.path))
                    for layer in range(first, first + n):
                        if (m, layer) in covered:
                            self.bad(sw, "each layer in one position",
                                     "layer %d of %s also in %s" % (layer, name, covered[(m, layer)]))
                        covered[(m, layer)] = sw
                    spans.append((m, first, n))
                positions.append({"rank": rank, "chunk": pos.get("chunk", 0), "spans": spans})
            self.flows.append({"module": mod, "inputs": ins, "subs": subs, "positions": positions})
        for m in spec.modules:
            for layer in range(m.layers):
                if (m.index, layer) not in covered:
                    raise InputError("%s: partition.flows: layer %d of module %s is in no position "
                                     "(%s has %d layers; wrong model for the plan)"
                                     % (self.path, layer, m.name, spec.path, m.layers))
        self.build_programs()

    def build_programs(self):
        """Per flow and position: the spans' module transitions and the state
        keys (with their module) at the position's input and output."""
        spec = self.spec
        for f, fl in enumerate(self.flows):
            later = []  # modules each position and after begins
            for pos in fl["positions"]:
                later.append([m for m, first, _ in pos["spans"] if first == 0])
            if fl["module"] is not None:
                mi = spec.by_name[fl["module"]]
                keys = ["out:" + spec.modules[u].name for u in spec.modules[mi].inputs
                        if spec.modules[mi].modality == "text" or spec.modules[mi].cross]
                cur = None
            else:
                keys, cur = [], None
            fl["in_keys0"] = sorted(keys, key=key_sort(spec))
            state = list(keys)
            for p, pos in enumerate(fl["positions"]):
                pos["in_keys"] = sorted(state, key=key_sort(spec))
                pos["in_module"] = cur
                begins_later = [m for q in later[p:] for m in q]
                for m, first, n in pos["spans"]:
                    mod = spec.modules[m]
                    if first == 0:
                        if cur is not None:
                            raise InputError("%s: partition.flows[%d]: module %s starts before module %s "
                                             "ends" % (self.path, f, mod.name, spec.modules[cur].name))
                        ups = ["out:" + spec.modules[u].name for u in mod.inputs]
                        if mod.modality == "text" or mod.cross:
                            for k in ups:
                                if k not in state:
                                    raise InputError("%s: partition.flows[%d]: module %s needs %s's output, "
                                                     "which the flow does not carry"
                                                     % (self.path, f, mod.name, k[4:]))
                        cur = m
                        state = [k for k in state if k not in ups or self._needed_later(k, m, begins_later)]
                        state += ["h"] + (["ctx"] if mod.cross else [])
                    elif cur != m:
                        raise InputError("%s: partition.flows[%d]: layer %d of module %s runs before "
                                         "layer 0 of it in this flow" % (self.path, f, first, mod.name))
                    if first + n == mod.layers:
                        state = [k for k in state if k not in ("h", "ctx")]
                        if mod.terminal:
                            if "loss" not in state:
                                state.append("loss")
                        else:
                            state.append("out:" + mod.name)
                        cur = None
                pos["out_keys"] = sorted([k for k in state if k != "loss"], key=key_sort(spec))
                pos["out_loss"] = "loss" in state
                pos["out_module"] = cur
                if pos["out_loss"] and p + 1 < len(fl["positions"]):
                    raise InputError("%s: partition.flows[%d].positions[%d]: the loss is computed before "
                                     "the flow ends (unsupported)" % (self.path, f, p))

    def _needed_later(self, key, m, begins_later):
        """True when a module beginning later in the flow (not m) reads `key`."""
        name = key[4:]
        u = self.spec.by_name[name]
        return any(u in self.spec.modules[b].inputs for b in begins_later if b != m)

    def load_data(self, doc):
        """data: the samples of every (flow, microbatch, sub) unit."""
        data = self.need(doc, "data", "data", list)
        self.units = {}
        seen = {}
        for i, e in enumerate(data):
            w = "data[%d]" % i
            f = self.need(e, "flow", w + ".flow", int)
            mb = self.need(e, "microbatch", w + ".microbatch", int)
            sub = self.need(e, "sub", w + ".sub", int)
            if not 0 <= f < len(self.flows):
                self.bad(w + ".flow", "a flow in [0, %d]" % (len(self.flows) - 1), str(f))
            if not 0 <= mb < self.microbatches or not 0 <= sub < self.flows[f]["subs"][mb]:
                self.bad(w, "a (microbatch, sub) of flow %d" % f, "(%d, %d)" % (mb, sub))
            samples = self.need(e, "samples", w + ".samples", list)
            for k, s in enumerate(samples):
                if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < len(self.samples):
                    self.bad("%s.samples[%d]" % (w, k), "a sample index in [0, %d]" % (len(self.samples) - 1),
                             describe(s))
                if (f, s) in seen:
                    self.bad("%s.samples[%d]" % (w, k), "each sample once per flow",
                             "sample %d also in %s" % (s, seen[(f, s)]))
                seen[(f, s)] = w
            if (f, mb, sub) in self.units:
                self.bad(w, "one entry per (flow, microbatch, sub)", "a second (%d, %d, %d)" % (f, mb, sub))
            self.units[(f, mb, sub)] = list(samples)
        # where each sample is in each flow: (flow, sample) -> (mb, sub)
        self.unit_of = {}
        for (f, mb, sub), ss in self.units.items():
            for s in ss:
                self.unit_of[(f, s)] = (mb, sub)

    def load_stages(self, doc):
        """stages: kind, place, unit and layer policies of every stage."""
        if isinstance(doc.get("stages"), dict):
            self.bad("stages", "the full form (a plan of at most 65536 stages)",
                     "the compact form of a %d-stage plan"
                     % len(doc["stages"].get("rows") or []))
        stages = self.need(doc, "stages", "stages", list)
        self.stages = {}
        self.stage_of = {}
        for i, st in enumerate(stages):
            w = "stages[%d]" % i
            sid = self.need(st, "id", w + ".id", int)
            kind = self.need(st, "kind", w + ".kind", str)
            if kind not in ("F", "B", "I", "W"):
                self.bad(w + ".kind", "F, B, I or W", describe(kind))
            f = self.need(st, "flow", w + ".flow", int)
            p = self.need(st, "position", w + ".position", int)
            mb = self.need(st, "microbatch", w + ".microbatch", int)
            sub = self.need(st, "sub", w + ".sub", int)
            rank = self.need(st, "rank", w + ".rank", int)
            if not 0 <= f < len(self.flows) or not 0 <= p < len(self.flows[f]["positions"]):
                self.bad(w, "a flow and position of the partition", "flow %d position %d" % (f, p))
            if self.flows[f]["positions"][p]["rank"] != rank:
                self.bad(w + ".rank", "%d (the rank of flow %d position %d)"
                         % (self.flows[f]["positions"][p]["rank"], f, p), str(rank))
            if (f, mb, sub) not in self.units:
                self.bad(w, "a (microbatch, sub) listed in data",
                         "flow %d microbatch %d sub %d" % (f, mb, sub))
            n = sum(sp[2] for sp in self.flows[f]["positions"][p]["spans"])
            pols = st.get("layer_policies")
            if pols is None:
                pol = self.need(st, "policy", w + ".policy", str)
                if pol not in POLICIES:
                    self.bad(w + ".policy", "none, selective, full or offload (or layer_policies)", describe(pol))
                pols = [pol] * n
            else:
                if not isinstance(pols, list) or len(pols) != n:
                    self.bad(w + ".layer_policies", "%d policies (the chunk's layers)" % n, describe(pols))
                for k, pol in enumerate(pols):
                    if pol not in POLICIES:
                        self.bad("%s.layer_policies[%d]" % (w, k), "none, selective, full or offload", describe(pol))
            rec = {"id": sid, "kind": kind, "flow": f, "position": p, "mb": mb, "sub": sub,
                   "rank": rank, "policies": pols}
            if sid in self.stages:
                self.bad(w + ".id", "a unique stage id", "%d twice" % sid)
            self.stages[sid] = rec
            key = (f, p, mb, sub, kind)
            if key in self.stage_of:
                self.bad(w, "one %s stage per (flow, position, microbatch, sub)" % kind, "a second")
            self.stage_of[key] = sid
        for (f, mb, sub) in self.units:
            for p in range(len(self.flows[f]["positions"])):
                if (f, p, mb, sub, "F") not in self.stage_of:
                    self.bad("stages", "a forward stage of flow %d position %d microbatch %d sub %d"
                             % (f, p, mb, sub), "none")

    def load_actions(self, doc):
        """rank_actions: every rank's list, with the transfers' tensors."""
        ra = self.need(doc, "rank_actions", "rank_actions", list)
        self.actions = {}
        for i, entry in enumerate(ra):
            w = "rank_actions[%d]" % i
            r = self.need(entry, "rank", w + ".rank", int)
            acts = self.need(entry, "actions", w + ".actions", list)
            out = []
            for k, a in enumerate(acts):
                aw = "%s.actions[%d]" % (w, k)
                name = self.need(a, "action", aw + ".action", str)
                if name not in ACTIONS:
                    self.bad(aw + ".action", "one of " + ", ".join(ACTIONS), describe(name))
                sid = self.need(a, "stage", aw + ".stage", int)
                if sid not in self.stages:
                    self.bad(aw + ".stage", "a stage id", str(sid))
                rec = {"action": name, "stage": sid, "index": k}
                if name in ("isend", "irecv", "wait_isend", "wait_irecv"):
                    rec["peer"] = self.need(a, "peer", aw + ".peer", int)
                    rec["peer_stage"] = self.need(a, "peer_stage", aw + ".peer_stage", int)
                    if rec["peer_stage"] not in self.stages:
                        self.bad(aw + ".peer_stage", "a stage id", str(rec["peer_stage"]))
                    t = self.need(a, "tensor", aw + ".tensor", dict)
                    shape = self.need(t, "shape", aw + ".tensor.shape", list)
                    if len(shape) != 2 or not all(isinstance(x, int) and x >= 0 for x in shape):
                        self.bad(aw + ".tensor.shape", "[rows, cols]", describe(shape))
                    rec["shape"] = shape
                    rec["where"] = aw
                out.append(rec)
            self.actions[r] = out
        for r in range(self.ranks):
            if r not in self.actions:
                self.bad("rank_actions", "an entry for rank %d" % r, "none")

    def check_tensors(self):
        """Every transfer's tensor.shape[0] against the tokens its producer's
        samples give (sdk/include/loom/tokens.h): a plan made for another
        model (or other token counts) fails here."""
        for r in range(self.ranks):
            for a in self.actions[r]:
                if "shape" not in a:
                    continue
                st, peer = self.stages[a["stage"]], self.stages[a["peer_stage"]]
                send = a["action"] in ("isend", "wait_isend")
                prod_side = st if send else peer
                other = peer if send else st
                prod = prod_side if prod_side["kind"] == "F" else other
                cons = other if prod is prod_side else prod_side
                tokens = self.real_tokens(prod, cons)
                want = -(-tokens // self.tp)
                # a span may run at its own TP degree, which plan.json does
                # not list: any power of two up to 64 is accepted too
                if a["shape"][0] not in [want] + [-(-tokens // t) for t in TP_DEGREES]:
                    raise InputError("%s: %s.tensor.shape[0]: expected %d (the tokens stage %d's "
                                     "samples give with model %s), found %d (wrong model for the plan?)"
                                     % (self.path, a["where"], want, prod["id"], self.spec.path,
                                        a["shape"][0]))
                if a["peer"] == r or not 0 <= a["peer"] < self.ranks:
                    raise InputError("%s: %s.peer: expected another rank in [0, %d], found %d"
                                     % (self.path, a["where"], self.ranks - 1, a["peer"]))

    # -- units and layouts --------------------------------------------------

    def unit(self, f, mb, sub, loss_rows):
        """The Unit of (flow, microbatch, sub), made once."""
        key = (f, mb, sub, loss_rows)
        u = self.unit_cache.get(key)
        if u is None:
            u = self.unit_cache[key] = L.Unit(self.spec, self.units[(f, mb, sub)], self.samples, loss_rows)
        return u

    def key_rows(self, unit, key, module):
        """Rows of state key `key` of `unit` (module: the current module)."""
        spec = self.spec
        if key.startswith("out:"):
            return sum(unit.own(spec.by_name[key[4:]]))
        if key == "h":
            return sum(unit.rows(module))
        return sum(unit.ctx(module))

    def layout(self, unit, keys, module):
        """[(key, rows)] of a state at a boundary, in canonical order."""
        return [(k, self.key_rows(unit, k, module)) for k in keys]

    def held_samples(self):
        """The samples some unit of the plan holds, ascending. A plan of one
        pipeline replica (DistTrain, Oobleck) holds its share only."""
        return sorted({s for ss in self.units.values() for s in ss})

    def loss_rows(self):
        """Rows of the terminal modules over the iteration (the loss divisor)."""
        spec = self.spec
        n = sum(spec.rows(m.index, s) for m in spec.modules if m.terminal for s in self.samples)
        return max(1, n)

    def real_tokens(self, prod, cons):
        """The tokens docs/outputs.md counts for an edge's tensor (its rows
        are ceil(tokens / tp)): those of the producer unit's samples the
        consumer's unit also holds, leaving the producer position's last
        span (sdk/include/loom/tokens.h, loom_sample_span_out_tokens),
        unscaled."""
        m, first, n = self.flows[prod["flow"]]["positions"][prod["position"]]["spans"][-1]
        mine = self.units[(prod["flow"], prod["mb"], prod["sub"])]
        other = set(self.units[(cons["flow"], cons["mb"], cons["sub"])])
        return sum(self.spec.real_span_out_tokens(m, first + n, self.samples[s])
                   for s in mine if s in other)
