/*
 * oobleck.h - Oobleck's planning algorithms (dissertation chapter 2):
 * node specification (§2.4.1.1), the divide-and-conquer GPU-stage mapping
 * of pipeline templates (§2.4.1.2), the coin-change enumeration of
 * instantiation plans (§2.4.2.1, Eq. 2.5), batch distribution (§2.4.2.2,
 * Eq. 2.6) and reinstantiation after node failures (§2.5).
 *
 * oobleck.c and oobleck_plan.c use only the C library (and POSIX threads,
 * oobleck.c for loom_oobleck_planner_set_threads), so the plugins
 * oobleck-templates and oobleck-instantiate compile the same files (one
 * implementation, no core symbols reached); oobleck_replan.c is core only.
 *
 * Ownership: every *_new / filled result owns heap memory freed by the
 * matching *_free / *_clear. Input arrays are borrowed for the call.
 * Units: milliseconds; nodes and GPUs are counts.
 */
#ifndef LOOM_OOBLECK_H
#define LOOM_OOBLECK_H

#include <loom/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bounds the planner checks before allocating. */
#define LOOM_OOBLECK_MAX_LAYERS 1024
#define LOOM_OOBLECK_MAX_NODES 4096
#define LOOM_OOBLECK_MAX_GPUS_PER_NODE 64
#define LOOM_OOBLECK_MAX_MICROBATCHES 1000000
/* Layer splits the divide and conquer may evaluate (loom_oobleck_work, an
 * upper bound of the splits its fill considers; many are skipped by their
 * lower bounds). At the bound, measured with tools/bench/replan_bounds.sh
 * on a shared 2-core machine (wall seconds): 8-GPU nodes with templates of
 * up to 8 nodes (96 to 111 layers) 2.2-2.9 s, 64-GPU nodes (45 layers)
 * 8.5 s, 32 nodes of 8 GPUs (72 layers) 8.2 s; up to twice that when the
 * machine is loaded. The dissertation's 96 layers on up to 8 nodes of 8
 * GPUs need 1.6e9 (2.2 s). */
#define LOOM_OOBLECK_MAX_WORK ((int64_t)1 << 31)
/* Instantiation plans an uncapped enumeration may list, and the steps of
 * distributing the batch over every plan (plans * templates *
 * microbatches, about 10 s at most). */
#define LOOM_OOBLECK_MAX_PLANS (1 << 22)
#define LOOM_OOBLECK_MAX_PLAN_WORK ((int64_t)1 << 31)

/* Profiled per-layer costs F_{l,d} and B_{l,d}: layer l on d GPUs of one
 * node (tensor parallel), d = 1..max_gpus. Entry (d-1)*n_layers + l;
 * a negative or non-finite entry marks d as unusable for that layer. */
typedef struct loom_oobleck_costs {
    int32_t n_layers;
    int32_t max_gpus;          /* d ranges over 1..max_gpus */
    const double *forward_ms;  /* max_gpus * n_layers entries */
    const double *backward_ms; /* max_gpus * n_layers entries */
} loom_oobleck_costs;

/* One stage of a pipeline template. */
typedef struct loom_oobleck_stage {
    int32_t first_layer, n_layers;
    int32_t gpus;       /* d: GPUs of this stage, all in one node */
    int32_t node;       /* node of the pipeline (0-based) holding the GPUs */
    int32_t first_gpu;  /* first GPU of the stage within that node */
    double cost_ms;     /* F + B of the stage for one microbatch */
} loom_oobleck_stage;

/* A pipeline template: the best layout of the model on `nodes` nodes. */
typedef struct loom_oobleck_template {
    int32_t nodes;
    int32_t n_stages;             /* S */
    loom_oobleck_stage *stages;   /* n_stages entries, owned */
    int32_t slowest;              /* k*: index of the slowest stage */
    double t1_ms, t3_ms;          /* Eq. 2.1 / 2.3 terms */
    double slowest_ms;            /* F + B of stage k* */
    double iteration_ms;          /* T1 + T2 + T3 with N_b = 4S */
} loom_oobleck_template;

