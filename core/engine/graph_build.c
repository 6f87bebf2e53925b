/* graph_build.c - turns a partition (flows of positions of layer spans,
 * samples assigned to microbatches) into the stage graph of one iteration,
 * costing every stage pair under every memory policy with the pipeline's
 * cost model. Stage ids are ordered microbatch, flow, sub-microbatch, then
 * F by position followed by the backward stages from the last position. */
#include <stdlib.h>
#include <string.h>
#include <loom/tokens.h>
#include "engine_api.h"
#include "cost_rules.h"

typedef struct build {
    const loom_problem *problem;
    const loom_iteration *it;
    const loom_partition *part;
    loom_ctx *cost_ctx;
    int split;
    int32_t M, F;            /* microbatches, flows */
    int32_t *unit_base;      /* [f * M + mb]: first stage of (f, mb, sub 0) */
    int32_t *per_unit;       /* [f]: stages per (f, mb, sub) */
    int32_t *consumers;      /* [f * F + k]: flows consuming f */
    int32_t *n_consumers;    /* [f] */
    double *out_bytes;       /* [stage]: activation bytes each F sends on */
    double *comm_back;       /* [F stage]: exposed TP comm of its B (or I) */
    int32_t *layers_of_flow; /* [f]: layers over all its positions */
    int32_t *layer_base;     /* [position]: layers before it in its flow */
    int p2p_rc;              /* first failure of the cost model's p2p_ms */
    loom_error *err;         /* where that failure's message went */
    loom_shape_sums **sums;  /* [module]: per-microbatch sums, NULL until used */
    loom_cost_ranks ranks;   /* GPU groups, chunks and parameters of the ranks */
    loom_cost_source src;    /* the cost model, for the rules above the layer */
} build;

/* The per-microbatch shape sums of `module` (computed on first use, one
 * pass over the samples); NULL when out of memory. */
static const loom_shape_sums *module_sums(build *b, int32_t module)
{
    if (!b->sums[module]) {
        b->sums[module] = malloc((size_t)b->M * sizeof **b->sums);
        if (b->sums[module])
            loom_shape_sums_for(b->problem, module, b->it,
                                b->part->sample_mb + (size_t)module * b->part->n_samples,
                                b->M, b->sums[module]);
    }
    return b->sums[module];
}

static int32_t subs_of(const build *b, int32_t f, int32_t mb)
{
    int32_t s = b->part->subs ? b->part->subs[f * b->part->cap_microbatches + mb] : 1;
    return s < 0 ? 0 : s; /* 0: the flow skips this microbatch (a replica flow) */
}

/* Stage id of (f, mb, sub) at position p; what: 0 F, 1 B or I, 2 W. */
static int32_t stage_id(const build *b, int32_t f, int32_t mb, int32_t sub,
                        int32_t p, int what)
{
    int32_t n = b->part->flows[f].n_pos;
    int32_t base = b->unit_base[f * b->M + mb] + sub * b->per_unit[f];
    if (what == 0)
        return base + p;
    int32_t j = n - 1 - p;
    return b->split ? base + n + 2 * j + (what == 2) : base + n + j;
}

