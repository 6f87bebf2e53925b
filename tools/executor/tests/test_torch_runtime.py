"""loom_execute.py --runtime torch|loom|auto (docs/executor.md, "Runtimes"):
plans run by PyTorch's _PipelineScheduleRuntime from their schedule.csv,
the choice `auto` makes, the refusals (exit 2), and models given as a
Hugging Face config.json or a preset name.

Needs the project's venv (PyTorch 2.13.0) and the loom CLI ($LOOM_CLI,
else build/bin/loom)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from test_executor import HERE, MANIFESTS, MODELS, VLM, execute, loom_cli, plan, valid

MEGATRON = str(MANIFESTS / "megatron-1f1b.json")
HF = MODELS / "hf"


def run_json(plan_path, model=VLM, *extra):
    """Executes with --json; (exit status, parsed result or None, stderr)."""
    r = execute(plan_path, model, "--json", *extra)
    res = valid(json.loads(r.stdout)) if r.stdout.strip() else None
    return r.returncode, res, r.stderr


def assert_passed_on(plan_path, runtime, model=VLM, *extra):
    """The plan ran under `runtime` and every check passed."""
    rc, res, err = run_json(plan_path, model, *extra)
    assert rc == 0, (res, err)
    assert res["runtime"] == runtime and res["passed"] is True
    assert res["deadlock"] is None and res["errors"] == []
    assert res["gradients"]["mismatched"] == 0 and res["gradients"]["parameters"] > 0
    assert res["samples"]["problems"] == 0
    return res


@pytest.mark.parametrize("name,args,kinds,stage_ranks", [
    ("1f1b", ["--parallel", "tp=1,pp=4,vpp=1,mb=4"], {"F", "B"}, [0, 1, 2, 3]),
    ("interleaved", ["--use", "interleaver=interleaved-1f1b", "--parallel", "tp=1,pp=2,vpp=2,mb=4"],
     {"F", "B"}, [0, 1, 0, 1]),
    ("zero-bubble", ["--use", "interleaver=zero-bubble", "--parallel", "tp=1,pp=3,mb=4"],
     {"F", "I", "W"}, [0, 1, 2]),
    ("zb-v", ["--use", "interleaver=zb-v", "--param", "partitioner.placement=v",
              "--parallel", "tp=1,pp=2,vpp=2,mb=4"], {"F", "I", "W"}, [0, 1, 1, 0]),
])
def test_torch_runs_the_schedule_csv(tmp_path, name, args, kinds, stage_ranks):
    """1F1B, interleaved 1F1B, zero bubble (split I/W backward) and the V
    placement (stages 1 and 2 on one rank: handed over without a transfer)
    run under PyTorch's runtime with --runtime torch."""
    p = plan(tmp_path, name, "--manifest", MEGATRON, "--memory-cap", "1e15", *args)
    doc = json.loads(p.read_text())
    assert doc["placement"]["stage_ranks"] == stage_ranks
    rows = (p.parent / "schedule.csv").read_text().splitlines()
    assert {c.strip("0123456789") for row in rows for c in row.split(",") if c} == kinds
    res = assert_passed_on(p, "torch", VLM, "--runtime", "torch")
    assert res["loss"]["abs_err"] <= 1e-9 * abs(res["loss"]["reference"])
    # 7 samples: 5 with images through 63 ViT layers, all 7 through 32 LLM layers
    assert res["samples"]["sample_layers"] == 5 * 63 + 7 * 32


def test_auto_picks_torch(csv_plan):
    """The default runtime (auto) runs a plan with a schedule.csv and a
    placement style under PyTorch's runtime, and the table says so."""
    r = execute(csv_plan)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[1] == ("runtime   torch (PyTorch 2.13.0+cpu torch.distributed.pipelining: "
                        "_PipelineScheduleRuntime running %s; auto)" % (csv_plan.parent / "schedule.csv"))
    assert "result    PASS" in r.stdout


