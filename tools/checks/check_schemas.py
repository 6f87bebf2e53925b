#!/usr/bin/env python3
"""check_schemas.py - the JSON Schemas in docs/schemas/ against the data.

Usage: check_schemas.py SOURCE_DIR LOOM_BINARY

1. Every docs/schemas/*.schema.json is a valid draft 2020-12 schema.
2. Every example file validates against its schema: examples/models,
   clusters, stage-times, workloads (each line), manifests, replan, ci (suite
   and planner manifests), the plugin template's manifest, every
   plugins/*/manifest.json and the cost table seed. A JSON file under
   examples/ that no rule maps to a schema is an error, so new examples are
   checked too.
3. Real outputs validate: `loom plan --json`, plan.json of `loom plan --out`
   (a model, on one rank and pipelined with two sequences a microbatch, and a
   stage-times problem), `loom ab --json` (with and
   without --timings, and with a failing side), the shard reports of
   `loom ab --shard K/N --json` (ab-shard) and their `loom ab merge --json`,
   `loom tune --json`, every line of `loom workload generate`, and the
   --json of `loom replan`, `loom cp-balance`, `loom plugins list`,
   `loom plugins inspect`, `loom calibrate` and `loom calibrate-batch`,
   and the shard files of `loom tune --shard K/N` (tune-shard) and their
   `loom tune merge`.
4. The schemas are strict: every example with an unknown top-level field
   added (not a Hugging Face config, which carries many members Loom does
   not read), and bad inputs from tests/bad-inputs that break a schema rule,
   are rejected; every Hugging Face config that loom refuses
   (tests/bad-inputs/hf-config, cases.tsv) is refused by the schema, and
   loom and the hf-config schema agree on every fixture with a member it
   reads set to a string or to 0.

Needs the jsonschema module (Debian: python3-jsonschema).
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    sys.exit("check_schemas: the jsonschema module is missing "
             "(apt-get install python3-jsonschema, or tools/install-deps.sh)")

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL: " + msg)


def strict_loads(text, where):
    """json.loads that refuses duplicate keys and NaN/Infinity, as Loom does."""
    def pairs(items):
        seen = {}
        for k, v in items:
            if k in seen:
                raise ValueError("%s: duplicate key %r" % (where, k))
            seen[k] = v
        return seen

    def constant(name):
        raise ValueError("%s: %s is not JSON" % (where, name))
    return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)


def load_schemas(src):
    schemas = {}
    for path in sorted(glob.glob(os.path.join(src, "docs/schemas/*.schema.json"))):
        name = os.path.basename(path)[:-len(".schema.json")]
        with open(path, encoding="utf-8") as f:
            schema = strict_loads(f.read(), path)
        if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
            fail("%s: expected $schema draft 2020-12" % path)
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.exceptions.SchemaError as e:
            fail("%s: not a valid schema: %s" % (path, e.message))
            continue
        schemas[name] = jsonschema.Draft202012Validator(schema)
    return schemas


def errors_of(validator, doc):
    return sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))


def where_of(err):
    return "/".join(str(p) for p in err.absolute_path) or "(document)"


def check_doc(schemas, schema, doc, label, counts):
    if schema not in schemas:
        fail("%s: no schema %s.schema.json" % (label, schema))
        return
    errs = errors_of(schemas[schema], doc)
    for e in errs[:5]:
        fail("%s (%s): %s: %s" % (label, schema, where_of(e), e.message))
    counts[schema] = counts.get(schema, 0) + 1
    # Strictness: an unknown top-level field must be refused (not in a
    # Hugging Face config, which carries many fields Loom does not read).
    if not errs and isinstance(doc, dict) and schema != "hf-config":
        bad = dict(doc)
        bad["__not_a_loom_field__"] = 1
        if not errors_of(schemas[schema], bad):
            fail("%s (%s): a document with an unknown field validates" % (label, schema))


def check_file(schemas, schema, path, counts, src):
    label = os.path.relpath(path, src)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".jsonl"):
        n = 0
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            n += 1
            try:
                doc = strict_loads(line, "%s:%d" % (label, i))
            except ValueError as e:
                fail(str(e))
                continue
            check_doc(schemas, schema, doc, "%s:%d" % (label, i), counts)
        if n == 0:
            fail("%s: no iteration" % label)
        return
    try:
        doc = strict_loads(text, label)
    except ValueError as e:
        fail(str(e))
        return
    check_doc(schemas, schema, doc, label, counts)


def example_schema(rel):
    """Schema name for a file under examples/, or None."""
    parts = rel.split("/")
    folder, base = parts[1], parts[-1]
    table = {"models": "model", "clusters": "cluster", "stage-times": "stage-times",
             "manifests": "planner-manifest", "replan": "replan-job",
             "calibration": "calibration-iterations", "parallel": "parallel"}
    if folder == "models" and len(parts) > 3 and parts[2] == "hf":
        return "hf-config"
    if folder in table and base.endswith(".json"):
        return table[folder]
    if folder == "workloads" and base.endswith(".jsonl"):
        return "workload-iteration"
    if folder == "plugin-template" and base == "manifest.json":
        return "plugin-manifest"
    if folder == "ci" and base.endswith(".json"):
        return "ab-suite" if "suite" in base else "planner-manifest"
    return None


def check_examples(src, schemas, counts):
    for path in sorted(glob.glob(os.path.join(src, "examples/**/*"), recursive=True)):
        rel = os.path.relpath(path, src)
        if not (rel.endswith(".json") or rel.endswith(".jsonl")) or not os.path.isfile(path):
            continue
        schema = example_schema(rel)
        if schema is None:
            fail("%s: no schema maps to this example (add a rule to check_schemas.py)" % rel)
            continue
        check_file(schemas, schema, path, counts, src)
    for path in sorted(glob.glob(os.path.join(src, "plugins/*/manifest.json"))):
        check_file(schemas, "plugin-manifest", path, counts, src)
    for path in sorted(glob.glob(os.path.join(src, "tests/fuzz/seeds/table/*.json"))):
        check_file(schemas, "cost-table", path, counts, src)


def run(cmd, cwd, ok=(0,)):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, env=dict(os.environ, LOOM_PLUGIN_PATH=""))
    if p.returncode not in ok:
        fail("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-400:]))
        return None
    return p.stdout


def check_outputs(src, loom, schemas, counts):
    manifest = os.path.join(src, "examples/manifests/megatron-1f1b.json")
    tuned = os.path.join(src, "examples/manifests/megatron-balanced.json")
    with tempfile.TemporaryDirectory(prefix="loom-schemas-") as tmp:
        out = run([loom, "plan", "--manifest", manifest, "--iterations", "2", "--json",
                   "--quiet"], tmp)
        if out is not None:
            try:
                check_doc(schemas, "plan-metrics", strict_loads(out, "loom plan --json"),
                          "loom plan --json", counts)
            except ValueError as e:
                fail(str(e))
        tuned = os.path.join(src, "examples/manifests/megatron-tuned.json")
        out = run([loom, "tune", "--model", "vlm-s", "--gpus", "4", "--global-batch", "8",
                   "--top", "3", "--manifest", tuned, "--json", "--quiet"], tmp)
        if out is not None:
            try:
                doc = strict_loads(out, "loom tune --json")
                check_doc(schemas, "tune", doc, "loom tune --json", counts)
                if not doc.get("ranked") or not doc.get("infeasible"):
                    fail("loom tune --json: expected ranked and infeasible configurations")
            except ValueError as e:
                fail(str(e))
        jobs = [
            ("plan.json (model, full recomputation)", "model",
             ["--manifest", manifest, "--use", "memory_tuner=full-recompute"]),
            ("plan.json (model, greedy tuner under a cap)", "tuned",
             ["--manifest", tuned, "--use", "memory_tuner=greedy", "--memory-cap", "30e9"]),
            ("plan.json (model, per-module layouts)", "layouts",
             ["--manifest", os.path.join(src, "examples/manifests/hetero.json"),
              "--param", "partitioner.mode=given", "--parallel",
              os.path.join(src, "examples/parallel/vlm-s-vit-disjoint.json")]),
            ("plan.json (one rank, two sequences a microbatch)", "one-rank",
             ["--manifest", os.path.join(src, "examples/manifests/torchtitan-tuned.json"),
              "--model", os.path.join(src, "examples/models/hf/llama-3-8b.json"),
              "--parallel", "tp=1,pp=1,dp=8,mb=4", "--micro-batch-size", "2",
              "--param", "partitioner[0].vpp_sweep=false",
              "--param", "partitioner[1].vpp_sweep=false"]),
            ("plan.json (pipeline, two sequences a microbatch)", "k2",
             ["--manifest", manifest, "--model",
              os.path.join(src, "examples/models/hf/llama-3-8b.json"),
              "--parallel", "tp=2,pp=4,dp=2,mb=8", "--micro-batch-size", "2"]),
            ("plan.json (stage-times)", "stage-times",
             ["--manifest", manifest, "--stage-times",
              os.path.join(src, "examples/stage-times/interleaved-v2.json")]),
        ]
        for label, sub, args in jobs:
            d = os.path.join(tmp, sub)
            if run([loom, "plan", "--iterations", "1", "--quiet", "--out", d] + args,
                   tmp, ok=(0, 1)) is None:
                continue
            path = os.path.join(d, "plan.json")
            if not os.path.exists(path):
                fail("%s: %s was not written" % (label, path))
                continue
            check_file(schemas, "plan", path, counts, tmp)
        reports = [
            ("loom ab --json", []),
            ("loom ab --json --timings", ["--timings"]),
            ("loom ab --json (B fails)", ["--param", "memory_tuner.nope=1"]),
        ]
        for i, (label, extra) in enumerate(reports):
            path = os.path.join(tmp, "ab-%d.json" % i)
            b = os.path.join(src, "examples/manifests/gpipe.json")
            args = [loom, "ab", manifest, b, "--model", "vlm-s", "--iterations", "2",
                    "--quiet", "--no-isolate", "--json", path]
            if extra and extra[0] == "--param":
                # an unknown param of B's memory tuner: B fails, A plans
                bad = os.path.join(tmp, "b-bad.json")
                with open(b, encoding="utf-8") as f:
                    m = json.load(f)
                for step in m["pipeline"]:
                    if step["role"] == "memory_tuner":
                        step["params"] = {"nope": 1}
                m["plugin_dirs"] = []
                with open(bad, "w", encoding="utf-8") as f:
                    json.dump(m, f)
                args = [loom, "ab", manifest, bad, "--model", "vlm-s", "--iterations", "2",
                        "--quiet", "--no-isolate", "--json", path]
            else:
                args += extra
            if run(args, tmp, ok=(0, 1, 2, 3)) is None:
                continue
            if not os.path.exists(path):
                fail("%s: no report written" % label)
                continue
            with open(path, encoding="utf-8") as f:
                try:
                    doc = strict_loads(f.read(), label)
                except ValueError as e:
                    fail(str(e))
                    continue
            check_doc(schemas, "ab-report", doc, label, counts)
            if extra and extra[0] == "--param":
                fails = [c["b"]["failure"] for c in doc.get("cases", [])]
                if not any(fails):
                    fail("%s: expected B's failure in the report" % label)
        check_shards(src, loom, schemas, counts, tmp, manifest)
        check_workloads(loom, schemas, counts, tmp)
        check_printed(src, loom, schemas, counts, tmp)
        check_tune_shards(loom, schemas, counts, tmp, tuned)


def check_tune_shards(loom, schemas, counts, tmp, manifest):
    """`loom tune --shard K/N --json FILE` (tune-shard) and `loom tune
    merge --json` of the shards (tune)."""
    files = []
    for k in (1, 2):
        path = os.path.join(tmp, "tune-shard-%d.json" % k)
        if run([loom, "tune", "--model", "vlm-s", "--gpus", "4", "--global-batch", "8", "--top",
                "3", "--manifest", manifest, "--shard", "%d/2" % k, "--json", path, "--quiet"],
               tmp) is None:
            continue
        doc = load_report(path, "loom tune --shard %d/2" % k)
        if doc is not None:
            check_doc(schemas, "tune-shard", doc, "loom tune --shard %d/2" % k, counts)
            files.append(path)
    merged = os.path.join(tmp, "tune-merged.json")
    if len(files) == 2 and run([loom, "tune", "merge"] + files + ["--json", merged, "--quiet"],
                               tmp) is not None:
        doc = load_report(merged, "loom tune merge --json")
        if doc is not None:
            check_doc(schemas, "tune", doc, "loom tune merge --json", counts)


def check_printed(src, loom, schemas, counts, tmp):
    """The --json of `loom replan` (without and with failed nodes, and a
    full replan), `loom cp-balance` (causal, given workloads, both orders),
    `loom plugins list` and `loom plugins inspect` (several plugins,
    loaded)."""
    job = os.path.join(src, "examples/replan/eight-nodes.json")
    runs = [
        ("replan-result", [loom, "replan", "--job", job, "--json"]),
        ("replan-result", [loom, "replan", "--job", job, "--failed-nodes", "3,5", "--json"]),
        ("replan-result", [loom, "replan", "--job", job, "--failed-nodes", "3,5", "--full",
                           "--json"]),
        ("cp-balance", [loom, "cp-balance", "--gpus", "4", "--causal", "8192", "--json"]),
        ("cp-balance", [loom, "cp-balance", "--gpus", "2", "--workloads", "5,3,2,7",
                        "--order", "unsorted", "--json"]),
        ("plugins-list", [loom, "plugins", "list", "--json"]),
        ("plugins-list", [loom, "plugins", "list", "--load", "--json"]),
    ]
    prof = os.path.join(src, "tests/fidelity/measured/h200/profile-vlm-s.csv")
    vlm = os.path.join(src, "examples/models/vlm-s.json")
    for fit in ("none", "eff_gemm,eff_attention"):
        runs.append(("calibration-result", [loom, "calibrate", "--cluster", "h200", "--model", vlm,
                                            "--profile", prof, "--fit", fit, "--max-residual",
                                            "15", "--json"]))
    runs.append(("calibration-result", [loom, "calibrate", "--cluster", "h200", "--measured",
                                        os.path.join(src, "examples/calibration/iterations.json"),
                                        "--fit", "none", "--max-residual", "100", "--json"]))
    runs.append(("calibrate-batch", [loom, "calibrate-batch", "--model", "vlm-s", "--generate",
                                     "interleaved", "--global-batch", "512", "--unit", "4",
                                     "--json"]))
    for pid in ("mcts", "org.loom.ilp", "roofline", "zb-v", "disttrain-alloc"):
        runs.append(("plugin-inspect", [loom, "plugins", "inspect", pid, "--load", "--json"]))
    for schema, cmd in runs:
        label = " ".join(os.path.basename(c) if c.startswith("/") else c for c in cmd)
        out = run(cmd, tmp)
        if out is None:
            continue
        try:
            check_doc(schemas, schema, strict_loads(out, label), label, counts)
        except ValueError as e:
            fail(str(e))


def load_report(path, label):
    """The JSON document at path, or None (a failure recorded)."""
    if not os.path.exists(path):
        fail("%s: no report written" % label)
        return None
    with open(path, encoding="utf-8") as f:
        try:
            return strict_loads(f.read(), label)
        except ValueError as e:
            fail(str(e))
            return None


def check_shards(src, loom, schemas, counts, tmp, manifest):
    """`loom ab --shard K/N --json` (ab-shard) and `loom ab merge --json`
    of the shards (ab-report), with a memory verdict."""
    suite = os.path.join(tmp, "suite.json")
    with open(suite, "w", encoding="utf-8") as f:
        json.dump({"cases": [
            {"name": "tp4-pp4", "model": "vlm-s", "parallel": "tp=4,pp=4,mb=8", "iterations": 2},
            {"name": "tp2-pp8", "model": "vlm-s", "parallel": "tp=2,pp=8,mb=16",
             "iterations": 2}]}, f)
    b = os.path.join(src, "examples/manifests/gpipe.json")
    shards = []
    for k in (1, 2):
        path = os.path.join(tmp, "shard-%d.json" % k)
        label = "loom ab --shard %d/2 --json" % k
        if run([loom, "ab", manifest, b, "--suite", suite, "--memory-threshold", "0.1",
                "--shard", "%d/2" % k, "--quiet", "--json", path], tmp, ok=(0, 1)) is None:
            continue
        doc = load_report(path, label)
        if doc is not None:
            check_doc(schemas, "ab-shard", doc, label, counts)
            shards.append(path)
    merged = os.path.join(tmp, "merged.json")
    if len(shards) == 2 and run([loom, "ab", "merge"] + shards + ["--quiet", "--json", merged],
                                tmp, ok=(0, 1)) is not None:
        doc = load_report(merged, "loom ab merge --json")
        if doc is not None:
            check_doc(schemas, "ab-report", doc, "loom ab merge --json", counts)


def check_workloads(loom, schemas, counts, tmp):
    """Every line of `loom workload generate` of each family."""
    for family in ("image-pairs", "interleaved", "video", "rise-and-fall", "text"):
        path = os.path.join(tmp, "w-%s.jsonl" % family)
        if run([loom, "workload", "generate", "--family", family, "--iterations", "3",
                "--microbatches", "4", "--out", path], tmp) is None:
            continue
        check_file(schemas, "workload-iteration", path, counts, tmp)


# Bad inputs (tests/bad-inputs) that a schema rule refuses; each must fail
# validation. Inputs whose fault is beyond a schema (cycles, divisibility,
# lengths tied to other fields, unreadable files) are not listed.
BAD_INPUTS = {
    "model": ["heads-string.json", "heads-fraction.json", "negative-hidden.json",
              "zero-layers.json", "billion-layers.json", "huge-hidden.json",
              "missing-modules.json", "no-modules.json", "not-object.json",
              "too-many-modules.json", "unknown-field.json", "unknown-kind.json",
              "unknown-modality.json"],
    "cluster": ["efficiency-above-one.json", "efficiency-nan-string.json", "missing-flops.json",
                "negative-memory.json", "unknown-field.json", "zero-flops.json",
                "zero-gpus-per-node.json"],
    "stage-times": ["both-backwards.json", "negative-time.json", "wrong-kind.json",
                    "zero-ranks.json", "billion-microbatches.json", "placement-unknown.json"],
    "planner-manifest": ["empty-pipeline.json", "huge-budget.json", "missing-cost-model.json",
                         "negative-seed.json", "two-rankers.json", "unknown-role.json",
                         "wrong-format-version.json"],
    "cost-table": ["json-wrong-type.json"],
    "workload-iteration": ["billion-images.jsonl", "empty-sample.jsonl", "images-string.jsonl",
                           "missing-text-tokens.jsonl", "mixed-microbatch.jsonl",
                           "negative-iteration.jsonl", "negative-tokens.jsonl",
                           "no-samples.jsonl", "not-object.jsonl", "unknown-field.jsonl",
                           "huge-video.jsonl"],
    "plugin-manifest": ["bad-version", "binary-absolute", "binary-dotdot",
                        "missing-id", "unknown-param-type", "unknown-role"],
    # every config of tests/bad-inputs/hf-config: loom refuses each (cases.tsv)
    "hf-config": ["downsample-string.json", "hidden-string.json", "internvl-unknown-llm.json",
                  "kv-heads-zero.json", "missing-model-type.json", "mlp-ratio-small.json",
                  "select-strategy.json", "sparse-step.json", "text-layers-fraction.json",
                  "text-unknown-type.json", "unknown-model-type.json",
                  "vision-config-array.json"],
}
BAD_FOLDERS = {"model": "model", "cluster": "cluster", "stage-times": "stage-times",
               "planner-manifest": "planner", "cost-table": "table",
               "workload-iteration": "workload", "plugin-manifest": "plugin-manifest",
               "hf-config": "hf-config"}


def check_bad_inputs(src, schemas):
    hf = os.path.join(src, "tests/bad-inputs/hf-config")
    for name in sorted(set(os.listdir(hf)) - set(BAD_INPUTS["hf-config"])):
        fail("tests/bad-inputs/hf-config/%s: not in BAD_INPUTS (every bad config must be "
             "refused by the schema too)" % name)
    with open(os.path.join(src, "tests/bad-inputs/cases.tsv"), encoding="utf-8") as f:
        cases = f.read()
    for name in BAD_INPUTS["hf-config"]:
        if "@BAD@/hf-config/%s\n" % name not in cases:
            fail("tests/bad-inputs/hf-config/%s: no case in cases.tsv (loom must refuse it "
                 "too)" % name)
    for schema, names in sorted(BAD_INPUTS.items()):
        for name in names:
            path = os.path.join(src, "tests/bad-inputs", BAD_FOLDERS[schema], name)
            if os.path.isdir(path):
                path = os.path.join(path, "manifest.json")
            label = os.path.relpath(path, src)
            if not os.path.exists(path):
                fail("%s: missing (update BAD_INPUTS)" % label)
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            lines = [l for l in text.splitlines() if l.strip()] if path.endswith(".jsonl") \
                else [text]
            rejected = False
            for line in lines:
                try:
                    doc = strict_loads(line, label)
                except ValueError:
                    fail("%s: not JSON, so no schema test (drop it from BAD_INPUTS)" % label)
                    rejected = True
                    break
                if errors_of(schemas[schema], doc):
                    rejected = True
            if not rejected:
                fail("%s: the %s schema accepts this bad input" % (label, schema))


# Members some model_type reads (docs/formats.md, "Hugging Face config.json").
HF_READ = ("model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
           "num_attention_heads", "num_key_value_heads", "vocab_size", "head_dim",
           "num_local_experts", "num_experts_per_tok", "image_size", "patch_size", "depth",
           "embed_dim", "num_heads", "mlp_ratio", "spatial_merge_size", "downsample_ratio",
           "force_image_size", "vision_feature_select_strategy", "vision_config",
           "text_config", "llm_config", "architectures")


def check_hf_mutations(src, loom, schemas):
    """Every member of every Hugging Face fixture (and of its sub-configs)
    that some model_type reads, set to a string and to 0: loom and the
    schema agree on whether the config is refused, and loom's refusal names
    the config."""
    with tempfile.TemporaryDirectory(prefix="loom-hf-") as tmp:
        path = os.path.join(tmp, "config.json")
        workload = os.path.join(tmp, "one.jsonl")  # one short sample keeps a plan quick
        with open(workload, "w", encoding="utf-8") as f:
            f.write('{"samples": [{"text_tokens": 128}]}\n')
        for fixture in sorted(glob.glob(os.path.join(src, "examples/models/hf/*.json"))):
            with open(fixture, encoding="utf-8") as f:
                base = json.load(f)
            subs = [None] + [k for k in ("vision_config", "text_config", "llm_config")
                             if isinstance(base.get(k), dict)]
            for sub in subs:
                for key in HF_READ:
                    if key not in (base[sub] if sub else base):
                        continue
                    for value in ("x", 0):
                        doc = json.loads(json.dumps(base))
                        (doc[sub] if sub else doc)[key] = value
                        with open(path, "w", encoding="utf-8") as f:
                            json.dump(doc, f)
                        p = subprocess.run([loom, "plan", "--model", path, "--parallel",
                                            "tp=1,pp=1,mb=1", "--workload", workload,
                                            "--quiet", "--memory-cap", "1e18"], cwd=tmp,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           universal_newlines=True,
                                           env=dict(os.environ, LOOM_PLUGIN_PATH=""))
                        refused = p.returncode == 2 and path + ":" in p.stderr
                        if p.returncode not in (0, 2) or (p.returncode == 2 and not refused):
                            fail("%s with %s = %r: loom exit %d: %s" % (
                                os.path.basename(fixture), key, value, p.returncode,
                                p.stderr.strip()[-300:]))
                            continue
                        if refused == bool(errors_of(schemas["hf-config"], doc)):
                            continue
                        fail("%s with %s%s = %r: loom %s it, the schema %s it" % (
                            os.path.basename(fixture), sub + "." if sub else "", key, value,
                            "refuses" if refused else "accepts",
                            "accepts" if refused else "refuses"))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_schemas.py SOURCE_DIR LOOM_BINARY")
    src, loom = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    schemas = load_schemas(src)
    expected = {"model", "cluster", "stage-times", "workload-iteration", "planner-manifest",
                "plugin-manifest", "ab-suite", "replan-job", "cost-table", "plan",
                "plan-metrics", "ab-report", "hf-config", "ab-shard", "replan-result", "cp-balance",
                "plugins-list", "plugin-inspect", "calibration-result", "calibrate-batch", "tune-shard"}
    for name in sorted(expected - set(schemas)):
        fail("docs/schemas/%s.schema.json: missing or invalid" % name)
    if FAILURES:
        return 1
    counts = {}
    check_examples(src, schemas, counts)
    check_outputs(src, loom, schemas, counts)
    check_bad_inputs(src, schemas)
    if "hf-config" in schemas:
        check_hf_mutations(src, loom, schemas)
    for name in sorted(expected - set(counts)):
        fail("%s: no document was validated against this schema" % name)
    for name in sorted(counts):
        print("%-20s %4d document(s)" % (name, counts[name]))
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        return 1
    print("every document matches its schema")
    return 0


if __name__ == "__main__":
    sys.exit(main())
