/* test_hetero_search.c - hetero-search: the closed-form estimate (one
 * microbatch's latency plus the slowest GPU set's period per further
 * microbatch), the enumeration's budget, cap and ordering invariants, the
 * single-layout baseline inside the per-module space, and through whole
 * plans: a two-module disaggregated pipeline's steady state runs at the
 * slower module's throughput, whichever module that is, and a search's
 * plan carries layouts within its GPU budget. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <loom/mock_sim.h>
#include "testutil.h"
#include "hs_estimate.h"

/* Two modules: enc (4 layers, index 0) feeding llm (8 layers, backbone),
 * costs C(tp, reps) = base / (tp * reps) + 1 (a fixed part that TP and
 * copies do not shrink), static bytes 8 GB / tp (llm) and 1 GB / tp. */
static void two_modules(loom_hs_costs *c, int32_t mbs)
{
    memset(c, 0, sizeof *c);
    c->n_modules = 2;
    c->microbatches = mbs;
    c->cp = 1;
    c->layers[0] = 4;
    c->layers[1] = 8;
    c->backbone[1] = 1;
    for (int i = 0; i < LOOM_HS_N_TP; i++) {
        c->tp_ok[0][i] = c->tp_ok[1][i] = 1;
        for (int j = 0; j < LOOM_HS_N_REPS; j++) {
            c->c_ms[0][i][j] = 40.0 / ((1 << i) * (1 << j)) + 1.0;
            c->c_ms[1][i][j] = 80.0 / ((1 << i) * (1 << j)) + 1.0;
        }
        c->static_bytes[0][i] = 1e9 / (1 << i);
        c->static_bytes[1][i] = 8e9 / (1 << i);
    }
}

/* A layout entry. */
static loom_module_layout lay(int32_t tp, int32_t pp, int32_t dp, int32_t placement,
                              int32_t with)
{
    loom_module_layout l = {(uint32_t)sizeof l, tp, 1, pp, dp, placement, with, 0, 0, 1};
    return l;
}

START_TEST(estimate_closed_forms)
{
    loom_hs_costs c;
    two_modules(&c, 8);
    /* disaggregated: enc disjoint tp 1, pp 2, dp 1 (2 positions);
     * llm top-level tp 2, pp 4: t_enc = 41 / 2, t_llm = 41 / 4 */
    loom_module_layout l[2] = {lay(1, 2, 1, LOOM_LAYOUT_DISJOINT, -1),
                               lay(2, 4, 1, LOOM_LAYOUT_TOP, -1)};
    double st = 0;
    double est = loom_hs_estimate(&c, l, &st);
    ck_assert_double_eq_tol(est, 41.0 + 41.0 + 7 * (41.0 / 2), 1e-12);
    /* static: the llm's 4 GB over 4 ranks vs the enc's 1 GB over 2 */
    ck_assert_double_eq_tol(st, 1e9, 1e-3);
    /* the llm becomes the slower module at pp 1: period 41 */
    l[1].pp = 1;
    ck_assert_double_eq_tol(loom_hs_estimate(&c, l, NULL), 82.0 + 7 * 41.0, 1e-12);
    /* colocated on the top-level set at tp 1 under tp 2: two copies, each
     * on half the microbatch: C = 40 / 2 + 1 = 21 over 4 positions,
     * sharing the ranks with the llm (41 / 4) */
    l[0] = lay(1, 4, 2, LOOM_LAYOUT_COLOCATED, -1);
    l[1].pp = 4;
    ck_assert_double_eq_tol(loom_hs_estimate(&c, l, NULL),
                            21.0 + 41.0 + 7 * (21.0 / 4 + 41.0 / 4), 1e-12);
    /* a disjoint module's share: round(pp * dp / dp_top) positions */
    l[0] = lay(1, 2, 4, LOOM_LAYOUT_DISJOINT, -1);
    l[1].dp = 2;
    ck_assert_double_eq_tol(loom_hs_estimate(&c, l, NULL), 41.0 + 41.0 + 7 * (41.0 / 4),
                            1e-12);
    /* a TP outside the costed ones has no estimate */
    l[0].tp = 16;
    ck_assert(loom_hs_estimate(&c, l, NULL) < 0);
}
END_TEST

