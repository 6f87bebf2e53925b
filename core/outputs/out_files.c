/* out_files.c - the output set as one table: every file a plan gets, its
 * writer, and for the runtime exports the check that decides whether the
 * file is written and the key plan.json's "exports" gives it. The writers
 * of a set (loom_write_outputs) and the folder code that knows which
 * entries are Loom's (atomic_file.c) both read this table. */
#include <string.h>
#include "output.h"

const loom_out_file loom_out_files[] = {
    {"plan.json", loom_write_plan_json, NULL, NULL},
    {"trace.json", loom_write_trace_json, NULL, NULL},
    {"schedule.csv", loom_write_schedule_csv, "pytorch_csv", loom_out_csv_fits},
    {"torchtitan.toml", loom_write_torchtitan_toml, "torchtitan", loom_out_torchtitan_fits},
    {"megatron.args", loom_write_megatron_args, "megatron", loom_out_megatron_args_fits},
    {"mimo.json", loom_write_mimo_json, "mimo", loom_out_mimo_fits},
    {"timeline.svg", loom_write_svg, NULL, NULL},
    {"summary.txt", loom_write_summary, NULL, NULL},
    {"report.html", loom_write_html_report, NULL, NULL},
};

const size_t loom_out_n_files = sizeof loom_out_files / sizeof loom_out_files[0];

int loom_out_json_runtime_exports(const loom_plan *plan, FILE *out, loom_error *err)
{
    char reason[LOOM_OUT_REASON_MAX];
    int first = 1;
    fputs("  \"exports\": {", out);
    for (size_t i = 0; i < loom_out_n_files; i++) {
        const loom_out_file *f = &loom_out_files[i];
        if (!f->fits)
            continue;
        int fits = 0;
        int rc = f->fits(plan, &fits, reason, err);
        if (rc != LOOM_OK) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "plan.json: exports.%s", f->export_key);
            return loom_error_prefix(err, rc, prefix);
        }
        fprintf(out, "%s\n    \"%s\": {", first ? "" : ",", f->export_key);
        fputs(fits ? "\"file\": " : "\"reason\": ", out);
        loom_out_json_string(out, fits ? f->name : reason);
        fputc('}', out);
        first = 0;
    }
    fputs("\n  },\n", out);
    return LOOM_OK;
}
