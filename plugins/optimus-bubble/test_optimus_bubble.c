/* test_optimus_bubble.c - Optimus's fine-grained scheduler (Algorithm 2):
 * it starts from the coarse order and never makes it slower, fills
 * backbone bubbles with encoder layers (strictly faster, higher
 * efficiency) while every encoder-backbone dependency holds and each
 * unit's layers keep their order, makes no move without bubbles (PP = 1),
 * runs encoder layers as fills in the backbone's TP communication,
 * equals encoder-first with no passes, and reports its figures. */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include <loom/mock_colocated.h>

const loom_plugin_info *loom_static_optimus_bubble(void);
const loom_plugin_info *loom_static_encoder_first(void);

/* Runs interleaver `info` with params (NULL-terminated pairs) on g into a
 * fresh schedule; *log gets the last log line (static copy). */
static int run(const loom_plugin_info *info, const loom_stage_graph *g,
               const char *const *params, int with_sim, loom_schedule **out,
               const char **log, loom_error *err)
{
    static char last[512];
    const loom_interleaver_vtable *vt =
        (const loom_interleaver_vtable *)info->role(LOOM_ROLE_INTERLEAVER);
    loom_mock_host *h = loom_test_mock_host(info);
    if (with_sim)
        loom_mock_host_add_service(h, LOOM_SERVICE_SIMULATOR, 1, loom_mock_simulator());
    for (int i = 0; params && params[i]; i += 2)
        loom_mock_host_set_param(h, params[i], params[i + 1]);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, err), LOOM_OK);
    *out = loom_schedule_new(g->n_ranks, g->n_stages);
    int rc = vt->interleave(self, g, NULL, *out, err);
    if (rc == LOOM_OK) {
        /* the instance is reused by evaluators: same input, same order */
        loom_schedule *again = loom_schedule_new(g->n_ranks, g->n_stages);
        ck_assert_int_eq(vt->interleave(self, g, NULL, again, err), LOOM_OK);
        ck_assert_int_eq(memcmp(again->order, (*out)->order,
                                (size_t)g->n_stages * sizeof(int32_t)), 0);
        loom_schedule_free(again);
    }
    snprintf(last, sizeof last, "%s", loom_mock_host_last_log(h));
    if (log)
        *log = last;
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

/* Makespan of s over g (checks it runs). */
static double makespan(const loom_stage_graph *g, const loom_schedule *s,
                       loom_metrics *keep)
{
    loom_metrics m = LOOM_METRICS_INIT;
    m.start_ms = calloc((size_t)g->n_stages, sizeof(double));
    m.end_ms = calloc((size_t)g->n_stages, sizeof(double));
    loom_error err = {0, ""};
    ck_assert_msg(loom_mock_simulate(g, s, &m, &err) == LOOM_OK, "%s", err.message);
    if (keep) {
        *keep = m;
    } else {
        free(m.start_ms);
        free(m.end_ms);
    }
    return m.makespan_ms;
}

/* An encoder of `layers` layers (one position each, spread evenly over
 * ranks 0 .. enc_ranks-1, f / b per layer) with a P-stage backbone (F 1,
 * B 2 per stage); `pipes` > 1 makes that many replica encoder pipelines,
 * pipeline a on ranks a * enc_ranks ..., running the microbatches
 * a, a + pipes, ... */
static loom_stage_graph *layout(int P, int M, int layers, int enc_ranks,
                                int pipes, double f, double b)
{
    co_tg_flow fl[CO_TG_MAX_FLOWS];
    memset(fl, 0, sizeof fl);
    for (int a = 0; a < pipes; a++) {
        fl[a].n_pos = layers;
        fl[a].masked = pipes > 1;
        for (int mb = 0; mb < M; mb++)
            fl[a].runs[mb] = mb % pipes == a;
        for (int l = 0; l < layers; l++) {
            fl[a].rank[l] = a * enc_ranks + l * enc_ranks / layers;
            fl[a].f_ms[l] = f;
            fl[a].b_ms[l] = b;
        }
    }
    co_tg_flow *bb = &fl[pipes];
    bb->n_pos = P;
    bb->n_inputs = pipes;
    for (int a = 0; a < pipes; a++)
        bb->inputs[a] = a;
    bb->module = 1;
    for (int p = 0; p < P; p++) {
        bb->rank[p] = p;
        bb->f_ms[p] = 1;
        bb->b_ms[p] = 2;
    }
    return co_tg_build(fl, pipes + 1, P, M);
}

