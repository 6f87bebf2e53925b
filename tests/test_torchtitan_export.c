/* test_torchtitan_export.c - torchtitan.toml as `loom plan --out` writes
 * it: the exact file of an LLM plan (pipelined, or on one rank with
 * gradient accumulation), its seq_len and activation
 * checkpointing (none, full, every N-th block), and every refusal with its
 * reason in plan.json's exports (and no file, a stale one removed) for
 * plans torchtitan 0.2.2 cannot build: VLMs, one rank whose microbatches
 * overlap, per-module layouts, stage-times problems, recomputation no setting states, and
 * precisions or tensor parallelism it does not run. The
 * consumer's own code checks the files in tools/checks/
 * check_torchtitan_exports.py. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"

/* The contents of `path` (malloc'd), or NULL when it does not exist. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* A fresh output folder name (static storage, one per call slot). */
static const char *out_dir(const char *tag)
{
    static char dirs[4][256];
    static int slot;
    char *d = dirs[slot++ % 4];
    snprintf(d, 256, "/tmp/loom-test-tt-%ld-%s", (long)getpid(), tag);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", d);
    ck_assert_int_eq(system(cmd), 0);
    return d;
}

/* Plans `args` with --iterations 1 into `dir`; fails the test unless
 * loom exits 0. */
static void plan_into(const char *dir, const char *args)
{
    char cmd[2048], *output = NULL;
    snprintf(cmd, sizeof cmd, "plan %s --iterations 1 --out %s", args, dir);
    int rc = loom_test_cli(cmd, &output);
    ck_assert_msg(rc == 0, "loom %s: exit %d\n%s", cmd, rc, output ? output : "");
    free(output);
}

/* plan.json's exports.torchtitan of the plan in `dir` (caller deletes
 * *doc). */
static const cJSON *torchtitan_export(const char *dir, cJSON **doc)
{
    char path[300];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    char *text = slurp(path);
    ck_assert_ptr_nonnull(text);
    *doc = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(*doc);
    const cJSON *x = cJSON_GetObjectItem(cJSON_GetObjectItem(*doc, "exports"), "torchtitan");
    ck_assert_ptr_nonnull(x);
    return x;
}

/* Asserts the plan in `dir` was refused with exactly `reason` and that no
 * torchtitan.toml lies there. */
static void expect_refused(const char *dir, const char *reason)
{
    cJSON *doc;
    const cJSON *x = torchtitan_export(dir, &doc);
    ck_assert_ptr_null(cJSON_GetObjectItem(x, "file"));
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(x, "reason")), reason);
    cJSON_Delete(doc);
    char path[300];
    snprintf(path, sizeof path, "%s/torchtitan.toml", dir);
    ck_assert_int_ne(access(path, F_OK), 0);
}

/* dp 2: torchtitan trains bf16 only under FSDP (precision_refusals), which
 * the plan must be priced with (cost_model.fsdp) */
#define LLAMA "--model %s --parallel tp=2,pp=4,dp=2,mb=8 --param cost_model.fsdp=true"

/* `extra` with FSDP2's pricing unless it sets cost_model.fsdp itself, in
 * buf. */
static const char *with_fsdp(char *buf, size_t size, const char *extra)
{
    snprintf(buf, size, "%s%s", strstr(extra, "cost_model.fsdp") ? ""
                                : "--param cost_model.fsdp=true ", extra);
    return buf;
}

/* seq_len: the longest microbatch holds 8117 text tokens (megatron.args
 * gives --seq-length 8118, a multiple of tp 2), rounded up to a multiple
 * of torchtitan's seq_len_divisor tp x 2 cp = 4. */
