#!/usr/bin/env python3
"""Times whole training iterations of a one-module text model on one GPU,
for `loom calibrate --measured` and for checking Loom's whole-iteration
prediction at pp = tp = dp = 1.

    python3 tools/measure/gpu_iteration.py --model M.json --microbatches 4 \\
        --seq-len 4096 --out DIR

One iteration is what Megatron-LM runs on one GPU with bf16 weights and the
distributed optimizer at dp = 1: for every microbatch (one sequence of
--seq-len tokens) the embedding look-up, the module's layers (built as
tools/measure/gpu_profile.py builds them), the final norm, the LM head and
the cross-entropy loss, forward and backward, gradients accumulated in fp32;
then Adam on fp32 master weights (fused) and the bf16 weights refreshed from
them. The model file's first module must be a text module with a vocab.

Writes DIR/iteration.json: the device, the model, the settings, every timed
iteration's milliseconds and their median (CUDA events around the whole
iteration, after --warmup untimed ones), and the median of the optimizer
step alone. Needs PyTorch with CUDA (--cpu: a format check, times mean
nothing).
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_profile  # noqa: E402  (the layer and the timer)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpu", action="store_true")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("gpu_iteration: PyTorch is not installed", file=sys.stderr)
        return 2
    if args.cpu:
        gpu_profile.DEV = "cpu"
    elif not torch.cuda.is_available():
        print("gpu_iteration: no CUDA device (--cpu checks the format without one)",
              file=sys.stderr)
        return 2
    dev = gpu_profile.DEV
    try:
        model = gpu_profile.load_model(args.model)
    except gpu_profile.BadInput as e:
        print("gpu_iteration: %s" % e, file=sys.stderr)
        return 2
    mod = model["modules"][0]
    spec = mod["layers"]
    vocab = mod.get("vocab", 0)
    if mod.get("modality", "text") != "text" or not isinstance(vocab, int) or vocab < 1:
        print("gpu_iteration: %s: modules[0] must be a text module with a vocab" % args.model,
              file=sys.stderr)
        return 2
    n_layers = int(spec["count"])
    h = int(spec["hidden"])
    torch.manual_seed(0)
    layers = [gpu_profile.Layer(torch, spec, 1) for _ in range(n_layers)]
    bf = torch.bfloat16
    embed = (torch.randn(vocab, h, device=dev, dtype=bf) * 0.02).requires_grad_()
    head = (torch.randn(vocab, h, device=dev, dtype=bf) * h ** -0.5).requires_grad_()
    final_norm = torch.ones(h, device=dev, dtype=bf, requires_grad=True)
    params = [embed, head, final_norm] + [p for ly in layers for p in ly.params()]
    master = [p.detach().float().clone().requires_grad_() for p in params]
    opt = torch.optim.Adam(master, lr=1e-5, fused=(dev == "cuda"))
    seq = args.seq_len
    data = [torch.randint(0, vocab, (seq + 1,), device=dev) for _ in range(args.microbatches)]

    def head_loss(x, ids):
        x = layers[0].norm(F, x, final_norm)
        logits = F.linear(x, head)
        return F.cross_entropy(logits.float(), ids[1:])

    def forward_backward(ids):
        x = F.embedding(ids[:-1], embed)
        for ly in layers:
            x = ly.forward(torch, F, x, seq)
        return torch.autograd.grad(head_loss(x, ids), params)

    def accumulate(grads):
        for m, g in zip(master, grads):  # fp32 accumulation
            if m.grad is None:
                m.grad = g.float()
            else:
                m.grad.add_(g)

    def microbatch(ids):
        accumulate(forward_backward(ids))

    def step():
        opt.step()
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            for p, m in zip(params, master):
                p.copy_(m)

    def iteration():
        for ids in data:
            microbatch(ids)
        step()

    for _ in range(args.warmup):
        iteration()
    gpu_profile.sync(torch)
    times, steps = [], []
    for _ in range(args.repeat):
        with gpu_profile.Timer(torch) as t:
            iteration()
        times.append(t.ms)
    for _ in range(args.repeat):
        for ids in data:
            microbatch(ids)
        gpu_profile.sync(torch)
        with gpu_profile.Timer(torch) as t:
            step()
        steps.append(t.ms)
    # the parts of one microbatch: forward and backward, the fp32
    # accumulation, and the head and loss alone (forward and backward)
    x_head = torch.randn(seq, h, device=dev, dtype=bf, requires_grad=True)
    grads0 = forward_backward(data[0])
    parts = {
        "forward_backward_ms": gpu_profile.median_ms(
            torch, lambda: forward_backward(data[0]), 1, args.repeat),
        "accumulate_ms": gpu_profile.median_ms(
            torch, lambda: accumulate(grads0), 1, args.repeat),
        "head_loss_ms": gpu_profile.median_ms(
            torch, lambda: torch.autograd.grad(head_loss(x_head, data[0]),
                                               [x_head, head, final_norm]), 1, args.repeat),
    }
    os.makedirs(args.out, exist_ok=True)
    cuda = dev == "cuda"
    out = {"device": torch.cuda.get_device_name(0) if cuda else "cpu",
           "torch": torch.__version__, "model": os.path.basename(args.model),
           "layers": n_layers, "vocab": vocab, "microbatches": args.microbatches,
           "seq_len": seq, "iteration_ms": times, "median_ms": statistics.median(times),
           "optimizer_ms": statistics.median(steps),
           "params": sum(p.numel() for p in params), "microbatch_parts": parts}
    path = os.path.join(args.out, "iteration-%s.json" % os.path.splitext(out["model"])[0])
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("gpu_iteration: %s: median %.3f ms, optimizer %.3f ms" %
          (path, out["median_ms"], out["optimizer_ms"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
