/* fuzz_cluster.c - libFuzzer harness for cluster.json (core/cluster_io.c). */
#include "fuzz_input.h"
#include <loom/sys/problem.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = loom_fuzz_file("cluster.json", data, size);
    if (!path)
        return 0;
    loom_cluster_data *cd = NULL;
    loom_error err = {0, ""};
    if (loom_cluster_load(path, &cd, &err) == LOOM_OK) {
        const loom_cluster *c = loom_cluster_data_cluster(cd);
        if (!(c->peak_flops > 0) || !(c->hbm_bytes > 0) || !(c->eff_gemm > 0) ||
            c->eff_gemm > 1)
            loom_fuzz_fail("accepted cluster has a non-positive rate or factor");
    } else if (!err.message[0]) {
        loom_fuzz_fail("cluster rejected without a message");
    }
    loom_cluster_data_free(cd);
    return 0;
}
