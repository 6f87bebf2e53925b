"""The scaled-down model's parameters, inputs and compute pieces (float64).

A unit's activations live in a state: a dict of [rows, hidden] tensors keyed
"out:<module>" (a finished module's output), "h" (the current module's
sequence), "ctx" (its cross-attention context), "q", "k", "v", "a" (inside a
layer) and "loss" (a scalar). Rows are the unit's samples one after another.
A Piece is one step of compute over the state: it reads some keys, writes
some and drops some; the engine (engine.py) runs pieces with or without
keeping their autograd graph, which is how recomputation is expressed.

Blocks: pre-norm transformer layers (RMSNorm), grouped-query attention with
per-sample attention (packed sequences), causal masks where the module is
causal, SwiGLU where the FFN is gated (GELU otherwise), cross-attention to
the context (queries and output projected; the context is used as keys and
values directly, as the roofline cost model counts it).
"""

import math
import zlib

import torch
import torch.nn.functional as F

PATCH = 8  # features of a raw image / video / audio token


class Piece:
    """One compute step: fn(params, unit, inputs dict) -> outputs dict."""

    def __init__(self, name, fn, reads, writes, drops, params, recompute=False, layer=None,
                 offload=False):
        self.name, self.fn = name, fn
        self.reads, self.writes, self.drops = reads, writes, drops
        self.params = params          # parameter names it uses
        self.recompute = recompute    # run without a graph, rebuilt before backward
        self.layer = layer            # (module, layer) it belongs to, for the sample counts
        self.offload = offload        # saved activations copied out and back (policy offload)


class Unit:
    """The samples of one (flow, microbatch, sub) and their row counts."""

    def __init__(self, spec, samples, sample_meta, loss_rows):
        self.spec, self.samples = spec, list(samples)
        self.meta = sample_meta       # the iteration's samples (dicts)
        self.loss_rows = loss_rows    # rows of the terminal modules over the iteration
        self._memo = {}

    def _list(self, what, fn, m):
        key = (what, m)
        v = self._memo.get(key)
        if v is None:
            v = self._memo[key] = [fn(m, self.meta[s]) for s in self.samples]
        return v

    def rows(self, m):
        """Sequence rows of module m per sample."""
        return self._list("rows", self.spec.rows, m)

    def own(self, m):
        """Own (output) rows of module m per sample."""
        return self._list("own", self.spec.own_rows, m)

    def ctx(self, m):
        """Cross-attention context rows of module m per sample."""
        return self._list("ctx", self.spec.ctx_rows, m)

    def key_rows(self, key):
        """Total rows of a state key for this unit."""
        if key.startswith("out:"):
            return sum(self.own(self.spec.by_name[key[4:]]))
        raise KeyError(key)


def _seed(*parts):
    """A stable 31-bit seed from the parts' text."""
    return zlib.crc32("/".join(str(p) for p in parts).encode()) & 0x7FFFFFFF


def _randn(shape, seed, scale):
    """Seeded normal float64 values times scale."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64) * scale


def param_shapes(spec):
    """Every parameter of the scaled model: name -> (shape, (module, layer))."""
    d = spec.hidden
    out = {}
    for m in spec.modules:
        hd = d // m.heads
        if m.modality == "text":
            out["%s.embed" % m.name] = ((max(m.vocab_s, 61), d), (m.index, 0))
        else:
            out["%s.embed" % m.name] = ((PATCH, d), (m.index, 0))
        for l in range(m.layers):
            p = "%s.%d." % (m.name, l)
            out[p + "norm1"] = ((d,), (m.index, l))
            out[p + "wq"] = ((d, m.heads * hd), (m.index, l))
            out[p + "wk"] = ((d, m.kv_heads * hd), (m.index, l))
            out[p + "wv"] = ((d, m.kv_heads * hd), (m.index, l))
            out[p + "wo"] = ((m.heads * hd, d), (m.index, l))
            if m.cross:
                out[p + "normc"] = ((d,), (m.index, l))
                out[p + "cq"] = ((d, d), (m.index, l))
                out[p + "co"] = ((d, d), (m.index, l))
            out[p + "norm2"] = ((d,), (m.index, l))
            out[p + "w1"] = ((d, m.ffn), (m.index, l))
            if m.gated:
                out[p + "w3"] = ((d, m.ffn), (m.index, l))
            out[p + "w2"] = ((m.ffn, d), (m.index, l))
        if m.terminal:
            last = m.layers - 1
            out["%s.norm_f" % m.name] = ((d,), (m.index, last))
            width = max(m.vocab_s, 61) if m.vocab else PATCH
            out["%s.head" % m.name] = ((d, width), (m.index, last))
    return out


def init_param(name, shape, seed):
    """A parameter's deterministic initial value (the same on every rank)."""
    if len(shape) == 1:
        return 1.0 + _randn(shape, _seed(seed, name), 0.1)
    return _randn(shape, _seed(seed, name), 1.0 / math.sqrt(shape[0]))


