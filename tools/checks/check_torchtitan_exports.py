#!/usr/bin/env python3
"""check_torchtitan_exports.py SRC LOOM_CLI [--keep DIR] [--step] [--self-test] -
torchtitan 0.2.2's own code builds every torchtitan.toml Loom writes exactly as the plan
says.

Every shipped manifest (SRC/examples/manifests/*.json) is planned (--iterations 1,
--evaluations 30) on the LLM HF config llama-3-8b (tp=2, pp=4, dp=2, mb=8, priced with
FSDP2's sharding, cost_model.fsdp, as torchtitan runs data parallelism) and on the
VLM preset vlm-s (tp=1, pp=4, mb=8, no memory cap), plus plans of the other styles
(EXTRAS: full recomputation on every layer; recomputation of some layers, refused;
torchtitan-recompute's every-N-th-block settings at one and two stages a rank; a given
uneven split; zero-bubble, I/W split, loop; zb-v, V placement, on llama-3-8b and
vlm-s.json with tools/executor/tests/vlm.jsonl; bf16 at dp 1, fp32 at dp 1, TP without
sequence parallelism, TP overlapped with the GEMMs, bf16 gradient reduce, fp8; dp 2
priced with Megatron-LM's distributed optimizer and dp 4 priced as Megatron-FSDP, both
refused). For
each plan:

- plan.json exports.torchtitan has a reason: torchtitan.toml must not exist; printed as
  `refused: <reason>`.
- it names torchtitan.toml: on P processes (gloo, 127.0.0.1, CPU) torchtitan's
  ConfigManager parses it (a field torchtitan does not have fails) and pipeline_llm
  builds the pipeline of a tiny model of torchtitan's own class with the plan's layer
  counts (llama3 Transformer; with an image module the VLM experiment's
  Llama3Siglip2Transformer) with a parallelize_fn that runs only torchtitan's own
  activation checkpointing step (apply_ac, as parallelize_llama calls it), in the plan's
  folder so the relative schedule.csv resolves. Asserted on every rank: the stage indices built
  are the plan's placement.stage_ranks; each stage keeps exactly the modules of the
  plan's position g (layers.<i>; tok_embeddings on stage 0, norm and output on the last;
  the whole vision encoder and projector where a synthesized VLM toml has the image
  module: Loom refuses VLMs, whose torchtitan 0.2.2 TrainSpec cannot be pipelined);
  the blocks torchtitan wraps in its checkpoint wrapper are exactly the layers the plan
  recomputes in full, counted as torchtitan counts them over a rank's stages (a plan's
  other policies are refused); the
  schedule is a _PipelineScheduleRuntime holding schedule.csv's actions, its
  stage-to-rank map is stage_ranks and its microbatch count schedule_csv.microbatches;
  the toml's degrees are the plan's (pp = ranks; tp, cp, dp of its layout); for one
  sequence a microbatch its seq_len holds the plan's longest microbatch, rounded up to
  torchtitan's own ParallelDims.seq_len_divisor for those degrees; the dtype torchtitan
  trains the weights in (FSDP's param_dtype when its ParallelDims enables FSDP, else
  what its maybe_enable_amp gives, else training.dtype) is the one the roofline cost
  model priced (bf16 over float32 weights, or float32 with fp32 matmuls); torchtitan's
  model converters (train.py's step, torchtitan's float8 converter emulated on the CPU)
  leave every Linear layer in bf16, or, for an fp8 plan, swap every one but the LM
  head's for torchao's Float8Linear, tensorwise scaled; the model is compiled (the fused
  kernels the roofline prices) and async TP is on exactly when the plan overlaps the TP
  collectives (torchtitan's maybe_enable_async_tp checks its own precondition). Tensor,
  context and data parallel degrees are then forced to 1: only the pipeline is built.
  A one-rank plan's toml (no pipeline) is built as train.py builds the model without
  one: the whole tiny model, converted and checkpointed the same way, in one process;
  the gradient accumulation steps train.py derives from its batch sizes and ParallelDims
  must be the plan's microbatches, and its data parallelism sharded, not replicated.
- with --step, llama plans also run one training step through the schedule, called as
  torchtitan's train.py calls it, and must record one loss per microbatch (a schedule
  whose last stage runs forwards out of microbatch order is reported without running:
  PyTorch's runtime hands backward u the u-th loss).

Prints one line per plan (and `note:` lines: how the toml differs from the oracle
below, torchtitan limits met). Exit 0 when every plan is refused with its reason or
built exactly, 1 naming each plan and mismatch, 2 on bad usage. --self-test instead
checks the checker: good tomls pass, and a split moved by one layer, a misspelt field,
a V schedule for a loop plan and the reverse, a wrong batch (on one rank: a global
batch without the data-parallel degree, or left out), layers_per_stage beside
the parts, a toml without its activation_checkpoint table (torchtitan's default then
checkpoints every second block), full checkpointing for a plan that recomputes
nothing, a toml without seq_len (torchtitan's default 2048), every 4th block checkpointed
for a plan that recomputes every 8th, float32 weights for a bf16 plan (stated, or by
replicating instead of sharding the data-parallel degree), an fp8 plan without the float8
converter, the converter on a bf16 plan or on the LM head too, eager blocks, async TP
without compile or left out, and a wrong tp must each be reported. --keep DIR
keeps the plans there. Development aid: --synthesize writes torchtitan.toml from
plan.json by the documented format (synthesize_toml, the oracle) wherever the CLI
refused one, and checks that.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from roofline_params import roofline_params

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    tomllib = None

TT = "torchtitan 0.2.2"
PLAN_TIMEOUT_S = 120
POOL_TIMEOUT_S = 180
GROUP_TIMEOUT_S = 60   # gloo's timeout: a step that deadlocks fails after it
TINY_VOCAB = 64
STEP_SEQ_LEN = 4
# dp 2: torchtitan trains bf16 only through FSDP (data-parallel shard degree or cp above 1),
# and its FSDP2 shards weights and gradients: the plan must be priced so (cost_model.fsdp)
FSDP = ["--param", "cost_model.fsdp=true"]
LLM = ("llama-3-8b", "examples/models/hf/llama-3-8b.json",
       ["--parallel", "tp=2,pp=4,dp=2,mb=8"] + FSDP)
VLM = ("vlm-s", "vlm-s", ["--parallel", "tp=1,pp=4,mb=8", "--memory-cap", "1e15"])
# per-manifest parameters that let it plan one pipeline replica (dp=1)
MANIFEST_ARGS = {"oobleck": ["--param", "partitioner.fault_tolerance=0",
                             "--param", "ranker.fault_tolerance=0"]}
# per-manifest additions to the --parallel spec (dualpipe-v needs two stages per rank)
MANIFEST_PARALLEL = {"dualpipe-v": ",vpp=2"}
VLM_WORKLOAD = "tools/executor/tests/vlm.jsonl"
EXTRAS = [
    ("megatron-1f1b+full-recompute", "megatron-1f1b", LLM[0], LLM[1],
     LLM[2] + ["--use", "memory_tuner=full-recompute"]),
    ("megatron-tuned at a 26 GiB cap", "megatron-tuned", LLM[0], LLM[1],
     LLM[2] + ["--memory-cap", "26GiB"]),
    ("megatron-1f1b+torchtitan-recompute at 30 GiB", "megatron-1f1b", LLM[0], LLM[1],
     LLM[2] + ["--use", "memory_tuner=torchtitan-recompute", "--memory-cap", "30GiB"]),
    ("megatron-1f1b+torchtitan-recompute at 32 GiB", "megatron-1f1b", "llama-3-8b vpp2", LLM[1],
     ["--parallel", "tp=2,pp=4,dp=2,vpp=2,mb=8", "--use", "memory_tuner=torchtitan-recompute",
      "--memory-cap", "32GiB"] + FSDP),
    ("megatron-1f1b+given split", "megatron-1f1b", LLM[0], LLM[1],
     ["--parallel", "tp=2,pp=4,dp=2,mb=8", "--param", "partitioner.layers_per_position=5,9,9,9"]
     + FSDP),
    ("megatron-1f1b+zero-bubble", "megatron-1f1b", LLM[0], LLM[1],
     ["--parallel", "tp=2,pp=4,dp=2,vpp=2,mb=8", "--use", "interleaver=zero-bubble"] + FSDP),
    ("megatron-1f1b+zero-bubble", "megatron-1f1b", "llama-3-8b vpp1", LLM[1],
     ["--parallel", "tp=2,pp=4,dp=2,mb=8", "--use", "interleaver=zero-bubble"] + FSDP),
    ("megatron-1f1b+zb-v", "megatron-1f1b", LLM[0], LLM[1],
     ["--parallel", "tp=2,pp=2,dp=2,vpp=2,mb=4", "--use", "interleaver=zb-v",
      "--param", "partitioner.placement=v"] + FSDP),
    # priced with Megatron-LM's distributed optimizer or Megatron-FSDP's memory, which
    # torchtitan's FSDP2 keeps neither
    ("megatron-1f1b with the distributed optimizer", "megatron-1f1b", LLM[0], LLM[1],
     ["--parallel", "tp=2,pp=4,dp=2,mb=8"]),
    ("megatron-1f1b priced as Megatron-FSDP", "megatron-1f1b", "llama-3-8b pp1", LLM[1],
     ["--parallel", "tp=2,pp=1,dp=4,mb=8"] + FSDP +
     ["--param", "cost_model.fsdp_implementation=megatron-fsdp"]),
    # precision: bf16 without FSDP, fp32 without FSDP, and TP without sequence parallelism
    ("megatron-1f1b at dp 1 (bf16 without FSDP)", "megatron-1f1b", LLM[0], LLM[1],
     ["--parallel", "tp=2,pp=4,dp=1,mb=8"]),
    ("megatron-1f1b at dp 1 in fp32", "megatron-1f1b", LLM[0], LLM[1],
     ["--parallel", "tp=2,pp=4,dp=1,mb=8", "--param", "cost_model.element_bytes=4",
      "--param", "cost_model.matmul_precision=fp32", "--memory-cap", "1e15"]),
    ("megatron-1f1b without sequence parallelism", "megatron-1f1b", LLM[0], LLM[1],
     LLM[2] + ["--param", "cost_model.sequence_parallel=false"]),
    ("megatron-1f1b with the TP overlap", "megatron-1f1b", LLM[0], LLM[1],
     LLM[2] + ["--param", "cost_model.tp_comm_overlap=true"]),
    ("megatron-1f1b with the attention unfused", "megatron-1f1b", LLM[0], LLM[1],
     LLM[2] + ["--param", "cost_model.flash_attention=false", "--memory-cap", "1e15"]),
    ("megatron-1f1b with bf16 gradient reduce", "megatron-1f1b", LLM[0], LLM[1],
     LLM[2] + ["--param", "cost_model.grad_accumulation_fp32=false"]),
    ("megatron-1f1b in fp8", "megatron-1f1b", LLM[0], LLM[1],
     LLM[2] + ["--param", "cost_model.matmul_precision=fp8"]),
    # no pipeline: FSDP over 8 GPUs, gradient accumulation; with virtual stages on the
    # one rank the microbatches overlap, which torchtitan does not run (refused)
    ("torchtitan-tuned at pp 1", "torchtitan-tuned", "llama-3-8b pp1", LLM[1],
     ["--parallel", "tp=1,pp=1,dp=8,mb=4", "--param", "partitioner[0].vpp_sweep=false",
      "--param", "partitioner[1].vpp_sweep=false"]),
    ("torchtitan-tuned at pp 1, virtual stages", "torchtitan-tuned", "llama-3-8b pp1", LLM[1],
     ["--parallel", "tp=1,pp=1,dp=8,mb=4"]),
    ("megatron-1f1b+zb-v", "megatron-1f1b", "vlm-s.json", "examples/models/vlm-s.json",
     ["--parallel", "tp=1,pp=2,vpp=2,mb=4", "--use", "interleaver=zb-v",
      "--param", "partitioner.placement=v", "--workload", VLM_WORKLOAD,
      "--memory-cap", "1e15"]),
    ("megatron-balanced+zb-v", "megatron-balanced", "vlm-s.json",
     "examples/models/vlm-s.json",
     ["--parallel", "tp=1,pp=2,vpp=2,mb=4", "--use", "interleaver=zb-v",
      "--param", "partitioner.placement=v", "--workload", VLM_WORKLOAD,
      "--memory-cap", "1e15"]),
]


class Usage(Exception):
    """Bad command line or environment: exit 2."""


# ---------------------------------------------------------------- command line

def parse_args(argv):
    """SRC, LOOM_CLI and the options, or Usage."""
    opts = {"keep": None, "self_test": False, "synthesize": False, "step": False}
    pos = []
    it = iter(argv)
    for a in it:
        if a == "--keep":
            opts["keep"] = next(it, None)
            if opts["keep"] is None:
                raise Usage("--keep needs a folder")
        elif a == "--self-test":
            opts["self_test"] = True
        elif a == "--synthesize":
            opts["synthesize"] = True
        elif a == "--step":
            opts["step"] = True
        elif a.startswith("-"):
            raise Usage("unknown option %s" % a)
        else:
            pos.append(a)
    if len(pos) != 2:
        raise Usage("expected SRC and LOOM_CLI, got %d arguments" % len(pos))
    src, loom = os.path.abspath(pos[0]), os.path.abspath(pos[1])
    if not os.path.isdir(os.path.join(src, "examples/manifests")):
        raise Usage("%s has no examples/manifests" % src)
    if not os.access(loom, os.X_OK):
        raise Usage("%s is not an executable" % loom)
    if tomllib is None:
        raise Usage("Python 3.11+ (tomllib) is needed")
    return src, loom, opts


# ---------------------------------------------------------------- planning

def plan_specs(src):
    """(name, manifest, model label, model, extra args) of every plan to make."""
    specs = []
    for path in sorted(glob.glob(os.path.join(src, "examples/manifests/*.json"))):
        name = os.path.basename(path)[:-5]
        for label, model, args in (LLM, VLM):
            args = [a + MANIFEST_PARALLEL.get(name, "") if i and args[i - 1] == "--parallel"
                    else a for i, a in enumerate(args)]
            specs.append((name, name, label, model, args + MANIFEST_ARGS.get(name, [])))
    return specs + EXTRAS


def run_loom_plan(src, loom, out, manifest, model, args):
    """Runs loom plan into out; (returncode, stdout, stderr)."""
    cmd = [loom, "plan", "--manifest",
           os.path.join(src, "examples/manifests/%s.json" % manifest),
           "--model", model if not model.endswith(".json") else os.path.join(src, model),
           "--iterations", "1", "--evaluations", "30", "--quiet", "--json",
           "--out", out] + [os.path.join(src, a) if a == VLM_WORKLOAD else a for a in args]
    env = dict(os.environ, LOOM_PLUGIN_PATH="")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=src, env=env,
                           timeout=PLAN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 124, "", "loom plan ran over %d s" % PLAN_TIMEOUT_S
    return r.returncode, r.stdout, r.stderr


def model_modules(src, model):
    """{module name: modality} of a preset or model.json; {} for an HF config."""
    path = os.path.join(src, model) if model.endswith(".json") else \
        os.path.join(src, "examples/models/%s.json" % model)
    with open(path) as fh:
        doc = json.load(fh)
    return {m["name"]: m.get("modality", "text") for m in doc.get("modules", [])}


def parallel_cp(args):
    """The cp degree a --parallel spec in args gives (1 when absent)."""
    for i, a in enumerate(args[:-1]):
        if a == "--parallel":
            for kv in args[i + 1].split(","):
                k, _, v = kv.partition("=")
                if k == "cp":
                    return int(v)
    return 1


# ---------------------------------------------------------------- the plan's view

def spec_precision(src, manifest, args):
    """What the plan's roofline cost model priced (roofline_params.py): element bytes, matmul precision, sequence parallelism,
    the TP overlap, the gradient-reduce precision, the attention kernel and the layer
    kernels; None for another cost model."""
    prm = roofline_params(src, "examples/manifests/%s.json" % manifest, args)
    if prm is None:
        return None
    return {"element_bytes": int(prm["element_bytes"]), "matmul": prm["matmul_precision"],
            "sequence_parallel": bool(prm["sequence_parallel"]),
            "tp_overlap": bool(prm["tp_comm_overlap"]) and
            float(prm["tp_comm_overlap_share"]) > 0,
            "grad_bf16": not prm["grad_accumulation_fp32"] and int(prm["element_bytes"]) == 2,
            "flash": bool(prm["flash_attention"]), "eager": prm["layer_kernels"] != "fused",
            "fsdp": bool(prm["fsdp"]),
            "megatron_fsdp": bool(prm["fsdp"]) and prm["fsdp_implementation"] == "megatron-fsdp"}


def train_dtype_of(prec, layout):
    """(the dtype torchtitan must train the plan's weights in, None), or (None, why) when
    torchtitan 0.2.2 runs the plan otherwise than priced: it trains bf16 over float32
    weights through FSDP alone (dp shard or cp above 1: parallelize_llama's apply_fsdp)
    or float32 with fp32 matmuls, its tensor parallelism is always sequence parallel
    (apply_tp), its Llama runs SDPA in its own blocks, and it reduces gradients in
    float32."""
    tp, cp, dp = layout
    if prec is None:
        return None, "the cost model is not roofline: its precision is unknown"
    if tp > 1 and not prec["sequence_parallel"]:
        return None, "tensor parallelism without sequence parallelism"
    if prec["eager"]:
        return None, "Hugging Face eager layers (torchtitan runs its own Llama blocks)"
    if not prec["flash"]:
        return None, "the attention core unfused (torchtitan runs SDPA)"
    if prec["grad_bf16"]:
        return None, "gradients reduced in bf16 (torchtitan reduces in float32)"
    if (dp > 1 or cp > 1) and not prec["fsdp"]:
        return None, "Megatron-LM's distributed optimizer priced (torchtitan shards with FSDP2)"
    if (dp > 1 or cp > 1) and prec["megatron_fsdp"]:
        return None, "Megatron-FSDP's memory priced (torchtitan's FSDP2 keeps the fp32 shard alone)"
    if prec["element_bytes"] == 2 and prec["matmul"] in ("bf16", "fp8"):
        if dp > 1 or cp > 1:
            return "bfloat16", None
        return None, "%s without FSDP (torchtitan then trains in float32)" % prec["matmul"]
    if (prec["element_bytes"], prec["matmul"]) == (4, "fp32"):
        return "float32", None
    return None, "%d-byte elements with %s matmuls" % (prec["element_bytes"], prec["matmul"])


def stage_positions(doc):
    """Positions in PyTorch stage order: flow 0's positions, then flow 1's, ..."""
    return [pos for fl in doc["partition"]["flows"] for pos in fl["positions"]]


def module_roles(doc, modalities):
    """(text module, image module or None, reason or None) of the plan's model."""
    names = []
    for pos in stage_positions(doc):
        for sp in pos["spans"]:
            if sp["module"] not in names:
                names.append(sp["module"])
    if not modalities:
        modalities = {n: "text" for n in names}
    text = [n for n in names if modalities.get(n) == "text"]
    image = [n for n in names if modalities.get(n) == "image"]
    other = [n for n in names if modalities.get(n) not in ("text", "image")]
    if len(text) != 1 or len(image) > 1 or other:
        return None, None, ("the model's modules %s are not one language model with at most "
                            "one image encoder" % names)
    return text[0], (image[0] if image else None), None


def module_layers(doc, module):
    """How many layers module has in the plan (its highest layer + 1)."""
    return max((sp["first_layer"] + sp["layers"] for pos in stage_positions(doc)
                for sp in pos["spans"] if sp["module"] == module), default=0)


def plan_layout(doc, modalities, json_out, cp):
    """(tp, cp, dp) of the plan: its text module's layout, else loom plan --json's
    (with the cp given on the command line, which --json does not print)."""
    text, _, _ = module_roles(doc, modalities)
    for lay in doc.get("layouts") or []:
        if lay["module"] == text:
            return lay["tp"], lay["cp"], lay["dp"]
    lay = json.loads(json_out)["layout"] if json_out.strip() else {}
    return lay.get("tp", doc["partition"]["tp"]), cp, lay.get("dp", 1)


def recomputed_layers(doc, text):
    """Per position of the text module's flow: the layers whose policy is full
    recomputation, from the forward of its first microbatch (torchtitan checkpoints
    those blocks for every microbatch)."""
    out = {}
    for st in doc["stages"]:
        if st["kind"] != "F" or st["module"] != text or st["position"] in out:
            continue
        out[st["position"]] = [k for k, pol in enumerate(st.get("layer_policies") or [])
                               if pol == "full"]
    return out


def expected_stages(doc, text, image):
    """Per PyTorch stage g: the modules torchtitan must keep for the plan's position g,
    and the layers it must checkpoint."""
    positions = stage_positions(doc)
    last = len(positions) - 1
    full = recomputed_layers(doc, text)
    out = []
    for g, pos in enumerate(positions):
        layers = [i for sp in pos["spans"] if sp["module"] == text
                  for i in range(sp["first_layer"], sp["first_layer"] + sp["layers"])]
        vision = [i for sp in pos["spans"] if image and sp["module"] == image
                  for i in range(sp["first_layer"], sp["first_layer"] + sp["layers"])]
        out.append({"layers": layers, "tok_embeddings": g == 0, "norm": g == last,
                    "output": g == last, "encoder_layers": vision,
                    "projector": bool(vision),
                    "ac_layers": [layers[k] for k in full.get(g, []) if k < len(layers)]})
    return out


def whole_model(doc, text):
    """expected_stages for a one-rank plan: one part, every layer, the layers the plan
    recomputes in full (the same in every microbatch: one chunk's policies suffice)."""
    stages = expected_stages(doc, text, None)
    return [{"layers": [i for st in stages for i in st["layers"]], "tok_embeddings": True,
             "norm": True, "output": True, "encoder_layers": [], "projector": False,
             "ac_layers": [i for st in stages for i in st["ac_layers"]]}]


def text_tokens_per_microbatch(doc):
    """{microbatch: text tokens} of the plan's first flow, from plan.json's data."""
    samples = doc["iteration"]["samples"] if doc.get("iteration") else []
    out = {}
    for unit in doc.get("data") or []:
        if unit["flow"] == 0:
            out[unit["microbatch"]] = out.get(unit["microbatch"], 0) + sum(
                samples[i]["text_tokens"] for i in unit["samples"])
    return out


def expectation(doc, modalities, layout, prec):
    """What a build of the plan's torchtitan.toml must show, from plan.json and the
    cost model's precision."""
    text, image, _ = module_roles(doc, modalities)
    pl = doc["placement"]
    tokens = text_tokens_per_microbatch(doc)
    one = doc["ranks"] == 1  # no pipeline: the whole model, one part
    return {"ranks": doc["ranks"], "stage_ranks": [0] if one else pl["stage_ranks"],
            "style": None if one else pl["style"],
            "longest_tokens": max(tokens.values()) if tokens else 0,
            "microbatches": doc["schedule_csv"]["microbatches"],
            "csv_actions": None, "plan_microbatches": doc["microbatches"],
            "tp": layout[0], "cp": layout[1],
            "dp": layout[2],
            "stages": whole_model(doc, text) if one else expected_stages(doc, text, image),
            "dtype": train_dtype_of(prec, layout)[0],
            "float8": bool(prec) and prec["matmul"] == "fp8",
            "async_tp": bool(prec) and prec["tp_overlap"] and layout[0] > 1,
            "model": {"kind": "vlm" if image else "llama",
                      "text_layers": module_layers(doc, text),
                      "vision_layers": module_layers(doc, image) if image else 0}}


# ---------------------------------------------------------------- the oracle

def oracle_refusal(doc, modalities, prec, layout):
    """Why torchtitan 0.2.2 cannot build the plan, or None (the oracle's rules)."""
    if doc.get("partition") is None:
        return "a stage-times problem has no model modules"
    if doc["ranks"] < 2:
        why = one_rank_refusal(doc)
        if why:
            return why
    elif not doc["schedule_csv"]["written"]:
        return "schedule.csv: " + doc["schedule_csv"]["reason"]
    elif not doc["placement"]["style"]:
        return doc["placement"]["reason"]
    own = [lay["module"] for lay in doc.get("layouts") or [] if lay["placement"] != "top"]
    if own:
        return "module %s has a layout of its own: torchtitan runs one mesh" % own[0]
    text, image, why = module_roles(doc, modalities)
    if why:
        return why
    if image:
        # torchtitan 0.2.2's vlm TrainSpec has no pipelining function: train.py refuses
        # pipeline parallelism for it, whatever pipeline_llm could build.
        return "module %s: %s's VLM experiment cannot be pipelined" % (image, TT)
    why = oracle_ac(doc, text)[1] or train_dtype_of(prec, layout)[1]
    if why:
        return why
    nxt = 0
    for g, pos in enumerate(stage_positions(doc)):
        for sp in pos["spans"]:
            if sp["module"] == image:
                if g != 0 or sp["first_layer"] != 0 or \
                        sp["layers"] != module_layers(doc, image):
                    return "stage %d holds part of %s: torchtitan keeps the encoder whole" \
                        % (g, image)
            elif sp["first_layer"] != nxt:
                return "stage %d starts at layer %d of %s, expected %d" \
                    % (g, sp["first_layer"], text, nxt)
            else:
                nxt += sp["layers"]
    return None


def one_rank_refusal(doc):
    """Why torchtitan cannot run a one-rank plan as written, or None: without pipeline
    parallelism its train.py runs a step as gradient accumulation, each microbatch's
    forward and then its whole backward (forward_backward_step), so the rank's actions
    must take the microbatches one at a time, with no split backward."""
    acts = [a for a in doc["rank_actions"][0]["actions"] if "microbatch" in a]
    if any(a["kind"] in ("I", "W") for a in acts):
        return "a split backward on the one rank: torchtitan runs every backward whole"
    seen, current = set(), None
    for a in acts:
        if a["microbatch"] != current:
            if a["microbatch"] in seen:
                return ("the one rank returns to microbatch %d: torchtitan runs one "
                        "microbatch's forward and backward at a time" % a["microbatch"])
            seen.add(a["microbatch"])
            current = a["microbatch"]
    return None


def oracle_ac(doc, text):
    """((mode, N) of torchtitan's activation checkpointing for the plan, None) or (None,
    reason): every layer none, every layer full, or full exactly on the j-th block a
    rank builds when j mod N = 0 (its stages in ascending order)."""
    pols = [pol for st in doc["stages"] if st["kind"] == "F" and st["module"] == text
            for pol in st.get("layer_policies") or []]
    for pol in ("offload", "selective"):
        if pol in pols:
            return None, "a layer runs %s: torchtitan has no such mode" % pol
    if "full" not in pols:
        return ("none", 0), None
    if all(pol == "full" for pol in pols):
        return ("full", 0), None
    stages = expected_stages(doc, text, None)
    per_rank = {}
    for g, rk in enumerate(doc["placement"]["stage_ranks"]):
        per_rank.setdefault(rk, []).extend(
            i in stages[g]["ac_layers"] for i in stages[g]["layers"])
    for n in range(2, max(len(v) for v in per_rank.values()) + 1):
        if all(full == ((j + 1) % n == 0) for v in per_rank.values()
               for j, full in enumerate(v)):
            return ("selective", n), None
    return None, "full recomputation is not on every N-th block of each rank"


def schedule_name(doc):
    """The torchtitan schedule whose placement style and stage count the plan uses."""
    pl = doc["placement"]
    if pl["style"] == "v":
        return "ZBVZeroBubble"
    if pl["stages_per_rank"] == 1:
        return "1F1B"
    split = any(st["kind"] in ("I", "W") for st in doc["stages"])
    return "InterleavedZeroBubble" if split else "Interleaved1F1B"


def fqn_parts(doc, modalities):
    """module_fqns_per_model_part of the plan."""
    text, image, _ = module_roles(doc, modalities)
    exp = expected_stages(doc, text, image)
    parts = []
    for st in exp:
        part = (["encoder", "projector"] if st["encoder_layers"] else []) + \
            (["tok_embeddings"] if st["tok_embeddings"] else []) + \
            ["layers.%d" % i for i in st["layers"]] + \
            (["norm", "output"] if st["norm"] else [])
        parts.append(part)
    return parts


def toml_text(doc, parts, layout, ac, dtype, float8, async_tp, seq_len=None):
    """The torchtitan.toml of the documented format for the plan."""
    tp, cp, dp = layout
    one = doc["ranks"] == 1
    lines = ['# %s job config for Loom plan "%s": pass it with --job.config_file or copy '
             'its tables into yours' % (TT, doc["label"]),
             "[parallelism]",
             "pipeline_parallel_degree = %d" % doc["ranks"]]
    if not one:
        lines += ['pipeline_parallel_schedule = "%s"' % schedule_name(doc),
                  'pipeline_parallel_schedule_csv = "schedule.csv"',
                  "pipeline_parallel_microbatch_size = 1",
                  "module_fqns_per_model_part = ["]
        lines += ["  [%s]," % ", ".join('"%s"' % f for f in p) for p in parts]
        lines.append("]")
    lines += ["tensor_parallel_degree = %d" % tp]
    if async_tp:
        lines.append("enable_async_tensor_parallel = true")
    lines += ["context_parallel_degree = %d" % cp,
              "data_parallel_shard_degree = %d" % dp, "", "[training]"]
    if one:  # one microbatch a step of gradient accumulation
        lines += ["local_batch_size = 1",
                  "global_batch_size = %d" % (doc["microbatches"] * dp)]
    else:
        lines.append("local_batch_size = %d" % doc["schedule_csv"]["microbatches"])
    if seq_len:
        lines.append("seq_len = %d" % seq_len)
    lines.append('mixed_precision_param = "%s"' % dtype)
    lines += ["", "[compile]", "enable = true", 'components = ["model", "loss"]',
              "", "[activation_checkpoint]", 'mode = "%s"' % ac[0]]
    if ac[1]:
        lines.append('selective_ac_option = "%d"' % ac[1])
    if float8:
        lines += ["", "[model]", 'converters = ["quantize.linear.float8"]', "",
                  "[quantize.linear.float8]", 'filter_fqns = ["output"]']
    return "\n".join(lines) + "\n"


def synthesize_toml(doc, modalities, layout, prec):
    """(toml text, None) by the documented format, or (None, reason) when refused."""
    why = oracle_refusal(doc, modalities, prec, layout)
    if why:
        return None, why
    ac = oracle_ac(doc, module_roles(doc, modalities)[0])[0]
    tokens = text_tokens_per_microbatch(doc)
    unit = layout[0] * 2 * layout[1]
    seq_len = -(-max(tokens.values()) // unit) * unit if tokens else None
    return toml_text(doc, fqn_parts(doc, modalities), layout, ac,
                     train_dtype_of(prec, layout)[0], prec["matmul"] == "fp8",
                     prec["tp_overlap"] and layout[0] > 1, seq_len), None


# ---------------------------------------------------------------- worker side

def tiny_model(spec):
    """(model, model_args) of torchtitan's own class with the plan's layer counts."""
    import torch
    from torchtitan.models.llama3 import Transformer, TransformerModelArgs
    common = dict(dim=16, n_layers=spec["text_layers"], n_heads=2, n_kv_heads=2,
                  vocab_size=TINY_VOCAB, multiple_of=16, max_seq_len=32)
    torch.manual_seed(0)
    if spec["kind"] == "llama":
        args = TransformerModelArgs(**common)
        return Transformer(args), args
    from torchtitan.experiments.vlm import Llama3Siglip2ModelArgs, Llama3Siglip2Transformer
    from torchtitan.experiments.vlm.model.args import Siglip2ModelArgs
    args = Llama3Siglip2ModelArgs(
        **common, attn_type="flex", attn_mask_type="block_causal",
        encoder=Siglip2ModelArgs(dim=16, ffn_dim=32, n_layers=spec["vision_layers"],
                                 n_heads=2, n_pos_embs=4, patch_size=2))
    return Llama3Siglip2Transformer(args), args


def part_facts(part):
    """The modules a torchtitan model part kept, the layers it checkpoints, and its
    Linear layers: those torchao's Float8Linear replaced, and the others."""
    import torch
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper
    enc = getattr(part, "encoder", None)
    linears = {"float8": [], "plain": []}
    for name, m in part.named_modules():
        if isinstance(m, torch.nn.Linear):
            kind = "float8" if type(m).__name__ == "Float8Linear" else "plain"
            linears[kind].append(name.replace("._checkpoint_wrapped_module", ""))
    return {"linears": linears,
            "layers": sorted(int(k) for k in part.layers.keys()),
            "ac_layers": sorted(int(k) for k, m in part.layers.named_children()
                                if isinstance(m, CheckpointWrapper)),
            "tok_embeddings": part.tok_embeddings is not None,
            "norm": part.norm is not None, "output": part.output is not None,
            "encoder_layers": sorted(int(k) for k in enc.layers.keys()) if enc else [],
            "projector": getattr(part, "projector", None) is not None}


def train_spec_pipelines(kind):
    """Whether torchtitan's TrainSpec for the model (llama3, or the vlm experiment) has
    a pipelining_fn, which train.py needs to run pipeline_parallel_degree > 1."""
    from torchtitan.protocols.train_spec import get_train_spec
    return get_train_spec("vlm" if kind == "vlm" else "llama3").pipelining_fn is not None


def config_facts(cfg):
    """The JobConfig fields the plan fixes, as torchtitan parsed them."""
    from torch.distributed.pipelining.schedules import (
        ScheduleDualPipeV, ScheduleZBVZeroBubble, get_schedule_class)
    par = cfg.parallelism
    cls = get_schedule_class(par.pipeline_parallel_schedule)
    return {"pp": par.pipeline_parallel_degree, "schedule": par.pipeline_parallel_schedule,
            "schedule_style": "v" if cls in (ScheduleZBVZeroBubble, ScheduleDualPipeV)
            else "loop", "csv": par.pipeline_parallel_schedule_csv,
            "microbatch_size": par.pipeline_parallel_microbatch_size,
            "local_batch_size": cfg.training.local_batch_size,
            "grad_accumulation_steps": grad_accumulation_steps(cfg),
            "tp": par.tensor_parallel_degree, "cp": par.context_parallel_degree,
            "dp_shard": par.data_parallel_shard_degree,
            "dp_replicate": par.data_parallel_replicate_degree,
            "parts": par.module_fqns_per_model_part,
            "layers_per_stage": par.pipeline_parallel_layers_per_stage,
            "seq_len": cfg.training.seq_len, "seq_len_divisor": seq_len_divisor(par),
            "train_dtype": train_dtype(cfg),
            "float8_recipe": cfg.quantize.linear.float8.recipe_name,
            "compile_model": cfg.compile.enable and "model" in cfg.compile.components,
            "async_tp": par.enable_async_tensor_parallel}


def grad_accumulation_steps(cfg):
    """The gradient accumulation steps torchtitan's train.py derives from the toml
    (Trainer.__init__: global_batch_size, default local_batch_size times the batch
    degree, over local_batch_size times the batch degree), or its refusal."""
    dims = toml_dims(cfg.parallelism)
    degree = dims.dp_replicate * dims.dp_shard
    local, glob = cfg.training.local_batch_size, cfg.training.global_batch_size
    if glob < 0:
        glob = local * degree
    if glob <= 0 or glob % (local * degree):
        return "global batch size %d is not a multiple of local batch size %d x %d" % (
            glob, local, degree)
    return glob // (local * degree)


def toml_dims(par):
    """torchtitan's ParallelDims for the toml's degrees (no mesh built)."""
    from torchtitan.distributed import ParallelDims
    deg = dict(dp_replicate=par.data_parallel_replicate_degree,
               dp_shard=par.data_parallel_shard_degree, cp=par.context_parallel_degree,
               tp=par.tensor_parallel_degree, pp=par.pipeline_parallel_degree)
    world = 1
    for v in deg.values():
        world *= max(v, 1)
    return ParallelDims(ep=1, etp=1, world_size=world, **deg)


def seq_len_divisor(par):
    """What torchtitan's ParallelDims.seq_len_divisor gives for the toml's degrees (its
    llama3 parallelize_llama asserts seq_len is a multiple of it)."""
    return toml_dims(par).seq_len_divisor


def train_dtype(cfg):
    """The dtype torchtitan trains the weights in for the toml, by its own code: FSDP's
    param_dtype when ParallelDims.fsdp_enabled (parallelize_llama's apply_fsdp), else
    the autocast dtype maybe_enable_amp gives, else training.dtype."""
    import torch
    from torchtitan.distributed.utils import maybe_enable_amp
    dims = toml_dims(cfg.parallelism)
    if dims.fsdp_enabled:
        return cfg.training.mixed_precision_param
    ctx = maybe_enable_amp(dims, cfg.training.mixed_precision_param, "cuda")
    if isinstance(ctx, torch.autocast):
        return str(ctx.fast_dtype).replace("torch.", "")
    return cfg.training.dtype


def pipeline_world(world):
    """ParallelDims of the process world, its mesh built: pp = world, every other
    degree 1 (torchtitan gives no pp mesh for world 1: pipeline_llm then fails)."""
    from torchtitan.distributed import ParallelDims
    dims = ParallelDims(dp_replicate=1, dp_shard=1, cp=1, tp=1, pp=world, ep=1, etp=1,
                        world_size=world)
    dims.build_mesh()
    return dims


def schedule_facts(sched):
    """What the schedule torchtitan built is and what it loaded."""
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime
    order = getattr(sched, "pipeline_order", {}) or {}
    return {"class": type(sched).__name__,
            "runtime": isinstance(sched, _PipelineScheduleRuntime),
            "microbatches": sched._n_microbatches,
            "stages": getattr(sched, "_num_stages", None),
            "csv_rows": len(order),
            "csv_actions": sum(1 for row in order.values() for a in row if a is not None),
            "lowered": bool(getattr(sched, "pipeline_order_with_comms", None)),
            "stage_to_rank": {str(k): v for k, v in
                              getattr(sched, "stage_index_to_group_rank", {}).items()}}


def run_step(sched, first, last, cfg, vocab):
    """One training step through the schedule, called as torchtitan's train.py does;
    the number of losses the last stage recorded (None off it)."""
    import torch
    torch.manual_seed(0)
    tokens = torch.randint(0, vocab, (cfg.training.local_batch_size, STEP_SEQ_LEN))
    targets, losses = (torch.roll(tokens, -1, 1), []) if last else (None, None)
    if first:
        sched.step(tokens, target=targets, losses=losses, return_outputs=False)
    else:
        sched.step(target=targets, losses=losses, return_outputs=False)
    return len(losses) if last else None


def checkpoint_as_torchtitan(part, _dims, cfg):
    """The parallelize_fn of the build: of torchtitan's llama3 parallelize_llama, only
    its activation checkpointing step, called as it calls it (every other step needs
    the GPUs and meshes the build forces to 1)."""
    from torchtitan.distributed.activation_checkpoint import apply_ac
    from torchtitan.models.llama3.infra.parallelize import _op_sac_save_list
    if cfg.activation_checkpoint.mode != "none":
        apply_ac(part, cfg.activation_checkpoint, model_compile_enabled=False,
                 op_sac_save_list=_op_sac_save_list, base_folder=cfg.job.dump_folder)
    return part


def build_job(job, rank, dims):
    """Parses the job's toml and builds its pipeline on this rank; the facts seen."""
    import torch
    from torchtitan.config import ConfigManager
    from torchtitan.distributed.pipeline_parallel import pipeline_llm
    import torchtitan.distributed.activation_checkpoint as ac_module
    ac_module._layer_sac_count = 0  # a torchtitan process counts its blocks from 0
    facts = {"rank": rank}
    t0 = time.monotonic()
    cwd = os.getcwd()
    os.chdir(job["dir"])
    try:
        cfg = ConfigManager().parse_args(["--job.config_file", job["toml"]])
        facts["config"] = config_facts(cfg)
        # torchtitan's own precondition of async TP (it raises without a compiled model)
        from torchtitan.distributed.tensor_parallel import maybe_enable_async_tp
        maybe_enable_async_tp(cfg, None)
        par = cfg.parallelism
        par.tensor_parallel_degree = par.context_parallel_degree = 1
        par.data_parallel_shard_degree = par.data_parallel_replicate_degree = 1
        model, args = tiny_model(job["model"])
        # train.py's model conversion (float8 emulated: the CPU has no float8 GEMMs,
        # and torchtitan emulates only uncompiled models; compile is forced off as
        # the degrees are)
        from torchtitan.protocols.model_converter import build_model_converters
        cfg.quantize.linear.float8.emulate = True
        cfg.compile.enable = False
        build_model_converters(cfg, dims).convert(model)
        if par.pipeline_parallel_degree == 1:
            # train.py without pipeline parallelism: the model_parts are the whole
            # model, parallelized (here: its activation checkpointing) in one piece
            checkpoint_as_torchtitan(model, dims, cfg)
            facts["stages"] = [{"index": 0, "num_stages": 1, "modules": part_facts(model)}]
            facts["first_last"] = [True, True]
            facts["schedule"] = None
            facts["train_spec_pipelines"] = True
            return facts
        sched, parts, first, last = pipeline_llm(
            model, dims, cfg, torch.device("cpu"), args, checkpoint_as_torchtitan,
            lambda out, target: torch.nn.functional.cross_entropy(
                out.flatten(0, 1).float(), target.flatten()))
        facts["stages"] = [{"index": st.stage_index, "num_stages": st.num_stages,
                            "modules": part_facts(p)}
                           for st, p in zip(sched._stages, parts)]
        facts["first_last"] = [first, last]
        facts["schedule"] = schedule_facts(sched)
        facts["train_spec_pipelines"] = train_spec_pipelines(job["model"]["kind"])
        if job.get("step"):
            facts["step_losses"] = run_step(sched, first, last, cfg, TINY_VOCAB)
    except BaseException as e:  # noqa: B902 - every failure is a finding
        text = str(e).strip()
        facts["error"] = "%s: %s" % (type(e).__name__,
                                     text.splitlines()[0][:400] if text else "")
    finally:
        os.chdir(cwd)
    facts["seconds"] = round(time.monotonic() - t0, 3)
    return facts


def worker_main(wid, jobs_file, out_file):
    """One process of the pool: every group of jobs whose plans have a rank wid."""
    import logging
    logging.disable(logging.WARNING)
    import torchtitan.distributed.parallel_dims as pdims
    pdims.device_type = "cpu"  # torchtitan assumes cuda when no accelerator is found
    watch_parent(os.getppid())
    with open(jobs_file) as fh:
        groups = json.load(fh)
    with open(out_file, "w") as out:
        for grp in groups:
            if wid < grp["world"]:
                for facts in run_group(grp, wid):
                    out.write(json.dumps(facts) + "\n")
                    out.flush()
    return 0


def watch_parent(parent):
    """Ends this worker when the checker that started it is gone or the pool's time is
    up, whatever it is doing."""
    import threading

    def watch():
        """Polls the parent once a second."""
        deadline = time.monotonic() + POOL_TIMEOUT_S + 30
        while os.getppid() == parent and time.monotonic() < deadline:
            time.sleep(1)
        os._exit(3)
    threading.Thread(target=watch, daemon=True).start()


def run_group(grp, wid):
    """Runs a group's jobs on rank wid of one gloo group on 127.0.0.1:port; yields the
    facts of each job."""
    from datetime import timedelta
    import torch.distributed as dist
    world = grp["world"]
    # the rendezvous waits as long as the pool may (a rank can still be busy with an
    # earlier group), the group's operations only GROUP_TIMEOUT_S
    store = group_store(grp, wid, timedelta(seconds=POOL_TIMEOUT_S))
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port))
    dist.init_process_group("gloo", store=store, rank=wid, world_size=world,
                            timeout=timedelta(seconds=GROUP_TIMEOUT_S))
    try:
        dims = pipeline_world(world)
        for job in grp["jobs"]:
            facts = build_job(job, wid, dims)
            facts["job"] = job["id"]
            yield facts
        dist.barrier()
    except Exception:  # noqa: B902 - a broken group: its jobs' facts tell
        pass
    finally:
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: B902
            pass


def group_store(grp, wid, timeout):
    """The group's TCPStore. Worker 0 listens on a port the kernel picks and
    publishes it in the group's port file; the others wait for that file. (A port
    chosen ahead of time can be taken by then, by gloo's own connections or by
    another test.)"""
    import torch.distributed as dist
    world, path = grp["world"], grp["port_file"]
    if wid == 0:
        store = dist.TCPStore("127.0.0.1", 0, world, is_master=True,
                              wait_for_workers=False, timeout=timeout)
        with open(path + ".tmp", "w") as fh:
            fh.write(str(store.port))
        os.rename(path + ".tmp", path)
        return store
    deadline = time.monotonic() + timeout.total_seconds()
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError("worker 0 published no port for its group in %s" % timeout)
        time.sleep(0.05)
    with open(path) as fh:
        port = int(fh.read())
    return dist.TCPStore("127.0.0.1", port, world, is_master=False, timeout=timeout)


# ---------------------------------------------------------------- the pool


def job_groups(jobs, tmp):
    """The pool's groups: one per world size for jobs that only build, one per job that
    also steps (a step that fails on one rank leaves the others' group unusable)."""
    groups = {}
    for job in jobs:
        key = (job["world"], job["id"] if job.get("step") else -1)
        groups.setdefault(key, []).append(job)
    return [{"world": key[0], "port_file": os.path.join(tmp, "port-%d" % gid), "jobs": js}
            for gid, (key, js) in enumerate(sorted(groups.items()))]


def run_pool(jobs, tmp):
    """Runs every job on as many processes as its plan has ranks; ({job id: [facts]},
    problems of the pool)."""
    if not jobs:
        return {}, []
    path = os.path.join(tmp, "jobs.json")
    with open(path, "w") as fh:
        json.dump(job_groups(jobs, tmp), fh)
    size = max(job["world"] for job in jobs)
    procs = start_workers(size, path, tmp)
    problems = wait_workers(procs, POOL_TIMEOUT_S)
    results = {}
    for wid in range(size):
        with open(os.path.join(tmp, "facts-%d.jsonl" % wid)) as fh:
            for line in fh:
                facts = json.loads(line)
                results.setdefault(facts["job"], []).append(facts)
    return results, problems


def start_workers(size, jobs_file, tmp):
    """Starts the pool's processes, each in a session of its own."""
    procs = []
    for wid in range(size):
        open(os.path.join(tmp, "facts-%d.jsonl" % wid), "w").close()
        log = open(os.path.join(tmp, "worker-%d.log" % wid), "w")
        procs.append((subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", str(wid), jobs_file,
             os.path.join(tmp, "facts-%d.jsonl" % wid)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env=dict(os.environ, OMP_NUM_THREADS="1")), log))
    return procs


