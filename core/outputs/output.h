/*
 * output.h - what Loom writes about a finished plan: plan.json (partition,
 * stages, per-rank runtime actions, metrics), a Chrome trace, a PyTorch
 * pipelining schedule CSV, an SVG timeline and a human summary table, and
 * the atomic file write every output goes through.
 *
 * Ownership: the plan is borrowed read-only; `out` streams are the
 * caller's (never closed here). Every writer needs plan->graph,
 * plan->schedule and the metrics' start_ms, end_ms, span_ms and peak_bytes
 * arrays; a missing one is LOOM_EINVAL. Same plan -> same bytes: numbers
 * are printed in the "C" locale whatever the process locale is.
 * Units: milliseconds (trace: microseconds, as the format requires), bytes.
 * The formats are documented in docs/outputs.md.
 */
#ifndef LOOM_OUTPUT_H
#define LOOM_OUTPUT_H

#include <locale.h>
#include <stdio.h>
#include "engine_api.h"

/* Writes `write(ctx, FILE *)` output to `path` atomically: a temp file in
 * the same directory, fflush + fsync, rename over path; on any failure
 * (including ENOSPC, e.g. /dev/full or a full disk) removes the temp file,
 * leaves no partial output and returns LOOM_EIO naming the path and
 * strerror. path "-" writes to stdout directly. An error returned by
 * `write` is passed on (its message prefixed with the path) and the temp
 * file removed as well. */
int loom_write_atomic(const char *path,
                      int (*write)(void *ctx, FILE *out, loom_error *err),
                      void *ctx, loom_error *err);

/* plan.json: metrics, partition (null for stage-times problems), every
 * stage, and "rank_actions": per rank the forward_stage / backward_stage /
 * isend / irecv / wait_isend / wait_irecv list a runtime executes. */
int loom_write_plan_json(const loom_plan *plan, FILE *out, loom_error *err);

/* Chrome Trace Event JSON: one process per rank, stages as complete ("X")
 * events, memory (static + activations, bytes) as "C" counter events. */
int loom_write_trace_json(const loom_plan *plan, FILE *out, loom_error *err);

/* PyTorch pipelining schedule CSV: one row per rank, one column per
 * lock-step replay step, cells like 2F0 / 1I3 / 0W3, blank = idle.
 * LOOM_EDEADLOCK when the schedule cannot be replayed. */
int loom_write_schedule_csv(const loom_plan *plan, FILE *out, loom_error *err);

/* SVG 1.1 timeline: one lane per rank, one rect per stage, time axis in
 * ms, legend. No scripts. */
int loom_write_svg(const loom_plan *plan, FILE *out, loom_error *err);

/* Human table: label, makespan, bubble ratio, MFU, plan time, and per
 * rank span, busy, idle %, peak memory (GiB, flagged over the cap). */
int loom_write_summary(const loom_plan *plan, FILE *out, loom_error *err);

/* Writes all five into dir (created with its parents if missing, mode
 * 0755): plan.json, trace.json, schedule.csv, timeline.svg, summary.txt —
 * each atomically. Stops at the first failure. */
int loom_write_outputs(const loom_plan *plan, const char *dir, loom_error *err);

/* ---- shared by the writers in core/out_*.c (not for other callers) ---- */

/* State of one writer call: the "C" numeric locale it switched to and the
 * locale to restore. */
typedef struct loom_out_frame {
    locale_t c_locale;
    locale_t saved;
} loom_out_frame;

/* Checks the plan has what every writer needs (LOOM_EINVAL naming the
 * missing part, `what` naming the output) and switches the calling thread
 * to the "C" locale until loom_out_end. */
int loom_out_begin(const loom_plan *plan, const char *what,
                   loom_out_frame *frame, loom_error *err);

/* Restores the locale; turns a stream error on `out` into LOOM_EIO when
 * `rc` is LOOM_OK. Returns the final status. */
int loom_out_end(loom_out_frame *frame, FILE *out, const char *what, int rc,
                 loom_error *err);

/* Writes `s` as a JSON string literal (quotes and escapes included). */
void loom_out_json_string(FILE *out, const char *s);

/* Writes a JSON number: the shortest of %.15g / %.17g that reads back
 * exactly; null when not finite. */
void loom_out_json_number(FILE *out, double v);

/* Name of model module `module`, or NULL (stage-times problems, -1). */
const char *loom_out_module_name(const loom_plan *plan, int32_t module);

/* Policy value of a stage whose layer entries use different policies. */
#define LOOM_OUT_POLICY_MIXED (-1)

/* "none", "selective", "full" for enum loom_mem_policy, "mixed" for
 * LOOM_OUT_POLICY_MIXED. */
const char *loom_out_policy_name(int policy);

/* 'F', 'B', 'I', 'W' for enum loom_stage_kind ('?' otherwise). */
char loom_out_kind_char(int kind);

/* Memory policy of a stage: the policy every layer entry of its pair
 * uses (enum loom_mem_policy), or LOOM_OUT_POLICY_MIXED. */
int loom_out_stage_policy(const loom_stage_graph *g, int32_t stage);

#endif
