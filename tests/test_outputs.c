/* test_outputs.c - the plan outputs on simulated plans: plan.json (stages,
 * per-rank actions and their placement rules), the Chrome trace (events,
 * memory counters against the simulator's peaks), the PyTorch schedule CSV
 * (parsed back and replayed column by column), the SVG timeline, the
 * summary table, and loom_write_outputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include "output.h"

/* ---- fixtures ------------------------------------------------------------- */

static double fwd[64], bwd[64], act[64];

/* A plan and everything it borrows. */
typedef struct fixture {
    loom_stage_times st;
    loom_problem problem;
    loom_plan plan;
} fixture;

/* Stage ids of a stage-times graph with V = 1 (see sdk/kits/graph/graph_stage_times.c):
 * stages per microbatch, and the ids of F and of B (or I; W = I + 1) of
 * microbatch mb at position s. */
static int32_t per_mb(int P, int split)
{
    return P * (split ? 3 : 2);
}

static int32_t fid(int P, int split, int mb, int s)
{
    return mb * per_mb(P, split) + s;
}

static int32_t bid(int P, int split, int mb, int s)
{
    return mb * per_mb(P, split) + P + (split ? 2 * (P - 1 - s) : P - 1 - s);
}

/* Megatron 1F1B per rank; with split backward each B becomes I then W. */
static loom_schedule *one_f_one_b(int P, int M, int split)
{
    loom_schedule *sc = loom_schedule_new(P, M * per_mb(P, split));
    int k = 0;
    for (int r = 0; r < P; r++) {
        sc->rank_off[r] = k;
        int warm = P - r - 1 < M ? P - r - 1 : M, f = 0, b = 0;
        for (; f < warm; f++)
            sc->order[k++] = fid(P, split, f, r);
        while (f < M || b < M) {
            if (f < M)
                sc->order[k++] = fid(P, split, f++, r);
            sc->order[k++] = bid(P, split, b, r);
            if (split)
                sc->order[k++] = bid(P, split, b, r) + 1;
            b++;
        }
    }
    sc->rank_off[P] = k;
    return sc;
}

/* Allocates the metric arrays, simulates and fills the plan's fields. */
static void simulate_into(fixture *fx, loom_stage_graph *g, loom_schedule *sc)
{
    loom_plan *plan = &fx->plan;
    plan->graph = g;
    plan->schedule = sc;
    loom_metrics_init(&plan->metrics);
    plan->metrics.start_ms = calloc((size_t)g->n_stages, sizeof(double));
    plan->metrics.end_ms = calloc((size_t)g->n_stages, sizeof(double));
    plan->metrics.span_ms = calloc((size_t)g->n_ranks, sizeof(double));
    plan->metrics.peak_bytes = calloc((size_t)g->n_ranks, sizeof(int64_t));
    loom_error err = {0};
    int rc = loom_simulate(g, sc, &plan->metrics, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    plan->problem = &fx->problem;
    plan->plan_time_ms = 12.5;
    plan->evaluations = 42;
    plan->n_candidates = 1;
}

/* The P-rank, M-microbatch stage-times plan (F = 1 ms, B = 2 ms, or
 * I = W = 1 ms when split) under 1F1B, `stat` static bytes per rank and
 * `bytes` activation bytes per stage pair. */
static void stage_times_plan(fixture *fx, int P, int M, double p2p, int split,
                             int64_t stat, double bytes)
{
    memset(fx, 0, sizeof *fx);
    for (int i = 0; i < P; i++) {
        fwd[i] = 1;
        bwd[i] = 2;
        act[i] = bytes;
    }
    fx->st.ranks = P;
    fx->st.microbatches = M;
    fx->st.virtual_stages = 1;
    fx->st.forward_ms = fwd;
    fx->st.backward_ms = bwd;
    fx->st.activation_bytes = act;
    fx->st.p2p_ms = p2p;
    fx->problem.struct_size = sizeof fx->problem;
    fx->problem.kind = LOOM_PROBLEM_STAGE_TIMES;
    fx->problem.stage_times = &fx->st;
    fx->problem.parallel.pp = P;
    fx->problem.parallel.microbatches = M;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&fx->st, split, &g, &err), LOOM_OK);
    for (int r = 0; r < P; r++)
        g->static_bytes[r] = stat;
    simulate_into(fx, g, one_f_one_b(P, M, split));
    snprintf(fx->plan.label, sizeof fx->plan.label, "1f1b P=%d M=%d", P, M);
}

/* A P-rank stage-times plan with V virtual stages and M microbatches whose
 * position g runs on rank_of[g] (NULL: g mod P); each rank runs its stages
 * in stage-id order (a topological order, so it cannot deadlock). */
static void placed_plan(fixture *fx, int P, int V, int M, int split, const int *rank_of)
{
    memset(fx, 0, sizeof *fx);
    for (int i = 0; i < P * V; i++) {
        fwd[i] = 1;
        bwd[i] = 2;
        act[i] = 1;
    }
    fx->st.ranks = P;
    fx->st.microbatches = M;
    fx->st.virtual_stages = V;
    fx->st.forward_ms = fwd;
    fx->st.backward_ms = bwd;
    fx->st.input_grad_ms = fwd;
    fx->st.weight_grad_ms = fwd;
    fx->st.split_backward = split;
    fx->st.activation_bytes = act;
    fx->problem.struct_size = sizeof fx->problem;
    fx->problem.kind = LOOM_PROBLEM_STAGE_TIMES;
    fx->problem.stage_times = &fx->st;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&fx->st, split, &g, &err), LOOM_OK);
    for (int32_t s = 0; rank_of && s < g->n_stages; s++)
        g->rank[s] = rank_of[g->position[s]];
    loom_schedule *sc = loom_schedule_new(P, g->n_stages);
    int32_t k = 0;
    for (int r = 0; r < P; r++) {
        sc->rank_off[r] = k;
        for (int32_t s = 0; s < g->n_stages; s++)
            if (g->rank[s] == r)
                sc->order[k++] = s;
    }
    sc->rank_off[P] = k;
    simulate_into(fx, g, sc);
    snprintf(fx->plan.label, sizeof fx->plan.label, "placed P=%d V=%d", P, V);
}

/* Frees what the fixture builders allocated. */
static void fixture_free(fixture *fx)
{
    free(fx->plan.metrics.start_ms);
    free(fx->plan.metrics.end_ms);
    free(fx->plan.metrics.span_ms);
    free(fx->plan.metrics.peak_bytes);
    loom_graph_free(fx->plan.graph);
    loom_schedule_free(fx->plan.schedule);
    if (fx->plan.partition) {
        free(fx->plan.partition->flows);
        free(fx->plan.partition->positions);
        free(fx->plan.partition->spans);
        free(fx->plan.partition->subs);
        free(fx->plan.partition);
    }
}

/* A two-module model for the fixtures that name modules. */
static const loom_layer toy_layers[16];
static const loom_module toy_modules[2] = {
    {.name = "vit", .n_layers = 16, .layers = toy_layers},
    {.name = "llm", .n_layers = 16, .layers = toy_layers},
};
static const loom_model toy_model = {.name = "toy-vlm", .n_modules = 2,
                                     .modules = toy_modules};

/* Two flows on 2 ranks: flow 0 ("vit", positions 0-1) splits each of 2
 * microbatches into 2 subs; flow 1 ("llm", positions 0-1) consumes both
 * subs. Stage ids are laid out so each rank's id order is its schedule.
 * Pair 0 has two layer entries with different policies. Cross-rank edges
 * carry 0.25 ms. */
