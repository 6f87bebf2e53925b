/*
 * bench_instances.c - the instances the ilp memory tuner benchmark times:
 * a synthetic one of VLM-M's order of size, and real iterations planned
 * by the engine (a loom session) whose stage graph and schedule are then
 * handed to the tuner alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_ilp_memory.h"
#include <loom/sys/session.h>

enum { P = 4, V = 4, S = P * V, U = 24, E = 10 };

/* splitmix64 uniform in [0, 1). */
static double uniform(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

/* The single-flow graph: per unit S forwards then S backwards. */
static loom_stage_graph *synthetic_graph(uint64_t seed)
{
    int32_t n = U * 2 * S, edges = U * (2 * (S - 1) + 1);
    loom_stage_graph *g = loom_graph_alloc(n, edges, P, U, U * S, U * S * E);
    if (!g)
        return NULL;
    g->n_microbatches = U;
    int32_t e = 0;
    for (int32_t v = 0; v < n; v++) {
        int u = v / (2 * S), i = v % (2 * S);
        int pos = i < S ? i : 2 * S - 1 - i, back = i >= S;
        int32_t pair = u * S + pos;
        g->rank[v] = pos % P;
        g->kind[v] = (uint8_t)(back ? LOOM_STAGE_B : LOOM_STAGE_F);
        g->module[v] = -1;
        g->position[v] = pos;
        g->chunk[v] = pos / P;
        g->microbatch[v] = u;
        g->group[v] = u;
        g->pair[v] = pair;
        g->pred_off[v] = e;
        if (!back)
            g->pair_forward[pair] = v;
        else
            g->pair_backward[pair] = v;
        if (i > 0) {
            g->pred[e] = v - 1;
            g->pred_p2p_ms[e++] = i == S ? 0.0 : 0.05;
        }
    }
    g->pred_off[n] = e;
    g->n_edges = e;
    for (int u = 0; u < U; u++) {
        g->group_flow[u] = 0;
        g->group_microbatch[u] = u;
    }
    uint64_t st = seed;
    for (int32_t p = 0; p < U * S; p++) {
        g->pair_layer_off[p] = p * E;
        for (int k = 0; k < E; k++) {
            loom_policy_option *o =
                &g->layer_options[(size_t)(p * E + k) * LOOM_POLICY_COUNT];
            double f = 2.0 + 8.0 * uniform(&st);
            int64_t bytes = (int64_t)((200.0 + 600.0 * uniform(&st)) * 1048576.0);
            o[0].forward_ms = f;
            o[0].backward_ms = 2 * f;
            o[0].activation_bytes = bytes;
            o[1].forward_ms = f;
            o[1].backward_ms = 2 * f + f * (0.05 + 0.3 * uniform(&st));
            o[1].activation_bytes = (int64_t)((double)bytes * (0.3 + 0.3 * uniform(&st)));
            o[2].forward_ms = f;
            o[2].backward_ms = 3 * f;
            o[2].activation_bytes = (int64_t)((double)bytes * (0.05 + 0.1 * uniform(&st)));
        }
    }
    g->pair_layer_off[U * S] = U * S * E;
    loom_graph_apply_policies(g);
    return g;
}

/* Backward-first list schedule: each free rank runs its ready backward
 * with the lowest unit, else its ready forward with the lowest (unit,
 * position). */
static loom_schedule *list_schedule(const loom_stage_graph *g)
{
    loom_schedule *s = loom_schedule_new(P, g->n_stages);
    double *end = malloc((size_t)g->n_stages * sizeof *end);
    uint8_t *done = calloc((size_t)g->n_stages, 1);
    int32_t *lists = malloc((size_t)g->n_stages * sizeof *lists);
    int32_t count[P] = {0};
    double free_at[P] = {0};
    for (int32_t placed = 0; placed < g->n_stages;) {
        int best_r = -1, best_v = -1;
        double best_t = 0;
        for (int r = 0; r < P; r++) {
            int pick = -1;
            double pick_t = 0;
            for (int32_t v = 0; v < g->n_stages; v++) {
                if (done[v] || g->rank[v] != r)
                    continue;
                double ready = 0;
                int ok = 1;
                for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
                    if (!done[g->pred[k]])
                        ok = 0;
                    else if (end[g->pred[k]] + g->pred_p2p_ms[k] > ready)
                        ready = end[g->pred[k]] + g->pred_p2p_ms[k];
                }
                if (!ok)
                    continue;
                double t = ready > free_at[r] ? ready : free_at[r];
                int better = pick < 0 || t < pick_t ||
                             (t == pick_t && g->kind[v] > g->kind[pick]);
                if (better) {
                    pick = v;
                    pick_t = t;
                }
            }
            if (pick >= 0 && (best_v < 0 || pick_t < best_t)) {
                best_r = r;
                best_v = pick;
                best_t = pick_t;
            }
        }
        end[best_v] = best_t + g->duration_ms[best_v];
        free_at[best_r] = end[best_v];
        done[best_v] = 1;
        lists[best_r * (g->n_stages / P) + count[best_r]++] = best_v;
        placed++;
    }
    int32_t k = 0;
    for (int r = 0; r < P; r++) {
        s->rank_off[r] = k;
        for (int32_t i = 0; i < count[r]; i++)
            s->order[k++] = lists[r * (g->n_stages / P) + i];
    }
    s->rank_off[P] = k;
    free(end);
    free(done);
    free(lists);
    return s;
}

