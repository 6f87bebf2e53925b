/*
 * loom/mock_memtune.h - test helpers for the memory-tuning kits
 * (<loom/kits/memtune.h>, <loom/kits/mckp.h>) and the memory tuner suites
 * (greedy, knapsack, ilp): small stage graphs built by hand with distinct
 * per-layer memory options, 1F1B / GPipe orders, a simulator service for
 * the mock host, and checks of a tuner's result against the planner's
 * simulator. Header-only (static inline) so each suite compiles its own.
 * In-tree test code: it builds graphs with the graph kit
 * (<loom/kits/graph.h>), simulates with the mock simulator
 * (<loom/mock_sim.h>, which links the core) and uses Check through
 * testutil.h, so it is not installed with the SDK.
 *
 * Ownership: graphs and schedules returned here are freed with
 * loom_graph_free / loom_schedule_free.
 */
#ifndef LOOM_MOCK_MEMTUNE_H
#define LOOM_MOCK_MEMTUNE_H

#include <loom/mock_host.h>

#include <stdlib.h>
#include <string.h>

#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include "testutil.h"

/* Stage id of (mb, position, kind) in mtt_chain's layout: per microbatch
 * the P forwards, then per position from the last the B (or I then W). */
static inline int32_t mtt_sid(int P, int split, int mb, int pos, int kind)
{
    int per = P * (split ? 3 : 2);
    if (kind == LOOM_STAGE_F)
        return mb * per + pos;
    int j = P - 1 - pos;
    if (!split)
        return mb * per + P + j;
    return mb * per + P + 2 * j + (kind == LOOM_STAGE_W);
}

/* splitmix64-driven uniform double in [0, 1). */
static inline double mtt_uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

/* One flow of P positions (position s on rank s), M microbatches, E layer
 * entries per pair with seeded, distinct options: NONE stores the most and
 * is fastest, SELECTIVE stores 30-70% for a little recompute, FULL
 * 5-20% for a full forward recompute. static_bytes = 0, no cap. */
static inline loom_stage_graph *mtt_chain(int P, int M, int E, int split,
                                          uint64_t seed)
{
    int per = P * (split ? 3 : 2);
    int32_t n = M * per;
    loom_graph_builder *b = loom_graph_builder_new(P);
    ck_assert_ptr_nonnull(b);
    for (int32_t v = 0; v < n; v++) {
        int mb = v / per, i = v % per, pos, kind;
        if (i < P) {
            pos = i;
            kind = LOOM_STAGE_F;
        } else if (!split) {
            pos = P - 1 - (i - P);
            kind = LOOM_STAGE_B;
        } else {
            pos = P - 1 - (i - P) / 2;
            kind = ((i - P) % 2) ? LOOM_STAGE_W : LOOM_STAGE_I;
        }
        loom_graph_stage stage;
        memset(&stage, 0, sizeof stage);
        stage.rank = pos;
        stage.kind = kind;
        stage.pair = mb * P + pos;
        stage.group = mb;
        stage.module = -1;
        stage.position = pos;
        stage.microbatch = mb;
        ck_assert_int_eq(loom_graph_builder_add_stage(b, &stage), v);
        if (kind == LOOM_STAGE_F) {
            if (pos > 0)
                loom_graph_builder_add_edge(b, v - 1, v, 0.25);
        } else if (kind == LOOM_STAGE_W) {
            loom_graph_builder_add_edge(b, v - 1, v, 0);
        } else {
            loom_graph_builder_add_edge(b,
                                        pos == P - 1 ? mtt_sid(P, split, mb, P - 1, 0)
                                                     : mtt_sid(P, split, mb, pos + 1, kind),
                                        v, pos == P - 1 ? 0 : 0.25);
        }
    }
    uint64_t st = seed;
    for (int32_t p = 0; p < M * P; p++) {
        for (int k = 0; k < E; k++) {
            loom_policy_option o[LOOM_POLICY_COUNT];
            memset(o, 0, sizeof o);
            double f = 1.0 + 3.0 * mtt_uniform(&st);
            int64_t bytes = 1000 + (int64_t)(9000 * mtt_uniform(&st));
            o[0].forward_ms = f;
            o[0].backward_ms = 2 * f;
            o[0].activation_bytes = bytes;
            o[1].forward_ms = f;
            o[1].backward_ms = 2 * f + f * (0.05 + 0.4 * mtt_uniform(&st));
            o[1].activation_bytes =
                (int64_t)((double)bytes * (0.3 + 0.4 * mtt_uniform(&st)));
            o[2].forward_ms = f;
            o[2].backward_ms = 3 * f;
            o[2].activation_bytes =
                (int64_t)((double)bytes * (0.05 + 0.15 * mtt_uniform(&st)));
            for (int q = 0; q < 3; q++)
                o[q].weight_grad_ms = split ? f * 0.5 : 0.0;
            /* offload as on a cluster without host bandwidth: none's */
            o[LOOM_POLICY_OFFLOAD] = o[LOOM_POLICY_NONE];
            loom_graph_builder_add_entry(b, p, o);
        }
    }
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_graph_builder_finish(b, &g, &err) == LOOM_OK, "%s", err.message);
    loom_graph_builder_free(b);
    loom_graph_apply_policies(g);
    return g;
}

