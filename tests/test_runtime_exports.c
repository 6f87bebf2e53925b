/* test_runtime_exports.c - megatron.args and mimo.json on real plans: the
 * exact arguments of a small LLM plan, the recompute flags the layers'
 * policies give (block, uniform, selective) and the mixes Megatron-LM
 * cannot state, the refusal of a multimodal plan (the writer, plan.json's
 * exports and the output set agree), the exact mimo.json of a two-layout
 * plan and the refusal of a colocated module; a sharded plan on one rank
 * as Megatron-FSDP. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include "output.h"
#include <loom/sys/session.h>
#include "run_priv.h"

/* A small Llama-style HF config: 8 layers, hidden 256, 8 heads in 4 groups. */
static const char tiny_llm[] =
    "{\"_name_or_path\": \"tiny-llm\", \"architectures\": [\"LlamaForCausalLM\"], "
    "\"model_type\": \"llama\", \"hidden_size\": 256, \"intermediate_size\": 1024, "
    "\"num_hidden_layers\": 8, \"num_attention_heads\": 8, \"num_key_value_heads\": 4, "
    "\"vocab_size\": 1000, \"hidden_act\": \"silu\", \"max_position_embeddings\": 4096, "
    "\"torch_dtype\": \"bfloat16\"}\n";

/* Four packed microbatches; the longest holds 1501 text tokens. */
static const char tiny_workload[] =
    "{\"iteration\": 0, \"samples\": [{\"text_tokens\": 1000, \"microbatch\": 0}, "
    "{\"text_tokens\": 400, \"microbatch\": 0}, {\"text_tokens\": 1501, \"microbatch\": 1}, "
    "{\"text_tokens\": 300, \"microbatch\": 2}, {\"text_tokens\": 700, \"microbatch\": 3}]}\n";

/* Plans iteration 0 with `manifest` (source-relative), model, --parallel,
 * workload and --param settings (NULL-terminated) into *plan. */
static void plan_one(loom_session *s, loom_plan *plan, const char *manifest, const char *model,
                     const char *parallel, const char *workload, const char *const *params)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = loom_test_src(manifest);
    a.model = model;
    a.parallel = parallel;
    a.workload = workload;
    a.iterations = 1;
    for (int i = 0; params && params[i]; i++)
        a.params[a.n_params++] = params[i];
    loom_error err = {0, ""};
    ck_assert_msg(loom_session_init(s, &a, &err) == LOOM_OK, "%s", err.message);
    memset(plan, 0, sizeof *plan);
    ck_assert_msg(loom_session_plan(s, 0, plan, &err) == LOOM_OK, "%s", err.message);
}

/* The tiny LLM on tp 2, pp 2, dp 2, 4 microbatches under megatron-1f1b. */
static void tiny_plan(loom_session *s, loom_plan *plan)
{
    char model[4096], workload[4096];
    snprintf(model, sizeof model, "%s", loom_test_tmpfile(".json", tiny_llm));
    snprintf(workload, sizeof workload, "%s", loom_test_tmpfile(".jsonl", tiny_workload));
    plan_one(s, plan, "examples/manifests/megatron-1f1b.json", model, "tp=2,pp=2,dp=2,mb=4",
             workload, NULL);
}

/* What `write` writes for the plan (caller frees), its status in *rc and
 * the error message in err. */
static char *render(int (*write)(const loom_plan *, FILE *, loom_error *), const loom_plan *plan,
                    int *rc, loom_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    *rc = write(plan, f, err);
    fclose(f);
    return buf;
}

/* Sets the policies of every layer entry of every pair whose forward is
 * at position `pos` (-1: every position) to pol[0..], pol[i] for layer i. */
static void set_policies(loom_plan *plan, int32_t pos, const uint8_t *pol)
{
    loom_stage_graph *g = plan->graph;
    for (int32_t q = 0; q < g->n_pairs; q++) {
        if (pos >= 0 && g->position[g->pair_forward[q]] != pos)
            continue;
        for (int32_t i = g->pair_layer_off[q]; i < g->pair_layer_off[q + 1]; i++)
            g->layer_policy[i] = pol[i - g->pair_layer_off[q]];
    }
}

