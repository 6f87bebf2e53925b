/* fuzz_parallel_file.c - libFuzzer harness for the per-module parallel
 * config file given to `--parallel FILE.json` (core/problem/layout_io.c:
 * loom_parallel_load, then loom_module_layouts_resolve against the vlm-s
 * preset, as a session opens it). */
#include <stdlib.h>
#include "fuzz_input.h"
#include <loom/sys/problem.h>
#include "problem_inputs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The vlm-s preset, loaded once and kept for the process. */
static const loom_model_data *vlm_s(void)
{
    static loom_model_data *md;
    if (!md) {
        loom_error err = {0, ""};
        if (loom_model_load("vlm-s", &md, &err) != LOOM_OK)
            loom_fuzz_fail("the vlm-s preset does not load");
    }
    return md;
}

/* Fails unless every resolved layout has degrees >= 1 whose product is its
 * set's GPUs, every set lies inside the total, and the top-level set and
 * the disjoint sets do not overlap. */
static void check_layouts(const loom_model *model, const loom_parallel *p,
                          const loom_module_layout *l, int32_t total)
{
    if (total < 1 || total > LOOM_MAX_GPUS)
        loom_fuzz_fail("resolved layouts have a GPU total outside [1, LOOM_MAX_GPUS]");
    int64_t top = (int64_t)p->tp * loom_parallel_cp(p) * p->pp * p->dp;
    if (top > total)
        loom_fuzz_fail("the top-level set is larger than the GPU total");
    for (int32_t m = 0; m < model->n_modules; m++) {
        const loom_module_layout *a = &l[m];
        if (a->tp < 1 || a->cp < 1 || a->pp < 1 || a->dp < 1)
            loom_fuzz_fail("a resolved module layout has a degree below 1");
        if (a->gpus < 1 || a->first_gpu < 0 || (int64_t)a->first_gpu + a->gpus > total)
            loom_fuzz_fail("a module's GPU set lies outside the GPU total");
        if ((int64_t)a->tp * a->cp * a->pp * a->dp != a->gpus)
            loom_fuzz_fail("a module's tp*cp*pp*dp differs from its set's GPUs");
        if (a->placement == LOOM_LAYOUT_TOP && (a->first_gpu != 0 || a->gpus != top))
            loom_fuzz_fail("an unlisted module is not on the top-level set");
        if (a->placement != LOOM_LAYOUT_DISJOINT)
            continue;
        if (a->first_gpu < top)
            loom_fuzz_fail("a disjoint set overlaps the top-level set");
        for (int32_t k = 0; k < m; k++) {
            const loom_module_layout *b = &l[k];
            if (b->placement == LOOM_LAYOUT_DISJOINT && a->first_gpu < b->first_gpu + b->gpus &&
                b->first_gpu < a->first_gpu + a->gpus)
                loom_fuzz_fail("two disjoint sets overlap");
        }
    }
}

/* libFuzzer entry: runs one input through the parser and the resolver;
 * never fails on bad input, only on a crash, a leak or a broken
 * invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const loom_model_data *md = vlm_s();
    const char *path = loom_fuzz_file("parallel.json", data, size);
    if (!path)
        return 0;
    const loom_model *model = loom_model_data_model(md);
    const loom_parallel *own = loom_model_data_parallel(md);
    loom_parallel p = own ? *own : (loom_parallel){1, 1, 1, 1, 4, 0};
    loom_layout_spec *spec = NULL;
    loom_error err = {0, ""};
    if (loom_parallel_load(path, &p, &spec, &err) != LOOM_OK) {
        if (!err.message[0])
            loom_fuzz_fail("parallel file rejected without a message");
        if (spec)
            loom_fuzz_fail("a rejected parallel file left per-module layouts behind");
        return 0;
    }
    if (!spec) { /* no modules: the plain top-level checks */
        if (loom_parallel_validate(&p, model, &err) != LOOM_OK && !err.message[0])
            loom_fuzz_fail("parallel config rejected without a message");
        return 0;
    }
    loom_module_layout *l = NULL;
    int32_t total = 0;
    if (loom_module_layouts_resolve(spec, &p, model, &l, &total, &err) == LOOM_OK) {
        if (!l)
            loom_fuzz_fail("resolved layouts without a layout array");
        check_layouts(model, &p, l, total);
    } else {
        if (!err.message[0])
            loom_fuzz_fail("per-module layouts rejected without a message");
        if (l)
            loom_fuzz_fail("rejected layouts left an array behind");
    }
    free(l);
    loom_layout_spec_free(spec);
    return 0;
}
