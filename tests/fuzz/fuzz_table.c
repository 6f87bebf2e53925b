/* fuzz_table.c - libFuzzer harness for the `table` cost model's files
 * (plugins/table: CSV, or JSON when the text starts with '{'), followed by
 * lookups and interpolation over every module it accepted. */
#include <math.h>
#include "fuzz_input.h"
#include "table_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Interpolates every module's rows at a few token counts. */
static void probe(const loom_table *t)
{
    static const double tokens[] = {1, 77, 1000, 4096, 1e6, 1e12};
    for (int32_t m = 0; m < t->n_modules; m++) {
        for (int32_t layer = LOOM_TABLE_ANY_LAYER; layer <= 2; layer++) {
            const loom_table_row *rows = NULL;
            int32_t n = 0;
            loom_table_lookup(t, t->modules[m].name, layer, &rows, &n);
            if (n < 1)
                continue;
            for (size_t k = 0; k < sizeof tokens / sizeof tokens[0]; k++) {
                loom_table_point p;
                loom_table_interpolate(rows, n, tokens[k], &p);
                if (isnan(p.forward_ms) || isnan(p.input_grad_ms) ||
                    isnan(p.weight_grad_ms) || isnan(p.activation_bytes) ||
                    p.forward_ms < 0 || p.activation_bytes < 0)
                    loom_fuzz_fail("interpolation gave NaN or a negative value");
            }
        }
    }
}

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = loom_fuzz_file("table.csv", data, size);
    if (!path)
        return 0;
    loom_table *t = NULL;
    loom_error err = {0, ""};
    if (loom_table_load(path, &t, &err) == LOOM_OK)
        probe(t);
    else if (!err.message[0])
        loom_fuzz_fail("table rejected without a message");
    loom_table_free(t);
    return 0;
}