def wait_workers(procs, timeout):
    """Waits for the pool; kills what is left at the deadline or after a failure."""
    deadline = time.monotonic() + timeout
    problems = []
    try:
        for wid, (p, log) in enumerate(procs):
            try:
                rc = p.wait(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                problems.append("worker %d ran over %d s (killed)" % (wid, timeout))
                break
            if rc != 0:
                problems.append("worker %d exited %d: %s" % (wid, rc, log_tail(log.name)))
                break
    finally:
        for p, log in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            log.close()
    return problems


def log_tail(path):
    """The last line of a worker's log."""
    with open(path) as fh:
        lines = [ln for ln in fh.read().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no output)"


# ---------------------------------------------------------------- comparing

def compare(exp, facts_list, plan_dir):
    """Mismatches between a plan's expectation and what torchtitan built on each rank."""
    seen = sorted(f["rank"] for f in facts_list)
    if seen != list(range(exp["ranks"])):
        return ["torchtitan reported ranks %s, expected 0..%d" % (seen, exp["ranks"] - 1)]
    facts_list = sorted(facts_list, key=lambda f: f["rank"])
    bad = compare_config(exp, facts_list[0]["config"], plan_dir) \
        if "config" in facts_list[0] else []
    bad += ["rank %d parsed another config than rank 0" % f["rank"] for f in facts_list
            if "config" in f and f["config"] != facts_list[0].get("config")]
    errors = {}
    for facts in facts_list:
        if "error" in facts:
            where = "ConfigManager" if "config" not in facts else "pipeline_llm"
            errors.setdefault("%s failed: %s" % (where, facts["error"]), []).append(
                facts["rank"])
    bad += ["rank%s %s: %s" % ("s" if len(rs) > 1 else "", ",".join(map(str, rs)), msg)
            for msg, rs in errors.items()]
    for facts in facts_list:
        if "error" not in facts:
            bad += compare_rank(exp, facts)
    return bad


def compare_config(exp, cfg, plan_dir):
    """Mismatches between the parsed JobConfig and the plan's layout."""
    bad = []
    want = {"pp": exp["ranks"], "tp": exp["tp"], "cp": exp["cp"]}
    if exp["ranks"] > 1:
        want["schedule_style"] = exp["style"]
    for key, val in want.items():
        if cfg[key] != val:
            bad.append("%s is %r in the toml, the plan has %r" % (key, cfg[key], val))
    dp = cfg["dp_shard"] * cfg["dp_replicate"]
    if cfg["dp_shard"] < 1 or dp != exp["dp"]:
        bad.append("data_parallel_shard_degree %d x replicate %d, the plan has dp %d"
                   % (cfg["dp_shard"], cfg["dp_replicate"], exp["dp"]))
    elif cfg["dp_replicate"] > 1:
        bad.append("data_parallel_replicate_degree %d: torchtitan replicates the weights "
                   "there (DDP, HSDP), the plan shards them over dp %d"
                   % (cfg["dp_replicate"], exp["dp"]))
    if exp["ranks"] == 1:
        return bad + compare_one_rank(exp, cfg)
    csv = cfg["csv"] or ""
    if not csv or os.path.isabs(csv) or \
            os.path.normpath(os.path.join(plan_dir, csv)) != os.path.join(plan_dir,
                                                                         "schedule.csv"):
        bad.append("pipeline_parallel_schedule_csv is %r, expected the plan's schedule.csv "
                   "relative to its folder" % csv)
    if cfg["local_batch_size"] != exp["microbatches"] * cfg["microbatch_size"]:
        bad.append("local_batch_size %d / microbatch size %d is not schedule.csv's %d "
                   "microbatches" % (cfg["local_batch_size"], cfg["microbatch_size"],
                                     exp["microbatches"]))
    if cfg["parts"] is None:
        bad.append("module_fqns_per_model_part is not set")
    return bad + compare_training(exp, cfg)


def compare_one_rank(exp, cfg):
    """Mismatches of a one-rank plan's config: a local batch a step of gradient
    accumulation, as many steps as the plan has microbatches."""
    bad = []
    steps = cfg["grad_accumulation_steps"]
    if isinstance(steps, str):
        bad.append("torchtitan's train.py refuses the batch: " + steps)
    elif steps != exp["plan_microbatches"]:
        bad.append("torchtitan accumulates %d steps of local batch %d, the plan runs %d "
                   "microbatches" % (steps, cfg["local_batch_size"], exp["plan_microbatches"]))
    return bad + compare_training(exp, cfg)


def compare_training(exp, cfg):
    """Mismatches of what every plan's config states beside the pipeline."""
    bad = []
    if cfg["train_dtype"] != exp["dtype"]:
        bad.append("torchtitan trains in %s, the plan is priced in %s"
                   % (cfg["train_dtype"], exp["dtype"]))
    if not cfg["compile_model"]:
        bad.append("the model is not compiled: torchtitan runs its blocks eager, where the "
                   "plan prices fused kernels")
    if cfg["async_tp"] != exp["async_tp"]:
        bad.append("enable_async_tensor_parallel %s, the plan %s the TP collectives"
                   % (cfg["async_tp"], "overlaps" if exp["async_tp"] else "does not overlap"))
    if exp["float8"] and cfg["float8_recipe"] is not None:
        bad.append("float8 recipe %s, the plan prices tensorwise scaling (no recipe_name)"
                   % cfg["float8_recipe"])
    tokens, seq, div = exp["longest_tokens"], cfg["seq_len"], cfg["seq_len_divisor"]
    if cfg["microbatch_size"] == 1 and tokens and \
            not (seq % div == 0 and tokens <= seq < tokens + div):
        bad.append("seq_len %d for a longest microbatch of %d tokens (torchtitan's "
                   "seq_len_divisor %d)" % (seq, tokens, div))
    return bad


def compare_rank(exp, facts):
    """Mismatches between one rank's stages and schedule and the plan."""
    bad = []
    r = facts["rank"]
    want = sorted(g for g, rk in enumerate(exp["stage_ranks"]) if rk == r)
    got = sorted(st["index"] for st in facts["stages"])
    if got != want:
        bad.append("rank %d: torchtitan built stages %s, the plan puts %s there"
                   % (r, got, want))
    for st in facts["stages"]:
        g = st["index"]
        if st["num_stages"] != len(exp["stages"]):
            bad.append("stage %d: %d stages in all, the plan has %d"
                       % (g, st["num_stages"], len(exp["stages"])))
        if g < len(exp["stages"]):
            bad += compare_modules(g, exp["stages"][g], st["modules"])
            bad += compare_linears(g, exp["float8"], st["modules"]["linears"])
    first, last = 0 in want, len(exp["stages"]) - 1 in want
    if facts["first_last"] != [first, last]:
        bad.append("rank %d: pipeline_llm says first/last stage here %s, the plan %s"
                   % (r, facts["first_last"], [first, last]))
    if facts["schedule"] is not None or exp["ranks"] > 1:
        bad += compare_schedule(exp, facts["schedule"], r)
    if last and facts.get("step_losses", exp["microbatches"]) != exp["microbatches"]:
        bad.append("rank %d: a step recorded %d losses, expected one per microbatch (%d)"
                   % (r, facts["step_losses"], exp["microbatches"]))
    return bad


def compare_linears(g, float8, got):
    """Mismatches between the Linear layers torchtitan's converters swapped on stage g
    and the plan's precision: under fp8 every Linear but the LM head's is float8."""
    want = [n for n in got["float8"] + got["plain"] if float8 and n != "output"]
    if sorted(got["float8"]) != sorted(want):
        return ["stage %d runs %d of its %d Linear layers in float8, the plan prices %d%s"
                % (g, len(got["float8"]), len(got["float8"]) + len(got["plain"]), len(want),
                   " (every one but the LM head)" if float8 else "")]
    return []


def compare_modules(g, want, got):
    """Mismatches between what stage g kept and the plan's position g."""
    bad = []
    if got.get("ac_layers") != want["ac_layers"]:
        bad.append("stage %d checkpoints layers %s, the plan recomputes %s"
                   % (g, span_text(got.get("ac_layers") or []), span_text(want["ac_layers"])))
    for key in ("layers", "encoder_layers"):
        if got[key] != want[key]:
            bad.append("stage %d keeps %s %s, the plan's position %d has %s"
                       % (g, key.replace("_", " "), span_text(got[key]), g,
                          span_text(want[key])))
    for key in ("tok_embeddings", "norm", "output", "projector"):
        if got[key] != want[key]:
            bad.append("stage %d %s %s, the plan %s" % (
                g, "keeps" if got[key] else "lacks", key,
                "puts it there" if want[key] else "does not"))
    return bad


def compare_schedule(exp, sch, rank):
    """Mismatches between a rank's schedule object and the plan."""
    bad = []
    if not sch["runtime"] or sch["csv_rows"] != exp["ranks"] or not sch["lowered"] or \
            sch["csv_actions"] != exp["csv_actions"]:
        bad.append("rank %d: the schedule is %s holding %d rows, %d actions, expected a "
                   "_PipelineScheduleRuntime that loaded and lowered schedule.csv (%d rows, "
                   "%d actions)" % (rank, sch["class"], sch["csv_rows"], sch["csv_actions"],
                                    exp["ranks"], exp["csv_actions"]))
    if sch["microbatches"] != exp["microbatches"]:
        bad.append("rank %d: the schedule runs %d microbatches, schedule.csv has %d"
                   % (rank, sch["microbatches"], exp["microbatches"]))
    if sch["stages"] != len(exp["stages"]):
        bad.append("rank %d: the schedule has %s stages, the plan %d"
                   % (rank, sch["stages"], len(exp["stages"])))
    want = {str(g): rk for g, rk in enumerate(exp["stage_ranks"])}
    if sch["stage_to_rank"] != want:
        bad.append("rank %d: the schedule maps stages to ranks %s, the plan %s"
                   % (rank, sch["stage_to_rank"], want))
    return bad


def span_text(xs):
    """[3, 4, 5] as '3..5' (a run), else the list."""
    if xs and xs == list(range(xs[0], xs[-1] + 1)) and len(xs) > 2:
        return "%d..%d" % (xs[0], xs[-1])
    return str(xs)


# ---------------------------------------------------------------- one plan

def prepare(src, loom, spec, folder, synthesize, step=False):
    """Plans one spec; a dict: its printable name and a verdict or a job to build."""
    name, manifest, label, model, args = spec
    item = {"where": "%s %s" % (name, label), "dir": folder}
    shutil.rmtree(folder, ignore_errors=True)
    rc, out, err = run_loom_plan(src, loom, folder, manifest, model, args)
    if rc != 0:
        item["fail"] = "loom plan exited %d: %s" % (rc, err.strip()[-300:])
        return item
    with open(os.path.join(folder, "plan.json")) as fh:
        doc = json.load(fh)
    tt = (doc.get("exports") or {}).get("torchtitan")
    if not isinstance(tt, dict) or ("reason" in tt) == ("file" in tt):
        item["fail"] = "plan.json exports.torchtitan is %r" % (tt,)
        return item
    mods = model_modules(src, model)
    layout = plan_layout(doc, mods, out, parallel_cp(args))
    prec = spec_precision(src, manifest, args)
    item["oracle_text"], why = synthesize_toml(doc, mods, layout, prec)
    if "reason" in tt and synthesize and item["oracle_text"]:
        with open(os.path.join(folder, "torchtitan.toml"), "w") as fh:
            fh.write(item["oracle_text"])
        tt, item["oracle"] = {"file": "torchtitan.toml"}, True
    if "reason" in tt:
        return refusal(item, tt["reason"], why, synthesize)
    return job_item(item, doc, tt, expectation(doc, mods, layout, prec), why, step)


def refusal(item, reason, oracle_why, synthesize):
    """The item of a refused plan: no torchtitan.toml may be there."""
    if os.path.exists(os.path.join(item["dir"], "torchtitan.toml")):
        item["fail"] = "refused (%s) but torchtitan.toml exists" % reason
    elif synthesize:
        item["refused"] = "(oracle) " + oracle_why
    else:
        item["refused"] = reason
        item["note"] = "the oracle would write it" if item["oracle_text"] else None
    return item


def job_item(item, doc, tt, exp, oracle_why, step):
    """The item of a plan with a torchtitan.toml: its expectation and its build job."""
    toml = os.path.join(item["dir"], "torchtitan.toml")
    if tt["file"] != "torchtitan.toml" or not os.path.isfile(toml):
        item["fail"] = "exports.torchtitan names %r, no such torchtitan.toml" % tt["file"]
        return item
    if not item.get("oracle"):
        item["note"] = oracle_note(toml, item["oracle_text"], oracle_why)
    exp["csv_actions"] = csv_action_count(item["dir"]) if doc["ranks"] > 1 else None
    step = step and exp["model"]["kind"] == "llama" and doc["ranks"] > 1
    item["step_blocker"] = step_blocker(item["dir"], exp) if step else None
    item["exp"] = exp
    item["job"] = {"toml": toml, "dir": item["dir"], "world": doc["ranks"],
                   "model": exp["model"], "step": step and not item["step_blocker"]}
    return item


def csv_cells(folder):
    """schedule.csv's actions as (rank, stage, kind, microbatch), row by row; an
    ({s}F{mb};{s}B{mb})OVERLAP_F_B cell gives its two."""
    cells = []
    with open(os.path.join(folder, "schedule.csv")) as fh:
        for rank, row in enumerate(fh.read().splitlines()):
            for cell in row.split(","):
                pair = re.fullmatch(r"\((.*);(.*)\)OVERLAP_F_B", cell.strip())
                for sub in pair.groups() if pair else (cell,):
                    m = re.fullmatch(r"(\d+)([FBIW])(\d+)", sub.strip())
                    if m:
                        cells.append((rank, int(m.group(1)), m.group(2), int(m.group(3))))
    return cells


def csv_action_count(folder):
    """Non-blank cells of schedule.csv: the actions PyTorch's _load_csv keeps (an
    OVERLAP_F_B pair is one)."""
    with open(os.path.join(folder, "schedule.csv")) as fh:
        return sum(1 for row in fh.read().splitlines() for c in row.split(",") if c.strip())


def last_stage_order(folder, n_stages):
    """The microbatches of the last stage's forwards in schedule.csv, in its order."""
    return [mb for _, stage, kind, mb in csv_cells(folder)
            if stage == n_stages - 1 and kind == "F"]


def step_blocker(folder, exp):
    """Why one step of the schedule cannot run right, known before running it, or None:
    PyTorch's runtime (torch 2.13, _PipelineSchedule._maybe_compute_loss and
    _maybe_get_loss) keeps the last stage's losses in the order its forwards ran and
    hands the backward of microbatch u the u-th of them."""
    order = last_stage_order(folder, len(exp["stages"]))
    if order == sorted(order):
        return None
    return ("schedule.csv runs the last stage's forwards in microbatch order %s; PyTorch's "
            "_PipelineScheduleRuntime gives the backward of microbatch u the loss of the "
            "u-th forward it ran (_maybe_get_loss), so that stage needs them in order 0, 1, "
            "..." % span_text(order))


def oracle_note(path, oracle, why):
    """How the written torchtitan.toml differs from the oracle's, or None."""
    if oracle is None:
        return "the oracle refuses it: " + why
    with open(path, "rb") as fh:
        try:
            got = tomllib.load(fh)
        except tomllib.TOMLDecodeError as e:
            return "not TOML: %s" % e
    want = tomllib.loads(oracle)
    diffs = ["%s.%s: %s, oracle %s" % (tab, key, short(got.get(tab, {}).get(key)), short(val))
             for tab, body in want.items() for key, val in body.items()
             if got.get(tab, {}).get(key) != val]
    diffs += ["%s.%s: %s, not in the oracle's" % (tab, key, short(val))
              for tab, body in got.items() if isinstance(body, dict)
              for key, val in body.items() if key not in want.get(tab, {})]
    return "differs from the oracle: " + "; ".join(diffs) if diffs else None


def short(val):
    """A value as a short string."""
    text = json.dumps(val)
    return text if len(text) <= 80 else text[:77] + "..."


def verdict(item, results):
    """The lines printed for a plan, and whether it failed."""
    where = item["where"]
    note = ["    note: " + item["note"]] if item.get("note") else []
    if "fail" in item:
        return ["%s: FAIL: %s" % (where, item["fail"])] + note, True
    if "refused" in item:
        return ["%s: refused: %s" % (where, item["refused"])] + note, False
    name = "torchtitan.toml%s" % (" (oracle)" if item.get("oracle") else "")
    bad = compare(item["exp"], results.get(item["job"]["id"], []), item["dir"])
    if item.get("step_blocker"):
        bad.append("one step cannot run: " + item["step_blocker"])
    if bad:
        return ["%s: FAIL: %s: %s" % (where, name, "; ".join(bad[:4]))] + note, True
    exp = item["exp"]
    facts = results[item["job"]["id"]][0]
    sch = facts["config"]["schedule"]
    if not facts["train_spec_pipelines"]:
        note.append("    note: %s's %s TrainSpec has no pipelining_fn, so its train.py "
                    "refuses pipeline_parallel_degree > 1 for this model; pipeline_llm "
                    "was called directly" % (TT, exp["model"]["kind"]))
    mbs = "" if exp["microbatches"] == exp["plan_microbatches"] else \
        ", %d schedule microbatches for %d plan microbatches" % (
            exp["microbatches"], exp["plan_microbatches"])
    ran = ", one step ran" if item["job"].get("step") else ""
    if exp["ranks"] == 1:
        return ["%s: %s ok (no pipeline: the whole model on one rank, %d steps of gradient "
                "accumulation)" % (where, name, facts["config"]["grad_accumulation_steps"])] + \
            note, False
    return ["%s: %s ok (%d stages on %d ranks, %s, %s%s%s)"
            % (where, name, len(exp["stages"]), exp["ranks"], exp["style"], sch, mbs, ran)] + \
        note, False


# ---------------------------------------------------------------- self-test

SELF_TEST_BASES = {
    "llm": ("megatron-1f1b", "megatron-1f1b", LLM[0], LLM[1], LLM[2]),
    "sac": next(e for e in EXTRAS if e[0] == "megatron-1f1b+torchtitan-recompute at 30 GiB"),
    "v": next(e for e in EXTRAS if e[0] == "megatron-1f1b+zb-v" and e[2] == LLM[0]),
    "fp8": next(e for e in EXTRAS if e[0] == "megatron-1f1b in fp8"),
    "async": next(e for e in EXTRAS if e[0] == "megatron-1f1b with the TP overlap"),
    "pp1": next(e for e in EXTRAS if e[0] == "torchtitan-tuned at pp 1"),
}


def move_layer(text):
    """Moves the first layer of part 1 of a toml to the end of part 0."""
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("module_fqns_per_model_part"))
    p0, p1 = lines[i + 1], lines[i + 2]
    first = p1.split(", ")[0].lstrip(" [")
    lines[i + 1] = p0.rstrip("],") + ", " + first + "],"
    lines[i + 2] = "  [" + p1.split(", ", 1)[1]
    return "\n".join(lines) + "\n"


