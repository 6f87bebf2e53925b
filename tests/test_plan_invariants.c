/* test_plan_invariants.c - what every plan from the PipeWeaver pipeline
 * must satisfy: every stage once, dependencies honoured, peak memory under
 * the cap, the same seed gives byte-identical plan.json, replaying its own
 * per-rank action lists in the simulator gives the plan's makespan, its
 * "data" assigns the partition's samples, and every send's tensor matches
 * the tokens of the samples it carries. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include "engine_api.h"
#include "output.h"
#include <loom/sys/session.h>
#include <loom/tokens.h>
#include "run_priv.h"

/* Plans iteration k of `model` with the pipeweaver manifest (short search). */
static void plan_one(const char *model, int32_t k, const char *memory_tuner, loom_session *s,
                     loom_plan *plan)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = loom_test_src("examples/manifests/pipeweaver.json");
    a.model = model;
    a.iterations = k + 1;
    a.params[a.n_params++] = "ranker.max_evaluations=40";
    a.params[a.n_params++] = "ranker.budget_ms=60000";
    static char use[64];
    snprintf(use, sizeof use, "memory_tuner=%s", memory_tuner);
    a.uses[a.n_uses++] = use;
    loom_error err = {0};
    int rc = loom_session_init(s, &a, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    rc = loom_session_plan(s, k, plan, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
}

/* plan.json text of a plan (caller frees). */
static char *plan_json(const loom_plan *plan)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_error err = {0};
    ck_assert_int_eq(loom_write_plan_json(plan, f, &err), LOOM_OK);
    fclose(f);
    return buf;
}

static void check_invariants(const loom_plan *plan)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *s = plan->schedule;
    /* every stage exactly once, in its own rank's list */
    char *seen = calloc((size_t)g->n_stages, 1);
    for (int32_t r = 0; r < g->n_ranks; r++)
        for (int32_t i = s->rank_off[r]; i < s->rank_off[r + 1]; i++) {
            int32_t v = s->order[i];
            ck_assert_int_eq(g->rank[v], r);
            ck_assert_int_eq(seen[v], 0);
            seen[v] = 1;
        }
    for (int32_t v = 0; v < g->n_stages; v++)
        ck_assert_int_eq(seen[v], 1);
    free(seen);
    /* dependencies: every stage starts after each predecessor ends + P2P */
    for (int32_t v = 0; v < g->n_stages; v++)
        for (int32_t e = g->pred_off[v]; e < g->pred_off[v + 1]; e++)
            ck_assert(plan->metrics.start_ms[v] + 1e-9 >=
                      plan->metrics.end_ms[g->pred[e]] + g->pred_p2p_ms[e]);
    /* memory cap */
    ck_assert(g->memory_cap_bytes > 0);
    for (int32_t r = 0; r < g->n_ranks; r++)
        ck_assert_msg((double)plan->metrics.peak_bytes[r] <= g->memory_cap_bytes,
                      "rank %d peak %lld over cap %.0f", r,
                      (long long)plan->metrics.peak_bytes[r], g->memory_cap_bytes);
}

/* Rebuilds per-rank orders from plan.json's rank_actions and re-simulates. */
static double replay_actions(const loom_plan *plan, const char *json)
{
    cJSON *root = cJSON_Parse(json);
    ck_assert_ptr_nonnull(root);
    const cJSON *ranks = cJSON_GetObjectItem(root, "rank_actions");
    ck_assert(cJSON_IsArray(ranks));
    const loom_stage_graph *g = plan->graph;
    loom_schedule *s = loom_schedule_new(g->n_ranks, g->n_stages);
    int32_t k = 0;
    ck_assert_int_eq(cJSON_GetArraySize(ranks), g->n_ranks);
    for (int32_t r = 0; r < g->n_ranks; r++) {
        const cJSON *acts = cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, r), "actions");
        s->rank_off[r] = k;
        const cJSON *a;
        cJSON_ArrayForEach(a, acts) {
            const char *what = cJSON_GetObjectItem(a, "action")->valuestring;
            if (!strcmp(what, "forward_stage") || !strcmp(what, "backward_stage")) {
                ck_assert_int_lt(k, g->n_stages);
                s->order[k++] = (int32_t)cJSON_GetObjectItem(a, "stage")->valuedouble;
            }
        }
    }
    s->rank_off[g->n_ranks] = k;
    ck_assert_int_eq(k, g->n_stages);
    loom_metrics m = LOOM_METRICS_INIT;
    loom_error err = {0};
    int rc = loom_simulate(g, s, &m, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    loom_schedule_free(s);
    cJSON_Delete(root);
    return m.makespan_ms;
}

/* The "samples" array of plan.json's data unit (flow f, mb, sub), or NULL
 * when it has no such unit. */
