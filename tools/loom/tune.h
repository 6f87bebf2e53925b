/* tune.h - `loom tune`: the layout search (docs/tune.md). The space of
 * single layouts (tune_space.c), the bounds and simulations of one
 * configuration (tune_eval.c), the pruned walk, the JSON report and shard
 * files (tune_report.c), the commands (cmd_tune.c, cmd_tune_merge.c). */
#ifndef LOOM_TUNE_H
#define LOOM_TUNE_H

#include <stdint.h>
#include <stdio.h>
#include <loom/sys/session.h>

#define LOOM_TUNE_MAX_MANIFESTS 16
#define LOOM_TUNE_DEFAULT_TOP 10
#define LOOM_TUNE_DEFAULT_EVALUATIONS 200 /* searching rankers, per plan */
#define LOOM_TUNE_MAX_CONFIGS 200000
#define LOOM_TUNE_TABLE_INFEASIBLE 20 /* the table lists this many; --json all */

/* What a simulation of one configuration gave. */
typedef struct loom_tune_result {
    int feasible;          /* planned and within the memory cap everywhere */
    double makespan_ms;    /* mean over the planned iterations */
    double mfu;            /* mean; -1 unknown */
    double bubble_ratio;   /* mean */
    int32_t n_ranks;
    int64_t *peak_mem_bytes; /* per rank, maximum over the iterations */
    double memory_cap_bytes;
    char *reason;          /* why it is infeasible (NULL when feasible) */
} loom_tune_result;

/* One configuration: a layout and a manifest. */
typedef struct loom_tune_config {
    int32_t index;         /* position in the enumeration (shards slice it) */
    int32_t manifest;      /* index into the search's manifests */
    loom_parallel par;     /* tp, pp, dp, vpp, microbatches, cp */
    int32_t micro_batch_size;
    /* A per-module layout (docs/tune.md): module -1 for one layout of the
     * whole model; else that module at its own tp, pp and dp, colocated on
     * the top-level GPUs (pp the top-level's, dp filling them) or disjoint
     * on GPUs of its own (cp 1). */
    int32_t module;
    int32_t module_tp, module_pp, module_dp;
    int32_t module_placement; /* LOOM_LAYOUT_COLOCATED or LOOM_LAYOUT_DISJOINT */
    double lower_bound_ms; /* closed-form makespan bound */
    char *static_reason;   /* static memory over the cap (NULL: fits) */
    double param_rank_bytes, state_rank_bytes; /* static floor of a rank: the
                                                * mean over the pp ranks */
    double cap_bytes;      /* the memory cap of a GPU */
    int simulated;         /* 1: result holds */
    loom_tune_result result;
} loom_tune_config;

/* One search: its inputs and its configurations. */
typedef struct loom_tune_search {
    const char *model, *cluster;
    int64_t gpus, global_batch;
    int32_t micro_batch_size; /* 0: sweep 1, 2, 4, ... */
    int32_t seq_len;
    int32_t top;
    int no_prune, tp_across_nodes;
    int32_t n_manifests;
    const char *manifests[LOOM_TUNE_MAX_MANIFESTS];
    char *manifest_names[LOOM_TUNE_MAX_MANIFESTS];
    const char *pins[LOOM_TUNE_MAX_MANIFESTS][5]; /* loom_tune_read_manifest */
    int n_pins[LOOM_TUNE_MAX_MANIFESTS];
    int64_t manifest_evaluations[LOOM_TUNE_MAX_MANIFESTS]; /* max_evaluations */
    /* per manifest: 1 when a partitioner lays out the parallel config's
     * per-module layouts (hetero-search, pinned to mode "given"), 2 when
     * one chooses its own (disttrain-alloc, optimus-planner: searched on
     * single layouts, never pruned) */
    int layouts[LOOM_TUNE_MAX_MANIFESTS];
    int single_layouts;    /* --single-layouts: no per-module layouts */
    const char *runtime;   /* --runtime: a plan its export refuses is infeasible
                            * (plan.json's exports key), NULL: none */
    int32_t n_module_names;
    char *module_names[64]; /* the model's modules, for the layout objects */
    int32_t listed_module;  /* the module a layout-laying manifest's single
                             * layouts list (the backbone, at the top-level
                             * layout) */
    loom_session_args base; /* shared options (iterations, params, ...) */
    loom_tune_config *configs;
    int32_t n_configs;
    int32_t n_space;       /* configurations of the whole space (all shards) */
    int32_t gpus_per_node; /* the cluster's */
} loom_tune_search;

/* What the pruned walk kept (tune_report.c). */
typedef struct loom_tune_walk {
    int32_t *ranked;       /* config indices, best first (at most top) */
    int32_t n_ranked;
    int32_t *infeasible;   /* config indices, in enumeration order */
    int32_t n_infeasible;
    int32_t considered, simulated, pruned;
} loom_tune_walk;

/* ---- tune_space.c --------------------------------------------------------- */

/* Enumerates every configuration of the search (its manifests' names and
 * the model read first): LOOM_EINVAL with the reason when none exists
 * (GPU count, global batch). */
int loom_tune_space(loom_tune_search *t, const loom_model *model, const loom_cluster *cluster,
                    loom_error *err);

/* Reads manifest m of the search: its name, its max_evaluations and the
 * --param texts that pin its virtual stages to the layout's (partitioners
 * with vpp_sweep on; static storage). */
int loom_tune_read_manifest(loom_tune_search *t, int32_t m, loom_error *err);

/* ---- tune_eval.c ---------------------------------------------------------- */

