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
    int reads_layer_fields;  /* the cost model's LOOM_COST_READS_LAYER_FIELDS */
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
    loom_cost_layer_memo last; /* with reads_layer_fields: the last layer priced */
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
 * the part of its activation bytes W keeps. A layer that costs what the
 * last layer priced costs (loom_cost_memo_get) is copied, not asked. */
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
            double *rf = &rflops[(size_t)k * LOOM_POLICY_COUNT];
            int64_t *keep = &held[(size_t)k * LOOM_POLICY_COUNT];
            memset(opt, 0, sizeof(loom_policy_option) * LOOM_POLICY_COUNT);
            memset(rf, 0, sizeof(double) * LOOM_POLICY_COUNT);
            memset(keep, 0, sizeof(int64_t) * LOOM_POLICY_COUNT);
            shape.trainable_upstream = loom_layer_trainable_upstream_from(up, mod, l);
            int needs_backward = shape.trainable_upstream || !mod->frozen;
            if (shape.tokens <= 0)
                continue;
            if (b->reads_layer_fields &&
                loom_cost_memo_get(&b->last, model, sp->module, l, &shape, opt, rf, keep)) {
                *flops += b->last.flops * (double)reps;
                comm[0] += b->last.comm[0];
                comm[1] += b->last.comm[1];
                element = b->last.element;
                continue;
            }
            double layer_flops = 0, layer_comm[2] = {0, 0};
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
                    rf[p] = c.recompute_flops;
                if (!mod->frozen) { /* frozen layers have no W to keep bytes for */
                    keep[p] = loom_cost_weight_kept_bytes(&mod->layers[l], shape.tokens, shape.tp,
                                                          element, opt[p].activation_bytes);
                }
                if (p == 0)
                    layer_flops = c.flops;
                if (p == 0 && LOOM_LAYER_COST_HAS(&c, input_grad_comm_ms)) {
                    layer_comm[0] = c.forward_comm_ms;
                    layer_comm[1] = c.input_grad_comm_ms;
                }
            }
            *flops += layer_flops * (double)reps;
            comm[0] += layer_comm[0];
            comm[1] += layer_comm[1];
            /* offload: derived from none and full, nothing recomputed */
            opt[LOOM_POLICY_OFFLOAD] = loom_offload_option(pb->cluster, &opt[LOOM_POLICY_NONE],
                                                           &opt[LOOM_POLICY_FULL]);
            keep[LOOM_POLICY_OFFLOAD] =
                keep[LOOM_POLICY_NONE] < opt[LOOM_POLICY_OFFLOAD].activation_bytes
                    ? keep[LOOM_POLICY_NONE] : opt[LOOM_POLICY_OFFLOAD].activation_bytes;
            if (b->reads_layer_fields)
                loom_cost_memo_put(&b->last, model, sp->module, l, &shape, opt, rf, keep,
                                   layer_flops, layer_comm, element);
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

/* The per-position costs fill() works on: one position's layer entries
 * under every policy, and each flow's entries of the previous microbatch. */
typedef struct fill_scratch {
    loom_policy_option *opt; /* [layer * LOOM_POLICY_COUNT + policy] */
    double *rflops;          /* same index: FLOPs recomputation adds */
    int64_t *held;           /* same index: bytes a W step keeps */
    int64_t *g_held;         /* the graph's, with a split backward; else NULL */
    int32_t *prev_entry;     /* [f]: first layer entry of its previous unit, -1 */
} fill_scratch;

/* Allocates the scratch for positions of up to the partition's most
 * layers (and the graph's weight-held table with a split backward). */