START_TEST(llm_plan_file_is_exact)
{
    const char *dir = out_dir("llm");
    char args[1024];
    snprintf(args, sizeof args, "--manifest %s " LLAMA,
             loom_test_src("examples/manifests/megatron-1f1b.json"),
             loom_test_src("examples/models/hf/llama-3-8b.json"));
    plan_into(dir, args);
    char path[300];
    snprintf(path, sizeof path, "%s/torchtitan.toml", dir);
    char *toml = slurp(path);
    ck_assert_ptr_nonnull(toml);
    ck_assert_str_eq(
        toml,
        "# torchtitan 0.2.2 job config for the Loom plan \"uniform pp=4 vpp=1\"\n"
        "# Pass it with --job.config_file, or copy its tables into your job config.\n"
        "# pipeline_parallel_schedule_csv is relative to the directory torchtitan runs in.\n"
        "[parallelism]\n"
        "pipeline_parallel_degree = 4\n"
        "pipeline_parallel_schedule = \"1F1B\"\n"
        "pipeline_parallel_schedule_csv = \"schedule.csv\"\n"
        "pipeline_parallel_microbatch_size = 1\n"
        "module_fqns_per_model_part = [\n"
        "  [\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\", \"layers.3\", "
        "\"layers.4\", \"layers.5\", \"layers.6\", \"layers.7\"],\n"
        "  [\"layers.8\", \"layers.9\", \"layers.10\", \"layers.11\", \"layers.12\", "
        "\"layers.13\", \"layers.14\", \"layers.15\"],\n"
        "  [\"layers.16\", \"layers.17\", \"layers.18\", \"layers.19\", \"layers.20\", "
        "\"layers.21\", \"layers.22\", \"layers.23\"],\n"
        "  [\"layers.24\", \"layers.25\", \"layers.26\", \"layers.27\", \"layers.28\", "
        "\"layers.29\", \"layers.30\", \"layers.31\", \"norm\", \"output\"],\n"
        "]\n"
        "tensor_parallel_degree = 2\n"
        "context_parallel_degree = 1\n"
        "data_parallel_shard_degree = 2\n"
        "\n"
        "[training]\n"
        "local_batch_size = 8\n"
        "seq_len = 8120\n"
        "mixed_precision_param = \"bfloat16\"\n"
        "\n"
        "[compile]\n"
        "enable = true\n"
        "components = [\"model\", \"loss\"]\n"
        "\n"
        "[activation_checkpoint]\n"
        "mode = \"none\"\n");
    free(toml);
    cJSON *doc;
    const cJSON *x = torchtitan_export(dir, &doc);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(x, "file")), "torchtitan.toml");
    cJSON_Delete(doc);
    loom_test_rmdir(dir);
}
END_TEST

/* The torchtitan.toml of `manifest`'s plan of Llama 3 8B with `extra`
 * (malloc'd), or NULL when none was written. */
static char *toml_with(const char *manifest, const char *tag, const char *extra)
{
    const char *dir = out_dir(tag);
    char args[1024];
    snprintf(args, sizeof args, "--manifest %s --model %s %s",
             loom_test_src(manifest), loom_test_src("examples/models/hf/llama-3-8b.json"),
             extra);
    plan_into(dir, args);
    char path[300];
    snprintf(path, sizeof path, "%s/torchtitan.toml", dir);
    char *toml = slurp(path);
    loom_test_rmdir(dir);
    return toml;
}

/* toml_with megatron-1f1b's manifest, priced with FSDP2 (with_fsdp). */
static char *toml_of(const char *tag, const char *extra)
{
    char buf[768];
    return toml_with("examples/manifests/megatron-1f1b.json", tag,
                     with_fsdp(buf, sizeof buf, extra));
}

/* The [activation_checkpoint] table of toml_of(tag, LLAMA's parallel
 * config and `tuner_args`) (malloc'd). */
static char *ac_table(const char *tag, const char *tuner_args)
{
    char extra[512];
    snprintf(extra, sizeof extra, "--parallel tp=2,pp=4,dp=2,mb=8 %s", tuner_args);
    char *toml = toml_of(tag, extra);
    ck_assert_ptr_nonnull(toml);
    const char *at = strstr(toml, "[activation_checkpoint]");
    ck_assert_ptr_nonnull(at);
    char *table = strdup(at);
    free(toml);
    return table;
}

