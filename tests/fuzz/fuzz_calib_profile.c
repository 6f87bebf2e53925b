/* fuzz_calib_profile.c - libFuzzer harness for the per-layer profile CSV
 * of `loom calibrate` (tools/loom/calib_profile.c: loom_calib_parse_profile)
 * against the vlm-s preset. Parsing only: pricing a row needs a planning
 * session with its plugins, which the fuzz build does not load. */
#include <math.h>
#include <stdlib.h>
#include "calib.h"
#include "fuzz_input.h"
#include "problem_inputs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The vlm-s preset, loaded once and kept for the process. */
static const loom_model *vlm_s(void)
{
    static loom_model_data *md;
    if (!md) {
        loom_error err = {0, ""};
        if (loom_model_load("vlm-s", &md, &err) != LOOM_OK)
            loom_fuzz_fail("the vlm-s preset does not load");
    }
    return loom_model_data_model(md);
}

/* Fails unless layer L is a valid measurement of a module of `model`. */
static void check_layer(const loom_model *model, const loom_calib_layer *L)
{
    if (L->module < 0 || L->module >= model->n_modules)
        loom_fuzz_fail("an accepted row names no module of the model");
    if (L->layer < -1 || L->layer >= model->modules[L->module].n_layers)
        loom_fuzz_fail("an accepted row's layer is outside its module");
    if (L->tokens < 1 || L->tp < 1 || L->seq_len < 1 || L->seq_len > L->tokens)
        loom_fuzz_fail("an accepted row has tokens, tp or seq_len out of range");
    if (!(L->forward_ms > 0) || !isfinite(L->forward_ms) || !(L->backward_ms >= 0) ||
        !isfinite(L->backward_ms))
        loom_fuzz_fail("an accepted row has a time that is not finite and positive");
    if (!isfinite(L->activation_bytes) || (L->activation_bytes < 0 && L->activation_bytes != -1))
        loom_fuzz_fail("an accepted row has a bad activation size");
    if (L->line < 2)
        loom_fuzz_fail("an accepted row comes before its header");
}

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const loom_model *model = vlm_s();
    char *text = loom_fuzz_strdup(data, size);
    if (!text)
        return 0;
    loom_calib_set set = {0};
    loom_error err = {0, ""};
    if (loom_calib_parse_profile(&set, "profile.csv", text, model, &err) == LOOM_OK) {
        if (set.n_layers < 1 || !set.layers)
            loom_fuzz_fail("an accepted profile has no layer");
        for (int i = 0; i < set.n_layers; i++) {
            const loom_calib_layer *a = &set.layers[i];
            check_layer(model, a);
            for (int j = 0; j < i; j++) {
                const loom_calib_layer *b = &set.layers[j];
                if (b->line >= a->line)
                    loom_fuzz_fail("accepted rows are out of line order");
                if (a->module == b->module && a->layer == b->layer && a->tokens == b->tokens &&
                    a->tp == b->tp && a->seq_len == b->seq_len)
                    loom_fuzz_fail("an accepted profile measures one layer twice");
            }
        }
    } else if (!err.message[0]) {
        loom_fuzz_fail("profile rejected without a message");
    }
    loom_calib_set_free(&set);
    free(text);
    return 0;
}