/* 1F1B (gpipe = 0) or GPipe (gpipe = 1) order for mtt_chain graphs; a
 * split backward runs I then W at once. */
static inline loom_schedule *mtt_order(int P, int M, int split, int gpipe)
{
    loom_schedule *s = loom_schedule_new(P, M * P * (split ? 3 : 2));
    ck_assert_ptr_nonnull(s);
    int k = 0;
    for (int r = 0; r < P; r++) {
        s->rank_off[r] = k;
        int warm = gpipe ? M : (P - r - 1 < M ? P - r - 1 : M), f = 0, b = 0;
        for (; f < warm; f++)
            s->order[k++] = mtt_sid(P, split, f, r, LOOM_STAGE_F);
        while (f < M || b < M) {
            if (f < M)
                s->order[k++] = mtt_sid(P, split, f++, r, LOOM_STAGE_F);
            if (b < M && (f == M || !gpipe)) {
                s->order[k++] = mtt_sid(P, split, b, r,
                                        split ? LOOM_STAGE_I : LOOM_STAGE_B);
                if (split)
                    s->order[k++] = mtt_sid(P, split, b, r, LOOM_STAGE_W);
                b++;
            }
        }
    }
    s->rank_off[P] = k;
    return s;
}

/* Simulates g with `policies` applied (on a clone); returns the metrics
 * and the per-rank peaks in peaks (n_ranks entries, may be NULL). */
static inline loom_metrics mtt_simulate(const loom_stage_graph *g,
                                        const loom_schedule *s,
                                        const uint8_t *policies,
                                        int64_t *peaks)
{
    loom_stage_graph *c = loom_graph_clone(g);
    ck_assert_ptr_nonnull(c);
    memcpy(c->layer_policy, policies, (size_t)g->n_layer_entries);
    loom_graph_apply_policies(c);
    loom_metrics m = LOOM_METRICS_INIT;
    m.peak_bytes = peaks;
    loom_error err = {0};
    ck_assert_int_eq(loom_mock_simulate(c, s, &m, &err), LOOM_OK);
    loom_graph_free(c);
    m.peak_bytes = NULL;
    return m;
}

/* Total latency (forward + backward over every entry) of a choice. */
static inline double mtt_latency(const loom_stage_graph *g,
                                 const uint8_t *policies)
{
    double sum = 0;
    for (int32_t e = 0; e < g->n_layer_entries; e++) {
        const loom_policy_option *o =
            &g->layer_options[(size_t)e * LOOM_POLICY_COUNT + policies[e]];
        sum += o->forward_ms + o->backward_ms;
    }
    return sum;
}

