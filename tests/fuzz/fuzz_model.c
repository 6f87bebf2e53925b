/* fuzz_model.c - libFuzzer harness for model.json (core/model_io.c and the
 * model builder in core/model_data.c), followed by the parallel-config
 * checks that run against a loaded model. */
#include "fuzz_input.h"
#include <loom/sys/problem.h>
#include "problem_inputs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = loom_fuzz_file("model.json", data, size);
    if (!path)
        return 0;
    loom_model_data *md = NULL;
    loom_error err = {0, ""};
    if (loom_model_load(path, &md, &err) == LOOM_OK) {
        const loom_model *model = loom_model_data_model(md);
        if (!model || model->n_modules < 1)
            loom_fuzz_fail("accepted model has no modules");
        for (int32_t i = 0; i < model->n_modules; i++)
            for (int32_t k = 0; k < model->modules[i].n_inputs; k++)
                if (model->modules[i].inputs[k] >= i)
                    loom_fuzz_fail("modules are not in topological order");
        const loom_parallel *p = loom_model_data_parallel(md);
        loom_parallel dflt = {1, 1, 1, 1, 1, 0};
        loom_parallel_validate(p ? p : &dflt, model, &err);
        loom_model_data_family(md);
    } else if (!err.message[0]) {
        loom_fuzz_fail("model rejected without a message");
    }
    loom_model_data_free(md);
    return 0;
}
