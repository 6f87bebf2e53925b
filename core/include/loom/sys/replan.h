/*
 * loom/sys/replan.h - the job file of `loom replan` (an Oobleck job: nodes,
 * fault tolerance, per-layer costs, the running pipelines) and the report
 * of a reconfiguration, for the CLI and the C API. Format:
 * docs/algorithms-dissertation.md, "loom replan".
 *
 * Ownership: *report_out is a cJSON tree the caller deletes;
 * *result_json is a string the caller frees with free().
 *
 * Layer: run (core/run).
 */
#ifndef LOOM_SYS_REPLAN_H
#define LOOM_SYS_REPLAN_H

#include <cjson/cJSON.h>
#include <loom/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parses the job `text` (named `name` in messages), plans its templates,
 * instantiates (or takes its "pipelines"), removes the failed nodes and
 * repairs (full: re-instantiate from scratch). *report_out describes the
 * templates, the pipelines before and after, the actions and the layer
 * copies. Input errors: LOOM_EINVAL naming the file and JSON path;
 * unrecoverable failures: LOOM_EINFEASIBLE. */
LOOM_EXPORT int loom_oobleck_job_replan(const char *name, const char *text,
                            const int32_t *failed, int32_t n_failed, int full,
                            cJSON **report_out, loom_error *err);

/* The C-API form, loom_replan_json, is declared in <loom/api.h>. */

#ifdef __cplusplus
}
#endif

#endif
