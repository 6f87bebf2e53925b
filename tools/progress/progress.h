/*
 * progress.h - the progress display of long runs (`loom ab`, `loom plan
 * --iterations N`, searches with a budget over a second): a redrawn bar on
 * a terminal - label, iteration, elapsed time and estimate - and plain
 * periodic lines when the stream is not a terminal (CI logs). Quiet
 * displays do nothing. Internal, not installed.
 *
 * Ownership: loom_progress_new returns a display the caller frees with
 * loom_progress_free; the stream is borrowed (never closed). Every call
 * is thread-safe (a search reports from its worker threads, the ticker
 * draws from its own). Units: milliseconds.
 */
#ifndef LOOM_PROGRESS_H
#define LOOM_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Time between plain lines, and between redraws on a terminal. */
#define LOOM_PROGRESS_LINE_INTERVAL_MS 2000.0
#define LOOM_PROGRESS_REDRAW_MS 100.0

typedef struct loom_progress loom_progress;

/* A display on `out` (normally stderr); a terminal when isatty says so.
 * quiet != 0 gives a display that never writes. NULL when out of memory
 * (every function accepts NULL and does nothing). */
loom_progress *loom_progress_new(FILE *out, int quiet);

/* Overrides the terminal detection (1 bar, 0 lines) and the interval
 * between plain lines (<= 0: a line for every update); for tests. */
void loom_progress_configure(loom_progress *p, int terminal,
                             double line_interval_ms);

/* Starts a thread that redraws the display about every 250 ms, so the
 * elapsed time and the periodic lines keep coming while one long step
 * (a search) runs. Stopped by loom_progress_finish / loom_progress_free.
 * Do not fork while it runs. No-op for a quiet display. */
void loom_progress_start_ticker(loom_progress *p);

/* Total work units (iterations over every run), for the estimate. */
void loom_progress_set_total(loom_progress *p, int64_t total);

/* Working on `label` (e.g. "case vlm-s, B"), iteration `iteration`
 * (0-based) of `n_iterations`, with `done` units finished overall. */
void loom_progress_update(loom_progress *p, const char *label,
                          int32_t iteration, int32_t n_iterations,
                          int64_t done);

/* A search inside the current iteration improved: best makespan so far
 * and evaluations spent. Shown with the next draw. */
void loom_progress_search(loom_progress *p, double best_makespan_ms,
                          int64_t evaluations);

/* Erases the bar from a terminal so other output can be printed on it;
 * the next draw shows it again. No-op for plain lines. */
void loom_progress_clear(loom_progress *p);

/* Ends the display: clears the bar on a terminal. */
void loom_progress_finish(loom_progress *p);

void loom_progress_free(loom_progress *p);

/* What one draw shows. */
typedef struct loom_progress_view {
    const char *label;
    int32_t iteration, n_iterations; /* n_iterations 0: not shown */
    int64_t done, total;             /* total 0: unknown */
    double elapsed_ms;
    double best_makespan_ms;         /* < 0: no search figure */
    int64_t evaluations;
} loom_progress_view;

/* Formats one status line (no newline) into buf; bar_width 0 gives the
 * plain form. Returns buf. Elapsed and estimate read "12.3 s", "3m05s" or
 * "1h02m"; the estimate is elapsed / done * (total - done). */
char *loom_progress_format(char *buf, size_t size,
                           const loom_progress_view *v, int bar_width);

/* "12.3 s", "3m05s", "1h02m" for a duration in ms. Returns buf. */
char *loom_progress_duration(char *buf, size_t size, double ms);

#endif
