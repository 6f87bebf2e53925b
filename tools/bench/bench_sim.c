/* bench_sim.c - simulator and evaluator throughput on one planned
 * iteration: builds the iteration's stage graph through a planner
 * manifest, then times rounds of three batches: simulator runs (fixed
 * schedule), evaluator runs (interleaver + memory tuner + simulator) with
 * the plan's priorities on every run, and evaluator runs with two groups'
 * priorities swapped per run (a search's moves: consecutive runs differ in
 * up to four groups). It prints the median of each kind of batch and the
 * median over rounds of what an evaluation costs in simulations within a
 * round, so a machine's drift does not enter that ratio. A third batch
 * evaluates a random order of the groups per run, as a search's
 * evaluations differ from one to the next, and a fourth simulates the
 * schedules that batch built: on a replayed schedule the branch predictor
 * learns the run, on a new one it cannot, and these two give the ratio a
 * search pays. Last, what an incremental
 * evaluation could reuse after one such move: how much of every rank's
 * order stays the same from its start, for two groups swapped at random
 * and for two groups adjacent in priority (the smallest move a search
 * makes), against the order of the plan's priorities.
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

/* Fills *same_ranks with the ranks whose whole order equals base's and
 * returns the share of stages in the common prefix of each rank's order
 * with base's (both schedules of the same graph). */
static double common_prefix(const loom_schedule *x, const int32_t *base, int32_t *same_ranks)
{
    int64_t common = 0, all = 0;
    *same_ranks = 0;
    for (int32_t r = 0; r < x->n_ranks; r++) {
        int32_t a = x->rank_off[r], b = x->rank_off[r + 1], k = a;
        while (k < b && x->order[k] == base[k])
            k++;
        common += k - a;
        all += b - a;
        *same_ranks += k == b;
    }
    return all ? (double)common / (double)all : 1.0;
}

/* Ranks groups by priority, highest first (for adjacent swaps). */
static const float *rank_key;
static int cmp_prio(const void *a, const void *b)
{
    float x = rank_key[*(const int32_t *)a], y = rank_key[*(const int32_t *)b];
    return (x < y) - (x > y);
}

/* A random permutation of prio's n values (Fisher-Yates). */
static void shuffle(float *prio, int32_t n, uint64_t *rng)
{
    for (int32_t i = n - 1; i > 0; i--) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        int32_t j = (int32_t)((*rng >> 33) % (uint64_t)(i + 1));
        float t = prio[i];
        prio[i] = prio[j];
        prio[j] = t;
    }
}