def self_test_cases():
    """(name, base, toml edit, words the finding must hold; None: must pass)."""
    same = (lambda t: t)
    return [
        ("good LLM", "llm", same, None),
        ("good V", "v", same, None),
        ("split moved by one layer", "llm", move_layer,
         "stage 0 keeps layers 0..8, the plan's position 0 has 0..7"),
        ("misspelt field", "llm",
         lambda t: t.replace("pipeline_parallel_degree", "pipeline_paralel_degree"),
         "ConfigManager failed: ValueError: Invalid field names"),
        ("V schedule for a loop plan", "llm",
         lambda t: t.replace('"1F1B"', '"ZBVZeroBubble"'),
         "v schedules assume 2 stages per rank, got 1"),
        ("loop schedule for a V plan", "v",
         lambda t: t.replace('"ZBVZeroBubble"', '"Interleaved1F1B"'),
         "rank 0: torchtitan built stages [0, 2], the plan puts [0, 3] there"),
        ("wrong batch", "llm",
         lambda t: t.replace("local_batch_size = 8", "local_batch_size = 6"),
         "is not schedule.csv's 8 microbatches"),
        ("layers_per_stage beside the parts", "llm",
         lambda t: t.replace("pipeline_parallel_microbatch_size = 1",
                             "pipeline_parallel_microbatch_size = 1\n"
                             "pipeline_parallel_layers_per_stage = 8"),
         "must be divisible by pipeline parallel size"),
        ("activation checkpointing left to torchtitan's default", "llm",
         lambda t: t.split("\n[activation_checkpoint]")[0] + "\n",
         "stage 0 checkpoints layers [1, 3, 5, 7], the plan recomputes []"),
        ("good every-8th-block checkpointing", "sac", same, None),
        ("every 4th block for a plan that recomputes every 8th", "sac",
         lambda t: t.replace('selective_ac_option = "8"', 'selective_ac_option = "4"'),
         "stage 0 checkpoints layers [3, 7], the plan recomputes [7]"),
        ("full checkpointing for a plan that recomputes nothing", "llm",
         lambda t: t.replace('mode = "none"', 'mode = "full"'),
         "stage 0 checkpoints layers 0..7, the plan recomputes []"),
        ("sequence length left to torchtitan's default", "llm",
         lambda t: re.sub(r"seq_len = \d+\n", "", t),
         "seq_len 2048 for a longest microbatch of"),
        ("mixed precision in float32", "llm",
         lambda t: t.replace('mixed_precision_param = "bfloat16"',
                             'mixed_precision_param = "float32"'),
         "torchtitan trains in float32, the plan is priced in bfloat16"),
        ("no FSDP: float32 training", "llm",
         lambda t: t.replace("data_parallel_shard_degree = 2",
                             "data_parallel_shard_degree = 1\ndata_parallel_replicate_degree = 2"),
         "torchtitan trains in float32, the plan is priced in bfloat16"),
        ("good float8", "fp8", same, None),
        ("float8 converter left out", "fp8",
         lambda t: t.split("\n[model]")[0] + "\n",
         "stage 0 runs 0 of its 56 Linear layers in float8, the plan prices 56"),
        ("float8 on a bf16 plan", "llm",
         lambda t: t + '\n[model]\nconverters = ["quantize.linear.float8"]\n',
         "runs 56 of its 56 Linear layers in float8, the plan prices 0"),
        ("float8 on the LM head too", "fp8",
         lambda t: t.replace('filter_fqns = ["output"]', "filter_fqns = []"),
         "stage 3 runs 57 of its 57 Linear layers in float8, the plan prices 56"),
        ("eager blocks", "llm",
         lambda t: t.replace("[compile]\nenable = true", "[compile]\nenable = false"),
         "the model is not compiled"),
        ("good async TP", "async", same, None),
        ("async TP without compile", "async",
         lambda t: t.replace("[compile]\nenable = true", "[compile]\nenable = false"),
         "Async TP requires 'model' in --compile.components"),
        ("async TP left out", "async",
         lambda t: t.replace("enable_async_tensor_parallel = true\n", ""),
         "enable_async_tensor_parallel False, the plan overlaps the TP collectives"),
        ("good one rank", "pp1", same, None),
        ("one rank: the global batch without the data-parallel degree", "pp1",
         lambda t: t.replace("global_batch_size = 32", "global_batch_size = 4"),
         "refuses the batch: global batch size 4 is not a multiple of local batch size 1 x 8"),
        ("one rank: the global batch left to torchtitan's default", "pp1",
         lambda t: t.replace("global_batch_size = 32\n", ""),
         "torchtitan accumulates 1 steps of local batch 1, the plan runs 4 microbatches"),
        ("one rank: FSDP replicated instead of sharded", "pp1",
         lambda t: t.replace("data_parallel_shard_degree = 8",
                             "data_parallel_shard_degree = 1\ndata_parallel_replicate_degree = 8"),
         "data_parallel_replicate_degree 8: torchtitan replicates the weights there"),
        ("tensor parallel degree", "llm",
         lambda t: t.replace("tensor_parallel_degree = 2", "tensor_parallel_degree = 1"),
         "tp is 1 in the toml, the plan has 2"),
    ]


