#!/usr/bin/env python3
"""check_megatron_exports.py SOURCE_DIR LOOM_BINARY - megatron.args and
mimo.json, checked by their consumers' own code (docs/outputs.md).

Plans every examples/manifests/*.json (deterministic mode, --evaluations 20)
on the LLM-only llama-3-8b HF config (tp=2, pp=4, dp=1, 8 microbatches) and
on the vlm-s preset (tp=2, pp=2, dp=1, 4 microbatches), plus cases that
reach each kind of output: virtual stages, context parallelism, block and
uniform recomputation (megatron-tuned under a memory cap), each precision
(fp16, fp8, fp32, TF32) and the two-layout VLM plan of tools/executor/tests. For every plan:

- plan.json exports.megatron names megatron.args or a reason, and the file
  exists exactly when it names it; the same for exports.mimo / mimo.json;
- megatron.args: every argument name is one Megatron-LM accepts
  (MEGATRON_LM_ARGS), one per line; the layout goes through megatron-core's
  PipelineParallelLayerLayout (validate_layer_layout) and its per-stage
  decoder counts are the plan's partition (without a layout megatron-core's
  get_num_layers_to_build gives them for the even split); the arguments
  build a megatron.core TransformerConfig (as Megatron-LM copies arguments
  by field name), recomputation and layout included; micro and global
  batch give the plan's microbatch count through megatron-core's
  ConstantNumMicroBatchesCalculator; every rank's stage order is the one
  megatron-core's schedule runs (get_pp_rank_microbatches,
  get_schedule_table); the recompute flags are the stages' layer_policies;
  the optimizer, overlap, TP-overlap and gradient-reduce flags are the
  roofline cost model's params; a plan priced with sharded weights as
  Megatron-FSDP keeps them (fsdp, fsdp_implementation megatron-fsdp)
  runs Megatron-FSDP with the flags validate_args and its user guide
  require, on one pipeline rank only, and megatron-core builds its
  DistributedDataParallelConfig from them;
  --seq-length holds the longest microbatch; the precision flags give the
  parameter dtype and fp8 recipe Megatron-LM runs (its validate_args rule,
  TransformerConfig) of what the roofline priced (bf16, fp16, fp8 GEMMs
  under bf16, or fp32), and a precision it does not run is refused;
- mimo.json: the rules of Megatron-Bridge's MegatronMIMOParallelismConfig
  (restated in check_mimo: neither megatron-core 0.16.1 nor megatron-bridge
  0.3.1 on PyPI ships the class) and the plan's layouts.

Prints one line per plan and exits 1 when anything failed.
"""
import dataclasses
import glob
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore")
from roofline_params import roofline_params as shared_roofline_params  # noqa: E402
import torch  # noqa: E402
from megatron.core.distributed import DistributedDataParallelConfig  # noqa: E402
from megatron.core.num_microbatches_calculator import ConstantNumMicroBatchesCalculator  # noqa: E402
from megatron.core.pipeline_parallel.schedules import (  # noqa: E402
    get_pp_rank_microbatches, get_schedule_table)
from megatron.core.transformer import TransformerConfig  # noqa: E402
from megatron.core.transformer.enums import AttnBackend, LayerType  # noqa: E402
from megatron.core.transformer.pipeline_parallel_layer_layout import (  # noqa: E402
    PipelineParallelLayerLayout)
from megatron.core.transformer.transformer_block import get_num_layers_to_build  # noqa: E402

# Argument names verified in Megatron-LM tag core_v0.16.1 (commit
# 55ac7082517c3878ae653c07c09c534b8aed49f6), megatron/training/arguments.py:
# defined there with group.add_argument (--pipeline-model-parallel-layout,
# --num-virtual-stages-per-pipeline-rank, --seq-length,
# --max-position-embeddings, --group-query-attention, --swiglu,
# --use-distributed-optimizer, --overlap-grad-reduce, --overlap-param-gather)
# or generated from ModelParallelConfig's bf16 and fp16 and TransformerConfig's
# fp8 (argparse name --fp8-format) and fp8_recipe; --tp-comm-overlap from
# ModelParallelConfig's tp_comm_overlap; --attention-backend from
# TransformerConfig's attention_backend (an AttnBackend name);
# --grad-reduce-in-bf16 defined with group.add_argument;
# or generated from the fields of TransformerConfig / ModelParallelConfig /
# TrainingConfig by ArgumentGroupFactory (field name with '-' for '_': the
# parallel sizes, --num-layers, --hidden-size, --ffn-hidden-size,
# --num-attention-heads, --num-query-groups, --sequence-parallel,
# --recompute-granularity, --recompute-method, --recompute-num-layers,
# --micro-batch-size, --global-batch-size). Every file this check accepts
# was also run through that tag's own parse_args, validate_args and
# core_transformer_config_from_args when the writer was made.
MEGATRON_LM_ARGS = {
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
    "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
    "--group-query-attention", "--num-query-groups", "--swiglu", "--seq-length",
    "--max-position-embeddings", "--micro-batch-size", "--global-batch-size",
    "--pipeline-model-parallel-layout", "--num-virtual-stages-per-pipeline-rank",
    "--sequence-parallel", "--recompute-granularity", "--recompute-method",
    "--recompute-num-layers", "--use-distributed-optimizer", "--overlap-grad-reduce",
    "--overlap-param-gather", "--bf16", "--fp16", "--fp8-format", "--fp8-recipe",
    "--tp-comm-overlap", "--grad-reduce-in-bf16", "--attention-backend",
    "--use-megatron-fsdp", "--data-parallel-sharding-strategy",
    "--no-gradient-accumulation-fusion", "--ckpt-format",
}
FLAGS = {"--group-query-attention", "--swiglu", "--sequence-parallel",
         "--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather",
         "--bf16", "--fp16", "--tp-comm-overlap", "--grad-reduce-in-bf16",
         "--use-megatron-fsdp", "--no-gradient-accumulation-fusion"}
