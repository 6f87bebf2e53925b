/* vpp_sweep.c - the virtual-stage counts a Megatron-LM user can choose
 * for a layer split (see <loom/kits/layout.h>). */
#include <loom/kits/layout.h>

int32_t loom_lk_vpp_options(int64_t n_layers, int32_t pp, int32_t microbatches, int32_t *out,
                            int32_t cap)
{
    int32_t n = 0;
    if (cap < 1 || pp < 1 || n_layers < pp)
        return 0;
    out[n++] = 1;
    for (int64_t v = 2; n < cap && (int64_t)pp * v <= n_layers; v++)
        if (n_layers % ((int64_t)pp * v) == 0 && microbatches % pp == 0)
            out[n++] = (int32_t)v;
    return n;
}

int32_t loom_lk_vpp_candidates(const loom_problem *problem, int sweep, int32_t *out,
                               int32_t cap)
{
    const loom_parallel *par = &problem->parallel;
    int32_t n = 0;
    if (sweep && problem->model) {
        int64_t n_layers = 0;
        for (int32_t m = 0; m < problem->model->n_modules; m++)
            n_layers += problem->model->modules[m].n_layers;
        n = loom_lk_vpp_options(n_layers, par->pp, par->microbatches, out, cap);
        if (n == 0)
            out[n++] = 1;
    } else {
        out[n++] = par->vpp > 0 ? par->vpp : 1;
    }
    return n;
}
