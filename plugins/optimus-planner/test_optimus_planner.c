/* test_optimus_planner.c - Optimus's model planner against the digest's
 * oracles: at most 28 encoder plans (16 for PP = TP = 8), the 512-GPU
 * memory table (ViT-22B + GPT-175B, k 6: 18.469 GB ... 82.406 GB pruned),
 * Fig. 5's m = 2, the split counts C(N-1, m-1) and Fig. 9's [3,5] among
 * the 7 splits of 8, Fig. 13's global ordering and 16 P2P pairs, the 1F1B
 * bubble closed forms (checked against the simulator), and the layout /
 * plugin. The efficiency metric is tested with its kit
 * (sdk/kits/colocated/test_colocated.c). */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/mock_sim.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include "optimus_layout.h"
#include "optimus_plans.h"

const loom_plugin_info *loom_static_optimus_planner(void);
const loom_plugin_info *loom_static_encoder_first(void);

START_TEST(plan_counts)
{
    loom_optimus_plan p[64];
    ck_assert_int_eq(loom_optimus_enc_plans(64, 8, 1, 6, 1, 1, p, 64), 28);
    ck_assert_int_eq(loom_optimus_enc_plans(8, 8, 8, 6, 1, 1, p, 64), 16);
    ck_assert_int_eq(loom_optimus_enc_plans(8, 8, 8, 6, 1, 1, p, 4), 16);
    ck_assert_int_eq(loom_optimus_enc_plans(0, 8, 8, 6, 1, 1, p, 64), 0);
    /* Fig. 5: 8 GPUs, LLM (DP 1, PP 4, TP 2); encoder (DP 2, PP 2, TP 2) */
    int32_t n = loom_optimus_enc_plans(4, 2, 1, 6, 1, 1, p, 64);
    ck_assert_int_eq(n, 6);
    int found = 0;
    for (int32_t i = 0; i < n; i++) {
        ck_assert_int_eq(p[i].dp * p[i].pp * p[i].tp, 8); /* same GPUs */
        ck_assert_int_eq(p[i].m, p[i].m_pp * p[i].m_tp);
        if (p[i].pp == 2 && p[i].tp == 2) {
            ck_assert_int_eq(p[i].dp, 2);
            ck_assert_int_eq(p[i].m, 2);
            found = 1;
        }
    }
    ck_assert(found);
    /* order: PP_enc ascending, then TP_enc */
    ck_assert_int_eq(p[0].pp, 1);
    ck_assert_int_eq(p[0].tp, 1);
    ck_assert_int_eq(p[1].tp, 2);
    ck_assert_int_eq(p[5].pp, 4);
}
END_TEST

START_TEST(memory_table_512_gpus)
{
    /* digest §3.9: ViT-22B + GPT-175B, 512 GPUs, LLM (8, 8, 8), k 6 */
    static const struct { int prod, dp, m; double mem, over; } want[7] = {
        {64, 8, 1, 18.46875, 0}, {32, 16, 2, 20.53125, 2.0625},
        {16, 32, 4, 24.65625, 6.1875}, {8, 64, 8, 32.90625, 14.4375},
        {4, 128, 16, 49.40625, 30.9375}, {2, 256, 32, 82.40625, 63.9375},
        {1, 512, 64, 148.40625, 129.9375}};
    loom_optimus_plan p[64];
    int32_t n = loom_optimus_enc_plans(8, 8, 8, 6, 22e9, 175e9, p, 64);
    ck_assert_double_eq_tol(loom_optimus_model_state_bytes(6, 0, 22e9, 8, 175e9, 512),
                            16.406e9, 0.0005e9);
    for (int k = 0; k < 7; k++) {
        int hits = 0;
        for (int32_t i = 0; i < n; i++) {
            if (p[i].pp * p[i].tp != want[k].prod)
                continue;
            hits++;
            ck_assert_int_eq(p[i].dp, want[k].dp);
            ck_assert_int_eq(p[i].m, want[k].m);
            /* the digest rounds to 3 decimals: 18.469, 20.531, ... */
            ck_assert_double_eq_tol(p[i].state_bytes / 1e9, want[k].mem, 1e-9);
            ck_assert_double_eq_tol(p[i].overhead_bytes / 1e9, want[k].over, 1e-9);
            ck_assert_int_eq(p[i].state_bytes > 80e9, want[k].mem > 80);
            /* overhead = k phi_enc (1/(PP_enc TP_enc) - 1/(PP TP)) */
            ck_assert_double_eq_tol(p[i].overhead_bytes,
                                    6 * 22e9 * (1.0 / want[k].prod - 1.0 / 64), 1);
        }
        ck_assert_int_gt(hits, 0);
    }
    /* no overhead exactly when DP_enc = DP_llm */
    for (int32_t i = 0; i < n; i++)
        ck_assert_int_eq(p[i].overhead_bytes == 0, p[i].dp == 8);
}
END_TEST