def test_torch_recomputes_and_offloads(tmp_path):
    """Every layer policy under PyTorch's split backward: `full` and
    `selective` through torch.utils.checkpoint, `offload` through
    saved-tensor hooks (plan.json edited beside its schedule.csv)."""
    p = plan(tmp_path, "zb-rec", "--manifest", MEGATRON, "--use", "interleaver=zero-bubble",
             "--parallel", "tp=1,pp=3,mb=4", "--memory-cap", "1e15")
    doc = json.loads(p.read_text())
    cycle = ["full", "selective", "offload", "none"]
    for st in doc["stages"]:
        st["layer_policies"] = [cycle[(st["id"] + i) % 4] for i in range(len(st["layer_policies"]))]
    p.write_text(json.dumps(doc))
    assert_passed_on(p, "torch", VLM, "--runtime", "torch")


def test_frozen_vit_under_split_backward(tmp_path):
    """A frozen ViT before the LLM, zero bubble: the stage whose input comes
    from frozen layers still gets its weight gradients."""
    m = json.loads(VLM.read_text())
    m["modules"][0]["frozen"] = True
    model = tmp_path / "frozen.json"
    model.write_text(json.dumps(m))
    p = plan(tmp_path, "fz", "--manifest", MEGATRON, "--use", "interleaver=zero-bubble",
             "--parallel", "tp=1,pp=3,mb=4", "--memory-cap", "1e15", model=model)
    res = assert_passed_on(p, "torch", model, "--runtime", "torch")
    assert res["gradients"]["parameters"] == 32 * 9 + 3   # the LLM's only


def test_chain_of_flows(tmp_path):
    """DistTrain's plan is two flows (ViT, then the LLM fed by it) forming
    one chain: PyTorch stages 0 and 1 are flow 0's and flow 1's positions,
    and the LLM's stage takes its samples' ViT rows from stage 0's output.
    The plan holds one replica's samples."""
    p = plan(tmp_path, "disttrain", "--manifest", str(MANIFESTS / "disttrain.json"),
             "--parallel", "tp=1,pp=4,mb=4", "--memory-cap", "1e15")
    doc = json.loads(p.read_text())
    assert len(doc["partition"]["flows"]) == 2 and doc["schedule_csv"]["written"]
    res = assert_passed_on(p, "torch", VLM, "--runtime", "torch")
    assert res["samples"]["outside_plan"]


def test_last_stage_out_of_order_is_refused(csv_plan, tmp_path):
    """A hand-written schedule.csv whose last stage runs microbatch 1 before
    0: PyTorch's loader accepts it, but PyTorch 2.13's runtime would hand
    microbatch u's backward the u-th loss it computed (_maybe_get_loss), so
    --runtime torch refuses the plan (exit 2, before any rank starts) and
    auto leaves it to Loom's runtime. (`loom plan` writes no such file.)"""
    rows = ["0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3", "1F1,1F0,1F2,1F3,1B1,1B0,1B2,1B3"]
    p, csv = edited_copy(csv_plan, tmp_path, lambda _: rows)
    r = execute(p, VLM, "--runtime", "torch")
    assert r.returncode == 2, r.stdout + r.stderr
    assert ("%s: the last stage (1) runs its forwards in the microbatch order 1, 0, 2, 3; PyTorch "
            "2.13.0's _PipelineScheduleRuntime keeps the last stage's losses in the order its "
            "forwards ran" % csv) in r.stderr


def test_last_stage_order_reads_overlapped_pairs(csv_plan, tmp_path):
    """The same check sees a last-stage forward inside an OVERLAP_F_B cell
    (ScheduleDualPipeV's pairs): F of microbatch 2 there still counts."""
    rows = ["0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3", "1F1,1F0,(1F2;1B1)OVERLAP_F_B,1F3,1B0,1B2,1B3"]
    p, csv = edited_copy(csv_plan, tmp_path, lambda _: rows)
    r = execute(p, VLM, "--runtime", "torch")
    assert r.returncode == 2, r.stdout + r.stderr
    assert ("%s: the last stage (1) runs its forwards in the microbatch order 1, 0, 2, 3;" % csv
            ) in r.stderr


