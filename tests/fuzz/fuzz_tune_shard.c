/* fuzz_tune_shard.c - libFuzzer harness for the shard files `loom tune
 * merge` reads (tools/loom/tune_shard.c): one input as a one-shard file. An
 * accepted set holds configurations 0..n-1 in order, each once. */
#include <stdlib.h>
#include <string.h>
#include "fuzz_input.h"
#include "tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: runs one input through the reader; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = loom_fuzz_file("shard.json", data, size);
    if (!path)
        return 0;
    loom_tune_search t;
    memset(&t, 0, sizeof t);
    loom_session_args_init(&t.base);
    loom_error err = {0, ""};
    if (loom_tune_read_shards(&path, 1, &t, &err) == LOOM_OK) {
        for (int32_t i = 0; i < t.n_configs; i++)
            if (t.configs[i].index != i)
                loom_fuzz_fail("accepted shard set is not configurations 0..n-1 in order");
    } else if (!err.message[0]) {
        loom_fuzz_fail("shard rejected without a message");
    }
    /* what a merge owns beyond the search (cmd_tune_merge.c: free_merged) */
    free((char *)t.model);
    free((char *)t.cluster);
    loom_tune_search_clear(&t);
    return 0;
}