START_TEST(split_counts_and_enumeration)
{
    /* digest §3.8 */
    ck_assert_int_eq(loom_optimus_compositions(32, 2), 31);
    ck_assert_int_eq(loom_optimus_compositions(32, 4), 4495);
    ck_assert_int_eq(loom_optimus_compositions(32, 8), 2629575);
    ck_assert_int_eq(loom_optimus_compositions(32, 16), 300540195);
    ck_assert_int_eq(loom_optimus_compositions(16, 2), 15);
    ck_assert_int_eq(loom_optimus_compositions(16, 4), 455);
    ck_assert_int_eq(loom_optimus_compositions(16, 8), 6435);
    ck_assert_int_eq(loom_optimus_compositions(16, 16), 1);
    ck_assert_int_eq(loom_optimus_compositions(16, 17), 0);
    ck_assert_int_eq(loom_optimus_compositions(16, 0), 0);
    ck_assert_int_eq(loom_optimus_compositions(2000, 1000), INT64_MAX);
    /* Fig. 9: N 8 over m 2 -> [1,7], [2,6], ..., [7,1], including [3,5] */
    int32_t parts[16];
    ck_assert(loom_optimus_split_first(8, 2, parts));
    int count = 0, has35 = 0;
    do {
        ck_assert_int_eq(parts[0], count + 1);
        ck_assert_int_eq(parts[0] + parts[1], 8);
        has35 |= parts[0] == 3 && parts[1] == 5;
        count++;
    } while (loom_optimus_split_next(8, 2, parts));
    ck_assert_int_eq(count, 7);
    ck_assert(has35);
    /* every composition once, for a few (n, m) */
    for (int32_t n = 1; n <= 9; n++)
        for (int32_t m = 1; m <= n; m++) {
            int64_t c = 0;
            ck_assert(loom_optimus_split_first(n, m, parts));
            do {
                int32_t sum = 0;
                for (int32_t j = 0; j < m; j++) {
                    ck_assert_int_ge(parts[j], 1);
                    sum += parts[j];
                }
                ck_assert_int_eq(sum, n);
                c++;
            } while (loom_optimus_split_next(n, m, parts));
            ck_assert_int_eq(c, loom_optimus_compositions(n, m));
        }
    ck_assert(!loom_optimus_split_first(3, 4, parts));
}
END_TEST