/* Highest per-rank peak (static included) with every entry at `pol`. */
static inline int64_t mtt_uniform_peak(const loom_stage_graph *g,
                                       const loom_schedule *s, int pol)
{
    uint8_t *p = malloc((size_t)g->n_layer_entries + 1);
    memset(p, pol, (size_t)g->n_layer_entries);
    loom_metrics m = mtt_simulate(g, s, p, NULL);
    free(p);
    return m.max_peak_bytes;
}

/* The plugin whose vtable mtt_vtable() handed out as `vt` (record != NULL:
 * remember it), so each tuner's mock host knows its own manifest. */
static inline const loom_plugin_info *mtt_info_of(const loom_memory_tuner_vtable *vt,
                                                  const loom_plugin_info *record)
{
    static const loom_memory_tuner_vtable *vts[16];
    static const loom_plugin_info *infos[16];
    for (int i = 0; i < 16; i++) {
        if (vts[i] == vt)
            return infos[i];
        if (!vts[i] && record) {
            vts[i] = vt;
            infos[i] = record;
            return record;
        }
    }
    ck_abort_msg("memory tuner vtable not from mtt_vtable()");
    return NULL;
}

/* Runs a memory tuner's vtable once on a fresh mock host with params
 * ("key", "value", ..., NULL), the simulator service when with_sim, and a
 * time budget of budget_ms from now when budget_ms >= 0 (0: already out of
 * time). */
static inline int mtt_tune_budget(const loom_memory_tuner_vtable *vt,
                                  const char *const *params, int with_sim,
                                  double budget_ms, const loom_stage_graph *g,
                                  const loom_schedule *s, uint8_t *policies,
                                  loom_error *err)
{
    loom_mock_host *h = loom_test_mock_host(mtt_info_of(vt, NULL));
    for (int i = 0; params && params[i]; i += 2)
        ck_assert_int_eq(loom_mock_host_set_param(h, params[i], params[i + 1]),
                         LOOM_OK);
    if (with_sim)
        loom_mock_host_add_service(h, LOOM_SERVICE_SIMULATOR, 1, loom_mock_simulator());
    if (budget_ms >= 0)
        loom_mock_host_set_budget_ms(h, budget_ms);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, err),
                     LOOM_OK);
    memset(policies, 0xff, (size_t)g->n_layer_entries);
    int rc = vt->tune(self, g, s, policies, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

/* Runs a memory tuner once like mtt_tune_budget (no budget) on a mock host
 * whose host->problem(ctx) is `pb` (may be NULL); returns create()'s
 * status when it fails, else tune()'s. */
static inline int mtt_tune_on(const loom_memory_tuner_vtable *vt,
                              const char *const *params, int with_sim,
                              const loom_problem *pb, const loom_stage_graph *g,
                              const loom_schedule *s, uint8_t *policies,
                              loom_error *err)
{
    loom_mock_host *h = loom_test_mock_host(mtt_info_of(vt, NULL));
    for (int i = 0; params && params[i]; i += 2)
        ck_assert_int_eq(loom_mock_host_set_param(h, params[i], params[i + 1]),
                         LOOM_OK);
    if (with_sim)
        loom_mock_host_add_service(h, LOOM_SERVICE_SIMULATOR, 1, loom_mock_simulator());
    loom_mock_host_set_problem(h, pb);
    void *self = NULL;
    int rc = vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, err);
    if (rc == LOOM_OK) {
        memset(policies, 0xff, (size_t)g->n_layer_entries);
        rc = vt->tune(self, g, s, policies, err);
        vt->destroy(self);
    }
    loom_mock_host_free(h);
    return rc;
}

/* Gives every layer entry of g the offload option loom_offload_option()
 * derives from its none and full options on cluster c (what the core's
 * graph builder does). */
static inline void mtt_set_offload(loom_stage_graph *g, const loom_cluster *c)
{
    for (int32_t e = 0; e < g->n_layer_entries; e++) {
        loom_policy_option *o = &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
        o[LOOM_POLICY_OFFLOAD] = loom_offload_option(c, &o[LOOM_POLICY_NONE],
                                                     &o[LOOM_POLICY_FULL]);
    }
}