static int fill_scratch_init(build *b, loom_stage_graph *g, fill_scratch *fs, loom_error *err)
{
    const loom_partition *pt = b->part;
    int32_t max_layers = 1;
    for (int32_t i = 0; i < pt->n_positions; i++) {
        int32_t n = position_layers(pt, &pt->positions[i]);
        max_layers = n > max_layers ? n : max_layers;
    }
    fs->opt = calloc((size_t)max_layers * LOOM_POLICY_COUNT, sizeof *fs->opt);
    fs->rflops = calloc((size_t)max_layers * LOOM_POLICY_COUNT, sizeof *fs->rflops);
    fs->held = calloc((size_t)max_layers * LOOM_POLICY_COUNT, sizeof *fs->held);
    fs->g_held = b->split ? loom_graph_alloc_weight_held(g) : NULL;
    fs->prev_entry = malloc((size_t)b->F * sizeof *fs->prev_entry);
    if (!fs->opt || !fs->rflops || !fs->held || (b->split && !fs->g_held) || !fs->prev_entry)
        return loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
    for (int32_t f = 0; f < b->F; f++)
        fs->prev_entry[f] = -1;
    return LOOM_OK;
}

/* Releases the scratch (not the graph's table). */
static void fill_scratch_free(fill_scratch *fs)
{
    free(fs->prev_entry);
    free(fs->opt);
    free(fs->rflops);
    free(fs->held);
}

/* Costs every position of flow f in microbatch mb once, shared by every
 * sub-microbatch, and taken from the previous microbatch when its inputs
 * match; writes each sub's layer entries (from `entry` on) and its F
 * stages' FLOPs, output bytes and exposed communication. `pair`: the
 * unit's first stage pair. */
static int cost_unit(build *b, loom_stage_graph *g, fill_scratch *fs, int32_t f, int32_t mb,
                     int32_t pair, int32_t entry, loom_error *err)
{
    const loom_partition *pt = b->part;
    const loom_flow *fl = &pt->flows[f];
    int32_t n = fl->n_pos, subs = subs_of(b, f, mb);
    int rc = LOOM_OK;
    for (int32_t p = 0; p < n && rc == LOOM_OK; p++) {
        const loom_position *pos = &pt->positions[fl->pos_off + p];
        int32_t nl = position_layers(pt, pos);
        size_t len = (size_t)nl * LOOM_POLICY_COUNT;
        double flops = 0, ob = 0, comm[2] = {0, 0};
        if (fs->prev_entry[f] >= 0 && same_costs(b, f, mb, mb - 1, pos)) {
            size_t at = (size_t)(fs->prev_entry[f] + b->layer_base[fl->pos_off + p]) *
                        LOOM_POLICY_COUNT;
            memcpy(fs->opt, &g->layer_options[at], len * sizeof *fs->opt);
            memcpy(fs->rflops, &g->layer_recompute_flops[at], len * sizeof *fs->rflops);
            if (fs->g_held)
                memcpy(fs->held, &fs->g_held[at], len * sizeof *fs->held);
            int32_t was = stage_id(b, f, mb - 1, 0, p, 0);
            flops = g->flops[was];
            ob = b->out_bytes[was];
            comm[0] = g->comm_ms[was];
            comm[1] = b->comm_back[was];
        } else {
            rc = cost_position(b, f, mb, pos, fs->opt, fs->rflops, fs->held, &flops, &ob, comm,
                               err);
        }
        for (int32_t s = 0; s < subs && rc == LOOM_OK; s++) {
            int32_t pid = pair + s * n + p;
            /* entries of (f, mb, s) are laid out position by position */
            int32_t e0 = entry + s * b->layers_of_flow[f] + b->layer_base[fl->pos_off + p];
            size_t at = (size_t)e0 * LOOM_POLICY_COUNT;
            g->pair_layer_off[pid] = e0;
            g->pair_layer_off[pid + 1] = e0 + nl;
            memcpy(&g->layer_options[at], fs->opt, len * sizeof *fs->opt);
            memcpy(&g->layer_recompute_flops[at], fs->rflops, len * sizeof *fs->rflops);
            if (fs->g_held)
                memcpy(&fs->g_held[at], fs->held, len * sizeof *fs->held);
            int32_t fid = stage_id(b, f, mb, s, p, 0);
            g->flops[fid] = flops;
            g->total_flops += flops;
            b->out_bytes[fid] = ob;
            g->comm_ms[fid] = comm[0];
            b->comm_back[fid] = comm[1];
        }
    }
    return rc;
}

