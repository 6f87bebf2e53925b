/* fuzz_suite.c - libFuzzer harness for `loom ab` suite files
 * (core/ab_suite.c). */
#include "ab.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = loom_fuzz_file("suite.json", data, size);
    if (!path)
        return 0;
    loom_ab_suite *suite = NULL;
    loom_error err = {0, ""};
    if (loom_ab_suite_load(path, &suite, &err) == LOOM_OK) {
        if (!suite || suite->n_cases < 1)
            loom_fuzz_fail("accepted suite has no case");
        for (int32_t i = 0; i < suite->n_cases; i++)
            if (!suite->cases[i].name || !suite->cases[i].name[0])
                loom_fuzz_fail("accepted suite case has no name");
    } else if (!err.message[0]) {
        loom_fuzz_fail("suite rejected without a message");
    }
    loom_ab_suite_free(suite);
    return 0;
}