static void two_flow_plan(fixture *fx, char names[][16])
{
    enum { N = 24, E = 22, PAIRS = 12 };
    memset(fx, 0, sizeof *fx);
    fx->problem.struct_size = sizeof fx->problem;
    fx->problem.kind = LOOM_PROBLEM_MODEL;
    fx->problem.model = &toy_model;
    loom_stage_graph *g = loom_graph_alloc(N, E, 2, 4, PAIRS, PAIRS + 1);
    ck_assert_ptr_nonnull(g);
    g->n_microbatches = 2;
    int32_t f0[2][2][2], f1[2][2], b0[2][2][2], b1[2][2];
    int32_t id = 0, e = 0;
#define STAGE(R, K, FL, POS, MB, SUB)                                           \
    (g->rank[id] = (R), g->kind[id] = (K), g->flow[id] = (FL),                 \
     g->module[id] = (FL), g->position[id] = (POS), g->chunk[id] = (FL),        \
     g->microbatch[id] = (MB), g->sub[id] = (SUB),                              \
     g->group[id] = (FL) * 2 + (MB), g->pred_off[id] = e, id++)
#define PRED(P)                                                                \
    (g->pred[e] = (P), g->pred_p2p_ms[e] = g->rank[P] != g->rank[id - 1] ? 0.25 : 0, \
     e++, g->pred_off[id] = e)
    for (int mb = 0; mb < 2; mb++)
        for (int sub = 0; sub < 2; sub++)
            for (int pos = 0; pos < 2; pos++) {
                f0[mb][sub][pos] = STAGE(pos, LOOM_STAGE_F, 0, pos, mb, sub);
                if (pos == 1)
                    PRED(f0[mb][sub][0]);
            }
    for (int mb = 0; mb < 2; mb++)
        for (int pos = 0; pos < 2; pos++) {
            f1[mb][pos] = STAGE(pos, LOOM_STAGE_F, 1, pos, mb, 0);
            if (pos == 0) {
                PRED(f0[mb][0][1]);
                PRED(f0[mb][1][1]);
            } else {
                PRED(f1[mb][0]);
            }
        }
    for (int mb = 0; mb < 2; mb++)
        for (int pos = 1; pos >= 0; pos--) {
            b1[mb][pos] = STAGE(pos, LOOM_STAGE_B, 1, pos, mb, 0);
            PRED(pos == 1 ? f1[mb][1] : b1[mb][1]);
        }
    for (int mb = 0; mb < 2; mb++)
        for (int sub = 0; sub < 2; sub++)
            for (int pos = 1; pos >= 0; pos--) {
                b0[mb][sub][pos] = STAGE(pos, LOOM_STAGE_B, 0, pos, mb, sub);
                PRED(pos == 1 ? b1[mb][0] : b0[mb][sub][1]);
            }
#undef STAGE
#undef PRED
    ck_assert_int_eq(id, N);
    ck_assert_int_eq(e, E);
    g->pred_off[N] = e;
    for (int k = 0; k < 4; k++) {
        g->group_flow[k] = k / 2;
        g->group_microbatch[k] = k % 2;
    }
    /* Pairs: F with its B; pair 0 gets entries 0 and 1, pair p entry p + 1. */
    int32_t pair = 0, entry = 0;
    for (int32_t s = 0; s < N; s++) {
        if (g->kind[s] != LOOM_STAGE_F)
            continue;
        int32_t b = -1;
        for (int32_t t = 0; t < N; t++)
            if (g->kind[t] == LOOM_STAGE_B && g->flow[t] == g->flow[s] &&
                g->position[t] == g->position[s] && g->microbatch[t] == g->microbatch[s] &&
                g->sub[t] == g->sub[s])
                b = t;
        ck_assert_int_ge(b, 0);
        g->pair[s] = g->pair[b] = pair;
        g->pair_forward[pair] = s;
        g->pair_backward[pair] = b;
        g->pair_layer_off[pair] = entry;
        int n_entries = pair == 0 ? 2 : 1;
        for (int k = 0; k < n_entries; k++, entry++)
            for (int p = 0; p < LOOM_POLICY_COUNT; p++) {
                loom_policy_option *o = &g->layer_options[entry * LOOM_POLICY_COUNT + p];
                o->forward_ms = 1.0 / n_entries;
                o->backward_ms = 2.0 / n_entries;
                o->activation_bytes = 100;
            }
        pair++;
    }
    g->pair_layer_off[pair] = entry;
    ck_assert_int_eq(pair, PAIRS);
    g->layer_policy[1] = LOOM_POLICY_FULL;
    loom_graph_apply_policies(g);

    loom_schedule *sc = loom_schedule_new(2, N);
    int k = 0;
    for (int r = 0; r < 2; r++) {
        sc->rank_off[r] = k;
        for (int32_t s = 0; s < N; s++)
            if (g->rank[s] == r)
                sc->order[k++] = s;
    }
    sc->rank_off[2] = k;
    simulate_into(fx, g, sc);
    snprintf(fx->plan.label, sizeof fx->plan.label, "two flows");
    /* Expected CSV cells, numbered independently of the writer: flow 0's
     * positions are stages 0-1, flow 1's 2-3; flow 0 counts (mb, sub). */
    for (int32_t s = 0; s < N; s++) {
        int unit = g->flow[s] == 0 ? g->microbatch[s] * 2 + g->sub[s] : g->microbatch[s];
        snprintf(names[s], 16, "%d%c%d", g->flow[s] * 2 + g->position[s],
                 "FBIW"[g->kind[s]], unit);
    }
}

/* Expected CSV cell of every stage of a single-flow stage-times plan. */
static void stage_times_names(const loom_stage_graph *g, char names[][16])
{
    for (int32_t s = 0; s < g->n_stages; s++)
        snprintf(names[s], 16, "%d%c%d", g->position[s], "FBIW"[g->kind[s]],
                 g->microbatch[s]);
}

typedef int (*writer_fn)(const loom_plan *, FILE *, loom_error *);

/* Runs a writer into memory; the result is malloc'd. */
static char *render(writer_fn fn, const loom_plan *plan)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    loom_error err = {0};
    int rc = fn(plan, f, &err);
    fclose(f);
    ck_assert_msg(rc == LOOM_OK, "writer failed: %s", err.message);
    return buf;
}

/* JSON accessors that fail the test on a missing or mistyped key. */
static cJSON *parse(const char *text)
{
    cJSON *doc = cJSON_Parse(text);
    ck_assert_msg(doc != NULL, "output is not JSON near: %.60s", cJSON_GetErrorPtr());
    return doc;
}

static const cJSON *get(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    ck_assert_msg(v != NULL, "missing key %s", key);
    return v;
}

static double num(const cJSON *obj, const char *key)
{
    const cJSON *v = get(obj, key);
    ck_assert_msg(cJSON_IsNumber(v), "%s is not a number", key);
    return v->valuedouble;
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *v = get(obj, key);
    ck_assert_msg(cJSON_IsString(v), "%s is not a string", key);
    return v->valuestring;
}

/* Edge id of producer p -> consumer s, or -1. */
static int32_t edge_of(const loom_stage_graph *g, int32_t p, int32_t s)
{
    for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++)
        if (g->pred[e] == p)
            return e;
    return -1;
}

/* Edges whose producer and consumer are on different ranks. */
static int32_t cross_edges(const loom_stage_graph *g)
{
    int32_t n = 0;
    for (int32_t s = 0; s < g->n_stages; s++)
        for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++)
            n += g->rank[g->pred[e]] != g->rank[s];
    return n;
}

/* ---- validators --------------------------------------------------------------- */

enum { A_ISEND, A_IRECV, A_WAIT_ISEND, A_WAIT_IRECV, A_STAGE, A_COUNT };

/* Action name -> A_* (both stage actions map to A_STAGE). */
static int action_type(const char *name)
{
    static const char *const names[] = {"isend", "irecv", "wait_isend", "wait_irecv"};
    for (int i = 0; i < 4; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    ck_assert_msg(strcmp(name, "forward_stage") == 0 || strcmp(name, "backward_stage") == 0,
                  "unknown action %s", name);
    return A_STAGE;
}

/* Time of an action for ordering: start_ms of a stage, t_ms otherwise. */
static double action_time(const cJSON *a, int type)
{
    return num(a, type == A_STAGE ? "start_ms" : "t_ms");
}

/* Checks "rank_actions" against the plan: every stage once, in schedule
 * order, as forward_stage / backward_stage; every cross-rank edge exactly
 * one isend right after its producer, one irecv before its consumer, one
 * wait_irecv immediately before the consumer and one wait_isend before the
 * producer rank's first stage starting at or after the transfer's end;
 * times never decrease along a rank. */
static void check_actions(const loom_plan *plan, const cJSON *doc)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    const double *start = plan->metrics.start_ms, *end = plan->metrics.end_ms;
    const cJSON *ranks = get(doc, "rank_actions");
    ck_assert_int_eq(cJSON_GetArraySize(ranks), g->n_ranks);
    int32_t E = g->pred_off[g->n_stages];
    int (*seen_edge)[4] = calloc((size_t)E + 1, sizeof *seen_edge);
    int *seen = calloc((size_t)g->n_stages, sizeof(int));
    int counts[A_COUNT] = {0};
    for (int32_t r = 0; r < g->n_ranks; r++) {
        const cJSON *ra = cJSON_GetArrayItem(ranks, r);
        ck_assert_int_eq((int)num(ra, "rank"), r);
        const cJSON *acts = get(ra, "actions");
        int n = cJSON_GetArraySize(acts);
        int32_t next = sc->rank_off[r];
        double prev_t = -1;
        int32_t last_stage = -1;
        int only_isends_since_stage = 1;
        for (int i = 0; i < n; i++) {
            const cJSON *a = cJSON_GetArrayItem(acts, i);
            int type = action_type(str(a, "action"));
            double t = action_time(a, type);
            ck_assert_msg(t >= prev_t - 1e-9, "rank %d action %d at %g ms after %g ms",
                          r, i, t, prev_t);
            prev_t = t;
            counts[type]++;
            int32_t s = (int32_t)num(a, "stage");
            ck_assert_int_ge(s, 0);
            ck_assert_int_lt(s, g->n_stages);
            ck_assert_int_eq(g->rank[s], r);
            if (type == A_STAGE) {
                ck_assert_int_lt(next, sc->rank_off[r + 1]);
                ck_assert_int_eq(s, sc->order[next++]);
                seen[s]++;
                char kind[2] = {"FBIW"[g->kind[s]], 0};
                ck_assert_str_eq(str(a, "kind"), kind);
                ck_assert_str_eq(str(a, "action"), g->kind[s] == LOOM_STAGE_F
                                                       ? "forward_stage" : "backward_stage");
                ck_assert_double_eq_tol(num(a, "start_ms"), start[s], 1e-12);
                ck_assert_double_eq_tol(num(a, "end_ms"), end[s], 1e-12);
                ck_assert_int_eq((int)num(a, "microbatch"), g->microbatch[s]);
                ck_assert_int_eq((int)num(a, "chunk"), g->chunk[s]);
                /* every cross-rank input was waited for right before */
                for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++)
                    if (g->rank[g->pred[e]] != r)
                        ck_assert_int_eq(seen_edge[e][A_WAIT_IRECV], 1);
                last_stage = s;
                only_isends_since_stage = 1;
                continue;
            }
            int32_t q = (int32_t)num(a, "peer_stage");
            ck_assert_int_eq((int)num(a, "peer"), g->rank[q]);
            ck_assert_int_ne(g->rank[q], r);
            int producer_side = type == A_ISEND || type == A_WAIT_ISEND;
            int32_t e = producer_side ? edge_of(g, s, q) : edge_of(g, q, s);
            ck_assert_int_ge(e, 0);
            seen_edge[e][type]++;
            ck_assert_int_eq(seen_edge[e][type], 1);
            if (type == A_ISEND) {
                ck_assert_int_eq(last_stage, s);
                ck_assert(only_isends_since_stage);
                ck_assert_double_eq_tol(num(a, "t_ms"), end[s], 1e-12);
            } else if (type == A_WAIT_ISEND) {
                ck_assert_int_eq(seen_edge[e][A_ISEND], 1);
                double done = end[s] + g->pred_p2p_ms[e];
                ck_assert(num(a, "t_ms") >= done - 1e-12);
                /* the stage before it started before the transfer ended */
                if (last_stage != s)
                    ck_assert(start[last_stage] < done);
                /* the next stage on this rank starts at or after it */
                for (int j = i + 1; j < n; j++) {
                    const cJSON *b = cJSON_GetArrayItem(acts, j);
                    if (action_type(str(b, "action")) == A_STAGE) {
                        ck_assert(num(b, "start_ms") >= done - 1e-12);
                        break;
                    }
                }
            } else if (type == A_IRECV) {
                ck_assert_int_eq(seen[s], 0);
                ck_assert(num(a, "t_ms") >= end[q] - 1e-12);
            } else { /* wait_irecv: only waits for s until s itself */
                ck_assert_int_eq(seen_edge[e][A_IRECV], 1);
                ck_assert(num(a, "t_ms") <= start[s] + 1e-12);
                int j = i + 1;
                for (; j < n; j++) {
                    const cJSON *b = cJSON_GetArrayItem(acts, j);
                    int bt = action_type(str(b, "action"));
                    if (bt == A_STAGE)
                        break;
                    ck_assert_int_eq(bt, A_WAIT_IRECV);
                    ck_assert_int_eq((int)num(b, "stage"), s);
                }
                ck_assert_int_lt(j, n);
                ck_assert_int_eq((int)num(cJSON_GetArrayItem(acts, j), "stage"), s);
            }
            if (type != A_ISEND)
                only_isends_since_stage = 0;
        }
        ck_assert_int_eq(next, sc->rank_off[r + 1]);
    }
    for (int32_t s = 0; s < g->n_stages; s++)
        ck_assert_int_eq(seen[s], 1);
    int32_t cross = cross_edges(g);
    for (int t = 0; t < 4; t++)
        ck_assert_int_eq(counts[t], cross);
    ck_assert_int_eq(counts[A_STAGE], g->n_stages);
    for (int32_t s = 0; s < g->n_stages; s++)
        for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++)
            for (int t = 0; t < 4; t++)
                ck_assert_int_eq(seen_edge[e][t], g->rank[g->pred[e]] != g->rank[s]);
    free(seen_edge);
    free(seen);
}

