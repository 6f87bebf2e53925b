/*
 * loom/sys/output.h - what Loom writes about a finished plan: plan.json (partition,
 * stages, per-rank runtime actions, metrics), a Chrome trace, a PyTorch
 * pipelining schedule CSV, an SVG timeline, a human summary table, an
 * HTML report, and the atomic file write every output goes through.
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

/* A writer of one output: prints to `out`, returns LOOM_OK or an error. */
typedef int (*loom_out_writer)(void *ctx, FILE *out, loom_error *err);

/* Writes `write(ctx, FILE *)` output to `path` atomically: a temp file in
 * the same directory, fflush + fsync, rename over path; on any failure
 * (including ENOSPC, e.g. /dev/full or a full disk, and EFBIG past a file
 * size limit) removes the temp file, leaves no partial output and returns
 * LOOM_EIO naming the path and strerror. An existing path that is not a
 * regular file (a symbolic link, FIFO, device, folder) is refused, never
 * followed or replaced. path "-" writes to stdout directly. An error
 * returned by `write` is passed on (its message prefixed with the path)
 * and the temp file removed as well. Same as loom_out_target_open,
 * loom_out_target_write and loom_out_target_close at once. */
LOOM_EXPORT int loom_write_atomic(const char *path, loom_out_writer write, void *ctx,
                                  loom_error *err);

/* One output file resolved once: its folder is opened and kept as a
 * descriptor, so a later chdir() (by a plugin, say) cannot move where it
 * lands, and its mode is fixed from the umask the process had when output
 * was first resolved (loom_out_umask), so a later umask() cannot loosen it. */
typedef struct loom_out_target loom_out_target;

/* Resolves `path` ("-": standard output): opens its folder and refuses an
 * existing entry that is not a regular file. LOOM_EIO naming the path. */
LOOM_EXPORT int loom_out_target_open(const char *path, loom_out_target **out,
                                     loom_error *err);

/* Writes the target atomically (as loom_write_atomic); may be called again
 * to replace what an earlier call wrote. */
LOOM_EXPORT int loom_out_target_write(const loom_out_target *t, loom_out_writer write,
                                      void *ctx, loom_error *err);

/* The path the target was opened with (for messages). */
LOOM_EXPORT const char *loom_out_target_path(const loom_out_target *t);

/* Removes the target's file (what an earlier write put there); LOOM_OK
 * when it is gone. */
LOOM_EXPORT int loom_out_target_remove(const loom_out_target *t);

/* Closes the target's folder and frees it (NULL allowed). */
LOOM_EXPORT void loom_out_target_close(loom_out_target *t);

/* loom_write_atomic into entry `name` of folder dirfd, a new file getting
 * permission bits `mode` (a replaced file keeps its own); `shown` names it
 * in messages. */
LOOM_EXPORT int loom_write_atomic_at(int dirfd, const char *name, const char *shown,
                                     unsigned mode, loom_out_writer write, void *ctx,
                                     loom_error *err);

/* The umask the process had when this was first called (the output
 * functions call it before they create anything; `loom` calls it at
 * start-up, before any plugin code runs). */
LOOM_EXPORT unsigned loom_out_umask(void);

/* plan.json: metrics, partition (null for stage-times problems), every
 * stage, and "rank_actions": per rank the forward_stage / backward_stage /
 * isend / irecv / wait_isend / wait_irecv list a runtime executes. */
LOOM_EXPORT int loom_write_plan_json(const loom_plan *plan, FILE *out, loom_error *err);

/* Chrome Trace Event JSON: one process per rank, stages as complete ("X")
 * events, memory (static + activations, bytes) as "C" counter events. */
LOOM_EXPORT int loom_write_trace_json(const loom_plan *plan, FILE *out, loom_error *err);

/* PyTorch pipelining schedule CSV: one row per rank, one column per
 * lock-step replay step, cells like 2F0 / 1I3 / 0W3, blank = idle.
 * LOOM_EDEADLOCK when the schedule cannot be replayed; LOOM_EINVAL
 * ("schedule.csv: not written: <reason>"), writing nothing, when the plan
 * cannot obey PyTorch's schedule rules (loom_schedule_csv_check). */
LOOM_EXPORT int loom_write_schedule_csv(const loom_plan *plan, FILE *out, loom_error *err);

/* LOOM_OK when schedule.csv can express the plan under PyTorch
 * pipelining's schedule rules: its stages form one chain (microbatch u
 * passed from stage g-1 to stage g only), each stage on one rank, every
 * stage running the same number of (sub-)microbatches. Otherwise
 * LOOM_EINVAL with "schedule.csv: not written: <reason>" (e.g. per-module
 * sub-microbatch counts, several flows feeding one). */
LOOM_EXPORT int loom_schedule_csv_check(const loom_plan *plan, loom_error *err);

/* SVG 1.1 timeline: one lane per rank, one rect per stage, time axis in
 * ms, legend. No scripts. */
LOOM_EXPORT int loom_write_svg(const loom_plan *plan, FILE *out, loom_error *err);

/* Human table: label, makespan, bubble ratio, MFU, plan time, and per
 * rank span, busy, idle %, peak memory (GiB, flagged over the cap). */