START_TEST(recomputation_is_the_checkpoint_mode)
{
    /* torchtitan's own default (selective, every second block) would
     * checkpoint blocks the plan never priced: the table is always there */
    char *none = ac_table("ac-none", "");
    ck_assert_str_eq(none, "[activation_checkpoint]\nmode = \"none\"\n");
    free(none);
    char *full = ac_table("ac-full", "--use memory_tuner=full-recompute");
    ck_assert_str_eq(full, "[activation_checkpoint]\nmode = \"full\"\n");
    free(full);
    /* torchtitan-recompute at 30 GiB checkpoints the 8th block of each
     * rank's 8 (FSDP2 under PP keeps whole gradients beside the shards) */
    char *every8 = ac_table("ac-8", "--use memory_tuner=torchtitan-recompute "
                                    "--memory-cap 30GiB");
    ck_assert_str_eq(every8, "[activation_checkpoint]\nmode = \"selective\"\n"
                             "selective_ac_option = \"8\"\n");
    free(every8);
}
END_TEST

START_TEST(seq_len_is_a_multiple_of_torchtitans_divisor)
{
    /* the same 8117-token longest microbatch; at cp 2 the divisor is
     * tp 2 x 2 cp 2 = 8 (parallelize_llama asserts it), and 8120 is its
     * first multiple from 8117 */
    char *toml = toml_of("seq-cp", "--parallel tp=2,cp=2,pp=4,dp=1,mb=8");
    ck_assert_ptr_nonnull(toml);
    loom_test_has(toml, "context_parallel_degree = 2\n");
    loom_test_has(toml, "local_batch_size = 8\nseq_len = 8120\n");
    free(toml);
    /* two sequences a microbatch: their tokens give no one sequence's
     * length, which stays the user's (as megatron.args's --seq-length) */
    toml = toml_of("seq-k2", "--parallel tp=2,pp=4,dp=2,mb=8 --micro-batch-size 2");
    ck_assert_ptr_nonnull(toml);
    loom_test_has(toml, "local_batch_size = 16\nmixed_precision_param = \"bfloat16\"\n\n"
                        "[compile]");
    ck_assert_ptr_null(strstr(toml, "seq_len"));
    free(toml);
}
END_TEST

START_TEST(recomputation_of_some_layers_is_refused)
{
    const char *dir = out_dir("ac-some");
    char args[1024];
    snprintf(args, sizeof args, "--manifest %s " LLAMA " --memory-cap 26GiB",
             loom_test_src("examples/manifests/megatron-tuned.json"),
             loom_test_src("examples/models/hf/llama-3-8b.json"));
    plan_into(dir, args);
    /* megatron-tuned's block recomputation: the first 4 of each stage's 8 layers */
    expect_refused(dir, "16 of 32 layers run full recomputation and the others none, not on "
                        "every N-th block each rank builds; torchtitan 0.2.2 checkpoints every "
                        "block (mode full), none, or the j-th block a rank builds when j mod N "
                        "= 0 (selective_ac_option N, the torchtitan-recompute tuner's settings)");
    loom_test_rmdir(dir);
}
END_TEST

START_TEST(selective_recomputation_is_refused)
{
    const char *dir = out_dir("ac-sel");
    char args[1024];
    snprintf(args, sizeof args, "--manifest %s " LLAMA " --use memory_tuner=megatron-recompute "
             "--param cost_model.flash_attention=false --memory-cap 44GiB",
             loom_test_src("examples/manifests/megatron-1f1b.json"),
             loom_test_src("examples/models/hf/llama-3-8b.json"));
    plan_into(dir, args);
    expect_refused(dir, "32 of 32 layers run selective recomputation (the attention core); "
                        "torchtitan 0.2.2's selective modes checkpoint whole blocks or save "
                        "operators by its 'op' policy, never the attention core alone");
    loom_test_rmdir(dir);
}
END_TEST

/* The reason plan.json gives for megatron-1f1b's plan of Llama 3 8B at
 * `parallel` with `extra` (malloc'd), or NULL when torchtitan.toml was
 * written. */