/* Parses the CSV back: one row per rank, equal widths, each cell blank or
 * a stage's expected name; every stage exactly once, in its rank's row in
 * schedule order; every dependency in an earlier column; and a rank idles
 * in a column only while its next stage still waits on that column or a
 * later one (the greedy lock-step rule). */
static void check_csv(const loom_plan *plan, const char *csv, char names[][16])
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    int32_t n = g->n_stages;
    int32_t *col = malloc((size_t)n * sizeof(int32_t));
    int32_t *row_of = malloc((size_t)n * sizeof(int32_t));
    for (int32_t s = 0; s < n; s++)
        col[s] = -1;
    int width = -1, rows = 0;
    const char *p = csv;
    while (*p) {
        const char *eol = strchr(p, '\n');
        ck_assert_ptr_nonnull(eol);
        ck_assert_int_lt(rows, g->n_ranks);
        int c = 0;
        int32_t next = sc->rank_off[rows];
        const char *cell = p;
        for (;;) {
            const char *stop = cell;
            while (stop < eol && *stop != ',')
                stop++;
            size_t len = (size_t)(stop - cell);
            if (len > 0) {
                ck_assert_int_lt((int)len, 16);
                int32_t found = -1;
                for (int32_t s = 0; s < n; s++)
                    if (strlen(names[s]) == len && memcmp(names[s], cell, len) == 0)
                        found = s;
                ck_assert_msg(found >= 0, "unknown cell %.*s", (int)len, cell);
                ck_assert_int_eq(col[found], -1);
                ck_assert_int_eq(g->rank[found], rows);
                ck_assert_int_lt(next, sc->rank_off[rows + 1]);
                ck_assert_int_eq(found, sc->order[next++]);
                col[found] = c;
                row_of[found] = rows;
            }
            c++;
            if (stop == eol)
                break;
            cell = stop + 1;
        }
        ck_assert_int_eq(next, sc->rank_off[rows + 1]);
        if (width < 0)
            width = c;
        ck_assert_int_eq(c, width);
        rows++;
        p = eol + 1;
    }
    ck_assert_int_eq(rows, g->n_ranks);
    for (int32_t s = 0; s < n; s++) {
        ck_assert_int_ge(col[s], 0);
        for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++)
            ck_assert_int_lt(col[g->pred[e]], col[s]);
    }
    /* Idle cells: the rank's next stage was not ready in that column. */
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int c = 0;
        for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++) {
            int32_t s = sc->order[i];
            for (; c < col[s]; c++) {
                int waiting = 0;
                for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++)
                    waiting |= col[g->pred[e]] >= c;
                ck_assert_msg(waiting, "rank %d idles in column %d though %s is ready",
                              r, c, names[s]);
            }
            c = col[s] + 1;
        }
    }
    free(col);
    free(row_of);
}

/* Checks the trace: metadata, one X event per stage with its timing, and
 * memory counters that never go negative, never go back in time and peak
 * at the simulator's per-rank peak. */
static void check_trace(const loom_plan *plan, const cJSON *doc)
{
    const loom_stage_graph *g = plan->graph;
    ck_assert_str_eq(str(doc, "displayTimeUnit"), "ms");
    const cJSON *events = get(doc, "traceEvents");
    ck_assert(cJSON_IsArray(events));
    int *seen = calloc((size_t)g->n_stages, sizeof(int));
    int64_t *peak = calloc((size_t)g->n_ranks, sizeof(int64_t));
    int64_t *last = calloc((size_t)g->n_ranks, sizeof(int64_t));
    double *last_ts = calloc((size_t)g->n_ranks, sizeof(double));
    int *named = calloc((size_t)g->n_ranks, sizeof(int));
    int counters = 0;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events) {
        const char *ph = str(ev, "ph");
        int pid = (int)num(ev, "pid");
        ck_assert_int_ge(pid, 0);
        ck_assert_int_lt(pid, g->n_ranks);
        if (strcmp(ph, "X") == 0) {
            str(ev, "name");
            num(ev, "tid");
            const cJSON *args = get(ev, "args");
            int32_t s = (int32_t)num(args, "stage");
            seen[s]++;
            ck_assert_int_eq(pid, g->rank[s]);
            char cat[2] = {"FBIW"[g->kind[s]], 0};
            ck_assert_str_eq(str(ev, "cat"), cat);
            ck_assert_double_eq_tol(num(ev, "ts"), plan->metrics.start_ms[s] * 1000, 1e-6);
            ck_assert_double_eq_tol(num(ev, "dur"),
                                    (plan->metrics.end_ms[s] - plan->metrics.start_ms[s]) * 1000,
                                    1e-6);
            ck_assert_int_eq((int)num(args, "microbatch"), g->microbatch[s]);
            ck_assert_int_eq((int)num(args, "sub"), g->sub[s]);
            ck_assert_int_eq((int)num(args, "group"), g->group[s]);
            str(args, "policy");
        } else if (strcmp(ph, "C") == 0) {
            ck_assert_str_eq(str(ev, "name"), "memory");
            double ts = num(ev, "ts");
            double bytes = num(get(ev, "args"), "bytes");
            ck_assert(bytes >= 0);
            ck_assert(ts >= last_ts[pid]);
            last_ts[pid] = ts;
            if ((int64_t)bytes > peak[pid])
                peak[pid] = (int64_t)bytes;
            last[pid] = (int64_t)bytes;
            counters++;
        } else if (strcmp(ph, "M") == 0 && strcmp(str(ev, "name"), "process_name") == 0) {
            char want[32];
            snprintf(want, sizeof want, "rank %d", pid);
            ck_assert_str_eq(str(get(ev, "args"), "name"), want);
            named[pid]++;
        }
    }
    for (int32_t s = 0; s < g->n_stages; s++)
        ck_assert_int_eq(seen[s], 1);
    for (int32_t r = 0; r < g->n_ranks; r++) {
        ck_assert_int_eq(named[r], 1);
        ck_assert_int_eq(peak[r], plan->metrics.peak_bytes[r]);
        ck_assert_int_eq(last[r], g->static_bytes[r]); /* all freed at the end */
    }
    /* one initial counter per rank plus one per allocation and release */
    int changes = 0;
    for (int32_t s = 0; s < g->n_stages; s++)
        changes += g->mem_delta_bytes[s] != 0;
    ck_assert_int_eq(counters, g->n_ranks + changes);
    free(seen);
    free(peak);
    free(last);
    free(last_ts);
    free(named);
}

/* Occurrences of `needle` in `hay`. */
static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* ---- tests ----------------------------------------------------------------------- */