/* Adds edge q -> (the stage being wired) with P2P time ms at *e. */
static void add_pred(loom_stage_graph *g, int32_t *e, int32_t q, double ms)
{
    g->pred[*e] = q;
    g->pred_p2p_ms[(*e)++] = ms;
}

/* The predecessors of F stage id at position p of (f, mb): the previous
 * position's F, or at the first position the last F of every sub of each
 * input flow. */
static void forward_preds(build *b, loom_stage_graph *g, int32_t id, int32_t f, int32_t mb,
                          int32_t p, int32_t *e)
{
    const loom_partition *pt = b->part;
    const loom_flow *fl = &pt->flows[f];
    const loom_position *pos = &pt->positions[fl->pos_off + p];
    int32_t subs = subs_of(b, f, mb);
    if (p > 0) {
        int32_t q = id - 1;
        add_pred(g, e, q, p2p_ms(b, g->rank[q], pos->rank, b->out_bytes[q], g->rank[q]));
        return;
    }
    for (int32_t k2 = 0; k2 < fl->n_inputs; k2++) {
        int32_t in = fl->inputs[k2];
        for (int32_t s2 = 0; s2 < subs_of(b, in, mb); s2++) {
            int32_t q = stage_id(b, in, mb, s2, pt->flows[in].n_pos - 1, 0);
            add_pred(g, e, q,
                     p2p_ms(b, g->rank[q], pos->rank, b->out_bytes[q] / subs, g->rank[q]));
        }
    }
}

/* The predecessors of the B (or I) stage of sub s at position p of
 * (f, mb): at the last position its own F and the first B of every sub of
 * each consuming flow, else the B of the next position. */
static void backward_preds(build *b, loom_stage_graph *g, int32_t f, int32_t mb, int32_t s,
                           int32_t p, int32_t *e)
{
    const loom_partition *pt = b->part;
    const loom_flow *fl = &pt->flows[f];
    const loom_position *pos = &pt->positions[fl->pos_off + p];
    int32_t n = fl->n_pos, F = b->F;
    if (p < n - 1) {
        int32_t q = stage_id(b, f, mb, s, p + 1, 1);
        int32_t up = stage_id(b, f, mb, s, p, 0);
        add_pred(g, e, q,
                 p2p_ms(b, pt->positions[fl->pos_off + p + 1].rank, pos->rank,
                        b->out_bytes[up], pos->rank));
        return;
    }
    add_pred(g, e, stage_id(b, f, mb, s, p, 0), 0);
    for (int32_t k2 = 0; k2 < b->n_consumers[f]; k2++) {
        int32_t cf = b->consumers[f * F + k2];
        for (int32_t s2 = 0; s2 < subs_of(b, cf, mb); s2++) {
            int32_t q = stage_id(b, cf, mb, s2, 0, 1);
            double bytes = b->out_bytes[stage_id(b, f, mb, s, p, 0)];
            add_pred(g, e, q,
                     p2p_ms(b, pt->positions[pt->flows[cf].pos_off].rank, pos->rank,
                            bytes / subs_of(b, cf, mb), pos->rank));
        }
    }
}

/* Writes the stages of sub s of (f, mb) - F by position, then B (or I
 * and W) from the last position - with their predecessors from *e on.
 * `pair`: the unit's first stage pair. */