START_TEST(global_ordering_fig13)
{
    /* 2 pipelines x 4 microbatches; finish order maps pipeline 1 to LLM
     * microbatches 1, 3, 7, 8 and pipeline 2 to 2, 4, 5, 6 */
    static const int32_t count[2] = {4, 4};
    static const double ef[8] = {1, 3, 7, 8, 2, 4, 5, 6};
    int32_t map[8];
    ck_assert_int_eq(loom_optimus_global_order(2, count, ef, map), 8);
    static const int32_t want[8] = {0, 4, 1, 5, 6, 7, 2, 3};
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(map[i], want[i]);
    ck_assert_int_eq(loom_optimus_p2p_pairs(2, count), 16);
    /* ties: by pipeline, then local index */
    static const double tie[8] = {1, 1, 2, 2, 1, 1, 2, 2};
    loom_optimus_global_order(2, count, tie, map);
    static const int32_t want_tie[8] = {0, 1, 4, 5, 2, 3, 6, 7};
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(map[i], want_tie[i]);
    /* CheckEncLLMDep: EF_i <= F_i and EB_i >= B_i */
    double F[8], B[8], eb[8];
    loom_optimus_global_order(2, count, ef, map);
    for (int i = 0; i < 8; i++) {
        F[i] = i + 1;   /* exactly the sorted finish times */
        B[i] = 20 + i;
        eb[map[i]] = 20 + i;
    }
    ck_assert_int_eq(loom_optimus_check_deps(8, F, B, ef, eb, map), 1);
    F[6] = 6.5; /* microbatch 7's encoder output (7) comes too late */
    ck_assert_int_eq(loom_optimus_check_deps(8, F, B, ef, eb, map), 0);
    F[6] = 7;
    eb[map[3]] = 22; /* backward starts before the gradient (23) */
    ck_assert_int_eq(loom_optimus_check_deps(8, F, B, ef, eb, map), 0);
}
END_TEST

START_TEST(deal_follows_the_split)
{
    static const int32_t parts[2] = {3, 5};
    int32_t owner[8];
    loom_optimus_deal(8, 2, parts, owner);
    static const int32_t want[8] = {1, 0, 1, 1, 0, 1, 0, 1};
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(owner[i], want[i]);
    static const int32_t three[3] = {1, 1, 2};
    loom_optimus_deal(4, 3, three, owner);
    int c[3] = {0, 0, 0};
    for (int i = 0; i < 4; i++)
        c[owner[i]]++;
    ck_assert_int_eq(c[0], 1);
    ck_assert_int_eq(c[2], 2);
    int32_t stage, tp_first;
    loom_optimus_place(1, 1, 0, 2, 2, &stage, &tp_first); /* Fig. 5 */
    ck_assert_int_eq(stage, 2);
    ck_assert_int_eq(tp_first, 2);
}
END_TEST

START_TEST(one_f_one_b_closed_forms_match_the_simulator)
{
    double w, o, t;
    ck_assert_double_eq(loom_optimus_1f1b_makespan(4, 8, 1, 2), 33);
    static const double want[4][3] = {{0, 9, 0}, {1, 6, 2}, {2, 3, 4}, {3, 0, 6}};
    for (int s = 0; s < 4; s++) {
        loom_optimus_1f1b_idle(4, s, 1, 2, &w, &o, &t);
        ck_assert_double_eq(w, want[s][0]);
        ck_assert_double_eq(o, want[s][1]);
        ck_assert_double_eq(t, want[s][2]);
    }
    /* the encoder-first backbone order simulated, for several shapes */
    const loom_interleaver_vtable *vt =
        (const loom_interleaver_vtable *)loom_static_encoder_first()->role(
            LOOM_ROLE_INTERLEAVER);
    for (int p = 1; p <= 5; p++)
        for (int n = p; n <= 8; n++) {
            double f[8], b[8];
            for (int s = 0; s < p; s++) {
                f[s] = 1.5;
                b[s] = 2.5;
            }
            loom_stage_times st;
            memset(&st, 0, sizeof st);
            st.ranks = p;
            st.microbatches = n;
            st.virtual_stages = 1;
            st.forward_ms = f;
            st.backward_ms = b;
            loom_stage_graph *g = NULL;
            loom_error err = {0, ""};
            ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
            loom_mock_host *h = loom_test_mock_host(loom_static_encoder_first());
            void *self = NULL;
            vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, &err);
            loom_schedule *sch = loom_schedule_new(g->n_ranks, g->n_stages);
            ck_assert_int_eq(vt->interleave(self, g, NULL, sch, &err), LOOM_OK);
            loom_metrics m = LOOM_METRICS_INIT;
            m.start_ms = calloc((size_t)g->n_stages, sizeof(double));
            m.end_ms = calloc((size_t)g->n_stages, sizeof(double));
            ck_assert_int_eq(loom_mock_simulate(g, sch, &m, &err), LOOM_OK);
            double T = loom_optimus_1f1b_makespan(p, n, 1.5, 2.5);
            ck_assert_double_eq_tol(m.makespan_ms, T, 1e-9);
            for (int r = 0; r < p; r++) {
                double first = 1e30, last = 0;
                for (int32_t k = sch->rank_off[r]; k < sch->rank_off[r + 1]; k++) {
                    int32_t v = sch->order[k];
                    first = m.start_ms[v] < first ? m.start_ms[v] : first;
                    last = m.end_ms[v] > last ? m.end_ms[v] : last;
                }
                loom_optimus_1f1b_idle(p, r, 1.5, 2.5, &w, &o, &t);
                ck_assert_double_eq_tol(first, w, 1e-9);
                ck_assert_double_eq_tol(T - last, t, 1e-9);
                ck_assert_double_eq_tol(T - n * 4.0 - w - t, o, 1e-9);
            }
            free(m.start_ms);
            free(m.end_ms);
            loom_schedule_free(sch);
            vt->destroy(self);
            loom_mock_host_free(h);
            loom_graph_free(g);
        }
}
END_TEST