static char *refusal_of(const char *tag, const char *parallel, const char *extra)
{
    const char *dir = out_dir(tag);
    char args[1024], buf[768];
    snprintf(args, sizeof args, "--manifest %s --model %s --parallel %s %s",
             loom_test_src("examples/manifests/megatron-1f1b.json"),
             loom_test_src("examples/models/hf/llama-3-8b.json"), parallel,
             with_fsdp(buf, sizeof buf, extra));
    plan_into(dir, args);
    cJSON *doc;
    const cJSON *x = torchtitan_export(dir, &doc);
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(x, "reason"));
    char *copy = why ? strdup(why) : NULL;
    cJSON_Delete(doc);
    loom_test_rmdir(dir);
    return copy;
}

/* torchtitan 0.2.2 trains bf16 over float32 weights through FSDP alone
 * (dp shard or cp above 1; maybe_enable_amp runs float32 under TP or PP
 * without it), float32 with fp32 matmuls anywhere, and always pairs TP
 * with sequence parallelism. */
START_TEST(precision_refusals)
{
    char *why = refusal_of("bf16-dp1", "tp=2,pp=4,dp=1,mb=8", "");
    ck_assert_str_eq(why, "the plan is priced in bf16 at data-parallel degree 1 and cp 1; "
                          "torchtitan 0.2.2 trains mixed precision only through FSDP "
                          "(data-parallel shard degree or cp above 1) and otherwise, under "
                          "pipeline parallelism, in float32");
    free(why);
    /* one GPU runs under autocast over float32 weights and gradients */
    why = refusal_of("bf16-1gpu", "tp=1,pp=1,dp=1,mb=2", "--memory-cap 1e15");
    ck_assert_str_eq(why, "the plan is priced in bf16 on one GPU; torchtitan 0.2.2 trains one "
                          "GPU under autocast over float32 weights and gradients "
                          "(maybe_enable_amp), which keeps other memory than the plan prices");
    free(why);
    /* cp 2 turns FSDP on at dp 1 */
    ck_assert_ptr_null(refusal_of("bf16-cp2", "tp=2,cp=2,pp=4,dp=1,mb=8", ""));
    /* FSDP2 keeps other memory and gathers every layer: a plan priced with
     * Megatron-LM's distributed optimizer is not what torchtitan runs */
    static const char dist_opt[] =
        "the plan is priced with Megatron-LM's distributed optimizer, whole weights and "
        "gradients on every data-parallel replica; torchtitan 0.2.2 shards them with FSDP2 "
        "over the data-parallel shard degree and cp, which keeps other memory and gathers "
        "every layer's weights (plan with cost_model.fsdp=true, as "
        "examples/manifests/torchtitan-tuned.json does)";
    why = refusal_of("dist-opt", "tp=2,pp=4,dp=2,mb=8", "--param cost_model.fsdp=false");
    ck_assert_str_eq(why, dist_opt);
    free(why);
    why = refusal_of("dist-opt-cp2", "tp=2,cp=2,pp=4,dp=1,mb=8", "--param cost_model.fsdp=false");
    ck_assert_str_eq(why, dist_opt);
    free(why);
    /* Megatron-FSDP keeps a bf16 weight shard FSDP2 does not */
    why = refusal_of("mfsdp", "tp=2,pp=1,dp=4,mb=8", "--param cost_model.fsdp=true "
                     "--param cost_model.fsdp_implementation=megatron-fsdp");
    ck_assert_str_eq(why, "the plan is priced with Megatron-FSDP's memory, a weight shard in "
                          "element precision beside the fp32 one; torchtitan 0.2.2's FSDP2 "
                          "keeps the fp32 shard alone (plan with "
                          "cost_model.fsdp_implementation=fsdp2)");
    free(why);
    why = refusal_of("tf32", "tp=2,pp=4,dp=2,mb=8",
                     "--param cost_model.element_bytes=4 --param cost_model.matmul_precision=tf32 "
                     "--memory-cap 1e15");
    ck_assert_str_eq(why, "the plan is priced with 4-byte elements and tf32 matmuls; torchtitan "
                          "0.2.2 trains bf16 (with float8 GEMMs or not) over float32 weights "
                          "under FSDP, or float32 with fp32 matmuls; it never enables TF32 and "
                          "has no fp16 mixed precision");
    free(why);
    why = refusal_of("fp16", "tp=2,pp=4,dp=2,mb=8", "--param cost_model.matmul_precision=fp16");
    loom_test_has(why, "priced with 2-byte elements and fp16 matmuls; torchtitan 0.2.2");
    free(why);
    why = refusal_of("fp8-dp1", "tp=2,pp=4,dp=1,mb=8", "--param cost_model.matmul_precision=fp8");
    loom_test_has(why, "the plan is priced in fp8 at data-parallel degree 1 and cp 1;");
    free(why);
    why = refusal_of("no-sp", "tp=2,pp=4,dp=2,mb=8", "--param cost_model.sequence_parallel=false");
    ck_assert_str_eq(why, "the plan is priced with tensor parallelism without sequence "
                          "parallelism; torchtitan 0.2.2's tensor parallelism always shards "
                          "the norms and activations along the sequence (plan with "
                          "cost_model.sequence_parallel=true)");
    free(why);
    why = refusal_of("eager", "tp=2,pp=4,dp=2,mb=8", "--param cost_model.flash_attention=false "
                     "--param cost_model.layer_kernels=hf-gpt2 --memory-cap 1e15");
    ck_assert_str_eq(why, "the plan is priced with Hugging Face transformers' eager layers "
                          "(cost_model.layer_kernels); torchtitan 0.2.2 runs its own Llama "
                          "blocks");
    free(why);
    why = refusal_of("unfused", "tp=2,pp=4,dp=2,mb=8", "--param cost_model.flash_attention=false "
                     "--memory-cap 1e15");
    ck_assert_str_eq(why, "the plan is priced with the attention core unfused (scores in HBM); "
                          "torchtitan 0.2.2's Llama runs scaled_dot_product_attention, a fused "
                          "kernel (plan with cost_model.flash_attention=true)");
    free(why);
    why = refusal_of("grad-bf16", "tp=2,pp=4,dp=2,mb=8",
                     "--param cost_model.grad_accumulation_fp32=false");
    ck_assert_str_eq(why, "the plan is priced with the gradients reduced in bf16; torchtitan "
                          "0.2.2 reduces them in float32 (mixed_precision_reduce)");
    free(why);
    /* without TP sequence parallelism does not arise */
    ck_assert_ptr_null(refusal_of("no-sp-tp1", "tp=1,pp=4,dp=2,mb=8",
                                  "--param cost_model.sequence_parallel=false --memory-cap 1e15"));
}
END_TEST

