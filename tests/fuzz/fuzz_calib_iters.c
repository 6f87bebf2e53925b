/* fuzz_calib_iters.c - libFuzzer harness for the measured-iterations JSON
 * of `loom calibrate` (tools/loom/calib_iters.c: loom_calib_parse_iterations,
 * calibrating the h800 preset). Parsing only: each entry names its own
 * model, parallel config and workload, and opening its planning session
 * (plugins, workload generation) is left to the tests of `loom calibrate`. */
#include <string.h>
#include "calib.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CLUSTER "h800"

/* Counts the entries passed so far. */
typedef struct seen {
    int entries, n;
} seen;

/* loom_calib_entry_fn: fails unless entry i of n keeps the format's rules. */
static int check_entry(void *user, int i, int n, const char *path, const loom_calib_entry *e,
                       loom_error *err)
{
    (void)err;
    seen *s = user;
    if (i != s->entries++ || n < 1 || i >= n || (s->n && s->n != n))
        loom_fuzz_fail("entries are not passed in order, each once");
    s->n = n;
    if (!path || !path[0])
        loom_fuzz_fail("an entry is passed without its JSON path");
    if (!e->model)
        loom_fuzz_fail("an accepted entry has no model");
    if (!(e->measured_ms > 0) && !(e->mfu > 0))
        loom_fuzz_fail("an accepted entry has neither measured_ms nor mfu");
    if ((e->measured_ms >= 0 && !(e->measured_ms >= 1e-9 && e->measured_ms <= 1e12)) ||
        (e->mfu >= 0 && !(e->mfu >= 1e-9 && e->mfu <= 1)))
        loom_fuzz_fail("an accepted entry has a measurement out of range");
    if (e->iteration < 0 || e->iteration >= LOOM_MAX_ITERATIONS || e->seed < -1)
        loom_fuzz_fail("an accepted entry has an iteration or seed out of range");
    if (e->workload && e->generate)
        loom_fuzz_fail("an accepted entry has both workload and generate");
    if (e->cluster && strcmp(e->cluster, CLUSTER))
        loom_fuzz_fail("an accepted entry names another cluster");
    return LOOM_OK;
}

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = loom_fuzz_file("iterations.json", data, size);
    if (!path)
        return 0;
    seen s = {0, 0};
    loom_error err = {0, ""};
    if (loom_calib_parse_iterations(path, CLUSTER, NULL, check_entry, &s, &err) == LOOM_OK) {
        if (s.entries < 1 || s.entries != s.n)
            loom_fuzz_fail("an accepted iterations file did not pass every entry");
    } else if (!err.message[0]) {
        loom_fuzz_fail("iterations file rejected without a message");
    }
    return 0;
}