/* DistTrain Eq. 1 + Eq. 5 (digest §2.2): an encoder of one stage on its
 * own GPU feeding a 3-stage LLM, stage time t = forward + backward. */
static double dt_eq(double t_enc, double t_llm, int32_t mbs)
{
    loom_hs_costs c;
    memset(&c, 0, sizeof c);
    c.n_modules = 2;
    c.microbatches = mbs;
    c.cp = 1;
    c.layers[0] = 1;
    c.layers[1] = 3;
    c.backbone[1] = 1;
    c.c_ms[0][0][0] = t_enc;
    c.c_ms[1][0][0] = 3 * t_llm;
    loom_module_layout l[2] = {lay(1, 1, 1, LOOM_LAYOUT_DISJOINT, -1),
                               lay(1, 3, 1, LOOM_LAYOUT_TOP, -1)};
    return loom_hs_estimate(&c, l, NULL);
}

START_TEST(disttrain_worked_examples)
{
    /* equal stages (tf 1, tb 2): (p + l - 1) t, p 4: l 6 -> 27, l 8 -> 33 */
    ck_assert_double_eq_tol(dt_eq(3, 3, 6), 27.0, 1e-12);
    ck_assert_double_eq_tol(dt_eq(3, 3, 8), 33.0, 1e-12);
    /* downstream bottleneck (encoder tf 0.5), l 8: 31.5 */
    ck_assert_double_eq_tol(dt_eq(1.5, 3, 8), 31.5, 1e-12);
    /* encoder bottleneck tf 2, l 8: the formula's 57 (the digest's
     * simulator finds 51: Eq. 1 + 5 overestimates a first-stage
     * bottleneck); tf 3, l 12: 117 */
    ck_assert_double_eq_tol(dt_eq(6, 3, 8), 57.0, 1e-12);
    ck_assert_double_eq_tol(dt_eq(9, 3, 12), 117.0, 1e-12);
    /* Fig. 9's topology as per-module layouts: encoder DP 2 TP 2, LLM
     * DP 3 TP 4 (12 GPUs per PP stage, here 2 stages), generator DP 1
     * TP 4, each unit on its own GPUs */
    const char *file = loom_test_tmpfile(".json",
        "{\"tp\": 4, \"pp\": 2, \"dp\": 3, \"microbatches\": 8, \"gpus\": 32, \"modules\": {"
        "\"vit\": {\"tp\": 2, \"pp\": 1, \"dp\": 2, \"placement\": \"disjoint\"},"
        "\"sd\": {\"tp\": 4, \"pp\": 1, \"dp\": 1, \"placement\": \"disjoint\"}}}");
    char model[4200], parallel[4200];
    snprintf(model, sizeof model, "model=%s",
             loom_test_src("examples/models/disttrain-mllm-9b.json"));
    snprintf(parallel, sizeof parallel, "parallel=%s", file);
    const char *const opts[] = {model, parallel, "iterations=1", NULL};
    loom_mock_planner *pl = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_mock_planner_open(opts, &pl, &err) == LOOM_OK, "%s", err.message);
    const loom_problem *pb = loom_mock_planner_problem(pl);
    const loom_module_layout *l = pb->module_layouts;
    ck_assert_ptr_nonnull(l);
    ck_assert_int_eq(pb->total_gpus, 32); /* 24 + 4 + 4 */
    ck_assert_int_eq(l[0].first_gpu, 24);
    ck_assert_int_eq(l[0].gpus, 4);
    ck_assert_int_eq(l[2].first_gpu, 28);
    ck_assert_int_eq(l[2].gpus, 4);
    loom_mock_planner_close(pl);
}
END_TEST

