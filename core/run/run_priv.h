/*
 * run_priv.h - the run layer's functions that only the core and its tests
 * call (not exported, not installed).
 */
#ifndef LOOM_RUN_PRIV_H
#define LOOM_RUN_PRIV_H

#include <stddef.h>
#include <loom/sys/isolate.h>
#include <loom/sys/problem.h>
#include <loom/sys/session.h>

/* ---- sessions (session.c) ------------------------------------------------ */

struct loom_planner_config;
struct loom_registry;
struct loom_model_data;
struct loom_cluster_data;
struct loom_stage_times_data;
struct loom_workload;

struct loom_session {
    struct loom_planner_config *cfg;
    struct loom_registry *reg;
    struct loom_pipeline *pl;
    struct loom_model_data *model;
    struct loom_cluster_data *cluster;
    struct loom_stage_times_data *stage_times;
    struct loom_workload *workload;
    loom_problem problem;
    int32_t n_iterations;
    const char *manifest_name;
    char manifest_path[4096];
    /* Per-module layouts (problem.module_layouts points here), NULL for a
     * single-layout problem; and those a --parallel file gave. Owned. */
    loom_module_layout *module_layouts;
    struct loom_layout_spec *parallel_layouts;
    /* With "choose": "run" in the planner manifest: 1 once the first plan
     * chose the candidate every iteration uses, and its index. */
    int run_chosen;
    int32_t run_candidate;
    /* Appended: the batch identity of a model problem, global_batch =
     * micro_batch_size x microbatches x dp (samples per iteration), and
     * the tokens of one sequence. */
    int64_t global_batch;
    int32_t micro_batch_size;
    int32_t seq_len;
    /* Appended: the workload in one line, what plans' `workload` points
     * to ("" for stage-times problems). */
    char workload_desc[160];
    /* Appended: with --global-batch over dp > 1 replicas of a generated
     * workload, the whole batch the planned (heaviest) replicas came from;
     * NULL otherwise. Owned. */
    struct loom_batch_replicas *batch;
};

/* ---- the whole batch behind a plan of its heaviest replica
 * (batch_replicas.c) ------------------------------------------------------ */

/* Every iteration's whole global batch, sequences numbered over all
 * replicas (replica r holds sequences r*per .. (r+1)*per - 1, K = the
 * micro-batch size to a microbatch), and the replica each plan stands
 * for. */
typedef struct loom_batch_replicas {
    loom_sample *samples;   /* every iteration's batch, one after another */
    int64_t *off;           /* n_iterations + 1: iteration k's samples */
    int32_t *planned;       /* n_iterations: the replica planned */
    double *work;           /* n_iterations x dp: each replica's model FLOPs */
    int32_t n_iterations, dp, per, micro_batch_size;
} loom_batch_replicas;

/* Frees b (NULL is fine). */
void loom_batch_replicas_free(loom_batch_replicas *b);

/* Keeps, of every iteration of a workload generated for the whole global
 * batch (dp replicas of `per` sequences each, K to a microbatch), the
 * samples of its heaviest replica (the model FLOPs of every sample's
 * passes through every module, GEMMs and attention), numbered from
 * sequence 0: the replica the gradient sync waits for is the one
 * planned. The whole batch moves to a new *batch. */
int loom_batch_keep_heaviest(loom_workload *w, const loom_model *model, int32_t per,
                             int32_t dp, int32_t K, loom_batch_replicas **batch, loom_error *err);

/* A plan of iteration k's planned replica stands for the step, whose model
 * FLOPs are every replica's: scales its MFU and HFU (when known) by the dp
 * replicas' mean model FLOPs over the planned replica's, by the rule that
 * chose it (<loom/model_flops.h>, the roofline's count). Leaves the plan
 * as it is when its graph counts no FLOPs. */
void loom_batch_job_metrics(const loom_batch_replicas *b, int32_t k, loom_plan *plan);

/* loom_session_open into caller storage (tests and the run layer keep
 * sessions by value): *s is zeroed first and on failure still safe to
 * release. */
int loom_session_init(loom_session *s, const loom_session_args *a, loom_error *err);

/* What loom_session_close does, without freeing s itself. */
void loom_session_release(loom_session *s);

/* Consumes the option at argv[*i] when it is one of loom_session_options()
 * spelt "--name" (advancing *i past its value): returns 1 when consumed, 0
 * when it is not a session option, -1 (after printing why) when its value
 * is missing or malformed. For programs without an option parser of their
 * own (the benchmarks); `loom` itself parses with getopt_long and
 * loom_session_args_set. */
int loom_session_args_take(loom_session_args *a, int argc, char **argv, int *i);

/* Plans a caller-provided iteration (checked against the problem first);
 * the C API's loom_planner_plan. */
int loom_session_plan_iteration(loom_session *s, const loom_iteration *it, loom_plan *plan,
                                loom_error *err);

/* Path of the default planner manifest, megatron-1f1b, found where
 * loom_planner_manifest_resolve finds shipped manifests (the working
 * directory's examples/manifests, the installed data dir, the source
 * tree); the first of those when none holds it. */
const char *loom_default_manifest(char *buf, size_t size);

/* ---- isolation (isolate.c) ----------------------------------------------- */

/* The pipe's file descriptor in a child (-1 in-process); for tests that
 * need to write garbage. */
int loom_channel_fd(const loom_channel *ch);

/* 1 when the address-space limit is applied in this build; 0 in
 * AddressSanitizer builds, whose shadow memory needs terabytes of address
 * space (the limit is then skipped). */
int loom_isolate_memory_limit_supported(void);

#endif