def make_params(spec, seed, names=None, requires_grad=True):
    """The parameters (float64 leaves), all or only `names`."""
    shapes = param_shapes(spec)
    params = {}
    for name, (shape, (mi, _)) in shapes.items():
        if names is not None and name not in names:
            continue
        t = init_param(name, shape, seed)
        t.requires_grad_(requires_grad and not spec.modules[mi].frozen)
        params[name] = t
    return params


# -- per-sample raw inputs and targets ------------------------------------

_RAW = {}


def _cached(fn):
    """Raw inputs are constants: made once per (kind, module, sample, seed)."""
    def wrapped(spec, m, sid, meta, seed):
        key = (fn.__name__, id(spec), m, sid, seed, tuple(sorted(meta.items())))
        t = _RAW.get(key)
        if t is None:
            t = _RAW[key] = fn(spec, m, sid, meta, seed)
        return t
    return wrapped


@_cached
def raw_text(spec, m, sid, meta, seed):
    """Token ids of sample sid's text for module m."""
    n = spec.text_rows(m, meta)
    g = torch.Generator().manual_seed(_seed(seed, "text", m, sid))
    return torch.randint(0, max(spec.modules[m].vocab_s, 61), (n,), generator=g)


@_cached
def raw_items(spec, m, sid, meta, seed):
    """Raw feature rows (patches, latents, frames) of sample sid for module m."""
    n = spec.item_rows(m, meta)
    return _randn((n, PATCH), _seed(seed, "items", m, sid), 1.0)


@_cached
def targets(spec, m, sid, meta, seed):
    """Loss targets of sample sid at terminal module m: token ids or rows."""
    n = spec.rows(m, meta)
    mod = spec.modules[m]
    if mod.vocab:
        g = torch.Generator().manual_seed(_seed(seed, "target", m, sid))
        return torch.randint(0, max(mod.vocab_s, 61), (n,), generator=g)
    return _randn((n, PATCH), _seed(seed, "target", m, sid), 1.0)


# -- compute ----------------------------------------------------------------

def rms(x, w):
    """RMSNorm of the rows of x with weight w."""
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w


def _splits(t, sizes):
    """t split into row blocks of the given sizes (empty blocks allowed)."""
    return torch.split(t, sizes, 0) if t.shape[0] else [t[:0] for _ in sizes]