START_TEST(test_plan_json_1f1b)
{
    fixture fx;
    stage_times_plan(&fx, 4, 8, 0, 0, 0, 1);
    char *text = render(loom_write_plan_json, &fx.plan);
    cJSON *doc = parse(text);
    ck_assert_int_eq((int)num(doc, "loom_plan"), 2);
    ck_assert_str_eq(str(doc, "label"), "1f1b P=4 M=8");
    /* format 2 on a stage-times plan: no samples, a loop-style CSV, no layout */
    ck_assert(cJSON_IsNull(get(doc, "iteration")));
    ck_assert_int_eq(cJSON_GetArraySize(get(doc, "data")), 0);
    const cJSON *csvj = get(doc, "schedule_csv");
    ck_assert(cJSON_IsTrue(get(csvj, "written")));
    ck_assert_int_eq((int)num(csvj, "stages"), 4);
    ck_assert_int_eq((int)num(csvj, "microbatches"), 8);
    ck_assert(cJSON_IsNull(get(csvj, "reason")));
    const cJSON *pl = get(doc, "placement");
    ck_assert_str_eq(str(pl, "style"), "loop");
    ck_assert_int_eq((int)num(pl, "stages_per_rank"), 1);
    const cJSON *tt = get(pl, "torchtitan");
    ck_assert_str_eq(str(tt, "pipeline_parallel_schedule"), "1F1B");
    ck_assert_int_eq((int)num(tt, "pipeline_parallel_degree"), 4);
    ck_assert_int_eq((int)num(tt, "pipeline_parallel_microbatch_size"), 1);
    ck_assert_int_eq((int)num(tt, "local_batch_size"), 8);
    ck_assert_ptr_null(cJSON_GetObjectItem(tt, "microbatches")); /* no such torchtitan option */
    const cJSON *ex = get(doc, "exports");
    ck_assert_str_eq(str(get(ex, "pytorch_csv"), "file"), "schedule.csv");
    ck_assert_str_eq(str(get(ex, "torchtitan"), "reason"),
                     "a stage-times problem has no model modules to name");
    const cJSON *mg = get(doc, "megatron");
    ck_assert(cJSON_IsNull(get(mg, "pipeline_model_parallel_layout")));
    ck_assert_str_eq(str(mg, "reason"), "a stage-times problem has no model layers to lay out");
    ck_assert_str_eq(str(doc, "problem"), "stage_times");
    ck_assert_int_eq((int)num(doc, "ranks"), 4);
    ck_assert_int_eq((int)num(doc, "microbatches"), 8);
    const cJSON *m = get(doc, "metrics");
    ck_assert_double_eq_tol(num(m, "makespan_ms"), 33.0, 1e-12);
    ck_assert_double_eq_tol(num(m, "bubble_ratio"), 3.0 / 11.0, 1e-15);
    ck_assert(cJSON_IsNull(get(m, "mfu")));
    ck_assert_ptr_null(cJSON_GetObjectItem(m, "plan_time_ms")); /* wall time: not in plan.json */
    ck_assert_int_eq((int)num(m, "evaluations"), 42);
    const cJSON *span = get(m, "span_ms"), *peak = get(m, "peak_mem_bytes");
    ck_assert_int_eq(cJSON_GetArraySize(span), 4);
    for (int r = 0; r < 4; r++) {
        ck_assert_double_eq(cJSON_GetArrayItem(span, r)->valuedouble,
                            fx.plan.metrics.span_ms[r]);
        ck_assert_int_eq((int)cJSON_GetArrayItem(peak, r)->valuedouble, 4 - r);
    }
    ck_assert(cJSON_IsNull(get(doc, "partition")));
    const cJSON *stages = get(doc, "stages");
    ck_assert_int_eq(cJSON_GetArraySize(stages), 64);
    for (int s = 0; s < 64; s++) {
        const cJSON *st = cJSON_GetArrayItem(stages, s);
        ck_assert_int_eq((int)num(st, "id"), s);
        ck_assert_int_eq((int)num(st, "rank"), fx.plan.graph->rank[s]);
        ck_assert_int_eq((int)num(st, "position"), fx.plan.graph->position[s]);
        ck_assert_double_eq(num(st, "start_ms"), fx.plan.metrics.start_ms[s]);
        ck_assert_double_eq(num(st, "end_ms"), fx.plan.metrics.end_ms[s]);
        ck_assert_str_eq(str(st, "policy"), "none");
        ck_assert(cJSON_IsNull(get(st, "module")));
    }
    /* mb 0 on position 3: F at 3..4 ms, B at 4..6 ms */
    ck_assert_str_eq(str(cJSON_GetArrayItem(stages, 3), "kind"), "F");
    ck_assert_double_eq(num(cJSON_GetArrayItem(stages, 4), "start_ms"), 4.0);
    ck_assert_str_eq(str(cJSON_GetArrayItem(stages, 4), "kind"), "B");
    ck_assert_int_eq((int)num(cJSON_GetArrayItem(stages, 4), "mem_delta_bytes"), -1);
    /* 8 microbatches x 3 forward + 3 backward rank crossings */
    ck_assert_int_eq(cross_edges(fx.plan.graph), 48);
    check_actions(&fx.plan, doc);
    /* rank 3 begins: irecv and wait for F mb0, F mb0 at 3..4 ms; F mb1
     * ends on rank 2 at 4 ms, so its irecv is posted before B mb0 (4 ms),
     * whose gradient is then sent to rank 2. */
    const cJSON *r3 = get(cJSON_GetArrayItem(get(doc, "rank_actions"), 3), "actions");
    const char *want[] = {"irecv", "wait_irecv", "forward_stage", "irecv",
                          "backward_stage", "isend", "wait_isend", "wait_irecv",
                          "forward_stage"};
    for (int i = 0; i < 9; i++)
        ck_assert_str_eq(str(cJSON_GetArrayItem(r3, i), "action"), want[i]);
    ck_assert_double_eq(num(cJSON_GetArrayItem(r3, 0), "t_ms"), 3.0);
    ck_assert_int_eq((int)num(cJSON_GetArrayItem(r3, 3), "stage"), 8 + 3);
    ck_assert_double_eq(num(cJSON_GetArrayItem(r3, 3), "t_ms"), 4.0);
    ck_assert_int_eq((int)num(cJSON_GetArrayItem(r3, 5), "peer"), 2);
    ck_assert_double_eq(num(cJSON_GetArrayItem(r3, 5), "t_ms"), 6.0);
    ck_assert_double_eq(num(cJSON_GetArrayItem(r3, 8), "start_ms"), 6.0);
    cJSON_Delete(doc);

    /* Same plan -> same bytes. */
    char *again = render(loom_write_plan_json, &fx.plan);
    ck_assert_str_eq(text, again);
    free(again);
    free(text);
    fixture_free(&fx);
}
END_TEST

/* On one rank there is no pipeline: placement.torchtitan gives the
 * microbatches as one local batch a step of accumulation (a stage-times
 * plan has no data parallelism), and the summary says so. */
START_TEST(test_plan_json_one_rank)
{
    fixture fx;
    stage_times_plan(&fx, 1, 4, 0, 0, 0, 1);
    char *text = render(loom_write_plan_json, &fx.plan);
    cJSON *doc = parse(text);
    const cJSON *pl = get(doc, "placement");
    ck_assert_str_eq(str(pl, "style"), "loop");
    const cJSON *tt = get(pl, "torchtitan");
    ck_assert_int_eq(cJSON_GetArraySize(tt), 3);
    ck_assert_int_eq((int)num(tt, "pipeline_parallel_degree"), 1);
    ck_assert_int_eq((int)num(tt, "local_batch_size"), 1);
    ck_assert_int_eq((int)num(tt, "global_batch_size"), 4);
    cJSON_Delete(doc);
    free(text);
    text = render(loom_write_summary, &fx.plan);
    loom_test_has(text, "  torchtitan    no pipeline: the whole model on one rank, 4 microbatches "
                        "a step\n");
    free(text);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_plan_json_p2p_wait_placement)
{
    /* 0.5 ms transfers: waits for sends land behind later stages. */
    fixture fx;
    stage_times_plan(&fx, 4, 8, 0.5, 0, 0, 1);
    /* at least the first microbatch's path with its six transfers */
    ck_assert(fx.plan.metrics.makespan_ms >= 33 + 6 * 0.5 - 1e-9);
    char *text = render(loom_write_plan_json, &fx.plan);
    cJSON *doc = parse(text);
    check_actions(&fx.plan, doc);
    /* Rank 0: F mb0 ends at 1 ms, its send ends at 1.5 ms; F mb1 starts at
     * 1 ms, so the wait_isend follows F mb1 and its isend, before F mb2
     * at 2 ms; the runtime reaches it at 2 ms. */
    const cJSON *r0 = get(cJSON_GetArrayItem(get(doc, "rank_actions"), 0), "actions");
    const char *want[] = {"forward_stage", "isend", "forward_stage", "isend",
                          "wait_isend", "forward_stage"};
    for (int i = 0; i < 6; i++)
        ck_assert_str_eq(str(cJSON_GetArrayItem(r0, i), "action"), want[i]);
    ck_assert_int_eq((int)num(cJSON_GetArrayItem(r0, 4), "stage"), 0);
    ck_assert_double_eq(num(cJSON_GetArrayItem(r0, 4), "t_ms"), 2.0);
    ck_assert_double_eq(num(cJSON_GetArrayItem(r0, 5), "start_ms"), 2.0);
    cJSON_Delete(doc);
    free(text);
    fixture_free(&fx);

    /* Split backward: I and W stages, W never communicates. */
    stage_times_plan(&fx, 4, 8, 0.5, 1, 0, 1);
    text = render(loom_write_plan_json, &fx.plan);
    doc = parse(text);
    check_actions(&fx.plan, doc);
    ck_assert_int_eq(count(text, "\"kind\": \"W\""), 2 * 32);
    cJSON_Delete(doc);
    free(text);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_plan_json_partition_and_modules)
{
    fixture fx;
    stage_times_plan(&fx, 4, 8, 0, 0, 0, 1);
    loom_stage_graph *g = fx.plan.graph;
    for (int32_t s = 0; s < g->n_stages; s++)
        g->module[s] = 0;
    g->layer_policy[0] = LOOM_POLICY_FULL; /* pair 0: F and B of mb 0, position 0 */
    fx.problem.kind = LOOM_PROBLEM_MODEL;
    fx.problem.model = &toy_model;
    loom_partition *part = calloc(1, sizeof *part);
    part->struct_size = sizeof *part;
    part->n_ranks = 4;
    part->n_flows = part->cap_flows = 1;
    part->flows = calloc(1, sizeof(loom_flow));
    part->flows[0] = (loom_flow){.pos_off = 0, .n_pos = 4, .module = 0, .segments = 1};
    part->n_positions = part->cap_positions = 4;
    part->positions = calloc(4, sizeof(loom_position));
    part->n_spans = part->cap_spans = 4;
    part->spans = calloc(4, sizeof(loom_span));
    for (int i = 0; i < 4; i++) {
        part->positions[i] = (loom_position){.rank = i, .span_off = i, .n_spans = 1};
        part->spans[i] = (loom_span){.module = 0, .first_layer = 4 * i, .n_layers = 4};
    }
    part->n_microbatches = part->cap_microbatches = 8;
    part->subs = malloc(8 * sizeof(int32_t));
    for (int i = 0; i < 8; i++)
        part->subs[i] = 1;
    part->tp = 2;
    snprintf(part->label, sizeof part->label, "uniform 4x4");
    fx.plan.partition = part;
    float prio[8] = {1, 0.5f, 0.25f, 0, 0, 0, 0, -1};
    fx.plan.priorities = prio;

    char *text = render(loom_write_plan_json, &fx.plan);
    cJSON *doc = parse(text);
    ck_assert_str_eq(str(doc, "problem"), "model");
    ck_assert_str_eq(str(doc, "model"), "toy-vlm");
    const cJSON *p = get(doc, "partition");
    ck_assert_str_eq(str(p, "label"), "uniform 4x4");
    ck_assert_int_eq((int)num(p, "tp"), 2);
    const cJSON *flow = cJSON_GetArrayItem(get(p, "flows"), 0);
    ck_assert_str_eq(str(flow, "module"), "vit");
    ck_assert_int_eq(cJSON_GetArraySize(get(flow, "subs")), 8);
    const cJSON *pos = get(flow, "positions");
    ck_assert_int_eq(cJSON_GetArraySize(pos), 4);
    const cJSON *p2 = cJSON_GetArrayItem(pos, 2);
    ck_assert_int_eq((int)num(p2, "rank"), 2);
    ck_assert_int_eq((int)num(p2, "chunk"), 0);
    const cJSON *span = cJSON_GetArrayItem(get(p2, "spans"), 0);
    ck_assert_str_eq(str(span, "module"), "vit");
    ck_assert_int_eq((int)num(span, "first_layer"), 8);
    ck_assert_int_eq((int)num(span, "layers"), 4);
    const cJSON *prios = get(doc, "priorities");
    ck_assert_int_eq(cJSON_GetArraySize(prios), 8);
    ck_assert_double_eq(cJSON_GetArrayItem(prios, 2)->valuedouble, 0.25);
    const cJSON *stages = get(doc, "stages");
    ck_assert_str_eq(str(cJSON_GetArrayItem(stages, 0), "module"), "vit");
    ck_assert_str_eq(str(cJSON_GetArrayItem(stages, 0), "policy"), "full");
    ck_assert_str_eq(str(cJSON_GetArrayItem(stages, 7), "policy"), "full"); /* its B */
    ck_assert_str_eq(str(cJSON_GetArrayItem(stages, 1), "policy"), "none");
    cJSON_Delete(doc);
    free(text);

    text = render(loom_write_trace_json, &fx.plan);
    ck_assert_ptr_nonnull(strstr(text, "\"F mb3 c0 vit\""));
    ck_assert_ptr_nonnull(strstr(text, "\"policy\": \"full\""));
    free(text);
    fx.plan.priorities = NULL;
    fixture_free(&fx);
}
END_TEST