static int check_partition(const loom_problem *pb, const loom_partition *pt,
                           loom_error *err)
{
    const loom_model *model = pb->model;
    if (pt->n_flows < 1 || pt->n_ranks < 1 || pt->n_microbatches < 1)
        return loom_set_error(err, LOOM_EINVAL,
                              "partition: %d flows on %d ranks with %d microbatches",
                              pt->n_flows, pt->n_ranks, pt->n_microbatches);
    int32_t total_layers = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        total_layers += model->modules[m].n_layers;
    int32_t *placed = calloc((size_t)total_layers + 1, sizeof(int32_t));
    int32_t *first = calloc((size_t)model->n_modules + 1, sizeof(int32_t));
    if (!placed || !first) {
        free(placed);
        free(first);
        return loom_set_error(err, LOOM_ENOMEM, "partition: out of memory");
    }
    for (int32_t m = 1; m < model->n_modules; m++)
        first[m] = first[m - 1] + model->modules[m - 1].n_layers;
    int rc = LOOM_OK;
    for (int32_t f = 0; f < pt->n_flows && rc == LOOM_OK; f++) {
        const loom_flow *fl = &pt->flows[f];
        if (fl->n_pos < 1 || fl->pos_off < 0 || fl->pos_off + fl->n_pos > pt->n_positions)
            rc = loom_set_error(err, LOOM_EINVAL, "partition: flow %d has positions %d..%d of %d",
                                f, fl->pos_off, fl->pos_off + fl->n_pos - 1, pt->n_positions);
        for (int32_t k = 0; k < fl->n_inputs && rc == LOOM_OK; k++)
            if (fl->inputs[k] < 0 || fl->inputs[k] >= f)
                rc = loom_set_error(err, LOOM_EINVAL,
                                    "partition: flow %d input %d must be an earlier flow", f,
                                    fl->inputs[k]);
        for (int32_t p = 0; p < fl->n_pos && rc == LOOM_OK; p++) {
            const loom_position *pos = &pt->positions[fl->pos_off + p];
            if (pos->rank < 0 || pos->rank >= pt->n_ranks)
                rc = loom_set_error(err, LOOM_EINVAL, "partition: flow %d position %d on rank %d of %d",
                                    f, p, pos->rank, pt->n_ranks);
            else if (pos->span_off < 0 || pos->n_spans < 1 || pos->span_off + pos->n_spans > pt->n_spans)
                rc = loom_set_error(err, LOOM_EINVAL, "partition: flow %d position %d has no valid spans",
                                    f, p);
            for (int32_t s = 0; s < pos->n_spans && rc == LOOM_OK; s++) {
                const loom_span *sp = &pt->spans[pos->span_off + s];
                if (sp->module < 0 || sp->module >= model->n_modules || sp->n_layers < 1 ||
                    sp->first_layer < 0 ||
                    sp->first_layer + sp->n_layers > model->modules[sp->module].n_layers) {
                    rc = loom_set_error(err, LOOM_EINVAL,
                                        "partition: flow %d position %d span %d is not a layer range of a module",
                                        f, p, s);
                    break;
                }
                for (int32_t l = 0; l < sp->n_layers; l++)
                    placed[first[sp->module] + sp->first_layer + l]++;
            }
        }
    }
    for (int32_t m = 0; m < model->n_modules && rc == LOOM_OK; m++)
        for (int32_t l = 0; l < model->modules[m].n_layers; l++)
            if (!placed[first[m] + l]) {
                rc = loom_set_error(err, LOOM_EINVAL, "partition: layer %d of module %s is not placed", l,
                                    model->modules[m].name);
                break;
            }
    /* A layer held by several flows (replica pipelines) must run exactly
     * once in every microbatch: the flows holding it run disjoint ones. */
    int replicas = 0;
    for (int32_t i = 0; i < total_layers && rc == LOOM_OK; i++)
        replicas |= placed[i] > 1;
    for (int32_t mb = 0; replicas && mb < pt->n_microbatches && rc == LOOM_OK; mb++) {
        memset(placed, 0, (size_t)total_layers * sizeof(int32_t));
        for (int32_t f = 0; f < pt->n_flows; f++) {
            if (pt->subs && pt->subs[f * pt->cap_microbatches + mb] < 1)
                continue;
            const loom_flow *fl = &pt->flows[f];
            for (int32_t p = 0; p < fl->n_pos; p++) {
                const loom_position *pos = &pt->positions[fl->pos_off + p];
                for (int32_t s = 0; s < pos->n_spans; s++) {
                    const loom_span *sp = &pt->spans[pos->span_off + s];
                    for (int32_t l = 0; l < sp->n_layers; l++)
                        placed[first[sp->module] + sp->first_layer + l]++;
                }
            }
        }
        for (int32_t m = 0; m < model->n_modules && rc == LOOM_OK; m++)
            for (int32_t l = 0; l < model->modules[m].n_layers; l++)
                if (placed[first[m] + l] != 1) {
                    rc = loom_set_error(err, LOOM_EINVAL,
                                        "partition: layer %d of module %s runs %d times in "
                                        "microbatch %d (flows holding a layer must run disjoint "
                                        "microbatches)",
                                        l, model->modules[m].name, placed[first[m] + l], mb);
                    break;
                }
    }
    for (int32_t i = 0; i < pt->n_modules * pt->n_samples && rc == LOOM_OK; i++)
        if (pt->sample_mb[i] < -1 || pt->sample_mb[i] >= pt->n_microbatches)
            rc = loom_set_error(err, LOOM_EINVAL, "partition: sample %d of module %d in microbatch %d of %d",
                                i % pt->n_samples, i / pt->n_samples, pt->sample_mb[i], pt->n_microbatches);
    free(placed);
    free(first);
    return rc;
}