def test_auto_keeps_pipeweaver_on_loom(tmp_path):
    """A PipeWeaver plan (two flows, sub-microbatches) has no schedule.csv:
    auto runs Loom's runtime, and the table says why."""
    p = plan(tmp_path, "pw", "--manifest", str(MANIFESTS / "pipeweaver.json"),
             "--param", "ranker.max_evaluations=20", "--parallel", "tp=1,pp=4,mb=4",
             "--memory-cap", "1e15")
    assert not (p.parent / "schedule.csv").exists()
    r = execute(p)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("runtime   loom (Loom's runtime: rank_actions; auto; not torch: %s)"
            % plan_verdict(json.loads(p.read_text()))) in r.stdout
    assert "result    PASS" in r.stdout


def plan_verdict(doc):
    """Why plan.json says PyTorch cannot run the plan, worded as the executor
    quotes it (schedule_csv first, then placement), or None."""
    if not doc["schedule_csv"]["written"]:
        return "plan.json's schedule_csv.written is not true: " + doc["schedule_csv"]["reason"]
    if doc["placement"]["style"] is None:
        return "plan.json's placement.style is null: " + doc["placement"]["reason"]
    return None


def test_runtime_torch_refuses_a_plan_it_cannot_express(tmp_path):
    """--runtime torch on the two-layouts plan (the ViT on GPUs of its own,
    no torchtitan placement style): exit 2 with plan.json's own reason,
    before any rank starts."""
    p = plan(tmp_path, "two", "--manifest", str(MANIFESTS / "hetero.json"),
             "--param", "partitioner.mode=given", "--memory-cap", "1e15",
             "--parallel", str(HERE / "two-layouts.json"))
    doc = json.loads(p.read_text())
    assert doc["placement"]["style"] is None and plan_verdict(doc)
    r = execute(p, VLM, "--runtime", "torch")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == ""
    assert ("%s: --runtime torch: PyTorch's pipelining runtime cannot run this plan: %s"
            % (p, plan_verdict(doc))) in r.stderr


def test_runtime_loom_still_runs_a_csv_plan(csv_plan):
    """--runtime loom runs rank_actions even where torch could run the plan."""
    assert_passed_on(csv_plan, "loom", VLM, "--runtime", "loom")


@pytest.fixture(scope="module")
def csv_plan(tmp_path_factory):
    """A 1F1B plan (pp 2) with its schedule.csv."""
    return plan(tmp_path_factory.mktemp("csv"), "1f1b", "--manifest", MEGATRON,
                "--parallel", "tp=1,pp=2,mb=4", "--memory-cap", "1e15")


def edited_copy(plan_path, tmp_path, edit):
    """A copy of the plan's folder whose schedule.csv lines went through edit()."""
    out = tmp_path / "edited"
    shutil.copytree(plan_path.parent, out)
    csv = out / "schedule.csv"
    csv.write_text("\n".join(edit(csv.read_text().splitlines())) + "\n")
    return out / "plan.json", csv


def test_schedule_csv_pytorch_refuses(csv_plan, tmp_path):
    """A hand-edited schedule.csv that loses a backward: PyTorch's
    _load_csv refuses it, exit 2 naming the file and PyTorch's reason; no
    rank process is left behind."""
    def drop_last_backward(rows):
        cells = rows[0].split(",")
        k = max(i for i, c in enumerate(cells) if c.startswith("0B"))
        cells[k] = ""
        return [",".join(cells)] + rows[1:]
    p, csv = edited_copy(csv_plan, tmp_path, drop_last_backward)
    r = execute(p, VLM, "--runtime", "torch")
    assert r.returncode == 2, r.stdout + r.stderr
    assert ("%s: PyTorch's _PipelineScheduleRuntime._load_csv(format=\"compute_only\") refused it: "
            "AssertionError: Invalid backward microbatches for stage 0: expected 4 total "
            "backwards, but got B=3, I=0, W=0" % csv) in r.stderr
    assert "result" not in r.stdout


