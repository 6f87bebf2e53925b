/*
 * loom/sys/output.h - writing what Loom produces about a finished plan:
 * a run's output folder as a whole (plan.json, trace.json, timeline.svg,
 * summary.txt, report.html and the runtime exports; formats in
 * docs/outputs.md), the human summary table, whether schedule.csv can
 * express a plan, and the atomic file write every output goes through.
 * The single-file writers are the core's own (core/outputs/output.h).
 *
 * Layer: outputs (core/outputs).
 * Ownership: the plan is borrowed read-only; `out` streams are the
 * caller's (never closed here). Every writer needs plan->graph,
 * plan->schedule and the metrics' start_ms, end_ms, span_ms and peak_bytes
 * arrays; a missing one is LOOM_EINVAL, and so is a number that is not
 * finite, before anything is written. Same plan -> same bytes: numbers
 * are printed in the "C" locale whatever the process locale is.
 * Units: milliseconds (trace: microseconds, as the format requires), bytes.
 */
#ifndef LOOM_SYS_OUTPUT_H
#define LOOM_SYS_OUTPUT_H

#include <stdio.h>
#include <loom/sys/plan.h>

#ifdef __cplusplus
extern "C" {
#endif

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

/* Removes the target's file (what an earlier write put there); LOOM_OK
 * when it is gone. */
LOOM_EXPORT int loom_out_target_remove(const loom_out_target *t);

/* Closes the target's folder and frees it (NULL allowed). */
LOOM_EXPORT void loom_out_target_close(loom_out_target *t);

/* The umask the process had when this was first called (the output
 * functions call it before they create anything; `loom` calls it at
 * start-up, before any plugin code runs). */
LOOM_EXPORT unsigned loom_out_umask(void);

/* LOOM_OK when schedule.csv can express the plan under PyTorch
 * pipelining's schedule rules: its stages form one chain (microbatch u
 * passed from stage g-1 to stage g only), each stage on one rank, every
 * stage running the same number of (sub-)microbatches. Otherwise
 * LOOM_EINVAL with "schedule.csv: not written: <reason>" (e.g. per-module
 * sub-microbatch counts, several flows feeding one). */
LOOM_EXPORT int loom_schedule_csv_check(const loom_plan *plan, loom_error *err);

/* Whether the runtime export keyed `key` in plan.json's "exports"
 * ("pytorch_csv", "torchtitan", "megatron" or "mimo") can be written for
 * the plan: *fits 1, or 0 with the reason in `reason` (reason_size bytes,
 * truncated). With plan NULL only the key is checked (*fits 1). LOOM_EINVAL
 * naming the keys for another key. */
LOOM_EXPORT int loom_export_fits(const loom_plan *plan, const char *key, int *fits,
                                 char *reason, size_t reason_size, loom_error *err);

/* Human table: label, makespan, bubble ratio, MFU, plan time, and per
 * rank span, busy, idle %, peak memory (GiB, flagged over the cap). */
LOOM_EXPORT int loom_write_summary(const loom_plan *plan, FILE *out, loom_error *err);

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

/* Writes the plan's output set into the staging folder, or into its
 * subfolder `sub` (created; e.g. "iter-003") when sub is not NULL, each
 * file atomically: plan.json, trace.json, timeline.svg, summary.txt,
 * report.html, and each runtime export (schedule.csv, torchtitan.toml,
 * megatron.args, mimo.json) whose consumer can build the plan; an export
 * that cannot is not written and plan.json's "exports" says why. Stops at
 * the first failure. */
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