/* With per-module layouts, every rank runs modules of one GPU set only: a
 * disjoint module never shares a rank with a module of another set (the
 * error names both, so a layout-unaware partitioner is caught). */
static int check_sets(const loom_problem *pb, const loom_partition *pt, loom_error *err)
{
    if (!loom_cost_has_layouts(pb, pt))
        return LOOM_OK;
    int32_t *first = malloc((size_t)pt->n_ranks * sizeof *first);
    if (!first)
        return loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
    for (int32_t r = 0; r < pt->n_ranks; r++)
        first[r] = -1; /* a module of the rank, once seen */
    int rc = LOOM_OK;
    for (int32_t i = 0; i < pt->n_positions && rc == LOOM_OK; i++) {
        const loom_position *pos = &pt->positions[i];
        for (int32_t k = 0; k < pos->n_spans && rc == LOOM_OK; k++) {
            int32_t m = pt->spans[pos->span_off + k].module;
            if (first[pos->rank] < 0)
                first[pos->rank] = m;
            else if (loom_cost_owner_set(pb, pt, m) != loom_cost_owner_set(pb, pt, first[pos->rank])) {
                int32_t a = first[pos->rank];
                int32_t sa = loom_cost_owner_set(pb, pt, a), sm = loom_cost_owner_set(pb, pt, m);
                rc = loom_set_error(
                    err, LOOM_EINVAL,
                    "partition: rank %d runs modules \"%s\" (GPU set of %s) and \"%s\" (GPU "
                    "set of %s): expected the modules of one GPU set per rank under per-module "
                    "layouts (plan them with a layout-aware partitioner: module-layout, "
                    "hetero-search)",
                    (int)pos->rank, pb->model->modules[a].name,
                    sa < 0 ? "the top-level layout" : pb->model->modules[sa].name,
                    pb->model->modules[m].name,
                    sm < 0 ? "the top-level layout" : pb->model->modules[sm].name);
            }
        }
    }
    free(first);
    return rc;
}

/* P2P time of `bytes` from pipeline rank a to rank b (each a TP group laid
 * out on consecutive GPUs; the same node when their first GPUs share one;
 * `owner`, a or b, is the rank whose per-GPU share of the tensor bytes is),
 * from the cost model (loom_cost_p2p_ms). A failure is kept in bd->p2p_rc
 * (the first one's message in bd->err) and costs 0. */
static double p2p_ms(build *bd, int32_t a, int32_t b, double bytes, int32_t owner)
{
    const loom_problem *pb = bd->problem;
    if (a == b || !pb->cluster || bd->p2p_rc != LOOM_OK)
        return 0;
    const loom_cluster *c = pb->cluster;
    int32_t gpn = c->gpus_per_node > 0 ? c->gpus_per_node : 1;
    loom_p2p_link link = {(uint32_t)sizeof link, a, b, bd->ranks.gpu0[a] / gpn == bd->ranks.gpu0[b] / gpn,
                          bd->ranks.gpu0[a], bd->ranks.gpu0[b]};
    if (loom_cost_has_layouts(pb, bd->part)) {
        /* resharding between groups of different widths: the narrower
         * group's GPUs each carry total / min(width) (docs/cost-models.md,
         * "Per-module layouts"); bytes is one GPU's share on rank `owner`,
         * the one whose forward output it is */
        int64_t wa = loom_cost_rank_width(&bd->ranks, a), wb = loom_cost_rank_width(&bd->ranks, b);
        bytes = bytes * (double)loom_cost_rank_width(&bd->ranks, owner) / (double)(wa < wb ? wa : wb);
    }
    double ms = 0;
    bd->p2p_rc = loom_cost_p2p_ms(bd->cost_ctx, &link, bytes, &ms, bd->err);
    return bd->p2p_rc == LOOM_OK ? ms : 0;
}

/* Layers in one position (its layer entries). */
static int32_t position_layers(const loom_partition *pt, const loom_position *pos)
{
    int32_t n = 0;
    for (int32_t s = 0; s < pos->n_spans; s++)
        n += pt->spans[pos->span_off + s].n_layers;
    return n;
}

/* Per-layer costs of one position for one (flow, mb) under every policy
 * (the cost model's three, offload derived from none and full by
 * loom_offload_option on the problem's cluster):
 * entries[l * LOOM_POLICY_COUNT + policy] for the position's l-th layer,
 * in rflops[] (same index) the FLOPs its recomputation adds and in held[]
 * the part of its activation bytes W keeps. */
