/* cost_repeat.c - the last layer a cost model priced, copied to the layers
 * that cost exactly the same, so that the graph builder need not ask the
 * cost model again (see loom_cost_layer_memo). */
#include <string.h>
#include "cost_rules.h"

/* 1 when both shapes hold the same numbers. */
static int same_shape(const loom_shape *a, const loom_shape *b)
{
    return a->tokens == b->tokens && a->seq_sq_sum == b->seq_sq_sum &&
           a->sequences == b->sequences && a->tp == b->tp &&
           a->trainable_upstream == b->trainable_upstream && a->cp == b->cp &&
           a->cp_attention_scale == b->cp_attention_scale && a->dp == b->dp;
}

int loom_cost_layer_inside(const loom_module *mod, int32_t layer)
{
    /* the embedding prices a module's first layer, the LM head its last */
    return layer > 0 && layer < mod->n_layers - 1;
}

int loom_cost_memo_get(const loom_cost_layer_memo *m, const loom_model *model, int32_t module,
                       int32_t layer, const loom_shape *shape, loom_policy_option *opt,
                       double *rflops, int64_t *keep)
{
    const loom_module *mod = &model->modules[module];
    if (!m->valid || m->module != module || !loom_cost_layer_inside(mod, layer) ||
        !same_shape(&m->shape, shape) ||
        memcmp(&mod->layers[m->layer], &mod->layers[layer], sizeof mod->layers[layer]) != 0)
        return 0;
    memcpy(opt, m->opt, sizeof m->opt);
    memcpy(rflops, m->rflops, sizeof m->rflops);
    memcpy(keep, m->keep, sizeof m->keep);
    return 1;
}

void loom_cost_memo_put(loom_cost_layer_memo *m, const loom_model *model, int32_t module,
                        int32_t layer, const loom_shape *shape, const loom_policy_option *opt,
                        const double *rflops, const int64_t *keep, double flops,
                        const double *comm, double element)
{
    if (!loom_cost_layer_inside(&model->modules[module], layer))
        return; /* the embedding's or the head's: no other layer costs it */
    m->valid = 1;
    m->module = module;
    m->layer = layer;
    m->shape = *shape;
    memcpy(m->opt, opt, sizeof m->opt);
    memcpy(m->rflops, rflops, sizeof m->rflops);
    memcpy(m->keep, keep, sizeof m->keep);
    m->flops = flops;
    m->comm[0] = comm[0];
    m->comm[1] = comm[1];
    m->element = element;
}