static loom_layer tl[16];
static const int32_t llm_in[1] = {0};
typedef struct fixture {
    loom_module modules[2];
    loom_model model;
    loom_problem problem;
    loom_sample samples[8];
    loom_iteration it;
} fixture;

/* vit (6 layers) -> llm (8 layers); tp 2, pp 4, vpp 2, 8 microbatches. */
static void setup(fixture *f)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 16; i++) {
        tl[i].hidden = 64;
        tl[i].ffn_hidden = 256;
        tl[i].heads = 4;
        tl[i].kv_heads = 4;
    }
    f->modules[0] = (loom_module){"vit", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE,
                                  6, tl, 16, 0, 0, 0, NULL, 0};
    f->modules[1] = (loom_module){"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT,
                                  8, tl, 1, 0, 0, 1, llm_in, 0};
    f->model = (loom_model){"toy", 2, f->modules};
    f->problem.struct_size = sizeof f->problem;
    f->problem.kind = LOOM_PROBLEM_MODEL;
    f->problem.model = &f->model;
    f->problem.parallel = (loom_parallel){2, 4, 1, 2, 8, 0};
    for (int i = 0; i < 8; i++) {
        f->samples[i].text_tokens = 10;
        f->samples[i].images = 1;
        f->samples[i].microbatch = -1;
    }
    f->it = (loom_iteration){0, 8, f->samples};
}

