/* test_graph_build.c - the core graph builder on a real pipeline: stage
 * and edge counts of a modality-aware partition, replica flows that split
 * the microbatches between them, the partition errors it reports, and
 * per-span TP degrees in P2P locality and peak FLOP/s, and the merged tokens
 * a patch-merging encoder hands across flows, and the static bytes of the
 * loom.cost service against the graph's. */
#include <string.h>
#include "testutil.h"
#include "engine_api.h"
#include "pipeline.h"
#include <loom/sys/problem.h>
#include <loom/sys/session.h>
#include "run_priv.h"

static loom_session s;

static void open_session_with(const char *manifest, const char *param)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = manifest;
    a.model = "vlm-s";
    a.iterations = 1;
    /* `param`: one --param, or several separated by spaces */
    static char words[512];
    snprintf(words, sizeof words, "%s", param ? param : "");
    for (char *w = strtok(words, " "); w; w = strtok(NULL, " "))
        a.params[a.n_params++] = w;
    loom_error err = {0};
    int rc = loom_session_init(&s, &a, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
}

/* One flow per module over `ranks` ranks (4 or 1), the layers cut evenly... */
static loom_partition *flows_over(loom_candidates *set, int replicate, int32_t ranks)
{
    loom_partition *p = NULL;
    loom_error err = {0};
    ck_assert_int_eq(set->add(set, &p, &err), LOOM_OK);
    const loom_model *m = s.problem.model;
    int32_t n_pos = 0, n_spans = 0;
    int copies = replicate ? 2 : 1;
    p->n_flows = 0;
    for (int32_t mod = 0; mod < m->n_modules; mod++) {
        int reps = mod == 0 ? copies : 1;
        for (int r = 0; r < reps; r++) {
            loom_flow *fl = &p->flows[p->n_flows];
            memset(fl, 0, sizeof *fl);
            fl->pos_off = n_pos;
            fl->module = mod;
            for (int32_t q = 0; q < ranks; q++) {
                int32_t per = m->modules[mod].n_layers / ranks;
                int32_t first = q * per;
                int32_t n = q == ranks - 1 ? m->modules[mod].n_layers - first : per;
                p->spans[n_spans] = (loom_span){mod, first, n, 0};
                p->positions[n_pos] = (loom_position){q, n_spans, 1, 0};
                n_spans++;
                n_pos++;
            }
            fl->n_pos = ranks;
            if (mod == 1) {
                fl->n_inputs = copies;
                for (int k = 0; k < copies; k++)
                    fl->inputs[k] = k;
            }
            p->n_flows++;
        }
    }
    p->n_positions = n_pos;
    p->n_ranks = ranks;
    p->n_spans = n_spans;
    p->n_microbatches = s.problem.parallel.microbatches;
    for (int32_t i = 0; i < p->n_modules * p->n_samples; i++)
        p->sample_mb[i] = loom_default_microbatch(&s.workload->iterations[0], i % p->n_samples,
                                                  p->n_microbatches);
    if (replicate) /* flow 0 runs even microbatches, flow 1 odd ones */
        for (int32_t mb = 0; mb < p->n_microbatches; mb++) {
            p->subs[0 * p->cap_microbatches + mb] = mb % 2 == 0;
            p->subs[1 * p->cap_microbatches + mb] = mb % 2 == 1;
        }
    return p;
}

/* flows_over on 4 ranks. */
static loom_partition *two_flows(loom_candidates *set, int replicate)
{
    return flows_over(set, replicate, 4);
}

/* The megatron-1f1b session on vlm-s with its first iteration, a
 * candidate set and the cost model's context. */
typedef struct fixture {
    const loom_iteration *it;
    loom_candidates *set;
    loom_ctx *cost;
} fixture;

/* The fixture on the megatron-1f1b manifest, with one --param (or none). */
static fixture open_fixture_with(const char *param)
{
    open_session_with(loom_test_src("examples/manifests/megatron-1f1b.json"), param);
    fixture fx;
    fx.it = &s.workload->iterations[0];
    fx.set = loom_candidates_new(&s.problem, fx.it);
    fx.cost = &s.pl->steps[s.pl->cost_model].ctx;
    return fx;
}

static fixture open_fixture(void)
{
    return open_fixture_with(NULL);
}

START_TEST(test_counts_and_replicas)
{
    fixture fx = open_fixture();
    const loom_iteration *it = fx.it;
    loom_candidates *set = fx.set;
    loom_ctx *cost = fx.cost;
    loom_error err = {0};
    int32_t M = s.problem.parallel.microbatches;

    loom_stage_graph *g = NULL;
    loom_partition *p = two_flows(set, 0);
    ck_assert_int_eq(loom_graph_build(cost, &s.problem, it, p, &g, &err), LOOM_OK);
    /* 2 flows x 4 positions x (F + B) per microbatch */
    ck_assert_int_eq(g->n_stages, M * 2 * 4 * 2);
    ck_assert_int_eq(g->n_groups, M * 2);
    ck_assert_int_eq(loom_graph_check(g, &err), LOOM_OK);
    /* the backbone's first F waits for the encoder's last F */
    int32_t first_llm_f = 8 + 0;
    ck_assert_int_eq(g->pred_off[first_llm_f + 1] - g->pred_off[first_llm_f], 1);
    ck_assert_int_eq(g->flow[g->pred[g->pred_off[first_llm_f]]], 0);
    loom_graph_free(g);

    p = two_flows(set, 1);
    ck_assert_int_eq(loom_graph_build(cost, &s.problem, it, p, &g, &err), LOOM_OK);
    /* each microbatch runs one encoder replica: the same stage count */
    ck_assert_int_eq(g->n_stages, M * 2 * 4 * 2);
    for (int32_t v = 0; v < g->n_stages; v++)
        if (g->flow[v] < 2 && g->kind[v] == LOOM_STAGE_F)
            ck_assert_int_eq(g->microbatch[v] % 2, g->flow[v]);
    loom_graph_free(g);

    /* both replicas running microbatch 0: its layers would run twice */
    p->subs[1 * p->cap_microbatches + 0] = 1;
    ck_assert_int_eq(loom_graph_build(cost, &s.problem, it, p, &g, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "runs 2 times in microbatch 0"));

    /* a layer nobody holds */
    p = two_flows(set, 0);
    p->spans[3].n_layers--;
    ck_assert_int_eq(loom_graph_build(cost, &s.problem, it, p, &g, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "is not placed"));
    loom_candidates_free(set);
    loom_session_release(&s);
}
END_TEST