/* Releases a template's stages and zeroes it. */
void loom_oobleck_template_clear(loom_oobleck_template *t);

/* Time of the template's pipeline for `microbatches` microbatches:
 * T1 + T3 + (N_b - S + k* - 1) * c_{k*} (Eqs. 2.1-2.3 at N_b), 0 for 0. */
double loom_oobleck_template_time_ms(const loom_oobleck_template *t,
                                     int32_t microbatches);

/* ---- node specification (§2.4.1.1) ------------------------------------ */

/* Template node counts for N nodes, fault tolerance f and the smallest
 * node count n0 that holds one model copy: [n0, N - f*n0]. LOOM_EINFEASIBLE
 * when N < (f+1)*n0; LOOM_EINVAL for non-positive arguments. */
int loom_oobleck_node_spec(int32_t nodes, int32_t f, int32_t n0,
                           int32_t *first, int32_t *last, loom_error *err);

/* ---- divide and conquer (§2.4.1.2) -------------------------------------- */

typedef struct loom_oobleck_planner loom_oobleck_planner;

/* Creates a planner for the costs (copied) and `gpus_per_node` GPUs per
 * node. pow2_gpus: a stage may only use a power-of-two GPU count. The memo
 * of sub-results is kept across loom_oobleck_plan_template calls. */
int loom_oobleck_planner_new(const loom_oobleck_costs *costs,
                             int32_t gpus_per_node, int pow2_gpus,
                             loom_oobleck_planner **out, loom_error *err);
void loom_oobleck_planner_free(loom_oobleck_planner *p);

/* Fills each stage count's memo blocks on up to `threads` threads (1 to 8,
 * clamped; 1 when the planner is created). Results, memo counts and errors
 * do not depend on it: blocks of one stage count are independent. */
void loom_oobleck_planner_set_threads(loom_oobleck_planner *p, int32_t threads);

/* Best template on `nodes` nodes: every S in [nodes, min(L, nodes*M)]
 * (capped by max_stages when > 0) is planned by the divide and conquer
 * T(S, 0, L, nodes*M); the S whose time at a common N_b = 4*S_max is
 * lowest wins (ties: fewer stages). LOOM_EINFEASIBLE when no layout exists
 * (e.g. more nodes than layers). *out is filled (clear it after use). */
int loom_oobleck_plan_template(loom_oobleck_planner *p, int32_t nodes,
                               int32_t max_stages, loom_oobleck_template *out,
                               loom_error *err);

/* Upper bound, computed in O(max_nodes * L) without planning, of the layer
 * splits the divide and conquer evaluates for every template on 1 to
 * max_nodes nodes (S up to min(L, nodes * M, max_stages when > 0)),
 * INT64_MAX when it does not fit. */
int64_t loom_oobleck_work(int32_t n_layers, int32_t gpus_per_node,
                          int32_t max_nodes, int32_t max_stages);

/* LOOM_EINVAL naming the estimate and LOOM_OOBLECK_MAX_WORK when
 * loom_oobleck_work exceeds the bound. loom_oobleck_plan_template checks
 * it before planning; callers check the largest template up front to
 * refuse a job before any planning. */
int loom_oobleck_check_work(int32_t n_layers, int32_t gpus_per_node,
                            int32_t max_nodes, int32_t max_stages,
                            loom_error *err);

/* The divide and conquer for one fixed stage count S (Eqs. 2.1-2.4). */
int loom_oobleck_plan_stages(loom_oobleck_planner *p, int32_t nodes,
                             int32_t stages, loom_oobleck_template *out,
                             loom_error *err);

/* Memoised sub-results so far (cells filled) and how many sub-results were
 * read from the memo (or whole blocks found filled). The memo is dense per
 * (stage count, devices) pair, at most 2 GiB in all. */
int64_t loom_oobleck_memo_entries(const loom_oobleck_planner *p);
int64_t loom_oobleck_memo_hits(const loom_oobleck_planner *p);

