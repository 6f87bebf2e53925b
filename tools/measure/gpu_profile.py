#!/usr/bin/env python3
"""Measures one GPU for `loom calibrate`: a bf16 GEMM sweep, an attention
sweep and a per-layer profile of a Loom model file.

    python3 tools/measure/gpu_profile.py --model examples/models/vlm-s.json --out prof/

writes, into --out:

    device.json     the GPU, PyTorch and CUDA versions, and the sweeps' settings
    gemm.csv        m,n,k,flops,ms,tflops           one [m x k] x [k x n] product
    attention.csv   tokens,seq_len,heads,head_dim,causal,flops,forward_ms,backward_ms
    profile.csv     loom calibrate's per-layer profile (docs/calibration.md): every
                    module's layer 0 at each --tokens and --seq-len, tp 1
    shards.csv      module,tokens,seq_len,tp,forward_ms,backward_ms: one rank's share
                    of a tensor-parallel layer (heads / tp, ffn / tp), collectives left
                    out; written only with --shard-tp

Each layer is built the way Loom's roofline counts it (docs/cost-models.md):
norm, fused QKV projection, scaled-dot-product attention over packed sequences
of seq_len tokens (block diagonal: one batch row per sequence), output
projection and residual; cross-attention (query and output projections
against a 77-token context) where the layer has it; norm, fc1 (gate and up
fused for a gated FFN), activation, fc2 and residual. Times are medians of
--repeat CUDA-event timings after --warmup untimed runs; the backward is
timed alone, after an untimed forward, with the input requiring a gradient
(a middle layer's backward: input and weight gradients).

Needs PyTorch with CUDA; runs on one GPU.
"""
import argparse
import csv
import json
import os
import statistics
import sys
import time


def parse_ints(text):
    return [int(v) for v in text.split(",") if v.strip()]


DEV = "cuda"


class BadInput(Exception):
    """A model file that cannot be measured: the message names the file, the
    JSON path and what was expected and found."""


def load_model(path):
    """The Loom model file at path, with every module's layer 0 checked:
    name, and count, hidden, ffn_hidden, heads (dividing hidden) and kv_heads
    (dividing heads) as integers >= 1. Raises BadInput."""
    try:
        with open(path) as f:
            model = json.load(f)
    except OSError as e:
        raise BadInput("%s: cannot read the model: %s" % (path, e.strerror))
    except ValueError as e:
        raise BadInput("%s: not JSON: %s" % (path, e))
    mods = model.get("modules") if isinstance(model, dict) else None
    if not isinstance(mods, list) or not mods:
        raise BadInput("%s: modules: expected a non-empty array, found %s"
                       % (path, json.dumps(mods)))
    for i, mod in enumerate(mods):
        where = "modules[%d]" % i
        if not isinstance(mod, dict) or not isinstance(mod.get("name"), str):
            raise BadInput("%s: %s.name: expected a string" % (path, where))
        spec = mod.get("layers")
        if isinstance(spec, list) and spec:
            spec, where = spec[0], where + ".layers[0]"
        else:
            where += ".layers"
        if not isinstance(spec, dict):
            raise BadInput("%s: %s: expected a layer group object, found %s"
                           % (path, where, json.dumps(spec)))
        spec.setdefault("kv_heads", spec.get("heads"))
        for key in ("count", "hidden", "ffn_hidden", "heads", "kv_heads"):
            v = spec.get(key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise BadInput("%s: %s.%s: expected an integer >= 1, found %s"
                               % (path, where, key, json.dumps(v)))
        if spec["hidden"] % spec["heads"] or spec["heads"] % spec["kv_heads"]:
            raise BadInput("%s: %s: expected heads (%d) to divide hidden (%d) and kv_heads (%d) "
                           "to divide heads" % (path, where, spec["heads"], spec["hidden"],
                                                spec["kv_heads"]))
        mod["layers"] = spec
    return model


class Timer:
    """CUDA events on a GPU; the wall clock with --cpu (a format check only)."""

    def __init__(self, torch):
        self.torch = torch
        if DEV == "cuda":
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)

    def __enter__(self):
        if DEV == "cuda":
            self.start.record()
        else:
            self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if DEV == "cuda":
            self.end.record()
            self.end.synchronize()
            self.ms = self.start.elapsed_time(self.end)
        else:
            self.ms = (time.perf_counter() - self.t0) * 1e3


