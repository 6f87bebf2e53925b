/*
 * ilp_prio.c - the exact interleaver's warm start over microbatch
 * priority orders. With per-microbatch costs (uneven microbatch scales)
 * the order in which microbatches enter the pipeline decides most of the
 * bubble; list schedules that break ties by a microbatch ranking find
 * good incumbents cheaply, and a good incumbent prunes the exact search.
 */
#include <string.h>
#include "ilp.h"

/* Per-microbatch forward and other (backward, weight) work. */
typedef struct prio_mb {
    double fwd_ms, bwd_ms;
} prio_mb;

/* What a sweep shares. */
typedef struct prio_run {
    loom_ilpi_problem *pb;
    int32_t *rank_off, *order, *best_off, *best_order;
    double *best_ms;
    int32_t tried;
} prio_run;

/* Runs the backward-first and longest-tail list schedules with key and
 * keeps the best. */
static void prio_try(prio_run *run, const int32_t *key)
{
    static const int rules[2] = {LOOM_ILPI_BACKWARD_FIRST, LOOM_ILPI_LONGEST_TAIL};
    loom_ilpi_problem *pb = run->pb;
    for (int i = 0; i < 2; i++) {
        double span = loom_ilpi_list_keyed(pb, rules[i], key, run->rank_off, run->order);
        run->tried++;
        if (span >= 0.0 && (*run->best_ms < 0.0 || span < *run->best_ms)) {
            *run->best_ms = span;
            memcpy(run->best_off, run->rank_off, ((size_t)pb->n_ranks + 1) * sizeof *run->best_off);
            memcpy(run->best_order, run->order, (size_t)pb->n * sizeof *run->best_order);
        }
    }
}

/* Key of a ranking: key[perm[i]] = i. */
static void prio_key(const int32_t *perm, int32_t M, int32_t *key)
{
    for (int32_t i = 0; i < M; i++)
        key[perm[i]] = i;
}

/* Sorts perm by score ascending (insertion sort, stable). */
static void prio_sort(int32_t *perm, const double *score, int32_t M)
{
    for (int32_t i = 0; i < M; i++)
        perm[i] = i;
    for (int32_t i = 1; i < M; i++) {
        int32_t v = perm[i], j = i - 1;
        while (j >= 0 && score[perm[j]] > score[v]) {
            perm[j + 1] = perm[j];
            j--;
        }
        perm[j + 1] = v;
    }
}

/* The rankings by rule: total work and forward work ascending and
 * descending, Johnson's rule (forward < backward first by forward
 * ascending, then the rest by backward descending), and the lightest
 * microbatch first with the rest by total work descending (the lightest
 * fills the pipeline, the next lightest drains it). */
static void prio_rules(prio_run *run, const prio_mb *w, int32_t M, double *score,
                       int32_t *perm, int32_t *key)
{
    int32_t light = 0;
    for (int32_t m = 1; m < M; m++)
        if (w[m].fwd_ms + w[m].bwd_ms < w[light].fwd_ms + w[light].bwd_ms)
            light = m;
    for (int rule = 0; rule < 6; rule++) {
        for (int32_t m = 0; m < M; m++) {
            double tot = w[m].fwd_ms + w[m].bwd_ms;
            switch (rule) {
            case 0: score[m] = tot; break;
            case 1: score[m] = -tot; break;
            case 2: score[m] = w[m].fwd_ms; break;
            case 3: score[m] = -w[m].fwd_ms; break;
            case 4: /* Johnson: a first group by forward, then by -backward */
                score[m] = w[m].fwd_ms < w[m].bwd_ms ? w[m].fwd_ms - 1e300 : -w[m].bwd_ms;
                break;
            default: /* the lightest first, then the heaviest */
                score[m] = m == light ? -1e300 : -tot;
                break;
            }
        }
        prio_sort(perm, score, M);
        prio_key(perm, M, key);
        prio_try(run, key);
    }
}

/* Every ranking (Heap's algorithm) until the deadline. */
static void prio_all(prio_run *run, const loom_host_api *host, double deadline_ms,
                     int32_t M, int32_t *perm, int32_t *c, int32_t *key)
{
    for (int32_t i = 0; i < M; i++) {
        perm[i] = i;
        c[i] = 0;
    }
    prio_key(perm, M, key);
    prio_try(run, key);
    for (int32_t i = 1; i < M;) {
        if (c[i] < i) {
            int32_t j = (i % 2 == 0) ? 0 : c[i], t = perm[j];
            perm[j] = perm[i];
            perm[i] = t;
            prio_key(perm, M, key);
            prio_try(run, key);
            if (*run->best_ms <= run->pb->lower_bound_ms * (1.0 + 1e-9))
                return; /* meets the lower bound */
            if ((run->tried & 63) == 0 && host->now_ms() > deadline_ms)
                return;
            c[i]++;
            i = 1;
        } else {
            c[i] = 0;
            i++;
        }
    }
}

/* Largest microbatch count whose every order is tried. */
#define PRIO_MAX_PERM_MB 8

/* Sweeps the priority orders (see header). */
int loom_ilpi_warm_prio(const loom_host_api *host, loom_ilpi_problem *pb,
                        double deadline_ms, int32_t *rank_off, int32_t *order,
                        int32_t *best_off, int32_t *best_order, double *best_ms,
                        loom_error *err)
{
    const loom_stage_graph *g = pb->g;
    int32_t M = g->n_microbatches;
    if (M < 2)
        return LOOM_OK;
    size_t m1 = (size_t)M + 1;
    prio_mb *w = host->alloc(m1 * sizeof *w);
    double *score = host->alloc(m1 * sizeof *score);
    int32_t *perm = host->alloc(3 * m1 * sizeof *perm);
    if (!w || !score || !perm) {
        host->free(w);
        host->free(score);
        host->free(perm);
        return host->error(err, LOOM_ENOMEM, "ilp: out of memory");
    }
    memset(w, 0, m1 * sizeof *w);
    for (int32_t v = 0; v < g->n_stages; v++) {
        int32_t m = g->microbatch[v];
        if (m < 0 || m >= M)
            continue;
        if (g->kind[v] == LOOM_STAGE_F)
            w[m].fwd_ms += g->duration_ms[v];
        else
            w[m].bwd_ms += g->duration_ms[v];
    }
    prio_run run = {pb, rank_off, order, best_off, best_order, best_ms, 0};
    int32_t *c = perm + m1, *key = perm + 2 * m1;
    prio_rules(&run, w, M, score, perm, key);
    if (M <= PRIO_MAX_PERM_MB && host->now_ms() <= deadline_ms)
        prio_all(&run, host, deadline_ms, M, perm, c, key);
    host->free(w);
    host->free(score);
    host->free(perm);
    return LOOM_OK;
}
