/* test_min_latency.c - the min-latency ranker: the lowest makespan wins,
 * ties go to the lowest index, candidates that cannot be scheduled are
 * skipped (all failing is an error naming the last), the budget stops it
 * after the first candidate, and the evaluator service is required. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include <loom/mock_colocated.h>

const loom_plugin_info *loom_static_min_latency(void);
const loom_plugin_info *loom_static_encoder_first(void);

static atomic_int ev_runs; /* evaluator runs, from any thread */

/* Test evaluator: encoder-first plus the core simulator. */
static int ev_create(loom_ctx *ctx, const loom_stage_graph *graph,
                     loom_evaluator **out, loom_error *err)
{
    (void)ctx, (void)err;
    *out = (loom_evaluator *)(uintptr_t)graph;
    return LOOM_OK;
}
static int ev_run(loom_evaluator *e, const float *prio, loom_metrics *out,
                  loom_error *err)
{
    const loom_stage_graph *g = (const loom_stage_graph *)(uintptr_t)e;
    const loom_interleaver_vtable *vt =
        (const loom_interleaver_vtable *)loom_static_encoder_first()->role(
            LOOM_ROLE_INTERLEAVER);
    loom_mock_host *h = loom_test_mock_host(loom_static_encoder_first());
    void *self = NULL;
    int rc = vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, err);
    loom_schedule *s = loom_schedule_new(g->n_ranks, g->n_stages);
    if (rc == LOOM_OK)
        rc = vt->interleave(self, g, prio, s, err);
    if (rc == LOOM_OK)
        rc = loom_mock_simulate(g, s, out, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    loom_schedule_free(s);
    ev_runs++;
    return rc;
}
static void ev_destroy(loom_evaluator *e)
{
    (void)e;
}
static const loom_evaluator_service test_ev = {
    sizeof(loom_evaluator_service), 1, ev_create, ev_run, ev_destroy, NULL, NULL,
};

/* A backbone of P stages (F f, B 2f) fed by a 1-stage encoder on rank 0;
 * bad = 1 makes the encoder a second unconsumed flow (cannot schedule). */
static loom_stage_graph *graph(int P, double f, int bad)
{
    co_tg_flow fl[2];
    memset(fl, 0, sizeof fl);
    fl[0].n_pos = 1;
    fl[0].f_ms[0] = 0.5;
    fl[0].b_ms[0] = 1;
    fl[1].n_pos = P;
    fl[1].n_inputs = bad ? 0 : 1;
    fl[1].module = 1;
    for (int p = 0; p < P; p++) {
        fl[1].rank[p] = p;
        fl[1].f_ms[p] = f;
        fl[1].b_ms[p] = 2 * f;
    }
    return co_tg_build(fl, 2, P, 4);
}

/* What a ranking's host saw: progress and logs. */
typedef struct host_saw {
    int64_t progress_calls, logs;
    double progress_ms;
    char last_log[256];
} host_saw;

/* Ranks `n` graphs with `threads` threads (NULL: the default) and an
 * expired budget or not; fills *saw when given. */
static int rank_on(loom_stage_graph **g, int n, int with_ev, int expired, const char *threads,
                   loom_ranking *r, loom_error *err, host_saw *saw)
{
    const loom_ranker_vtable *vt =
        (const loom_ranker_vtable *)loom_static_min_latency()->role(LOOM_ROLE_RANKER);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    if (with_ev)
        loom_mock_host_add_service(h, LOOM_SERVICE_EVALUATOR, 1, &test_ev);
    loom_mock_host_set_expired(h, expired);
    if (threads)
        loom_mock_host_set_param(h, "threads", threads);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, err), LOOM_OK);
    ev_runs = 0;
    int rc = vt->rank(self, (const loom_stage_graph *const *)g, n, r, err);
    if (rc == LOOM_OK)
        ck_assert_double_eq(loom_mock_host_best_makespan_ms(h), r->best_makespan_ms);
    if (saw) {
        saw->progress_calls = loom_mock_host_progress_calls(h);
        saw->progress_ms = loom_mock_host_best_makespan_ms(h);
        saw->logs = loom_mock_host_log_count(h);
        snprintf(saw->last_log, sizeof saw->last_log, "%s", loom_mock_host_last_log(h));
    }
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

/* Ranks `n` graphs with the default threads. */
static int rank(loom_stage_graph **g, int n, int with_ev, int expired,
                loom_ranking *r, loom_error *err)
{
    return rank_on(g, n, with_ev, expired, NULL, r, err, NULL);
}