START_TEST(layout_colocates_the_encoder)
{
    fixture f;
    setup(&f);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &f.it);
    loom_partition *p = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(set->add(set, &p, &err), LOOM_OK);
    loom_optimus_layout lay = {4, 2, 4, 1, 1, 8, NULL};
    ck_assert_msg(loom_optimus_layout_write(&f.model, &lay, &f.it, p, &err) == LOOM_OK,
                  "%s", err.message);
    ck_assert_int_eq(p->n_flows, 2);
    ck_assert_int_eq(p->n_ranks, 4);
    /* encoder: layers 2, 2, 1, 1 on ranks 0..3, one position per layer */
    ck_assert_int_eq(p->flows[0].n_pos, 6);
    static const int32_t enc_rank[6] = {0, 0, 1, 1, 2, 3};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(p->positions[i].rank, enc_rank[i]);
        ck_assert_int_eq(p->spans[i].first_layer, i);
        ck_assert_int_eq(p->spans[i].n_layers, 1);
    }
    /* backbone: 8 positions, position s on rank s % 4, fed by the encoder */
    ck_assert_int_eq(p->flows[1].n_pos, 8);
    ck_assert_int_eq(p->flows[1].n_inputs, 1);
    ck_assert_int_eq(p->flows[1].inputs[0], 0);
    ck_assert_int_eq(p->flows[1].segments, 2);
    for (int s = 0; s < 8; s++)
        ck_assert_int_eq(p->positions[6 + s].rank, s % 4);
    ck_assert_int_eq(p->n_microbatches, 8);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(p->sample_mb[i], i);
    /* all 8 GPUs hold encoder state (Fig. 4's unified plan: 2 of 8) */
    int ranks_with_enc[4] = {0, 0, 0, 0};
    for (int i = 0; i < 6; i++)
        ranks_with_enc[p->positions[i].rank] = 1;
    ck_assert_int_eq(ranks_with_enc[0] + ranks_with_enc[1] + ranks_with_enc[2] +
                         ranks_with_enc[3], 4);

    /* stage granularity, two replica pipelines of 2 stages, split [3, 5] */
    static const int32_t parts[2] = {3, 5};
    int32_t owner[8];
    loom_optimus_deal(8, 2, parts, owner);
    loom_optimus_layout rep = {4, 2, 2, 2, 0, 8, owner};
    ck_assert_int_eq(loom_optimus_layout_write(&f.model, &rep, &f.it, p, &err), LOOM_OK);
    ck_assert_int_eq(p->n_flows, 3);
    ck_assert_int_eq(p->flows[0].n_pos, 2);
    ck_assert_int_eq(p->positions[0].rank, 0);
    ck_assert_int_eq(p->positions[1].rank, 1);
    ck_assert_int_eq(p->positions[2].rank, 2); /* pipeline 1, stage 0 */
    ck_assert_int_eq(p->spans[3].first_layer, 3);
    ck_assert_int_eq(p->flows[2].n_inputs, 2);
    for (int mb = 0; mb < 8; mb++) {
        ck_assert_int_eq(p->subs[0 * p->cap_microbatches + mb], owner[mb] == 0);
        ck_assert_int_eq(p->subs[1 * p->cap_microbatches + mb], owner[mb] == 1);
        ck_assert_int_eq(p->subs[2 * p->cap_microbatches + mb], 1);
    }
    /* too few backbone layers for pp x vpp */
    loom_optimus_layout bad = {4, 4, 4, 1, 1, 8, NULL};
    ck_assert_int_eq(loom_optimus_layout_write(&f.model, &bad, &f.it, p, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "optimus-planner: the backbone has 8 layers, fewer "
                                  "than the 16 positions (pp 4 x vpp 4)");
    /* a generator joins the backbone chain: 8 + 3 layers over 8
     * positions (2, 2, 2, 1, ...): position 7 holds its last layers */
    loom_module three[3] = {f.modules[0], f.modules[1], f.modules[1]};
    static const int32_t gen_in[1] = {1};
    three[2].name = "gen";
    three[2].kind = LOOM_MODULE_DECODER;
    three[2].n_layers = 3;
    three[2].inputs = gen_in;
    loom_model m3 = {"toy3", 3, three};
    loom_problem pb3 = f.problem;
    pb3.model = &m3;
    loom_candidates *set3 = loom_mock_candidates_new(&pb3, &f.it);
    loom_partition *p3 = NULL;
    ck_assert_int_eq(set3->add(set3, &p3, &err), LOOM_OK);
    ck_assert_msg(loom_optimus_layout_write(&m3, &lay, &f.it, p3, &err) == LOOM_OK, "%s",
                  err.message);
    ck_assert_int_eq(p3->flows[1].module, -1); /* mixed */
    const loom_position *last = &p3->positions[p3->n_positions - 1];
    ck_assert_int_eq(p3->spans[last->span_off].module, 2);
    ck_assert_int_eq(p3->spans[last->span_off].first_layer, 2);
    const loom_position *p2 = &p3->positions[6 + 2];
    ck_assert_int_eq(p3->spans[p2->span_off].first_layer, 4);
    ck_assert_int_eq(p3->spans[p2->span_off].n_layers, 2);
    int32_t layers_placed = 0;
    for (int32_t s = 0; s < p3->n_spans; s++)
        layers_placed += p3->spans[s].n_layers;
    ck_assert_int_eq(layers_placed, 6 + 8 + 3);
    loom_mock_candidates_free(set3);
    f.samples[3].microbatch = 9;
    ck_assert_int_eq(loom_optimus_layout_write(&f.model, &lay, &f.it, p, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "samples[3].microbatch: expected < 8"));
    loom_mock_candidates_free(set);
}
END_TEST

