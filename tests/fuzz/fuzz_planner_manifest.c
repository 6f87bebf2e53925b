/* fuzz_planner_manifest.c - libFuzzer harness for planner manifests
 * (core/planner_manifest.c), including the --use / --param edits applied
 * over a parsed manifest. */
#include "fuzz_input.h"
#include <loom/sys/planner.h>
#include "pipeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = loom_fuzz_file("planner.json", data, size);
    if (!path)
        return 0;
    loom_planner_config *cfg = NULL;
    loom_error err = {0, ""};
    int rc = loom_planner_config_load(path, &cfg, &err);
    if (rc == LOOM_OK) {
        loom_planner_config_check(cfg, &err);
        loom_planner_config_use(cfg, "memory_tuner=greedy", &err);
        loom_planner_config_param(cfg, "ranker.budget_ms=5", &err);
        loom_planner_config_check(cfg, &err);
    } else if (!err.message[0]) {
        loom_fuzz_fail("planner manifest rejected without a message");
    }
    loom_planner_config_free(cfg);
    return 0;
}
