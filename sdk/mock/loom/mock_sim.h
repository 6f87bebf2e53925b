/*
 * loom/mock_sim.h - the planner's simulator, problems and stage graphs for
 * plugin tests, behind SDK types only.
 *
 * A plugin test sees <loom/loom.h>, the kits, <loom/mock_host.h> and this
 * header; the library behind it (loom_mock_sim) links the core, so a test
 * can:
 *   - simulate a schedule over a stage graph (loom_mock_simulate, or the
 *     "loom.simulator" table from loom_mock_simulator() to register on a
 *     mock host or to reuse one scratch);
 *   - open a problem the way `loom plan` does (a model preset or file, a
 *     cluster, a parallel config, a workload, a manifest), read it, build
 *     the stage graph of a partition with its cost model, score a partition
 *     as the engine would, and plan an iteration end to end;
 *   - make the candidate set a partitioner fills (loom_mock_candidates_new).
 * Running a plugin's own entry points stays the test's: take its vtable
 * from info->role() and call it on a mock host (loom/mock_host.h);
 * loom/mock_interleaver.h does that for interleavers.
 *
 * Ownership: loom_mock_planner_open() returns a planner the caller closes
 * with loom_mock_planner_close(); what the planner hands out (problem,
 * iterations, a plan's partition, graph, schedule and metrics) belongs to
 * it. Graphs from loom_mock_planner_graph() are the caller's
 * (loom_graph_free), candidate sets too (loom_mock_candidates_free).
 * Units: milliseconds, bytes.
 *
 * In-tree only: the library links the core's static archive, which is not
 * installed.
 */
#ifndef LOOM_MOCK_SIM_H
#define LOOM_MOCK_SIM_H

#include <loom/loom.h>
#include <loom/kits/graph.h> /* loom_graph_free, loom_schedule_new */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the simulator --------------------------------------------------- */

/* The planner's event-driven simulator as a "loom.simulator" v1 table
 * (static storage): register it with loom_mock_host_add_service() for a
 * memory tuner, or call it directly with a scratch reused across runs. */
const loom_simulator_service *loom_mock_simulator(void);

/* Replays `s` over `g` with a fresh scratch and fills `m` (makespan, per
 * rank compute, peaks and cap violations; the optional arrays m points at
 * too). LOOM_EINVAL when a stage is missing, repeated or on the wrong
 * rank, LOOM_EDEADLOCK naming the blocked stages when the orders block. */
int loom_mock_simulate(const loom_stage_graph *g, const loom_schedule *s,
                       loom_metrics *m, loom_error *err);

/* ---- candidate sets -------------------------------------------------- */

/* An empty candidate set for a partitioner's partition() on `problem` and
 * iteration `it` (NULL for a stage-times problem); both borrowed. NULL
 * when out of memory. */
loom_candidates *loom_mock_candidates_new(const loom_problem *problem,
                                          const loom_iteration *it);

/* Frees a set and every partition in it. NULL is a no-op. */
void loom_mock_candidates_free(loom_candidates *set);

/* ---- problems and plans ---------------------------------------------- */

typedef struct loom_mock_planner loom_mock_planner;

/* What loom_mock_planner_plan() planned; every pointer belongs to the
 * planner and stays valid until its next plan or its close. The metrics
 * carry every optional array (span, peaks, starts, ends). */
typedef struct loom_mock_plan {
    const loom_partition *partition; /* NULL for a stage-times problem */
    const loom_stage_graph *graph;   /* with the chosen memory policies */
    const loom_schedule *schedule;
    const loom_metrics *metrics;
    const float *priorities;         /* graph->n_groups */
} loom_mock_plan;

/* Loads a manifest, its plugins (this build's plugins/) and a problem as
 * `loom plan` does. `options` is a NULL-terminated list of "name=value"
 * strings (or "name" for a flag), each one of `loom plan`'s problem and
 * manifest options without "--": manifest, model, cluster, parallel,
 * workload, generate, stage-times, iterations, seed, memory-cap,
 * evaluations, use (repeatable: "use=ranker=fifo"), param (repeatable:
 * "param=partitioner.mode=given"), ... NULL options: the defaults
 * (megatron-1f1b, vlm-s on h800). The strings are copied. Returns LOOM_OK,
 * LOOM_EINVAL (a malformed option, naming it), LOOM_ENOTFOUND (an unknown
 * option) or the loading's own error (a file, its JSON path); *out is
 * NULL on failure. */
int loom_mock_planner_open(const char *const *options, loom_mock_planner **out,
                           loom_error *err);

/* Frees the planner, its plugins, problem and last plan. NULL is a no-op. */
void loom_mock_planner_close(loom_mock_planner *pl);

/* The problem the planner loaded (model, cluster, parallel with resolved
 * per-module layouts, memory cap, iterations). */
const loom_problem *loom_mock_planner_problem(const loom_mock_planner *pl);

/* Iteration k of the workload (0 <= k < loom_problem.n_iterations), or
 * NULL when there is none. */
const loom_iteration *loom_mock_planner_iteration(const loom_mock_planner *pl,
                                                  int32_t k);

/* Builds the stage graph of `part` (its samples assigned) for iteration
 * `it`, each stage priced by the manifest's cost model, as the engine
 * does before interleaving; backward split in B and W when
 * part->split_backward. *out is the caller's (loom_graph_free). */
int loom_mock_planner_graph(loom_mock_planner *pl, const loom_iteration *it,
                            const loom_partition *part, loom_stage_graph **out,
                            loom_error *err);

/* Scores `part` for iteration `it` as the "loom.partition_eval" service
 * does for a partitioner: the graph built, then the manifest's interleaver,
 * memory tuner and the simulator run once with first-in-first-out
 * priorities. Fills *out (its optional arrays left NULL). */
int loom_mock_planner_evaluate(loom_mock_planner *pl, const loom_iteration *it,
                               const loom_partition *part, loom_metrics *out,
                               loom_error *err);

/* Plans iteration k end to end (partitioner, ranker, interleaver, memory
 * tuner, simulator) and points *out at the result. Errors are the
 * planner's: a plugin's message names its id. */
int loom_mock_planner_plan(loom_mock_planner *pl, int32_t k, loom_mock_plan *out,
                           loom_error *err);

#ifdef __cplusplus
}
#endif
#endif
