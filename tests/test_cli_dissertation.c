/* test_cli_dissertation.c - `loom cp-balance` and `loom calibrate-batch`
 * on the digests' examples, and the oobleck, cornstarch and entrain
 * manifests planned end to end (including an Entrain plan whose encoder
 * and backbone microbatches hold different samples). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include "engine_api.h"
#include <loom/sys/session.h>
#include "testutil.h"
#include "run_priv.h"

START_TEST(cp_balance_figure_3_3)
{
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli("cp-balance --gpus 4 --workloads 1,2,2,4,5,2,2,8", &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "makespan 8 tiles (lower bound 8"));
    free(out);
    ck_assert_int_eq(loom_test_cli("cp-balance --gpus 4 --workloads 1,2,2,4,5,2,2,8 "
                          "--order unsorted --json", &out), 0);
    cJSON *r = cJSON_Parse(out);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(cJSON_GetObjectItem(r, "makespan")->valueint, 12);
    const cJSON *g0 = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "gpus"), 0);
    /* blocks b1 and b5 (1-based) on GPU 0 */
    ck_assert_int_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(g0, "blocks"), 0)->valueint, 0);
    ck_assert_int_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(g0, "blocks"), 1)->valueint, 4);
    cJSON_Delete(r);
    free(out);
    /* a causal mask: zigzag gives every GPU 2*4+1 tiles */
    ck_assert_int_eq(loom_test_cli("cp-balance --gpus 4 --causal 1024 --json", &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"zigzag_makespan\": 9"));
    free(out);
    ck_assert_int_eq(loom_test_cli("cp-balance --gpus 2 --segments image:256,text:256 --block 64",
                          &out), 0);
    /* 4 image blocks seeing the 4 image blocks, text blocks 5..8 tiles */
    ck_assert_ptr_nonnull(strstr(out, "8 block(s) over 2 GPU(s)"));
    ck_assert_ptr_nonnull(strstr(out, "makespan 21 tiles (lower bound 21"));
    free(out);
    ck_assert_int_eq(loom_test_cli("cp-balance --gpus 4", &out), 2);
    free(out);
    ck_assert_int_eq(loom_test_cli("cp-balance --gpus 4 --segments pixel:5", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "KIND:TOKENS"));
    free(out);
    ck_assert_int_eq(loom_test_cli("cp-balance --gpus 0 --workloads 1", &out), 2);
    free(out);
}
END_TEST

