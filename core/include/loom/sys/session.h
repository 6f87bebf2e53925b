/*
 * loom/sys/session.h - one planning run: a planner manifest's pipeline plus a
 * problem (model + cluster + parallel config + workload, or a stage-times
 * problem). Shared by `loom plan`, `loom ab` and the C API.
 *
 * Ownership: the session owns everything it loads; loom_session_close
 * releases it. Strings in loom_session_args are borrowed.
 *
 * Layer: run (core/run).
 */
#ifndef LOOM_SYS_SESSION_H
#define LOOM_SYS_SESSION_H

#include <stddef.h>
#include <loom/loom.h>
#include <loom/sys/plan.h>
#include <loom/sys/planner.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_SESSION_MAX_OVERRIDES 64

typedef struct loom_session_args {
    const char *manifest;    /* NULL: the default megatron-1f1b manifest */
    const char *model;       /* preset or file; NULL: vlm-s */
    const char *cluster;     /* preset or file; NULL: h800 */
    const char *parallel;    /* "tp=..,pp=.." over the model's own */
    const char *workload;    /* JSON Lines file */
    const char *generate;    /* generator family; NULL: the model's */
    const char *stage_times; /* stage-times problem file */
    int32_t iterations;      /* 0: default (4 generated; all of a file) */
    int has_seed;
    uint64_t seed;
    double memory_cap_bytes; /* 0: manifest's, else the GPU's HBM */
    int64_t max_evaluations; /* > 0: deterministic mode, --evaluations N
                              * (overrides the manifest's) */
    int64_t default_max_evaluations; /* > 0: deterministic mode when neither
                                      * max_evaluations nor the manifest sets
                                      * one (`loom ab`'s default) */
    const char *uses[LOOM_SESSION_MAX_OVERRIDES];
    int n_uses;
    const char *params[LOOM_SESSION_MAX_OVERRIDES];
    int n_params;
    const char *plugin_paths[LOOM_SESSION_MAX_OVERRIDES];
    int n_plugin_paths;
    int no_workload;         /* 1: the caller supplies iterations (C API) */
    int allow_untrusted;     /* 1: --allow-untrusted-plugins (core/host/trust.h) */
    volatile int32_t *step_marker; /* where the running step's index goes, or
                                    * NULL (loom_channel_step_marker); set
                                    * from loading the plugins on */
    /* Called with each pipeline step's plugin id before any plugin code
     * runs (loom_pipeline_hooks.on_step); NULL: not called. */
    void (*on_step)(void *user, int32_t step, const char *plugin_id);
    void *on_step_user;
    volatile int32_t *last_step_marker; /* where the index of the last step
                                         * whose plugin began running goes
                                         * (stays when it returns), or NULL
                                         * (loom_channel_last_step_marker) */
    int32_t packing_window;  /* --packing-window: a generated workload packs
                              * first-fit over this many samples drawn
                              * ahead; 0: next-fit (loom_workload_packing) */
    /* Appended: the global batch in samples (sequences) per iteration,
     * --global-batch; 0: micro_batch_size x microbatches x dp. With it
     * the microbatches per replica are derived (B / (K dp)) unless the
     * parallel config names them, and then B must equal K x M x dp. */
    int64_t global_batch;
    /* Appended: sequences per microbatch K, --micro-batch-size (0: 1), and
     * tokens per sequence, --seq-len (0: LOOM_DEFAULT_SEQUENCE_TOKENS); a
     * generated workload packs each microbatch into K x seq_len tokens. */
    int32_t micro_batch_size;
    int32_t seq_len;
} loom_session_args;

/* ---- sessions --------------------------------------------------------- */

struct loom_planner_config;

/* A planning session: the manifest, its plugins, the problem and the
 * workload, opened from loom_session_args. Opaque; loom_session_open
 * allocates it, loom_session_close frees it, and loom_session_info tells
 * what it holds. */
typedef struct loom_session loom_session;

/* What an open session holds, borrowed from it until loom_session_close.
 * `problem` may be changed between plans (a calibration tool points
 * problem->cluster at its own copy of the cluster; the pointee must
 * outlive the session's use of it). */
typedef struct loom_session_info {
    loom_problem *problem;
    int32_t n_iterations;        /* iterations of the workload (1 for stage times) */
    const char *manifest_name;   /* the planner manifest's "name" */
    const struct loom_planner_config *config; /* the manifest's pipeline steps */
    const struct loom_pipeline *pipeline;     /* the loaded steps, for their plugin ids */
    int64_t global_batch;        /* samples per iteration of a model problem, else 0 */
    int32_t micro_batch_size;    /* sequences per microbatch (model problems) */
    int32_t seq_len;             /* tokens per sequence (model problems) */
    const char *workload_desc;   /* the workload in one line ("" for stage times) */
} loom_session_info;

LOOM_EXPORT void loom_session_args_init(loom_session_args *a);

/* One problem/manifest option every planning command shares: its long
 * name without "--" and whether it takes a value. */
typedef struct loom_session_option {
    const char *name;
    int takes_value;
} loom_session_option;

/* The shared options (static storage), ended by an entry whose name is
 * NULL: manifest, model, cluster, parallel, workload, generate,
 * packing-window, stage-times, memory-cap, iterations, seed, evaluations,
 * use, param,
 * plugin-path (repeatable, as use and param) and allow-untrusted-plugins. */
LOOM_EXPORT const loom_session_option *loom_session_options(void);