static void wire_sub(build *b, loom_stage_graph *g, int32_t f, int32_t mb, int32_t s,
                     int32_t pair, int32_t *e)
{
    const loom_partition *pt = b->part;
    const loom_flow *fl = &pt->flows[f];
    int32_t n = fl->n_pos, base = stage_id(b, f, mb, s, 0, 0);
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
        g->chunk[id] = b->ranks.chunk_of[fl->pos_off + p];
        g->microbatch[id] = mb;
        g->sub[id] = s;
        g->group[id] = mb * b->F + f;
        g->pair[id] = pid;
        g->pred_off[id] = *e;
        if (what == 0) {
            g->pair_forward[pid] = id;
            forward_preds(b, g, id, f, mb, p, e);
        } else if (what == 2) {
            g->pair_weight[pid] = id;
            add_pred(g, e, id - 1, 0);
        } else {
            g->pair_backward[pid] = id;
            g->comm_ms[id] = b->comm_back[stage_id(b, f, mb, s, p, 0)];
            backward_preds(b, g, f, mb, s, p, e);
        }
    }
}

/* Fills the graph's stages, edges, groups and layer entries, unit by unit
 * (microbatch, then flow). */
static int fill(build *b, loom_stage_graph *g, loom_error *err)
{
    int32_t e = 0, pair = 0, entry = 0;
    fill_scratch fs = {0};
    int rc = fill_scratch_init(b, g, &fs, err);
    for (int32_t mb = 0; mb < b->M && rc == LOOM_OK; mb++) {
        for (int32_t f = 0; f < b->F && rc == LOOM_OK; f++) {
            int32_t subs = subs_of(b, f, mb), grp = mb * b->F + f;
            g->group_flow[grp] = f;
            g->group_microbatch[grp] = mb;
            rc = cost_unit(b, g, &fs, f, mb, pair, entry, err);
            for (int32_t s = 0; s < subs && rc == LOOM_OK; s++)
                wire_sub(b, g, f, mb, s, pair, &e);
            pair += subs * b->part->flows[f].n_pos;
            fs.prev_entry[f] = entry;
            entry += subs * b->layers_of_flow[f];
        }
    }
    fill_scratch_free(&fs);
    if (rc == LOOM_OK)
        rc = b->p2p_rc;
    if (rc != LOOM_OK)
        return rc;
    g->pred_off[g->n_stages] = e;
    g->n_edges = e;
    return LOOM_OK;
}

/* Allocates the builder's tables and fills the per-flow ones: each
 * position's first layer in its flow, the flow's layers and stages per
 * unit, and the flows consuming each flow. */
static int build_init(build *b, loom_error *err)
{
    const loom_partition *part = b->part;
    int32_t M = b->M, F = b->F;
    b->unit_base = calloc((size_t)F * M, sizeof(int32_t));
    b->per_unit = calloc((size_t)F, sizeof(int32_t));
    b->consumers = calloc((size_t)F * F, sizeof(int32_t));
    b->n_consumers = calloc((size_t)F, sizeof(int32_t));
    if (!b->unit_base || !b->per_unit || !b->consumers || !b->n_consumers)
        return loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
    b->layers_of_flow = calloc((size_t)F, sizeof(int32_t));
    b->layer_base = calloc((size_t)part->n_positions + 1, sizeof(int32_t));
    b->sums = calloc((size_t)b->problem->model->n_modules, sizeof *b->sums);
    if (!b->layers_of_flow || !b->layer_base || !b->sums)
        return loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
    b->src = (loom_cost_source){b->cost_ctx, loom_cost_estimate, loom_cost_module_extra,
                                loom_cost_rank_tail};
    b->reads_layer_fields = loom_cost_reads_layer_fields(b->cost_ctx);
    int rc = loom_cost_ranks_init(&b->ranks, b->problem, part, err);
    if (rc != LOOM_OK)
        return rc;
    for (int32_t f = 0; f < F; f++) {
        for (int32_t p = 0; p < part->flows[f].n_pos; p++) {
            int32_t idx = part->flows[f].pos_off + p;
            b->layer_base[idx] = b->layers_of_flow[f];
            b->layers_of_flow[f] += position_layers(part, &part->positions[idx]);
        }
        b->per_unit[f] = part->flows[f].n_pos * (b->split ? 3 : 2);
        for (int32_t k = 0; k < part->flows[f].n_inputs; k++) {
            int32_t in = part->flows[f].inputs[k];
            b->consumers[in * F + b->n_consumers[in]++] = f;
        }
    }
    return LOOM_OK;
}