# Megatron-FSDP in the same tag: --use-megatron-fsdp, --data-parallel-sharding-strategy
# (choices no_shard, optim, optim_grads, optim_grads_params) and
# --no-gradient-accumulation-fusion defined with group.add_argument; --ckpt-format
# generated from CheckpointConfig.ckpt_format (training_config.py: torch, torch_dist,
# torch_dcp, fsdp_dtensor). validate_args: with --use-megatron-fsdp the checkpoint
# format must be fsdp_dtensor, fsdp_dtensor only with --use-megatron-fsdp, and
# --overlap-param-gather needs the distributed optimizer or Megatron-FSDP. Its user
# guide (docs/discussions/megatron-fsdp-user-guide) requires --use-megatron-fsdp,
# --data-parallel-sharding-strategy optim_grads_params,
# --no-gradient-accumulation-fusion, --use-distributed-optimizer and --ckpt-format
# fsdp_dtensor together.
SHARDING_STRATEGIES = {"no_shard", "optim", "optim_grads", "optim_grads_params"}
CKPT_FORMATS = {"torch", "torch_dist", "torch_dcp", "fsdp_dtensor"}
# The precision the roofline's (element_bytes, matmul_precision) prices, as
# (params dtype, (fp8 format, fp8 recipe) or None); what Megatron-LM does not
# run is missing (the export must refuse it).
PRECISION = {(2, "bf16"): ("bfloat16", None), (2, "fp16"): ("float16", None),
             (2, "fp8"): ("bfloat16", ("hybrid", "tensorwise")), (4, "fp32"): ("float32", None)}

LLAMA = "examples/models/hf/llama-3-8b.json"
FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg)


class Refused(Exception):
    """A rule the file breaks."""


def need(cond, msg):
    if not cond:
        raise Refused(msg)


# ---- planning --------------------------------------------------------------


def plan(src, loom, tmp, name, manifest, args):
    """Plans one iteration into tmp/<name>; (folder, None) or (None, why)."""
    out = os.path.join(tmp, name.replace(" ", "_"))
    cmd = [loom, "plan", "--manifest", os.path.join(src, manifest), "--iterations", "1",
           "--evaluations", "20", "--quiet", "--out", out] + args
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=src)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    return out, None


def roofline_params(src, manifest, args=()):
    """The roofline cost model's params (roofline_params.py); the check knows no other
    cost model."""
    p = shared_roofline_params(src, manifest, args)
    need(p is not None, "the check knows the roofline cost model only")
    return p


def params_dtype(args):
    """The dtype Megatron-LM's validate_args gives the parameters: float16 with
    --fp16, bfloat16 with --bf16, else float32."""
    return torch.float16 if "--fp16" in args else \
        torch.bfloat16 if "--bf16" in args else torch.float32


# ---- megatron.args ----------------------------------------------------------


def parse_args_file(path):
    """{name: value or True}; one argument a line, no value with spaces."""
    args = {}
    for n, line in enumerate(open(path).read().splitlines(), 1):
        if (n == 1 and line.startswith("# Megatron-LM arguments for plan ")) or \
                line.startswith("# "):  # pretrain_gpt.py $(grep -v '^#' megatron.args)
            continue
        words = line.split()
        need(line == " ".join(words) and 1 <= len(words) <= 2 and words[0].startswith("--"),
             "line %d is not '--name' or '--name value': %r" % (n, line))
        need(words[0] in MEGATRON_LM_ARGS, "line %d: %s is not a Megatron-LM argument"
             % (n, words[0]))
        need(words[0] not in args, "line %d repeats %s" % (n, words[0]))
        need((len(words) == 1) == (words[0] in FLAGS), "line %d: %s %s a value" % (
            n, words[0], "takes" if words[0] not in FLAGS else "takes no"))
        args[words[0]] = words[1] if len(words) == 2 else True
    return args


