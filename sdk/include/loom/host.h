/*
 * loom/host.h - the host API table passed to every plugin, and the
 * optional services a plugin looks up by name (simulator, evaluator,
 * cost model, graph builder).
 *
 * The table is size-prefixed and append-only: new members are added at the
 * end, so a plugin built against an older SDK keeps working. A plugin must
 * check `struct_size` before touching a member newer than the SDK version
 * it requires (LOOM_HOST_HAS(host, member)).
 *
 * Ownership: a loom_ctx belongs to the host; it is valid from the role's
 * create() until its destroy(). Strings returned by param_string() live as
 * long as the ctx.
 */
#ifndef LOOM_HOST_H
#define LOOM_HOST_H

#include <stdarg.h>
#include <loom/common.h>
#include <loom/problem.h>
#include <loom/graph.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque per-pipeline-step context: params, seed, budget, log prefix. */
typedef struct loom_ctx loom_ctx;

enum loom_log_level {
    LOOM_LOG_ERROR = 0,
    LOOM_LOG_WARN = 1,
    LOOM_LOG_INFO = 2,
    LOOM_LOG_DEBUG = 3
};

/* ---------------------------------------------------------------------- */
/* Services                                                                */
/* ---------------------------------------------------------------------- */

/* "loom.simulator" v1: the core event-driven simulator.
 * simulate() replays `sched` over `graph` and fills `out` (its optional
 * arrays when non-NULL). It uses `scratch`, created once and reused; no
 * allocation happens per call once the scratch has seen a graph this big.
 * Returns LOOM_EDEADLOCK naming the blocked stages when the orders cannot
 * run, LOOM_EINVAL when a stage is missing or scheduled twice. */
typedef struct loom_sim_scratch loom_sim_scratch;
#define LOOM_SERVICE_SIMULATOR "loom.simulator"
typedef struct loom_simulator_service {
    uint32_t struct_size;
    uint32_t version;
    loom_sim_scratch *(*scratch_new)(void);              /* caller frees */
    void (*scratch_free)(loom_sim_scratch *scratch);
    int (*simulate)(loom_sim_scratch *scratch, const loom_stage_graph *graph,
                    const loom_schedule *sched, loom_metrics *out,
                    loom_error *err);
} loom_simulator_service;

/* "loom.evaluator" v1: interleaver + memory tuner + simulator as one call,
 * the scoring function of every ranker. An evaluator is bound to one graph
 * and owned by the caller; create one per worker thread.
 * run(): `priorities` has one float per group (higher runs earlier);
 * the metrics' optional arrays are left NULL.
 * set_deadline() (present when struct_size covers it and non-NULL): the
 * host->now_ms() time by which the search wants its evaluations back; the
 * memory tuner sees it through host->budget_left_ms() and may stop
 * refining there (the ilp tuner returns its warm start). < 0 removes it.
 * It applies to every evaluator of the run: call it between batches, from
 * the thread that created them, and remove it before returning.
 * graph() (present when struct_size covers it and non-NULL): the graph
 * `ev` evaluates, read-only and valid until destroy(): the one given to
 * create(), or the one the host built from an outline
 * (LOOM_RANKER_READS_COUNTS), so that a counts-only ranker can read one
 * candidate's arrays at a time and never hold them all.
 * destroy() ends the caller's use of the evaluator. During the engine's
 * ranking the host may keep the one released last (its last run may
 * become the plan's) and destroys its interleaver and memory-tuner
 * instances later, from the engine's thread. */
typedef struct loom_evaluator loom_evaluator;
#define LOOM_SERVICE_EVALUATOR "loom.evaluator"
typedef struct loom_evaluator_service {
    uint32_t struct_size;
    uint32_t version;
    int (*create)(loom_ctx *ctx, const loom_stage_graph *graph,
                  loom_evaluator **out, loom_error *err);
    int (*run)(loom_evaluator *ev, const float *priorities,
               loom_metrics *out, loom_error *err);
    void (*destroy)(loom_evaluator *ev);
    void (*set_deadline)(loom_evaluator *ev, double deadline_ms);
    const loom_stage_graph *(*graph)(const loom_evaluator *ev); /* appended */
} loom_evaluator_service;

/* 1 when the evaluator service `ev_svc` has member `member` (non-NULL). */
#define LOOM_EVALUATOR_HAS(ev_svc, member)                                     \
    ((ev_svc) && (ev_svc)->struct_size >= offsetof(loom_evaluator_service, member) + \
                                               sizeof((ev_svc)->member) &&           \
     (ev_svc)->member)

/* "loom.partition_eval" v1: scores one partition as the engine would
 * plan it, for partitioners that judge a split by simulation. evaluate()
 * builds the stage graph of `part` for iteration `it` (the pipeline's
 * cost model; whole or split backward as the pipeline's interleaver
 * asks), runs the pipeline's evaluator on it once (interleaver, memory
 * tuner, simulator) with first-in-first-out priorities (group g gets
 * n_groups - g, the fifo ranker's) and fills *out (its optional arrays
 * left NULL). `part` is the caller's and is not kept; it needs the
 * samples of `it` assigned. Allocates the graph and an evaluator per
 * call. Errors as the engine's (a plugin's name its id). */