/* The sizes of the graph to build. */
typedef struct graph_size {
    int64_t stages, edges, pairs, group_edges, entries;
} graph_size;

/* Counts the stages, edges, pairs and layer entries of the graph (and
 * sets each unit's first stage); LOOM_EINVAL when they are more than Loom
 * plans at once. */
static int size_graph(build *b, graph_size *z, loom_error *err)
{
    const loom_partition *part = b->part;
    int32_t M = b->M, F = b->F;
    memset(z, 0, sizeof *z);
    for (int32_t mb = 0; mb < M; mb++)
        for (int32_t f = 0; f < F; f++) {
            int32_t subs = subs_of(b, f, mb), n = part->flows[f].n_pos;
            b->unit_base[f * M + mb] = (int32_t)z->stages;
            z->stages += (int64_t)subs * b->per_unit[f];
            z->pairs += (int64_t)subs * n;
            z->entries += (int64_t)subs * b->layers_of_flow[f];
            int64_t ext = 0;
            for (int32_t k = 0; k < part->flows[f].n_inputs; k++)
                ext += subs_of(b, part->flows[f].inputs[k], mb);
            for (int32_t k = 0; k < b->n_consumers[f]; k++)
                ext += subs_of(b, b->consumers[f * F + k], mb);
            z->edges += (int64_t)subs * (2 * (n - 1) + 1 + (b->split ? n : 0) + ext);
            z->group_edges += part->flows[f].n_inputs;
        }
    if (z->stages > 20000000 || z->edges > 100000000 || z->entries > 100000000)
        return loom_set_error(err, LOOM_EINVAL,
                              "graph builder: %lld stages is more than Loom plans at once "
                              "(20000000)", (long long)z->stages);
    return LOOM_OK;
}

/* Allocates a graph of size z with its tail and the builder's per-stage
 * tables, and fills the group edges (a unit of flow f waits for its input
 * flows' units of the same microbatch). */
static int alloc_graph(build *b, const graph_size *z, loom_stage_graph **out, loom_error *err)
{
    const loom_partition *part = b->part;
    int32_t M = b->M, F = b->F;
    loom_stage_graph *g = loom_graph_alloc((int32_t)z->stages, (int32_t)z->edges, part->n_ranks,
                                           M * F, (int32_t)z->pairs, (int32_t)z->entries);
    b->out_bytes = calloc((size_t)z->stages + 1, sizeof(double));
    b->comm_back = calloc((size_t)z->stages + 1, sizeof(double));
    if (g)
        g->comm_ms = calloc((size_t)z->stages + 1, sizeof(double));
    if (!g || !b->out_bytes || !b->comm_back || !g->comm_ms) {
        loom_graph_free(g);
        return loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
    }
    g->n_microbatches = M;
    if (loom_graph_alloc_tail(g) != LOOM_OK) {
        loom_graph_free(g);
        return loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
    }
    g->group_pred = calloc((size_t)z->group_edges + 1, sizeof(int32_t));
    int32_t ge = 0;
    for (int32_t mb = 0; mb < M; mb++)
        for (int32_t f = 0; f < F; f++) {
            g->group_pred_off[mb * F + f] = ge;
            for (int32_t k = 0; k < part->flows[f].n_inputs; k++)
                g->group_pred[ge++] = mb * F + part->flows[f].inputs[k];
        }
    g->group_pred_off[M * F] = ge;
    *out = g;
    return LOOM_OK;
}

/* Fills graph g: its stages, the ranks' static memory and iteration tail,
 * the memory cap, the peak FLOPs per rank and the policies' effects. */