START_TEST(enumeration_invariants)
{
    loom_hs_costs c;
    two_modules(&c, 8);
    loom_hs_config cfg = {16, 8, 0, 0};
    loom_hs_result best[LOOM_HS_MAX_BEST], single[LOOM_HS_MAX_BEST];
    int32_t n = 0, ns = 0;
    loom_hs_stats stats, sstats;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_hs_enumerate(&c, 1, &cfg, 8, best, &n, &stats, &err), LOOM_OK);
    ck_assert_int_eq(n, 8);
    ck_assert_int_gt(stats.enumerated, 100);
    for (int32_t k = 0; k < n; k++) {
        ck_assert_int_le(best[k].gpus, 16);
        if (k)
            ck_assert(best[k].estimate_ms >= best[k - 1].estimate_ms);
        ck_assert_double_eq_tol(loom_hs_estimate(&c, best[k].layouts, NULL),
                                best[k].estimate_ms, 1e-12);
    }
    cfg.single_layout = 1;
    ck_assert_int_eq(loom_hs_enumerate(&c, 1, &cfg, 8, single, &ns, &sstats, &err), LOOM_OK);
    for (int32_t k = 0; k < ns; k++)
        for (int32_t m = 0; m < 2; m++)
            ck_assert_int_eq(single[k].layouts[m].placement, LOOM_LAYOUT_TOP);
    /* the per-module space holds every single layout */
    ck_assert(best[0].estimate_ms <= single[0].estimate_ms);
    ck_assert_int_lt(sstats.enumerated, stats.enumerated);
    /* a cap below every layout's static bytes: nothing fits */
    cfg.single_layout = 0;
    cfg.memory_cap_bytes = 1e6;
    ck_assert_int_eq(loom_hs_enumerate(&c, 1, &cfg, 8, best, &n, &stats, &err),
                     LOOM_EINFEASIBLE);
    ck_assert_msg(strstr(err.message, "hetero-search: no layout within 16 GPUs fits"), "%s",
                  err.message);
    /* a cap keeps only layouts under it */
    cfg.memory_cap_bytes = 1.5e9;
    ck_assert_int_eq(loom_hs_enumerate(&c, 1, &cfg, 8, best, &n, &stats, &err), LOOM_OK);
    for (int32_t k = 0; k < n; k++)
        ck_assert(best[k].static_bytes <= 1.5e9);
    ck_assert_int_lt(stats.feasible, stats.enumerated);
}
END_TEST

/* Plans vlm-s with the hetero manifest, mode given, GPipe and no memory
 * tuning, `mbs` identical microbatches (2048 text tokens, 4 images), vit
 * disjoint at tp 1 with pp `vit_pp`; returns the makespan and the per
 * microbatch busy time of the slowest rank (and that rank). */
static double disaggregated(int32_t mbs, int32_t vit_pp, double *period, int32_t *slowest,
                            int32_t *vit_rank0)
{
    char par[256], work[1 << 14];
    snprintf(par, sizeof par,
             "{\"tp\": 4, \"pp\": 4, \"dp\": 1, \"microbatches\": %d, \"modules\": {\"vit\": "
             "{\"tp\": 1, \"pp\": %d, \"dp\": 1, \"placement\": \"disjoint\"}}}", mbs, vit_pp);
    size_t k = (size_t)snprintf(work, sizeof work, "{\"iteration\": 0, \"samples\": [");
    for (int32_t i = 0; i < mbs; i++)
        k += (size_t)snprintf(work + k, sizeof work - k,
                              "%s{\"text_tokens\": 2048, \"images\": 4, \"microbatch\": %d}",
                              i ? ", " : "", i);
    snprintf(work + k, sizeof work - k, "]}\n");
    char manifest[4200], parallel[4200], workload[4200];
    snprintf(manifest, sizeof manifest, "manifest=%s",
             loom_test_src("examples/manifests/hetero.json"));
    snprintf(parallel, sizeof parallel, "parallel=%s", loom_test_tmpfile(".json", par));
    snprintf(workload, sizeof workload, "workload=%s", loom_test_tmpfile(".jsonl", work));
    const char *const opts[] = {manifest, "model=vlm-s", parallel, workload,
                                "use=memory_tuner=none", "use=interleaver=gpipe",
                                "param=partitioner.mode=given", NULL};
    loom_error err = {0, ""};
    loom_mock_planner *pl = NULL;
    ck_assert_msg(loom_mock_planner_open(opts, &pl, &err) == LOOM_OK, "%s", err.message);
    loom_mock_plan plan;
    ck_assert_msg(loom_mock_planner_plan(pl, 0, &plan, &err) == LOOM_OK, "%s", err.message);
    *period = 0;
    for (int32_t r = 0; r < plan.graph->n_ranks; r++)
        if (plan.metrics->compute_ms[r] / mbs > *period) {
            *period = plan.metrics->compute_ms[r] / mbs;
            *slowest = r;
        }
    *vit_rank0 = 4; /* the top-level layout's pp ranks come first */
    ck_assert_int_eq(plan.partition->n_layouts, 2);
    ck_assert_int_eq(plan.partition->layouts[0].placement, LOOM_LAYOUT_DISJOINT);
    double ms = plan.metrics->makespan_ms;
    loom_mock_planner_close(pl);
    return ms;
}