START_TEST(test_two_flows_with_subs)
{
    fixture fx;
    char names[24][16];
    two_flow_plan(&fx, names);
    /* flow 0 (stages 0-1) runs 4 units, flow 1 (stages 2-3) 2: no valid CSV */
    static const char reason[] =
        "stage 2 (flow 1, module llm, position 0) runs 2 (sub-)microbatches and stage 0 "
        "(flow 0, module vit, position 0) runs 4; PyTorch pipelining needs the same "
        "microbatch count on every stage, and the plan splits microbatches into a different "
        "number of sub-microbatches per module";
    char *buf = NULL, expect[1200];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_error err = {0};
    ck_assert_int_eq(loom_write_schedule_csv(&fx.plan, f, &err), LOOM_EINVAL);
    fclose(f);
    ck_assert_uint_eq(len, 0); /* nothing written */
    free(buf);
    snprintf(expect, sizeof expect, "schedule.csv: not written: %s", reason);
    ck_assert_str_eq(err.message, expect);
    ck_assert_int_eq(loom_schedule_csv_check(&fx.plan, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, expect);
    int fits = 1;
    char why[LOOM_OUT_REASON_MAX];
    ck_assert_int_eq(loom_out_csv_fits(&fx.plan, &fits, why, &err), LOOM_OK);
    ck_assert_int_eq(fits, 0);
    ck_assert_str_eq(why, reason);

    char *text = render(loom_write_plan_json, &fx.plan);
    cJSON *doc = parse(text);
    check_actions(&fx.plan, doc);
    const cJSON *csvj = get(doc, "schedule_csv");
    ck_assert(cJSON_IsFalse(get(csvj, "written")));
    ck_assert_str_eq(str(csvj, "reason"), reason);
    ck_assert_int_eq((int)num(csvj, "microbatches"), 4);
    const cJSON *pl = get(doc, "placement");
    ck_assert(cJSON_IsNull(get(pl, "style")));
    snprintf(expect, sizeof expect,
             "no torchtitan style fits: the plan is not one PyTorch pipeline (%s)", reason);
    ck_assert_str_eq(str(pl, "reason"), expect);
    ck_assert(cJSON_IsNull(get(pl, "torchtitan")));
    char *summary = render(loom_write_summary, &fx.plan);
    ck_assert_ptr_nonnull(strstr(summary, "\n  schedule.csv  not written (plan.json: "
                                          "schedule_csv.reason)\n  torchtitan    no placement "
                                          "style fits (plan.json: placement.reason)\n"));
    free(summary);
    const cJSON *s0 = cJSON_GetArrayItem(get(doc, "stages"), 0);
    ck_assert_str_eq(str(s0, "module"), "vit");
    ck_assert_str_eq(str(s0, "policy"), "mixed");
    const cJSON *lp = get(s0, "layer_policies");
    ck_assert_int_eq(cJSON_GetArraySize(lp), 2);
    ck_assert_str_eq(cJSON_GetArrayItem(lp, 0)->valuestring, "none");
    ck_assert_str_eq(cJSON_GetArrayItem(lp, 1)->valuestring, "full");
    cJSON_Delete(doc);
    free(text);

    text = render(loom_write_trace_json, &fx.plan);
    doc = parse(text);
    check_trace(&fx.plan, doc);
    ck_assert_ptr_nonnull(strstr(text, "\"F mb1.1 c0 vit\""));
    ck_assert_ptr_nonnull(strstr(text, "\"B mb0.0 c1 llm\""));
    cJSON_Delete(doc);
    free(text);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_trace_memory_counters)
{
    fixture fx;
    stage_times_plan(&fx, 4, 8, 0, 0, 1000, 10);
    for (int r = 0; r < 4; r++) /* static + min(P - r, M) activations */
        ck_assert_int_eq(fx.plan.metrics.peak_bytes[r], 1000 + 10 * (4 - r));
    char *text = render(loom_write_trace_json, &fx.plan);
    cJSON *doc = parse(text);
    check_trace(&fx.plan, doc);
    cJSON_Delete(doc);
    ck_assert_ptr_nonnull(strstr(text, "\"name\": \"F mb3 c0\""));
    free(text);
    fixture_free(&fx);

    stage_times_plan(&fx, 4, 8, 0.5, 1, 64, 3);
    text = render(loom_write_trace_json, &fx.plan);
    doc = parse(text);
    check_trace(&fx.plan, doc);
    cJSON_Delete(doc);
    free(text);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_schedule_csv_1f1b)
{
    fixture fx;
    char names[96][16];
    stage_times_plan(&fx, 4, 8, 0, 0, 0, 1);
    stage_times_names(fx.plan.graph, names);
    char *csv = render(loom_write_schedule_csv, &fx.plan);
    check_csv(&fx.plan, csv, names);
    /* Rank r waits r steps for F mb0; rank 3 then alternates F and B. */
    ck_assert(strncmp(csv, "0F0,0F1,0F2,0F3,", 16) == 0);
    const char *row1 = strchr(csv, '\n') + 1;
    ck_assert(strncmp(row1, ",1F0,1F1,1F2,", 13) == 0);
    const char *row3 = strchr(strchr(row1, '\n') + 1, '\n') + 1;
    ck_assert(strncmp(row3, ",,,3F0,3B0,3F1,", 15) == 0);
    free(csv);
    fixture_free(&fx);

    stage_times_plan(&fx, 4, 8, 0.5, 1, 0, 1);
    stage_times_names(fx.plan.graph, names);
    csv = render(loom_write_schedule_csv, &fx.plan);
    check_csv(&fx.plan, csv, names);
    row3 = strchr(strchr(strchr(csv, '\n') + 1, '\n') + 1, '\n') + 1;
    ck_assert(strncmp(row3, ",,,3F0,3I0,3W0,3F1,", 19) == 0);
    ck_assert_ptr_nonnull(strstr(csv, "0W7\n"));
    free(csv);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_schedule_csv_deadlock)
{
    fixture fx;
    stage_times_plan(&fx, 2, 2, 0, 0, 0, 1);
    /* Rank 0 lists B mb0 before its own F mb0: nothing can run first. */
    loom_schedule *sc = fx.plan.schedule;
    int32_t tmp = sc->order[0];
    sc->order[0] = sc->order[2];
    sc->order[2] = tmp;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_error err = {0};
    ck_assert_int_eq(loom_write_schedule_csv(&fx.plan, f, &err), LOOM_EDEADLOCK);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(err.message, "rank 0 is blocked at B(mb 0.0"));
    free(buf);
    fixture_free(&fx);
}
END_TEST

/* The stage of position `pos`, microbatch mb and kind in g. */
static int32_t stage_of_kind(const loom_stage_graph *g, int pos, int mb, int kind)
{
    for (int32_t v = 0; v < g->n_stages; v++)
        if (g->position[v] == pos && g->microbatch[v] == mb && g->kind[v] == kind)
            return v;
    ck_abort_msg("no stage at position %d, microbatch %d, kind %d", pos, mb, kind);
    return -1;
}