START_TEST(calibrate_batch)
{
    char *out = NULL;
    const char *args = "calibrate-batch --model vlm-s --generate interleaved "
                       "--iterations 2 --global-batch 1024 --unit 4 --seed 3";
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "k = 59 Bernoulli trials"));
    ck_assert_ptr_nonnull(strstr(out, "b_min = "));
    free(out);
    /* the same seed, the same answer; alpha 0.01 -> 90 trials */
    char a[512];
    snprintf(a, sizeof a, "%s --json", args);
    char *j1 = NULL, *j2 = NULL;
    ck_assert_int_eq(loom_test_cli(a, &j1), 0);
    ck_assert_int_eq(loom_test_cli(a, &j2), 0);
    ck_assert_str_eq(j1, j2);
    cJSON *r = cJSON_Parse(j1);
    int b = cJSON_GetObjectItem(r, "b_min")->valueint;
    ck_assert_int_eq(b & (b - 1), 0); /* n0 * 2^j */
    cJSON_Delete(r);
    free(j1);
    free(j2);
    ck_assert_int_eq(loom_test_cli("calibrate-batch --model vlm-s --generate interleaved "
                          "--iterations 2 --global-batch 1024 --alpha 0.01 --unit 4",
                          &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "k = 90"));
    free(out);
    /* a batch too small to stabilise: exit 1, the batch must grow */
    ck_assert_int_eq(loom_test_cli("calibrate-batch --model vlm-s --generate interleaved "
                          "--iterations 2 --global-batch 2 --gpus 16 --unit 1", &out), 1);
    ck_assert_ptr_nonnull(strstr(out, "global batch must grow"));
    free(out);
    ck_assert_int_eq(loom_test_cli("calibrate-batch --model vlm-s --global-batch 8", &out), 2);
    free(out);
    ck_assert_int_eq(loom_test_cli("calibrate-batch --model vlm-s --generate interleaved "
                          "--global-batch 8 --alpha 2", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--alpha"));
    free(out);
}
END_TEST

/* `loom plan` of a manifest, one iteration: exit 0 and the plan label. */
static void plan_manifest(const char *name, const char *want)
{
    char a[1024], *out = NULL;
    snprintf(a, sizeof a, "plan --manifest %s --iterations 1 --quiet --json",
             loom_test_src(name));
    int rc = loom_test_cli(a, &out);
    ck_assert_msg(rc == 0, "%s: exit %d: %s", name, rc, out);
    free(out);
    snprintf(a, sizeof a, "plan --manifest %s --iterations 1", loom_test_src(name));
    ck_assert_int_eq(loom_test_cli(a, &out), 0);
    ck_assert_msg(strstr(out, want) != NULL, "%s: no \"%s\" in %s", name, want, out);
    free(out);
}

START_TEST(manifests_end_to_end)
{
    plan_manifest("examples/manifests/oobleck.json", "oobleck n=");
    plan_manifest("examples/manifests/cornstarch.json", "cp4 lpt");
    plan_manifest("examples/manifests/entrain.json", "+defer");
}
END_TEST

START_TEST(entrain_encoder_and_backbone_differ)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = loom_test_src("examples/manifests/entrain.json");
    a.iterations = 1;
    loom_session s;
    loom_error err = {0, ""};
    ck_assert_msg(loom_session_init(&s, &a, &err) == LOOM_OK, "%s", err.message);
    loom_plan plan;
    ck_assert_msg(loom_session_plan(&s, 0, &plan, &err) == LOOM_OK, "%s", err.message);
    const loom_partition *p = plan.partition;
    ck_assert_ptr_nonnull(p);
    const loom_model *model = s.problem.model;
    int enc = -1, llm = -1;
    for (int m = 0; m < model->n_modules; m++) {
        if (model->modules[m].kind == LOOM_MODULE_ENCODER)
            enc = m;
        else
            llm = m;
    }
    int moved = 0;
    for (int i = 0; i < p->n_samples; i++) {
        int32_t e = p->sample_mb[(size_t)enc * p->n_samples + i];
        int32_t l = p->sample_mb[(size_t)llm * p->n_samples + i];
        ck_assert(l == e || l == e + 1); /* only to the next microbatch */
        moved += l != e;
    }
    ck_assert_int_gt(moved, 0);
    ck_assert_int_gt(plan.metrics.makespan_ms, 0);
    ck_assert_int_eq(plan.graph->n_microbatches, p->n_microbatches);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

/* Sum of backward (B, I, W) stage durations per rank of one plan of vlm-s
 * with the given frozen flags (megatron-1f1b: rank 3 holds only backbone
 * layers 9..31, rank 0 only encoder layers). */
static void backward_by_rank(int vit_frozen, int llm_frozen, double *b)
{
    char model[2048];
    snprintf(model, sizeof model,
             "{\"name\": \"vlm-f\", \"parallel\": {\"tp\": 4, \"pp\": 4, \"microbatches\": 8},\n"
             " \"modules\": [\n"
             "  {\"name\": \"vit\", \"kind\": \"encoder\", \"modality\": \"image\",\n"
             "   \"tokens_per_item\": 169, \"frozen\": %s, \"layers\": {\"count\": 63,\n"
             "   \"hidden\": 1792, \"ffn_hidden\": 15360, \"heads\": 16}},\n"
             "  {\"name\": \"llm\", \"kind\": \"backbone\", \"vocab\": 128256,\n"
             "   \"frozen\": %s, \"inputs\": [\"vit\"], \"layers\": {\"count\": 32,\n"
             "   \"hidden\": 4096, \"ffn_hidden\": 14336, \"heads\": 32, \"kv_heads\": 8,\n"
             "   \"gated_ffn\": true, \"causal\": true}}]}\n",
             vit_frozen ? "true" : "false", llm_frozen ? "true" : "false");
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = loom_test_src("examples/manifests/megatron-1f1b.json");
    a.model = loom_test_tmpfile(".json", model);
    a.iterations = 1;
    loom_session s;
    loom_error err = {0, ""};
    ck_assert_msg(loom_session_init(&s, &a, &err) == LOOM_OK, "%s", err.message);
    loom_plan plan;
    ck_assert_msg(loom_session_plan(&s, 0, &plan, &err) == LOOM_OK, "%s", err.message);
    for (int r = 0; r < 4; r++)
        b[r] = 0;
    const loom_stage_graph *g = plan.graph;
    for (int i = 0; i < g->n_stages; i++)
        if (g->kind[i] != LOOM_STAGE_F)
            b[g->rank[i]] += g->duration_ms[i];
    loom_plan_clear(&plan);
    loom_session_release(&s);
}

START_TEST(frozen_status_in_the_graph)
{
    /* the core's graph builder and the cost model charge Eq. 3.2 */
    double all[4], none[4], enc[4], llm[4];
    backward_by_rank(0, 0, all);
    backward_by_rank(1, 1, none);  /* all frozen: a pure forward */
    backward_by_rank(0, 1, enc);   /* trainable encoder, frozen backbone */
    backward_by_rank(1, 0, llm);   /* frozen encoder, trainable backbone */
    for (int r = 0; r < 4; r++)
        ck_assert_double_eq(none[r], 0);
    /* the frozen backbone still pays input gradients for the encoder,
     * but no weight gradients: less than when it trains */
    ck_assert_double_gt(enc[3], 0);
    ck_assert_double_lt(enc[3], all[3]);
    /* a frozen encoder with nothing upstream has no backward at all */
    ck_assert_double_eq(llm[0], 0);
    ck_assert_double_eq_tol(llm[3], all[3], 1e-6 * all[3]);
}
END_TEST

/* The suite of this file. */
static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli_dissertation");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cp_balance_figure_3_3);
    tcase_add_test(tc, calibrate_batch);
    tcase_add_test(tc, manifests_end_to_end);
    tcase_add_test(tc, entrain_encoder_and_backbone_differ);
    tcase_add_test(tc, frozen_status_in_the_graph);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(cli_suite());
}