static const cJSON *data_unit(const cJSON *data, int32_t f, int32_t mb, int32_t sub)
{
    const cJSON *u;
    cJSON_ArrayForEach(u, data) {
        if ((int32_t)cJSON_GetObjectItem(u, "flow")->valuedouble == f &&
            (int32_t)cJSON_GetObjectItem(u, "microbatch")->valuedouble == mb &&
            (int32_t)cJSON_GetObjectItem(u, "sub")->valuedouble == sub)
            return cJSON_GetObjectItem(u, "samples");
    }
    return NULL;
}

/* plan.json "data" against the partition: every sample a single-module
 * flow's module sees in a microbatch is in exactly one of its subs, and
 * the subs' token loads differ by at most the largest sample (the
 * largest-first, least-loaded rule). */
static void check_data(const loom_plan *plan, const cJSON *root)
{
    const loom_partition *part = plan->partition;
    const loom_model *model = plan->problem->model;
    const loom_iteration *it = plan->iteration;
    const cJSON *data = cJSON_GetObjectItem(root, "data");
    int32_t n = it->n_samples, *count = calloc((size_t)n, sizeof(int32_t));
    for (int32_t f = 0; f < part->n_flows; f++) {
        int32_t m = part->flows[f].module;
        for (int32_t mb = 0; m >= 0 && mb < part->n_microbatches; mb++) {
            int32_t subs = part->subs[(size_t)f * (size_t)part->cap_microbatches + (size_t)mb];
            int64_t lo = INT64_MAX, hi = 0, big = 0;
            memset(count, 0, (size_t)n * sizeof(int32_t));
            for (int32_t sub = 0; sub < subs; sub++) {
                const cJSON *list = data_unit(data, f, mb, sub), *x;
                ck_assert_ptr_nonnull(list);
                int64_t load = 0;
                cJSON_ArrayForEach(x, list) {
                    int32_t i = (int32_t)x->valuedouble;
                    int64_t w = loom_sample_tokens(model, m, &it->samples[i]);
                    count[i]++;
                    load += w;
                    big = w > big ? w : big;
                }
                lo = load < lo ? load : lo;
                hi = load > hi ? load : hi;
            }
            for (int32_t i = 0; i < n; i++)
                ck_assert_int_eq(count[i], part->sample_mb[(size_t)m * (size_t)n + (size_t)i] == mb
                                               && subs > 0);
            if (subs > 0)
                ck_assert_msg(hi - lo <= big, "flow %d mb %d: loads %lld..%lld, largest %lld", f,
                              mb, (long long)lo, (long long)hi, (long long)big);
        }
    }
    free(count);
}

/* Tokens leaving a span of module m that ends before layer `end` over the
 * samples in both data units a and b: the layers' sequence, or after a
 * non-text module's last layer its merged tokens_per_item an item. */
static int64_t shared_tokens(const loom_plan *plan, const cJSON *a, const cJSON *b, int32_t m,
                             int32_t end)
{
    const loom_module *mod = &plan->problem->model->modules[m];
    int merged = mod->modality != LOOM_MODALITY_TEXT && end == mod->n_layers;
    int64_t tokens = 0;
    const cJSON *x, *y;
    cJSON_ArrayForEach(x, a) {
        cJSON_ArrayForEach(y, b) {
            if ((int32_t)x->valuedouble != (int32_t)y->valuedouble)
                continue;
            const loom_sample *smp = &plan->iteration->samples[(int32_t)x->valuedouble];
            tokens += merged ? loom_sample_output_tokens(mod, smp)
                             : loom_sample_tokens(plan->problem->model, m, smp);
        }
    }
    return tokens;
}

/* Every isend's tensor: [ceil(tokens / tp), hidden] of the forward
 * producer's last span, tokens over the samples both ends' units hold. */
