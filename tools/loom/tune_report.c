/* tune_report.c - the pruned walk of `loom tune` over its configurations,
 * and what it prints: the ranked table, the JSON report and the shard
 * files `loom tune merge` puts together. A run and a merge of its shards
 * print through the same walk and writer, from the same numbers (shard
 * files keep every double to 17 significant digits), so their bytes agree. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <loom/sys/json.h>
#include "cli.h"
#include "tune.h"

#define GIB 1073741824.0

/* Orders by lower bound, then by enumeration index. */
static int by_bound(const void *pa, const void *pb)
{
    const loom_tune_key *a = pa, *b = pb;
    if (a->bound_ms != b->bound_ms)
        return a->bound_ms < b->bound_ms ? -1 : 1;
    return (a->at > b->at) - (a->at < b->at);
}

void loom_tune_keep_best(double *best, int32_t *n, int32_t k, double ms)
{
    if (*n == k && ms >= best[k - 1])
        return;
    int32_t i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && best[i - 1] > ms) {
        best[i] = best[i - 1];
        i--;
    }
    best[i] = ms;
}

/* Orders ranked configurations by makespan, then enumeration index. */
static const loom_tune_config *rank_base;
static int by_makespan(const void *pa, const void *pb)
{
    const loom_tune_config *a = &rank_base[*(const int32_t *)pa];
    const loom_tune_config *b = &rank_base[*(const int32_t *)pb];
    if (a->result.makespan_ms != b->result.makespan_ms)
        return a->result.makespan_ms < b->result.makespan_ms ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Orders configuration positions by enumeration index. */
static int by_index(const void *pa, const void *pb)
{
    const loom_tune_config *a = &rank_base[*(const int32_t *)pa];
    const loom_tune_config *b = &rank_base[*(const int32_t *)pb];
    return (a->index > b->index) - (a->index < b->index);
}

/* The ranked and infeasible lists of the configurations the walk visited. */
static int collect(loom_tune_search *t, const char *visited, loom_tune_walk *w)
{
    w->ranked = calloc((size_t)t->n_configs + 1, sizeof *w->ranked);
    w->infeasible = calloc((size_t)t->n_configs + 1, sizeof *w->infeasible);
    if (!w->ranked || !w->infeasible)
        return LOOM_ENOMEM;
    for (int32_t i = 0; i < t->n_configs; i++) {
        const loom_tune_config *c = &t->configs[i];
        if (visited[i] && c->result.feasible)
            w->ranked[w->n_ranked++] = i;
        else if (visited[i] || c->static_reason)
            w->infeasible[w->n_infeasible++] = i;
    }
    rank_base = t->configs;
    qsort(w->ranked, (size_t)w->n_ranked, sizeof *w->ranked, by_makespan);
    qsort(w->infeasible, (size_t)w->n_infeasible, sizeof *w->infeasible, by_index);
    if (w->n_ranked > t->top)
        w->n_ranked = t->top;
    return LOOM_OK;
}

loom_tune_key *loom_tune_bound_order(const loom_tune_search *t, int32_t *n)
{
    loom_tune_key *order = calloc((size_t)t->n_configs + 1, sizeof *order);
    *n = 0;
    if (!order)
        return NULL;
    for (int32_t i = 0; i < t->n_configs; i++)
        if (t->no_prune || !t->configs[i].static_reason)
            order[(*n)++] = (loom_tune_key){t->configs[i].lower_bound_ms, i};
    qsort(order, (size_t)*n, sizeof *order, by_bound);
    return order;
}

int loom_tune_walk_run(loom_tune_search *t, int (*sim)(void *user, loom_tune_config *c),
                       void *user, loom_tune_walk *w)
{
    memset(w, 0, sizeof *w);
    int32_t n = 0, nbest = 0, k = t->top;
    loom_tune_key *order = loom_tune_bound_order(t, &n);
    double *best = calloc((size_t)k + 1, sizeof *best);
    char *visited = calloc((size_t)t->n_configs + 1, 1);
    int rc = order && best && visited ? LOOM_OK : LOOM_ENOMEM;
    int32_t j = 0;
    for (; rc == LOOM_OK && j < n; j++) {
        if (!t->no_prune && nbest >= k && order[j].bound_ms > best[k - 1])
            break; /* this and every later bound exceed the k-th best */
        loom_tune_config *c = &t->configs[order[j].at];
        if ((rc = sim(user, c)) != LOOM_OK)
            break;
        visited[order[j].at] = 1;
        w->simulated++;
        if (c->result.feasible)
            loom_tune_keep_best(best, &nbest, k, c->result.makespan_ms);
    }
    w->considered = t->n_configs;
    w->pruned = rc == LOOM_OK ? n - j : 0;
    if (rc == LOOM_OK)
        rc = collect(t, visited, w);
    free(order);
    free(best);
    free(visited);
    return rc;
}

void loom_tune_walk_clear(loom_tune_walk *w)
{
    free(w->ranked);
    free(w->infeasible);
    memset(w, 0, sizeof *w);
}


void loom_tune_layout_json(FILE *out, const loom_parallel *p, int32_t micro_batch_size,
                           int64_t global_batch)
{
    fprintf(out, "{\"tp\": %d, \"cp\": %d, \"pp\": %d, \"dp\": %d, \"vpp\": %d, "
            "\"microbatches\": %d, \"micro_batch_size\": %d, \"global_batch\": %lld, "
            "\"gpus\": %lld}", p->tp, loom_parallel_cp(p), p->pp, p->dp, p->vpp,
            p->microbatches, micro_batch_size, (long long)global_batch,
            (long long)p->tp * p->pp * p->dp * loom_parallel_cp(p));
}

/* The layout of configuration c. */
static void layout_of(const loom_tune_search *t, const loom_tune_config *c, FILE *out)
{
    loom_tune_config_layout_json(out, t, c);
}

/* One ranked entry. */
static void ranked_json(const loom_tune_search *t, const loom_tune_config *c, int32_t rank,
                        FILE *out)
{
    const loom_tune_result *r = &c->result;
    fprintf(out, "    {\"rank\": %d, \"layout\": ", rank);
    layout_of(t, c, out);
    fputs(", \"manifest\": ", out);
    loom_cli_json_string(out, t->manifest_names[c->manifest]);
    fprintf(out, ", \"makespan_ms\": %.6f, \"lower_bound_ms\": %.6f, \"bubble_ratio\": %.6f, "
            "\"mfu\": ", r->makespan_ms, c->lower_bound_ms, r->bubble_ratio);
    if (r->mfu < 0)
        fputs("null", out);
    else
        fprintf(out, "%.6f", r->mfu);
    fputs(", \"peak_mem_bytes\": [", out);
    for (int32_t q = 0; q < r->n_ranks; q++)
        fprintf(out, "%s%lld", q ? ", " : "", (long long)r->peak_mem_bytes[q]);
    fprintf(out, "], \"memory_cap_bytes\": %.0f, \"feasible\": true}", r->memory_cap_bytes);
}

/* One infeasible entry. */
static void infeasible_json(const loom_tune_search *t, const loom_tune_config *c, FILE *out)
{
    int sim = c->simulated && c->result.reason;
    fputs("    {\"layout\": ", out);
    layout_of(t, c, out);
    fputs(", \"manifest\": ", out);
    loom_cli_json_string(out, t->manifest_names[c->manifest]);
    fputs(", \"reason\": ", out);
    loom_cli_json_string(out, sim ? c->result.reason : c->static_reason);
    fprintf(out, ", \"simulated\": %s}", sim ? "true" : "false");
}

int loom_tune_write_json(const loom_tune_search *t, const loom_tune_walk *w, FILE *out)
{
    fputs("{\"model\": ", out);
    loom_cli_json_string(out, t->model);
    fputs(", \"cluster\": ", out);
    loom_cli_json_string(out, t->cluster);
    fprintf(out, ", \"gpus\": %lld, \"global_batch\": %lld, \"seq_len\": %d, \"manifests\": [",
            (long long)t->gpus, (long long)t->global_batch, t->seq_len);
    for (int32_t m = 0; m < t->n_manifests; m++) {
        fputs(m ? ", " : "", out);
        loom_cli_json_string(out, t->manifest_names[m]);
    }
    fputs("]", out);
    if (t->runtime) {
        fputs(", \"runtime\": ", out);
        loom_cli_json_string(out, t->runtime);
    }
    fputs(",\n  \"ranked\": [", out);
    for (int32_t i = 0; i < w->n_ranked; i++) {
        fputs(i ? ",\n" : "\n", out);
        ranked_json(t, &t->configs[w->ranked[i]], i + 1, out);
    }
    fputs(w->n_ranked ? "\n  ],\n  \"infeasible\": [" : "],\n  \"infeasible\": [", out);
    for (int32_t i = 0; i < w->n_infeasible; i++) {
        fputs(i ? ",\n" : "\n", out);
        infeasible_json(t, &t->configs[w->infeasible[i]], out);
    }
    fprintf(out, "%s\"considered\": %d, \"simulated\": %d, \"pruned\": %d}\n",
            w->n_infeasible ? "\n  ],\n  " : "],\n  ", w->considered, w->simulated, w->pruned);
    return ferror(out) ? LOOM_EIO : LOOM_OK;
}

/* A layout in one short line; a module laid out on its own follows as
 * "+vit tp1 pp1 dp16 colo" (colocated) or "disj" (its own GPUs). */
static void layout_text(const loom_tune_search *t, const loom_tune_config *c, char *buf,
                        size_t size)
{
    int n = snprintf(buf, size, "tp%d cp%d pp%d dp%d vpp%d K%d M%d", c->par.tp,
                     loom_parallel_cp(&c->par), c->par.pp, c->par.dp, c->par.vpp,
                     c->micro_batch_size, c->par.microbatches);
    if (c->module >= 0 && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " +%.12s tp%d pp%d dp%d %s",
                 t->module_names[c->module], c->module_tp, c->module_pp, c->module_dp,
                 c->module_placement == LOOM_LAYOUT_DISJOINT ? "disj" : "colo");
}

void loom_tune_write_table(const loom_tune_search *t, const loom_tune_walk *w, FILE *out)
{
    char lay[128];
    int with_modules = 0;
    for (int32_t i = 0; i < w->n_ranked; i++)
        with_modules |= t->configs[w->ranked[i]].module >= 0;
    int width = with_modules ? 64 : 36;
    fprintf(out, "%-4s %-*s %-18s %12s %7s %18s\n", "rank", width, "layout", "manifest", "iter_ms",
            "mfu", "peak/cap GiB");
    for (int32_t i = 0; i < w->n_ranked; i++) {
        const loom_tune_config *c = &t->configs[w->ranked[i]];
        const loom_tune_result *r = &c->result;
        int64_t peak = 0;
        for (int32_t q = 0; q < r->n_ranks; q++)
            peak = r->peak_mem_bytes[q] > peak ? r->peak_mem_bytes[q] : peak;
        char mfu[16];
        snprintf(mfu, sizeof mfu, r->mfu < 0 ? "n/a" : "%.3f", r->mfu);
        layout_text(t, c, lay, sizeof lay);
        fprintf(out, "%-4d %-*s %-18.18s %12.3f %7s %8.2f/%-9.2f\n", i + 1, width, lay,
                t->manifest_names[c->manifest], r->makespan_ms, mfu, peak / GIB,
                r->memory_cap_bytes / GIB);
    }
    if (w->n_infeasible)
        fprintf(out, "infeasible (%d):\n", w->n_infeasible);
    for (int32_t i = 0; i < w->n_infeasible && i < LOOM_TUNE_TABLE_INFEASIBLE; i++) {
        const loom_tune_config *c = &t->configs[w->infeasible[i]];
        layout_text(t, c, lay, sizeof lay);
        fprintf(out, "  %-*s %-18.18s %s\n", width, lay, t->manifest_names[c->manifest],
                c->simulated && c->result.reason ? c->result.reason : c->static_reason);
    }
    if (w->n_infeasible > LOOM_TUNE_TABLE_INFEASIBLE)
        fprintf(out, "  ... and %d more (--json lists every one)\n",
                w->n_infeasible - LOOM_TUNE_TABLE_INFEASIBLE);
    fprintf(out, "considered %d, simulated %d, pruned %d (infeasible by the static-memory "
            "floor: %d)\n", w->considered, w->simulated, w->pruned,
            w->considered - w->simulated - w->pruned);
}
