/* out_files.c - the output set as one table: every file a plan gets, its
 * writer, and for the runtime exports their entry in loom_out_runtime_exports
 * (the check that decides whether the file is written). The writers of a
 * set (loom_write_outputs) and the folder code that knows which entries
 * are Loom's (atomic_file.c) read this table; the writers themselves read
 * only loom_out_runtime_exports (out_exports.c), so no writer depends on the set. */
#include <string.h>
#include "output.h"

const loom_out_file loom_out_files[] = {
    {"plan.json", loom_write_plan_json, NULL},
    {"trace.json", loom_write_trace_json, NULL},
    {"schedule.csv", loom_write_schedule_csv, &loom_out_runtime_exports[0]},
    {"torchtitan.toml", loom_write_torchtitan_toml, &loom_out_runtime_exports[1]},
    {"megatron.args", loom_write_megatron_args, &loom_out_runtime_exports[2]},
    {"mimo.json", loom_write_mimo_json, &loom_out_runtime_exports[3]},
    {"timeline.svg", loom_write_svg, NULL},
    {"summary.txt", loom_write_summary, NULL},
    {"report.html", loom_write_html_report, NULL},
};

const size_t loom_out_n_files = sizeof loom_out_files / sizeof loom_out_files[0];
