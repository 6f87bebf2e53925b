/* fuzz_parallel.c - libFuzzer harness for the parallel-config string
 * ("tp=4,pp=4,mb=16", core/parallel_io.c). */
#include <stdlib.h>
#include "fuzz_input.h"
#include <loom/sys/problem.h>
#include "problem_inputs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec = loom_fuzz_strdup(data, size);
    if (!spec)
        return 0;
    loom_parallel p = {1, 1, 1, 1, 1, 0};
    loom_error err = {0, ""};
    if (loom_parallel_parse(spec, &p, &err) == LOOM_OK) {
        if (loom_parallel_validate(&p, NULL, &err) == LOOM_OK &&
            (int64_t)p.tp * p.pp * p.dp > LOOM_MAX_GPUS)
            loom_fuzz_fail("validated parallel config exceeds the GPU bound");
    } else if (!err.message[0]) {
        loom_fuzz_fail("parallel config rejected without a message");
    }
    free(spec);
    return 0;
}