#define LOOM_SERVICE_PARTITION_EVAL "loom.partition_eval"
typedef struct loom_partition_eval_service {
    uint32_t struct_size;
    uint32_t version;
    int (*evaluate)(loom_ctx *ctx, const loom_iteration *it, const loom_partition *part,
                    loom_metrics *out, loom_error *err);
} loom_partition_eval_service;

/* "loom.cost" v1: the pipeline's cost model, for partitioners that need
 * estimates (time of a module for a given sample set). */
#define LOOM_SERVICE_COST "loom.cost"
struct loom_shape;
struct loom_layer_cost;
typedef struct loom_cost_service {
    uint32_t struct_size;
    uint32_t version;
    /* Cost of one layer for an explicit shape under a policy. */
    int (*layer)(loom_ctx *ctx, int32_t module, int32_t layer,
                 const struct loom_shape *shape, int32_t policy,
                 struct loom_layer_cost *out, loom_error *err);
    /* Shape that `module` sees for the samples of `it` whose microbatch
     * (sample.microbatch, or an even split into `microbatches` when the
     * workload gives none) is `microbatch`; microbatch -1 gives the mean
     * microbatch. `subs` divides it into sub-microbatches (>= 1). */
    int (*module_shape)(loom_ctx *ctx, int32_t module,
                        const loom_iteration *it, int32_t microbatches,
                        int32_t microbatch, int32_t subs,
                        struct loom_shape *out, loom_error *err);
    /* Forward + backward time (policy NONE) of one layer for the mean
     * microbatch of `it`: the estimate partitioners balance with. */
    int (*mean_layer_ms)(loom_ctx *ctx, int32_t module, int32_t layer,
                         const loom_iteration *it, int32_t microbatches,
                         double *ms, loom_error *err);
    /* (appended) Shape of the mean microbatch that `module` sees over
     * every iteration the run plans (loom_problem.iterations): each
     * iteration's mean shape (module_shape, microbatch -1, subs 1)
     * averaged, tokens rounded to nearest and sequences up, attention
     * work as the mean. A static split balances this one shape for the
     * whole run. `it` alone when the problem lists fewer than two
     * iterations. Check with LOOM_COST_HAS(cost, run_module_shape). */
    int (*run_module_shape)(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                            int32_t microbatches, struct loom_shape *out,
                            loom_error *err);
    /* (appended) Static bytes one GPU of a rank holds for `span` (its
     * layers' parameters, gradients and optimizer states, plus the share
     * of the module's embedding or head when the span holds its first or
     * last layer), under the problem's layouts: the figure the graph
     * builder charges a rank with, so a partitioner sizing stages against
     * the memory cap agrees with the memory tuner and the simulator
     * (docs/cost-models.md, "Rules above the layer"). A span's tp of 0 is
     * the problem's. Check with LOOM_COST_HAS(cost, span_static_bytes). */
    int (*span_static_bytes)(loom_ctx *ctx, const loom_span *span, int64_t *bytes,
                             loom_error *err);
} loom_cost_service;

/* 1 when the cost service table `cost` is non-NULL, long enough to hold
 * `member` and sets it. */
#define LOOM_COST_HAS(cost, member)                                            \
    ((cost) && (cost)->struct_size >= offsetof(loom_cost_service, member) +    \
                                          sizeof((cost)->member) &&            \
     (cost)->member)

/* ---------------------------------------------------------------------- */
/* The host API table                                                      */
/* ---------------------------------------------------------------------- */