/* An outline holds the counts of the graph the builder builds and no
 * arrays; add_sized gives a partition room for fewer microbatches than
 * the set's, filled as add fills it, and a clone keeps that room. */
START_TEST(test_outlines_and_sized_candidates)
{
    fixture fx = open_fixture();
    loom_error err = {0};
    loom_stage_graph *g = NULL, o;
    loom_partition *p = two_flows(fx.set, 0);
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g, &err), LOOM_OK);
    ck_assert_int_eq(loom_graph_outline(&s.problem, fx.it, p, &o, &err), LOOM_OK);
    ck_assert_int_eq(o.n_stages, g->n_stages);
    ck_assert_int_eq(o.n_edges, g->n_edges);
    ck_assert_int_eq(o.n_pairs, g->n_pairs);
    ck_assert_int_eq(o.n_layer_entries, g->n_layer_entries);
    ck_assert_int_eq(o.n_ranks, g->n_ranks);
    ck_assert_int_eq(o.n_groups, g->n_groups);
    ck_assert_int_eq(o.n_microbatches, g->n_microbatches);
    ck_assert(!o.rank && !o.duration_ms && !o.pred_off && !o.layer_options && !o.static_bytes);
    loom_graph_free(g);

    loom_candidates *set = fx.set;
    int32_t cap = set->items[0]->cap_microbatches;
    loom_partition *q = NULL;
    ck_assert_int_eq(set->add_sized(set, 0, &q, &err), LOOM_EINVAL);
    char want[96];
    snprintf(want, sizeof want, "room for 0 microbatches asked, expected 1 to %d", cap);
    loom_test_has(err.message, want);
    ck_assert_int_eq(set->add_sized(set, cap + 1, &q, &err), LOOM_EINVAL);
    int32_t n = set->n;
    ck_assert_int_eq(set->add_sized(set, 3, &q, &err), LOOM_OK);
    ck_assert_int_eq(set->n, n + 1);
    ck_assert_int_eq(q->cap_microbatches, 3);
    ck_assert_int_eq(q->cap_flows, set->items[0]->cap_flows);
    for (int32_t i = 0; i < q->cap_flows * 3; i++)
        ck_assert_int_eq(q->subs[i], 1);
    for (int32_t i = 0; i < 3; i++)
        ck_assert(q->cp_attention_scale[i] == 1.0);
    for (int32_t i = 0; i < q->n_modules * q->n_samples; i++)
        ck_assert_int_eq(q->sample_mb[i], -1);
    loom_partition *r = NULL;
    ck_assert_int_eq(set->clone(set, n, &r, &err), LOOM_OK);
    ck_assert_int_eq(r->cap_microbatches, 3);
    loom_candidates_free(set);
    loom_session_release(&s);
}
END_TEST

/* The offload option of every layer entry is loom_offload_option() of its
 * none and full options on the problem's cluster: with the preset's host
 * bandwidth it holds full's bytes (less than none's) and costs none's
 * time plus the exposed copy; on a cluster without host bandwidth it is
 * none's option exactly, and it recomputes nothing. */
START_TEST(test_offload_option)
{
    fixture fx = open_fixture();
    loom_error err = {0};
    const loom_cluster *preset = s.problem.cluster;
    ck_assert(preset->host_bytes_per_s > 0);
    loom_cluster none_bw = *preset;
    none_bw.host_bytes_per_s = 0;
    for (int pass = 0; pass < 2; pass++) {
        const loom_cluster *c = pass ? &none_bw : preset;
        s.problem.cluster = c;
        loom_stage_graph *g = NULL;
        loom_partition *p = two_flows(fx.set, 0);
        ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g, &err), LOOM_OK);
        int saved = 0;
        for (int32_t e = 0; e < g->n_layer_entries; e++) {
            const loom_policy_option *o = &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
            loom_policy_option want = loom_offload_option(c, &o[LOOM_POLICY_NONE],
                                                          &o[LOOM_POLICY_FULL]);
            const loom_policy_option *off = &o[LOOM_POLICY_OFFLOAD];
            ck_assert_double_eq(off->forward_ms, want.forward_ms);
            ck_assert_double_eq(off->backward_ms, want.backward_ms);
            ck_assert_double_eq(off->weight_grad_ms, o[LOOM_POLICY_NONE].weight_grad_ms);
            ck_assert_int_eq(off->activation_bytes, want.activation_bytes);
            ck_assert_double_eq(
                g->layer_recompute_flops[(size_t)e * LOOM_POLICY_COUNT + LOOM_POLICY_OFFLOAD], 0);
            if (pass == 1) {
                ck_assert_double_eq(off->forward_ms, o[LOOM_POLICY_NONE].forward_ms);
                ck_assert_double_eq(off->backward_ms, o[LOOM_POLICY_NONE].backward_ms);
                ck_assert_int_eq(off->activation_bytes, o[LOOM_POLICY_NONE].activation_bytes);
            } else if (o[LOOM_POLICY_FULL].activation_bytes < o[LOOM_POLICY_NONE].activation_bytes) {
                ck_assert_int_eq(off->activation_bytes, o[LOOM_POLICY_FULL].activation_bytes);
                ck_assert(off->forward_ms >= o[LOOM_POLICY_NONE].forward_ms);
                saved++;
            }
        }
        ck_assert(pass == 1 || saved > 0);
        loom_graph_free(g);
    }
    s.problem.cluster = preset;
    loom_candidates_free(fx.set);
    loom_session_release(&s);
}
END_TEST

