/*
 * bench_ilp_memory.c - median time of the "ilp" memory tuner on a
 * synthetic instance the size of a VLM-M iteration (PipeWeaver section
 * 8.2: ViT 5B + Qwen2 32B on PP = 4): 4 ranks, 16 pipeline positions
 * (position s on rank s % 4), 24 (sub-)microbatches, 10 layer entries per
 * stage pair - 384 stage pairs, 3840 layer entries, 768 stages. The
 * schedule is a backward-first list schedule (many memory crests per
 * rank); the cap sits halfway between the most frugal and the NONE peak.
 *
 * Usage: loom_bench_ilp_memory [runs] [seed] [gap] [timeout_ms]
 *        (defaults 21, 1, the tuner's default gap 0.05 and 1000 ms)
 * Prints the instance, the median wall time of one tune() call and the
 * median time of its ILP part (from the tuner's debug log).
 */
#include <loom/mock_host.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_api.h"

const loom_plugin_info *loom_static_ilp_memory(void);

enum { P = 4, V = 4, S = P * V, U = 24, E = 10 };

static const loom_simulator_service SIM = {
    sizeof(loom_simulator_service), 1, loom_sim_scratch_new,
    loom_sim_scratch_free, loom_sim_run,
};

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
static loom_stage_graph *build(uint64_t seed)
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
static int64_t uniform_peak(const loom_stage_graph *g, const loom_schedule *s,
                            int pol)
{
    loom_stage_graph *c = loom_graph_clone(g);
    memset(c->layer_policy, pol, (size_t)c->n_layer_entries);
    loom_graph_apply_policies(c);
    loom_metrics m;
    memset(&m, 0, sizeof m);
    loom_error err = {0};
    loom_simulate(c, s, &m, &err);
    loom_graph_free(c);
    return m.max_peak_bytes;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 21;
    uint64_t seed = argc > 2 ? (uint64_t)strtoull(argv[2], NULL, 10) : 1;
    if (runs < 1)
        runs = 1;
    loom_stage_graph *g = build(seed);
    if (!g)
        return 1;
    loom_schedule *s = list_schedule(g);
    int64_t lo = uniform_peak(g, s, LOOM_POLICY_FULL);
    int64_t hi = uniform_peak(g, s, LOOM_POLICY_NONE);
    g->memory_cap_bytes = (double)lo + 0.5 * (double)(hi - lo);

    loom_mock_host *h = loom_mock_host_new();
    loom_mock_host_add_service(h, LOOM_SERVICE_SIMULATOR, 1, &SIM);
    if (argc > 3)
        loom_mock_host_set_param(h, "gap", argv[3]);
    if (argc > 4)
        loom_mock_host_set_param(h, "timeout_ms", argv[4]);
    const loom_memory_tuner_vtable *vt =
        (const loom_memory_tuner_vtable *)loom_static_ilp_memory()->role(
            LOOM_ROLE_MEMORY_TUNER);
    void *self = NULL;
    loom_error err = {0};
    if (vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self,
                   &err) != LOOM_OK) {
        fprintf(stderr, "create: %s\n", err.message);
        return 1;
    }
    uint8_t *pol = malloc((size_t)g->n_layer_entries);
    double *total = malloc((size_t)runs * sizeof *total);
    double *ilp = malloc((size_t)runs * sizeof *ilp);
    int rows = 0, cols = 0, lps = 0, mips = 0, better = 0;
    const loom_host_api *host = loom_mock_host_api(h);
    for (int i = 0; i < runs; i++) {
        double t0 = host->now_ms();
        int rc = vt->tune(self, g, s, pol, &err);
        total[i] = host->now_ms() - t0;
        if (rc != LOOM_OK) {
            fprintf(stderr, "tune: %s\n", err.message);
            return 1;
        }
        ilp[i] = 0;
        const char *at = strstr(loom_mock_host_last_log(h), "ilp: ");
        if (at && strstr(at, "memory rows"))
            sscanf(at, "ilp: %d memory rows, %*d pairs, %d columns, %d LPs, "
                       "%d MIPs, %lf ms; %d ranks improved",
                   &rows, &cols, &lps, &mips, &ilp[i], &better);
    }
    qsort(total, (size_t)runs, sizeof *total, cmp_double);
    qsort(ilp, (size_t)runs, sizeof *ilp, cmp_double);
    printf("ilp memory tuner, synthetic VLM-M-sized instance: %d ranks, %d "
           "positions, %d sub-microbatches, %d stage pairs, %d layer entries, "
           "cap %.0f MiB\n",
           P, S, U, g->n_pairs, g->n_layer_entries,
           g->memory_cap_bytes / 1048576.0);
    printf("ILP: %d memory rows, %d columns, %d rank LPs, %d rank MIPs, %d "
           "ranks improved over the greedy warm starts\n",
           rows, cols, lps, mips, better);
    printf("median over %d runs (gap %s): tune %.3f ms, ILP build+solve "
           "%.3f ms\n", runs, argc > 3 ? argv[3] : "0.05", total[runs / 2],
           ilp[runs / 2]);
    vt->destroy(self);
    loom_mock_host_free(h);
    free(pol);
    free(total);
    free(ilp);
    loom_schedule_free(s);
    loom_graph_free(g);
    return 0;
}
