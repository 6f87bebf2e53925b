/* bench_sim.c - simulator and evaluator throughput on one planned
 * iteration: builds the iteration's stage graph through a planner
 * manifest, then times batches of simulator runs (fixed schedule) and
 * evaluator runs (interleaver + memory tuner + simulator) and prints the
 * median rate of the batches: once with the plan's priorities on every
 * run, once with two groups' priorities swapped per run (a search's moves:
 * consecutive runs differ in up to four groups).
 *
 *   loom-bench-sim [--manifest M] [--model vlm-l] [--parallel ...] [--batches 15]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine_api.h" /* internals: this benchmark times the simulator and evaluator */
#include "pipeline.h"
#include <loom/sys/session.h>
#include "run_priv.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.model = "vlm-l";
    a.iterations = 1;
    int batches = 15;
    for (int i = 1; i < argc; i++) {
        int used = loom_session_args_take(&a, argc, argv, &i);
        if (used < 0)
            return 2;
        if (used)
            continue;
        if (!strcmp(argv[i], "--batches") && i + 1 < argc)
            batches = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: loom-bench-sim [loom plan problem options] [--batches N]\n");
            return 2;
        }
    }
    if (batches < 3 || batches > 1000)
        batches = 15;
    loom_session s;
    loom_error err = {0};
    int rc = loom_session_init(&s, &a, &err);
    loom_plan plan;
    if (rc == LOOM_OK)
        rc = loom_session_plan(&s, 0, &plan, &err);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom-bench-sim: %s\n", err.message);
        loom_session_release(&s);
        return 1;
    }
    loom_graph_stamp(plan.graph); /* as the engine stamps the graphs a search evaluates */
    const loom_stage_graph *g = plan.graph;
    printf("graph: %d stages, %d edges, %d ranks, %d groups, %d layer entries (%s, %s)\n",
           g->n_stages, g->n_edges, g->n_ranks, g->n_groups, g->n_layer_entries, s.manifest_name,
           plan.label);

    /* simulator alone: replay the plan's schedule */
    loom_sim_scratch *scratch = loom_sim_scratch_new();
    loom_metrics m = LOOM_METRICS_INIT;
    double rates[1000];
    int per_batch = 200;
    for (int b = 0; b < batches; b++) {
        double t0 = loom_now_ms();
        for (int k = 0; k < per_batch; k++)
            loom_sim_run(scratch, g, plan.schedule, &m, &err);
        double dt = loom_now_ms() - t0;
        rates[b] = per_batch / (dt / 1e3);
    }
    double sim_rate = median(rates, batches);
    printf("simulator:  %.0f evaluations/s (median of %d batches of %d), %.2f us each\n", sim_rate,
           batches, per_batch, 1e6 / sim_rate);

    /* evaluator: interleaver + memory tuner + simulator for the plan's
     * priorities, then for search moves around them */
    loom_step *rk = &s.pl->steps[s.pl->ranker];
    const char *inter = s.pl->steps[s.pl->interleaver].ctx.plugin_id;
    const char *tuner = s.pl->memory_tuner >= 0 ? s.pl->steps[s.pl->memory_tuner].ctx.plugin_id
                                                : "none";
    int32_t G = g->n_groups;
    float *moved = malloc((size_t)(G ? G : 1) * sizeof *moved);
    loom_evaluator *ev = NULL;
    rc = moved ? loom_evaluator_create(&rk->ctx, g, &ev, &err) : LOOM_ENOMEM;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (int pass = 0; pass < 2 && rc == LOOM_OK; pass++) {
        per_batch = 50;
        for (int b = 0; b < batches && rc == LOOM_OK; b++) {
            double dt = 0;
            for (int k = 0; k < per_batch && rc == LOOM_OK; k++) {
                memcpy(moved, plan.priorities, (size_t)G * sizeof *moved);
                if (pass == 1 && G > 1) { /* swap two distinct groups */
                    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                    int32_t x = (int32_t)((rng >> 33) % (uint64_t)G);
                    int32_t y = (int32_t)((x + 1 + (int32_t)((rng >> 13) % (uint64_t)(G - 1))) % G);
                    float t = moved[x];
                    moved[x] = moved[y];
                    moved[y] = t;
                }
                double t0 = loom_now_ms();
                rc = loom_evaluator_run(ev, moved, &m, &err);
                dt += loom_now_ms() - t0;
            }
            rates[b] = per_batch / (dt / 1e3);
        }
        if (rc != LOOM_OK)
            break;
        double ev_rate = median(rates, batches);
        printf("evaluator:  %.0f evaluations/s (median of %d batches of %d), %.2f us each "
               "(interleaver %s, memory tuner %s; %s)\n",
               ev_rate, batches, per_batch, 1e6 / ev_rate, inter, tuner,
               pass == 0 ? "the plan's priorities" : "two groups swapped per run");
    }
    if (rc != LOOM_OK)
        fprintf(stderr, "loom-bench-sim: %s\n", moved ? err.message : "out of memory");
    loom_evaluator_destroy(ev);
    free(moved);
    loom_sim_scratch_free(scratch);
    loom_plan_clear(&plan);
    loom_session_release(&s);
    return rc == LOOM_OK ? 0 : 1;
}