/* The layers the cost model was asked to price a microbatch of, by
 * module and layer (the static memory's one-token questions, one per
 * layer, are not counted), and the roofline's own estimate() the recorder
 * forwards to. */
static uint8_t asked[8][256];
static int (*roofline_estimate)(void *, const loom_problem *, int32_t, int32_t,
                                const loom_shape *, int32_t, loom_layer_cost *, loom_error *);
static int recording_estimate(void *self, const loom_problem *problem, int32_t module,
                              int32_t layer, const loom_shape *shape, int32_t policy,
                              loom_layer_cost *out, loom_error *err)
{
    if (shape->tokens > 1)
        asked[module][layer] = 1;
    return roofline_estimate(self, problem, module, layer, shape, policy, out, err);
}

/* The graph of two_flows with the roofline declaring what it declares
 * (layer_reads) or reading the layer index, into *g; fills asked[]. */
static void build_recorded(const fixture *fx, loom_partition *p, uint32_t layer_reads,
                           loom_stage_graph **g)
{
    loom_cost_model_vtable *vt = &s.pl->steps[s.pl->cost_model].vt.cost_model;
    uint32_t own = vt->layer_reads;
    if (!roofline_estimate)
        roofline_estimate = vt->estimate;
    vt->estimate = recording_estimate;
    vt->layer_reads = layer_reads;
    memset(asked, 0, sizeof asked);
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_build(fx->cost, &s.problem, fx->it, p, g, &err), LOOM_OK);
    vt->estimate = roofline_estimate;
    vt->layer_reads = own;
}

/* The roofline declares LOOM_COST_READS_LAYER_FIELDS: the builder then
 * asks it for a module's first, second and last layers and any layer
 * unlike the one before it, and copies the rest from the last layer it
 * asked for, across the spans of a module (each module here is cut into
 * four spans on four ranks, priced with one shape a microbatch); the
 * graph is the one asking for every layer builds, bit for bit. A cost
 * model reading the layer index is asked for every layer. */
START_TEST(test_layer_fields_asked_once_per_run)
{
    fixture fx = open_fixture();
    ck_assert_uint_eq(s.pl->steps[s.pl->cost_model].vt.cost_model.layer_reads,
                      LOOM_COST_READS_LAYER_FIELDS);
    loom_partition *p = two_flows(fx.set, 0);
    const loom_model *m = s.problem.model;
    ck_assert_int_le(m->n_modules, 8);
    loom_stage_graph *all = NULL, *once = NULL;
    build_recorded(&fx, p, LOOM_COST_READS_LAYER_INDEX, &all);
    for (int32_t mod = 0; mod < m->n_modules; mod++)
        for (int32_t l = 0; l < m->modules[mod].n_layers; l++)
            ck_assert_msg(asked[mod][l], "module %d layer %d not asked", mod, l);
    build_recorded(&fx, p, LOOM_COST_READS_LAYER_FIELDS, &once);
    int copied = 0;
    for (int32_t mod = 0; mod < m->n_modules; mod++) {
        const loom_module *md = &m->modules[mod];
        ck_assert_int_le(md->n_layers, 256);
        for (int32_t l = 0; l < md->n_layers; l++) {
            int want = l <= 1 || l == md->n_layers - 1 ||
                       memcmp(&md->layers[l], &md->layers[l - 1], sizeof md->layers[l]) != 0;
            ck_assert_msg(asked[mod][l] == want, "module %d layer %d: asked %d, expected %d",
                          mod, l, asked[mod][l], want);
            copied += !want;
        }
    }
    ck_assert_int_gt(copied, 0);
    ck_assert_int_eq(once->n_stages, all->n_stages);
    ck_assert_int_eq(once->n_layer_entries, all->n_layer_entries);
    size_t n = (size_t)all->n_stages, e = (size_t)all->n_layer_entries * LOOM_POLICY_COUNT;
    ck_assert(memcmp(once->duration_ms, all->duration_ms, n * sizeof(double)) == 0);
    ck_assert(memcmp(once->flops, all->flops, n * sizeof(double)) == 0);
    ck_assert(memcmp(once->mem_delta_bytes, all->mem_delta_bytes, n * sizeof(int64_t)) == 0);
    ck_assert(memcmp(once->layer_options, all->layer_options, e * sizeof *all->layer_options) == 0);
    ck_assert(memcmp(once->layer_recompute_flops, all->layer_recompute_flops, e * sizeof(double)) ==
              0);
    ck_assert(!all->layer_weight_held_bytes == !once->layer_weight_held_bytes);
    ck_assert(!all->layer_weight_held_bytes || /* split backwards only */
              memcmp(once->layer_weight_held_bytes, all->layer_weight_held_bytes,
                     e * sizeof(int64_t)) == 0);
    ck_assert(memcmp(once->pred_p2p_ms, all->pred_p2p_ms,
                     (size_t)all->n_edges * sizeof(double)) == 0);
    loom_graph_free(all);
    loom_graph_free(once);
    loom_candidates_free(fx.set);
    loom_session_release(&s);
}
END_TEST

