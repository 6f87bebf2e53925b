/*
 * entrain_workload.c - Entrain's per-sample workload model (§4.4.1): a
 * per-layer quadratic T(x) = a x^2 + b x + c in the tokens x of one
 * sequence, summed over a component's layers and the sample's sequences.
 * Without profiled coefficients they come from the layer shapes' FLOPs:
 * b from the projections and the FFN, a from attention scores, with the
 * frozen-aware backward of Cornstarch (Eq. 3.2) at module granularity.
 */
#include <math.h>
#include <loom/tokens.h>
#include <loom/algorithms/entrain.h>


/* Forward FLOPs coefficients of one layer: linear (b) and quadratic (a). */
static void layer_coeffs(const loom_layer *l, double *a, double *b)
{
    double h = (double)l->hidden;
    double hd = l->heads > 0 ? h / l->heads : h;
    double kv = (double)l->kv_heads * hd;
    double lin = 2 * h * (h + 2 * kv) + 2 * h * h +
                 2 * h * (double)l->ffn_hidden * (l->gated_ffn ? 3 : 2);
    if (l->cross_attention)
        lin += 8 * h * h;
    *b = lin;
    *a = 4 * h * (l->causal ? 0.5 : 1.0);
}

void loom_entrain_quad_from_shapes(const loom_model *model,
                                   loom_entrain_quad *quad)
{
    for (int32_t m = 0; m < model->n_modules; m++) {
        const loom_module *mod = &model->modules[m];
        int trainable = !mod->frozen;
        int input = trainable || loom_module_upstream_trainable(model, m);
        double factor = 1.0 + input + trainable; /* F + B_d + B_w */
        double a = 0, b = 0;
        for (int32_t l = 0; l < mod->n_layers; l++) {
            double la, lb;
            layer_coeffs(&mod->layers[l], &la, &lb);
            a += la;
            b += lb;
        }
        double n = mod->n_layers > 0 ? mod->n_layers : 1;
        quad[m].a = factor * a / n;
        quad[m].b = factor * b / n;
        quad[m].c = 0;
    }
}

/* T(x) of one sequence summed over a module's layers. */
static double seq_ms(const loom_module *mod, const loom_entrain_quad *q,
                     double x)
{
    if (x <= 0)
        return 0;
    return (double)mod->n_layers * (q->a * x * x + q->b * x + q->c);
}

loom_entrain_work loom_entrain_sample_work(const loom_model *model,
                                           const loom_entrain_quad *quad,
                                           const loom_sample *sample)
{
    loom_entrain_work w = {0, 0};
    for (int32_t m = 0; m < model->n_modules; m++) {
        const loom_module *mod = &model->modules[m];
        double t = 0;
        if (mod->modality == LOOM_MODALITY_IMAGE) {
            t = sample->images * seq_ms(mod, &quad[m],
                                        (double)mod->tokens_per_item);
        } else {
            t = seq_ms(mod, &quad[m], (double)loom_sample_tokens(model, m, sample));
        }
        if (mod->kind == LOOM_MODULE_ENCODER)
            w.enc_ms += t;
        else
            w.llm_ms += t;
    }
    return w;
}
