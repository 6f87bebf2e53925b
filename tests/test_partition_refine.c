/* test_partition_refine.c - balanced-dp's simulated refinement end to
 * end, on the chain of issue 35 (tools/bench/chain: 8 ViT layers of
 * F 1 / B 2 ms, 16 LLM layers of F 2 / B 4, 8 DiT layers of F 1.5 / B 3,
 * 4 ranks, 8 microbatches, free transfers and no iteration tail): the
 * min-max split alone gives PyTorch PR #179212's baseline figures (449
 * under 1F1B, 393.5 interleaved at v = 2, uniform 383), the refined split
 * beats the auto-partitioner's 438 and 369; and on VLM-L's layer costs it
 * is never worse than the min-max split. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

/* The makespan of one `loom plan` of the chain (or of `model` when not
 * NULL), with extra args; with label, the summary's partition line in
 * label[64]. */
static double plan_ms(const char *model, const char *extra, char *label)
{
    char base[4096], cmd[4200], *out = NULL;
    if (model)
        snprintf(base, sizeof base, "%s plan --model %s --iterations 1 %s",
                 loom_test_bin("bin/loom"), model, extra);
    else
        snprintf(base, sizeof base,
                 "%s plan --model %s --cluster %s --workload %s --use cost_model=table "
                 "--param cost_model.file=%s %s",
                 loom_test_bin("bin/loom"), loom_test_src("tools/bench/chain/model.json"),
                 loom_test_src("tools/bench/chain/cluster.json"),
                 loom_test_src("tools/bench/chain/workload.jsonl"),
                 loom_test_src("tools/bench/chain/layers.csv"), extra);
    snprintf(cmd, sizeof cmd, "%s --json --quiet", base);
    int code = loom_test_run(cmd, &out);
    const char *brace = out ? strchr(out, '{') : NULL;
    cJSON *r = code == 0 && brace ? cJSON_Parse(brace) : NULL;
    ck_assert_msg(r, "%s: %s", cmd, out ? out : "");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "feasible")));
    double ms = cJSON_GetObjectItem(r, "makespan_ms")->valuedouble;
    cJSON_Delete(r);
    free(out);
    if (label) {
        code = loom_test_run(base, &out);
        const char *line = out ? strstr(out, "partition     ") : NULL;
        ck_assert_msg(code == 0 && line, "%s", out ? out : "");
        snprintf(label, 64, "%.*s", (int)strcspn(line + 14, "\n"), line + 14);
        free(out);
    }
    return ms;
}

START_TEST(chain_under_1f1b)
{
    char label[64];
    const char *dp = "--use partitioner=balanced-dp --use interleaver=1f1b "
                     "--param partitioner.refine_evaluations=0";
    /* the min-max split [ViT 8 + LLM 3 | LLM 7 | LLM 6 | DiT 8], 42 ms of
     * F + B in the largest position: 449, the baseline */
    ck_assert_double_eq_tol(plan_ms(NULL, dp, NULL), 449.0, 1e-6);
    /* refined within the default 64 simulations: 437 (PyTorch's 438) */
    ck_assert_double_eq_tol(plan_ms(NULL, "--use partitioner=balanced-dp --use interleaver=1f1b",
                                    label), 437.0, 1e-6);
    ck_assert_msg(strstr(label, "balanced-dp pp=4 vpp=1 max=") && strstr(label, " moves"),
                  "%s", label);
}
END_TEST

START_TEST(chain_interleaved)
{
    const char *v2 = "--parallel vpp=2 --use interleaver=interleaved-1f1b ";
    char args[512];
    snprintf(args, sizeof args, "%s--use partitioner=balanced-dp "
             "--param partitioner.refine_evaluations=0", v2);
    ck_assert_double_eq_tol(plan_ms(NULL, args, NULL), 393.5, 1e-6);
    snprintf(args, sizeof args, "%s--use partitioner=uniform", v2);
    ck_assert_double_eq_tol(plan_ms(NULL, args, NULL), 383.0, 1e-6);
    /* refined: 361 (PyTorch's 369) */
    snprintf(args, sizeof args, "%s--use partitioner=balanced-dp", v2);
    ck_assert_double_eq_tol(plan_ms(NULL, args, NULL), 361.0, 1e-6);
}
END_TEST

START_TEST(chain_budget_is_honoured)
{
    /* one simulation scores the min-max split alone: nothing moves */
    ck_assert_double_eq_tol(plan_ms(NULL, "--use partitioner=balanced-dp --use interleaver=1f1b "
                                          "--param partitioner.refine_evaluations=1", NULL),
                            449.0, 1e-6);
}
END_TEST

START_TEST(first_microbatches_confirmed)
{
    /* scored on the first 4 of the 8 microbatches, the refinement moves
     * to a split that takes 473 on all 8: the whole iteration keeps the
     * min-max split's 449; with the first 8 (all of them) it is the
     * whole-iteration search's 437 */
    const char *args = "--use partitioner=balanced-dp --use interleaver=1f1b "
                       "--param partitioner.refine_microbatches=";
    char a[256];
    snprintf(a, sizeof a, "%s4", args);
    ck_assert_double_eq_tol(plan_ms(NULL, a, NULL), 449.0, 1e-6);
    snprintf(a, sizeof a, "%s8", args);
    ck_assert_double_eq_tol(plan_ms(NULL, a, NULL), 437.0, 1e-6);
}
END_TEST

START_TEST(vlm_l_never_worse)
{
    /* VLM-L's layer costs (roofline, h800), one iteration: the refined
     * split is at least as fast under 1F1B, interleaved (v = 2) and
     * zero-bubble, and with 64 microbatches when scored on the first 16 */
    static const char *const inter[] = {"--use interleaver=1f1b",
                                        "--use interleaver=interleaved-1f1b --parallel vpp=2",
                                        "--use interleaver=zero-bubble",
                                        "--use interleaver=1f1b --parallel mb=64 "
                                        "--param partitioner.refine_microbatches=16"};
    for (int i = 0; i < 4; i++) {
        char args[512];
        snprintf(args, sizeof args, "--use partitioner=balanced-dp %s "
                 "--param partitioner.refine_evaluations=0", inter[i]);
        double before = plan_ms("vlm-l", args, NULL);
        snprintf(args, sizeof args, "--use partitioner=balanced-dp %s", inter[i]);
        double after = plan_ms("vlm-l", args, NULL);
        ck_assert_msg(after <= before, "%s: refined %.6f > min-max %.6f", inter[i], after,
                      before);
    }
}
END_TEST

/* The refinement suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("partition_refine");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, chain_under_1f1b);
    tcase_add_test(tc, chain_interleaved);
    tcase_add_test(tc, chain_budget_is_honoured);
    tcase_add_test(tc, first_microbatches_confirmed);
    tcase_add_test(tc, vlm_l_never_worse);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