def attention(q, k, v, heads, kv_heads, causal, qrows, krows):
    """Per-sample attention: sample i's queries (qrows[i]) attend to its keys
    (krows[i]); kv heads are shared by heads // kv_heads query heads."""
    hd = q.shape[1] // heads
    outs = []
    for qs, ks, vs in zip(_splits(q, qrows), _splits(k, krows), _splits(v, krows)):
        n, c = qs.shape[0], ks.shape[0]
        if n == 0:
            outs.append(qs)
            continue
        if c == 0:
            outs.append(torch.zeros_like(qs))
            continue
        qh = qs.reshape(n, heads, hd).transpose(0, 1)
        kh = ks.reshape(c, kv_heads, hd).transpose(0, 1)
        vh = vs.reshape(c, kv_heads, hd).transpose(0, 1)
        rep = heads // kv_heads
        if rep > 1:
            kh = kh.repeat_interleave(rep, 0)
            vh = vh.repeat_interleave(rep, 0)
        sc = qh @ kh.transpose(1, 2) / math.sqrt(hd)
        if causal:
            mask = torch.ones(n, c, dtype=torch.bool).triu(1)
            sc = sc.masked_fill(mask, float("-inf"))
        outs.append((torch.softmax(sc, -1) @ vh).transpose(0, 1).reshape(n, heads * hd))
    return torch.cat(outs, 0) if outs else q[:0]


def layer_pieces(spec, m, l, policy):
    """The pieces of layer l of module m under a memory policy: `none` keeps
    every graph, `selective` recomputes the attention core, `full` the layer,
    `offload` keeps the graph but copies what it saves out and back."""
    mod = spec.modules[m]
    p = "%s.%d." % (mod.name, l)
    pre_params = [p + x for x in ("norm1", "wq", "wk", "wv")]
    post_params = [p + "wo", p + "norm2", p + "w1", p + "w2"]
    if mod.gated:
        post_params.append(p + "w3")
    if mod.cross:
        post_params += [p + "normc", p + "cq", p + "co"]
    ctx = ["ctx"] if mod.cross else []

    def pre(P, unit, x):
        a = rms(x["h"], P[p + "norm1"])
        return {"q": a @ P[p + "wq"], "k": a @ P[p + "wk"], "v": a @ P[p + "wv"]}

    def core(P, unit, x):
        r = unit.rows(m)
        return {"a": attention(x["q"], x["k"], x["v"], mod.heads, mod.kv_heads, mod.causal, r, r)}

    def post(P, unit, x):
        h = x["h"] + x["a"] @ P[p + "wo"]
        if mod.cross:
            c = rms(h, P[p + "normc"]) @ P[p + "cq"]
            cc = x["ctx"]
            h = h + attention(c, cc, cc, mod.heads, mod.heads, False, unit.rows(m),
                              unit.ctx(m)) @ P[p + "co"]
        z = rms(h, P[p + "norm2"])
        if mod.gated:
            f = F.silu(z @ P[p + "w1"]) * (z @ P[p + "w3"])
        else:
            f = F.gelu(z @ P[p + "w1"], approximate="tanh")
        return {"h": h + f @ P[p + "w2"]}

    def whole(P, unit, x):
        y = dict(x)
        y.update(pre(P, unit, x))
        y.update(core(P, unit, y))
        return post(P, unit, y)

    where = (m, l)
    if policy == "selective":
        return [Piece(p + "pre", pre, ["h"], ["q", "k", "v"], [], pre_params, layer=where),
                Piece(p + "core", core, ["q", "k", "v"], ["a"], ["q", "k", "v"], [], True, where),
                Piece(p + "post", post, ["h", "a"] + ctx, ["h"], ["a"], post_params, layer=where)]
    return [Piece(p + "layer", whole, ["h"] + ctx, ["h"], [], pre_params + post_params,
                  recompute=(policy == "full"), layer=where, offload=(policy == "offload"))]