/* fp8 GEMMs: torchtitan's float8 converter on every Linear but the LM
 * head, tensorwise (no recipe_name), over bf16 through FSDP */
START_TEST(fp8_plans_convert_the_linears)
{
    char *toml = toml_of("fp8", "--parallel tp=2,pp=4,dp=2,mb=8 "
                                "--param cost_model.matmul_precision=fp8");
    ck_assert_ptr_nonnull(toml);
    loom_test_has(toml, "mixed_precision_param = \"bfloat16\"\n");
    loom_test_has(toml, "mode = \"none\"\n\n[model]\nconverters = [\"quantize.linear.float8\"]\n"
                        "\n[quantize.linear.float8]\nfilter_fqns = [\"output\"]\n");
    ck_assert_ptr_null(strstr(toml, "recipe_name"));
    free(toml);
    /* bf16 plans get no converter */
    toml = toml_of("bf16", "--parallel tp=2,pp=4,dp=2,mb=8");
    ck_assert_ptr_nonnull(toml);
    ck_assert_ptr_null(strstr(toml, "converters"));
    free(toml);
}
END_TEST

/* The TP overlap the plan priced is torchtitan's async TP, which needs the
 * compiled model the file always asks for (roofline's fused kernels) */
START_TEST(tp_overlap_is_async_tp)
{
    char *toml = toml_of("async", "--parallel tp=2,pp=4,dp=2,mb=8 "
                                  "--param cost_model.tp_comm_overlap=true");
    ck_assert_ptr_nonnull(toml);
    loom_test_has(toml, "tensor_parallel_degree = 2\nenable_async_tensor_parallel = true\n");
    loom_test_has(toml, "[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n");
    free(toml);
    /* without TP there is nothing to overlap */
    toml = toml_of("async-tp1", "--parallel tp=1,pp=4,dp=2,mb=8 --memory-cap 1e15 "
                                "--param cost_model.tp_comm_overlap=true");
    ck_assert_ptr_nonnull(toml);
    ck_assert_ptr_null(strstr(toml, "async"));
    free(toml);
}
END_TEST