/* Peak (max over ranks) with every entry at policy pol. */
int64_t loom_bench_uniform_peak(const loom_stage_graph *g, const loom_schedule *s,
                            int pol)
{
    loom_stage_graph *c = loom_graph_clone(g);
    memset(c->layer_policy, pol, (size_t)c->n_layer_entries);
    loom_graph_apply_policies(c);
    loom_metrics m = LOOM_METRICS_INIT;
    loom_error err = {0};
    loom_simulate(c, s, &m, &err);
    loom_graph_free(c);
    return m.max_peak_bytes;
}

/* Builds the synthetic instance (see bench_ilp_memory.h). */
int loom_bench_synthetic(uint64_t seed, loom_bench_instance *out)
{
    memset(out, 0, sizeof *out);
    out->graph = synthetic_graph(seed);
    if (!out->graph)
        return LOOM_ENOMEM;
    out->schedule = list_schedule(out->graph);
    snprintf(out->label, sizeof out->label,
             "synthetic: %d ranks, %d positions, %d sub-microbatches", P, S, U);
    return LOOM_OK;
}

/* Plans one iteration with a session and keeps its graph and schedule
 * (see bench_ilp_memory.h). */
int loom_bench_planned(const char *manifest, const char *model, int32_t k,
                       loom_bench_instance *out, loom_error *err)
{
    memset(out, 0, sizeof *out);
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = manifest;
    a.model = model;
    a.iterations = k + 1;
    a.uses[a.n_uses++] = "ranker=fifo"; /* one evaluation: the graph only */
    loom_session *s = NULL;
    int rc = loom_session_open(&s, &a, err);
    if (rc == LOOM_OK) {
        loom_plan plan;
        memset(&plan, 0, sizeof plan);
        rc = loom_session_plan(s, k, &plan, err);
        if (rc == LOOM_OK) {
            out->graph = plan.graph; /* taken over from the plan */
            out->schedule = plan.schedule;
            plan.graph = NULL;
            plan.schedule = NULL;
            snprintf(out->label, sizeof out->label, "%s iteration %d, %s",
                     model, k, plan.label);
        }
        loom_plan_clear(&plan);
    }
    loom_session_close(s);
    return rc;
}

/* Releases an instance. */
void loom_bench_instance_free(loom_bench_instance *in)
{
    loom_graph_free(in->graph);
    loom_schedule_free(in->schedule);
    memset(in, 0, sizeof *in);
}