def begin_piece(spec, m, keep, seed):
    """Starts module m: embeds its raw input and takes its upstream outputs
    (a text module puts them before its text rows; a cross-attention module
    makes them its context). `keep`: upstream keys still needed later."""
    mod = spec.modules[m]
    ups = ["out:" + spec.modules[u].name for u in mod.inputs]
    uses_up = mod.modality == "text" or mod.cross
    reads = ups if uses_up else []
    writes = ["h"] + (["ctx"] if mod.cross else []) + [k for k in reads if k in keep]
    drops = [k for k in reads if k not in keep]
    name = "%s.embed" % mod.name

    def fn(P, unit, x):
        per_up = [_splits(x[k], unit.own(u)) for k, u in zip(ups, mod.inputs)] if uses_up else []
        rows = []
        ctx = []
        for i, sid in enumerate(unit.samples):
            meta = unit.meta[sid]
            if mod.modality == "text":
                for parts in per_up:
                    rows.append(parts[i])
                rows.append(P[name][raw_text(spec, m, sid, meta, seed)])
            else:
                rows.append(raw_items(spec, m, sid, meta, seed) @ P[name])
                for parts in per_up if mod.cross else []:
                    ctx.append(parts[i])
        d = spec.hidden
        out = {"h": torch.cat(rows, 0) if rows else torch.zeros(0, d, dtype=torch.float64)}
        if mod.cross:
            out["ctx"] = torch.cat(ctx, 0) if ctx else torch.zeros(0, d, dtype=torch.float64)
        for k in reads:
            if k in keep:
                out[k] = x[k].view_as(x[k])
        return out

    return Piece(name, fn, reads, writes, drops, [name], layer=(m, 0))


def merge_items(spec, m, h, unit):
    """Module m's layer rows pooled to the rows it hands on, per sample: an
    image's patches average-pooled to its tokens (adaptive pooling over the
    image's rows), a video's or audio clip's rows over the whole sample."""
    mod = spec.modules[m]
    d = h.shape[1]
    out = []
    for part, sid in zip(_splits(h, unit.rows(m)), unit.samples):
        meta = unit.meta[sid]
        n_out = spec.own_rows(m, meta)
        if part.shape[0] == 0 or n_out == 0:
            out.append(h.new_zeros((n_out, d)))
            continue
        items = meta["images"] if mod.modality == "image" else 1
        per_in, per_out = part.shape[0] // items, n_out // items
        x = part.reshape(items, per_in, d).transpose(1, 2)
        out.append(F.adaptive_avg_pool1d(x, per_out).transpose(1, 2).reshape(n_out, d))
    return torch.cat(out, 0) if out else h[:0]


def end_piece(spec, m, seed, has_loss):
    """Ends module m: its output rows (a text module's text rows) become
    "out:<m>", pooled to its tokens where its layers ran on patches; a
    terminal module instead adds its loss (cross-entropy over the
    vocabulary, or half the squared error) / the iteration's loss rows."""
    mod = spec.modules[m]
    key = "out:" + mod.name
    last = mod.layers - 1
    drops = ["h"] + (["ctx"] if mod.cross else [])
    if not mod.terminal:
        def fn(P, unit, x):
            if mod.modality != "text":
                if spec.merges(m):
                    return {key: merge_items(spec, m, x["h"], unit)}
                return {key: x["h"].view_as(x["h"])}
            parts = _splits(x["h"], unit.rows(m))
            texts = [pt[pt.shape[0] - spec.text_rows(m, unit.meta[s]):]
                     for pt, s in zip(parts, unit.samples)]
            return {key: torch.cat(texts, 0) if texts else x["h"][:0]}
        return Piece(key, fn, ["h"], [key], drops, [], layer=(m, last))
    reads = ["h"] + (["loss"] if has_loss else [])
    names = ["%s.norm_f" % mod.name, "%s.head" % mod.name]

    def loss_fn(P, unit, x):
        z = rms(x["h"], P[names[0]]) @ P[names[1]]
        tg = [targets(spec, m, s, unit.meta[s], seed) for s in unit.samples]
        if mod.vocab:
            t = torch.cat(tg, 0) if tg else torch.zeros(0, dtype=torch.long)
            loss = F.cross_entropy(z, t, reduction="sum") if z.shape[0] else z.sum()
        else:
            t = torch.cat(tg, 0) if tg else z[:0]
            loss = 0.5 * ((z - t) ** 2).sum()
        loss = loss / unit.loss_rows
        if has_loss:
            loss = loss + x["loss"]
        return {"loss": loss}

    return Piece(mod.name + ".loss", loss_fn, reads, ["loss"], drops, names, layer=(m, last))