/* Per-span TP: a rank's TP group is as wide as its widest span, the ranks'
 * groups sit on consecutive GPUs (P2P between two ranks is intra-node when
 * their first GPUs share a node) and the peak FLOP/s behind the ranks
 * counts every rank's own GPUs. */
/* The iteration tail the builder asks the cost model for: at dp 1 no
 * gradient sync and an Adam step over every parameter (34 bytes each at
 * eff_memory); at dp 64 the step over 1/64 of them and a reduce-scatter of
 * 63/64 of the fp32 gradients over the network (tp 4 x dp 64 GPUs do not
 * fit a node), overlapped with the backward and divided among a rank's
 * chunks by their parameters; an all-gather of the bf16 weights after the
 * step. */
START_TEST(test_iteration_tail_by_dp)
{
    fixture fx = open_fixture();
    loom_error err = {0};
    const loom_cluster *c = s.problem.cluster;
    loom_stage_graph *g1 = NULL, *g64 = NULL;
    loom_partition *p = two_flows(fx.set, 0);
    s.problem.parallel.dp = 1;
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g1, &err), LOOM_OK);
    s.problem.parallel.dp = 64;
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g64, &err), LOOM_OK);
    for (int32_t r = 0; r < g1->n_ranks; r++) {
        ck_assert_double_eq(g1->tail_grad_sync_ms[r], 0);
        ck_assert_double_eq(g1->tail_param_gather_ms[r], 0);
        ck_assert(g1->tail_optimizer_ms[r] > 0);
        double params = g1->tail_optimizer_ms[r] / 1e3 * c->hbm_bytes_per_s * c->eff_memory / 34.0;
        double net = c->net_bytes_per_s * c->eff_collective;
        ck_assert_double_eq_tol(g64->tail_optimizer_ms[r], g1->tail_optimizer_ms[r] / 64, 1e-9);
        ck_assert_double_eq_tol(g64->tail_grad_sync_ms[r],
                                63 * c->p2p_latency_ms + 63.0 / 64 * params * 4 / net * 1e3,
                                1e-6 * g64->tail_grad_sync_ms[r]);
        ck_assert_double_eq_tol(g64->tail_param_gather_ms[r],
                                63 * c->p2p_latency_ms + 63.0 / 64 * params * 2 / net * 1e3,
                                1e-6 * g64->tail_param_gather_ms[r]);
        ck_assert_int_eq(g64->tail_overlap[r], 1);
        ck_assert(g64->tail_grad_bucket_ms[r] <= g64->tail_grad_sync_ms[r]);
        /* the sync divides by parameters: each rank holds a quarter of the
         * ViT (chunk 0) and of the larger LLM (chunk 1) */
        ck_assert_int_eq(g64->tail_chunks, 2);
        const double *w = &g64->tail_chunk_share[r * 2];
        ck_assert_double_eq_tol(w[0] + w[1], 1.0, 1e-12);
        ck_assert(w[0] > 0 && w[0] < w[1]);
    }
    loom_graph_free(g1);
    loom_graph_free(g64);
    loom_candidates_free(fx.set);
    loom_session_release(&s);
}
END_TEST

/* The graph of the fixture with one --param (or none) at dp 8 on `ranks`
 * pipeline ranks (4 or 1), the layers cut evenly; the session is
 * released. */
static loom_stage_graph *graph_at_dp8(const char *param, int32_t ranks)
{
    loom_error err = {0};
    loom_stage_graph *g = NULL;
    fixture fx = open_fixture_with(param);
    s.problem.parallel.dp = 8;
    s.problem.parallel.pp = ranks;
    loom_partition *p = flows_over(fx.set, 0, ranks);
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g, &err), LOOM_OK);
    loom_candidates_free(fx.set);
    loom_session_release(&s);
    return g;
}

/* cost_model.fsdp on this pipeline of 4 ranks, as PyTorch's pipelining
 * runs FSDP2: the stage's weights stay gathered and its gradients whole
 * through the step, beside a sharded fp32 gradient, master copy and Adam
 * state, 2 + 4 + (4 + 12) / dp bytes a parameter where the distributed
 * optimizer keeps 2 + 4 + 12 / dp; the tail reduce-scatters each chunk's
 * gradients after its last backward and gathers nothing; the graph says
 * it assumed sharded weights. */