/* fp32 weights with fp32 matmuls are what torchtitan runs without FSDP:
 * the file says float32 */
START_TEST(fp32_plans_state_float32)
{
    char *toml = toml_of("fp32", "--parallel tp=2,pp=4,dp=1,mb=8 --param cost_model.element_bytes=4 "
                                 "--param cost_model.matmul_precision=fp32 --memory-cap 1e15");
    ck_assert_ptr_nonnull(toml);
    loom_test_has(toml, "data_parallel_shard_degree = 1\n");
    loom_test_has(toml, "mixed_precision_param = \"float32\"\n");
    free(toml);
}
END_TEST

/* Without pipeline parallelism torchtitan runs the whole model with FSDP
 * and accumulates gradients over the microbatches (train.py): the file
 * states no pipeline and a global batch of microbatches x dp local
 * batches. A one-rank plan whose microbatches overlap (virtual stages on
 * the rank) is refused. */
START_TEST(one_rank_plans_accumulate_gradients)
{
    char *toml = toml_with("examples/manifests/torchtitan-tuned.json", "p1",
                           "--parallel tp=1,pp=1,dp=8,mb=4 "
                           "--param partitioner[0].vpp_sweep=false "
                           "--param partitioner[1].vpp_sweep=false");
    ck_assert_ptr_nonnull(toml);
    loom_test_has(toml, "[parallelism]\npipeline_parallel_degree = 1\n"
                        "tensor_parallel_degree = 1\ncontext_parallel_degree = 1\n"
                        "data_parallel_shard_degree = 8\n");
    loom_test_has(toml, "[training]\nlocal_batch_size = 1\nglobal_batch_size = 32\n");
    loom_test_has(toml, "mixed_precision_param = \"bfloat16\"\n");
    ck_assert_ptr_null(strstr(toml, "pipeline_parallel_schedule"));
    ck_assert_ptr_null(strstr(toml, "module_fqns_per_model_part"));
    free(toml);
    /* plan.json's placement, the summary and the report say the same, two
     * sequences a microbatch here */
    const char *one = out_dir("p1k2");
    char args1[1024];
    snprintf(args1, sizeof args1, "--manifest %s --model %s --parallel tp=1,pp=1,dp=8,mb=4 "
             "--micro-batch-size 2 --param partitioner[0].vpp_sweep=false "
             "--param partitioner[1].vpp_sweep=false",
             loom_test_src("examples/manifests/torchtitan-tuned.json"),
             loom_test_src("examples/models/hf/llama-3-8b.json"));
    plan_into(one, args1);
    static const struct { const char *file, *has; } said[] = {
        {"plan.json", "\"torchtitan\": {\"pipeline_parallel_degree\": 1, "
                      "\"local_batch_size\": 2, \"global_batch_size\": 64}}"},
        {"summary.txt", "  torchtitan    no pipeline: the whole model on one rank, 4 "
                        "microbatches a step\n"},
        {"report.html", "no pipeline: the whole model on one rank, 4 microbatches a step"},
    };
    for (size_t k = 0; k < sizeof said / sizeof said[0]; k++) {
        char path[300];
        snprintf(path, sizeof path, "%s/%s", one, said[k].file);
        char *text = slurp(path);
        ck_assert_ptr_nonnull(text);
        loom_test_has(text, said[k].has);
        free(text);
    }
    loom_test_rmdir(one);
    const char *dir = out_dir("p1v");
    char args[1024];
    snprintf(args, sizeof args, "--manifest %s --model %s --parallel tp=1,pp=1,dp=8,mb=4",
             loom_test_src("examples/manifests/torchtitan-tuned.json"),
             loom_test_src("examples/models/hf/llama-3-8b.json"));
    plan_into(dir, args);
    expect_refused(dir, "the plan's one rank runs microbatch 1 before microbatch 0's backward "
                        "has ended; torchtitan 0.2.2 without pipeline parallelism runs one "
                        "microbatch's forward and backward at a time (gradient accumulation; "
                        "plan with vpp 1)");
    loom_test_rmdir(dir);
}
END_TEST

