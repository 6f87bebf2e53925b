/* cost_static.c - the static memory of a rank: the parameters, gradients
 * and optimizer states of every layer placed on it, plus the embedding of
 * a module whose first layer it holds and the head of a backbone or decoder
 * whose last layer it holds. Weights sharded between uses (FSDP2, ZeRO-3:
 * loom_layer_cost.param_shards) count with the share a GPU keeps; the
 * embedding and head shard as the module's layers. */
#include "cost_rules.h"

/* *total += add, failing when the rank's static bytes would pass 2^62
 * (far beyond any GPU; every addend is at most 2^41 by the cost checks). */
static int add_bytes(int64_t *total, int64_t add, int32_t rank, loom_error *err)
{
    int64_t sum;
    if (__builtin_add_overflow(*total, add, &sum) || sum > ((int64_t)1 << 62)) {
        if (rank < 0)
            return loom_set_error(err, LOOM_EINVAL,
                                  "a span's parameter and optimizer bytes exceed 2^62");
        return loom_set_error(err, LOOM_EINVAL,
                              "rank %d: parameter and optimizer bytes exceed 2^62", rank);
    }
    *total = sum;
    return LOOM_OK;
}

/* Adds n parameters to *params, and to *trainable and *trainable2 unless
 * the module is frozen (each may be NULL), one layer at a time so the sums
 * round as they always have. */
static void add_params(const loom_module *mod, double n, double *params, double *trainable,
                       double *trainable2)
{
    if (params)
        *params += n;
    if (mod->frozen)
        return;
    if (trainable)
        *trainable += n;
    if (trainable2)
        *trainable2 += n;
}

/* The shape static memory is costed at: one token (parameters and states
 * do not depend on it), the span's TP, its listed module's dp x cp. */
static loom_shape static_shape(const loom_problem *pb, const loom_partition *pt,
                               const loom_span *sp)
{
    loom_shape shape = LOOM_SHAPE_INIT;
    shape.tokens = 1;
    shape.seq_sq_sum = 1;
    shape.sequences = 1;
    shape.tp = loom_cost_span_tp(pb, pt, sp);
    shape.trainable_upstream = 1;
    const loom_module_layout *own = loom_cost_listed_layout(pb, pt, sp->module);
    if (own) { /* its states shard over its own dp x cp */
        shape.cp = loom_cost_span_cp(pb, pt, sp);
        shape.dp = own->dp;
    }
    return shape;
}

/* The share of module_extra (the embedding, and the output head of a
 * backbone or decoder) a span holds, as 1/parts; 0 when it holds none. A
 * backbone or decoder keeps its embedding with its first layer and its
 * head with its last: half at each, the whole on a span holding both. Any
 * other module has only the input embedding, whole with its first layer. */
static int extra_parts(const loom_module *mod, const loom_span *sp)
{
    int first = sp->first_layer == 0, last = sp->first_layer + sp->n_layers == mod->n_layers;
    if (mod->vocab <= 0)
        return 0;
    if (mod->kind != LOOM_MODULE_BACKBONE && mod->kind != LOOM_MODULE_DECODER)
        return first ? 1 : 0;
    return first && last ? 1 : first || last ? 2 : 0;
}

int loom_cost_span_static(const loom_cost_source *src, const loom_problem *pb,
                          const loom_partition *pt, const loom_span *sp, int64_t *bytes,
                          double *params, double *trainable, double *trainable2,
                          loom_error *err)
{
    const loom_module *mod = &pb->model->modules[sp->module];
    loom_shape shape = static_shape(pb, pt, sp);
    double element = 2.0; /* parameters: weight bytes over the element size */
    int32_t shards = 1;   /* the embedding and head shard as the layers */
    *bytes = 0;
    for (int32_t l = sp->first_layer; l < sp->first_layer + sp->n_layers; l++) {
        loom_layer_cost c = LOOM_LAYER_COST_INIT;
        int rc = src->estimate(src->ctx, sp->module, l, &shape, 0, &c, err);
        if (rc != LOOM_OK)
            return rc;
        if (add_bytes(bytes, loom_layer_cost_static_bytes(&c), -1, err) != LOOM_OK)
            return LOOM_EINVAL;
        element = loom_layer_cost_element_bytes(&c);
        shards = loom_layer_cost_param_shards(&c);
        add_params(mod, (double)c.param_bytes / element, params, trainable, trainable2);
    }
    int parts = extra_parts(mod, sp);
    if (parts > 0) {
        int64_t pbytes = 0, sbytes = 0;
        int rc = src->module_extra(src->ctx, sp->module, shape.tp, &pbytes, &sbytes, err);
        if (rc != LOOM_OK)
            return rc;
        if (add_bytes(bytes, (pbytes / shards + sbytes) / parts, -1, err) != LOOM_OK)
            return LOOM_EINVAL;
        add_params(mod, (double)pbytes / element / parts, params, trainable, trainable2);
    }
    return LOOM_OK;
}

int loom_cost_static_memory(loom_cost_ranks *cr, const loom_cost_source *src,
                            const loom_problem *pb, const loom_partition *pt,
                            int64_t *static_bytes, loom_error *err)
{
    for (int32_t f = 0; f < pt->n_flows; f++) {
        const loom_flow *fl = &pt->flows[f];
        for (int32_t p = 0; p < fl->n_pos; p++) {
            const loom_position *pos = &pt->positions[fl->pos_off + p];
            for (int32_t s = 0; s < pos->n_spans; s++) {
                int64_t bytes = 0;
                int rc = loom_cost_span_static(src, pb, pt, &pt->spans[pos->span_off + s], &bytes,
                                               &cr->rank_params[pos->rank],
                                               &cr->rank_trainable[pos->rank],
                                               &cr->pos_trainable[fl->pos_off + p], err);
                if (rc == LOOM_OK)
                    rc = add_bytes(&static_bytes[pos->rank], bytes, pos->rank, err);
                if (rc != LOOM_OK)
                    return rc;
            }
        }
    }
    return LOOM_OK;
}