START_TEST(test_fsdp_static_and_tail)
{
    loom_stage_graph *gd = graph_at_dp8(NULL, 4), *gf = graph_at_dp8("cost_model.fsdp=true", 4);
    ck_assert_uint_eq(gd->assumed & LOOM_ASSUMED_SHARDED_PARAMS, 0);
    ck_assert_uint_eq(gf->assumed & LOOM_ASSUMED_SHARDED_PARAMS, LOOM_ASSUMED_SHARDED_PARAMS);
    for (int32_t r = 0; r < gd->n_ranks; r++) {
        double per_param = 2 + 4 + 12.0 / 8; /* bytes a parameter, distributed optimizer */
        double params = (double)gd->static_bytes[r] / per_param;
        ck_assert_double_eq_tol((double)gf->static_bytes[r], params * (2 + 4 + 16.0 / 8),
                                1e-6 * (double)gf->static_bytes[r]);
        ck_assert_double_eq(gf->tail_param_gather_ms[r], 0);
        ck_assert_int_eq(gf->tail_overlap[r], 1);
        ck_assert_double_eq_tol(gf->tail_grad_sync_ms[r], gd->tail_grad_sync_ms[r],
                                1e-9 * gd->tail_grad_sync_ms[r]);
        ck_assert_double_eq(gf->tail_grad_bucket_ms[r], gf->tail_grad_sync_ms[r]);
        ck_assert_double_eq_tol(gf->tail_optimizer_ms[r], gd->tail_optimizer_ms[r],
                                1e-9 * gd->tail_optimizer_ms[r]);
    }
    loom_graph_free(gd);
    loom_graph_free(gf);
}
END_TEST

/* cost_model.fsdp on one pipeline rank: the rank keeps 1/dp of every
 * layer's weights, gradients and optimizer states, and of the embedding
 * and head, 16 / dp bytes a parameter under FSDP2 (the fp32 weight shard
 * is the master copy) and 18 / dp under Megatron-FSDP (a bf16 shard
 * beside it), where the distributed optimizer keeps 2 + 4 + 12 / dp; the
 * tail is one bucket's reduce-scatter after the rank's last stage and no
 * all-gather. */
START_TEST(test_fsdp_one_rank_shards_everything)
{
    loom_stage_graph *gd = graph_at_dp8(NULL, 1), *gf = graph_at_dp8("cost_model.fsdp=true", 1);
    loom_stage_graph *gm = graph_at_dp8("cost_model.fsdp=true "
                                        "cost_model.fsdp_implementation=megatron-fsdp", 1);
    ck_assert_int_eq(gf->n_ranks, 1);
    double params = (double)gd->static_bytes[0] / (2 + 4 + 12.0 / 8);
    ck_assert_double_eq_tol((double)gf->static_bytes[0], params * 16 / 8,
                            1e-6 * (double)gf->static_bytes[0]);
    ck_assert_double_eq_tol((double)gm->static_bytes[0], params * 18 / 8,
                            1e-6 * (double)gm->static_bytes[0]);
    ck_assert_uint_eq(gf->assumed & LOOM_ASSUMED_MEGATRON_FSDP, 0);
    ck_assert_uint_eq(gm->assumed & LOOM_ASSUMED_MEGATRON_FSDP, LOOM_ASSUMED_MEGATRON_FSDP);
    loom_graph_free(gm);
    ck_assert_double_eq(gf->tail_param_gather_ms[0], 0);
    ck_assert_int_eq(gf->tail_overlap[0], 0);
    ck_assert(gf->tail_grad_sync_ms[0] > 0 && gf->tail_grad_sync_ms[0] < gd->tail_grad_sync_ms[0]);
    ck_assert_uint_eq(gf->assumed & LOOM_ASSUMED_SHARDED_PARAMS, LOOM_ASSUMED_SHARDED_PARAMS);
    loom_graph_free(gd);
    loom_graph_free(gf);
}
END_TEST

/* With overlap_param_gather the all-gather after the step becomes the
 * prefetch from the next step's start, the same bytes over the same link
 * (test_iteration_tail_by_dp's formula); without it there is none. */
START_TEST(test_param_prefetch_in_graph)
{
    for (int overlap = 0; overlap < 2; overlap++) {
        fixture fx = open_fixture_with(overlap ? "cost_model.overlap_param_gather=true" : NULL);
        loom_error err = {0};
        const loom_cluster *c = s.problem.cluster;
        loom_stage_graph *g = NULL;
        loom_partition *p = two_flows(fx.set, 0);
        s.problem.parallel.dp = 64;
        ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g, &err), LOOM_OK);
        for (int32_t r = 0; r < g->n_ranks; r++) {
            double params = g->tail_optimizer_ms[r] / 1e3 * c->hbm_bytes_per_s * c->eff_memory /
                            34.0 * 64;
            double net = c->net_bytes_per_s * c->eff_collective;
            double gather = 63 * c->p2p_latency_ms + 63.0 / 64 * params * 2 / net * 1e3;
            double after = overlap ? 0 : gather, before = overlap ? gather : 0;
            ck_assert_double_eq_tol(g->tail_param_gather_ms[r], after, 1e-6 * gather);
            ck_assert_double_eq_tol(g->tail_param_prefetch_ms[r], before, 1e-6 * gather);
        }
        loom_graph_free(g);
        loom_candidates_free(fx.set);
        loom_session_release(&s);
    }
}
END_TEST

/* Context parallelism in the graph: cp = 2 doubles the GPUs behind each
 * rank (peak FLOP/s per rank); a CP balancer's attention scale (the slowest GPU's share over the
 * mean) lengthens the stages; the gradient sync runs over dp x cp. */
