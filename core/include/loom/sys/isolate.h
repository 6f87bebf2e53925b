/*
 * loom/sys/isolate.h - fault isolation for planning runs.
 *
 * A planning run (one manifest over one problem, every iteration) can run
 * in a forked child: the child opens the session, plans each iteration and
 * sends fixed-size, checksummed records over a pipe; the parent enforces a
 * wall-clock limit per iteration and an address-space limit, and turns a
 * crash, an abort, a timeout, an exhausted limit or garbage on the pipe
 * into a loom_failure naming the plugin that was running (from
 * loom_channel_step_marker), the signal or limit and the iteration. Without
 * isolation the same code runs in-process, with no limits.
 *
 * The child runs in a process group of its own and dies with the parent
 * (PR_SET_PDEATHSIG). The parent stops reading at the END record (a
 * process a plugin forked may keep the pipe open), notices the child's end
 * without waiting for end of file, and on every way out - END, a failure,
 * a timeout, an error, SIGINT - kills the child's whole process group and
 * reaps the child, so nothing the run started outlives it. While a child
 * runs, the parent handles SIGINT, SIGTERM and SIGHUP (those not ignored):
 * the first SIGINT is passed on to the child's group when the caller
 * handles SIGINT (Ctrl-C reaches the child as if it shared the terminal's
 * group); a second SIGINT, SIGTERM and SIGHUP kill the child's group and
 * reap the child before the caller's handler or the default action runs.
 * exit() called in the child ends it at once with that status (an `exit`
 * failure), without the parent's exit handlers. One isolated run at a time
 * per process.
 *
 * Ownership: loom_run_output owns its results array; release it with
 * loom_run_output_clear. Session arguments are borrowed.
 * Units: milliseconds, bytes, MiB where the name says so.
 *
 * Layer: run (core/run).
 */
#ifndef LOOM_SYS_ISOLATE_H
#define LOOM_SYS_ISOLATE_H

#include <stddef.h>
#include <loom/sys/planner.h>
#include <loom/sys/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Defaults of the CLI options --timeout-ms and --memory-limit-mb. */
#define LOOM_ISOLATE_DEFAULT_TIMEOUT_MS 60000.0
#define LOOM_ISOLATE_DEFAULT_MEMORY_MB 8192
/* Grace added to a manifest's budget_ms: with a budget the iteration
 * limit is budget + max(LOOM_ISOLATE_GRACE_MS, budget). */
#define LOOM_ISOLATE_GRACE_MS 5000.0

/* How a run failed. */
enum loom_fail_kind {
    LOOM_FAIL_NONE = 0,
    LOOM_FAIL_STATUS = 1,  /* the engine returned an error status */
    LOOM_FAIL_SIGNAL = 2,  /* the child was killed by a signal */
    LOOM_FAIL_TIMEOUT = 3, /* an iteration passed its wall-clock limit */
    LOOM_FAIL_MEMORY = 4,  /* out of memory under the address-space limit */
    LOOM_FAIL_GARBAGE = 5, /* a malformed record arrived on the pipe */
    LOOM_FAIL_EXIT = 6     /* the child exited before finishing */
};

/* When a run failed. */
enum loom_fail_phase {
    LOOM_PHASE_OPEN = 0,      /* opening the session (loading plugins) */
    LOOM_PHASE_ITERATION = 1, /* planning `iteration` */
    LOOM_PHASE_AFTER = 2      /* after `iteration` finished (between
                                 iterations or closing the session) */
};

/* What went wrong, where and when. */
typedef struct loom_failure {
    int kind;             /* enum loom_fail_kind */
    int status;           /* loom_status (STATUS, MEMORY; EPLUGIN otherwise) */
    int signal;           /* SIGNAL: the signal number */
    int exit_code;        /* EXIT: the child's exit status */
    double limit_ms;      /* TIMEOUT: the limit that passed */
    int64_t limit_mb;     /* MEMORY: the address-space limit, 0 none */
    int32_t phase;        /* enum loom_fail_phase */
    int32_t iteration;    /* see phase; -1 while opening */
    int32_t step;         /* pipeline step whose plugin ran; -1 core */
    char plugin_id[128];  /* that step's plugin id; "" for the core */
    char message[LOOM_ERROR_MSG_BYTES]; /* the engine's message, or "" */
    int32_t last_step;    /* step == -1: the last step whose plugin ran, or -1 */
    char last_plugin_id[128]; /* its plugin id, or "" */
} loom_failure;

/* One planned iteration's figures. */
typedef struct loom_iter_result {
    int32_t iteration;      /* index in the run's workload */
    int32_t ranks;
    int32_t cap_violations;
    int32_t reserved;
    double makespan_ms;
    double bubble_ratio;
    double mfu;             /* < 0 unknown */
    double plan_time_ms;
    int64_t peak_bytes;     /* max over ranks */
    int64_t evaluations;
} loom_iter_result;

/* Limits of a run. The wall-clock limit of an iteration is timeout_ms
 * without a search budget (loom_isolate_search_budget_ms); with one it is
 * budget + grace, lowered to timeout_ms when timeout_given. Opening the session and the
 * time between iterations are limited by timeout_ms. */
typedef struct loom_isolate_opts {
    int isolate;             /* 1: fork a child; 0: run in this process */
    double timeout_ms;       /* see above; <= 0: none */
    int64_t memory_limit_mb; /* RLIMIT_AS of the child; <= 0: none */
    int timeout_given;       /* 1: timeout_ms also caps a budget's limit */
    int keep_stdout;         /* 1: the child writes to stdout; 0: its
                                stdout goes to stderr */
} loom_isolate_opts;