/* The offload checks a tuner with param `offload` passes (knapsack, ilp):
 * on seeded chains whose offload options are priced at `bw` bytes/s, at
 * caps between the frugal and the fastest peak, it keeps the cap and is
 * never slower in simulation than the same tuner without offload, and it
 * chooses offload somewhere; with a copy fully hidden behind compute it
 * offloads every layer at a frugal cap (none's time, full's bytes); a
 * cluster without host_bytes_per_s, or no cluster, is an error naming
 * params.offload and the field. `who` prefixes the tuner's errors. */
static inline void mtt_check_offload(const loom_memory_tuner_vtable *vt, const char *who)
{
    loom_cluster c;
    memset(&c, 0, sizeof c);
    c.name = "test-cluster";
    c.host_bytes_per_s = 3e6; /* 3 KB per ms: copies of 0.3 to 3 ms */
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = (uint32_t)sizeof pb;
    pb.cluster = &c;
    const char *on[] = {"offload", "true", NULL};
    loom_error err = {0};
    int chosen = 0, faster = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        int P = 2 + (int)(seed % 3), M = 3 + (int)(seed % 4);
        int E = 1 + (int)(seed % 4), split = (int)(seed / 2 % 2);
        loom_stage_graph *g = mtt_chain(P, M, E, split, seed);
        mtt_set_offload(g, &c);
        loom_schedule *s = mtt_order(P, M, split, (int)(seed / 4 % 2));
        int64_t lo = mtt_uniform_peak(g, s, LOOM_POLICY_FULL);
        int64_t hi = mtt_uniform_peak(g, s, LOOM_POLICY_NONE);
        g->memory_cap_bytes = (double)(lo + (hi - lo) * (int64_t)(seed % 5) / 6);
        uint8_t *with = malloc((size_t)g->n_layer_entries);
        uint8_t *without = malloc((size_t)g->n_layer_entries);
        ck_assert_int_eq(mtt_tune_on(vt, on, 1, &pb, g, s, with, &err), LOOM_OK);
        ck_assert_int_eq(mtt_tune_on(vt, NULL, 1, &pb, g, s, without, &err), LOOM_OK);
        loom_metrics a = mtt_simulate(g, s, with, NULL);
        loom_metrics b = mtt_simulate(g, s, without, NULL);
        ck_assert_int_eq(a.cap_violations, 0);
        ck_assert(a.max_peak_bytes <= (int64_t)g->memory_cap_bytes);
        ck_assert_msg(a.makespan_ms <= b.makespan_ms, "seed %d: %.6f > %.6f",
                      (int)seed, a.makespan_ms, b.makespan_ms);
        faster += a.makespan_ms < b.makespan_ms;
        for (int32_t e = 0; e < g->n_layer_entries; e++) {
            chosen += with[e] == LOOM_POLICY_OFFLOAD;
            ck_assert_int_ne(without[e], LOOM_POLICY_OFFLOAD);
        }
        free(with);
        free(without);
        loom_schedule_free(s);
        loom_graph_free(g);
    }
    ck_assert_int_gt(chosen, 0);
    ck_assert_int_gt(faster, 0);

    /* copies hidden: at the all-full peak every layer offloads */
    c.host_bytes_per_s = 1e15;
    loom_stage_graph *g = mtt_chain(2, 4, 2, 0, 7);
    mtt_set_offload(g, &c);
    loom_schedule *s = mtt_order(2, 4, 0, 0);
    g->memory_cap_bytes = (double)mtt_uniform_peak(g, s, LOOM_POLICY_FULL);
    uint8_t pol[64];
    ck_assert_int_eq(mtt_tune_on(vt, on, 1, &pb, g, s, pol, &err), LOOM_OK);
    uint8_t none[64];
    memset(none, LOOM_POLICY_NONE, sizeof none);
    for (int32_t e = 0; e < g->n_layer_entries; e++)
        ck_assert_int_eq(pol[e], LOOM_POLICY_OFFLOAD);
    ck_assert_double_eq_tol(mtt_latency(g, pol), mtt_latency(g, none), 1e-9);

    /* no host bandwidth: refused at create (problem known) or at tune */
    char want[160];
    snprintf(want, sizeof want,
             "%s: params.offload is true, but cluster \"test-cluster\" has no "
             "host_bytes_per_s", who);
    c.host_bytes_per_s = 0;
    ck_assert_int_eq(mtt_tune_on(vt, on, 1, &pb, g, s, pol, &err), LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, want) != NULL, "%s", err.message);
    ck_assert_int_eq(mtt_tune_on(vt, on, 1, NULL, g, s, pol, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "the problem has no cluster"));
    /* offload off: the cluster's bandwidth does not matter */
    ck_assert_int_eq(mtt_tune_on(vt, NULL, 1, &pb, g, s, pol, &err), LOOM_OK);
    loom_schedule_free(s);
    loom_graph_free(g);
}