def sync(torch):
    if DEV == "cuda":
        torch.cuda.synchronize()


def allocated(torch):
    return torch.cuda.memory_allocated() if DEV == "cuda" else 0


def median_ms(torch, fn, warmup, repeat):
    """Median time of fn() in ms after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    sync(torch)
    times = []
    for _ in range(repeat):
        with Timer(torch) as t:
            fn()
        times.append(t.ms)
    return statistics.median(times)


def attention(torch, F, q, k, v, causal):
    """softmax(q k^T / sqrt(d)) v over [batch, heads, seq, d]; K/V heads are
    shared by groups of query heads (GQA). The fused kernel where PyTorch
    has one (2.0 and later), else the plain product."""
    groups = q.shape[1] // k.shape[1]
    if hasattr(F, "scaled_dot_product_attention"):
        if groups > 1:
            try:
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            except TypeError:
                pass
        else:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    if groups > 1:
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    s = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    if causal:
        n = s.shape[-1]
        mask = torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(s.float(), dim=-1).to(q.dtype), v)


def gemm_sweep(torch, args, writer):
    dev, dt = DEV, torch.bfloat16
    for m in parse_ints(args.gemm_m):
        for n, k in ((1024, 1024), (2048, 2048), (4096, 4096), (8192, 8192),
                     (1536, 4096), (4096, 1792), (1792, 15360), (14336, 4096)):
            a = torch.randn(m, k, device=dev, dtype=dt)
            b = torch.randn(k, n, device=dev, dtype=dt)
            ms = median_ms(torch, lambda: torch.matmul(a, b), args.warmup, args.repeat)
            flops = 2.0 * m * n * k
            writer.writerow([m, n, k, "%.6g" % flops, "%.6f" % ms, "%.2f" % (flops / ms / 1e9)])
            del a, b


def attention_sweep(torch, F, args, writer):
    dev, dt = DEV, torch.bfloat16
    head_dim = 128
    for heads in (8, 32):
        for seq in parse_ints(args.attn_seq):
            tokens = max(seq, args.attn_tokens)
            nseq = tokens // seq
            tokens = nseq * seq
            for causal in (0, 1):
                q = torch.randn(nseq, heads, seq, head_dim, device=dev, dtype=dt, requires_grad=True)
                k = torch.randn_like(q, requires_grad=True)
                v = torch.randn_like(q, requires_grad=True)
                fwd = lambda: attention(torch, F, q, k, v, bool(causal))
                f_ms = median_ms(torch, fwd, args.warmup, args.repeat)
                o = fwd()
                g = torch.randn_like(o)

                def bwd():
                    torch.autograd.grad(o, (q, k, v), g, retain_graph=True)
                b_ms = median_ms(torch, bwd, args.warmup, args.repeat)
                flops = 4.0 * heads * head_dim * tokens * seq * (0.5 if causal else 1.0)
                writer.writerow([tokens, seq, heads, head_dim, causal, "%.6g" % flops,
                                 "%.6f" % f_ms, "%.6f" % b_ms])
                del q, k, v, o, g


class Layer:
    """One transformer layer's weights and forward, at tp's share."""

    def __init__(self, torch, spec, tp):
        dev, dt = DEV, torch.bfloat16
        h = spec["hidden"]
        heads = spec["heads"]
        kv_heads = spec.get("kv_heads", heads) or heads
        self.head_dim = h // heads
        self.heads = heads // tp
        self.kv_heads = max(1, kv_heads // tp)
        self.causal = bool(spec.get("causal", False))
        self.gated = bool(spec.get("gated_ffn", False))
        self.cross = bool(spec.get("cross_attention", False))
        f = spec["ffn_hidden"] // tp
        qd, kd = self.heads * self.head_dim, self.kv_heads * self.head_dim
        w = lambda i, o: (torch.randn(o, i, device=dev, dtype=dt) * (i ** -0.5)).requires_grad_()
        self.h, self.qd, self.kd = h, qd, kd
        self.norm1 = torch.ones(h, device=dev, dtype=dt, requires_grad=True)
        self.norm2 = torch.ones(h, device=dev, dtype=dt, requires_grad=True)
        self.qkv = w(h, qd + 2 * kd)
        self.out = w(qd, h)
        self.fc1 = w(h, (2 if self.gated else 1) * f)
        self.fc2 = w(f, h)
        if self.cross:
            self.norm_c = torch.ones(h, device=dev, dtype=dt, requires_grad=True)
            self.cq = w(h, qd)
            self.cout = w(qd, h)
            ctx = 77
            self.ck = torch.randn(1, self.heads, ctx, self.head_dim, device=dev, dtype=dt)
            self.cv = torch.randn_like(self.ck)

    def params(self):
        p = [self.norm1, self.norm2, self.qkv, self.out, self.fc1, self.fc2]
        if self.cross:
            p += [self.norm_c, self.cq, self.cout]
        return p

    def norm(self, F, x, weight):
        if not self.gated:
            return F.layer_norm(x, (self.h,), weight)
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (self.h,), weight)
        return x * weight * (x.float().pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt().to(x.dtype)

    def forward(self, torch, F, x, seq):
        nseq = x.shape[0] // seq
        hd = self.head_dim
        y = self.norm(F, x, self.norm1)
        qkv = F.linear(y, self.qkv)
        q, k, v = qkv.split([self.qd, self.kd, self.kd], dim=-1)
        q = q.view(nseq, seq, self.heads, hd).transpose(1, 2)
        k = k.view(nseq, seq, self.kv_heads, hd).transpose(1, 2)
        v = v.view(nseq, seq, self.kv_heads, hd).transpose(1, 2)
        o = attention(torch, F, q, k, v, self.causal)
        o = o.transpose(1, 2).reshape(x.shape[0], self.qd)
        x = x + F.linear(o, self.out)
        if self.cross:
            y = self.norm(F, x, self.norm_c)
            q = F.linear(y, self.cq).view(1, x.shape[0], self.heads, hd).transpose(1, 2)
            o = attention(torch, F, q, self.ck, self.cv, False)
            x = x + F.linear(o.transpose(1, 2).reshape(x.shape[0], self.qd), self.cout)
        y = self.norm(F, x, self.norm2)
        u = F.linear(y, self.fc1)
        if self.gated:
            gate, up = u.chunk(2, dim=-1)
            u = F.silu(gate) * up
        else:
            u = F.gelu(u, approximate="tanh")
        return x + F.linear(u, self.fc2)


def time_layer(torch, F, layer, tokens, seq, args):
    """(forward_ms, backward_ms, activation_bytes) of one layer."""
    x = torch.randn(tokens, layer.h, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    f_ms = median_ms(torch, lambda: layer.forward(torch, F, x, seq), args.warmup, args.repeat)
    sync(torch)
    before = allocated(torch)
    out = layer.forward(torch, F, x, seq)
    sync(torch)
    act = allocated(torch) - before - out.numel() * out.element_size()
    g = torch.randn_like(out)
    inputs = [x] + layer.params()
    times = []
    for i in range(args.warmup + args.repeat):
        out = layer.forward(torch, F, x, seq)
        sync(torch)
        with Timer(torch) as t:
            torch.autograd.grad(out, inputs, g)
        if i >= args.warmup:
            times.append(t.ms)
    del x, out, g
    return f_ms, statistics.median(times), max(act, 0)


def layer_rows(torch, F, args, model, tp):
    """Yields (module, tokens, seq_len, forward_ms, backward_ms, act) of every
    module's layer 0 at tp's share."""
    seqs = parse_ints(args.seq_len)
    for mod in model["modules"]:
        spec = mod["layers"]
        if spec["heads"] % tp or spec["ffn_hidden"] % tp:
            continue
        layer = Layer(torch, spec, tp)
        item = int(mod.get("tokens_per_item", 1))
        # an encoder of images or frames attends within one item
        mod_seqs = [item] if item > 1 and mod.get("kind") == "encoder" else seqs
        for seq in mod_seqs:
            for tokens in parse_ints(args.tokens):
                tokens = (tokens // seq) * seq
                if tokens < seq or tokens <= 0:
                    continue
                yield (mod["name"], tokens, seq) + time_layer(torch, F, layer, tokens, seq, args)
        del layer
        if DEV == "cuda":
            torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="a Loom model.json (modules[].layers)")
    ap.add_argument("--out", required=True, help="folder for the CSV files")
    ap.add_argument("--tokens", default="512,1024,2048,4096,8192,16384,32768")
    ap.add_argument("--seq-len", default="512,2048,8192",
                    help="sequence lengths of the backbone rows (encoders use their item's tokens)")
    ap.add_argument("--shard-tp", default="", help="TP degrees for shards.csv, e.g. 2,4,8")
    ap.add_argument("--shard-model", default="", help="model for shards.csv (default --model)")
    ap.add_argument("--shard-seq", default="", help="sequence lengths for shards.csv")
    ap.add_argument("--shard-tokens", default="", help="token counts for shards.csv")
    ap.add_argument("--gemm-m", default="128,256,512,1024,2048,4096,8192,16384,32768")
    ap.add_argument("--attn-seq", default="128,256,512,1024,2048,4096,8192,16384")
    ap.add_argument("--attn-tokens", type=int, default=16384)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--skip", default="", help="comma list of gemm,attention,profile to skip")
    ap.add_argument("--cpu", action="store_true",
                    help="run on the CPU with wall-clock times: checks the files' format, measures nothing useful")
    args = ap.parse_args()

    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("gpu_profile: PyTorch is not installed", file=sys.stderr)
        return 2
    global DEV
    if args.cpu:
        DEV = "cpu"
    elif not torch.cuda.is_available():
        print("gpu_profile: no CUDA device (--cpu checks the output format without one)",
              file=sys.stderr)
        return 2
    try:
        model = load_model(args.model)
        smodel = load_model(args.shard_model) if args.shard_model else model
    except BadInput as e:
        print("gpu_profile: %s" % e, file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    skip = set(args.skip.split(","))

    with open(os.path.join(args.out, "device.json"), "w") as f:
        cuda = DEV == "cuda"
        json.dump({"device": torch.cuda.get_device_name(0) if cuda else "cpu",
                   "multiprocessors": torch.cuda.get_device_properties(0).multi_processor_count
                   if cuda else 0,
                   "torch": torch.__version__, "cuda": torch.version.cuda,
                   "model": os.path.basename(args.model), "warmup": args.warmup,
                   "repeat": args.repeat, "dtype": "bfloat16"}, f, indent=1)

    def write(name, header, fill):
        """Writes out/name: the header, then the rows fill(writer, file) adds."""
        with open(os.path.join(args.out, name), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            fill(w, f)
        print("gpu_profile: " + name, flush=True)

    def profile_rows(w, f):
        for name, tokens, seq, f_ms, b_ms, act in layer_rows(torch, F, args, model, 1):
            w.writerow([name, 0, tokens, 1, "%.6f" % f_ms, "%.6f" % b_ms, act, seq])
            f.flush()

    if "gemm" not in skip:
        write("gemm.csv", ["m", "n", "k", "flops", "ms", "tflops"],
              lambda w, f: gemm_sweep(torch, args, w))
    if "attention" not in skip:
        write("attention.csv", ["tokens", "seq_len", "heads", "head_dim", "causal", "flops",
                                "forward_ms", "backward_ms"],
              lambda w, f: attention_sweep(torch, F, args, w))
    if "profile" not in skip:
        write("profile.csv", ["module", "layer", "tokens", "tp", "forward_ms", "backward_ms",
                              "activation_bytes", "seq_len"], profile_rows)
    if args.shard_tp:
        sargs = argparse.Namespace(**vars(args))
        if args.shard_seq:
            sargs.seq_len = args.shard_seq
        if args.shard_tokens:
            sargs.tokens = args.shard_tokens

        def shard_rows(w, f):
            for tp in parse_ints(args.shard_tp):
                for name, tokens, seq, f_ms, b_ms, _ in layer_rows(torch, F, sargs, smodel, tp):
                    w.writerow([name, tokens, seq, tp, "%.6f" % f_ms, "%.6f" % b_ms])
                    f.flush()
        write("shards.csv", ["module", "tokens", "seq_len", "tp", "forward_ms", "backward_ms"],
              shard_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