/* Everything a run produced. */
typedef struct loom_run_output {
    loom_iter_result *results; /* n_results entries, in iteration order */
    int32_t n_results;
    int32_t n_iterations;      /* iterations the run meant to plan */
    char manifest_name[128];   /* the pipeline's name ("" if never opened) */
    int32_t body_status;       /* what the body returned (0 when it never
                                  finished) */
    loom_failure failure;      /* kind LOOM_FAIL_NONE when all went well */
} loom_run_output;

/* Called when an iteration starts (done = 0) and ends (done = 1), and
 * about every 250 ms while an isolated child works (done = 2, with the
 * current iteration or -1); for progress displays. */
typedef void (*loom_iter_fn)(void *user, int32_t iteration,
                             int32_t n_iterations, int done);

/* Child side of a run: records go to the parent through this channel. */
typedef struct loom_channel loom_channel;

/* Body of a run, executed in the child (or in-process). Reports through
 * the loom_channel_* calls below; its return value ends up in
 * loom_run_output.body_status. */
typedef int (*loom_isolate_body)(void *user, loom_channel *ch);

/* Where the running pipeline step's index goes during the body: shared
 * memory the parent reads when a child crashes or hangs, so it can name
 * the plugin. A body that opens a session passes it as
 * loom_session_args.step_marker. */
LOOM_EXPORT volatile int32_t *loom_channel_step_marker(loom_channel *ch);

/* Where the last step whose plugin began running goes (it stays when the
 * plugin returns): loom_session_args.last_step_marker. When the child then
 * dies in core code, the failure names that plugin as the likely cause
 * (loom_failure.last_plugin_id). */
LOOM_EXPORT volatile int32_t *loom_channel_last_step_marker(loom_channel *ch);

/* Announces the run: iterations to plan and the manifest's name. */
LOOM_EXPORT int loom_channel_info(loom_channel *ch, int32_t n_iterations,
                      const char *manifest_name);
/* Announces pipeline step `step` and its plugin id. */
LOOM_EXPORT int loom_channel_step(loom_channel *ch, int32_t step, const char *plugin_id);
/* Iteration `iteration` starts now; it may take `limit_ms` (<= 0: the
 * run's timeout). */
LOOM_EXPORT int loom_channel_begin(loom_channel *ch, int32_t iteration, double limit_ms);
/* The current iteration finished with these figures. */
LOOM_EXPORT int loom_channel_result(loom_channel *ch, const loom_iter_result *r);
/* The run failed with `status` at `iteration` (-1: while opening). */
LOOM_EXPORT int loom_channel_fail(loom_channel *ch, int32_t iteration, int status,
                      const char *message);

/* Runs `body` under `opts` and collects its records into *out (zeroed
 * first; clear it with loom_run_output_clear). The child flushes every
 * stdio stream before its END record. Returns LOOM_OK when the
 * run was carried out, whether or not it failed (see out->failure);
 * LOOM_EIO / LOOM_ENOMEM when the child could not be started;
 * LOOM_EINTERRUPTED when SIGINT arrived (loom_interrupted) and the child
 * was stopped. */
LOOM_EXPORT int loom_isolate_call(const loom_isolate_opts *opts, loom_isolate_body body,
                      void *user, loom_iter_fn on_iter, void *iter_user,
                      loom_run_output *out, loom_error *err);

/* Opens a session from `args`, plans every iteration and closes it, under
 * `opts` (loom_isolate_call with the planning body). The steps are
 * announced before any plugin code runs, so a plugin failing in its
 * constructor, init or create is named too; args->on_step is called as
 * well, and in-process args->step_marker (when set) is the one marked. */
LOOM_EXPORT int loom_isolate_plan(const loom_session_args *args,
                      const loom_isolate_opts *opts, loom_iter_fn on_iter,
                      void *iter_user, loom_run_output *out, loom_error *err);

/* Frees the results and zeroes *out (NULL allowed). */
LOOM_EXPORT void loom_run_output_clear(loom_run_output *out);

/* The wall-clock limit of one iteration under opts for a search budget
 * (0: none); see loom_isolate_opts. */
LOOM_EXPORT double loom_isolate_iteration_limit(const loom_isolate_opts *opts, double budget_ms);

/* The time a search may take per iteration: the manifest's budget_ms,
 * else the ranker's own "budget_ms" param (the convention of searching
 * rankers such as mcts, exhaustive, random), else 0. */
LOOM_EXPORT double loom_isolate_search_budget_ms(const loom_pipeline *pl);

/* One line describing a failure, e.g. "plugin fixture.crash-rank
 * (pipeline[2]) was killed by signal 11 (SIGSEGV) at iteration 2". */
LOOM_EXPORT void loom_failure_describe(const loom_failure *f, char *buf, size_t size);

/* Short name of a failure kind: "status", "signal", "timeout", "memory",
 * "garbage", "exit" ("none"). */
LOOM_EXPORT const char *loom_fail_kind_name(int kind);

/* "SIGSEGV" etc., or "signal N" in buf for others. */
LOOM_EXPORT const char *loom_signal_name(int sig, char *buf, size_t size);

/* The status a failure maps to for exit codes: the engine's status for
 * STATUS, LOOM_OK for NONE and LOOM_EPLUGIN for everything the isolation
 * caught (a crash, a timeout, the memory limit, garbage, an early exit):
 * those are plugin failures. */
LOOM_EXPORT int loom_failure_status(const loom_failure *f);

#ifdef __cplusplus
}
#endif

#endif