START_TEST(test_schedule_csv_overlap_and_full_backward)
{
    /* Split 1F1B, P = 4, M = 8: rank 0 runs ... 0F3, 0I0, 0W0, 0F4, 0I1,
     * 0W1 .... Marking I0 a full backward makes 0I0 + 0W0 one "0B0" cell;
     * F4 filled over I1 and W1 is one "(0F4;0B1)OVERLAP_F_B" cell (the
     * format of PyTorch's ScheduleDualPipeV), one step each. */
    fixture fx;
    stage_times_plan(&fx, 4, 8, 0, 1, 0, 1);
    loom_stage_graph *g = fx.plan.graph;
    loom_schedule *sc = fx.plan.schedule;
    sc->fill_hosts[stage_of_kind(g, 0, 0, LOOM_STAGE_I)] = LOOM_FILL_FULL_BACKWARD;
    sc->fill_hosts[stage_of_kind(g, 0, 4, LOOM_STAGE_F)] = 2;
    char *csv = render(loom_write_schedule_csv, &fx.plan);
    char row0[512] = {0};
    size_t n = 0;
    for (const char *c = csv; *c && *c != '\n' && n + 1 < sizeof row0; c++)
        if (*c != ',' || (n > 0 && row0[n - 1] != ','))
            row0[n++] = *c; /* the row without its blank cells */
    ck_assert_str_eq(row0, "0F0,0F1,0F2,0F3,0B0,(0F4;0B1)OVERLAP_F_B,0F5,0I2,0W2,0F6,0I3,0W3,"
                           "0F7,0I4,0W4,0I5,0W5,0I6,0W6,0I7,0W7");
    free(csv);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_svg_timeline)
{
    fixture fx;
    stage_times_plan(&fx, 4, 8, 0, 1, 0, 1);
    char *svg = render(loom_write_svg, &fx.plan);
    ck_assert(strncmp(svg, "<svg", 4) == 0);
    ck_assert_int_eq(count(svg, "<rect class=\"stage\""), fx.plan.graph->n_stages);
    ck_assert_int_eq(count(svg, "<rect class=\"legend\""), 3); /* F, I, W */
    ck_assert_int_eq(count(svg, "<svg"), 1);
    ck_assert_ptr_null(strstr(svg, "<script"));
    ck_assert_ptr_nonnull(strstr(svg, "rank 3</text>"));
    ck_assert_ptr_nonnull(strstr(svg, "time (ms)"));
    ck_assert_ptr_nonnull(strstr(svg, ">30</text>")); /* an axis tick */
    size_t n = strlen(svg);
    ck_assert_str_eq(svg + n - 7, "</svg>\n");
    ck_assert_int_eq(count(svg, "<title>"), count(svg, "</title>"));
    free(svg);
    /* A label with markup is escaped. */
    snprintf(fx.plan.label, sizeof fx.plan.label, "a<b & \"c\"");
    svg = render(loom_write_svg, &fx.plan);
    ck_assert_ptr_nonnull(strstr(svg, "a&lt;b &amp; &quot;c&quot;"));
    free(svg);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_summary_table)
{
    fixture fx;
    stage_times_plan(&fx, 4, 8, 0, 0, 1000, 10);
    char *text = render(loom_write_summary, &fx.plan);
    ck_assert_ptr_nonnull(strstr(text, "Loom plan: 1f1b P=4 M=8"));
    ck_assert_ptr_nonnull(strstr(text, "makespan      33.000 ms"));
    ck_assert_ptr_nonnull(strstr(text, "bubble ratio  27.27 %"));
    ck_assert_ptr_nonnull(strstr(text, "MFU           n/a"));
    ck_assert_ptr_nonnull(strstr(text, "plan time     12.500 ms (42 evaluations)"));
    ck_assert_ptr_nonnull(strstr(text, "memory cap    none"));
    ck_assert_ptr_nonnull(strstr(text, "\n  torchtitan    loop style: pipeline_parallel_schedule "
                                       "1F1B, pipeline_parallel_schedule_csv schedule.csv, 8 "
                                       "microbatches\n"));
    ck_assert_ptr_null(strstr(text, "schedule.csv  not written"));
    ck_assert_ptr_null(strstr(text, "megatron")); /* no layers to lay out */
    ck_assert_ptr_null(strstr(text, "OVER CAP"));
    ck_assert_ptr_nonnull(strstr(text, "  rank     span ms     busy ms   recomp ms     fill ms"
                                       "    drain ms   idle %    peak GiB\n"));
    /* every rank is busy 8 x 3 ms = 24 ms of 33: 27.27 % idle; 1F1B with
     * F = 1 ms, B = 2 ms: rank r starts at r ms (fill) and its last B
     * ends 2r ms before rank 0's (drain); nothing is recomputed */
    for (int r = 0; r < 4; r++) {
        char row[160];
        snprintf(row, sizeof row, "  %4d  %10.3f      24.000       0.000  %10.3f  %10.3f    27.27",
                 r, fx.plan.metrics.span_ms[r], (double)r, 2.0 * r);
        ck_assert_msg(strstr(text, row) != NULL, "missing row '%s' in\n%s", row, text);
    }
    free(text);

    /* A cap between the peaks flags ranks 0 and 1 (1040 and 1030 bytes). */
    fx.plan.graph->memory_cap_bytes = 1025;
    fx.plan.metrics.mfu = 0.4123;
    text = render(loom_write_summary, &fx.plan);
    ck_assert_int_eq(count(text, "OVER CAP"), 2);
    ck_assert_ptr_nonnull(strstr(text, "2 ranks over the"));
    ck_assert_ptr_nonnull(strstr(text, "MFU           41.23 %"));
    free(text);
    fixture_free(&fx);
}
END_TEST

/* Full recomputation on every pair of rank 0 (its backward redoes the
 * 1 ms forward), re-simulated: rank 0 then recomputes 8 x 1 ms. */
static void recompute_rank0(fixture *fx)
{
    loom_stage_graph *g = fx->plan.graph;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        if (g->rank[g->pair_forward[p]] != 0)
            continue;
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++) {
            loom_policy_option *o = &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
            o[LOOM_POLICY_FULL].backward_ms = o[LOOM_POLICY_NONE].backward_ms +
                                              o[LOOM_POLICY_NONE].forward_ms;
            g->layer_policy[e] = LOOM_POLICY_FULL;
        }
    }
    loom_graph_apply_policies(g);
    loom_error err = {0};
    ck_assert_int_eq(loom_simulate(g, fx->plan.schedule, &fx->plan.metrics, &err), LOOM_OK);
}

START_TEST(test_recompute_reported)
{
    fixture fx;
    stage_times_plan(&fx, 4, 8, 0, 0, 0, 1);
    recompute_rank0(&fx);
    double per_rank[4];
    loom_graph_recompute_ms(fx.plan.graph, per_rank);
    ck_assert_double_eq(per_rank[0], 8.0);
    for (int r = 1; r < 4; r++)
        ck_assert_double_eq(per_rank[r], 0.0);

    char *text = render(loom_write_summary, &fx.plan);
    char row[160];
    snprintf(row, sizeof row, "     0  %10.3f      32.000       8.000       0.000",
             fx.plan.metrics.span_ms[0]);
    ck_assert_msg(strstr(text, row) != NULL, "missing row '%s' in\n%s", row, text);
    free(text);

    text = render(loom_write_plan_json, &fx.plan);
    cJSON *doc = parse(text);
    const cJSON *rec = get(get(doc, "metrics"), "recompute_ms");
    ck_assert_int_eq(cJSON_GetArraySize(rec), 4);
    ck_assert_double_eq(cJSON_GetArrayItem(rec, 0)->valuedouble, 8.0);
    for (int r = 1; r < 4; r++)
        ck_assert_double_eq(cJSON_GetArrayItem(rec, r)->valuedouble, 0.0);
    cJSON_Delete(doc);
    free(text);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_incomplete_plans_rejected)
{
    fixture fx;
    stage_times_plan(&fx, 2, 2, 0, 0, 0, 1);
    writer_fn writers[] = {loom_write_plan_json, loom_write_trace_json,
                           loom_write_schedule_csv, loom_write_svg, loom_write_summary};
    double *span = fx.plan.metrics.span_ms;
    fx.plan.metrics.span_ms = NULL;
    for (int i = 0; i < 5; i++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        loom_error err = {0};
        ck_assert_int_eq(writers[i](&fx.plan, f, &err), LOOM_EINVAL);
        fclose(f);
        ck_assert_ptr_nonnull(strstr(err.message, "span_ms"));
        ck_assert_int_eq((int)len, 0);
        free(buf);
    }
    fx.plan.metrics.span_ms = span;
    /* A stage listed on the wrong rank. */
    loom_schedule *sc = fx.plan.schedule;
    int32_t tmp = sc->order[0];
    sc->order[0] = sc->order[sc->rank_off[1]];
    sc->order[sc->rank_off[1]] = tmp;
    loom_error err = {0};
    FILE *f = fopen("/dev/null", "w");
    ck_assert_int_eq(loom_write_svg(&fx.plan, f, &err), LOOM_EINVAL);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(err.message, "schedule entry 0 of rank 0"));
    fixture_free(&fx);
}
END_TEST

/* Every writer refuses a plan holding a number that is not finite, naming
 * it, and writes nothing. */
static void expect_non_finite_refused(loom_plan *plan, const char *what)
{
    writer_fn writers[] = {loom_write_plan_json, loom_write_trace_json,
                           loom_write_schedule_csv, loom_write_svg, loom_write_summary};
    for (int i = 0; i < 5; i++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        loom_error err = {0};
        ck_assert_int_eq(writers[i](plan, f, &err), LOOM_EINVAL);
        fclose(f);
        ck_assert_msg(strstr(err.message, what) != NULL, "missing \"%s\" in: %s", what,
                      err.message);
        ck_assert_ptr_nonnull(strstr(err.message, "expected a finite number; refusing to "
                                                  "write it"));
        ck_assert_int_eq((int)len, 0);
        free(buf);
    }
    loom_error err = {0};
    ck_assert_int_eq(loom_plan_check_finite(plan, &err), LOOM_EINVAL);
}

START_TEST(test_non_finite_numbers_refused)
{
    fixture fx;
    stage_times_plan(&fx, 2, 2, 0, 0, 0, 1);
    loom_error err = {0};
    ck_assert_int_eq(loom_plan_check_finite(&fx.plan, &err), LOOM_OK);
    double keep = fx.plan.metrics.makespan_ms;
    fx.plan.metrics.makespan_ms = INFINITY;
    expect_non_finite_refused(&fx.plan, "the plan's makespan_ms is inf");
    fx.plan.metrics.makespan_ms = keep;
    keep = fx.plan.metrics.bubble_ratio;
    fx.plan.metrics.bubble_ratio = -NAN;
    expect_non_finite_refused(&fx.plan, "bubble_ratio is");
    fx.plan.metrics.bubble_ratio = keep;
    keep = fx.plan.metrics.end_ms[3];
    fx.plan.metrics.end_ms[3] = INFINITY;
    expect_non_finite_refused(&fx.plan, "the plan's end_ms of stage 3 is inf");
    fx.plan.metrics.end_ms[3] = keep;
    keep = fx.plan.graph->duration_ms[1];
    fx.plan.graph->duration_ms[1] = INFINITY; /* NaN: loom_graph_check already refuses it */
    expect_non_finite_refused(&fx.plan, "the plan's duration_ms of stage 1 is");
    fx.plan.graph->duration_ms[1] = keep;
    ck_assert_int_eq(loom_plan_check_finite(&fx.plan, &err), LOOM_OK);
    fixture_free(&fx);
}
END_TEST