def self_test_base(src, loom, tmp, key):
    """A planned base for the self-tests with the oracle's toml, or None."""
    item = prepare(src, loom, SELF_TEST_BASES[key], os.path.join(tmp, "base-" + key), True)
    if "job" not in item or not item.get("oracle_text"):
        print("self-test: FAIL: cannot make the %s base: %s"
              % (key, item.get("fail") or item.get("refused")))
        return None
    return item


def self_test(src, loom, tmp):
    """The checker reports each broken toml and passes the good ones; exit status."""
    bases = {key: self_test_base(src, loom, tmp, key) for key in SELF_TEST_BASES}
    if None in bases.values():
        return 1
    items = []
    for k, (name, key, edit, words) in enumerate(self_test_cases()):
        base = bases[key]
        folder = os.path.join(tmp, "case-%d" % k)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(base["dir"], folder)
        toml = os.path.join(folder, "torchtitan.toml")
        with open(toml, "w") as fh:
            fh.write(edit(base["oracle_text"]))
        case = dict(base, where="self-test " + name, dir=folder, note=None,
                    job=dict(base["job"], toml=toml, dir=folder, id=k))
        items.append((case, words))
    results, problems = run_pool([c["job"] for c, _ in items], tmp)
    status = 1 if problems else 0
    for p in problems:
        print("self-test: FAIL: %s" % p)
    for case, words in items:
        lines, failed = verdict(case, results)
        ok = (not failed) if words is None else (failed and words in lines[0])
        print("%s: %s" % ("ok" if ok else "FAIL", lines[0]))
        status |= 0 if ok else 1
    return status