def positions(doc):
    """Per flow-0 position: (rank, layers, policies of its first pair)."""
    flow = doc["partition"]["flows"][0]
    out = []
    for p, pos in enumerate(flow["positions"]):
        layers = sum(s["layers"] for s in pos["spans"])
        pols = [s["layer_policies"] for s in doc["stages"]
                if s["flow"] == 0 and s["position"] == p and s["kind"] == "F"]
        need(all(x == pols[0] for x in pols), "position %d's microbatches differ in policies" % p)
        out.append((pos["rank"], layers, pols[0]))
    return out


def expected_recompute(pos):
    """The recompute flags the plan's layer policies give (None: none)."""
    pols = [x for _, _, p in pos for x in p]
    if all(x == "none" for x in pols):
        return None
    if all(x == "selective" for x in pols):
        return ("selective", None, None)
    if all(x == "full" for x in pols):
        return ("full", "uniform", 1)
    lead = [next((i for i, x in enumerate(p) if x != "full"), len(p)) for _, _, p in pos]
    n = max(lead)
    need(all(p[:min(n, len(p))] == ["full"] * min(n, len(p)) and
             all(x == "none" for x in p[min(n, len(p)):]) for _, _, p in pos),
         "the plan's policies are no Megatron recompute setting, yet megatron.args was written")
    return ("full", "block", n)


def layer_counts(args, P, V, num_layers):
    """Per (pp_rank, vp_stage) decoder layers, by megatron-core's own code."""
    layout = args.get("--pipeline-model-parallel-layout")
    if layout:
        lay = PipelineParallelLayerLayout(layout, P)
        lay.validate_layer_layout(num_layers, None)
        need(lay.virtual_pipeline_model_parallel_size == V, "layout has V %d, plan %d"
             % (lay.virtual_pipeline_model_parallel_size, V))
        return {(r, v): lay.layout[r][v].count(LayerType.decoder)
                for r in range(P) for v in range(V)}
    cfg = TransformerConfig(num_layers=num_layers, hidden_size=64, num_attention_heads=8,
                            pipeline_model_parallel_size=P, pipeline_dtype=torch.bfloat16,
                            virtual_pipeline_model_parallel_size=V if V > 1 else None)
    return {(r, v): get_num_layers_to_build(cfg, vp_stage=v if V > 1 else None, pp_rank=r)
            for r in range(P) for v in range(V)}


def transformer_config(args, V, model_shape):
    """A megatron.core TransformerConfig from the arguments (Megatron-LM
    copies arguments into it by field name; --swiglu sets gated_linear_unit)."""
    num = lambda k: int(args[k]) if k in args else None  # noqa: E731
    kw = dict(
        num_layers=num("--num-layers"), hidden_size=num("--hidden-size"),
        ffn_hidden_size=num("--ffn-hidden-size"),
        num_attention_heads=num("--num-attention-heads"),
        num_query_groups=num("--num-query-groups"),
        tensor_model_parallel_size=num("--tensor-model-parallel-size"),
        pipeline_model_parallel_size=num("--pipeline-model-parallel-size"),
        context_parallel_size=num("--context-parallel-size"),
        virtual_pipeline_model_parallel_size=V if V > 1 else None,
        pipeline_model_parallel_layout=args.get("--pipeline-model-parallel-layout"),
        sequence_parallel="--sequence-parallel" in args,
        gated_linear_unit="--swiglu" in args,
        recompute_granularity=args.get("--recompute-granularity"),
        recompute_method=args.get("--recompute-method"),
        recompute_num_layers=num("--recompute-num-layers"),
        pipeline_dtype=params_dtype(args), bf16="--bf16" in args, fp16="--fp16" in args,
        fp8=args.get("--fp8-format"), fp8_recipe=args.get("--fp8-recipe", "delayed"),
        attention_backend=AttnBackend[args.get("--attention-backend", "auto")])
    cfg = TransformerConfig(**kw)
    if model_shape:
        need((cfg.hidden_size, cfg.num_attention_heads) == model_shape,
             "hidden / heads %s, the model has %s" % ((cfg.hidden_size, cfg.num_attention_heads),
                                                       model_shape))
    return cfg


def megatron_order(P, V, M, r):
    """Rank r's actions in megatron-core's 1F1B / interleaved 1F1B."""

    class Group:
        def size(self):
            return P

        def rank(self):
            return r

    class Comm:
        pp_group = Group()
        virtual_pipeline_model_parallel_size = V if V > 1 else None

    total, _, warm, left = get_pp_rank_microbatches(M, V, P, p2p_communicator=Comm())
    table = get_schedule_table(M, V, P) if V > 1 else [(k, 0) for k in range(M)]
    fwd = [("F", mb, c) for mb, c in table]
    bwd = [("B", mb, V - 1 - c) for mb, c in table]
    order = fwd[:warm]
    for k in range(left):
        order += [fwd[warm + k], bwd[k]]
    return order + bwd[left:]