/* plan.json's placement of a placed_plan; the CSV is written either way. */
static cJSON *placement_of(const fixture *fx, const char *style)
{
    char *csv = render(loom_write_schedule_csv, &fx->plan);
    free(csv);
    char *text = render(loom_write_plan_json, &fx->plan);
    cJSON *doc = parse(text);
    free(text);
    const cJSON *pl = get(doc, "placement");
    if (style)
        ck_assert_str_eq(str(pl, "style"), style);
    else
        ck_assert(cJSON_IsNull(get(pl, "style")));
    return doc;
}

/* A stage whose backward is missing (here: a B turned into a W) is refused,
 * not written with fewer backwards than forwards. */
START_TEST(test_schedule_csv_missing_backward)
{
    fixture fx;
    stage_times_plan(&fx, 2, 2, 0, 0, 0, 1);
    fx.plan.graph->kind[bid(2, 0, 1, 1)] = LOOM_STAGE_W;
    loom_error err = {0};
    ck_assert_int_eq(loom_schedule_csv_check(&fx.plan, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "schedule.csv: not written: stage 1 runs 2 forwards and 1 "
                                  "backwards (B or I, with as many W as I expected); PyTorch "
                                  "pipelining needs one backward per forward");
    fixture_free(&fx);
}
END_TEST

/* A PyTorch stage whose work runs on two ranks (here: microbatch 1's
 * backward of position 1 moved from rank 1 to rank 0) is refused: PyTorch
 * pipelining places each stage on exactly one rank. */
START_TEST(test_schedule_csv_stage_on_two_ranks)
{
    fixture fx;
    stage_times_plan(&fx, 2, 2, 0, 0, 0, 1);
    int32_t v = bid(2, 0, 1, 1);
    ck_assert_int_eq(fx.plan.graph->rank[v], 1);
    fx.plan.graph->rank[v] = 0;
    /* the schedule follows: v moves to the end of rank 0's order */
    loom_schedule *sc = (loom_schedule *)fx.plan.schedule;
    int32_t n = sc->n_stages, k = 0, *order = malloc((size_t)n * sizeof *order);
    for (int32_t i = sc->rank_off[0]; i < sc->rank_off[1]; i++)
        order[k++] = sc->order[i];
    order[k++] = v;
    for (int32_t i = sc->rank_off[1]; i < sc->rank_off[2]; i++)
        if (sc->order[i] != v)
            order[k++] = sc->order[i];
    ck_assert_int_eq(k, n);
    memcpy(sc->order, order, (size_t)n * sizeof *order);
    sc->rank_off[1]++;
    free(order);
    loom_error err = {0};
    ck_assert_int_eq(loom_schedule_csv_check(&fx.plan, &err), LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, "runs on ranks 1 and 0; PyTorch pipelining needs each "
                                      "stage on exactly one rank") != NULL, "%s", err.message);
    fixture_free(&fx);
}
END_TEST

START_TEST(test_placement_styles)
{
    fixture fx;
    /* loop: stage g on rank g mod P */
    placed_plan(&fx, 2, 2, 4, 0, NULL);
    cJSON *doc = placement_of(&fx, "loop");
    const cJSON *pl = get(doc, "placement"), *tt = get(pl, "torchtitan");
    ck_assert_int_eq((int)num(pl, "stages_per_rank"), 2);
    ck_assert_str_eq(str(tt, "pipeline_parallel_schedule"), "Interleaved1F1B");
    ck_assert_str_eq(str(tt, "pipeline_parallel_schedule_csv"), "schedule.csv");
    ck_assert_int_eq((int)num(tt, "local_batch_size"), 4);
    const cJSON *sr = get(pl, "stage_ranks");
    ck_assert_int_eq(cJSON_GetArraySize(sr), 4);
    for (int g = 0; g < 4; g++)
        ck_assert_int_eq(cJSON_GetArrayItem(sr, g)->valueint, g % 2);
    cJSON_Delete(doc);
    fixture_free(&fx);
    /* the same with I and W: the zero-bubble loop schedule */
    placed_plan(&fx, 2, 2, 4, 1, NULL);
    doc = placement_of(&fx, "loop");
    ck_assert_str_eq(str(get(get(doc, "placement"), "torchtitan"), "pipeline_parallel_schedule"),
                     "InterleavedZeroBubble");
    cJSON_Delete(doc);
    fixture_free(&fx);
    /* V: rank r holds stages r and 2P-1-r */
    static const int v_ranks[] = {0, 1, 1, 0};
    placed_plan(&fx, 2, 2, 4, 1, v_ranks);
    doc = placement_of(&fx, "v");
    ck_assert_str_eq(str(get(get(doc, "placement"), "torchtitan"), "pipeline_parallel_schedule"),
                     "ZBVZeroBubble");
    cJSON_Delete(doc);
    fixture_free(&fx);
    /* neither, with 2 and with 3 stages per rank */
    static const int blocks[] = {0, 0, 1, 1};
    placed_plan(&fx, 2, 2, 4, 0, blocks);
    doc = placement_of(&fx, NULL);
    pl = get(doc, "placement");
    ck_assert_str_eq(str(pl, "reason"), "no torchtitan style fits: stage 1 is on rank 0; the loop "
                                        "style puts it on rank 1 and the V style on rank 1");
    ck_assert(cJSON_IsNull(get(pl, "torchtitan")));
    ck_assert(cJSON_IsNull(get(pl, "stages_per_rank")));
    cJSON_Delete(doc);
    fixture_free(&fx);
    static const int three[] = {0, 1, 0, 1, 1, 0};
    placed_plan(&fx, 2, 3, 4, 0, three);
    doc = placement_of(&fx, NULL);
    ck_assert_str_eq(str(get(doc, "placement"), "reason"),
                     "no torchtitan style fits: stage 4 is on rank 1; the loop style puts it on "
                     "rank 0 (the V style needs exactly 2 stages per rank, the plan has 3)");
    cJSON_Delete(doc);
    fixture_free(&fx);
}
END_TEST

/* A one-flow partition of `model` on P ranks: position i holds layers[i]
 * consecutive layers of module 0 on rank ranks[i] (NULL: i mod P). */
static char *layout_of(const loom_model *model, int P, int n, const int *layers,
                       const int *ranks, char reason[LOOM_OUT_REASON_MAX])
{
    loom_flow flow = {.pos_off = 0, .n_pos = n, .module = 0};
    loom_position pos[16];
    loom_span spans[16];
    int first = 0;
    for (int i = 0; i < n; i++) {
        pos[i] = (loom_position){.rank = ranks ? ranks[i] : i % P, .span_off = i, .n_spans = 1};
        spans[i] = (loom_span){.module = 0, .first_layer = first, .n_layers = layers[i]};
        first += layers[i];
    }
    loom_partition part = {.n_ranks = P, .n_flows = 1, .flows = &flow, .n_positions = n,
                           .positions = pos, .n_spans = n, .spans = spans};
    loom_problem problem = {.struct_size = sizeof problem, .kind = LOOM_PROBLEM_MODEL,
                            .model = model};
    loom_plan plan = {.problem = &problem, .partition = &part};
    int oom = 0;
    char *out = loom_out_megatron_layout(&plan, reason, &oom);
    ck_assert_int_eq(oom, 0);
    return out;
}