/* Sets option `name` (without "--") to `value` (NULL for an option that
 * takes none; borrowed, must outlive `a`). LOOM_EINVAL with a message
 * naming the flag ("--iterations: expected an integer in [1, 100000],
 * found 'x'") when the value is malformed, LOOM_ENOTFOUND when `name` is
 * not one of loom_session_options(). */
LOOM_EXPORT int loom_session_args_set(loom_session_args *a, const char *name, const char *value,
                                      loom_error *err);

/* Loads the manifest, the plugins and the problem into a new session,
 * *out (the caller's, freed by loom_session_close). On failure *out is
 * NULL and nothing is left allocated. */
LOOM_EXPORT int loom_session_open(loom_session **out, const loom_session_args *a,
                                  loom_error *err);

/* Fills *info with what the open session s holds (borrowed pointers). */
LOOM_EXPORT void loom_session_info_get(loom_session *s, loom_session_info *info);

/* The problem of the open session s (loom_session_info's, borrowed). */
static inline loom_problem *loom_session_problem(loom_session *s)
{
    loom_session_info info;
    loom_session_info_get(s, &info);
    return info.problem;
}

/* 1 when the session's tensor-parallel degree spans several nodes of its
 * cluster (tp above gpus_per_node), with the reason in buf: every layer's
 * all-reduce then crosses the inter-node network. 0 otherwise. */
LOOM_EXPORT int loom_session_tp_warning(const loom_session *s, char *buf, size_t size);

/* Plans iteration k (0 <= k < n_iterations; ignored for stage-times). A
 * plan holding a number that is not finite (a metric, a stage's times, a
 * transfer, the memory cap, a priority) is refused: LOOM_EINVAL naming the
 * first such value, the plan cleared. With
 * "choose": "run" the first call also picks the run's candidate: every
 * iteration planned with each candidate in turn, the least total makespan
 * among those that fit the memory cap in every iteration
 * (docs/manifest.md); every plan then uses it. */
LOOM_EXPORT int loom_session_plan(loom_session *s, int32_t k, loom_plan *plan, loom_error *err);

/* Calls fn(user, elapsed_ms, best_makespan_ms, evaluations) whenever the
 * session's ranker reports progress (from the ranker's threads; fn must be
 * thread-safe). fn NULL: none. */
LOOM_EXPORT void loom_session_set_progress(loom_session *s, loom_progress_fn fn, void *user);

/* The best-makespan-against-time curve of the session's last plan: the
 * count, and *points borrowed until the next plan or close. */
LOOM_EXPORT int32_t loom_session_progress_curve(const loom_session *s,
                                                const loom_progress_point **points);

/* Prices layer `layer` of module `module` for `shape` under memory policy
 * `policy` with the session's cost model, as the graph builder does, for
 * the session's problem as it stands (a calibration tool may point the
 * problem's cluster at its own copy between calls, loom_session_info; the
 * pointee must outlive the call). *out is initialised here. LOOM_EINVAL
 * for a stage-times session or a layer the model lacks; the cost model's
 * own errors are prefixed with its plugin id. */
LOOM_EXPORT int loom_session_layer_cost(loom_session *s, int32_t module, int32_t layer,
                                        const loom_shape *shape, int32_t policy,
                                        loom_layer_cost *out, loom_error *err);

/* What a layout costs at least (loom_session_floor), per pipeline replica
 * at the session's parallel config, priced by its cost model under memory
 * policy none before anything is partitioned or simulated. Times leave
 * out the exposed TP communication another stage may fill. Owned arrays:
 * loom_layout_floor_clear frees them. */
typedef struct loom_layout_floor {
    double work_ms;   /* compute of every layer over the iteration's M
                       * microbatches, each priced at the mean microbatch
                       * shape (no more than the sum over the microbatches
                       * themselves for a cost convex in the shape) */
    double chain_ms;  /* forward + backward of every layer at the
                       * smallest microbatch (component-wise) */
    double flops;     /* model FLOPs of the M mean microbatches */
    double param_bytes; /* every layer's weights and embeddings, per GPU
                         * of a TP group, summed over all layers */
    double state_bytes; /* their gradients and optimizer states */
    /* Per GPU set (the top-level layout's pp ranks, each disjoint module's
     * positions; a colocated module counts in the set it shares), with
     * every module priced at its own layout: the largest work per rank of
     * a set, and the static bytes per rank of the set with the most (its
     * mean over the set's ranks). A single layout has one set:
     * work_ms / pp and param_bytes / pp, state_bytes / pp. */
    double set_work_ms;
    double set_param_bytes, set_state_bytes;
    int32_t n_layers;   /* layers of every module, in module order */
    double *layer_work_ms; /* per layer: its part of work_ms */
    double *layer_head_ms; /* per layer: forward at the smallest microbatch */
} loom_layout_floor;

/* Prices iteration k of the session's workload into *f (see
 * loom_layout_floor). LOOM_EINVAL for a stage-times session; the cost
 * model's errors as loom_session_layer_cost. */
LOOM_EXPORT int loom_session_floor(loom_session *s, int32_t k, loom_layout_floor *f,
                                   loom_error *err);
LOOM_EXPORT void loom_layout_floor_clear(loom_layout_floor *f);

/* Closes the session's plugins and frees everything it holds, s itself
 * included; NULL: nothing. */
LOOM_EXPORT void loom_session_close(loom_session *s);

#ifdef __cplusplus
}
#endif

#endif