static int build_fill(build *b, loom_stage_graph *g, loom_error *err)
{
    const loom_problem *problem = b->problem;
    const loom_partition *part = b->part;
    int rc = fill(b, g, err);
    if (rc == LOOM_OK)
        rc = loom_cost_static_memory(&b->ranks, &b->src, problem, part, g->static_bytes, err);
    if (rc == LOOM_OK)
        rc = loom_cost_iteration_tail(&b->ranks, &b->src, problem, part, g, err);
    if (rc != LOOM_OK)
        return rc;
    g->memory_cap_bytes = problem->memory_cap_bytes > 0 ? problem->memory_cap_bytes
                          : problem->cluster ? (double)problem->cluster->hbm_bytes
                                             : 0;
    if (problem->cluster) /* mean over ranks of the GPUs one replica holds */
        g->peak_flops_per_rank =
            problem->cluster->peak_flops * loom_cost_replica_gpus(&b->ranks, problem, part) /
            part->n_ranks;
    loom_graph_apply_policies(g);
    return LOOM_OK;
}

/* Releases the builder's tables. */
static void build_free(build *b)
{
    free(b->unit_base);
    free(b->per_unit);
    free(b->consumers);
    free(b->n_consumers);
    free(b->out_bytes);
    free(b->comm_back);
    free(b->layers_of_flow);
    free(b->layer_base);
    loom_cost_ranks_free(&b->ranks);
    for (int32_t m = 0; b->sums && m < b->problem->model->n_modules; m++)
        free(b->sums[m]);
    free(b->sums);
}

/* Checks the problem and partition, sets the builder up for them and
 * sizes the graph into *z; the caller frees b with build_free either way. */
static int build_start(build *b, loom_ctx *cost_ctx, const loom_problem *problem,
                       const loom_iteration *it, const loom_partition *part, graph_size *z,
                       loom_error *err)
{
    memset(b, 0, sizeof *b);
    b->problem = problem;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return loom_set_error(err, LOOM_EINVAL, "graph builder: needs a model problem");
    int rc = loom_partition_check(problem, part, err);
    if (rc != LOOM_OK)
        return rc;
    b->it = it;
    b->part = part;
    b->cost_ctx = cost_ctx;
    b->err = err;
    b->split = part->split_backward != 0;
    b->M = part->n_microbatches;
    b->F = part->n_flows;
    rc = build_init(b, err);
    return rc == LOOM_OK ? size_graph(b, z, err) : rc;
}

int loom_graph_outline(const loom_problem *problem, const loom_iteration *it,
                       const loom_partition *part, loom_stage_graph *out, loom_error *err)
{
    memset(out, 0, sizeof *out);
    build b;
    graph_size z;
    int rc = build_start(&b, NULL, problem, it, part, &z, err);
    if (rc == LOOM_OK) {
        out->struct_size = (uint32_t)sizeof *out;
        out->n_stages = (int32_t)z.stages;
        out->n_edges = (int32_t)z.edges;
        out->n_pairs = (int32_t)z.pairs;
        out->n_layer_entries = (int32_t)z.entries;
        out->n_ranks = part->n_ranks;
        out->n_groups = b.M * b.F;
        out->n_microbatches = b.M;
    }
    build_free(&b);
    return rc;
}

int loom_graph_build(loom_ctx *cost_ctx, const loom_problem *problem,
                     const loom_iteration *it, const loom_partition *part,
                     loom_stage_graph **out, loom_error *err)
{
    build b;
    graph_size z;
    loom_stage_graph *g = NULL;
    int rc = build_start(&b, cost_ctx, problem, it, part, &z, err);
    if (rc == LOOM_OK)
        rc = alloc_graph(&b, &z, &g, err);
    if (rc == LOOM_OK) {
        rc = build_fill(&b, g, err);
        if (rc == LOOM_OK)
            *out = g;
        else
            loom_graph_free(g);
    }
    build_free(&b);
    return rc;
}