/* mtt_tune_budget() without a time budget. */
static inline int mtt_tune(const loom_memory_tuner_vtable *vt,
                           const char *const *params, int with_sim,
                           const loom_stage_graph *g, const loom_schedule *s,
                           uint8_t *policies, loom_error *err)
{
    return mtt_tune_budget(vt, params, with_sim, -1, g, s, policies, err);
}

/* Tunes g at memory cap `cap` (0: none) into policies, asserting success
 * and, under a cap, that the policies' simulated peak stays within it. */
static inline void mtt_tune_within(const loom_memory_tuner_vtable *vt, loom_stage_graph *g,
                                   const loom_schedule *s, double cap, uint8_t *policies)
{
    loom_error err = {0};
    g->memory_cap_bytes = cap;
    ck_assert_msg(mtt_tune(vt, NULL, 0, g, s, policies, &err) == LOOM_OK, "%s", err.message);
    if (cap > 0) {
        loom_metrics m = mtt_simulate(g, s, policies, NULL);
        ck_assert(m.max_peak_bytes <= cap);
    }
}

/* The memory_tuner vtable of a static plugin. */
static inline const loom_memory_tuner_vtable *
mtt_vtable(const loom_plugin_info *info)
{
    ck_assert_ptr_nonnull(info);
    const loom_role_header *h = info->role(LOOM_ROLE_MEMORY_TUNER);
    ck_assert_ptr_nonnull(h);
    mtt_info_of((const loom_memory_tuner_vtable *)h, info);
    return (const loom_memory_tuner_vtable *)h;
}

/* Sets entry e's options as (forward + backward ms, bytes) triples. */
static inline void mtt_set_entry(loom_stage_graph *g, int32_t e, const double ms[3],
                                 const int64_t bytes[3])
{
    for (int q = 0; q < 3; q++) {
        loom_policy_option *o = &g->layer_options[(size_t)e * LOOM_POLICY_COUNT + (size_t)q];
        o->forward_ms = 1.0;
        o->backward_ms = ms[q] - 1.0;
        o->weight_grad_ms = 0.0;
        o->activation_bytes = bytes[q];
    }
}

/* One pair of two entries with hand-picked options: (ms, bytes) per policy
 * (3, 100) (3.5, 50) (5, 10) and (3, 80) (4, 30) (4.2, 20); the knapsack
 * and MCKP suites work out its candidates by hand. */
static inline loom_stage_graph *mtt_hand_pair(void)
{
    loom_stage_graph *g = mtt_chain(1, 1, 2, 0, 1);
    const double ms0[3] = {3, 3.5, 5}, ms1[3] = {3, 4, 4.2};
    const int64_t b0[3] = {100, 50, 10}, b1[3] = {80, 30, 20};
    mtt_set_entry(g, 0, ms0, b0);
    mtt_set_entry(g, 1, ms1, b1);
    loom_graph_apply_policies(g);
    return g;
}

#endif