/* Swaps the priorities of two distinct random groups of n (n > 1). */
static void swap_two_groups(float *prio, int32_t n, uint64_t *rng)
{
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    int32_t x = (int32_t)((*rng >> 33) % (uint64_t)n);
    int32_t y = (int32_t)((x + 1 + (int32_t)((*rng >> 13) % (uint64_t)(n - 1))) % n);
    float t = prio[x];
    prio[x] = prio[y];
    prio[y] = t;
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

    /* Rounds of one simulator batch (the plan's schedule replayed) and one
     * evaluator batch per kind of priorities (interleaver + memory tuner +
     * simulator: the plan's, then two groups swapped per run, as a
     * search's moves), so that every ratio compares runs of the same
     * minutes of a shared machine. */
    loom_sim_scratch *scratch = loom_sim_scratch_new();
    loom_metrics m = LOOM_METRICS_INIT;
    loom_step *rk = &s.pl->steps[s.pl->ranker];
    const char *inter = s.pl->steps[s.pl->interleaver].ctx.plugin_id;
    const char *tuner = s.pl->memory_tuner >= 0 ? s.pl->steps[s.pl->memory_tuner].ctx.plugin_id
                                                : "none";
    int32_t G = g->n_groups;
    float *moved = malloc((size_t)(G ? G : 1) * sizeof *moved);
    loom_evaluator *ev = NULL;
    rc = moved && scratch ? loom_evaluator_create(&rk->ctx, g, &ev, &err)
                         : loom_set_error(&err, LOOM_ENOMEM, "out of memory");
    uint64_t rng = 0x9e3779b97f4a7c15ull, rng_orders = 0x2545f4914f6cdd1dull;
    enum { SIM_RUNS = 200, EV_RUNS = 50 };
    double sim_us[1000], ev_us[3][1000], ratio[3][1000], sim_new_us[1000];
    /* the random-order batch's schedules, replayed by the simulator */
    size_t n_st = (size_t)(g->n_stages ? g->n_stages : 1);
    int32_t *orders = malloc((size_t)EV_RUNS * n_st * sizeof *orders);
    int32_t *fills = malloc((size_t)EV_RUNS * n_st * sizeof *fills);
    if (rc == LOOM_OK && (!orders || !fills))
        rc = loom_set_error(&err, LOOM_ENOMEM, "out of memory");
    loom_schedule replay = *plan.schedule;
    for (int b = 0; b < batches && rc == LOOM_OK; b++) {
        double t0 = loom_now_ms();
        for (int k = 0; k < SIM_RUNS && rc == LOOM_OK; k++)
            rc = loom_sim_run(scratch, g, plan.schedule, &m, &err);
        sim_us[b] = (loom_now_ms() - t0) * 1e3 / SIM_RUNS;
        for (int pass = 0; pass < 3 && rc == LOOM_OK; pass++) {
            double dt = 0;
            for (int k = 0; k < EV_RUNS && rc == LOOM_OK; k++) {
                memcpy(moved, plan.priorities, (size_t)G * sizeof *moved);
                if (pass == 1 && G > 1)
                    swap_two_groups(moved, G, &rng);
                if (pass == 2)
                    shuffle(moved, G, &rng_orders);
                t0 = loom_now_ms();
                rc = loom_evaluator_run(ev, moved, &m, &err);
                dt += loom_now_ms() - t0;
                const loom_schedule *x = loom_evaluator_schedule(ev);
                if (pass == 2 && rc == LOOM_OK) {
                    memcpy(orders + (size_t)k * n_st, x->order, (size_t)g->n_stages * sizeof *orders);
                    memcpy(fills + (size_t)k * n_st, x->fill_hosts,
                           (size_t)g->n_stages * sizeof *fills);
                }
            }
            ev_us[pass][b] = dt * 1e3 / EV_RUNS;
            ratio[pass][b] = ev_us[pass][b] / sim_us[b];
        }
        /* the random orders' schedules, each simulated once on the plan's graph */
        t0 = loom_now_ms();
        for (int k = 0; k < EV_RUNS && rc == LOOM_OK; k++) {
            replay.order = orders + (size_t)k * n_st;
            replay.fill_hosts = fills + (size_t)k * n_st;
            rc = loom_sim_run(scratch, g, &replay, &m, &err);
        }
        sim_new_us[b] = (loom_now_ms() - t0) * 1e3 / EV_RUNS;
        ratio[2][b] = ev_us[2][b] / sim_new_us[b];
    }
    if (rc == LOOM_OK) {
        double sim = median(sim_us, batches);
        printf("simulator:  %.0f evaluations/s (median of %d batches of %d), %.2f us each\n",
               1e6 / sim, batches, SIM_RUNS, sim);
        static const char *const kinds[3] = {"the plan's priorities", "two groups swapped per run",
                                             "a random order per run"};
        for (int pass = 0; pass < 3; pass++) {
            double us = median(ev_us[pass], batches);
            printf("evaluator:  %.0f evaluations/s (median of %d batches of %d), %.2f us each "
                   "(interleaver %s, memory tuner %s; %s)\n",
                   1e6 / us, batches, EV_RUNS, us, inter, tuner, kinds[pass]);
        }
        double sim_new = median(sim_new_us, batches);
        printf("simulator:  %.0f evaluations/s (median of %d batches of %d), %.2f us each "
               "(the random orders' schedules, each once)\n",
               1e6 / sim_new, batches, EV_RUNS, sim_new);
        printf("ratio:      an evaluation costs %.2f simulations with the plan's priorities, %.2f "
               "with two groups swapped per run (medians over %d rounds of one batch each, "
               "of the ratio within a round)\n",
               median(ratio[0], batches), median(ratio[1], batches), batches);
        printf("ratio:      with a random order per run, an evaluation costs %.2f simulations of "
               "such schedules (median over %d rounds)\n", median(ratio[2], batches), batches);
    }
    /* reuse: one move against the plan's priorities */
    int32_t *base = malloc((size_t)(g->n_stages ? g->n_stages : 1) * sizeof *base);
    int32_t *by_prio = malloc((size_t)(G ? G : 1) * sizeof *by_prio);
    if (rc == LOOM_OK && (!base || !by_prio))
        rc = loom_set_error(&err, LOOM_ENOMEM, "out of memory");
    if (rc == LOOM_OK && G > 1)
        rc = loom_evaluator_run(ev, plan.priorities, &m, &err);
    if (rc == LOOM_OK && G > 1) {
        memcpy(base, loom_evaluator_schedule(ev)->order, (size_t)g->n_stages * sizeof *base);
        for (int32_t k = 0; k < G; k++)
            by_prio[k] = k;
        rank_key = plan.priorities;
        qsort(by_prio, (size_t)G, sizeof *by_prio, cmp_prio);
        enum { MOVES = 200 };
        for (int pass = 0; pass < 2 && rc == LOOM_OK; pass++) {
            double shares[MOVES];
            int32_t unchanged = 0, moves_with_same = 0;
            for (int k = 0; k < MOVES && rc == LOOM_OK; k++) {
                memcpy(moved, plan.priorities, (size_t)G * sizeof *moved);
                if (pass == 0) {
                    swap_two_groups(moved, G, &rng);
                } else {
                    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                    int32_t i = (int32_t)((rng >> 33) % (uint64_t)(G - 1));
                    float t = moved[by_prio[i]];
                    moved[by_prio[i]] = moved[by_prio[i + 1]];
                    moved[by_prio[i + 1]] = t;
                }
                rc = loom_evaluator_run(ev, moved, &m, &err);
                if (rc != LOOM_OK)
                    break;
                int32_t same = 0;
                shares[k] = common_prefix(loom_evaluator_schedule(ev), base, &same);
                unchanged += same;
                moves_with_same += same > 0;
            }
            if (rc != LOOM_OK)
                break;
            double mean = 0;
            for (int k = 0; k < MOVES; k++)
                mean += shares[k] / MOVES;
            printf("reuse:      one move, %s (%d moves): the common start of a rank's order "
                   "with the plan's holds %.1f %% of its stages (median; mean %.1f %%); %d of "
                   "%d rank orders unchanged, in %d moves\n",
                   pass == 0 ? "two groups swapped" : "two groups adjacent in priority swapped",
                   MOVES, 100.0 * median(shares, MOVES), 100.0 * mean, unchanged,
                   MOVES * g->n_ranks, moves_with_same);
        }
    }
    free(base);
    free(by_prio);
    free(orders);
    free(fills);
    if (rc != LOOM_OK)
        fprintf(stderr, "loom-bench-sim: %s\n", err.message);
    loom_evaluator_destroy(ev);
    free(moved);
    loom_sim_scratch_free(scratch);
    loom_plan_clear(&plan);
    loom_session_release(&s);
    return rc == LOOM_OK ? 0 : 1;
}
