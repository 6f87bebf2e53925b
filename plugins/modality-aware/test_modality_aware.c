/* test_modality_aware.c - the modality-aware partitioner: segment counts
 * and layer runs on constructed latencies, the sub-microbatch size rule
 * with a fake cost service, the partition it writes, params and errors. */
#include <loom/mock_host.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <loom/mock_sim.h>
#include "modality_aware.h"
#include "testutil.h"

const loom_plugin_info *loom_static_modality_aware(void);

/* ---- a two-module VLM problem ------------------------------------------ */

static loom_layer LAYER = {64, 256, 4, 4, 0, 0, 0, 0};
static int32_t LLM_INPUTS[1] = {0};
static loom_module MODULES[2];
static loom_model MODEL;
static loom_problem PROBLEM;
static loom_sample SAMPLES[4];
static loom_iteration ITER;

/* Fake cost model: per-layer mean time per module, and a layer time of
 * max(floor_ms, tokens * token_ms) (weights dominate small shapes). */
static double MEAN_MS[2] = {1.0, 2.0};
static double FLOOR_MS[2] = {4.0, 1000.0};
static double TOKEN_MS[2] = {1.0, 0.001};
static int LAYER_CALLS;

/* vit: 8 image layers; llm: 16 text layers fed by vit; P = 2, M = 2;
 * four samples with 3, 5, 8, 0 images (8 per microbatch). */
static void fixture(void)
{
    memset(MODULES, 0, sizeof MODULES);
    MODULES[0].name = "vit";
    MODULES[0].kind = LOOM_MODULE_ENCODER;
    MODULES[0].modality = LOOM_MODALITY_IMAGE;
    MODULES[0].n_layers = 8;
    MODULES[0].layers = &LAYER;
    MODULES[0].tokens_per_item = 1;
    MODULES[1].name = "llm";
    MODULES[1].kind = LOOM_MODULE_BACKBONE;
    MODULES[1].modality = LOOM_MODALITY_TEXT;
    MODULES[1].n_layers = 16;
    MODULES[1].layers = &LAYER;
    MODULES[1].tokens_per_item = 1;
    MODULES[1].n_inputs = 1;
    MODULES[1].inputs = LLM_INPUTS;
    MODEL.name = "tiny-vlm";
    MODEL.n_modules = 2;
    MODEL.modules = MODULES;
    memset(&PROBLEM, 0, sizeof PROBLEM);
    PROBLEM.struct_size = sizeof PROBLEM;
    PROBLEM.kind = LOOM_PROBLEM_MODEL;
    PROBLEM.model = &MODEL;
    PROBLEM.parallel.tp = 1;
    PROBLEM.parallel.pp = 2;
    PROBLEM.parallel.dp = 1;
    PROBLEM.parallel.vpp = 1;
    PROBLEM.parallel.microbatches = 2;
    int32_t images[4] = {3, 5, 8, 0};
    for (int i = 0; i < 4; i++) {
        memset(&SAMPLES[i], 0, sizeof SAMPLES[i]);
        SAMPLES[i].text_tokens = 100;
        SAMPLES[i].images = images[i];
        SAMPLES[i].microbatch = -1;
    }
    ITER.index = 7;
    ITER.n_samples = 4;
    ITER.samples = SAMPLES;
    MEAN_MS[0] = 1.0;
    MEAN_MS[1] = 2.0;
    FLOOR_MS[0] = 4.0;
    FLOOR_MS[1] = 1000.0;
    LAYER_CALLS = 0;
}

/* Fake cost_service.layer: max(floor, tokens x per-token) forward. */
static int fake_layer(loom_ctx *ctx, int32_t module, int32_t layer,
                      const loom_shape *shape, int32_t policy,
                      loom_layer_cost *out, loom_error *err)
{
    (void)ctx;
    (void)layer;
    (void)policy;
    (void)err;
    memset(out, 0, sizeof *out);
    double t = (double)shape->tokens * TOKEN_MS[module];
    out->forward_ms = t > FLOOR_MS[module] ? t : FLOOR_MS[module];
    LAYER_CALLS++;
    return LOOM_OK;
}

/* Mean shape: the module's tokens over the iteration divided by M. */
static int fake_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                      int32_t microbatches, int32_t mb, int32_t subs,
                      loom_shape *out, loom_error *err)
{
    (void)ctx;
    (void)err;
    ck_assert_int_eq(mb, -1);
    ck_assert_int_eq(subs, 1);
    double tokens = 0, seqs = 0;
    for (int32_t i = 0; i < it->n_samples; i++) {
        const loom_sample *s = &it->samples[i];
        double len = module == 0 ? s->images : s->text_tokens + s->images;
        tokens += len;
        seqs += module == 0 ? s->images : 1;
    }
    memset(out, 0, sizeof *out);
    out->tokens = (int64_t)llround(tokens / microbatches);
    out->sequences = (int64_t)ceil(seqs / microbatches);
    out->seq_sq_sum = tokens / microbatches;
    out->tp = 1;
    return LOOM_OK;
}