START_TEST(disaggregated_steady_state_is_the_slower_module)
{
    /* vit on one TP-1 GPU (pp 1): slower than any llm stage */
    double p16 = 0, p32 = 0;
    int32_t r16 = -1, r32 = -1, vit0 = 0;
    double m16 = disaggregated(16, 1, &p16, &r16, &vit0);
    double m32 = disaggregated(32, 1, &p32, &r32, &vit0);
    ck_assert_int_eq(r16, vit0);
    ck_assert_int_eq(r32, vit0);
    ck_assert_double_eq_tol(p16, p32, 1e-9 * p16);
    ck_assert_double_eq_tol((m32 - m16) / 16, p16, 1e-6 * p16);
    /* vit over 4 GPUs (pp 4): the llm's last stage is the slower */
    m16 = disaggregated(16, 4, &p16, &r16, &vit0);
    m32 = disaggregated(32, 4, &p32, &r32, &vit0);
    ck_assert_int_lt(r16, vit0);
    ck_assert_int_eq(r16, r32);
    ck_assert_double_eq_tol((m32 - m16) / 16, p16, 1e-6 * p16);
}
END_TEST

START_TEST(search_plans_within_budget)
{
    char manifest[4200];
    snprintf(manifest, sizeof manifest, "manifest=%s",
             loom_test_src("examples/manifests/hetero.json"));
    const char *const opts[] = {manifest, "model=vlm-s", "iterations=1",
                                "param=partitioner.gpus=12", NULL};
    loom_error err = {0, ""};
    loom_mock_planner *pl = NULL;
    ck_assert_msg(loom_mock_planner_open(opts, &pl, &err) == LOOM_OK, "%s", err.message);
    loom_mock_plan plan;
    ck_assert_msg(loom_mock_planner_plan(pl, 0, &plan, &err) == LOOM_OK, "%s", err.message);
    const loom_partition *p = plan.partition;
    ck_assert_int_eq(p->n_layouts, 2);
    int64_t gpus = 0;
    for (int32_t m = 0; m < 2; m++) {
        const loom_module_layout *l = &p->layouts[m];
        if (l->placement != LOOM_LAYOUT_COLOCATED)
            gpus += (int64_t)l->tp * l->cp * l->pp * l->dp;
    }
    ck_assert_int_le(gpus, 12);
    ck_assert(plan.metrics->makespan_ms > 0 && isfinite(plan.metrics->makespan_ms));
    loom_mock_planner_close(pl);
}
END_TEST

/* optimus-planner's plans carry the encoder's own layout on the
 * backbone's GPUs; disttrain-alloc's the encoder and generator apart. */