def test_schedule_csv_of_another_plan(csv_plan, tmp_path):
    """Rows swapped: PyTorch accepts the file, but it maps stage 0 to rank 1;
    the plan's partition puts it on rank 0: exit 2."""
    p, csv = edited_copy(csv_plan, tmp_path, lambda rows: [rows[1], rows[0]])
    r = execute(p, VLM, "--runtime", "torch")
    assert r.returncode == 2, r.stdout + r.stderr
    assert ("%s: stage 0: PyTorch maps it to rank 1, plan.json's partition to rank 0 (the file is "
            "not this plan's schedule)" % csv) in r.stderr


def test_missing_schedule_csv(csv_plan, tmp_path):
    """schedule.csv gone: auto falls back to loom, --runtime torch is exit 2."""
    p, csv = edited_copy(csv_plan, tmp_path, lambda rows: rows)
    os.remove(csv)
    r = execute(p, VLM, "--runtime", "torch")
    assert r.returncode == 2
    assert "%s is missing (plan.json's schedule_csv.written is true)" % csv in r.stderr


def test_hf_llama_config(tmp_path):
    """A Hugging Face config.json (Llama 3 8B as published: one `llm` module)
    plans and executes under PyTorch's runtime; the plan's model name is the
    model_type (the published config has no _name_or_path). A small text
    workload keeps the run short."""
    wl = tmp_path / "text.jsonl"
    wl.write_text(json.dumps({"samples": [{"text_tokens": n} for n in (700, 90, 1300, 256, 40)]})
                  + "\n")
    cfg = HF / "llama-3-8b.json"
    p = plan(tmp_path, "llama", "--manifest", MEGATRON, "--parallel", "tp=1,pp=2,mb=4",
             "--memory-cap", "1e15", model=cfg, workload=wl)
    assert json.loads(p.read_text())["model"] == "llama"
    res = assert_passed_on(p, "torch", cfg)
    assert res["gradients"]["parameters"] == 32 * 9 + 3
    # the name check still holds: the plan is not vlm-s's
    r = execute(p, VLM)
    assert r.returncode == 2
    assert 'model: the plan is for model "llama" but %s is model "vlm-s"' % VLM in r.stderr


def test_hf_llava_config(tmp_path):
    """LLaVA 1.5 as llava-hf publishes it (a CLIP tower running on 577
    patches, handing 576 tokens an image to a Llama LM of LlamaConfig's
    default shape): refused before ("name: missing field"), now run."""
    cfg = HF / "llava-1.5-7b.json"
    p = plan(tmp_path, "llava", "--manifest", MEGATRON, "--parallel", "tp=1,pp=2,mb=4",
             "--memory-cap", "1e15", model=cfg)
    assert json.loads(p.read_text())["model"] == "llava"
    res = assert_passed_on(p, "torch", cfg)
    # vision: 24 GELU layers x 8 + patch embedding; llm: 32 x 9 + embedding, norm, head
    assert res["gradients"]["parameters"] == 24 * 8 + 1 + 32 * 9 + 3