/* Fake cost_service.mean_layer_ms: the module's constant. */
static int fake_mean(loom_ctx *ctx, int32_t module, int32_t layer,
                     const loom_iteration *it, int32_t microbatches,
                     double *ms, loom_error *err)
{
    (void)ctx;
    (void)layer;
    (void)it;
    (void)microbatches;
    (void)err;
    *ms = MEAN_MS[module];
    return LOOM_OK;
}

static const loom_cost_service FAKE_COST = {
    sizeof(loom_cost_service), 1, fake_layer, fake_shape, fake_mean, NULL, NULL,
};

/* The plugin's partitioner vtable through its static twin. */
static const loom_partitioner_vtable *vtable(void)
{
    const loom_plugin_info *info = loom_static_modality_aware();
    ck_assert_str_eq(info->id, "org.loom.modality-aware");
    const loom_role_header *h = info->role(LOOM_ROLE_PARTITIONER);
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_null(info->role(LOOM_ROLE_RANKER));
    return (const loom_partitioner_vtable *)h;
}

/* Runs the partitioner once with params ("key", "value", ..., NULL) and
 * the fake cost service (unless with_cost is 0). */
static int run(const char *const *params, int with_cost, loom_candidates *set,
               loom_error *err)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    for (int i = 0; params && params[i]; i += 2)
        ck_assert_int_eq(loom_mock_host_set_param(h, params[i], params[i + 1]),
                         LOOM_OK);
    if (with_cost)
        loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &FAKE_COST);
    loom_mock_host_set_problem(h, &PROBLEM);
    const loom_partitioner_vtable *vt = vtable();
    void *self = NULL;
    int rc = vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                        &self, err);
    ck_assert_int_eq(rc, LOOM_OK);
    rc = vt->partition(self, &PROBLEM, &ITER, set, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

/* ---- pure rules --------------------------------------------------------- */

START_TEST(segments_follow_latency_ratios)
{
    double t[3] = {10.0, 35.0, 20.0};
    int32_t layers[3] = {8, 64, 8}, k[3], bad = -1;
    ck_assert_int_eq(loom_ma_segments(t, layers, 3, 4, 8, k, &bad), LOOM_OK);
    ck_assert_int_eq(k[0], 1);
    ck_assert_int_eq(k[1], 3); /* floor(35 / 10) */
    ck_assert_int_eq(k[2], 2); /* exactly 2, not rounded down to 1 */

    double t2[2] = {1.0, 100.0};
    int32_t l2[2] = {8, 16}, k2[2];
    ck_assert_int_eq(loom_ma_segments(t2, l2, 2, 4, 8, k2, &bad), LOOM_OK);
    ck_assert_int_eq(k2[1], 4); /* capped by 16 layers / 4 ranks */
    ck_assert_int_eq(loom_ma_segments(t2, l2, 2, 2, 3, k2, &bad), LOOM_OK);
    ck_assert_int_eq(k2[1], 3); /* capped by max_segments */

    double t3[2] = {0.0, 5.0}; /* a module with no work this iteration */
    ck_assert_int_eq(loom_ma_segments(t3, l2, 2, 4, 8, k2, &bad), LOOM_OK);
    ck_assert_int_eq(k2[0], 1);
    ck_assert_int_eq(k2[1], 1);

    int32_t l4[2] = {8, 3};
    ck_assert_int_eq(loom_ma_segments(t2, l4, 2, 4, 8, k2, &bad), LOOM_EINVAL);
    ck_assert_int_eq(bad, 1);
}
END_TEST

START_TEST(layer_runs_spread_the_remainder)
{
    int32_t sizes[4];
    loom_ma_layer_runs(10, 4, sizes);
    ck_assert_int_eq(sizes[0], 3);
    ck_assert_int_eq(sizes[1], 3);
    ck_assert_int_eq(sizes[2], 2);
    ck_assert_int_eq(sizes[3], 2);
    int32_t six[6];
    loom_ma_layer_runs(63, 6, six); /* ViT 5B on P*K = 6 positions */
    ck_assert_int_eq(six[0] + six[1] + six[2] + six[3] + six[4] + six[5], 63);
    ck_assert_int_eq(six[2], 11);
    ck_assert_int_eq(six[3], 10);
}
END_TEST

START_TEST(pick_size_is_smallest_within_threshold)
{
    int64_t sizes[4] = {1, 2, 4, 8};
    double eff[4] = {1.0, 2.0, 3.9, 4.0};
    ck_assert_int_eq(loom_ma_pick_size(sizes, eff, 4, 0.95), 4);
    ck_assert_int_eq(loom_ma_pick_size(sizes, eff, 4, 0.99), 8);
    ck_assert_int_eq(loom_ma_pick_size(sizes, eff, 4, 0.5), 2);
    double zero[4] = {0, 0, 0, 0};
    ck_assert_int_eq(loom_ma_pick_size(sizes, zero, 4, 0.95), 1);
    ck_assert_int_eq(loom_ma_pick_size(sizes, eff, 0, 0.95), 1);
}
END_TEST

START_TEST(parse_and_list_sizes)
{
    int64_t s[LOOM_MA_MAX_SIZES];
    int is_auto = 0;
    ck_assert_int_eq(loom_ma_parse_sizes("auto", s, 8, &is_auto), 0);
    ck_assert_int_eq(is_auto, 1);
    ck_assert_int_eq(loom_ma_parse_sizes("12, 4,8,4", s, 8, &is_auto), 3);
    ck_assert_int_eq(is_auto, 0);
    ck_assert_int_eq(s[0], 4);
    ck_assert_int_eq(s[1], 8);
    ck_assert_int_eq(s[2], 12);
    ck_assert_int_eq(loom_ma_parse_sizes("0", s, 8, &is_auto), -1);
    ck_assert_int_eq(loom_ma_parse_sizes("1,,2", s, 8, &is_auto), -1);
    ck_assert_int_eq(loom_ma_parse_sizes("4x", s, 8, &is_auto), -1);
    ck_assert_int_eq(loom_ma_parse_sizes("1,2,3", s, 2, &is_auto), -1);

    loom_ma_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.min_sub_items = 1;
    ck_assert_int_eq(loom_ma_test_sizes(&cfg, 12, s), 5); /* 1 2 4 8 12 */
    ck_assert_int_eq(s[3], 8);
    ck_assert_int_eq(s[4], 12);
    ck_assert_int_eq(loom_ma_test_sizes(&cfg, 8, s), 4); /* 1 2 4 8 */
    ck_assert_int_eq(s[3], 8);
    cfg.min_sub_items = 3;
    ck_assert_int_eq(loom_ma_test_sizes(&cfg, 8, s), 2); /* 4 8 */
    ck_assert_int_eq(s[0], 4);
    cfg.min_sub_items = 9;
    ck_assert_int_eq(loom_ma_test_sizes(&cfg, 8, s), 0);
}
END_TEST

START_TEST(items_per_modality)
{
    fixture();
    loom_sample s;
    memset(&s, 0, sizeof s);
    s.images = 3;
    s.video_seconds = 2.5;
    ck_assert_double_eq(loom_ma_sample_items(&MODEL, 0, &s), 3.0);
    ck_assert_double_eq(loom_ma_sample_items(&MODEL, 1, &s), 1.0);
    s.images = 0;
    ck_assert_double_eq(loom_ma_sample_items(&MODEL, 1, &s), 0.0);
    MODULES[0].modality = LOOM_MODALITY_VIDEO;
    ck_assert_double_eq(loom_ma_sample_items(&MODEL, 0, &s), 2.5);
    ck_assert_int_eq(loom_ma_whole_items(2.5 + 1.25), 4);
    ck_assert_int_eq(loom_ma_whole_items(3.0), 3);
    ck_assert_int_eq(loom_ma_whole_items(0.0), 0);
}
END_TEST

/* ---- the plugin ---------------------------------------------------------- */

START_TEST(partition_layout_and_batching)
{
    fixture();
    loom_candidates *set = loom_mock_candidates_new(&PROBLEM, &ITER);
    loom_error err = {0};
    ck_assert_int_eq(run(NULL, 1, set, &err), LOOM_OK);
    ck_assert_int_eq(set->n, 1);
    const loom_partition *p = set->items[0];
    /* T = 8 ms (vit) and 32 ms (llm): K = [1, 4] on P = 2 */
    ck_assert_int_eq(p->n_flows, 2);
    ck_assert_int_eq(p->n_ranks, 2);
    ck_assert_int_eq(p->flows[0].module, 0);
    ck_assert_int_eq(p->flows[0].n_pos, 2);
    ck_assert_int_eq(p->flows[0].segments, 1);
    ck_assert_int_eq(p->flows[0].n_inputs, 0);
    ck_assert_int_eq(p->flows[1].module, 1);
    ck_assert_int_eq(p->flows[1].n_pos, 8);
    ck_assert_int_eq(p->flows[1].segments, 4);
    ck_assert_int_eq(p->flows[1].pos_off, 2);
    ck_assert_int_eq(p->flows[1].n_inputs, 1);
    ck_assert_int_eq(p->flows[1].inputs[0], 0);
    ck_assert_int_eq(p->n_positions, 10);
    for (int32_t f = 0; f < 2; f++) {
        int32_t next = 0;
        for (int32_t q = 0; q < p->flows[f].n_pos; q++) {
            const loom_position *pos = &p->positions[p->flows[f].pos_off + q];
            ck_assert_int_eq(pos->rank, q % 2);
            ck_assert_int_eq(pos->n_spans, 1);
            const loom_span *sp = &p->spans[pos->span_off];
            ck_assert_int_eq(sp->module, f);
            ck_assert_int_eq(sp->first_layer, next);
            ck_assert_int_eq(sp->n_layers, f == 0 ? 4 : 2);
            next += sp->n_layers;
        }
        ck_assert_int_eq(next, MODULES[f].n_layers);
    }
    /* vit: layer time max(4, b) for b images -> B = 4, 8 images per
     * microbatch -> 2 subs; llm: a 1000 ms floor -> B = 2 sequences, 2 per
     * microbatch -> 1 sub. */
    ck_assert_int_eq(p->n_microbatches, 2);
    ck_assert_int_eq(p->subs[0 * p->cap_microbatches + 0], 2);
    ck_assert_int_eq(p->subs[0 * p->cap_microbatches + 1], 2);
    ck_assert_int_eq(p->subs[1 * p->cap_microbatches + 0], 1);
    ck_assert_int_eq(p->subs[1 * p->cap_microbatches + 1], 1);
    ck_assert_int_eq(p->n_samples, 4);
    for (int32_t m = 0; m < 2; m++) {
        ck_assert_int_eq(p->sample_mb[m * 4 + 0], 0);
        ck_assert_int_eq(p->sample_mb[m * 4 + 1], 0);
        ck_assert_int_eq(p->sample_mb[m * 4 + 2], 1);
        ck_assert_int_eq(p->sample_mb[m * 4 + 3], 1);
    }
    ck_assert_str_eq(p->label, "modality-aware K=[1,4] B=[4,2]");
    /* vit tested 1 2 4 8, llm 1 2; each over every layer */
    ck_assert_int_eq(LAYER_CALLS, 4 * 8 + 2 * 16);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(params_change_the_choice)
{
    fixture();
    loom_error err = {0};
    loom_candidates *set = loom_mock_candidates_new(&PROBLEM, &ITER);
    const char *half[] = {"efficiency_threshold", "0.5", NULL};
    ck_assert_int_eq(run(half, 1, set, &err), LOOM_OK);
    ck_assert_str_eq(set->items[0]->label, "modality-aware K=[1,4] B=[2,1]");
    ck_assert_int_eq(set->items[0]->subs[0], 4);

    const char *list[] = {"sub_sizes", "3,6", NULL};
    ck_assert_int_eq(run(list, 1, set, &err), LOOM_OK);
    /* vit: 3 -> 3/4 of the best, 6 -> best; llm: only 3 and 6 tested */
    ck_assert_str_eq(set->items[1]->label, "modality-aware K=[1,4] B=[6,6]");
    ck_assert_int_eq(set->items[1]->subs[0], 2); /* ceil(8 / 6) */

    const char *floor8[] = {"min_sub_items", "8", "max_segments", "2", NULL};
    ck_assert_int_eq(run(floor8, 1, set, &err), LOOM_OK);
    ck_assert_str_eq(set->items[2]->label, "modality-aware K=[1,2] B=[8,8]");
    ck_assert_int_eq(set->items[2]->subs[0], 1);
    ck_assert_int_eq(set->items[2]->flows[1].n_pos, 4);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(workload_packing_is_kept)
{
    fixture();
    SAMPLES[0].microbatch = 1;
    SAMPLES[1].microbatch = 1;
    SAMPLES[2].microbatch = 1;
    SAMPLES[3].microbatch = 0;
    loom_error err = {0};
    loom_candidates *set = loom_mock_candidates_new(&PROBLEM, &ITER);
    ck_assert_int_eq(run(NULL, 1, set, &err), LOOM_OK);
    const loom_partition *p = set->items[0];
    ck_assert_int_eq(p->sample_mb[0], 1);
    ck_assert_int_eq(p->sample_mb[3], 0);
    /* 16 images in microbatch 1, none in 0; tested sizes go up to 16 */
    ck_assert_int_eq(p->subs[0 * p->cap_microbatches + 0], 1);
    ck_assert_int_eq(p->subs[0 * p->cap_microbatches + 1], 4);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(errors_name_the_cause)
{
    fixture();
    loom_error err = {0};
    loom_candidates *set = loom_mock_candidates_new(&PROBLEM, &ITER);
    ck_assert_int_eq(run(NULL, 0, set, &err), LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.message, "loom.cost"));

    const char *bad[] = {"sub_sizes", "4,zero", NULL};
    ck_assert_int_eq(run(bad, 1, set, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.sub_sizes"));
    ck_assert_ptr_nonnull(strstr(err.message, "4,zero"));

    const char *thr[] = {"efficiency_threshold", "1.5", NULL};
    ck_assert_int_eq(run(thr, 1, set, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "efficiency_threshold"));

    MODULES[0].n_layers = 1;
    ck_assert_int_eq(run(NULL, 1, set, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "module vit has 1 layers"));
    MODULES[0].n_layers = 8;

    SAMPLES[2].microbatch = 5;
    ck_assert_int_eq(run(NULL, 1, set, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "samples[2].microbatch"));
    ck_assert_int_eq(set->n, 0);

    loom_problem st = PROBLEM;
    st.kind = LOOM_PROBLEM_STAGE_TIMES;
    st.model = NULL;
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    void *self = NULL;
    const loom_partitioner_vtable *vt = vtable();
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, &err), LOOM_OK);
    ck_assert_int_eq(vt->partition(self, &st, NULL, set, &err), LOOM_DECLINED);
    vt->destroy(self);
    loom_mock_host_free(h);
    loom_mock_candidates_free(set);
}
END_TEST

/* End to end: the engine plans a VLM-S iteration with the PipeWeaver
 * manifest (ranker fifo for speed); the graph it builds from this
 * partitioner's candidate has P*K_i positions per flow, position s on
 * rank s % P, and 2 stages per position per sub-microbatch. */
START_TEST(engine_builds_the_partition)
{
    char manifest[4200];
    snprintf(manifest, sizeof manifest, "manifest=%s",
             loom_test_src("examples/manifests/pipeweaver.json"));
    const char *const opts[] = {manifest, "model=vlm-s", "iterations=1",
                                "use=ranker=fifo", NULL};
    loom_mock_planner *pl = NULL;
    loom_error err = {0};
    ck_assert_msg(loom_mock_planner_open(opts, &pl, &err) == LOOM_OK, "%s",
                  err.message);
    loom_mock_plan plan;
    ck_assert_msg(loom_mock_planner_plan(pl, 0, &plan, &err) == LOOM_OK, "%s",
                  err.message);
    const loom_problem *pb = loom_mock_planner_problem(pl);
    const loom_partition *p = plan.partition;
    const loom_stage_graph *g = plan.graph;
    int32_t P = pb->parallel.pp;
    ck_assert_ptr_nonnull(strstr(p->label, "modality-aware K=["));
    ck_assert_int_eq(p->n_flows, pb->model->n_modules);
    for (int32_t f = 0; f < p->n_flows; f++) {
        ck_assert_int_eq(p->flows[f].n_pos, P * p->flows[f].segments);
        int64_t subs = 0, stages = 0;
        for (int32_t mb = 0; mb < p->n_microbatches; mb++)
            subs += p->subs[(size_t)f * (size_t)p->cap_microbatches + (size_t)mb];
        for (int32_t v = 0; v < g->n_stages; v++) {
            if (g->flow[v] != f)
                continue;
            stages++;
            ck_assert_int_lt(g->position[v], p->flows[f].n_pos);
            ck_assert_int_eq(g->rank[v], g->position[v] % P);
        }
        ck_assert_int_eq(stages, 2 * subs * p->flows[f].n_pos);
    }
    ck_assert(plan.metrics->makespan_ms > 0.0);
    loom_mock_planner_close(pl);
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("modality-aware");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, segments_follow_latency_ratios);
    tcase_add_test(tc, layer_runs_spread_the_remainder);
    tcase_add_test(tc, pick_size_is_smallest_within_threshold);
    tcase_add_test(tc, parse_and_list_sizes);
    tcase_add_test(tc, items_per_modality);
    tcase_add_test(tc, partition_layout_and_batching);
    tcase_add_test(tc, params_change_the_choice);
    tcase_add_test(tc, workload_packing_is_kept);
    tcase_add_test(tc, errors_name_the_cause);
    tcase_add_test(tc, engine_builds_the_partition);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