/* Session arguments of configuration c (layout, batch, pinned vpp); the
 * strings live in buf (size bytes). */
int loom_tune_args(const loom_tune_search *t, const loom_tune_config *c, loom_session_args *a,
                   char *buf, size_t size, loom_error *err);

/* Prices c before simulating: lower_bound_ms and static_reason. */
int loom_tune_bound(const loom_tune_search *t, loom_tune_config *c, loom_error *err);

/* Plans c with its manifest (as `loom plan` would) into c->result; a plan
 * that does not fit is a result with a reason, not an error. Returns the
 * status of a failure that is not about the configuration (plugin
 * errors, out of memory). */
int loom_tune_simulate(const loom_tune_search *t, loom_tune_config *c, loom_error *err);

void loom_tune_result_clear(loom_tune_result *r);
void loom_tune_search_clear(loom_tune_search *t);

/* ---- tune_report.c -------------------------------------------------------- */

/* Visits the configurations in order of increasing lower bound, calling
 * sim(user, c) for each one that could still enter the top (every one with
 * no_prune); fills *w. sim returns a loom status; a failure stops the walk. */
int loom_tune_walk_run(loom_tune_search *t, int (*sim)(void *user, loom_tune_config *c),
                       void *user, loom_tune_walk *w);
void loom_tune_walk_clear(loom_tune_walk *w);

/* A configuration's place in the walk: its bound and its index. */
typedef struct loom_tune_key {
    double bound_ms;
    int32_t at; /* index into t->configs */
} loom_tune_key;

/* The configurations the walk visits (every one with no_prune, else those
 * the static floor leaves) in order of increasing bound, ties by
 * enumeration (malloc'd, *n of them; NULL when out of memory). */
loom_tune_key *loom_tune_bound_order(const loom_tune_search *t, int32_t *n);

/* Inserts makespan ms into the ascending list best of *n entries, keeping
 * the k least. */
void loom_tune_keep_best(double *best, int32_t *n, int32_t k, double ms);

/* The JSON report (docs/schemas/tune.schema.json). */
int loom_tune_write_json(const loom_tune_search *t, const loom_tune_walk *w, FILE *out);
/* The ranked table and the infeasible list, for people. */
void loom_tune_write_table(const loom_tune_search *t, const loom_tune_walk *w, FILE *out);

/* A shard file: the search's identity, shard k of n, and every
 * configuration of the slice with its bound and any simulation. */
int loom_tune_write_shard(const loom_tune_search *t, int32_t k, int32_t n, FILE *out);
/* The identity of a search (the object shard files must agree on), as
 * compact JSON in a malloc'd string. */
char *loom_tune_identity(const loom_tune_search *t);

/* One configuration as a shard file holds it (bounds and any simulation,
 * every double to 17 significant digits), and back: -1 when malformed. */
void loom_tune_write_config(const loom_tune_config *c, FILE *out);
int loom_tune_read_config_text(const char *text, loom_tune_config *c, int32_t n_manifests);

/* ---- tune_jobs.c ---------------------------------------------------------- */

/* Simulates, `jobs` at a time in forked processes, the configurations the
 * walk would reach (in bound order, a batch at a time, stopping where a
 * batch's first bound exceeds the top-th best found so far): a superset
 * of what loom_tune_walk_run simulates, so that the walk then finds
 * every result it needs already there (c->simulated) and prints what a
 * run of one job prints. A configuration whose worker failed is left to
 * the walk, which simulates it itself. jobs < 2 does nothing. */
void loom_tune_prefetch(loom_tune_search *t, int32_t jobs, void (*progress)(void *user),
                        void *user);

/* Bounds the configurations in `jobs` forked processes, each a
 * contiguous slice (loom_tune_bound in each); sets bounded[i] for every
 * configuration whose bound arrived and returns how many did. The caller
 * bounds the rest itself (a failed slice, or jobs < 2). */
int32_t loom_tune_bound_jobs(loom_tune_search *t, int32_t jobs, char *bounded);

/* Reads shard files into one search (configs from every slice); LOOM_EINVAL
 * when they come from different searches or a shard is missing or
 * repeated. */
int loom_tune_read_shards(const char **files, int n, loom_tune_search *t, loom_error *err);

/* The layout object `loom plan --json` and `loom tune --json` print
 * (without per-module layouts). */
void loom_tune_layout_json(FILE *out, const loom_parallel *p, int32_t micro_batch_size,
                           int64_t global_batch);

/* The layout object of configuration c: loom_tune_layout_json's, with
 * "modules" and the GPUs of every set when c lays a module out itself. */
void loom_tune_config_layout_json(FILE *out, const loom_tune_search *t,
                                  const loom_tune_config *c);

/* The --parallel text of configuration c: "tp=..,cp=..,..." for one
 * layout, the parallel object inline ("{...}") with its modules. */
int loom_tune_parallel_text(const loom_tune_search *t, const loom_tune_config *c, char *buf,
                            size_t size);

/* The layout object `loom plan --json` prints: the top-level layout and
 * the batch, the GPUs of every set, and "modules" with each module whose
 * layout differs from the top-level one (layouts: one per module, the
 * plan's, or NULL for a single layout). */
void loom_tune_plan_layout_json(FILE *out, const loom_problem *pb,
                                const loom_module_layout *layouts, int32_t micro_batch_size,
                                int64_t global_batch);

/* GPUs configuration c uses (every set). */
int64_t loom_tune_config_gpus(const loom_tune_config *c);

#endif