START_TEST(test_megatron_layout)
{
    static const loom_layer layers32[32];
    static const loom_module llm[1] = {{.name = "llm", .modality = LOOM_MODALITY_TEXT,
                                        .n_layers = 32, .layers = layers32}};
    static const loom_model llm_only = {.name = "llm-only", .n_modules = 1, .modules = llm};
    char reason[LOOM_OUT_REASON_MAX];
    /* docs/outputs.md: 32 layers on P = 4, uniform, then with V = 2 */
    static const int uniform[] = {8, 8, 8, 8}, balanced[] = {7, 9, 9, 7};
    static const int v2[] = {4, 4, 4, 4, 4, 4, 4, 4}, edge[] = {1, 31}, one[] = {32};
    static const struct {
        int P, n;
        const int *layers;
        const char *want;
    } cases[] = {
        {4, 4, uniform, "Et*8|t*8|t*8|t*8L"},
        {4, 4, balanced, "Et*7|t*9|t*9|t*7L"},
        {4, 8, v2, "Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4L"},
        {2, 2, edge, "Et|t*31L"},
        {1, 1, one, "Et*32L"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = layout_of(&llm_only, cases[i].P, cases[i].n, cases[i].layers, NULL, reason);
        ck_assert_ptr_nonnull(got);
        ck_assert_str_eq(got, cases[i].want);
        free(got);
    }
    /* refusals: rank order, stage count, a model with an encoder */
    static const int swapped[] = {1, 0, 2, 3};
    ck_assert_ptr_null(layout_of(&llm_only, 4, 4, uniform, swapped, reason));
    ck_assert_str_eq(reason, "stage 0 is on rank 1; Megatron puts virtual stage 0 on rank 0");
    ck_assert_ptr_null(layout_of(&llm_only, 4, 2, edge, NULL, reason));
    ck_assert_str_eq(reason, "2 stages on 4 pipeline ranks; Megatron needs a multiple of the ranks");
    ck_assert_ptr_null(layout_of(&toy_model, 4, 4, uniform, NULL, reason));
    ck_assert_str_eq(reason, "the model has 2 modules (first: vit); Megatron's layout describes "
                             "one decoder stack, so only LLM-only models (one text module) can "
                             "be written");
}
END_TEST

/* loom_write_outputs leaves out a refused schedule.csv and removes a
 * stale one. */
START_TEST(test_write_outputs_refused_csv)
{
    fixture fx;
    char names[24][16], base[64], path[128];
    two_flow_plan(&fx, names);
    snprintf(base, sizeof base, "/tmp/loom-refused-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(base));
    snprintf(path, sizeof path, "%s/schedule.csv", base);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("0F0\n", f);
    fclose(f);
    loom_error err = {0};
    ck_assert_int_eq(loom_write_outputs(&fx.plan, base, &err), LOOM_OK);
    ck_assert_int_ne(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/plan.json", base);
    ck_assert_int_eq(access(path, F_OK), 0);
    static const char *const files[] = {"plan.json", "trace.json", "timeline.svg",
                                        "summary.txt", "report.html"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", base, files[i]);
        ck_assert_int_eq(unlink(path), 0);
    }
    ck_assert_int_eq(rmdir(base), 0);
    fixture_free(&fx);
}
END_TEST

/* The sample assignment: largest first to the sub with the fewest tokens
 * (ties: lower index, lower sub); a mixed flow takes a sample's microbatch
 * from the first of its modules that sees it; a flow skips microbatches
 * with 0 subs. */
START_TEST(test_data_assignment)
{
    static const loom_layer l1[1];
    static const loom_module mods[2] = {
        {.name = "enc", .modality = LOOM_MODALITY_IMAGE, .tokens_per_item = 10, .n_layers = 1,
         .layers = l1},
        {.name = "llm", .modality = LOOM_MODALITY_TEXT, .n_layers = 1, .layers = l1},
    };
    static const loom_model model = {.name = "m", .n_modules = 2, .modules = mods};
    /* text tokens 3 5 1 4 3 in microbatch 0, sample 5 in microbatch 1 */
    static const loom_sample samples[6] = {{.text_tokens = 3}, {.text_tokens = 5},
                                           {.text_tokens = 1}, {.text_tokens = 4},
                                           {.text_tokens = 3}, {.text_tokens = 2, .images = 1}};
    loom_iteration it = {.index = 7, .n_samples = 6, .samples = samples};
    /* flow 0: llm alone, subs 2 and 1; flow 1: enc + llm (mixed), subs 1 and 0 */
    loom_flow flows[2] = {{.pos_off = 0, .n_pos = 1, .module = 1},
                          {.pos_off = 1, .n_pos = 1, .module = -1}};
    loom_span spans[3] = {{.module = 1, .n_layers = 1}, {.module = 0, .n_layers = 1},
                          {.module = 1, .n_layers = 1}};
    loom_position pos[2] = {{.rank = 0, .span_off = 0, .n_spans = 1},
                            {.rank = 1, .span_off = 1, .n_spans = 2}};
    int32_t sample_mb[12] = {-1, 0, -1, -1, -1, 1, /* enc sees samples 1 and 5 */
                             0, 0, 0, 0, 0, 1};
    int32_t subs[4] = {2, 1, 1, 0};
    loom_partition part = {.n_ranks = 2, .n_flows = 2, .flows = flows, .n_positions = 2,
                           .positions = pos, .n_spans = 3, .spans = spans,
                           .n_microbatches = 2, .cap_microbatches = 2, .n_samples = 6,
                           .n_modules = 2, .sample_mb = sample_mb, .subs = subs};
    loom_problem problem = {.struct_size = sizeof problem, .kind = LOOM_PROBLEM_MODEL,
                            .model = &model};
    loom_plan plan = {.problem = &problem, .iteration = &it, .partition = &part};
    loom_out_data d;
    loom_error err = {0};
    ck_assert_int_eq(loom_out_data_build(&plan, &d, &err), LOOM_OK);
    ck_assert_int_eq(d.n_units, 4);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_out_json_data(&d, f);
    fclose(f);
    /* flow 0, mb 0: 5 (s1) -> sub 0, 4 (s3) -> 1, 3 (s0) -> 1, 3 (s4) -> 0, 1 (s2) -> 1;
     * flow 1 (enc 10 + llm tokens): sample 1 in mb 0 by enc, the rest by llm; mb 1 skipped */
    ck_assert_str_eq(buf, "  \"data\": [\n"
                          "    {\"flow\": 0, \"microbatch\": 0, \"sub\": 0, \"samples\": [1, 4]},\n"
                          "    {\"flow\": 0, \"microbatch\": 0, \"sub\": 1, \"samples\": [0, 2, 3]},\n"
                          "    {\"flow\": 0, \"microbatch\": 1, \"sub\": 0, \"samples\": [5]},\n"
                          "    {\"flow\": 1, \"microbatch\": 0, \"sub\": 0, "
                          "\"samples\": [0, 1, 2, 3, 4]}\n  ],\n");
    free(buf);
    loom_out_data_free(&d);
    /* a partition of another sample count is refused */
    part.n_samples = 5;
    ck_assert_int_eq(loom_out_data_build(&plan, &d, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "plan.json: the partition assigns 5 samples of 2 modules, "
                                  "expected the iteration's 6 samples of the model's 2 modules");
}
END_TEST

START_TEST(test_write_outputs_directory)
{
    fixture fx;
    stage_times_plan(&fx, 4, 8, 0, 0, 0, 1);
    char base[64], dir[128], path[192];
    snprintf(base, sizeof base, "/tmp/loom-outputs-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(base));
    snprintf(dir, sizeof dir, "%s/run/out", base);
    mode_t old = umask(022);
    loom_error err = {0};
    int rc = loom_write_outputs(&fx.plan, dir, &err);
    umask(old);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    struct stat st;
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0755);
    const char *files[] = {"plan.json", "trace.json", "schedule.csv", "timeline.svg",
                           "summary.txt", "report.html"};
    writer_fn writers[] = {loom_write_plan_json, loom_write_trace_json,
                           loom_write_schedule_csv, loom_write_svg, loom_write_summary,
                           loom_write_html_report};
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        char *want = render(writers[i], &fx.plan);
        size_t n = strlen(want);
        char *got = calloc(n + 2, 1);
        ck_assert_uint_eq(fread(got, 1, n + 1, f), n);
        fclose(f);
        ck_assert_str_eq(got, want);
        free(got);
        free(want);
        unlink(path);
    }
    rmdir(dir);
    snprintf(path, sizeof path, "%s/run", base);
    rmdir(path);

    /* A file where the directory should be. */
    snprintf(path, sizeof path, "%s/file", base);
    FILE *f = fopen(path, "w");
    fclose(f);
    snprintf(dir, sizeof dir, "%s/file/out", base);
    ck_assert_int_eq(loom_write_outputs(&fx.plan, dir, &err), LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "cannot create directory"));
    ck_assert_ptr_nonnull(strstr(err.message, path));
    unlink(path);
    rmdir(base);
    fixture_free(&fx);
}
END_TEST

/* The output set: every file once, a runtime export with both its
 * plan.json key and its check, every other file with neither, plan.json
 * first; docs/outputs.md's file table has one row per format and no
 * other; `loom plan --help` names each row's option. */
START_TEST(test_format_table)
{
    char *doc = loom_test_slurp(loom_test_src("docs/outputs.md"));
    char *help = NULL;
    ck_assert_int_eq(loom_test_cli("plan --help", &help), 0);
    size_t n = loom_out_set_size();
    ck_assert_uint_eq(n, loom_out_n_plain_files + loom_out_n_runtime_exports);
    ck_assert_ptr_null(loom_out_set_format(n));
    for (size_t i = 0; i < n; i++) {
        const loom_out_format *f = loom_out_set_format(i);
        int is_export = i >= loom_out_n_plain_files;
        ck_assert_msg(f->name && f->write && f->option && *f->option, "row %zu", i);
        ck_assert_msg(is_export ? f->key && f->fits : !f->key && !f->fits,
                      "%s: a runtime export has a key and a check, another file neither",
                      f->name);
        for (size_t j = 0; j < i; j++)
            ck_assert_msg(strcmp(f->name, loom_out_set_format(j)->name) != 0, "%s twice",
                          f->name);
        char row[128];
        snprintf(row, sizeof row, "\n| `%s` | `loom_write_", f->name);
        ck_assert_msg(strstr(doc, row), "docs/outputs.md: no file-table row for %s", f->name);
        loom_test_has(help, f->option);
    }
    size_t rows = 0;
    for (const char *p = strstr(doc, "\n| `"); p; p = strstr(p + 1, "\n| `")) {
        const char *cell = strstr(p + 1, " | ");
        rows += cell && strncmp(cell, " | `loom_write_", 15) == 0;
    }
    ck_assert_uint_eq(rows, n);
    ck_assert_str_eq(loom_out_set_format(0)->name, "plan.json");
    free(help);
    free(doc);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("outputs");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_plan_json_1f1b);
    tcase_add_test(tc, test_plan_json_one_rank);
    tcase_add_test(tc, test_plan_json_p2p_wait_placement);
    tcase_add_test(tc, test_plan_json_partition_and_modules);
    tcase_add_test(tc, test_two_flows_with_subs);
    tcase_add_test(tc, test_trace_memory_counters);
    tcase_add_test(tc, test_schedule_csv_1f1b);
    tcase_add_test(tc, test_schedule_csv_deadlock);
    tcase_add_test(tc, test_schedule_csv_overlap_and_full_backward);
    tcase_add_test(tc, test_schedule_csv_missing_backward);
    tcase_add_test(tc, test_schedule_csv_stage_on_two_ranks);
    tcase_add_test(tc, test_placement_styles);
    tcase_add_test(tc, test_megatron_layout);
    tcase_add_test(tc, test_write_outputs_refused_csv);
    tcase_add_test(tc, test_data_assignment);
    tcase_add_test(tc, test_svg_timeline);
    tcase_add_test(tc, test_summary_table);
    tcase_add_test(tc, test_non_finite_numbers_refused);
    tcase_add_test(tc, test_recompute_reported);
    tcase_add_test(tc, test_incomplete_plans_rejected);
    tcase_add_test(tc, test_write_outputs_directory);
    tcase_add_test(tc, test_format_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