START_TEST(optimus_and_disttrain_emit_layouts)
{
    static const char *const manifests[2] = {"examples/manifests/optimus.json",
                                             "examples/manifests/disttrain.json"};
    static const char *const models[2] = {"vlm-s", "examples/models/disttrain-mllm-15b.json"};
    for (int k = 0; k < 2; k++) {
        char manifest[4200], model_opt[4200];
        snprintf(manifest, sizeof manifest, "manifest=%s", loom_test_src(manifests[k]));
        snprintf(model_opt, sizeof model_opt, "model=%s",
                 k ? loom_test_src(models[k]) : models[k]);
        const char *const opts[] = {manifest, model_opt, "iterations=1", NULL};
        loom_error err = {0, ""};
        loom_mock_planner *pl = NULL;
        ck_assert_msg(loom_mock_planner_open(opts, &pl, &err) == LOOM_OK, "%s", err.message);
        loom_mock_plan plan;
        ck_assert_msg(loom_mock_planner_plan(pl, 0, &plan, &err) == LOOM_OK, "%s", err.message);
        const loom_partition *p = plan.partition;
        const loom_model *model = loom_mock_planner_problem(pl)->model;
        const loom_parallel *pa = &loom_mock_planner_problem(pl)->parallel;
        ck_assert_int_eq(p->n_layouts, model->n_modules);
        int64_t top = (int64_t)pa->tp * pa->pp * pa->dp;
        for (int32_t m = 0; m < model->n_modules; m++) {
            const loom_module_layout *l = &p->layouts[m];
            int64_t own = (int64_t)l->tp * l->cp * l->pp * l->dp;
            if (model->modules[m].kind == LOOM_MODULE_BACKBONE) {
                ck_assert_int_eq(l->placement, LOOM_LAYOUT_TOP);
            } else if (k == 0) { /* Optimus: the encoder on the backbone's GPUs */
                ck_assert_int_eq(l->placement, LOOM_LAYOUT_COLOCATED);
                ck_assert_int_eq(l->listed, 1);
                ck_assert_int_eq(own, top);
            } else { /* DistTrain: its own GPUs after the backbone's */
                ck_assert_int_eq(l->placement, LOOM_LAYOUT_DISJOINT);
                ck_assert_int_eq(own, l->gpus);
                ck_assert_int_ge(l->first_gpu, p->layouts[1].gpus);
            }
        }
        loom_mock_planner_close(pl);
    }
}
END_TEST

START_TEST(given_needs_layouts)
{
    char manifest[4200];
    snprintf(manifest, sizeof manifest, "manifest=%s",
             loom_test_src("examples/manifests/hetero.json"));
    const char *const opts[] = {manifest, "model=vlm-s", "iterations=1",
                                "param=partitioner.mode=given", NULL};
    loom_error err = {0, ""};
    loom_mock_planner *pl = NULL;
    ck_assert_msg(loom_mock_planner_open(opts, &pl, &err) == LOOM_OK, "%s", err.message);
    loom_mock_plan plan;
    ck_assert_int_eq(loom_mock_planner_plan(pl, 0, &plan, &err), LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, "mode \"given\": expected per-module layouts in the "
                                      "parallel config (parallel.modules), found none"),
                  "%s", err.message);
    loom_mock_planner_close(pl);
}
END_TEST

/* A layout-unaware partitioner under a disjoint layout is refused. */
START_TEST(mixed_sets_refused)
{
    char parallel[4200];
    snprintf(parallel, sizeof parallel, "parallel=%s",
             loom_test_src("examples/parallel/vlm-s-vit-disjoint.json"));
    const char *const opts[] = {"model=vlm-s", "iterations=1", parallel, NULL};
    loom_error err = {0, ""};
    loom_mock_planner *pl = NULL;
    ck_assert_msg(loom_mock_planner_open(opts, &pl, &err) == LOOM_OK, "%s", err.message);
    loom_mock_plan plan;
    ck_assert_int_eq(loom_mock_planner_plan(pl, 0, &plan, &err), LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, "runs modules \"vit\" (GPU set of vit) and \"llm\" (GPU "
                                      "set of the top-level layout)"), "%s", err.message);
    loom_mock_planner_close(pl);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hetero_search");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, estimate_closed_forms);
    tcase_add_test(tc, disttrain_worked_examples);
    tcase_add_test(tc, enumeration_invariants);
    tcase_add_test(tc, disaggregated_steady_state_is_the_slower_module);
    tcase_add_test(tc, search_plans_within_budget);
    tcase_add_test(tc, optimus_and_disttrain_emit_layouts);
    tcase_add_test(tc, given_needs_layouts);
    tcase_add_test(tc, mixed_sets_refused);
    suite_add_tcase(s, tc);
    return loom_test_main(s);
}
