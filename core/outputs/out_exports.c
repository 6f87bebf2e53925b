/* out_exports.c - the runtime exports, one row per format: the file, its
 * writer, the key plan.json's "exports" gives it, the check that decides
 * whether its consumer can build the plan (docs/outputs.md, "Runtime
 * exports"; each beside its writer) and the option of `loom plan` that
 * writes it. The output set (out_files.c), plan.json's "exports" (below)
 * and the summary read this table. */
#include <string.h>
#include "output.h"

const loom_out_format loom_out_runtime_exports[] = {
    /* name             writer                      key            check */
    {"schedule.csv",    loom_write_schedule_csv,    "pytorch_csv", loom_out_csv_fits, "--out"},
    {"torchtitan.toml", loom_write_torchtitan_toml, "torchtitan",  loom_out_torchtitan_fits,
     "--out"},
    {"megatron.args",   loom_write_megatron_args,   "megatron",    loom_out_megatron_args_fits,
     "--out"},
    {"mimo.json",       loom_write_mimo_json,       "mimo",        loom_out_mimo_fits, "--out"},
};

const size_t loom_out_n_runtime_exports =
    sizeof loom_out_runtime_exports / sizeof loom_out_runtime_exports[0];

int loom_export_fits(const loom_plan *plan, const char *key, int *fits, char *reason,
                     size_t reason_size, loom_error *err)
{
    *fits = 0;
    for (size_t i = 0; key && i < loom_out_n_runtime_exports; i++) {
        const loom_out_format *x = &loom_out_runtime_exports[i];
        if (strcmp(key, x->key))
            continue;
        char why[LOOM_OUT_REASON_MAX] = "";
        *fits = 1;
        int rc = plan ? x->fits(plan, fits, why, err) : LOOM_OK;
        if (rc == LOOM_OK && reason_size > 0)
            snprintf(reason, reason_size, "%s", *fits ? "" : why);
        return rc;
    }
    char keys[128] = "";
    for (size_t i = 0; i < loom_out_n_runtime_exports; i++)
        snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s",
                 i == 0 ? "" : i + 1 == loom_out_n_runtime_exports ? " or " : ", ",
                 loom_out_runtime_exports[i].key);
    return loom_set_error(err, LOOM_EINVAL, "runtime export %s: expected %s",
                          key ? key : "(null)", keys);
}

int loom_out_json_runtime_exports(const loom_plan *plan, FILE *out, loom_error *err)
{
    char reason[LOOM_OUT_REASON_MAX];
    fputs("  \"exports\": {", out);
    for (size_t i = 0; i < loom_out_n_runtime_exports; i++) {
        const loom_out_format *x = &loom_out_runtime_exports[i];
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