START_TEST(test_context_parallel)
{
    fixture fx = open_fixture();
    loom_error err = {0};
    loom_stage_graph *g1 = NULL, *g2 = NULL, *g3 = NULL;
    loom_partition *p = two_flows(fx.set, 0);
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g1, &err), LOOM_OK);
    s.problem.parallel.cp = 2;
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g2, &err), LOOM_OK);
    for (int32_t mb = 0; mb < p->n_microbatches; mb++)
        p->cp_attention_scale[mb] = 3.0;
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g3, &err), LOOM_OK);
    ck_assert_double_eq_tol(g2->peak_flops_per_rank, 2 * g1->peak_flops_per_rank, 1);
    double d1 = 0, d2 = 0, d3 = 0;
    for (int32_t v = 0; v < g1->n_stages; v++) {
        d1 += g1->duration_ms[v];
        d2 += g2->duration_ms[v];
        d3 += g3->duration_ms[v];
    }
    ck_assert(d2 < d1);
    ck_assert(d3 > d2);
    ck_assert_double_eq_tol(g2->total_flops, g1->total_flops, 1e-6 * g1->total_flops);
    for (int32_t r = 0; r < g1->n_ranks; r++) {
        ck_assert_double_eq(g1->tail_grad_sync_ms[r], 0);
        ck_assert(g2->tail_grad_sync_ms[r] > 0); /* dp 1 x cp 2 */
    }
    s.problem.parallel.cp = 0;
    loom_graph_free(g1);
    loom_graph_free(g2);
    loom_graph_free(g3);
    loom_candidates_free(fx.set);
    loom_session_release(&s);
}
END_TEST

START_TEST(test_span_tp)
{
    fixture fx = open_fixture();
    const loom_iteration *it = fx.it;
    loom_candidates *set = fx.set;
    loom_ctx *cost = fx.cost;
    loom_error err = {0};
    const loom_cluster *c = s.problem.cluster;
    ck_assert_int_eq(c->gpus_per_node, 8);
    ck_assert_int_eq(s.problem.parallel.tp, 4);
    ck_assert(c->net_bytes_per_s < c->nvlink_bytes_per_s);

    loom_stage_graph *a = NULL, *b = NULL;
    loom_partition *p = two_flows(set, 0);
    p->tp = 0; /* every span at the problem's TP 4: GPUs 0, 4, 8, 12 */
    ck_assert_int_eq(loom_graph_build(cost, &s.problem, it, p, &a, &err), LOOM_OK);
    for (int32_t i = 0; i < p->n_positions; i++) /* rank 0 at TP 8: GPUs 0, 8, 12, 16 */
        if (p->positions[i].rank == 0)
            p->spans[p->positions[i].span_off].tp = 8;
    ck_assert_int_eq(loom_graph_build(cost, &s.problem, it, p, &b, &err), LOOM_OK);
    ck_assert_int_eq(a->n_edges, b->n_edges);

    /* nodes of ranks 0..3: before 0 0 1 1, after 0 1 1 2 */
    static const int node_a[4] = {0, 0, 1, 1}, node_b[4] = {0, 1, 1, 2};
    int32_t checked = 0;
    for (int32_t v = 0; v < a->n_stages; v++)
        for (int32_t e = a->pred_off[v]; e < a->pred_off[v + 1]; e++) {
            int32_t from = a->rank[a->pred[e]], to = a->rank[v];
            if (from == to)
                continue;
            int inter_a = node_a[from] != node_a[to], inter_b = node_b[from] != node_b[to];
            if (inter_b > inter_a)
                ck_assert_msg(b->pred_p2p_ms[e] > a->pred_p2p_ms[e], "edge %d, ranks %d -> %d", e,
                              from, to);
            else if (inter_b < inter_a)
                ck_assert_msg(b->pred_p2p_ms[e] < a->pred_p2p_ms[e], "edge %d, ranks %d -> %d", e,
                              from, to);
            else if (from != 0 && to != 0)
                ck_assert_double_eq(b->pred_p2p_ms[e], a->pred_p2p_ms[e]);
            checked++;
        }
    ck_assert_int_gt(checked, 0);
    /* (8 + 4 + 4 + 4) GPUs against 4 x 4 */
    ck_assert_double_eq_tol(a->peak_flops_per_rank, c->peak_flops * 4, 1e-6 * c->peak_flops);
    ck_assert_double_eq_tol(b->peak_flops_per_rank, c->peak_flops * 5, 1e-6 * c->peak_flops);
    loom_graph_free(a);
    loom_graph_free(b);
    loom_candidates_free(set);
    loom_session_release(&s);
}
END_TEST

/* A ViT whose layers run on 4 x 169 patches an image and hand on 169
 * tokens: transfers inside its flow carry 4x the bytes, the ones into the
 * LLM's flow (and the gradients back) the merged tokens, as before. */
