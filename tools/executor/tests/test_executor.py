"""The reference executor (docs/executor.md): bad inputs, deadlock reports,
tampered plans, recomputation policies and every shipped manifest.

Needs python3-torch and the loom CLI ($LOOM_CLI, else build/bin/loom)."""

import copy
import json
import os
import pathlib
import subprocess
import sys

import jsonschema
import pytest

import forked

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
EXECUTOR = HERE.parent / "loom_execute.py"
MODELS = ROOT / "examples" / "models"
MANIFESTS = ROOT / "examples" / "manifests"
VLM = MODELS / "vlm-s.json"


SCHEMA = json.loads((ROOT / "docs" / "schemas" / "executor-result.schema.json").read_text())


def valid(res):
    """The --json result against docs/schemas/executor-result.schema.json."""
    jsonschema.Draft202012Validator(SCHEMA).validate(res)
    return res


def loom_cli():
    cli = os.environ.get("LOOM_CLI") or str(ROOT / "build" / "bin" / "loom")
    if not os.path.exists(cli):
        pytest.fail("the loom CLI is needed: set LOOM_CLI or build into build/")
    return cli


def plan(tmp_path, name, *args, model=VLM, workload="vlm.jsonl"):
    """Plans one iteration into tmp_path/name; returns plan.json's path."""
    out = tmp_path / name
    cmd = [loom_cli(), "plan", "--model", str(model), "--workload", str(HERE / workload),
           "--iterations", "1", "--out", str(out), "--quiet", *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out / "plan.json"


def execute(plan_path, model=VLM, *extra):
    """loom_execute.py in a fork of this process (forked.py): the exit
    status, standard output and error, as subprocess.run gives them."""
    return forked.run(["--plan", plan_path, "--model", model, "--timeout", "30", *extra])


def execute_script(plan_path, model=VLM, *extra):
    """The same, through the script's own entry point in a new interpreter."""
    cmd = [sys.executable, str(EXECUTOR), "--plan", str(plan_path), "--model", str(model),
           "--timeout", "30", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def rewrite(path, doc, tmp_path, name):
    out = tmp_path / name
    out.write_text(json.dumps(doc))
    return out


@pytest.fixture(scope="module")
def onef1b(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plans")
    return plan(tmp, "1f1b", "--manifest", str(MANIFESTS / "megatron-1f1b.json"),
                "--parallel", "tp=1,pp=2,vpp=1,mb=4", "--memory-cap", "1e15")


# -- bad input: exit 2 with a message naming the file and the field -------------

def test_missing_plan_file(tmp_path):
    r = execute_script(tmp_path / "nope.json")
    assert r.returncode == 2
    assert "nope.json: cannot read the plan: No such file or directory" in r.stderr


def test_malformed_plan(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{\"loom_plan\": 2,")
    r = execute(p)
    assert r.returncode == 2 and "bad.json: malformed JSON" in r.stderr


def test_plan_from_another_version(onef1b, tmp_path):
    doc = json.loads(onef1b.read_text())
    doc["loom_plan"] = 1
    r = execute(rewrite(onef1b, doc, tmp_path, "v1.json"))
    assert r.returncode == 2
    assert "v1.json: loom_plan: expected 2, found 1: a plan from another Loom version" in r.stderr


def test_compact_plan_refused(onef1b, tmp_path):
    # the compact form of plans above 65536 stages (docs/outputs.md): stages as
    # rows and rank_orders; the executor needs the full form's actions
    doc = json.loads(onef1b.read_text())
    cols = ["id", "rank", "kind", "module", "flow", "position", "chunk", "microbatch", "sub",
            "group", "pair", "start_ms", "end_ms", "mem_delta_bytes", "policy", "fill_hosts"]
    rows = [[st.get(c, 0) for c in cols] for st in doc["stages"]]
    doc["stages"] = {"columns": cols, "rows": rows}
    doc["rank_actions"] = None
    doc["rank_orders"] = [[] for _ in range(doc["ranks"])]
    r = execute(rewrite(onef1b, doc, tmp_path, "compact.json"))
    assert r.returncode == 2
    assert ("compact.json: stages: expected the full form (a plan of at most 65536 stages), "
            "found the compact form of a %d-stage plan" % len(rows)) in r.stderr


def test_wrong_model_by_name(onef1b):
    r = execute(onef1b, MODELS / "t2v-s.json")
    assert r.returncode == 2
    assert ('model: the plan is for model "vlm-s" but %s is model "t2v-s" (wrong model for the plan)'
            % (MODELS / "t2v-s.json")) in r.stderr


def test_wrong_model_by_layers(onef1b, tmp_path):
    doc = json.loads((VLM).read_text())
    doc["modules"][1]["layers"]["count"] = 30
    model = tmp_path / "short.json"
    model.write_text(json.dumps(doc))
    r = execute(onef1b, model)
    assert r.returncode == 2
    assert "layers 27..30 of module llm, which has 30 layers in %s (wrong model for the plan)" % model \
        in r.stderr or "which has 30 layers" in r.stderr


def execute_vit_edited(plan, tmp_path, key, value):
    """Executes plan against vlm-s with modules[0][key] = value."""
    doc = json.loads((VLM).read_text())
    doc["modules"][0][key] = value
    model = tmp_path / ("%s.json" % key)
    model.write_text(json.dumps(doc))
    return execute(plan, model)


def test_wrong_model_by_tokens(onef1b, tmp_path):
    r = execute_vit_edited(onef1b, tmp_path, "tokens_per_item", 100)
    assert r.returncode == 2
    assert ".tensor.shape[0]: expected" in r.stderr and "wrong model for the plan?" in r.stderr


@pytest.mark.parametrize("path,message", [
    (("data",), "data: missing field"),
    (("iteration",), "iteration: missing field"),
    (("stages", 0, "flow"), "stages[0].flow: missing field"),
    (("rank_actions", 0, "actions", 1, "tensor"), "rank_actions[0].actions[1].tensor: missing field"),
    (("partition", "flows", 0, "positions", 0, "spans", 0, "first_layer"),
     "partition.flows[0].positions[0].spans[0].first_layer: missing field"),
])
def test_missing_fields(onef1b, tmp_path, path, message):
    doc = json.loads(onef1b.read_text())
    node = doc
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]
    r = execute(rewrite(onef1b, doc, tmp_path, "missing.json"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr


def test_bad_model_file(onef1b, tmp_path):
    model = tmp_path / "m.json"
    model.write_text(json.dumps({"name": "vlm-s", "modules": [{"name": "vit", "modality": "smell"}]}))
    r = execute(onef1b, model)
    assert r.returncode == 2
    assert 'modules[0].modality: expected one of text, image, video, audio, found "smell"' in r.stderr


PATCHES = ROOT / "tests" / "fidelity" / "models" / "vlm-s-patches.json"


@pytest.mark.parametrize("manifest,parallel,extra", [
    ("megatron-1f1b", "tp=1,pp=4,vpp=1,mb=4", []),
    ("pipeweaver", "tp=1,pp=4,mb=4", ["--param", "ranker.max_evaluations=20"]),
])
def test_patches_are_merged(tmp_path, manifest, parallel, extra):
    """A ViT on 2916 patches an image that hands 169 pooled tokens to the
    LLM: the plan's tensors (patches inside the ViT, tokens after it) are
    what the executor moves, and the gradients match the reference."""
    p = plan(tmp_path, manifest, "--manifest", str(MANIFESTS / (manifest + ".json")),
             "--parallel", parallel, "--memory-cap", "1e15", *extra, model=PATCHES)
    doc = json.loads(p.read_text())
    rows = {a["tensor"]["shape"][0] for ra in doc["rank_actions"] for a in ra["actions"]
            if a["action"] == "isend"}
    assert rows, "the plan has no transfers"
    r = execute(p, PATCHES)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "result    PASS" in r.stdout
    # the same plan against the model without its patches: the ViT's rows differ
    doc = json.loads(PATCHES.read_text())
    del doc["modules"][0]["patches_per_item"]
    r = execute(p, rewrite(PATCHES, doc, tmp_path, "no-patches.json"))
    assert r.returncode == 2
    assert ".tensor.shape[0]: expected" in r.stderr and "wrong model for the plan?" in r.stderr


def test_stage_times_plan_refused(tmp_path):
    st = ROOT / "examples" / "stage-times"
    files = sorted(st.glob("*.json"))
    assert files
    out = tmp_path / "st"
    r = subprocess.run([loom_cli(), "plan", "--stage-times", str(files[0]), "--out", str(out),
                        "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = execute(out / "plan.json")
    assert r.returncode == 2
    assert "problem: expected \"model\"" in r.stderr or "model: expected a string" in r.stderr


# -- checks that fail: exit 1 ---------------------------------------------------

def test_deadlock_names_rank_and_action(onef1b, tmp_path):
    """Rank 0 waits for the gradient of microbatch 0 before it runs any
    forward: rank 1 can never send it."""
    doc = json.loads(onef1b.read_text())
    acts = doc["rank_actions"][0]["actions"]
    stages = {s["id"]: s for s in doc["stages"]}
    k = next(i for i, a in enumerate(acts)
             if a["action"] == "irecv" and stages[a["peer_stage"]]["kind"] != "F")
    w = next(i for i, a in enumerate(acts) if a["action"] == "wait_irecv"
             and a["peer_stage"] == acts[k]["peer_stage"])
    moved = [acts[k], acts[w]]
    rest = [a for i, a in enumerate(acts) if i not in (k, w)]
    doc["rank_actions"][0]["actions"] = moved + rest
    r = forked.run(["--plan", rewrite(onef1b, doc, tmp_path, "dead.json"), "--model", VLM,
                    "--timeout", "3"], timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "deadlock  FAIL" in r.stdout
    assert ("rank 0 is stuck on action 1 (wait_irecv stage %d" % acts[k]["stage"]) in r.stdout
    assert "result    FAIL" in r.stdout


def test_lost_sample_is_reported(tmp_path):
    """A sample the ViT flow runs but the LLM flow lost: the LLM's tensors
    no longer match, and without that check the sample count and the
    gradients fail."""
    p = plan(tmp_path, "pw", "--manifest", str(MANIFESTS / "pipeweaver.json"),
             "--memory-cap", "1e15", "--param", "ranker.max_evaluations=5",
             "--parallel", "tp=1,pp=2,mb=2")
    doc = json.loads(p.read_text())
    unit = next(u for u in doc["data"] if u["flow"] == 1 and
                any(doc["iteration"]["samples"][s]["images"] for s in u["samples"]))
    lost = next(s for s in unit["samples"] if doc["iteration"]["samples"][s]["images"])
    unit["samples"].remove(lost)
    r = execute(rewrite(p, doc, tmp_path, "lost.json"), VLM, "--json")
    assert r.returncode == 2 and "tensor.shape[0]: expected" in r.stderr
    r = execute(rewrite(p, doc, tmp_path, "lost.json"), VLM, "--json", "--no-tensor-check")
    assert r.returncode == 1, r.stdout + r.stderr
    res = valid(json.loads(r.stdout))
    assert res["passed"] is False
    assert res["samples"]["first_problem"] == ("sample %d, llm layer 0: forward 0, backward 0, input-grad 0, "
                                               "weight-grad 0 times (expected once forward, once B or I+W)"
                                               % lost)
    assert res["gradients"]["mismatched"] > 0


def test_sample_twice_in_a_flow_is_bad_input(onef1b, tmp_path):
    doc = json.loads(onef1b.read_text())
    doc["data"][1]["samples"].append(doc["data"][0]["samples"][0])
    r = execute(rewrite(onef1b, doc, tmp_path, "twice.json"))
    assert r.returncode == 2
    assert "expected each sample once per flow" in r.stderr


# -- passing runs ---------------------------------------------------------------

def test_json_result(onef1b):
    r = execute(onef1b, VLM, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    res = valid(json.loads(r.stdout))
    assert res["passed"] is True and res["deadlock"] is None and res["ranks"] == 2
    assert res["gradients"]["mismatched"] == 0 and res["gradients"]["parameters"] > 0
    assert res["gradients"]["worst_err_over_tolerance"] <= 1.0
    assert abs(res["loss"]["executed"] - res["loss"]["reference"]) <= 1e-9 * abs(res["loss"]["reference"])
    # 7 samples: 5 with images through 63 ViT layers, all 7 through 32 LLM layers
    assert res["samples"] == {"sample_layers": 5 * 63 + 7 * 32, "problems": 0, "first_problem": None,
                              "outside_plan": []}


def test_selective_and_full_recomputation(onef1b, tmp_path):
    """Whatever the policies, the gradients are the reference's."""
    doc = json.loads(onef1b.read_text())
    cycle = ["selective", "full", "none"]
    for st in doc["stages"]:
        st["layer_policies"] = [cycle[(st["id"] + i) % 3] for i in range(len(st["layer_policies"]))]
        st["policy"] = "mixed"
    r = execute(rewrite(onef1b, doc, tmp_path, "recompute.json"))
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("frozen", [0, 1])
def test_frozen_module(tmp_path, frozen):
    """A frozen ViT (gradients stop at the LLM's input) or a frozen LLM
    (gradients pass through it to the ViT): frozen parameters get none."""
    doc = json.loads(VLM.read_text())
    doc["modules"][frozen]["frozen"] = True
    model = tmp_path / "frozen.json"
    model.write_text(json.dumps(doc))
    p = plan(tmp_path, "fz", "--manifest", str(MANIFESTS / "pipeweaver.json"),
             "--param", "ranker.max_evaluations=5", "--parallel", "tp=1,pp=2,mb=4",
             "--memory-cap", "1e15", model=model)
    r = execute(p, model, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    res = valid(json.loads(r.stdout))
    # trainable: the other module's tensors only. LLM: 32 layers x 9 (norms, q, k, v, o,
    # SwiGLU's three) + embedding, final norm, head; ViT: 63 x 8 (GELU's two) + patch embedding
    assert res["gradients"]["parameters"] == (32 * 9 + 3 if frozen == 0 else 63 * 8 + 1)
    assert res["gradients"]["mismatched"] == 0


def test_zero_bubble_splits_and_recomputes(tmp_path):
    p = plan(tmp_path, "zb", "--manifest", str(MANIFESTS / "megatron-1f1b.json"),
             "--use", "interleaver=zero-bubble", "--parallel", "tp=1,pp=3,mb=4",
             "--memory-cap", "1e15")
    doc = json.loads(p.read_text())
    kinds = {s["kind"] for s in doc["stages"]}
    assert kinds == {"F", "I", "W"} and doc["partition"]["split_backward"]
    for st in doc["stages"]:
        st["layer_policies"] = ["full" if i % 2 else "selective" for i in range(len(st["layer_policies"]))]
    r = execute(rewrite(p, doc, tmp_path, "zb-rec.json"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_interleaved_plan_shape(tmp_path):
    """The ctest executor_interleaved_1f1b plan has two chunks on every rank."""
    p = plan(tmp_path, "il", "--manifest", str(MANIFESTS / "megatron-1f1b.json"),
             "--use", "interleaver=interleaved-1f1b", "--parallel", "tp=1,pp=2,vpp=2,mb=4",
             "--memory-cap", "1e15")
    doc = json.loads(p.read_text())
    chunks = {(s["rank"], s["chunk"]) for s in doc["stages"]}
    assert chunks == {(0, 0), (0, 1), (1, 0), (1, 1)}


def test_pipeweaver_plan_shape(tmp_path):
    """The ctest executor_pipeweaver plan has sub-microbatches, more than one
    flow and recomputed layers (so that entry exercises them)."""
    p = plan(tmp_path, "pw", "--manifest", str(MANIFESTS / "pipeweaver.json"),
             "--memory-cap", "6.2e10", "--param", "ranker.max_evaluations=20",
             "--parallel", "tp=1,pp=4,mb=4")
    doc = json.loads(p.read_text())
    assert len(doc["partition"]["flows"]) == 2
    assert max(max(f["subs"]) for f in doc["partition"]["flows"]) > 1
    assert any(x == "full" for s in doc["stages"] for x in s["layer_policies"])


@pytest.mark.parametrize("manifest,model,workload,parallel,extra", [
    ("cornstarch", "vlm-s", "vlm.jsonl", "tp=1,pp=4,mb=4", []),
    ("disttrain", "vlm-s", "vlm.jsonl", "tp=1,pp=4,mb=4", []),
    ("entrain", "vlm-s", "vlm.jsonl", "tp=1,pp=4,mb=4", []),
    ("gpipe", "vlm-s", "vlm.jsonl", "tp=1,pp=4,mb=4", []),
    ("megatron-balanced", "vlm-s", "vlm.jsonl", "tp=1,pp=4,mb=4", []),
    ("megatron-tuned", "vlm-s", "vlm.jsonl", "tp=1,pp=4,mb=4", []),
    ("torchtitan-tuned", "vlm-s", "vlm.jsonl", "tp=1,pp=4,mb=4", []),
    ("megatron-param-balanced", "vlm-s", "vlm.jsonl", "tp=1,pp=4,mb=4", []),
    ("hetero", "vlm-s", "vlm.jsonl", "tp=1,pp=4,mb=4", []),
    ("oobleck", "vlm-s", "vlm.jsonl", "tp=1,pp=2,dp=2,mb=4",
     ["--param", "partitioner.fault_tolerance=0", "--param", "ranker.fault_tolerance=0"]),
    ("optimus", "vlm-s", "vlm.jsonl", "tp=1,pp=4,mb=4", []),
    ("pipeweaver", "t2v-s", "video.jsonl", "tp=1,pp=4,mb=4", ["--param", "ranker.max_evaluations=20"]),
    ("megatron-1f1b", "t2v-s", "video.jsonl", "tp=1,pp=2,vpp=2,mb=4", []),
    ("dualpipe-v", "vlm-s", "vlm.jsonl", "tp=1,pp=2,vpp=2,mb=4", []),
    ("megatron-1f1b", "disttrain-mllm-9b", "vlm.jsonl", "tp=1,pp=3,mb=4", []),
    # one rank: every hand-over (within and across flows) stays on the rank
    ("pipeweaver", "vlm-s", "vlm.jsonl", "tp=1,pp=1,mb=4", ["--param", "ranker.max_evaluations=5"]),
])
def test_shipped_manifests(tmp_path, manifest, model, workload, parallel, extra):
    m = MODELS / (model + ".json")
    p = plan(tmp_path, manifest, "--manifest", str(MANIFESTS / (manifest + ".json")),
             "--parallel", parallel, "--memory-cap", "1e15", *extra, model=m, workload=workload)
    r = execute(p, m)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "result    PASS" in r.stdout
    # PyTorch's own runtime runs every plan whose schedule.csv was written
    doc = json.loads(pathlib.Path(p).read_text())
    csv = "file" in doc["exports"]["pytorch_csv"] and doc["placement"]["style"] is not None
    assert ("runtime   torch" if csv else "runtime   loom") in r.stdout, r.stdout


def test_optimus_fills_execute(tmp_path):
    """At TP 2 optimus runs encoder layers as fills inside backbone stages
    (their exposed TP communication; rank_actions carry fill_hosts); a
    runtime that runs each fill before its hosts keeps every dependency."""
    p = plan(tmp_path, "optimus-tp2", "--manifest", str(MANIFESTS / "optimus.json"),
             "--parallel", "tp=2,pp=4,mb=4", "--memory-cap", "1e15")
    doc = json.loads(p.read_text())
    schema = json.loads((ROOT / "docs" / "schemas" / "plan.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    fills = [a for r in doc["rank_actions"] for a in r["actions"] if a.get("fill_hosts")]
    assert fills, "no fills at TP 2"
    stages = {s["id"]: s for s in doc["stages"]}
    assert all(stages[a["stage"]]["module"] == "vit" for a in fills)
    r = execute(p)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "result    PASS" in r.stdout


def test_every_shipped_manifest_is_executed():
    """Each examples/manifests/*.json appears above (megatron-1f1b and
    pipeweaver also in the ctest executor_* cases)."""
    listed = {"cornstarch", "disttrain", "entrain", "gpipe", "megatron-balanced",
              "megatron-tuned", "torchtitan-tuned", "megatron-param-balanced", "hetero",
              "oobleck", "optimus", "pipeweaver", "megatron-1f1b", "dualpipe-v"}
    shipped = {p.stem for p in MANIFESTS.glob("*.json")}
    assert shipped == listed, "manifests without an executor test: %s" % sorted(shipped - listed)


# -- profile and online modes ---------------------------------------------------

def test_profile_mode(onef1b, tmp_path):
    csv = tmp_path / "layers.csv"
    r = forked.run(["--profile", "--plan", onef1b,
                    "--model", VLM, "--manifest", MANIFESTS / "megatron-1f1b.json",
                    "--parallel", "tp=1,pp=2,mb=4", "--profile-csv", csv,
                    "--profile-dir", tmp_path / "kept",
                    "--iterations", "2", "--json", "--loom", loom_cli()])
    assert r.returncode == 0, r.stdout + r.stderr
    res = valid(json.loads(r.stdout))
    prof = res["profile"]
    assert prof["predicted_ms"] > 0 and prof["measured_ms"] > 0 and prof["ranks"] == 2
    assert abs(prof["error_pct"] - (prof["measured_ms"] - prof["predicted_ms"]) / prof["predicted_ms"] * 100) < 1e-9
    lines = csv.read_text().splitlines()
    assert lines[0] == "module,layer,tokens,tp,forward_ms,backward_ms,activation_bytes,seq_len"
    table = (tmp_path / "kept" / "table.csv").read_text().splitlines()
    assert table[0] == ("module,layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,"
                        "activation_bytes,param_bytes")
    assert len(table) == len(lines)
    layers = {tuple(x.split(",")[:2]) for x in lines[1:]}
    # first, middle and last layer of both modules
    assert layers == {("vit", "0"), ("vit", "*"), ("vit", "62"), ("llm", "0"), ("llm", "*"), ("llm", "31")}
    for x, y in zip(lines[1:], table[1:]):
        f, g = x.split(","), y.split(",")
        assert f[:3] == g[:3] and f[3] == "1" and f[4] == g[3] and f[6] == g[6]
        assert int(f[2]) >= 1 and 1 <= int(f[7]) <= int(f[2])
        # backward = input + weight gradient (each printed to 6 decimals)
        assert abs(float(f[5]) - float(g[4]) - float(g[5])) <= 2e-6
        assert all(float(v) >= 0 for v in f[4:] + g[3:])


def online(tmp_path, *extra):
    env = dict(os.environ)
    if env.get("LOOM_EXEC_PRELOAD"):  # a sanitized libloom (tests/CMakeLists.txt)
        env["LD_PRELOAD"] = env["LOOM_EXEC_PRELOAD"]
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return subprocess.run([sys.executable, str(EXECUTOR), "--online", "--model", str(VLM),
                           "--manifest", str(MANIFESTS / "megatron-1f1b.json"),
                           "--parallel", "tp=4,pp=2,mb=2", "--loom", loom_cli(), *extra],
                          capture_output=True, text=True, timeout=300, env=env)


def test_online_mode(tmp_path):
    r = online(tmp_path, "--iterations", "3", "--generate", "interleaved", "--json",
               "--keep-plans", str(tmp_path / "plans"))
    assert r.returncode == 0, r.stdout + r.stderr
    on = valid(json.loads(r.stdout))["online"]
    its = on["iterations"]
    assert [x["iteration"] for x in its] == [0, 1, 2] and all(x["passed"] for x in its)
    assert "next_plan_ms" not in its[2]
    assert 0 <= on["hidden_ms"] <= on["planning_ms"] + 1e-9
    assert abs(on["planning_ms"] - its[0]["next_plan_ms"] - its[1]["next_plan_ms"]) < 1e-6
    for x in its[:2]:
        assert 0 <= x["hidden_ms"] <= x["next_plan_ms"] + 1e-9
    # each iteration drew a different batch
    plans = [json.loads((tmp_path / "plans" / ("iter-%03d.json" % i)).read_text()) for i in range(3)]
    batches = [p["iteration"]["samples"] for p in plans]
    assert batches[0] != batches[1] != batches[2]


def test_online_bad_workload(tmp_path):
    w = tmp_path / "w.jsonl"
    w.write_text('{"samples": [{"text_tokens": 10}]}\n{"samples": 3}\n')
    r = online(tmp_path, "--iterations", "2", "--workload", str(w))
    assert r.returncode == 2
    assert "%s:2: samples: expected an array of samples" % w in r.stderr