def longest_microbatch(doc):
    """Text tokens of the longest microbatch of flow 0 (an LLM-only model)."""
    samples = doc["iteration"]["samples"] if doc["iteration"] else []
    sums = {}
    for unit in doc["data"]:
        if unit["flow"] == 0:
            sums[unit["microbatch"]] = sums.get(unit["microbatch"], 0) + sum(
                samples[i]["text_tokens"] for i in unit["samples"])
    return max(sums.values()) if sums else 0


def check_megatron(path, doc, case):
    args = parse_args_file(path)
    part = doc["partition"]
    P, M, dp = part["ranks"], part["microbatches"], case["dp"]
    pos = positions(doc)
    V = len(pos) // P
    num_layers = int(args["--num-layers"])
    need(int(args["--pipeline-model-parallel-size"]) == P, "pipeline size is not the plan's")
    need(int(args["--tensor-model-parallel-size"]) == part["tp"], "TP is not the plan's")
    need(int(args["--context-parallel-size"]) == case.get("cp", 1), "CP is not the plan's")
    need(num_layers == sum(n for _, n, _ in pos), "--num-layers is not the plan's")
    if "--num-virtual-stages-per-pipeline-rank" in args:
        need(int(args["--num-virtual-stages-per-pipeline-rank"]) == V, "virtual stages")
    counts = layer_counts(args, P, V, num_layers)
    for i, (rank, layers, _) in enumerate(pos):
        need(counts[(i % P, i // P)] == layers and rank == i % P,
             "stage %d: megatron-core builds %d layers on rank %d, the plan %d on rank %d"
             % (i, counts[(i % P, i // P)], i % P, layers, rank))
    if "--pipeline-model-parallel-layout" in args:
        need(args["--pipeline-model-parallel-layout"] ==
             doc["megatron"]["pipeline_model_parallel_layout"], "layout differs from plan.json's")
    cfg = transformer_config(args, V, case.get("shape"))
    rec = expected_recompute(pos)
    got = (cfg.recompute_granularity, cfg.recompute_method, cfg.recompute_num_layers)
    need(got == (rec or (None, None, None)), "recompute %s, the plan's policies give %s"
         % (got, rec))
    need(args["--micro-batch-size"] == "1", "a Loom microbatch is one packed sequence")
    calc = ConstantNumMicroBatchesCalculator(int(args["--global-batch-size"]), 1, dp, False, 0)
    need(calc.get() == M, "megatron-core computes %d microbatches, the plan runs %d"
         % (calc.get(), M))
    actions = {ra["rank"]: [(a["kind"], a["microbatch"], doc["stages"][a["stage"]]["position"] // P)
                            for a in ra["actions"] if a["action"] in ("forward_stage",
                                                                      "backward_stage")]
               for ra in doc["rank_actions"]}
    for r in range(P):
        need(actions[r] == megatron_order(P, V, M, r),
             "rank %d's order is not megatron-core's schedule" % r)
    roof = case["roofline"]
    prec = PRECISION.get((int(roof["element_bytes"]), roof["matmul_precision"]))
    need(prec is not None, "the plan is priced with %s-byte elements and %s matmuls, which "
         "Megatron-LM does not run, and megatron.args was written"
         % (roof["element_bytes"], roof["matmul_precision"]))
    got = (str(params_dtype(args)).replace("torch.", ""),
           (cfg.fp8, cfg.fp8_recipe) if cfg.fp8 else None)
    need(got == prec, "Megatron-LM runs %s, the cost model priced %s" % (got, prec))
    backend = cfg.attention_backend.name
    need((backend == "unfused") == (not roof["flash_attention"]),
         "attention backend %s, the cost model priced the attention core %s"
         % (backend, "fused" if roof["flash_attention"] else "unfused"))
    sharded = bool(roof["fsdp"])
    fsdp = megatron_fsdp(args)
    need(fsdp == sharded, "Megatron-FSDP %s, the cost model priced %s" % (
        "on" if fsdp else "off", "sharded weights (fsdp)" if sharded else "whole weights"))
    need(not fsdp or P == 1, "Megatron-FSDP on %d pipeline ranks; the plan is priced with "
         "PyTorch's pipelined FSDP there" % P)
    need(not fsdp or roof["fsdp_implementation"] == "megatron-fsdp",
         "Megatron-FSDP for a plan priced with %s's memory" % roof["fsdp_implementation"])
    want = {"--use-distributed-optimizer": roof["distributed_optimizer"] or sharded,
            "--overlap-grad-reduce": roof["overlap_grad_reduce"] or sharded,
            "--overlap-param-gather": roof["overlap_param_gather"] or sharded,
            "--sequence-parallel": roof["sequence_parallel"] and part["tp"] > 1,
            "--tp-comm-overlap": roof["tp_comm_overlap"] and
            float(roof["tp_comm_overlap_share"]) > 0 and part["tp"] > 1,
            "--grad-reduce-in-bf16": not roof["grad_accumulation_fp32"] and
            int(roof["element_bytes"]) == 2}
    for flag, on in want.items():
        need((flag in args) == bool(on), "%s %s, the cost model assumed %s" % (
            flag, "given" if flag in args else "missing", on))
    if "--tp-comm-overlap" in args:  # Megatron-LM's validate_args
        need("--sequence-parallel" in args, "--tp-comm-overlap without --sequence-parallel")
    if "--overlap-param-gather" in args:  # Megatron-LM's validate_args
        need(("--use-distributed-optimizer" in args or fsdp) and "--overlap-grad-reduce" in args,
             "--overlap-param-gather without the distributed optimizer and grad overlap")
    seq, tokens = int(args.get("--seq-length", 0)), longest_microbatch(doc)
    unit = 1
    for m in ([cfg.tensor_model_parallel_size] if cfg.sequence_parallel else []) + \
             ([2 * cfg.context_parallel_size] if cfg.context_parallel_size > 1 else []):
        unit = unit * m // math.gcd(unit, m)
    need(tokens <= seq < tokens + unit and seq % unit == 0,
         "--seq-length %d for a longest microbatch of %d tokens (unit %d)" % (seq, tokens, unit))
    need(int(args["--max-position-embeddings"]) >= seq, "max positions below seq length")
    split = args.get("--pipeline-model-parallel-layout") or (
        "even, %d virtual stages" % V if V > 1 else "even")
    return "layout %s, recompute %s, %s%s%s" % (
        split, "%s %s %s" % rec if rec and rec[1] else rec[0] if rec else "none", got[0],
        " + fp8 %s %s" % got[1] if got[1] else "",
        ", Megatron-FSDP optim_grads_params" if fsdp else "")


def megatron_fsdp(args):
    """1 when the arguments run Megatron-FSDP with weights, gradients and
    optimizer state sharded; raises Refused for what Megatron-LM's validate_args
    and its Megatron-FSDP user guide reject. The DDP config is built the way
    Megatron-LM's training.py builds it, copying arguments by field name."""
    on = "--use-megatron-fsdp" in args
    strategy = args.get("--data-parallel-sharding-strategy", "no_shard")
    ckpt = args.get("--ckpt-format", "torch_dist")
    need(strategy in SHARDING_STRATEGIES, "--data-parallel-sharding-strategy %s" % strategy)
    need(ckpt in CKPT_FORMATS, "--ckpt-format %s" % ckpt)
    need((ckpt == "fsdp_dtensor") == on, "--ckpt-format %s %s --use-megatron-fsdp" % (
        ckpt, "with" if on else "without"))
    if on:
        for flag in ("--use-distributed-optimizer", "--no-gradient-accumulation-fusion"):
            need(flag in args, "--use-megatron-fsdp without %s" % flag)
        need(strategy == "optim_grads_params", "Megatron-FSDP with %s sharding; the plan "
             "shards weights, gradients and optimizer state" % strategy)
    fields = {f.name for f in dataclasses.fields(DistributedDataParallelConfig)}
    kw = {name[2:].replace("-", "_"): value for name, value in args.items()
          if name[2:].replace("-", "_") in fields}
    cfg = DistributedDataParallelConfig(**kw)
    need(cfg.use_megatron_fsdp == on and cfg.data_parallel_sharding_strategy == strategy,
         "megatron-core's DDP config reads use_megatron_fsdp %s, %s" % (
             cfg.use_megatron_fsdp, cfg.data_parallel_sharding_strategy))
    return on


# ---- mimo.json --------------------------------------------------------------

# The rules of MegatronMIMOParallelismConfig / ModuleParallelismConfig,
# restated from Megatron-Bridge commit fc35d9b08a6c04a2f269038da4633e2cc9a1ae26
# (2026-07-13; repository HEAD 067f987df03b8355b03192d88d70f1709fedf51a),
# src/megatron/bridge/models/megatron_mimo/megatron_mimo_config.py: the
# language model keyed MIMO_LANGUAGE_MODULE_KEY = "language"
# (megatron/core/models/mimo/config/role.py); finalize(): positive sizes,
# rank_offset >= 0, data_parallel_size set (heterogeneous deployment),
# expert factorisation; _validate_heterogeneous: rank ranges
# [rank_offset, rank_offset + tp*cp*pp*dp) sorted by offset do not overlap
# and tile [0, world_size) with no gap; _validate_encoder_expert_parallelism:
# encoders dense; _validate_parallelism_constraints: TP a power of two, DP
# sizes pairwise divisible. world size = max(rank_offset + total_ranks).
MIMO_FIELDS = {"tensor_model_parallel_size", "pipeline_model_parallel_size",
               "context_parallel_size", "expert_model_parallel_size",
               "expert_tensor_parallel_size", "data_parallel_size", "rank_offset"}
LANGUAGE = "language"


def mimo_rules(cfg):
    """Raises Refused for what MegatronMIMOParallelismConfig.finalize rejects;
    returns the world size."""
    need(set(cfg) == {"module_parallelisms"}, "top-level keys %s" % sorted(cfg))
    mods = cfg["module_parallelisms"]
    need(LANGUAGE in mods, "no %r module" % LANGUAGE)
    ranges = []
    for name, m in mods.items():
        need(set(m) == MIMO_FIELDS, "%s: fields %s" % (name, sorted(m)))
        for k in MIMO_FIELDS - {"rank_offset"}:
            need(isinstance(m[k], int) and m[k] > 0, "%s: %s must be positive" % (name, k))
        need(isinstance(m["rank_offset"], int) and m["rank_offset"] >= 0, "%s: rank_offset" % name)
        total = (m["tensor_model_parallel_size"] * m["context_parallel_size"] *
                 m["pipeline_model_parallel_size"] * m["data_parallel_size"])
        span = m["expert_tensor_parallel_size"] * m["expert_model_parallel_size"]
        need(total % (span * m["pipeline_model_parallel_size"]) == 0, "%s: expert span" % name)
        need(total // m["pipeline_model_parallel_size"] % span == 0, "%s: TP*CP*DP not a multiple of the expert span" % name)
        if name != LANGUAGE:
            need(span == 1, "%s: encoders stay dense" % name)
        tp = m["tensor_model_parallel_size"]
        need(tp & (tp - 1) == 0, "%s: TP %d not a power of two" % (name, tp))
        ranges.append((m["rank_offset"], m["rank_offset"] + total, name))
    ranges.sort()
    world = max(end for _, end, _ in ranges)
    at = 0
    for start, end, name in ranges:
        need(start >= at, "rank ranges overlap at %s" % name)
        need(start == at, "gap before %s (starts at %d, expected %d)" % (name, start, at))
        at = end
    need(at == world, "ranges end at %d, world %d" % (at, world))
    dps = [(n, m["data_parallel_size"]) for n, m in mods.items()]
    for i, (a, x) in enumerate(dps):
        for b, y in dps[i + 1:]:
            need(x % y == 0 or y % x == 0, "DP %s=%d and %s=%d do not divide" % (a, x, b, y))
    return world


def check_mimo(path, doc):
    cfg = json.load(open(path))
    world = mimo_rules(cfg)
    layouts = {l["module"]: l for l in doc["layouts"]}
    mods = cfg["module_parallelisms"]
    need(len(mods) == len(layouts), "%d modules, the plan has %d" % (len(mods), len(layouts)))
    renamed = [n for n in layouts if n not in mods]
    need(len(renamed) == 1 and set(mods) - set(layouts) == {LANGUAGE},
         "exactly the language model is keyed %r" % LANGUAGE)
    for name, m in mods.items():
        l = layouts[renamed[0] if name == LANGUAGE else name]
        got = (m["tensor_model_parallel_size"], m["context_parallel_size"],
               m["pipeline_model_parallel_size"], m["data_parallel_size"], m["rank_offset"])
        need(got == (l["tp"], l["cp"], l["pp"], l["dp"], l["first_gpu"]),
             "%s: %s, the plan's layout is %s" % (name, got, l))
    need(world == max(l["first_gpu"] + l["gpus"] for l in layouts.values()), "world size")
    return "world %d, %s" % (world, ", ".join(
        "%s tp%d pp%d dp%d @%d" % (n, m["tensor_model_parallel_size"],
                                  m["pipeline_model_parallel_size"], m["data_parallel_size"],
                                  m["rank_offset"]) for n, m in mods.items()))


# ---- one plan ---------------------------------------------------------------


def check_export(out, doc, key, fname, checker):
    """'<file> ok (...)' or 'refused: reason', failing on a mismatch."""
    ex = doc["exports"][key]
    path = os.path.join(out, fname)
    if "reason" in ex:
        if os.path.exists(path):
            raise Refused("%s written although exports.%s gives a reason" % (fname, key))
        return "%s refused: %s" % (fname, ex["reason"])
    if ex.get("file") != fname or not os.path.exists(path):
        raise Refused("exports.%s names %s but it is missing" % (key, ex.get("file")))
    return "%s ok (%s)" % (fname, checker(path))


def run_case(src, loom, tmp, case):
    """Plans a case, checks both exports and prints its line."""
    out, why = plan(src, loom, tmp, case["name"], case["manifest"], case["args"])
    if out is None:
        if case.get("must_plan"):
            fail("%s: did not plan: %s" % (case["name"], why))
        else:
            print("%s: declined: %s" % (case["name"], why))
        return
    doc = json.load(open(os.path.join(out, "plan.json")))
    results = []
    for key, fname, checker in (
            ("megatron", "megatron.args", lambda p: check_megatron(p, doc, case)),
            ("mimo", "mimo.json", lambda p: check_mimo(p, doc))):
        try:
            results.append(check_export(out, doc, key, fname, checker))
        except Exception as e:  # a rule broken, or megatron-core refusing
            fail("%s: %s: %s: %s" % (case["name"], fname, type(e).__name__, e))
            return
    line = "%s: %s | %s" % (case["name"], results[0], results[1])
    print(line)
    for want in case.get("expect", []):
        if want not in line:
            fail("%s: expected %r in the result" % (case["name"], want))


def cases(src):
    """Every manifest on llama-3-8b and vlm-s, then the cases that reach
    virtual stages, CP, block and uniform recomputation and mimo.json."""
    llama = ["--model", LLAMA, "--parallel", "tp=2,pp=4,dp=1,mb=8"]
    vlm = ["--model", "vlm-s", "--parallel", "tp=2,pp=2,dp=1,mb=4"]
    llama_shape = (4096, 32)
    out = []
    for path in sorted(glob.glob(os.path.join(src, "examples/manifests/*.json"))):
        name = os.path.basename(path)[:-5]
        manifest = os.path.relpath(path, src)
        roof = roofline_params(src, manifest)
        out.append(dict(name=name + " llama-3-8b", manifest=manifest, args=llama, dp=1,
                        shape=llama_shape, roofline=roof,
                        must_plan=name.startswith("megatron-"),
                        expect=["megatron.args ok"] if name.startswith("megatron-") else []))
        out.append(dict(name=name + " vlm-s", manifest=manifest, args=vlm, dp=1,
                        roofline=roof, expect=["megatron.args refused: the model has 2 modules"]))
    tuned = "examples/manifests/megatron-tuned.json"
    m1 = "examples/manifests/megatron-1f1b.json"
    n_manifest_cases = len(out)
    out += [
        dict(name="megatron-1f1b llama-3-8b vpp=2 dp=2", manifest=m1, dp=2, shape=llama_shape,
             args=["--model", LLAMA, "--parallel", "tp=2,pp=4,dp=2,vpp=2,mb=8"],
             roofline=roofline_params(src, m1), expect=["even, 2 virtual stages"]),
        dict(name="megatron-1f1b llama-3-8b given split", manifest=m1, dp=1, shape=llama_shape,
             args=["--model", LLAMA, "--parallel", "tp=2,pp=4,dp=1,mb=8", "--param",
                   "partitioner.layers_per_position=5,9,9,9"],
             roofline=roofline_params(src, m1), expect=["megatron.args ok"]),
        dict(name="megatron-1f1b llama-3-8b cp=2", manifest=m1, dp=1, cp=2, shape=llama_shape,
             args=["--model", LLAMA, "--parallel", "tp=2,cp=2,pp=4,dp=1,mb=8"],
             roofline=roofline_params(src, m1), expect=["megatron.args ok"]),
        dict(name="megatron-tuned llama-3-8b cap 30GiB", manifest=tuned, dp=1, shape=llama_shape,
             args=llama + ["--memory-cap", "30GiB"], roofline=roofline_params(src, tuned),
             expect=["recompute full block 1"]),
        dict(name="megatron-tuned llama-3-8b cap 20GiB", manifest=tuned, dp=1, shape=llama_shape,
             args=llama + ["--memory-cap", "20GiB"], roofline=roofline_params(src, tuned),
             expect=["recompute full uniform 1"]),
        dict(name="hetero vlm-s two-layouts", manifest="examples/manifests/hetero.json", dp=1,
             args=["--param", "partitioner.mode=given", "--model", "examples/models/vlm-s.json",
                   "--parallel", "tools/executor/tests/two-layouts.json", "--workload",
                   "tools/executor/tests/vlm.jsonl"],
             roofline=roofline_params(src, "examples/manifests/hetero.json"),
             expect=["mimo.json ok (world 6, vit tp1 pp2 dp1 @4, language tp2 pp2 dp1 @0)"]),
    ]
    for prm, want in (
            (["cost_model.matmul_precision=fp16"], "megatron.args ok"),
            (["cost_model.matmul_precision=fp8"], "bfloat16 + fp8 hybrid tensorwise"),
            (["cost_model.element_bytes=4", "cost_model.matmul_precision=fp32"], "float32"),
            (["cost_model.element_bytes=4", "cost_model.matmul_precision=tf32"],
             "megatron.args refused: the plan is priced with 4-byte elements and tf32"),
            (["cost_model.tp_comm_overlap=true"], "megatron.args ok"),
            (["cost_model.grad_accumulation_fp32=false"], "megatron.args ok"),
            (["cost_model.flash_attention=false"], "megatron.args ok"),
            (["cost_model.flash_attention=false", "cost_model.layer_kernels=hf-gpt2"],
             "megatron.args refused: the plan is priced with Hugging Face"),
            (["cost_model.tp_comm_overlap=true", "cost_model.sequence_parallel=false"],
             "megatron.args refused: the cost model overlaps the tensor-parallel")):
        args = llama + [a for p in prm for a in ("--param", p)] + ["--memory-cap", "1e15"]
        out.append(dict(name="megatron-1f1b llama-3-8b " + " ".join(prm), manifest=m1, dp=1,
                        shape=llama_shape, args=args, roofline=roofline_params(src, m1, args),
                        expect=[want]))
    one_rank = ["--model", LLAMA, "--parallel", "tp=2,pp=1,dp=4,mb=8",
                "--param", "cost_model.fsdp=true",
                "--param", "cost_model.fsdp_implementation=megatron-fsdp"]
    one_rank_fsdp2 = one_rank[:-2]
    sharded_pp = llama[:3] + ["tp=2,pp=4,dp=2,mb=8", "--param", "cost_model.fsdp=true"]
    out += [
        dict(name="megatron-1f1b llama-3-8b fsdp pp=1 dp=4", manifest=m1, dp=4,
             shape=llama_shape, args=one_rank, roofline=roofline_params(src, m1, one_rank),
             expect=["Megatron-FSDP optim_grads_params"]),
        dict(name="megatron-1f1b llama-3-8b fsdp2 pp=1 dp=4", manifest=m1, dp=4,
             shape=llama_shape, args=one_rank_fsdp2,
             roofline=roofline_params(src, m1, one_rank_fsdp2),
             expect=["megatron.args refused: the plan is priced with PyTorch FSDP2's memory"]),
        dict(name="megatron-1f1b llama-3-8b fsdp pp=4 dp=2", manifest=m1, dp=2,
             shape=llama_shape, args=sharded_pp, roofline=roofline_params(src, m1, sharded_pp),
             expect=["megatron.args refused: the plan is priced with the weights and gradients "
                     "sharded over the data-parallel replicas (cost_model.fsdp) under pipeline "
                     "parallelism"])]
    for c in out[n_manifest_cases:]:  # every case beyond the shipped manifests plans
        c["must_plan"] = True
    for c in out:
        if c["name"] == "optimus vlm-s":
            c["expect"].append("mimo.json refused: module vit is colocated")
        if c["name"] == "disttrain vlm-s":
            c["expect"].append("mimo.json ok")
    return out


def self_test():
    """The MIMO rules reject what the Bridge class rejects; the Megatron-FSDP
    rules what validate_args and the user guide reject."""
    fsdp = {"--use-megatron-fsdp": True, "--data-parallel-sharding-strategy": "optim_grads_params",
            "--no-gradient-accumulation-fusion": True, "--ckpt-format": "fsdp_dtensor",
            "--use-distributed-optimizer": True}
    if not megatron_fsdp(fsdp) or megatron_fsdp({"--use-distributed-optimizer": True}):
        fail("self-test: the good Megatron-FSDP and distributed-optimizer arguments")
    for what, drop, add in (
            ("checkpoint format", "--ckpt-format", {}),
            ("distributed optimizer", "--use-distributed-optimizer", {}),
            ("accumulation fusion", "--no-gradient-accumulation-fusion", {}),
            ("sharding strategy", None, {"--data-parallel-sharding-strategy": "optim"}),
            ("fsdp_dtensor alone", "--use-megatron-fsdp", {})):
        args = dict(fsdp, **add)
        args.pop(drop, None)
        try:
            megatron_fsdp(args)
            fail("self-test: Megatron-FSDP rule %s not enforced" % what)
        except Refused:
            pass
    good = {"module_parallelisms": {
        "vit": dict(tensor_model_parallel_size=1, pipeline_model_parallel_size=2,
                    context_parallel_size=1, expert_model_parallel_size=1,
                    expert_tensor_parallel_size=1, data_parallel_size=1, rank_offset=4),
        LANGUAGE: dict(tensor_model_parallel_size=2, pipeline_model_parallel_size=2,
                       context_parallel_size=1, expert_model_parallel_size=1,
                       expert_tensor_parallel_size=1, data_parallel_size=1, rank_offset=0)}}
    if mimo_rules(good) != 6:
        fail("self-test: the good MIMO config")
    bad = [("overlap", {LANGUAGE: {"rank_offset": 1}}), ("gap", {"vit": {"rank_offset": 5}}),
           ("tp", {LANGUAGE: {"tensor_model_parallel_size": 3}}),
           ("dp", {"vit": {"data_parallel_size": 2, "rank_offset": 12},
                   LANGUAGE: {"data_parallel_size": 3}}),
           ("language key", {})]
    for what, changes in bad:
        cfg = json.loads(json.dumps(good))
        for mod, fields in changes.items():
            cfg["module_parallelisms"][mod].update(fields)
        if what == "language key":
            cfg["module_parallelisms"]["llm"] = cfg["module_parallelisms"].pop(LANGUAGE)
        try:
            mimo_rules(cfg)
            fail("self-test: MIMO rule %s not enforced" % what)
        except Refused:
            pass


def main():
    """Runs the self-test and every case; 1 when anything failed."""
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    src, loom = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    self_test()
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases(src):
            run_case(src, loom, tmp, case)
    if FAILS:
        print("%d failures" % len(FAILS))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
