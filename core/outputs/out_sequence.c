/* out_sequence.c - the sequence length a runtime export states: the text
 * tokens of the plan's longest microbatch (one packed sequence when a
 * microbatch holds one), which megatron.args and torchtitan.toml round up
 * to what their runtime requires. */
#include <stdlib.h>
#include "output.h"

int loom_out_longest_microbatch_tokens(const loom_plan *plan, int64_t *tokens,
                                       loom_error *err)
{
    const loom_partition *part = plan->partition;
    const loom_iteration *it = plan->iteration;
    *tokens = 0;
    if (!part || !it || it->n_samples == 0 || !part->sample_mb)
        return LOOM_OK;
    int64_t *sum = calloc((size_t)part->n_microbatches, sizeof *sum);
    if (!sum)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    const loom_model *model = plan->problem->model;
    for (int32_t i = 0; i < it->n_samples && i < part->n_samples; i++) {
        int32_t mb = part->sample_mb[i];
        if (mb >= 0 && mb < part->n_microbatches)
            sum[mb] += loom_sample_tokens(model, 0, &it->samples[i]);
    }
    for (int32_t mb = 0; mb < part->n_microbatches; mb++)
        *tokens = sum[mb] > *tokens ? sum[mb] : *tokens;
    free(sum);
    return LOOM_OK;
}