START_TEST(test_merged_patches_cross_flows)
{
    fixture fx = open_fixture();
    loom_error err = {0};
    loom_stage_graph *a = NULL, *b = NULL;
    loom_partition *p = two_flows(fx.set, 0);
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &a, &err), LOOM_OK);
    loom_module *vit = (loom_module *)&s.problem.model->modules[0];
    ck_assert_int_eq(vit->modality, LOOM_MODALITY_IMAGE);
    vit->patches_per_item = 4 * vit->tokens_per_item;
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &b, &err), LOOM_OK);
    ck_assert_int_eq(a->n_edges, b->n_edges);
    int32_t inside = 0, across = 0;
    for (int32_t v = 0; v < a->n_stages; v++)
        for (int32_t e = a->pred_off[v]; e < a->pred_off[v + 1]; e++) {
            int32_t u = a->pred[e];
            if (a->rank[u] == a->rank[v] || !(a->pred_p2p_ms[e] > 0))
                continue;
            if (a->flow[u] != a->flow[v]) {
                ck_assert_double_eq_tol(b->pred_p2p_ms[e], a->pred_p2p_ms[e], 1e-12);
                across++;
            } else if (a->flow[u] == 0) {
                ck_assert_msg(b->pred_p2p_ms[e] > a->pred_p2p_ms[e], "edge %d", e);
                inside++;
            }
        }
    ck_assert_int_gt(inside, 0);
    ck_assert_int_gt(across, 0);
    vit->patches_per_item = 0;
    loom_graph_free(a);
    loom_graph_free(b);
    loom_candidates_free(fx.set);
    loom_session_release(&s);
}
END_TEST

/* Exposed TP communication per stage: a part of every F and I (each
 * layer's collectives) at TP 4, none in W or at TP 1; a stage whose
 * costs are reused from the previous microbatch reuses it too; a clone
 * keeps it and the digest sees it. */
START_TEST(test_exposed_comm_per_stage)
{
    fixture fx = open_fixture();
    loom_error err = {0};
    loom_stage_graph *g = NULL;
    loom_partition *p = two_flows(fx.set, 0);
    p->split_backward = 1;
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g, &err), LOOM_OK);
    ck_assert_ptr_nonnull(g->comm_ms);
    int32_t reused = 0;
    for (int32_t v = 0; v < g->n_stages; v++) {
        if (g->kind[v] == LOOM_STAGE_W) {
            ck_assert_double_eq(g->comm_ms[v], 0);
            continue;
        }
        int needs = g->kind[v] == LOOM_STAGE_F || g->duration_ms[v] > 0;
        if (needs)
            ck_assert_msg(g->comm_ms[v] > 0 && g->comm_ms[v] <= g->duration_ms[v],
                          "stage %d: comm %g of %g ms", v, g->comm_ms[v], g->duration_ms[v]);
        for (int32_t u = 0; u < v; u++) /* same work, same communication */
            if (g->flow[u] == g->flow[v] && g->position[u] == g->position[v] &&
                g->kind[u] == g->kind[v] && g->duration_ms[u] == g->duration_ms[v]) {
                ck_assert_double_eq(g->comm_ms[u], g->comm_ms[v]);
                reused++;
                break;
            }
    }
    ck_assert_int_gt(reused, 0);
    loom_stage_graph *c = loom_graph_clone(g);
    ck_assert_ptr_nonnull(c);
    ck_assert(loom_graph_digest(c) == loom_graph_digest(g));
    c->comm_ms[0] *= 0.5;
    ck_assert(loom_graph_digest(c) != loom_graph_digest(g));
    loom_graph_free(c);
    loom_graph_free(g);
    p->tp = 1;
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g, &err), LOOM_OK);
    for (int32_t v = 0; v < g->n_stages; v++)
        ck_assert_double_eq(g->comm_ms[v], 0);
    loom_graph_free(g);
    loom_candidates_free(fx.set);
    loom_session_release(&s);
}
END_TEST

/* Revision stamps: a built graph and a clone carry none; each stamp is
 * nonzero and new, the digest sees it (a plugin that rewrote it would be
 * caught), and a graph whose struct_size ends before the member is left
 * alone. */
START_TEST(test_revision_stamps)
{
    fixture fx = open_fixture();
    loom_error err = {0};
    loom_stage_graph *g = NULL;
    loom_partition *p = two_flows(fx.set, 0);
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g, &err), LOOM_OK);
    loom_stage_graph *c = loom_graph_clone(g);
    ck_assert_ptr_nonnull(c);
    ck_assert(g->revision == 0 && c->revision == 0);
    loom_graph_stamp(g);
    uint64_t first = g->revision, before = loom_graph_digest(g);
    loom_graph_stamp(c);
    ck_assert(first != 0 && c->revision != 0 && c->revision != first);
    loom_graph_stamp(g);
    ck_assert(g->revision != first && g->revision != c->revision);
    ck_assert(loom_graph_digest(g) != before);
    loom_stage_graph old = *c;
    old.struct_size = (uint32_t)offsetof(loom_stage_graph, revision);
    old.revision = 5;
    loom_graph_stamp(&old);
    ck_assert(old.revision == 5);
    loom_graph_free(c);
    loom_graph_free(g);
    loom_candidates_free(fx.set);
    loom_session_release(&s);
}
END_TEST

/* Memory per phase on a model problem with split backward: F adds the
 * activation bytes, I frees all but what W keeps, W frees that; W keeps
 * a part of every trainable layer's bytes with nothing recomputed, all of
 * them under full recomputation (F then stores only the layer input) and
 * nothing of a frozen layer. */
/* The static bytes a partitioner reads through loom.cost span_static_bytes
 * (the core/cost rule) add up, span by span, to what the graph builder
 * charges each rank, which the memory tuners and the simulator read; a
 * span outside its module is refused. Worked example: vlm-s with each
 * module's layers in four quarters, one quarter of each module a rank, so
 * rank 0 holds the ViT's first quarter and the LM's first (its embedding
 * half) and rank 3 the last quarters (the LM head half). */