/* ---- instantiation (§2.4.2, oobleck_plan.c) ------------------------------ */

/* Every X with sum x_j * sizes[j] = nodes and sum x_j >= f + 1 (Eq. 2.5,
 * in the order of the recurrence's list concatenation), at most max_plans
 * of them (max_plans <= 0: no cap). *plans_out holds *n_out rows of
 * n_sizes counts (caller frees); *truncated is 1 when the cap cut the list. */
/* Combinations of the template sizes summing to `nodes`, without the f+1
 * floor: an upper bound of what loom_oobleck_enumerate lists, computed in
 * O(n_sizes * nodes) (saturates near INT64_MAX / 4). */
int64_t loom_oobleck_plan_count(const int32_t *sizes, int32_t n_sizes, int32_t nodes);

/* With max_plans <= 0, more than LOOM_OOBLECK_MAX_PLANS combinations is
 * LOOM_EINVAL (checked before enumerating). */
int loom_oobleck_enumerate(const int32_t *sizes, int32_t n_sizes,
                           int32_t nodes, int32_t f, int32_t max_plans,
                           int32_t **plans_out, int32_t *n_out,
                           int *truncated, loom_error *err);

/* Time of one pipeline built from template `index` when it processes
 * `microbatches` microbatches; must not decrease as microbatches grow. */
typedef double (*loom_oobleck_time_fn)(void *user, int32_t index,
                                       int32_t microbatches);

/* Linear time user data for loom_oobleck_linear_time: per-microbatch
 * milliseconds of every template (the paper's N_b * T_i model). */
double loom_oobleck_linear_time(void *per_mb_ms, int32_t index,
                                int32_t microbatches);

/* Batch distribution (Eq. 2.6) over sum_j x_j pipelines: every pipeline
 * gets >= 1 microbatch and all of them together get `microbatches`.
 * Pipelines built from one template are interchangeable, so template j's
 * share mb[j] is spread as evenly as possible over its x_j pipelines
 * (loom_oobleck_share). Minimises the slowest pipeline, then the sum of
 * squared pipeline times (the paper's variance objective, among the
 * fastest splits); exact for non-decreasing convex time functions.
 * LOOM_EINFEASIBLE when microbatches < sum x_j (*recommended is then that
 * sum). mb has n entries (0 where x_j == 0); *iteration_ms is the slowest
 * pipeline's time. */
int loom_oobleck_distribute(const int32_t *x, int32_t n,
                            loom_oobleck_time_fn time_fn, void *user,
                            int32_t microbatches, int32_t *mb,
                            double *iteration_ms, int32_t *recommended,
                            loom_error *err);

/* Microbatches of pipeline k (0-based) among the x pipelines of a template
 * whose share is `total`: total / x, plus one for the first total % x. */
int32_t loom_oobleck_share(int32_t total, int32_t x, int32_t k);

/* The fastest feasible plan for `nodes` nodes. */
typedef struct loom_oobleck_choice {
    int32_t n_sizes;
    int32_t *x;             /* pipelines per template (owned) */
    int32_t *mb;            /* microbatches of all pipelines of a template */
    double iteration_ms;    /* slowest pipeline of the plan */
    int32_t plans;          /* feasible plans compared */
    int32_t plan_index;     /* index of the winner in enumeration order */
    int32_t recommended;    /* when no plan splits: nearest total, else 0 */
} loom_oobleck_choice;

/* Enumerates plans (loom_oobleck_enumerate), distributes the batch over
 * each and keeps the lowest iteration time (= highest throughput; ties:
 * the earlier plan). LOOM_EINFEASIBLE when no plan exists or none can
 * split the batch (then out->recommended names a total that can). More
 * than LOOM_OOBLECK_MAX_PLAN_WORK steps (loom_oobleck_plan_count, at most
 * max_plans when > 0, times templates times microbatches) is LOOM_EINVAL,
 * checked before enumerating. */