START_TEST(vlm_is_refused_and_stale_file_removed)
{
    /* a file from an earlier plan in the same folder must not survive */
    const char *dir = out_dir("stale");
    char args[1024];
    snprintf(args, sizeof args, "--manifest %s " LLAMA,
             loom_test_src("examples/manifests/megatron-1f1b.json"),
             loom_test_src("examples/models/hf/llama-3-8b.json"));
    plan_into(dir, args);
    snprintf(args, sizeof args, "--manifest %s --model vlm-s --parallel tp=2,pp=4,mb=8",
             loom_test_src("examples/manifests/megatron-1f1b.json"));
    plan_into(dir, args);
    expect_refused(dir, "module vit is not a language model: torchtitan 0.2.2 pipelines "
                        "language models only (its VLM experiment has no pipelining function)");
    loom_test_rmdir(dir);
}
END_TEST

START_TEST(module_layouts_are_refused)
{
    const char *dir = out_dir("layouts");
    char args[1024];
    snprintf(args, sizeof args,
             "--manifest %s --param partitioner.mode=given --model %s --parallel %s "
             "--workload %s --memory-cap 1e15",
             loom_test_src("examples/manifests/hetero.json"),
             loom_test_src("examples/models/vlm-s.json"),
             loom_test_src("tools/executor/tests/two-layouts.json"),
             loom_test_src("tools/executor/tests/vlm.jsonl"));
    plan_into(dir, args);
    cJSON *doc;
    const cJSON *x = torchtitan_export(dir, &doc);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(x, "reason")),
                     "module vit has a layout of its own (tp 1, pp 2, dp 1): torchtitan runs "
                     "every module on one mesh");
    cJSON_Delete(doc);
    /* the summary says the same (plan.json's placement style stays the
     * stage map's, which PyTorch's runtime runs) */
    char path[512];
    char *text;
    snprintf(path, sizeof path, "%s/summary.txt", dir);
    text = loom_test_slurp(path);
    loom_test_has(text, "torchtitan    none runs it: module vit has a layout of its own");
    free(text);
    loom_test_rmdir(dir);
}
END_TEST

START_TEST(stage_times_plans_are_refused)
{
    const char *dir = out_dir("st");
    char args[1024];
    snprintf(args, sizeof args, "--stage-times %s --use interleaver=1f1b",
             loom_test_src("examples/stage-times/oracle-1f1b.json"));
    plan_into(dir, args);
    expect_refused(dir, "a stage-times problem has no model modules to name");
    loom_test_rmdir(dir);
}
END_TEST

static Suite *torchtitan_suite(void)
{
    Suite *s = suite_create("torchtitan_export");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, llm_plan_file_is_exact);
    tcase_add_test(tc, seq_len_is_a_multiple_of_torchtitans_divisor);
    tcase_add_test(tc, recomputation_is_the_checkpoint_mode);
    tcase_add_test(tc, recomputation_of_some_layers_is_refused);
    tcase_add_test(tc, selective_recomputation_is_refused);
    tcase_add_test(tc, precision_refusals);
    tcase_add_test(tc, fp32_plans_state_float32);
    tcase_add_test(tc, fp8_plans_convert_the_linears);
    tcase_add_test(tc, tp_overlap_is_async_tp);
    tcase_add_test(tc, one_rank_plans_accumulate_gradients);
    tcase_add_test(tc, vlm_is_refused_and_stale_file_removed);
    tcase_add_test(tc, module_layouts_are_refused);
    tcase_add_test(tc, stage_times_plans_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(torchtitan_suite());
}