/* An encoder colocated stage by stage with a P-stage backbone. */
static loom_stage_graph *colocated(int P, int M, int layers, double f, double b)
{
    return layout(P, M, layers, P, 1, f, b);
}

/* Checks the dependency and order invariants of a fine schedule. */
static void check_invariants(const loom_stage_graph *g, const loom_schedule *s)
{
    loom_metrics m = LOOM_METRICS_INIT;
    makespan(g, s, &m);
    for (int32_t v = 0; v < g->n_stages; v++) {
        if (g->module[v] != 1 || g->position[v] != 0 || g->kind[v] != LOOM_STAGE_F)
            continue;
        /* EF <= F: the encoder's last forward of this microbatch ends first */
        for (int32_t e = g->pred_off[v]; e < g->pred_off[v + 1]; e++)
            ck_assert_double_le(m.end_ms[g->pred[e]], m.start_ms[v]);
    }
    /* per rank, one microbatch's encoder layers keep their order */
    for (int32_t r = 0; r < s->n_ranks; r++)
        for (int32_t i = s->rank_off[r]; i < s->rank_off[r + 1]; i++)
            for (int32_t j = i + 1; j < s->rank_off[r + 1]; j++) {
                int32_t a = s->order[i], c = s->order[j];
                if (g->module[a] == 1 || g->flow[a] != g->flow[c] ||
                    g->microbatch[a] != g->microbatch[c] || g->kind[a] != g->kind[c])
                    continue;
                if (g->kind[a] == LOOM_STAGE_F)
                    ck_assert_int_lt(g->position[a], g->position[c]);
                else
                    ck_assert_int_gt(g->position[a], g->position[c]);
            }
    free(m.start_ms);
    free(m.end_ms);
}

START_TEST(fills_bubbles_and_is_faster)
{
    /* the encoder on ranks 0-1 ends where the backbone has its
     * warm-up -> steady bubbles (the last rank has none with V = 1) */
    loom_stage_graph *g = layout(4, 8, 8, 2, 1, 0.25, 0.5);
    loom_schedule *coarse = NULL, *fine = NULL;
    loom_error err = {0, ""};
    const char *log = NULL;
    ck_assert_int_eq(run(loom_static_encoder_first(), g, NULL, 0, &coarse, NULL, &err),
                     LOOM_OK);
    ck_assert_msg(run(loom_static_optimus_bubble(), g, NULL, 1, &fine, &log, &err) == LOOM_OK,
                  "%s", err.message);
    double tc = makespan(g, coarse, NULL), tf = makespan(g, fine, NULL);
    ck_assert_msg(tf < tc, "%s", log);
    check_invariants(g, fine);
    ck_assert_ptr_nonnull(strstr(log, "efficiency coarse"));
    /* the log's figures: coarse and fine makespans, efficiencies */
    double lc = 0, lf = 0, lb = 0, ec = 0, ef = 0;
    int fm = 0, bm = 0;
    ck_assert_int_eq(sscanf(log, "coarse %lf ms, fine %lf ms, backbone alone %lf ms; "
                                 "efficiency coarse %lf%% fine %lf%%; %d forward + %d",
                            &lc, &lf, &lb, &ec, &ef, &fm, &bm), 7);
    ck_assert_double_eq_tol(lc, tc, 1e-3);
    ck_assert_double_eq_tol(lf, tf, 1e-3);
    ck_assert_double_eq_tol(lb, (8 + 4 - 1) * 3.0, 1e-3); /* 1F1B alone */
    ck_assert_int_ge(fm, 1);
    ck_assert_double_gt(ef, ec);
    /* each accepted move takes one unit out of PRE / POST: <= N_mb each */
    ck_assert_int_le(fm, 8);
    ck_assert_int_le(bm, 8);
    loom_schedule_free(coarse);
    loom_schedule_free(fine);
    loom_graph_free(g);
}
END_TEST