/* Fake "loom.cost": every layer has 1e6 parameters (2e6 bytes at TP 1)
 * and 1e8 / tp bytes of activations for the mean microbatch. */
static int fake_layer(loom_ctx *ctx, int32_t module, int32_t layer,
                      const loom_shape *shape, int32_t policy,
                      loom_layer_cost *out, loom_error *err)
{
    (void)ctx, (void)module, (void)layer, (void)policy, (void)err;
    memset(out, 0, sizeof *out);
    out->forward_ms = 1;
    out->param_bytes = 2000000 / shape->tp;
    out->activation_bytes = 100000000 / shape->tp;
    return LOOM_OK;
}
static int fake_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                      int32_t microbatches, int32_t microbatch, int32_t subs,
                      loom_shape *out, loom_error *err)
{
    (void)ctx, (void)module, (void)it, (void)microbatches, (void)microbatch,
        (void)subs, (void)err;
    memset(out, 0, sizeof *out);
    out->tokens = 100;
    out->tp = 1;
    return LOOM_OK;
}
static const loom_cost_service fake_cost = {
    sizeof(loom_cost_service), 1, fake_layer, fake_shape, NULL, NULL, NULL,
};

/* Runs the planner with up to two params. */
static int run(const loom_problem *pb, const loom_iteration *it,
               loom_candidates *set, const char *const *params, int with_cost,
               loom_error *err)
{
    const loom_partitioner_vtable *vt =
        (const loom_partitioner_vtable *)loom_static_optimus_planner()->role(
            LOOM_ROLE_PARTITIONER);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(h, pb);
    if (with_cost)
        loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &fake_cost);
    for (int i = 0; params && params[i]; i += 2)
        loom_mock_host_set_param(h, params[i], params[i + 1]);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, err), LOOM_OK);
    int rc = vt->partition(self, pb, it, set, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

START_TEST(plugin_single_and_replicas)
{
    fixture f;
    setup(&f);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &f.it);
    loom_error err = {0, ""};
    ck_assert_msg(run(&f.problem, &f.it, set, NULL, 1, &err) == LOOM_OK, "%s", err.message);
    /* TP_enc 1 and 2 (Optimus §4.1): at TP_enc 1 two encoder copies run
     * side by side in the backbone's TP group, each on half the microbatch */
    ck_assert_int_eq(set->n, 2);
    ck_assert_str_eq(set->items[0]->label, "optimus enc pp4 tp1 dp2 m2");
    ck_assert_str_eq(set->items[1]->label, "optimus enc pp4 tp2 dp1 m1");
    ck_assert_int_eq(set->items[0]->layouts[0].tp, 1);
    ck_assert_int_eq(set->items[1]->layouts[0].tp, 2);
    ck_assert_int_eq(set->items[0]->flows[0].n_pos, 6); /* per layer */
    static const char *const stage[] = {"encoder_granularity", "stage", NULL};
    ck_assert_int_eq(run(&f.problem, &f.it, set, stage, 1, &err), LOOM_OK);
    ck_assert_int_eq(set->items[2]->flows[0].n_pos, 4);
    /* replicas: plans in PP_enc, TP_enc order, each with its splits */
    loom_mock_candidates_free(set);
    set = loom_mock_candidates_new(&f.problem, &f.it);
    static const char *const rep[] = {"replicas", "true", "max_splits", "2", NULL};
    ck_assert_int_eq(run(&f.problem, &f.it, set, rep, 1, &err), LOOM_OK);
    /* pp 1, 2, 4 (m_pp 4, 2, 1 pipelines), each at TP_enc 1 and 2 */
    ck_assert_int_eq(set->n, 10);
    ck_assert_str_eq(set->items[0]->label, "optimus enc pp1 tp1 dp8 m8 split 2+2+2+2");
    ck_assert_str_eq(set->items[1]->label, "optimus enc pp1 tp1 dp8 m8 split 3+2+2+1");
    ck_assert_str_eq(set->items[2]->label, "optimus enc pp1 tp2 dp4 m4 split 2+2+2+2");
    ck_assert_str_eq(set->items[3]->label, "optimus enc pp1 tp2 dp4 m4 split 3+2+2+1");
    ck_assert_int_eq(set->items[2]->flows[0].n_pos, 1); /* replicas per layer do not fit */
    ck_assert_int_eq(set->items[2]->n_flows, 5);
    ck_assert_str_eq(set->items[6]->label, "optimus enc pp2 tp2 dp2 m2 split 4+4");
    ck_assert_str_eq(set->items[7]->label, "optimus enc pp2 tp2 dp2 m2 split 5+3");
    ck_assert_int_eq(set->items[6]->n_flows, 3);
    ck_assert_int_eq(set->items[6]->flows[0].n_pos, 6); /* 2 x 6 + 8 fit */
    ck_assert_str_eq(set->items[8]->label, "optimus enc pp4 tp1 dp2 m2 split 8");
    ck_assert_str_eq(set->items[9]->label, "optimus enc pp4 tp2 dp1 m1 split 8");
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(plugin_memory_and_errors)
{
    fixture f;
    setup(&f);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &f.it);
    loom_error err = {0, ""};
    /* states 6 (6e6 + 8e6) / 8 GPUs = 1.05e7; activations (full
     * recomputation) at TP 2: the encoder's 8 PRE microbatches x 6 layers
     * x 5e7 / 4 stages = 6e8, the backbone's 11 in-flight chunks (2*3 + 4
     * warm-up + 1) x 8 layers x 5e7 / 8 chunks = 5.5e8: 1.1605e9 */
    f.problem.memory_cap_bytes = 1e6;
    ck_assert_int_eq(run(&f.problem, &f.it, set, NULL, 1, &err), LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "no encoder plan fits the memory cap: "
                                              "the least needs 1.16"));
    f.problem.memory_cap_bytes = 1.2e9;
    ck_assert_int_eq(run(&f.problem, &f.it, set, NULL, 1, &err), LOOM_OK);
    f.problem.memory_cap_bytes = 0;
    ck_assert_int_eq(run(&f.problem, &f.it, set, NULL, 0, &err), LOOM_ENOTFOUND);
    f.modules[1].kind = LOOM_MODULE_DECODER;
    ck_assert_int_eq(run(&f.problem, &f.it, set, NULL, 1, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "optimus-planner: expected one backbone module, "
                                  "found 0");
    f.modules[1].kind = LOOM_MODULE_BACKBONE;
    f.problem.kind = LOOM_PROBLEM_STAGE_TIMES;
    ck_assert_int_eq(run(&f.problem, &f.it, set, NULL, 1, &err), LOOM_DECLINED);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_optimus_planner();
    cJSON *m = loom_test_json(loom_test_src("plugins/optimus-planner/manifest.json"));
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring, info->version);
    ck_assert_ptr_nonnull(info->role(LOOM_ROLE_PARTITIONER));
    cJSON_Delete(m);
}
END_TEST

/* The optimus-planner suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("optimus-planner");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, plan_counts);
    tcase_add_test(tc, memory_table_512_gpus);
    tcase_add_test(tc, split_counts_and_enumeration);
    tcase_add_test(tc, global_ordering_fig13);
    tcase_add_test(tc, deal_follows_the_split);
    tcase_add_test(tc, one_f_one_b_closed_forms_match_the_simulator);
    tcase_add_test(tc, layout_colocates_the_encoder);
    tcase_add_test(tc, plugin_single_and_replicas);
    tcase_add_test(tc, plugin_memory_and_errors);
    tcase_add_test(tc, manifest_matches_binary);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