START_TEST(test_span_static_matches_graph)
{
    fixture fx = open_fixture();
    loom_error err = {0};
    loom_stage_graph *g = NULL;
    loom_partition *p = two_flows(fx.set, 0);
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g, &err), LOOM_OK);
    const loom_cost_service *cost = loom_host_cost(loom_host_table(), fx.cost);
    ck_assert(LOOM_COST_HAS(cost, span_static_bytes));
    int64_t sum[4] = {0, 0, 0, 0};
    for (int32_t i = 0; i < p->n_positions; i++) {
        const loom_position *pos = &p->positions[i];
        for (int32_t k = 0; k < pos->n_spans; k++) {
            int64_t b = -1;
            ck_assert_int_eq(cost->span_static_bytes(fx.cost, &p->spans[pos->span_off + k], &b,
                                                     &err), LOOM_OK);
            ck_assert_int_gt(b, 0);
            sum[pos->rank] += b;
        }
    }
    for (int32_t r = 0; r < 4; r++)
        ck_assert_int_eq(sum[r], g->static_bytes[r]);
    /* the LM's embedding (rank 0) and head (rank 3) halves: more static
     * bytes there than on the middle ranks, which hold as many layers */
    ck_assert_int_gt(g->static_bytes[0], g->static_bytes[1]);
    ck_assert_int_gt(g->static_bytes[3], g->static_bytes[2]);
    loom_span bad = {1, s.problem.model->modules[1].n_layers - 1, 2, 0};
    int64_t b = 7;
    ck_assert_int_eq(cost->span_static_bytes(fx.cost, &bad, &b, &err), LOOM_EINVAL);
    ck_assert_int_eq(b, 0);
    ck_assert_ptr_nonnull(strstr(err.message, "expected a range within its"));
    loom_graph_free(g);
    loom_candidates_free(fx.set);
    loom_session_release(&s);
}
END_TEST

START_TEST(test_memory_per_phase)
{
    fixture fx = open_fixture();
    loom_error err = {0};
    loom_stage_graph *g = NULL;
    loom_partition *p = two_flows(fx.set, 0);
    p->split_backward = 1;
    /* freeze the backbone: it still needs input gradients for the trainable
     * encoder before it (activation bytes), but has no W */
    loom_module *llm = (loom_module *)&s.problem.model->modules[1];
    ck_assert_int_eq(llm->frozen, 0);
    llm->frozen = 1;
    ck_assert_int_eq(loom_graph_build(fx.cost, &s.problem, fx.it, p, &g, &err), LOOM_OK);
    llm->frozen = 0;
    ck_assert_ptr_nonnull(g->layer_weight_held_bytes);
    ck_assert_int_eq(loom_graph_check(g, &err), LOOM_OK);
    int partial = 0;
    int64_t frozen_bytes = 0;
    for (int32_t q = 0; q < g->n_pairs; q++) {
        int32_t f = g->pair_forward[q], i = g->pair_backward[q], w = g->pair_weight[q];
        ck_assert_int_ge(w, 0);
        int frozen = g->module[f] == 1; /* the backbone, frozen while built */
        int64_t act = 0, held = 0;
        for (int32_t e = g->pair_layer_off[q]; e < g->pair_layer_off[q + 1]; e++) {
            const loom_policy_option *o = &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
            const int64_t *h = &g->layer_weight_held_bytes[(size_t)e * LOOM_POLICY_COUNT];
            act += o[LOOM_POLICY_NONE].activation_bytes;
            held += h[LOOM_POLICY_NONE];
            if (frozen) {
                for (int k = 0; k < LOOM_POLICY_COUNT; k++)
                    ck_assert_int_eq(h[k], 0);
                frozen_bytes += o[LOOM_POLICY_NONE].activation_bytes;
            } else if (o[LOOM_POLICY_NONE].activation_bytes > 0) {
                ck_assert_int_lt(h[LOOM_POLICY_NONE], o[LOOM_POLICY_NONE].activation_bytes);
                ck_assert_int_eq(h[LOOM_POLICY_FULL], o[LOOM_POLICY_FULL].activation_bytes);
                partial++;
            }
        }
        ck_assert_int_eq(g->mem_delta_bytes[f], act);
        ck_assert_int_eq(g->mem_delta_bytes[i], held - act);
        ck_assert_int_eq(g->mem_delta_bytes[w], -held);
    }
    ck_assert_int_gt(partial, 0);
    ck_assert_int_gt(frozen_bytes, 0);
    loom_graph_free(g);
    loom_candidates_free(fx.set);
    loom_session_release(&s);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("graph_build");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_counts_and_replicas);
    tcase_add_test(tc, test_outlines_and_sized_candidates);
    tcase_add_test(tc, test_iteration_tail_by_dp);
    tcase_add_test(tc, test_fsdp_static_and_tail);
    tcase_add_test(tc, test_fsdp_one_rank_shards_everything);
    tcase_add_test(tc, test_context_parallel);
    tcase_add_test(tc, test_span_tp);
    tcase_add_test(tc, test_merged_patches_cross_flows);
    tcase_add_test(tc, test_memory_per_phase);
    tcase_add_test(tc, test_span_static_matches_graph);
    tcase_add_test(tc, test_exposed_comm_per_stage);
    tcase_add_test(tc, test_revision_stamps);
    tcase_add_test(tc, test_param_prefetch_in_graph);
    tcase_add_test(tc, test_offload_option);
    tcase_add_test(tc, test_layer_fields_asked_once_per_run);
    suite_add_tcase(su, tc);
    return loom_test_main(su);
}