START_TEST(lowest_makespan_wins)
{
    loom_stage_graph *g[4] = {graph(4, 2, 0), graph(4, 1, 0), graph(2, 1, 0),
                              graph(2, 1, 0)};
    float prio[64];
    loom_ranking r = {.struct_size = (uint32_t)sizeof(loom_ranking), .cap_priorities = 64,
                      .priorities = prio};
    loom_error err = {0, ""};
    ck_assert_msg(rank(g, 4, 1, 0, &r, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(r.candidate, 2); /* 2 and 3 tie: the lower index */
    ck_assert_int_eq(r.evaluations, 4);
    ck_assert_int_eq(ev_runs, 4);
    /* encoder-first on rank 0: 4 encoder forwards (2 ms), the 1F1B of 2
     * stages and 4 microbatches (15 ms), 4 encoder backwards (4 ms) */
    ck_assert_double_eq_tol(r.best_makespan_ms, 4 * 0.5 + (4 + 2 - 1) * 3 + 4 * 1, 1e-9);
    for (int32_t i = 1; i < g[2]->n_groups; i++)
        ck_assert_float_gt(prio[i - 1], prio[i]);
    for (int i = 0; i < 4; i++)
        loom_graph_free(g[i]);
}
END_TEST

START_TEST(skips_what_cannot_run)
{
    loom_stage_graph *g[3] = {graph(4, 1, 1), graph(4, 2, 0), graph(2, 1, 1)};
    float prio[64];
    loom_ranking r = {.struct_size = (uint32_t)sizeof(loom_ranking), .cap_priorities = 64,
                      .priorities = prio};
    loom_error err = {0, ""};
    ck_assert_int_eq(rank(g, 3, 1, 0, &r, &err), LOOM_OK);
    ck_assert_int_eq(r.candidate, 1);
    ck_assert_int_eq(r.evaluations, 3);
    loom_stage_graph *bad[2] = {g[0], g[2]};
    ck_assert_int_eq(rank(bad, 2, 1, 0, &r, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "none of the 2 candidates could be "
                                              "scheduled; the last: encoder-first: "
                                              "expects one backbone flow"));
    /* an expired budget stops after the first schedulable candidate */
    loom_stage_graph *two[2] = {g[1], graph(2, 1, 0)};
    ck_assert_int_eq(rank(two, 2, 1, 1, &r, &err), LOOM_OK);
    ck_assert_int_eq(r.candidate, 0);
    ck_assert_int_eq(r.evaluations, 1);
    ck_assert_int_eq(rank(two, 2, 0, 0, &r, &err), LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.message, "loom.evaluator"));
    ck_assert_int_eq(rank(two, 0, 1, 0, &r, &err), LOOM_EINVAL);
    loom_graph_free(two[1]);
    for (int i = 0; i < 3; i++)
        loom_graph_free(g[i]);
}
END_TEST

/* Candidates scored on several threads give what one thread gives: the
 * same choice (the fastest, ties to the lower index, one that cannot be
 * scheduled skipped), priorities, evaluation count, progress reports and
 * logs, the last of them the last candidate's. */
START_TEST(threads_do_not_change_the_choice)
{
    loom_stage_graph *g[7] = {graph(4, 2, 0), graph(4, 1, 1), graph(2, 1, 0), graph(3, 1, 0),
                              graph(2, 1, 0), graph(4, 1, 0), graph(2, 3, 0)};
    loom_error err = {0, ""};
    float p1[64], pt[64];
    loom_ranking r1 = {.struct_size = (uint32_t)sizeof(loom_ranking), .cap_priorities = 64,
                       .priorities = p1};
    loom_ranking rt = r1;
    rt.priorities = pt;
    host_saw one, many;
    ck_assert_msg(rank_on(g, 7, 1, 0, "1", &r1, &err, &one) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(r1.candidate, 2); /* 2 and 4 tie: the lower index */
    ck_assert_int_eq(r1.evaluations, 7);
    ck_assert_msg(strncmp(one.last_log, "candidate 6: ", 13) == 0, "%s", one.last_log);
    for (int t = 2; t <= 4; t++) {
        char threads[8];
        snprintf(threads, sizeof threads, "%d", t);
        ck_assert_int_eq(rank_on(g, 7, 1, 0, threads, &rt, &err, &many), LOOM_OK);
        ck_assert_int_eq(rt.candidate, r1.candidate);
        ck_assert_int_eq(rt.evaluations, r1.evaluations);
        ck_assert_double_eq(rt.best_makespan_ms, r1.best_makespan_ms);
        ck_assert_mem_eq(pt, p1, (size_t)g[2]->n_groups * sizeof(float));
        ck_assert_int_eq(many.progress_calls, one.progress_calls);
        ck_assert_double_eq(many.progress_ms, one.progress_ms);
        ck_assert_int_eq(many.logs, one.logs);
        ck_assert_str_eq(many.last_log, one.last_log);
    }
    /* none schedulable: the last one's reason, on any thread count */
    loom_stage_graph *bad[2] = {g[1], g[1]};
    ck_assert_int_eq(rank_on(bad, 2, 1, 0, "2", &rt, &err, NULL), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "none of the 2 candidates could be "
                                              "scheduled; the last: encoder-first: "
                                              "expects one backbone flow"));
    for (int i = 0; i < 7; i++)
        loom_graph_free(g[i]);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_min_latency();
    cJSON *m = loom_test_json(loom_test_src("plugins/min-latency/manifest.json"));
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring, info->version);
    const loom_ranker_vtable *vt = (const loom_ranker_vtable *)info->role(LOOM_ROLE_RANKER);
    ck_assert_ptr_nonnull(vt);
    /* it reads counts and scores through evaluators: the host may hand it outlines */
    ck_assert_uint_eq(vt->reads, LOOM_RANKER_READS_COUNTS);
    cJSON_Delete(m);
}
END_TEST

/* The min-latency suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("min-latency");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, lowest_makespan_wins);
    tcase_add_test(tc, skips_what_cannot_run);
    tcase_add_test(tc, threads_do_not_change_the_choice);
    tcase_add_test(tc, manifest_matches_binary);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