def test_hf_config_errors(tmp_path):
    """A config of an unsupported family, or with a field of the wrong type,
    is bad input naming the file, the JSON path, expected and found; a
    missing field takes its class's default."""
    bad = tmp_path / "bert.json"
    bad.write_text(json.dumps({"model_type": "bert", "hidden_size": 768}))
    r = execute(tmp_path / "none.json", bad)
    assert r.returncode == 2
    assert '%s: model_type: expected a supported Hugging Face architecture (llama, mistral' % bad \
        in r.stderr and 'found "bert"' in r.stderr
    doc = json.loads((HF / "llava-1.5-7b.json").read_text())
    doc["text_config"]["vocab_size"] = "32064"
    cut = tmp_path / "llava-cut.json"
    cut.write_text(json.dumps(doc))
    r = execute(tmp_path / "none.json", cut)
    assert r.returncode == 2
    assert ('%s: text_config.vocab_size: expected an integer in [1, 16777216], found "32064"'
            % cut) in r.stderr
    doc["text_config"] = {"model_type": "phi3"}
    cut.write_text(json.dumps(doc))
    r = execute(tmp_path / "none.json", cut)
    assert r.returncode == 2
    assert ('%s: text_config.model_type: expected a supported language model (llama, mistral, '
            'mixtral, qwen2, qwen2_moe, internlm2), found "phi3"' % cut) in r.stderr


def test_hf_models_match_the_planner(tmp_path):
    """Every shipped HF fixture converts to the modules, layers and tokens
    the planner made of it: its plan passes the executor's model checks
    (partition layers, every transfer's tokens)."""
    sys.path.insert(0, str(HERE.parent))
    from loomexec.model_spec import ModelSpec
    from loomexec.plan import Plan
    for cfg in sorted(HF.glob("*.json")):
        p = plan(tmp_path, cfg.stem, "--manifest", MEGATRON, "--parallel", "tp=1,pp=2,mb=4",
                 "--memory-cap", "1e15", model=cfg)
        Plan(str(p), ModelSpec(str(cfg))).check_tensors()


HF_TYPES = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "internlm2", "llava", "qwen2_vl",
            "qwen2_5_vl", "internvl_chat", "clip", "siglip", "clip_vision_model",
            "siglip_vision_model")


def _metrics(path):
    """loom plan --json of a model file, less the plan time."""
    r = subprocess.run([loom_cli(), "plan", "--model", str(path), "--parallel", "tp=1,pp=2,mb=4",
                        "--iterations", "1", "--json", "--quiet", "--memory-cap", "1e15"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       env=dict(os.environ, LOOM_PLUGIN_PATH=""))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    doc.pop("plan_time_ms")
    for it in doc["iterations"]:
        it.pop("plan_time_ms")
    return doc


@pytest.mark.parametrize("source", [p.name for p in sorted(HF.glob("*.json"))] +
                         ["defaults:" + t for t in HF_TYPES])
def test_hf_conversion_matches_the_planner(tmp_path, source):
    """The executor's reading of a config (every fixture, and every
    model_type with all its fields left to the class defaults) written out
    as a Loom model.json plans to exactly the metrics of the config itself:
    every layer shape, token and patch count and vocabulary agree with
    core/problem/hf_config.c."""
    sys.path.insert(0, str(HERE.parent))
    from loomexec.hf_config import model_from_hf
    if source.startswith("defaults:"):
        cfg = tmp_path / "config.json"
        cfg.write_text(json.dumps({"model_type": source.split(":")[1]}))
    else:
        cfg = HF / source
    converted = tmp_path / "model.json"
    converted.write_text(json.dumps(model_from_hf(str(cfg), json.loads(cfg.read_text()))))
    assert _metrics(converted) == _metrics(cfg)


def test_model_preset_name(tmp_path):
    """`--model vlm-s` (a preset name, as loom plan takes it) is the model of
    examples/models/vlm-s.json; an unknown name lists the presets."""
    sys.path.insert(0, str(HERE.parent))
    from loomexec.model_spec import ModelSpec
    a, b = ModelSpec("VLM-S"), ModelSpec(str(VLM))
    assert a.name == b.name == "vlm-s"
    assert [(m.name, m.layers, m.real_heads, m.real_ffn_hidden, m.inputs) for m in a.modules] == \
        [(m.name, m.layers, m.real_heads, m.real_ffn_hidden, m.inputs) for m in b.modules]
    r = execute(tmp_path / "none.json", "nonesuch")
    assert r.returncode == 2
    assert 'model "nonesuch": expected a model preset (vlm-s, vlm-m' in r.stderr