/* The fits check's verdict and reason. */
static int megatron_fits(const loom_plan *plan, char *reason)
{
    int fits = -1;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_out_megatron_args_fits(plan, &fits, reason, &err), LOOM_OK);
    return fits;
}

START_TEST(megatron_args_small_llm)
{
    loom_session s;
    loom_plan plan;
    tiny_plan(&s, &plan);
    int rc;
    loom_error err = {0, ""};
    char *text = render(loom_write_megatron_args, &plan, &rc, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    /* 1501 tokens round up to a multiple of tp 2 (sequence parallelism);
     * global batch 4 microbatches x dp 2; an even split of 4 layers a
     * stage needs no layout; roofline's defaults: bf16, distributed
     * optimizer, overlapped gradient reduce, sequence parallelism */
    ck_assert_str_eq(text,
                     "# Megatron-LM arguments for plan \"uniform pp=2 vpp=1\" (megatron-core "
                     "0.16.1); pass them with set -f (the layout holds '*'): pretrain_gpt.py "
                     "$(grep -v '^#' megatron.args)\n"
                     "--tensor-model-parallel-size 2\n"
                     "--pipeline-model-parallel-size 2\n"
                     "--context-parallel-size 1\n"
                     "--num-layers 8\n"
                     "--hidden-size 256\n"
                     "--ffn-hidden-size 1024\n"
                     "--num-attention-heads 8\n"
                     "--group-query-attention\n"
                     "--num-query-groups 4\n"
                     "--swiglu\n"
                     "--seq-length 1502\n"
                     "--max-position-embeddings 1502\n"
                     "--micro-batch-size 1\n"
                     "--global-batch-size 8\n"
                     "--bf16\n"
                     "--sequence-parallel\n"
                     "--use-distributed-optimizer\n"
                     "--overlap-grad-reduce\n");
    free(text);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

/* A plan priced with sharded weights as Megatron-FSDP keeps them
 * (cost_model.fsdp, fsdp_implementation megatron-fsdp) on one pipeline
 * rank runs as Megatron-FSDP: the flags Megatron-LM's user guide and
 * validate_args require, both collectives overlapped whatever the
 * roofline's overlap params say (optim_grads_params overlaps them). */
START_TEST(megatron_args_fsdp_one_rank)
{
    char model[4096], workload[4096];
    snprintf(model, sizeof model, "%s", loom_test_tmpfile(".json", tiny_llm));
    snprintf(workload, sizeof workload, "%s", loom_test_tmpfile(".jsonl", tiny_workload));
    static const char *const params[] = {"cost_model.fsdp=true",
                                         "cost_model.fsdp_implementation=megatron-fsdp",
                                         "cost_model.overlap_grad_reduce=false", NULL};
    loom_session s;
    loom_plan plan;
    plan_one(&s, &plan, "examples/manifests/megatron-1f1b.json", model, "tp=2,pp=1,dp=2,mb=4",
             workload, params);
    ck_assert(plan.graph->assumed & LOOM_ASSUMED_SHARDED_PARAMS);
    int rc;
    loom_error err = {0, ""};
    char *text = render(loom_write_megatron_args, &plan, &rc, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    loom_test_has(text, "(the layout holds '*'): pretrain_gpt.py $(grep -v '^#' megatron.args)\n"
                        "# Megatron-FSDP: leave CUDA_DEVICE_MAX_CONNECTIONS unset (Megatron-LM's "
                        "validate_args refuses 1)\n--tensor-model-parallel-size 2\n"
                        "--pipeline-model-parallel-size 1\n");
    loom_test_has(text, "--global-batch-size 8\n--bf16\n--sequence-parallel\n"
                        "--use-megatron-fsdp\n"
                        "--data-parallel-sharding-strategy optim_grads_params\n"
                        "--no-gradient-accumulation-fusion\n--ckpt-format fsdp_dtensor\n"
                        "--use-distributed-optimizer\n--overlap-grad-reduce\n"
                        "--overlap-param-gather\n");
    ck_assert_ptr_null(strstr(text, "--overlap-param-gather\n-"));
    free(text);
    /* priced with FSDP2's memory, which Megatron-FSDP does not keep */
    plan.graph->assumed &= ~LOOM_ASSUMED_MEGATRON_FSDP;
    char reason[LOOM_OUT_REASON_MAX];
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    ck_assert_str_eq(reason, "the plan is priced with PyTorch FSDP2's memory, whose fp32 weight "
                             "shard is the only copy; Megatron-FSDP keeps a shard in element "
                             "precision beside it (plan with "
                             "cost_model.fsdp_implementation=megatron-fsdp)");
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

START_TEST(megatron_args_recompute_flags)
{
    loom_session s;
    loom_plan plan;
    tiny_plan(&s, &plan);
    const uint8_t N = LOOM_POLICY_NONE, S = LOOM_POLICY_SELECTIVE, F = LOOM_POLICY_FULL;
    int rc;
    loom_error err = {0, ""};
    char reason[LOOM_OUT_REASON_MAX];
    /* every chunk: full on its first 3 of 4 layers: block, 3 layers */
    set_policies(&plan, -1, (const uint8_t[]){F, F, F, N});
    char *text = render(loom_write_megatron_args, &plan, &rc, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    ck_assert_ptr_nonnull(strstr(text, "\n--recompute-granularity full\n--recompute-method block\n"
                                       "--recompute-num-layers 3\n"));
    free(text);
    /* every layer full: uniform, one layer a unit */
    set_policies(&plan, -1, (const uint8_t[]){F, F, F, F});
    text = render(loom_write_megatron_args, &plan, &rc, &err);
    ck_assert_ptr_nonnull(strstr(text, "\n--recompute-granularity full\n--recompute-method "
                                       "uniform\n--recompute-num-layers 1\n"));
    free(text);
    /* every layer selective: granularity only */
    set_policies(&plan, -1, (const uint8_t[]){S, S, S, S});
    text = render(loom_write_megatron_args, &plan, &rc, &err);
    ck_assert_ptr_nonnull(strstr(text, "\n--recompute-granularity selective\n"));
    ck_assert_ptr_null(strstr(text, "--recompute-method"));
    free(text);
    /* chunks recomputing different leading counts: no block setting */
    set_policies(&plan, 0, (const uint8_t[]){F, F, F, N});
    set_policies(&plan, 1, (const uint8_t[]){F, F, N, N});
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    ck_assert_str_eq(reason, "stage 1 runs full recomputation on its first 2 of 4 layers and "
                             "another stage on its first 3; Megatron-LM's block method "
                             "(--recompute-method block) recomputes the first "
                             "--recompute-num-layers layers of every model chunk, the uniform "
                             "method every layer");
    text = render(loom_write_megatron_args, &plan, &rc, &err);
    ck_assert_int_eq(rc, LOOM_EINVAL);
    ck_assert_str_eq(text, "");
    ck_assert_ptr_nonnull(strstr(err.message, "megatron.args: not written: stage 1 runs full"));
    free(text);
    /* selective on some layers only */
    set_policies(&plan, -1, (const uint8_t[]){S, S, N, N});
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    ck_assert_str_eq(reason, "4 of 8 layers run selective recomputation and the others not; "
                             "Megatron-LM's --recompute-granularity selective applies to every "
                             "layer");
    /* one microbatch recomputing what another does not */
    set_policies(&plan, -1, (const uint8_t[]){N, N, N, N});
    loom_stage_graph *g = plan.graph;
    for (int32_t q = 0; q < g->n_pairs; q++)
        if (g->microbatch[g->pair_forward[q]] == 1 && g->position[g->pair_forward[q]] == 0)
            g->layer_policy[g->pair_layer_off[q]] = F;
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    ck_assert_str_eq(reason, "stage 0 (microbatch 1) runs other memory policies than "
                             "microbatch 0 on stage 0's layers; Megatron-LM recomputes the same "
                             "layers for every microbatch");
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

/* The precision the cost model priced becomes Megatron-LM's flags: bf16,
 * fp16, fp8 GEMMs under bf16 (Transformer Engine's hybrid format, current
 * scaling, as the roofline prices them), fp32 by default; what Megatron-LM
 * does not run is refused with the reason. */
START_TEST(megatron_args_precision_flags)
{
    loom_session s;
    loom_plan plan;
    tiny_plan(&s, &plan);
    loom_stage_graph *g = plan.graph;
    const uint32_t base = g->assumed & ~(LOOM_ASSUMED_ELEMENTS_FP32 | LOOM_ASSUMED_MATMUL_FP16 |
                                         LOOM_ASSUMED_MATMUL_TF32 | LOOM_ASSUMED_MATMUL_FP32 |
                                         LOOM_ASSUMED_MATMUL_FP8);
    ck_assert(base & LOOM_ASSUMED_PRECISION);
    struct { uint32_t bits; const char *flags; } ok[] = {
        {0, "--global-batch-size 8\n--bf16\n--sequence-parallel\n"},
        {LOOM_ASSUMED_MATMUL_FP16, "--global-batch-size 8\n--fp16\n--sequence-parallel\n"},
        {LOOM_ASSUMED_MATMUL_FP8, "--global-batch-size 8\n--bf16\n--fp8-format hybrid\n"
                                  "--fp8-recipe tensorwise\n--sequence-parallel\n"},
        {LOOM_ASSUMED_ELEMENTS_FP32 | LOOM_ASSUMED_MATMUL_FP32,
         "--global-batch-size 8\n--sequence-parallel\n"},
    };
    int rc;
    loom_error err = {0, ""};
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        g->assumed = base | ok[k].bits;
        char *text = render(loom_write_megatron_args, &plan, &rc, &err);
        ck_assert_msg(rc == LOOM_OK, "%s", err.message);
        loom_test_has(text, ok[k].flags);
        free(text);
    }
    char reason[LOOM_OUT_REASON_MAX];
    g->assumed = base | LOOM_ASSUMED_ELEMENTS_FP32 | LOOM_ASSUMED_MATMUL_TF32;
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    ck_assert_str_eq(reason, "the plan is priced with 4-byte elements and tf32 matmuls; "
                             "Megatron-LM (core_v0.16.1) runs 2-byte elements with bf16, fp16 or "
                             "fp8 matmuls (--bf16, --fp16, --fp8-format) or 4-byte ones with fp32 "
                             "matmuls (its default: it leaves torch.backends.cuda.matmul."
                             "allow_tf32 off)");
    g->assumed = base | LOOM_ASSUMED_ELEMENTS_FP32;
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    loom_test_has(reason, "priced with 4-byte elements and bf16 matmuls");
    /* the TP overlap the cost model priced, which Megatron-LM takes only
     * with sequence parallelism */
    g->assumed = base | LOOM_ASSUMED_TP_COMM_OVERLAP;
    char *text = render(loom_write_megatron_args, &plan, &rc, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    loom_test_has(text, "--sequence-parallel\n--tp-comm-overlap\n");
    free(text);
    g->assumed = base | LOOM_ASSUMED_UNFUSED_ATTENTION;
    text = render(loom_write_megatron_args, &plan, &rc, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    loom_test_has(text, "--sequence-parallel\n--attention-backend unfused\n");
    free(text);
    g->assumed = base | LOOM_ASSUMED_UNFUSED_ATTENTION | LOOM_ASSUMED_EAGER_LAYERS;
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    ck_assert_str_eq(reason, "the plan is priced with Hugging Face transformers' eager layers "
                             "(cost_model.layer_kernels); Megatron-LM runs its own fused layers");
    g->assumed = base | LOOM_ASSUMED_SHARDED_PARAMS;
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    ck_assert_str_eq(reason, "the plan is priced with the weights and gradients sharded over the "
                             "data-parallel replicas (cost_model.fsdp) under pipeline "
                             "parallelism, where PyTorch's pipelining keeps a stage's weights "
                             "gathered and its gradients whole until the step; Megatron-FSDP "
                             "(--use-megatron-fsdp) gathers and reshards every layer's weights "
                             "and reduce-scatters its gradients on every microbatch, which the "
                             "plan does not price");
    g->assumed = base | LOOM_ASSUMED_GRAD_REDUCE_BF16;
    text = render(loom_write_megatron_args, &plan, &rc, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    loom_test_has(text, "--grad-reduce-in-bf16\n--use-distributed-optimizer\n");
    free(text);
    g->assumed = (base | LOOM_ASSUMED_TP_COMM_OVERLAP) & ~LOOM_ASSUMED_SEQUENCE_PARALLEL;
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    ck_assert_str_eq(reason, "the cost model overlaps the tensor-parallel collectives with the "
                             "GEMMs without sequence parallelism; Megatron-LM takes "
                             "--tp-comm-overlap only with --sequence-parallel");
    g->assumed = base & ~LOOM_ASSUMED_PRECISION;
    /* loom_export_fits asks the same by plan.json's key */
    int fits = 1;
    char why[64];
    ck_assert_int_eq(loom_export_fits(&plan, "megatron", &fits, why, sizeof why, &err), LOOM_OK);
    ck_assert_int_eq(fits, 0);
    ck_assert_str_eq(why, "the cost model did not say which precision its times assume (lo");
    ck_assert_int_eq(loom_export_fits(&plan, "pytorch_csv", &fits, why, sizeof why, &err),
                     LOOM_OK);
    ck_assert_int_eq(fits, 1);
    ck_assert_str_eq(why, "");
    ck_assert_int_eq(loom_export_fits(&plan, "deepspeed", &fits, why, sizeof why, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "runtime export deepspeed: expected pytorch_csv, torchtitan, "
                                  "megatron or mimo");
    /* without a plan only the key is checked */
    fits = 0;
    ck_assert_int_eq(loom_export_fits(NULL, "mimo", &fits, NULL, 0, &err), LOOM_OK);
    ck_assert_int_eq(fits, 1);
    ck_assert_int_eq(loom_export_fits(NULL, "deepspeed", &fits, NULL, 0, &err), LOOM_EINVAL);
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    ck_assert_str_eq(reason, "the cost model did not say which precision its times assume "
                             "(loom_rank_tail.assumed), so --bf16, --fp16 or fp32 is unknown");
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

/* exports.<key> of plan.json as text: "file:<name>" or "reason:<why>". */
static char *plan_json_export(const loom_plan *plan, const char *key)
{
    int rc;
    loom_error err = {0, ""};
    char *text = render(loom_write_plan_json, plan, &rc, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    cJSON *doc = cJSON_Parse(text);
    ck_assert_ptr_nonnull(doc);
    const cJSON *ex = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "exports"), key);
    const cJSON *file = cJSON_GetObjectItem(ex, "file"), *why = cJSON_GetObjectItem(ex, "reason");
    ck_assert(cJSON_IsString(file) != cJSON_IsString(why));
    const char *v = cJSON_IsString(file) ? file->valuestring : why->valuestring;
    char *out = malloc(strlen(v) + 8);
    sprintf(out, "%s:%s", cJSON_IsString(file) ? "file" : "reason", v);
    cJSON_Delete(doc);
    free(text);
    return out;
}

START_TEST(megatron_args_refuses_multimodal)
{
    loom_session s;
    loom_plan plan;
    plan_one(&s, &plan, "examples/manifests/megatron-1f1b.json", "vlm-s", "tp=2,pp=2,dp=1,mb=4",
             NULL, NULL);
    static const char why[] =
        "the model has 2 modules (first: vit); Megatron's layout describes one decoder stack, "
        "so only LLM-only models (one text module) can be written";
    char reason[LOOM_OUT_REASON_MAX];
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    ck_assert_str_eq(reason, why);
    int rc;
    loom_error err = {0, ""};
    char *text = render(loom_write_megatron_args, &plan, &rc, &err);
    ck_assert_int_eq(rc, LOOM_EINVAL);
    ck_assert_str_eq(text, "");
    ck_assert_str_eq(err.message, "megatron.args: not written: the model has 2 modules (first: "
                                  "vit); Megatron's layout describes one decoder stack, so only "
                                  "LLM-only models (one text module) can be written");
    free(text);
    char *ex = plan_json_export(&plan, "megatron");
    ck_assert_str_eq(ex + strlen("reason:"), why);
    free(ex);
    /* the output set leaves it out and removes a stale one */
    char dir[] = "/tmp/loom-exports-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/megatron.args", dir);
    FILE *stale = fopen(path, "w");
    ck_assert_ptr_nonnull(stale);
    fputs("--stale\n", stale);
    fclose(stale);
    ck_assert_msg(loom_write_outputs(&plan, dir, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_ne(access(path, F_OK), 0);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

START_TEST(megatron_args_refuses_other_orders)
{
    /* GPipe runs every forward before the backwards: not Megatron's 1F1B */
    loom_session s;
    loom_plan plan;
    char model[4096];
    snprintf(model, sizeof model, "%s", loom_test_tmpfile(".json", tiny_llm));
    plan_one(&s, &plan, "examples/manifests/gpipe.json", model, "tp=2,pp=2,dp=1,mb=4", NULL,
             NULL);
    char reason[LOOM_OUT_REASON_MAX];
    ck_assert_int_eq(megatron_fits(&plan, reason), 0);
    ck_assert_str_eq(reason, "rank 0 runs F of microbatch 2 (chunk 0) as its stage 2; "
                             "Megatron-LM's 1F1B schedule runs B of microbatch 0 (chunk 0) there");
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

START_TEST(mimo_two_layouts)
{
    loom_session s;
    loom_plan plan;
    static const char *const given[] = {"partitioner.mode=given", NULL};
    plan_one(&s, &plan, "examples/manifests/hetero.json",
             loom_test_src("examples/models/vlm-s.json"),
             loom_test_src("tools/executor/tests/two-layouts.json"),
             loom_test_src("tools/executor/tests/vlm.jsonl"), given);
    int rc;
    loom_error err = {0, ""};
    char *text = render(loom_write_mimo_json, &plan, &rc, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    /* llm: the top-level tp 2 x pp 2 on GPUs 0-3; vit: tp 1 x pp 2 on its
     * own GPUs 4-5; the language model keyed "language" */
    ck_assert_str_eq(text,
                     "{\"module_parallelisms\": {\n"
                     "  \"vit\": {\"tensor_model_parallel_size\": 1, "
                     "\"pipeline_model_parallel_size\": 2, \"context_parallel_size\": 1, "
                     "\"expert_model_parallel_size\": 1, \"expert_tensor_parallel_size\": 1, "
                     "\"data_parallel_size\": 1, \"rank_offset\": 4},\n"
                     "  \"language\": {\"tensor_model_parallel_size\": 2, "
                     "\"pipeline_model_parallel_size\": 2, \"context_parallel_size\": 1, "
                     "\"expert_model_parallel_size\": 1, \"expert_tensor_parallel_size\": 1, "
                     "\"data_parallel_size\": 1, \"rank_offset\": 0}\n"
                     "}}\n");
    free(text);
    char *ex = plan_json_export(&plan, "mimo");
    ck_assert_str_eq(ex, "file:mimo.json");
    free(ex);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

START_TEST(mimo_refuses_colocated)
{
    loom_session s;
    loom_plan plan;
    static const char *const given[] = {"partitioner.mode=given", NULL};
    char par[4096];
    snprintf(par, sizeof par, "%s",
             loom_test_tmpfile(".json", "{\"tp\": 2, \"pp\": 2, \"dp\": 1, \"microbatches\": 4, "
                                        "\"modules\": {\"vit\": {\"tp\": 1, \"pp\": 1, "
                                        "\"placement\": \"colocated\"}}}\n"));
    plan_one(&s, &plan, "examples/manifests/hetero.json",
             loom_test_src("examples/models/vlm-s.json"), par,
             loom_test_src("tools/executor/tests/vlm.jsonl"), given);
    int fits = -1;
    char reason[LOOM_OUT_REASON_MAX];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_out_mimo_fits(&plan, &fits, reason, &err), LOOM_OK);
    ck_assert_int_eq(fits, 0);
    ck_assert_str_eq(reason, "module vit is colocated on the GPUs of the top-level layout; "
                             "MegatronMIMOParallelismConfig (Megatron-Bridge fc35d9b) gives every "
                             "module its own range of ranks and has no colocated mode");
    int rc;
    char *text = render(loom_write_mimo_json, &plan, &rc, &err);
    ck_assert_int_eq(rc, LOOM_EINVAL);
    ck_assert_str_eq(text, "");
    free(text);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

/* The suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("runtime_exports");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, megatron_args_small_llm);
    tcase_add_test(tc, megatron_args_fsdp_one_rank);
    tcase_add_test(tc, megatron_args_recompute_flags);
    tcase_add_test(tc, megatron_args_precision_flags);
    tcase_add_test(tc, megatron_args_refuses_multimodal);
    tcase_add_test(tc, megatron_args_refuses_other_orders);
    tcase_add_test(tc, mimo_two_layouts);
    tcase_add_test(tc, mimo_refuses_colocated);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