int loom_oobleck_choose(const int32_t *sizes, int32_t n_sizes,
                        loom_oobleck_time_fn time_fn, void *user,
                        int32_t nodes, int32_t f, int32_t microbatches,
                        int32_t max_plans, loom_oobleck_choice *out,
                        loom_error *err);
void loom_oobleck_choice_clear(loom_oobleck_choice *c);

/* ---- reinstantiation after failures (§2.5, oobleck_replan.c) ------------ */

/* A running pipeline: the template it uses and its nodes in order. */
typedef struct loom_oobleck_pipeline {
    int32_t template_index;   /* into the template array */
    int32_t n_nodes;
    int32_t *nodes;           /* global node ids, n_nodes entries (owned) */
    int32_t microbatches;     /* N_b of this pipeline */
} loom_oobleck_pipeline;

enum loom_oobleck_action {
    LOOM_OOBLECK_KEEP = 0,          /* untouched by the failure */
    LOOM_OOBLECK_REINSTANTIATE = 1, /* smaller template, own nodes */
    LOOM_OOBLECK_BORROW = 2,        /* took nodes from other pipelines */
    LOOM_OOBLECK_LEND = 3,          /* gave nodes away, smaller template */
    LOOM_OOBLECK_MERGE = 4,         /* merged with other pipelines */
    LOOM_OOBLECK_REPLAN = 5         /* built by a full re-instantiation */
};

/* One layer a node must fetch from a surviving replica. */
typedef struct loom_oobleck_copy {
    int32_t layer;
    int32_t to_node;
    int32_t from_node;
} loom_oobleck_copy;

/* Templates plus the running pipelines: the state replanning starts from. */
typedef struct loom_oobleck_state {
    int32_t f;
    int32_t n_layers;
    int32_t n_templates;
    loom_oobleck_template *templates; /* ascending consecutive node counts */
    int32_t n_pipelines;
    loom_oobleck_pipeline *pipelines;
    int32_t microbatches;             /* global batch in microbatches */
} loom_oobleck_state;

/* What replanning did. */
typedef struct loom_oobleck_replan {
    loom_oobleck_state next;          /* the new pipelines (templates shared
                                         with the input: do not clear them) */
    int32_t *actions;                 /* per new pipeline, enum above */
    int32_t n_copies;
    loom_oobleck_copy *copies;        /* layer copies, by destination node */
    double iteration_ms;              /* after batch redistribution */
    int32_t full_replan;              /* 1: local repair impossible */
} loom_oobleck_replan;

/* Instantiates the best plan (loom_oobleck_choose over the templates'
 * times) on nodes 0..nodes-1 into st->pipelines (templates borrowed). */
int loom_oobleck_instantiate(loom_oobleck_state *st, int32_t nodes,
                             loom_error *err);

/* Removes `failed` nodes and repairs the pipelines in the chapter's order:
 * simple reinstantiation, borrowing nodes, merging pipelines (falling back
 * to a full re-instantiation when the repair leaves fewer than f+1
 * pipelines or needs a template that does not exist, or when `full`).
 * Lists the layers each node must copy and from which surviving node, and
 * redistributes the same global batch. LOOM_EINFEASIBLE when fewer than
 * (f+1)*n0 nodes remain or a layer lost every replica. */
int loom_oobleck_replan_run(const loom_oobleck_state *st, const int32_t *failed,
                            int32_t n_failed, int full,
                            loom_oobleck_replan *out, loom_error *err);
void loom_oobleck_replan_clear(loom_oobleck_replan *r);

/* Frees the pipelines of a state (not its templates) and zeroes them. */
void loom_oobleck_state_clear_pipelines(loom_oobleck_state *st);

/* Name of an action ("keep", "reinstantiate", ...). */
const char *loom_oobleck_action_name(int action);

/* Distributes st->microbatches over st's pipelines with the templates'
 * times (Eq. 2.6), setting every pipeline's microbatches; *iteration_ms
 * gets the slowest pipeline's time. */
int loom_oobleck_redistribute(loom_oobleck_state *st, double *iteration_ms,
                              loom_error *err);

#ifdef __cplusplus
}
#endif
#endif
