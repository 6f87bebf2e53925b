/* fuzz_stage_times.c - libFuzzer harness for stage-times problems
 * (core/stage_times_io.c). */
#include <math.h>
#include "fuzz_input.h"
#include <loom/sys/problem.h>
#include "problem_inputs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = loom_fuzz_file("stage-times.json", data, size);
    if (!path)
        return 0;
    loom_stage_times_data *sd = NULL;
    loom_error err = {0, ""};
    if (loom_stage_times_load(path, &sd, &err) == LOOM_OK) {
        const loom_stage_times *st = loom_stage_times_data_get(sd);
        int32_t n = st->ranks * st->virtual_stages;
        if (st->ranks < 1 || st->virtual_stages < 1 || st->microbatches < 1 ||
            n > LOOM_MAX_STAGE_POSITIONS)
            loom_fuzz_fail("accepted stage-times problem has bad dimensions");
        double sum = 0;
        for (int32_t s = 0; s < n; s++) {
            sum += st->forward_ms[s] + st->activation_bytes[s];
            sum += st->split_backward ? st->input_grad_ms[s] + st->weight_grad_ms[s]
                                      : st->backward_ms[s];
        }
        for (int32_t k = 0; k < st->microbatches; k++)
            sum += st->microbatch_scale[k];
        if (isnan(sum))
            loom_fuzz_fail("accepted stage-times problem holds NaN");
    } else if (!err.message[0]) {
        loom_fuzz_fail("stage-times problem rejected without a message");
    }
    loom_stage_times_data_free(sd);
    return 0;
}