typedef struct loom_host_api {
    uint32_t struct_size;  /* sizeof(loom_host_api) of the host */
    uint32_t abi_version;  /* LOOM_ABI_VERSION of the host */

    /* Memory. Blocks from alloc/realloc are freed with free(). */
    void *(*alloc)(size_t bytes);
    void *(*realloc)(void *ptr, size_t bytes);
    void (*free)(void *ptr);

    /* Logging, prefixed with the plugin id by the host. */
    void (*log)(loom_ctx *ctx, int level, const char *fmt, ...)
        LOOM_PRINTF(3, 4);

    /* Error reporting: fills `err` (code + formatted message) and returns
     * `code`, so `return host->error(err, LOOM_EINVAL, "...")` works. */
    int (*error)(loom_error *err, int code, const char *fmt, ...)
        LOOM_PRINTF(3, 4);

    /* Typed parameters, already validated against the manifest (type,
     * bounds, enum); a missing key returns the manifest default.
     * Returns LOOM_ENOTFOUND for a key the manifest does not declare.
     * Plugins read them through loom_params_read (<loom/params.h>). */
    int (*param_int)(loom_ctx *ctx, const char *key, int64_t *out);
    int (*param_double)(loom_ctx *ctx, const char *key, double *out);
    int (*param_bool)(loom_ctx *ctx, const char *key, int *out);
    const char *(*param_string)(loom_ctx *ctx, const char *key);

    /* Seeded RNG: seed() is the run's seed mixed with the step index;
     * rng_next() advances a caller-owned 64-bit state (splitmix64). */
    uint64_t (*seed)(loom_ctx *ctx);
    uint64_t (*rng_next)(uint64_t *state);

    /* Monotonic clock and time budget. budget_left_ms() is < 0 when the
     * run has no budget; expired() becomes 1 at the deadline or on SIGINT. */
    double (*now_ms)(void);
    double (*budget_left_ms)(loom_ctx *ctx);
    int (*expired)(loom_ctx *ctx);

    /* Optional services by name and minimum version; NULL when absent.
     * The returned table is static and never freed. */
    const void *(*service)(const char *name, uint32_t min_version);

    /* The problem being planned (immutable, host-owned). */
    const loom_problem *(*problem)(loom_ctx *ctx);

    /* Search progress: a ranker reports its best makespan so far and how
     * many candidates it evaluated; the host draws progress and records
     * the best-vs-time curve. Cheap; call it after every improvement. */
    void (*progress)(loom_ctx *ctx, double best_makespan_ms,
                     int64_t evaluations);

    /* The services of the run `ctx` belongs to, without a name look-up
     * (NULL when absent): the evaluator (this pipeline's interleaver,
     * memory tuner and simulator), the pipeline's cost model, and the
     * simulator. Static tables, never freed. Prefer the helpers
     * loom_host_evaluator / loom_host_cost / loom_host_simulator below,
     * which fall back to service() on an older host. */
    const loom_evaluator_service *(*evaluator)(loom_ctx *ctx);
    const loom_cost_service *(*cost)(loom_ctx *ctx);
    const loom_simulator_service *(*simulator)(loom_ctx *ctx);
} loom_host_api;

#define LOOM_HOST_HAS(host, member)                                            \
    ((host)->struct_size >= offsetof(loom_host_api, member) +                  \
                                sizeof(((loom_host_api *)0)->member))

/* The evaluator of ctx's run (host->evaluator, or the look-up by name on a
 * host older than that member); NULL when the host has none. */
static inline const loom_evaluator_service *
loom_host_evaluator(const loom_host_api *host, loom_ctx *ctx)
{
    if (LOOM_HOST_HAS(host, evaluator) && host->evaluator)
        return host->evaluator(ctx);
    return (const loom_evaluator_service *)host->service(LOOM_SERVICE_EVALUATOR, 1);
}

/* The cost model of ctx's run, as loom_host_evaluator. */
static inline const loom_cost_service *loom_host_cost(const loom_host_api *host, loom_ctx *ctx)
{
    if (LOOM_HOST_HAS(host, cost) && host->cost)
        return host->cost(ctx);
    return (const loom_cost_service *)host->service(LOOM_SERVICE_COST, 1);
}

/* The simulator, as loom_host_evaluator. */
static inline const loom_simulator_service *
loom_host_simulator(const loom_host_api *host, loom_ctx *ctx)
{
    if (LOOM_HOST_HAS(host, simulator) && host->simulator)
        return host->simulator(ctx);
    return (const loom_simulator_service *)host->service(LOOM_SERVICE_SIMULATOR, 1);
}

/* The partition evaluator of ctx's run (by name: it has no table member);
 * NULL when the host has none (an older host, a mock host without it, or
 * no plan running). */
static inline const loom_partition_eval_service *
loom_host_partition_eval(const loom_host_api *host)
{
    return (const loom_partition_eval_service *)host->service(LOOM_SERVICE_PARTITION_EVAL, 1);
}

/* ---------------------------------------------------------------------- */
/* Params                                                                  */
/* ---------------------------------------------------------------------- */

/* A plugin declares its params once, in a table, and reads them all with
 * loom_params_read() (<loom/params.h>), which checks each value against
 * the table; the param_* members above are what it calls. */

/* Checks a cost model's param element_bytes, the bytes of one element of
 * the training run: 2 (bf16, fp16) or 4 (fp32, TF32); any other value is
 * LOOM_EINVAL "<who>: param element_bytes: expected 2 (bf16, fp16) or 4
 * (fp32, TF32), found N". */
static inline int loom_check_element_bytes(const loom_host_api *host, const char *who,
                                           int64_t value, loom_error *err)
{
    if (value == 2 || value == 4)
        return LOOM_OK;
    return host->error(err, LOOM_EINVAL,
                       "%s: param element_bytes: expected 2 (bf16, fp16) or 4 (fp32, TF32), "
                       "found %lld", who, (long long)value);
}

#ifdef __cplusplus
}
#endif
#endif