static int cost_position(build *b, int32_t f, int32_t mb, const loom_position *pos,
                         loom_policy_option *entries, double *rflops, int64_t *held,
                         double *flops, double *out_bytes, double *comm, loom_error *err)
{
    const loom_problem *pb = b->problem;
    const loom_model *model = pb->model;
    *flops = 0;
    comm[0] = comm[1] = 0;
    *out_bytes = 0;
    int32_t subs = subs_of(b, f, mb), k = 0;
    for (int32_t s = 0; s < pos->n_spans; s++) {
        const loom_span *sp = &b->part->spans[pos->span_off + s];
        const loom_module *mod = &model->modules[sp->module];
        loom_shape shape;
        const loom_shape_sums *sums = module_sums(b, sp->module);
        if (!sums)
            return loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
        /* a listed module narrower than its rank's group runs `reps`
         * data-parallel copies there, each on 1/reps of the microbatch */
        int32_t tp = loom_cost_span_tp(pb, b->part, sp), cp = loom_cost_span_cp(pb, b->part, sp);
        int64_t reps = loom_cost_listed_layout(pb, b->part, sp->module)
                           ? loom_cost_rank_width(&b->ranks, pos->rank) / ((int64_t)tp * cp)
                                                     : 1;
        reps = reps < 1 ? 1 : reps;
        loom_shape_from_sums(pb, &sums[mb], subs * (int32_t)reps, &shape);
        shape.tp = tp;
        shape.cp = cp;
        if (shape.cp > 1 && LOOM_STRUCT_HAS(b->part, loom_partition, cp_attention_scale) &&
            b->part->cp_attention_scale && b->part->cp_attention_scale[mb] >= 1.0 &&
            b->part->cp_attention_scale[mb] <= 1e6)
            shape.cp_attention_scale = b->part->cp_attention_scale[mb];
        int up = loom_module_upstream_trainable(model, sp->module);
        double element = 2.0; /* bytes per activation element: bf16 unless told */
        for (int32_t l = sp->first_layer; l < sp->first_layer + sp->n_layers; l++, k++) {
            loom_policy_option *opt = &entries[(size_t)k * LOOM_POLICY_COUNT];
            int64_t *keep = &held[(size_t)k * LOOM_POLICY_COUNT];
            memset(opt, 0, sizeof(loom_policy_option) * LOOM_POLICY_COUNT);
            memset(&rflops[(size_t)k * LOOM_POLICY_COUNT], 0, sizeof(double) * LOOM_POLICY_COUNT);
            memset(keep, 0, sizeof(int64_t) * LOOM_POLICY_COUNT);
            shape.trainable_upstream = loom_layer_trainable_upstream_from(up, mod, l);
            int needs_backward = shape.trainable_upstream || !mod->frozen;
            if (shape.tokens <= 0)
                continue;
            for (int p = 0; p < LOOM_POLICY_OFFLOAD; p++) {
                loom_layer_cost c = LOOM_LAYER_COST_INIT;
                int rc = loom_cost_estimate(b->cost_ctx, sp->module, l, &shape, p, &c, err);
                if (rc != LOOM_OK)
                    return rc;
                opt[p].forward_ms = c.forward_ms;
                opt[p].backward_ms = c.input_grad_ms + c.weight_grad_ms + c.recompute_ms;
                opt[p].weight_grad_ms = c.weight_grad_ms;
                opt[p].activation_bytes = needs_backward ? c.activation_bytes : 0;
                element = loom_layer_cost_element_bytes(&c);
                if (LOOM_LAYER_COST_HAS(&c, recompute_flops) && c.recompute_flops > 0 &&
                    c.recompute_flops < 1e30)
                    rflops[(size_t)k * LOOM_POLICY_COUNT + p] = c.recompute_flops;
                if (!mod->frozen) { /* frozen layers have no W to keep bytes for */
                    keep[p] = loom_cost_weight_kept_bytes(&mod->layers[l], shape.tokens, shape.tp,
                                                          element, opt[p].activation_bytes);
                }
                if (p == 0)
                    *flops += c.flops * (double)reps;
                if (p == 0 && LOOM_LAYER_COST_HAS(&c, input_grad_comm_ms)) {
                    comm[0] += c.forward_comm_ms;
                    comm[1] += c.input_grad_comm_ms;
                }
            }
            /* offload: derived from none and full, nothing recomputed */
            opt[LOOM_POLICY_OFFLOAD] = loom_offload_option(pb->cluster, &opt[LOOM_POLICY_NONE],
                                                           &opt[LOOM_POLICY_FULL]);
            keep[LOOM_POLICY_OFFLOAD] =
                keep[LOOM_POLICY_NONE] < opt[LOOM_POLICY_OFFLOAD].activation_bytes
                    ? keep[LOOM_POLICY_NONE] : opt[LOOM_POLICY_OFFLOAD].activation_bytes;
        }
        if (s == pos->n_spans - 1) {
            /* each GPU of the TP x CP group sends its 1/(tp cp) share (of
             * its copy's 1/reps of the microbatch); after a non-text
             * module's last layer its patches leave merged, tokens_per_item
             * an item (<loom/tokens.h>, loom_sample_span_out_tokens) */
            double tokens = (double)shape.tokens;
            if (loom_span_hands_merged(mod, sp->first_layer + sp->n_layers))
                tokens *= (double)mod->tokens_per_item / (double)loom_module_patches(mod);
            *out_bytes = tokens *
                         (double)mod->layers[sp->first_layer + sp->n_layers - 1].hidden *
                         element / (tp > 0 ? tp : 1) / cp;
        }
    }
    return LOOM_OK;
}