START_TEST(fills_tp_communication)
{
    /* one rank, so no pipeline bubble at all: only the backbone's exposed
     * TP communication (0.4 of each F, 0.8 of each B) can hold encoder
     * layers, as fills (Optimus's kernel-level scheduling, section 4.3) */
    loom_stage_graph *g = colocated(1, 4, 3, 0.5, 1);
    loom_schedule *coarse = NULL, *fine = NULL;
    loom_error err = {0, ""};
    const char *log = NULL;
    g->comm_ms = calloc((size_t)g->n_stages, sizeof(double));
    for (int32_t v = 0; v < g->n_stages; v++)
        if (g->module[v] == 1)
            g->comm_ms[v] = g->kind[v] == LOOM_STAGE_F ? 0.4 : 0.8;
    ck_assert_int_eq(run(loom_static_encoder_first(), g, NULL, 0, &coarse, NULL, &err),
                     LOOM_OK);
    ck_assert_msg(run(loom_static_optimus_bubble(), g, NULL, 1, &fine, &log, &err) == LOOM_OK,
                  "%s", err.message);
    double tc = makespan(g, coarse, NULL), tf = makespan(g, fine, NULL);
    ck_assert_double_eq_tol(tc, 4 * 3 + 4 * 3 * 1.5, 1e-9); /* everything in turn */
    ck_assert_msg(tf < tc, "%s", log);
    /* no order hides more than the backbone's 4.8 ms of communication */
    ck_assert_double_ge(tf, tc - 4.8 - 1e-9);
    int32_t fills = 0;
    for (int32_t v = 0; v < g->n_stages; v++)
        if (fine->fill_hosts[v] > 0) {
            fills++;
            ck_assert_int_eq(g->module[v], 0); /* encoder layers fill... */
            int32_t at = 0;
            while (fine->order[at] != v)
                at++;
            for (int32_t k = 1; k <= fine->fill_hosts[v]; k++) /* ...backbone stages */
                ck_assert_int_eq(g->module[fine->order[at + k]], 1);
        }
    ck_assert_int_gt(fills, 0);
    check_invariants(g, fine);
    /* without the communication figures there is nothing to fill */
    free(g->comm_ms);
    g->comm_ms = NULL;
    loom_schedule *plain = NULL;
    ck_assert_int_eq(run(loom_static_optimus_bubble(), g, NULL, 1, &plain, &log, &err), LOOM_OK);
    ck_assert_double_eq_tol(makespan(g, plain, NULL), tc, 1e-9);
    loom_schedule_free(plain);
    loom_schedule_free(coarse);
    loom_schedule_free(fine);
    loom_graph_free(g);
}
END_TEST

START_TEST(never_slower_than_coarse)
{
    uint64_t st = 3;
    for (int trial = 0; trial < 40; trial++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        int P = 1 + (int)((st >> 33) % 4), M = 1 + (int)((st >> 40) % 8);
        int layers = P * (1 + (int)((st >> 45) % 3));
        double f = 0.1 * (1 + (double)((st >> 50) % 10));
        loom_stage_graph *g = colocated(P, M, layers, f, 2 * f);
        loom_schedule *coarse = NULL, *fine = NULL;
        loom_error err = {0, ""};
        static const char *const meg[] = {"warmup", "megatron", NULL};
        ck_assert_int_eq(run(loom_static_encoder_first(), g, NULL, 0, &coarse, NULL, &err),
                         LOOM_OK);
        ck_assert_msg(run(loom_static_optimus_bubble(), g, meg, 1, &fine, NULL, &err) ==
                          LOOM_OK, "%s", err.message);
        ck_assert_double_le(makespan(g, fine, NULL), makespan(g, coarse, NULL) + 1e-9);
        check_invariants(g, fine);
        loom_schedule_free(coarse);
        loom_schedule_free(fine);
        loom_graph_free(g);
    }
}
END_TEST

