/* test_fifo.c - the fifo ranker: candidate 0, priorities n_groups - g, one
 * evaluator run whose makespan it reports (here a test evaluator made of
 * the 1f1b interleaver and the core simulator), and its errors. */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include <cjson/cJSON.h>
#include "testutil.h"

/* Static twins of the plugins under test (linked into every suite). */
const loom_plugin_info *loom_static_fifo(void);
const loom_plugin_info *loom_static_1f1b(void);

/* What the test evaluator saw. */
static int ev_creates, ev_runs, ev_destroys, ev_fail;
static float ev_prio[64];
static const loom_stage_graph *ev_graph;

typedef struct test_evaluator {
    const loom_stage_graph *graph;
} test_evaluator;

/* Binds a test evaluator to `graph`. */
static int ev_create(loom_ctx *ctx, const loom_stage_graph *graph,
                     loom_evaluator **out, loom_error *err)
{
    (void)err;
    ck_assert_ptr_nonnull(ctx);
    test_evaluator *ev = calloc(1, sizeof *ev);
    ev->graph = graph;
    ev_graph = graph;
    ev_creates++;
    *out = (loom_evaluator *)ev;
    return LOOM_OK;
}

/* 1f1b order for `prio`, then the core simulator. */
static int ev_run(loom_evaluator *e, const float *prio, loom_metrics *out,
                  loom_error *err)
{
    test_evaluator *ev = (test_evaluator *)e;
    const loom_stage_graph *g = ev->graph;
    ev_runs++;
    memcpy(ev_prio, prio, (size_t)g->n_groups * sizeof *prio);
    if (ev_fail) {
        snprintf(err->message, sizeof err->message, "blocked: F0.0@r0");
        err->code = LOOM_EDEADLOCK;
        return LOOM_EDEADLOCK;
    }
    const loom_interleaver_vtable *vt =
        (const loom_interleaver_vtable *)loom_static_1f1b()->role(
            LOOM_ROLE_INTERLEAVER);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    void *self = NULL;
    int rc = vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                        &self, err);
    loom_schedule *s = loom_schedule_new(g->n_ranks, g->n_stages);
    if (rc == LOOM_OK)
        rc = vt->interleave(self, g, prio, s, err);
    if (rc == LOOM_OK)
        rc = loom_mock_simulate(g, s, out, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    loom_schedule_free(s);
    return rc;
}

/* Releases a test evaluator. */
static void ev_destroy(loom_evaluator *e)
{
    ev_destroys++;
    free(e);
}

static const loom_evaluator_service test_evaluator_service = {
    sizeof(loom_evaluator_service), 1, ev_create, ev_run, ev_destroy, NULL, NULL,
};

/* A P x M stage-times graph, forward f ms and backward 2 f ms. */
static loom_stage_graph *st_graph(int P, int M, double f)
{
    double fw[8], bw[8];
    for (int s = 0; s < P; s++) {
        fw[s] = f;
        bw[s] = 2 * f;
    }
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    st.ranks = P;
    st.microbatches = M;
    st.virtual_stages = 1;
    st.forward_ms = fw;
    st.backward_ms = bw;
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    return g;
}

/* Runs the fifo ranker over `graphs` on mock host h. */
static int rank(loom_mock_host *h, const loom_stage_graph *const *graphs,
                int n, loom_ranking *out, loom_error *err)
{
    const loom_ranker_vtable *vt =
        (const loom_ranker_vtable *)loom_static_fifo()->role(LOOM_ROLE_RANKER);
    ck_assert_ptr_nonnull(vt);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, err), LOOM_OK);
    int rc = vt->rank(self, graphs, n, out, err);
    vt->destroy(self);
    return rc;
}

START_TEST(first_candidate_first_microbatch)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_add_service(h, LOOM_SERVICE_EVALUATOR, 1,
                               &test_evaluator_service);
    loom_stage_graph *a = st_graph(4, 8, 1.0), *b = st_graph(4, 8, 0.5);
    const loom_stage_graph *graphs[2] = {a, b};
    float prio[16];
    loom_ranking out = {.struct_size = (uint32_t)sizeof(loom_ranking), .candidate = -1,
                        .cap_priorities = 16, .priorities = prio};
    loom_error err = {0, ""};
    ck_assert_msg(rank(h, graphs, 2, &out, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(out.candidate, 0);
    for (int g = 0; g < 8; g++) {
        ck_assert_float_eq(prio[g], (float)(8 - g));
        ck_assert_float_eq(ev_prio[g], (float)(8 - g));
    }
    ck_assert_double_eq_tol(out.best_makespan_ms, 33.0, 1e-9); /* 1F1B */
    ck_assert_int_eq(out.evaluations, 1);
    ck_assert_ptr_eq(ev_graph, a);
    ck_assert_int_eq(ev_creates, 1);
    ck_assert_int_eq(ev_runs, 1);
    ck_assert_int_eq(ev_destroys, 1);
    ck_assert_int_eq(loom_mock_host_progress_calls(h), 1);
    ck_assert_double_eq_tol(loom_mock_host_best_makespan_ms(h), 33.0, 1e-9);
    ck_assert_int_eq(loom_mock_host_evaluations(h), 1);
    loom_graph_free(a);
    loom_graph_free(b);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(errors)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_stage_graph *a = st_graph(2, 4, 1.0);
    const loom_stage_graph *graphs[1] = {a};
    float prio[4];
    loom_ranking out = {.struct_size = (uint32_t)sizeof(loom_ranking), .candidate = -1,
                        .cap_priorities = 4, .priorities = prio};
    loom_error err = {0, ""};
    /* no evaluator service */
    ck_assert_int_eq(rank(h, graphs, 1, &out, &err), LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.message, "loom.evaluator"));
    loom_mock_host_add_service(h, LOOM_SERVICE_EVALUATOR, 1,
                               &test_evaluator_service);
    /* no candidate */
    ck_assert_int_eq(rank(h, graphs, 0, &out, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "found 0"));
    /* too little room for the priorities */
    out.cap_priorities = 3;
    ck_assert_int_eq(rank(h, graphs, 1, &out, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "room for 3 priorities"));
    ck_assert_ptr_nonnull(strstr(err.message, "4 groups"));
    /* the evaluator's failure comes back unchanged */
    out.cap_priorities = 4;
    ev_fail = 1;
    ck_assert_int_eq(rank(h, graphs, 1, &out, &err), LOOM_EDEADLOCK);
    ck_assert_str_eq(err.message, "blocked: F0.0@r0");
    ck_assert_int_eq(ev_destroys, ev_creates);
    loom_graph_free(a);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_fifo();
    ck_assert_int_eq(info->abi_version, LOOM_ABI_VERSION);
    ck_assert_ptr_null(info->role(LOOM_ROLE_INTERLEAVER));
    cJSON *m = loom_test_json(loom_test_src("plugins/fifo/manifest.json"));
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring, info->version);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "binary")->valuestring, "loom-fifo.so");
    const cJSON *prov = cJSON_GetObjectItem(m, "provides");
    ck_assert_str_eq(cJSON_GetObjectItem(prov, "role")->valuestring,
                     LOOM_ROLE_RANKER);
    ck_assert_str_eq(cJSON_GetObjectItem(prov, "name")->valuestring, "fifo");
    cJSON_Delete(m);
}
END_TEST

/* The fifo suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("fifo");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, first_candidate_first_microbatch);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, manifest_matches_binary);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
