/*
 * loom/sys/output.h - what Loom writes about a finished plan: plan.json (partition,
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
#ifndef LOOM_SYS_OUTPUT_H
#define LOOM_SYS_OUTPUT_H

#include <stdio.h>
#include <loom/sys/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Checks that every number a writer prints is finite: the metrics
 * (makespan, bubble ratio, MFU, spans, plan time), every stage's start,
 * end and duration, every transfer time, the memory cap and the group
 * priorities. LOOM_EINVAL naming the first value that is not ("the plan's
 * makespan_ms is inf, expected a finite number; refusing to write it").
 * Every writer below calls it before writing anything, and so do the
 * `--json` printers of `loom plan` and `loom ab` and the C API. */
LOOM_EXPORT int loom_plan_check_finite(const loom_plan *plan, loom_error *err);

/* Writes `write(ctx, FILE *)` output to `path` atomically: a temp file in
 * the same directory, fflush + fsync, rename over path; on any failure
 * (including ENOSPC, e.g. /dev/full or a full disk) removes the temp file,
 * leaves no partial output and returns LOOM_EIO naming the path and
 * strerror. path "-" writes to stdout directly. An error returned by
 * `write` is passed on (its message prefixed with the path) and the temp
 * file removed as well. */
LOOM_EXPORT int loom_write_atomic(const char *path,
                      int (*write)(void *ctx, FILE *out, loom_error *err),
                      void *ctx, loom_error *err);

/* plan.json: metrics, partition (null for stage-times problems), every
 * stage, and "rank_actions": per rank the forward_stage / backward_stage /
 * isend / irecv / wait_isend / wait_irecv list a runtime executes. */
LOOM_EXPORT int loom_write_plan_json(const loom_plan *plan, FILE *out, loom_error *err);

/* Chrome Trace Event JSON: one process per rank, stages as complete ("X")
 * events, memory (static + activations, bytes) as "C" counter events. */
LOOM_EXPORT int loom_write_trace_json(const loom_plan *plan, FILE *out, loom_error *err);

/* PyTorch pipelining schedule CSV: one row per rank, one column per
 * lock-step replay step, cells like 2F0 / 1I3 / 0W3, blank = idle.
 * LOOM_EDEADLOCK when the schedule cannot be replayed. */
LOOM_EXPORT int loom_write_schedule_csv(const loom_plan *plan, FILE *out, loom_error *err);

/* SVG 1.1 timeline: one lane per rank, one rect per stage, time axis in
 * ms, legend. No scripts. */
LOOM_EXPORT int loom_write_svg(const loom_plan *plan, FILE *out, loom_error *err);

/* Human table: label, makespan, bubble ratio, MFU, plan time, and per
 * rank span, busy, idle %, peak memory (GiB, flagged over the cap). */
LOOM_EXPORT int loom_write_summary(const loom_plan *plan, FILE *out, loom_error *err);

/* Writes all five into dir (created with its parents if missing, mode
 * 0755): plan.json, trace.json, schedule.csv, timeline.svg, summary.txt —
 * each atomically. Stops at the first failure. */
LOOM_EXPORT int loom_write_outputs(const loom_plan *plan, const char *dir, loom_error *err);

#ifdef __cplusplus
}
#endif

#endif