static void check_tensors(const loom_plan *plan, const cJSON *root)
{
    const loom_stage_graph *g = plan->graph;
    const loom_partition *part = plan->partition;
    const cJSON *data = cJSON_GetObjectItem(root, "data"), *ra, *a;
    int32_t checked = 0;
    cJSON_ArrayForEach(ra, cJSON_GetObjectItem(root, "rank_actions")) {
        cJSON_ArrayForEach(a, cJSON_GetObjectItem(ra, "actions")) {
            if (strcmp(cJSON_GetObjectItem(a, "action")->valuestring, "isend") != 0)
                continue;
            int32_t p = (int32_t)cJSON_GetObjectItem(a, "stage")->valuedouble;
            int32_t c = (int32_t)cJSON_GetObjectItem(a, "peer_stage")->valuedouble;
            int32_t fwd = g->kind[p] == LOOM_STAGE_F ? p : g->pair_forward[g->pair[c]];
            int32_t other = fwd == p ? c : p;
            const loom_flow *fl = &part->flows[g->flow[fwd]];
            const loom_position *pos = &part->positions[fl->pos_off + g->position[fwd]];
            const loom_span *sp = &part->spans[pos->span_off + pos->n_spans - 1];
            int64_t tokens = shared_tokens(
                plan, data_unit(data, g->flow[fwd], g->microbatch[fwd], g->sub[fwd]),
                data_unit(data, g->flow[other], g->microbatch[other], g->sub[other]), sp->module,
                sp->first_layer + sp->n_layers);
            int32_t tp = part->tp > 0 ? part->tp : 1;
            const cJSON *t = cJSON_GetObjectItem(a, "tensor");
            const cJSON *shape = cJSON_GetObjectItem(t, "shape");
            int64_t rows = (int64_t)cJSON_GetArrayItem(shape, 0)->valuedouble;
            int64_t cols = (int64_t)cJSON_GetArrayItem(shape, 1)->valuedouble;
            ck_assert_int_eq(rows, (tokens + tp - 1) / tp);
            ck_assert_int_eq(cols, plan->problem->model->modules[sp->module]
                                       .layers[sp->first_layer + sp->n_layers - 1].hidden);
            ck_assert_int_eq((int64_t)cJSON_GetObjectItem(t, "bytes")->valuedouble, rows * cols * 2);
            checked++;
        }
    }
    ck_assert_int_gt(checked, 0);
}

START_TEST(test_pipeweaver_plan_invariants)
{
    /* the third model's ViT runs on 2916 patches an image and hands 169
     * merged tokens to the LLM */
    const char *models[] = {"vlm-s", "t2v-s",
                            loom_test_src("tests/fidelity/models/vlm-s-patches.json")};
    const char *tuners[] = {"greedy", "knapsack", "greedy"};
    for (int i = 0; i < 3; i++) {
        loom_session s;
        loom_plan plan;
        plan_one(models[i], 1, tuners[i], &s, &plan);
        check_invariants(&plan);
        char *json = plan_json(&plan);
        ck_assert_double_eq_tol(replay_actions(&plan, json), plan.metrics.makespan_ms, 1e-6);
        cJSON *root = cJSON_Parse(json);
        check_data(&plan, root);
        check_tensors(&plan, root);
        cJSON_Delete(root);

        /* the same seed gives the same plan, byte for byte */
        loom_session s2;
        loom_plan plan2;
        plan_one(models[i], 1, tuners[i], &s2, &plan2);
        char *json2 = plan_json(&plan2);
        ck_assert_str_eq(json, json2);
        free(json);
        free(json2);
        loom_plan_clear(&plan);
        loom_plan_clear(&plan2);
        loom_session_release(&s);
        loom_session_release(&s2);
    }
}
END_TEST

/* The V placement end to end: the uniform partitioner's placement=v on a
 * model problem, the zb-v interleaver with a greedy memory tuner; the same
 * invariants, stage ranks on the V, and plan.json's actions replaying to
 * the plan's makespan. */
START_TEST(test_v_placement_plan_invariants)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = loom_test_src("examples/manifests/megatron-1f1b.json");
    a.model = "vlm-s";
    a.parallel = "pp=4,vpp=2,mb=8";
    a.iterations = 1;
    a.params[a.n_params++] = "partitioner.placement=v";
    a.uses[a.n_uses++] = "interleaver=zb-v";
    a.uses[a.n_uses++] = "memory_tuner=greedy";
    loom_session s;
    loom_plan plan;
    loom_error err = {0};
    ck_assert_msg(loom_session_init(&s, &a, &err) == LOOM_OK, "%s", err.message);
    ck_assert_msg(loom_session_plan(&s, 0, &plan, &err) == LOOM_OK, "%s", err.message);
    check_invariants(&plan);
    const loom_stage_graph *g = plan.graph;
    static const int32_t v[8] = {0, 1, 2, 3, 3, 2, 1, 0};
    int split = 0;
    for (int32_t i = 0; i < g->n_stages; i++) {
        ck_assert_int_eq(g->rank[i], v[g->position[i]]);
        split |= g->kind[i] == LOOM_STAGE_W;
    }
    ck_assert(split);
    char *json = plan_json(&plan);
    ck_assert_double_eq_tol(replay_actions(&plan, json), plan.metrics.makespan_ms, 1e-6);
    free(json);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("plan_invariants");
    TCase *tc = tcase_create("pipeweaver");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_pipeweaver_plan_invariants);
    tcase_add_test(tc, test_v_placement_plan_invariants);
    suite_add_tcase(su, tc);
    return loom_test_main(su);
}