START_TEST(replica_pipelines)
{
    /* Optimus with m = 2: two encoder pipelines of 2 stages on ranks 0-1
     * and 2-3, microbatches dealt alternately */
    loom_stage_graph *g = layout(4, 8, 4, 2, 2, 0.4, 0.8);
    loom_schedule *coarse = NULL, *fine = NULL;
    loom_error err = {0, ""};
    const char *log = NULL;
    ck_assert_int_eq(run(loom_static_encoder_first(), g, NULL, 0, &coarse, NULL, &err),
                     LOOM_OK);
    ck_assert_msg(run(loom_static_optimus_bubble(), g, NULL, 1, &fine, &log, &err) == LOOM_OK,
                  "%s", err.message);
    double tc = makespan(g, coarse, NULL), tf = makespan(g, fine, NULL);
    ck_assert_msg(tf < tc, "%s", log);
    check_invariants(g, fine);
    /* pipeline 1's stages stay on ranks 2-3 */
    for (int32_t v = 0; v < g->n_stages; v++)
        if (g->flow[v] == 1)
            ck_assert_int_ge(g->rank[v], 2);
    loom_schedule_free(coarse);
    loom_schedule_free(fine);
    loom_graph_free(g);
}
END_TEST

START_TEST(no_bubbles_no_moves)
{
    /* one rank: the backbone runs back to back, nothing to fill */
    loom_stage_graph *g = colocated(1, 4, 3, 0.5, 1);
    loom_schedule *coarse = NULL, *fine = NULL;
    loom_error err = {0, ""};
    const char *log = NULL;
    ck_assert_int_eq(run(loom_static_encoder_first(), g, NULL, 0, &coarse, NULL, &err),
                     LOOM_OK);
    ck_assert_int_eq(run(loom_static_optimus_bubble(), g, NULL, 1, &fine, &log, &err),
                     LOOM_OK);
    ck_assert_int_eq(memcmp(coarse->order, fine->order,
                            (size_t)g->n_stages * sizeof(int32_t)), 0);
    ck_assert_ptr_nonnull(strstr(log, "0 forward + 0 backward moves"));
    loom_schedule_free(coarse);
    loom_schedule_free(fine);
    loom_graph_free(g);
}
END_TEST

START_TEST(no_passes_is_encoder_first)
{
    loom_stage_graph *g = colocated(4, 6, 8, 0.3, 0.6);
    loom_schedule *coarse = NULL, *fine = NULL;
    loom_error err = {0, ""};
    static const char *const none[] = {"passes", "none", "warmup", "megatron", NULL};
    ck_assert_int_eq(run(loom_static_encoder_first(), g, NULL, 0, &coarse, NULL, &err),
                     LOOM_OK);
    ck_assert_int_eq(run(loom_static_optimus_bubble(), g, none, 1, &fine, NULL, &err),
                     LOOM_OK);
    ck_assert_int_eq(memcmp(coarse->order, fine->order,
                            (size_t)g->n_stages * sizeof(int32_t)), 0);
    /* forward only: never slower either */
    static const char *const fwd[] = {"passes", "forward", NULL};
    loom_schedule *f2 = NULL;
    ck_assert_int_eq(run(loom_static_optimus_bubble(), g, fwd, 1, &f2, NULL, &err),
                     LOOM_OK);
    ck_assert_double_le(makespan(g, f2, NULL), makespan(g, coarse, NULL) + 1e-9);
    loom_schedule_free(coarse);
    loom_schedule_free(fine);
    loom_schedule_free(f2);
    loom_graph_free(g);
}
END_TEST

START_TEST(needs_the_simulator)
{
    loom_stage_graph *g = colocated(2, 2, 2, 0.5, 1);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(run(loom_static_optimus_bubble(), g, NULL, 0, &s, NULL, &err),
                     LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.message, "loom.simulator"));
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_optimus_bubble();
    cJSON *m = loom_test_json(loom_test_src("plugins/optimus-bubble/manifest.json"));
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring, info->version);
    ck_assert_ptr_nonnull(info->role(LOOM_ROLE_INTERLEAVER));
    cJSON_Delete(m);
}
END_TEST

/* The optimus-bubble suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("optimus-bubble");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fills_bubbles_and_is_faster);
    tcase_add_test(tc, never_slower_than_coarse);
    tcase_add_test(tc, fills_tp_communication);
    tcase_add_test(tc, replica_pipelines);
    tcase_add_test(tc, no_bubbles_no_moves);
    tcase_add_test(tc, no_passes_is_encoder_first);
    tcase_add_test(tc, needs_the_simulator);
    tcase_add_test(tc, manifest_matches_binary);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
