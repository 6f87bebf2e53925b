/* out_exports.c - the runtime exports: for each, the file it is written
 * to, the key plan.json's "exports" gives it, and the check that decides
 * whether its consumer can build the plan (docs/outputs.md, "Runtime
 * exports"). plan.json and the summary read this list. */
#include <string.h>
#include "output.h"

const loom_out_export loom_out_runtime_exports[] = {
    {"schedule.csv", "pytorch_csv", loom_out_csv_fits},
    {"torchtitan.toml", "torchtitan", loom_out_torchtitan_fits},
    {"megatron.args", "megatron", loom_out_megatron_args_fits},
    {"mimo.json", "mimo", loom_out_mimo_fits},
};

const size_t loom_out_n_runtime_exports = sizeof loom_out_runtime_exports / sizeof loom_out_runtime_exports[0];

int loom_out_json_runtime_exports(const loom_plan *plan, FILE *out, loom_error *err)
{
    char reason[LOOM_OUT_REASON_MAX];
    fputs("  \"exports\": {", out);
    for (size_t i = 0; i < loom_out_n_runtime_exports; i++) {
        const loom_out_export *x = &loom_out_runtime_exports[i];
        int fits = 0;
        int rc = x->fits(plan, &fits, reason, err);
        if (rc != LOOM_OK) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "plan.json: exports.%s", x->key);
            return loom_error_prefix(err, rc, prefix);
        }
        fprintf(out, "%s\n    \"%s\": {", i ? "," : "", x->key);
        fputs(fits ? "\"file\": " : "\"reason\": ", out);
        loom_out_json_string(out, fits ? x->name : reason);
        fputc('}', out);
    }
    fputs("\n  },\n", out);
    return LOOM_OK;
}
