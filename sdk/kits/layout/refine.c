/*
 * refine.c - a simulated local search over layer splits and the scratch
 * partitions it scores them in (see <loom/kits/layout.h>).
 */
#include <string.h>
#include <loom/kits/layout.h>

/* 1 when score a is better than b: fewer ranks over the cap, then a
 * shorter makespan. */
static int lk_better(const loom_lk_split_score *a, const loom_lk_split_score *b)
{
    if (a->cap_violations != b->cap_violations)
        return a->cap_violations < b->cap_violations;
    return a->makespan_ms < b->makespan_ms;
}

/* Load of every position (sum of its layers' weights) into load[]. */
static void lk_loads(const double *layer_weight, int32_t n_pos, const int32_t *sizes,
                     double *load)
{
    int32_t k = 0;
    for (int32_t s = 0; s < n_pos; s++) {
        load[s] = 0;
        for (int32_t i = 0; i < sizes[s]; i++)
            load[s] += layer_weight[k++];
    }
}

/* Positions by load, heaviest first (ties: the lower index first). */
static void lk_by_load(const double *load, int32_t n_pos, int32_t *order)
{
    for (int32_t s = 0; s < n_pos; s++) {
        int32_t j = s;
        while (j > 0 && load[order[j - 1]] < load[s]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = s;
    }
}

int loom_lk_refine_split(const double *layer_weight, int32_t n_pos, int32_t *sizes,
                         int32_t *scratch, double *load, loom_lk_refine *r, loom_error *err)
{
    r->evaluations = 0;
    r->moves = 0;
    if (r->max_evaluations < 1)
        return LOOM_OK;
    int rc = r->score(r->user, sizes, &r->best, err);
    if (rc != LOOM_OK)
        return rc;
    r->evaluations = 1;
    r->initial = r->best;
    int32_t last_from = -1, last_to = -1; /* the move just taken, not undone */
    for (int improved = 1; improved;) {
        improved = 0;
        lk_loads(layer_weight, n_pos, sizes, load);
        lk_by_load(load, n_pos, scratch);
        /* boundary layers of the heaviest position first, then the next */
        for (int32_t k = 0; k < n_pos && !improved; k++) {
            int32_t s = scratch[k];
            for (int side = 0; side < 2 && !improved; side++) {
                int32_t to = side == 0 ? s - 1 : s + 1;
                if (to < 0 || to >= n_pos || sizes[s] < 2 || (s == last_to && to == last_from))
                    continue;
                if (r->evaluations >= r->max_evaluations || (r->stop && r->stop(r->user)))
                    return LOOM_OK;
                sizes[s]--;
                sizes[to]++;
                loom_lk_split_score sc = {0, 0};
                rc = r->score(r->user, sizes, &sc, err);
                r->evaluations++;
                if (rc != LOOM_OK)
                    return rc;
                if (lk_better(&sc, &r->best)) {
                    r->best = sc;
                    r->moves++;
                    last_from = s;
                    last_to = to;
                    improved = 1;
                } else {
                    sizes[s]++;
                    sizes[to]--;
                }
            }
        }
    }
    return LOOM_OK;
}

void loom_lk_partition_free(const loom_host_api *host, loom_partition *p)
{
    if (!p)
        return;
    host->free(p->flows);
    host->free(p->positions);
    host->free(p->spans);
    host->free(p->sample_mb);
    host->free(p->subs);
    host->free(p->cp_attention_scale);
    host->free(p->layouts);
    host->free(p);
}

/* host->alloc of n elements of `size` bytes (at least one), zeroed. */
static void *lk_zalloc(const loom_host_api *host, size_t n, size_t size)
{
    size_t bytes = (n ? n : 1) * size;
    void *p = host->alloc(bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

loom_partition *loom_lk_partition_new(const loom_host_api *host, const loom_problem *problem,
                                      int32_t n_pos, int32_t n_samples)
{
    const loom_model *model = problem->model;
    int32_t mbs = problem->parallel.microbatches;
    loom_partition *p = lk_zalloc(host, 1, sizeof *p);
    if (!p)
        return NULL;
    p->struct_size = sizeof *p;
    p->cap_flows = 1;
    p->cap_positions = n_pos;
    p->cap_spans = n_pos + model->n_modules;
    p->cap_microbatches = mbs;
    p->n_samples = n_samples;
    p->n_modules = model->n_modules;
    p->tp = problem->parallel.tp;
    p->cap_layouts = model->n_modules;
    p->flows = lk_zalloc(host, 1, sizeof *p->flows);
    p->positions = lk_zalloc(host, (size_t)n_pos, sizeof *p->positions);
    p->spans = lk_zalloc(host, (size_t)p->cap_spans, sizeof *p->spans);
    p->sample_mb = lk_zalloc(host, (size_t)model->n_modules * (size_t)n_samples, sizeof(int32_t));
    p->subs = lk_zalloc(host, (size_t)mbs, sizeof *p->subs);
    p->cp_attention_scale = lk_zalloc(host, (size_t)mbs, sizeof(double));
    p->layouts = lk_zalloc(host, (size_t)model->n_modules, sizeof *p->layouts);
    if (!p->flows || !p->positions || !p->spans || !p->sample_mb || !p->subs ||
        !p->cp_attention_scale || !p->layouts) {
        loom_lk_partition_free(host, p);
        return NULL;
    }
    for (size_t i = 0; i < (size_t)model->n_modules * (size_t)n_samples; i++)
        p->sample_mb[i] = -1;
    for (int32_t i = 0; i < mbs; i++) {
        p->subs[i] = 1;
        p->cp_attention_scale[i] = 1.0;
    }
    return p;
}