/* 1 when position pos of flow f is costed from the same inputs in
 * microbatches mb and prev: the same sub-microbatch count, the same token
 * sums for every module it holds and the same attention scale, so a cost
 * model (a function of its inputs) gives the same answers. */
static int same_costs(build *b, int32_t f, int32_t mb, int32_t prev, const loom_position *pos)
{
    if (subs_of(b, f, mb) != subs_of(b, f, prev))
        return 0;
    const loom_partition *pt = b->part;
    if (LOOM_STRUCT_HAS(pt, loom_partition, cp_attention_scale) && pt->cp_attention_scale &&
        pt->cp_attention_scale[mb] != pt->cp_attention_scale[prev])
        return 0;
    for (int32_t s = 0; s < pos->n_spans; s++) {
        const loom_shape_sums *sums = module_sums(b, pt->spans[pos->span_off + s].module);
        if (!sums || sums[mb].tokens != sums[prev].tokens ||
            sums[mb].seq_sq != sums[prev].seq_sq || sums[mb].seqs != sums[prev].seqs)
            return 0;
    }
    return 1;
}

static int fill(build *b, loom_stage_graph *g, loom_error *err)
{
    const loom_partition *pt = b->part;
    int32_t M = b->M, F = b->F, e = 0, pair = 0;
    const int32_t *chunk_of = b->ranks.chunk_of;

    int rc = LOOM_OK;
    int32_t entry = 0, max_layers = 1;
    for (int32_t i = 0; i < pt->n_positions; i++) {
        int32_t n = position_layers(pt, &pt->positions[i]);
        max_layers = n > max_layers ? n : max_layers;
    }
    loom_policy_option *opt = calloc((size_t)max_layers * LOOM_POLICY_COUNT, sizeof *opt);
    double *rflops = calloc((size_t)max_layers * LOOM_POLICY_COUNT, sizeof *rflops);
    int64_t *held = calloc((size_t)max_layers * LOOM_POLICY_COUNT, sizeof *held);
    int64_t *g_held = b->split ? loom_graph_alloc_weight_held(g) : NULL;
    if (!opt || !rflops || !held || (b->split && !g_held)) {
        free(opt);
        free(rflops);
        free(held);
        return loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
    }
    /* each flow's layer entries of the previous microbatch (-1: none) */
    int32_t *prev_entry = malloc((size_t)F * sizeof *prev_entry);
    if (!prev_entry)
        rc = loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
    for (int32_t f = 0; f < F && prev_entry; f++)
        prev_entry[f] = -1;
    for (int32_t mb = 0; mb < M && rc == LOOM_OK; mb++) {
        for (int32_t f = 0; f < F && rc == LOOM_OK; f++) {
            const loom_flow *fl = &pt->flows[f];
            int32_t n = fl->n_pos, subs = subs_of(b, f, mb), grp = mb * F + f;
            g->group_flow[grp] = f;
            g->group_microbatch[grp] = mb;
            /* cost once per position, shared by every sub-microbatch, and
             * taken from the previous microbatch when its inputs match */
            for (int32_t p = 0; p < n && rc == LOOM_OK; p++) {
                const loom_position *pos = &pt->positions[fl->pos_off + p];
                int32_t nl = position_layers(pt, pos);
                double flops = 0, ob = 0, comm[2] = {0, 0};
                if (prev_entry[f] >= 0 && same_costs(b, f, mb, mb - 1, pos)) {
                    size_t at = (size_t)(prev_entry[f] + b->layer_base[fl->pos_off + p]) *
                                LOOM_POLICY_COUNT, len = (size_t)nl * LOOM_POLICY_COUNT;
                    memcpy(opt, &g->layer_options[at], len * sizeof *opt);
                    memcpy(rflops, &g->layer_recompute_flops[at], len * sizeof *rflops);
                    if (g_held)
                        memcpy(held, &g_held[at], len * sizeof *held);
                    int32_t was = stage_id(b, f, mb - 1, 0, p, 0);
                    flops = g->flops[was];
                    ob = b->out_bytes[was];
                    comm[0] = g->comm_ms[was];
                    comm[1] = b->comm_back[was];
                } else {
                    rc = cost_position(b, f, mb, pos, opt, rflops, held, &flops, &ob, comm,
                                       err);
                }
                for (int32_t s = 0; s < subs && rc == LOOM_OK; s++) {
                    int32_t pid = pair + s * n + p;
                    /* entries of (f, mb, s) are laid out position by position */
                    int32_t e0 = entry + s * b->layers_of_flow[f] + b->layer_base[fl->pos_off + p];
                    g->pair_layer_off[pid] = e0;
                    g->pair_layer_off[pid + 1] = e0 + nl;
                    memcpy(&g->layer_options[(size_t)e0 * LOOM_POLICY_COUNT], opt,
                           (size_t)nl * LOOM_POLICY_COUNT * sizeof *opt);
                    memcpy(&g->layer_recompute_flops[(size_t)e0 * LOOM_POLICY_COUNT], rflops,
                           (size_t)nl * LOOM_POLICY_COUNT * sizeof *rflops);
                    if (g_held)
                        memcpy(&g_held[(size_t)e0 * LOOM_POLICY_COUNT], held,
                               (size_t)nl * LOOM_POLICY_COUNT * sizeof *held);
                    int32_t fid = stage_id(b, f, mb, s, p, 0);
                    g->flops[fid] = flops;
                    g->total_flops += flops;
                    b->out_bytes[fid] = ob;
                    g->comm_ms[fid] = comm[0];
                    b->comm_back[fid] = comm[1];
                }
            }
            for (int32_t s = 0; s < subs; s++) {
                int32_t base = stage_id(b, f, mb, s, 0, 0);
                for (int32_t k = 0; k < b->per_unit[f]; k++) {
                    int32_t id = base + k, p, what;
                    if (k < n) {
                        p = k;
                        what = 0;
                    } else if (!b->split) {
                        p = n - 1 - (k - n);
                        what = 1;
                    } else {
                        p = n - 1 - (k - n) / 2;
                        what = ((k - n) % 2) ? 2 : 1;
                    }
                    const loom_position *pos = &pt->positions[fl->pos_off + p];
                    int32_t pid = pair + s * n + p;
                    g->rank[id] = pos->rank;
                    g->kind[id] = (uint8_t)(what == 0 ? LOOM_STAGE_F
                                            : what == 2 ? LOOM_STAGE_W
                                            : b->split  ? LOOM_STAGE_I
                                                        : LOOM_STAGE_B);
                    g->module[id] = fl->module;
                    g->flow[id] = f;
                    g->position[id] = p;
                    g->chunk[id] = chunk_of[fl->pos_off + p];
                    g->microbatch[id] = mb;
                    g->sub[id] = s;
                    g->group[id] = grp;
                    g->pair[id] = pid;
                    g->pred_off[id] = e;
                    if (what == 0) {
                        g->pair_forward[pid] = id;
                        if (p > 0) {
                            int32_t q = id - 1;
                            g->pred[e] = q;
                            g->pred_p2p_ms[e++] =
                                p2p_ms(b, g->rank[q], pos->rank, b->out_bytes[q], g->rank[q]);
                        } else {
                            for (int32_t k2 = 0; k2 < fl->n_inputs; k2++) {
                                int32_t in = fl->inputs[k2];
                                for (int32_t s2 = 0; s2 < subs_of(b, in, mb); s2++) {
                                    int32_t q = stage_id(b, in, mb, s2, pt->flows[in].n_pos - 1, 0);
                                    g->pred[e] = q;
                                    g->pred_p2p_ms[e++] =
                                        p2p_ms(b, g->rank[q], pos->rank, b->out_bytes[q] / subs,
                                               g->rank[q]);
                                }
                            }
                        }
                    } else if (what == 2) {
                        g->pair_weight[pid] = id;
                        g->pred[e] = id - 1;
                        g->pred_p2p_ms[e++] = 0;
                    } else {
                        g->pair_backward[pid] = id;
                        g->comm_ms[id] = b->comm_back[stage_id(b, f, mb, s, p, 0)];
                        if (p == n - 1) {
                            g->pred[e] = stage_id(b, f, mb, s, p, 0);
                            g->pred_p2p_ms[e++] = 0;
                            for (int32_t k2 = 0; k2 < b->n_consumers[f]; k2++) {
                                int32_t cf = b->consumers[f * F + k2];
                                for (int32_t s2 = 0; s2 < subs_of(b, cf, mb); s2++) {
                                    int32_t q = stage_id(b, cf, mb, s2, 0, 1);
                                    double bytes = b->out_bytes[stage_id(b, f, mb, s, p, 0)];
                                    g->pred[e] = q;
                                    g->pred_p2p_ms[e++] = p2p_ms(b, pt->positions[pt->flows[cf].pos_off].rank,
                                                                 pos->rank, bytes / subs_of(b, cf, mb),
                                                                 pos->rank);
                                }
                            }
                        } else {
                            int32_t q = stage_id(b, f, mb, s, p + 1, 1);
                            int32_t up = stage_id(b, f, mb, s, p, 0);
                            g->pred[e] = q;
                            g->pred_p2p_ms[e++] = p2p_ms(b, pt->positions[fl->pos_off + p + 1].rank,
                                                         pos->rank, b->out_bytes[up], pos->rank);
                        }
                    }
                }
            }
            pair += subs * n;
            prev_entry[f] = entry;
            entry += subs * b->layers_of_flow[f];
        }
    }
    free(prev_entry);
    free(opt);
    free(rflops);
    free(held);
    if (rc == LOOM_OK)
        rc = b->p2p_rc;
    if (rc != LOOM_OK)
        return rc;
    g->pred_off[g->n_stages] = e;
    g->n_edges = e;
    return LOOM_OK;
}