LOOM_EXPORT int loom_write_summary(const loom_plan *plan, FILE *out, loom_error *err);

/* report.html: one self-contained page (inline CSS and script, no
 * network): a summary table (metrics, layout, per-rank peak memory against
 * the cap), the timeline drawn on a canvas from JSON embedded in the page
 * (modules coloured, zoom, pan, hover) and each rank's memory over time.
 * A number that is not finite is LOOM_EINVAL, before anything is written. */
LOOM_EXPORT int loom_write_html_report(const loom_plan *plan, FILE *out, loom_error *err);

/* Runtime exports: each is written only when the consumer's own code
 * builds exactly the plan from it; otherwise plan.json's "exports" names
 * the reason and the file is not written. Each writer refuses (LOOM_EINVAL
 * "<file>: not written: <reason>", writing nothing) a plan it cannot
 * express. docs/outputs.md gives the formats and where to paste them. */

/* torchtitan.toml: the [parallelism] and [training] tables of a torchtitan
 * 0.2.2 job config (pipeline degree, schedule, schedule.csv, the split as
 * module_fqns_per_model_part, TP / CP / DP degrees, the microbatch count
 * as local_batch_size over pipeline_parallel_microbatch_size). */
LOOM_EXPORT int loom_write_torchtitan_toml(const loom_plan *plan, FILE *out, loom_error *err);

/* megatron.args: Megatron-LM's command-line arguments, one per line
 * (sizes, layout or virtual stages, sequence parallel, micro and global
 * batch, recomputation from the layers' policies, and the optimizer and
 * overlap settings the cost model assumed). */
LOOM_EXPORT int loom_write_megatron_args(const loom_plan *plan, FILE *out, loom_error *err);

/* mimo.json: Megatron-Bridge MIMO's per-module parallelism
 * (MegatronMIMOParallelismConfig.module_parallelisms, the language model
 * keyed "language") for plans with per-module layouts. */
LOOM_EXPORT int loom_write_mimo_json(const loom_plan *plan, FILE *out, loom_error *err);

/* Writes the output set into dir (created with its parents if missing,
 * mode 0755), each file atomically: plan.json, trace.json, timeline.svg,
 * summary.txt, report.html, and each runtime export (schedule.csv,
 * torchtitan.toml, megatron.args, mimo.json) whose consumer can build the
 * plan; an export that cannot is not written (a previous one in dir is
 * removed) and plan.json's "exports" says why. Stops at the first failure. */
LOOM_EXPORT int loom_write_outputs(const loom_plan *plan, const char *dir, loom_error *err);

/* loom_write_outputs into the open folder dirfd (which must exist);
 * `shown` names it in messages. */
LOOM_EXPORT int loom_write_outputs_at(const loom_plan *plan, int dirfd, const char *shown,
                                      loom_error *err);

/* ---- output folders that appear as a whole --------------------------- */

/* A run's output folder being written: everything goes into a fresh
 * staging folder, and loom_out_dir_commit puts the whole set in place at
 * once. A reader, a killed run or a second run sharing the folder never
 * sees a mix of two sets. */
typedef struct loom_out_dir loom_out_dir;

/* Starts writing folder `dir`: creates its missing parents and a fresh
 * staging folder ".<name>.tmp-<host>-<pid>-<n>" beside it (first removing
 * those that runs of this host which died left there). Where dir cannot be
 * replaced by a rename - a mount point, a symbolic link, a parent Loom may
 * not write - the staging folder goes inside dir instead. LOOM_EIO naming
 * the path when dir exists and is not a folder or nothing can be created. */
LOOM_EXPORT int loom_out_dir_begin(const char *dir, loom_out_dir **out, loom_error *err);

/* The staging folder to write the run's files into (its path, for
 * messages; write through loom_out_dir_write, which does not depend on the
 * current directory). */
LOOM_EXPORT const char *loom_out_dir_path(const loom_out_dir *d);

/* Writes the plan's output set into the staging folder, or into its
 * subfolder `sub` (created; e.g. "iter-003") when sub is not NULL. */
LOOM_EXPORT int loom_out_dir_write(loom_out_dir *d, const loom_plan *plan, const char *sub,
                                   loom_error *err);

/* Puts the staging folder's set in place: when dir is absent, empty or
 * holds only a set Loom wrote (plan.json, trace.json, schedule.csv,
 * timeline.svg, summary.txt, iter-NNN/ folders of them), by one rename
 * (an atomic exchange with the previous set, which is then removed);
 * otherwise entry by entry, so files Loom did not write stay, and Loom's
 * entries the new set lacks (stale iter-NNN/) go. LOOM_EIO naming the
 * path on failure; the staging folder is then left for close. */
LOOM_EXPORT int loom_out_dir_commit(loom_out_dir *d, loom_error *err);

/* Removes the staging folder unless the set was committed, and frees d
 * (NULL allowed). Only Loom's own entries are ever deleted. */
LOOM_EXPORT void loom_out_dir_close(loom_out_dir *d);

/* Removes the staging folder unless committed, without freeing d, using
 * only async-signal-safe calls: for a SIGTERM or SIGINT handler. */
LOOM_EXPORT void loom_out_dir_discard_signal_safe(const loom_out_dir *d);

#ifdef __cplusplus
}
#endif

#endif