# ---------------------------------------------------------------- main

def check_all(src, loom, tmp, synthesize, step):
    """Plans and checks every spec; exit status."""
    t0 = time.monotonic()
    items = []
    for k, spec in enumerate(plan_specs(src)):
        folder = os.path.join(tmp, "%02d-%s-%s" % (k, spec[0], spec[2].replace(" ", "-")))
        item = prepare(src, loom, spec, folder, synthesize, step)
        if "job" in item:
            item["job"]["id"] = k
        items.append(item)
    t1 = time.monotonic()
    results, problems = run_pool([it["job"] for it in items if "job" in it], tmp)
    t2 = time.monotonic()
    status = 1 if problems else 0
    for p in problems:
        print("FAIL: %s" % p)
    for item in items:
        lines, failed = verdict(item, results)
        print("\n".join(lines))
        status |= failed
    built = sum(1 for it in items if "job" in it)
    print("%d plans: %d built by torchtitan, %d refused; planning %.1f s, torchtitan %.1f s"
          % (len(items), built, sum(1 for it in items if "refused" in it), t1 - t0, t2 - t1))
    return 1 if status else 0


def main(argv):
    """Entry point; the exit status."""
    if argv[:1] == ["--worker"]:
        return worker_main(int(argv[1]), argv[2], argv[3])
    try:
        src, loom, opts = parse_args(argv)
    except Usage as e:
        print("usage: check_torchtitan_exports.py SRC LOOM_CLI [--keep DIR] [--step] "
              "[--self-test]: %s" % e, file=sys.stderr)
        return 2
    tmp = opts["keep"] or tempfile.mkdtemp(prefix="loom-tt-")
    os.makedirs(tmp, exist_ok=True)
    try:
        if opts["self_test"]:
            return self_test(src, loom, tmp)
        return check_all(src, loom, tmp, opts["synthesize"], opts["step"])
    finally:
        if not opts["keep"]:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