int loom_graph_build(loom_ctx *cost_ctx, const loom_problem *problem,
                     const loom_iteration *it, const loom_partition *part,
                     loom_stage_graph **out, loom_error *err)
{
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return loom_set_error(err, LOOM_EINVAL, "graph builder: needs a model problem");
    int rc = check_partition(problem, part, err);
    if (rc == LOOM_OK)
        rc = check_sets(problem, part, err);
    if (rc != LOOM_OK)
        return rc;
    build b = {0};
    b.problem = problem;
    b.it = it;
    b.part = part;
    b.cost_ctx = cost_ctx;
    b.err = err;
    b.split = part->split_backward != 0;
    b.M = part->n_microbatches;
    b.F = part->n_flows;
    int32_t M = b.M, F = b.F;
    b.unit_base = calloc((size_t)F * M, sizeof(int32_t));
    b.per_unit = calloc((size_t)F, sizeof(int32_t));
    b.consumers = calloc((size_t)F * F, sizeof(int32_t));
    b.n_consumers = calloc((size_t)F, sizeof(int32_t));
    if (!b.unit_base || !b.per_unit || !b.consumers || !b.n_consumers) {
        rc = loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
        goto done;
    }
    b.layers_of_flow = calloc((size_t)F, sizeof(int32_t));
    b.layer_base = calloc((size_t)part->n_positions + 1, sizeof(int32_t));
    b.sums = calloc((size_t)problem->model->n_modules, sizeof *b.sums);
    if (!b.layers_of_flow || !b.layer_base || !b.sums) {
        rc = loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
        goto done;
    }
    b.src = (loom_cost_source){cost_ctx, loom_cost_estimate, loom_cost_module_extra,
                               loom_cost_rank_tail};
    rc = loom_cost_ranks_init(&b.ranks, problem, part, err);
    if (rc != LOOM_OK)
        goto done;
    for (int32_t f = 0; f < F; f++) {
        for (int32_t p = 0; p < part->flows[f].n_pos; p++) {
            int32_t idx = part->flows[f].pos_off + p;
            b.layer_base[idx] = b.layers_of_flow[f];
            b.layers_of_flow[f] += position_layers(part, &part->positions[idx]);
        }
        b.per_unit[f] = part->flows[f].n_pos * (b.split ? 3 : 2);
        for (int32_t k = 0; k < part->flows[f].n_inputs; k++) {
            int32_t in = part->flows[f].inputs[k];
            b.consumers[in * F + b.n_consumers[in]++] = f;
        }
    }
    int64_t n_stages = 0, n_edges = 0, n_pairs = 0, n_group_edges = 0, n_entries = 0;
    for (int32_t mb = 0; mb < M; mb++)
        for (int32_t f = 0; f < F; f++) {
            int32_t subs = subs_of(&b, f, mb), n = part->flows[f].n_pos;
            b.unit_base[f * M + mb] = (int32_t)n_stages;
            n_stages += (int64_t)subs * b.per_unit[f];
            n_pairs += (int64_t)subs * n;
            n_entries += (int64_t)subs * b.layers_of_flow[f];
            int64_t ext = 0;
            for (int32_t k = 0; k < part->flows[f].n_inputs; k++)
                ext += subs_of(&b, part->flows[f].inputs[k], mb);
            for (int32_t k = 0; k < b.n_consumers[f]; k++)
                ext += subs_of(&b, b.consumers[f * F + k], mb);
            n_edges += (int64_t)subs * (2 * (n - 1) + 1 + (b.split ? n : 0) + ext);
            n_group_edges += part->flows[f].n_inputs;
        }
    if (n_stages > 20000000 || n_edges > 100000000 || n_entries > 100000000) {
        rc = loom_set_error(err, LOOM_EINVAL,
                            "graph builder: %lld stages is more than Loom plans at once (20000000)",
                            (long long)n_stages);
        goto done;
    }
    loom_stage_graph *g = loom_graph_alloc((int32_t)n_stages, (int32_t)n_edges, part->n_ranks,
                                           M * F, (int32_t)n_pairs, (int32_t)n_entries);
    b.out_bytes = calloc((size_t)n_stages + 1, sizeof(double));
    b.comm_back = calloc((size_t)n_stages + 1, sizeof(double));
    if (g)
        g->comm_ms = calloc((size_t)n_stages + 1, sizeof(double));
    if (!g || !b.out_bytes || !b.comm_back || !g->comm_ms) {
        loom_graph_free(g);
        rc = loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
        goto done;
    }
    g->n_microbatches = M;
    if (loom_graph_alloc_tail(g) != LOOM_OK) {
        loom_graph_free(g);
        rc = loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
        goto done;
    }
    g->group_pred = calloc((size_t)n_group_edges + 1, sizeof(int32_t));
    int32_t ge = 0;
    for (int32_t mb = 0; mb < M; mb++)
        for (int32_t f = 0; f < F; f++) {
            g->group_pred_off[mb * F + f] = ge;
            for (int32_t k = 0; k < part->flows[f].n_inputs; k++)
                g->group_pred[ge++] = mb * F + part->flows[f].inputs[k];
        }
    g->group_pred_off[M * F] = ge;
    rc = fill(&b, g, err);
    if (rc == LOOM_OK)
        rc = loom_cost_static_memory(&b.ranks, &b.src, problem, part, g->static_bytes, err);
    if (rc == LOOM_OK)
        rc = loom_cost_iteration_tail(&b.ranks, &b.src, problem, part, g, err);
    if (rc != LOOM_OK) {
        loom_graph_free(g);
        goto done;
    }
    g->memory_cap_bytes = problem->memory_cap_bytes > 0 ? problem->memory_cap_bytes
                          : problem->cluster ? (double)problem->cluster->hbm_bytes
                                             : 0;
    if (problem->cluster) /* mean over ranks of the GPUs one replica holds */
        g->peak_flops_per_rank =
            problem->cluster->peak_flops * loom_cost_replica_gpus(&b.ranks, problem, part) /
            part->n_ranks;
    loom_graph_apply_policies(g);
    *out = g;
done:
    free(b.unit_base);
    free(b.per_unit);
    free(b.consumers);
    free(b.n_consumers);
    free(b.out_bytes);
    free(b.comm_back);
    free(b.layers_of_flow);
    free(b.layer_base);
    loom_cost_ranks_free(&b.ranks);
    for (int32_t m = 0; b.sums && m < problem->model->n_modules; m++)
        free(b.sums[m]);
    free(b.sums);
    return rc;
}
