/* out_frame.c - what every writer shares: the plan checks before
 * anything is written (every number finite), the "C" locale a writer runs
 * in, and the stage facts several formats print (policy names, fills). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "output.h"

/* LOOM_EINVAL naming the first non-finite value among v[0..n) (`name`,
 * indexed by `index_name` when n > 1), else LOOM_OK. */
static int check_numbers(const double *v, int64_t n, const char *name, const char *index_name,
                         loom_error *err)
{
    for (int64_t i = 0; v && i < n; i++) {
        if (isfinite(v[i]))
            continue;
        if (index_name)
            return loom_set_error(err, LOOM_EINVAL,
                                  "the plan's %s of %s %lld is %g, expected a finite number; "
                                  "refusing to write it", name, index_name, (long long)i, v[i]);
        return loom_set_error(err, LOOM_EINVAL,
                              "the plan's %s is %g, expected a finite number; refusing to "
                              "write it", name, v[i]);
    }
    return LOOM_OK;
}

int loom_plan_check_finite(const loom_plan *plan, loom_error *err)
{
    if (!plan)
        return loom_set_error(err, LOOM_EINVAL, "no plan");
    const loom_metrics *m = &plan->metrics;
    const loom_stage_graph *g = plan->graph;
    const double scalars[] = {m->makespan_ms, m->bubble_ratio, m->mfu, m->max_span_ms,
                              plan->plan_time_ms, m->hfu};
    static const char *const names[] = {"makespan_ms", "bubble_ratio", "mfu", "max_span_ms",
                                        "plan_time_ms", "hfu"};
    int rc = LOOM_OK;
    for (int i = 0; rc == LOOM_OK && i < 6; i++)
        rc = check_numbers(&scalars[i], 1, names[i], NULL, err);
    if (rc != LOOM_OK || !g)
        return rc;
    if (!rc)
        rc = check_numbers(&g->memory_cap_bytes, 1, "memory_cap_bytes", NULL, err);
    if (!rc)
        rc = check_numbers(m->span_ms, g->n_ranks, "span_ms", "rank", err);
    if (!rc)
        rc = check_numbers(m->start_ms, g->n_stages, "start_ms", "stage", err);
    if (!rc)
        rc = check_numbers(m->compute_ms, g->n_ranks, "compute_ms", "rank", err);
    if (!rc)
        rc = check_numbers(m->dp_sync_ms, g->n_ranks, "dp_sync_ms", "rank", err);
    if (!rc)
        rc = check_numbers(m->bubble_ms, g->n_ranks, "bubble_ms", "rank", err);
    if (!rc)
        rc = check_numbers(m->end_ms, g->n_stages, "end_ms", "stage", err);
    if (!rc)
        rc = check_numbers(g->duration_ms, g->n_stages, "duration_ms", "stage", err);
    if (!rc)
        rc = check_numbers(g->pred_p2p_ms, g->n_edges, "transfer time (pred_p2p_ms)", "edge",
                           err);
    for (int32_t i = 0; rc == LOOM_OK && plan->priorities && i < g->n_groups; i++)
        if (!isfinite(plan->priorities[i]))
            rc = loom_set_error(err, LOOM_EINVAL,
                                "the plan's priority of group %d is %g, expected a finite "
                                "number; refusing to write it", (int)i,
                                (double)plan->priorities[i]);
    return rc;
}

int loom_out_begin(const loom_plan *plan, const char *what,
                   loom_out_frame *frame, loom_error *err)
{
    frame->c_locale = (locale_t)0;
    frame->saved = (locale_t)0;
    if (!plan || !plan->graph || !plan->schedule)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: the plan has no stage graph or no schedule", what);
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *s = plan->schedule;
    const loom_metrics *m = &plan->metrics;
    if (!m->start_ms || !m->end_ms || !m->span_ms || !m->peak_bytes)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: the plan's metrics lack %s (expected every optional "
                              "array of the simulator set)", what,
                              !m->start_ms ? "start_ms" : !m->end_ms ? "end_ms"
                              : !m->span_ms ? "span_ms" : "peak_bytes");
    int rc = loom_graph_check(g, err);
    if (rc != LOOM_OK)
        return rc;
    if ((rc = loom_plan_check_finite(plan, err)) != LOOM_OK)
        return loom_error_prefix(err, rc, what);
    if (s->n_ranks != g->n_ranks || !s->rank_off || s->rank_off[0] != 0 ||
        s->rank_off[s->n_ranks] != g->n_stages)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: the schedule lists %d stages on %d ranks, expected "
                              "the stage graph's %d stages on %d ranks", what,
                              s->rank_off ? s->rank_off[s->n_ranks] : 0, s->n_ranks,
                              g->n_stages, g->n_ranks);
    uint8_t *seen = calloc((size_t)g->n_stages + 1, 1);
    if (!seen)
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", what);
    for (int32_t r = 0; r < g->n_ranks && rc == LOOM_OK; r++)
        for (int32_t i = s->rank_off[r]; i < s->rank_off[r + 1]; i++) {
            int32_t st = s->order[i];
            if (st < 0 || st >= g->n_stages || g->rank[st] != r || seen[st]) {
                rc = loom_set_error(err, LOOM_EINVAL,
                                    "%s: schedule entry %d of rank %d is stage %d, "
                                    "expected a stage of that rank listed once",
                                    what, i - s->rank_off[r], r, st);
                break;
            }
            seen[st] = 1;
        }
    free(seen);
    if (rc != LOOM_OK)
        return rc;
    frame->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (frame->c_locale == (locale_t)0)
        return loom_set_error(err, LOOM_ENOMEM, "%s: cannot create the C locale", what);
    frame->saved = uselocale(frame->c_locale);
    return LOOM_OK;
}

int loom_out_end(loom_out_frame *frame, FILE *out, const char *what, int rc,
                 loom_error *err)
{
    if (frame->c_locale != (locale_t)0) {
        uselocale(frame->saved);
        freelocale(frame->c_locale);
        frame->c_locale = (locale_t)0;
    }
    if (rc == LOOM_OK && ferror(out))
        rc = loom_set_error(err, LOOM_EIO, "%s: writing the output failed", what);
    return rc;
}

const char *loom_out_policy_name(int policy)
{
    switch (policy) {
    case LOOM_POLICY_NONE: return "none";
    case LOOM_POLICY_SELECTIVE: return "selective";
    case LOOM_POLICY_FULL: return "full";
    case LOOM_POLICY_OFFLOAD: return "offload";
    case LOOM_OUT_POLICY_MIXED: return "mixed";
    default: return "unknown";
    }
}

int32_t loom_out_fill_hosts(const loom_schedule *sched, int32_t s)
{
    const int32_t *fill = loom_schedule_fills(sched);
    return fill && fill[s] > 0 ? fill[s] : 0;
}

int loom_out_stage_policy(const loom_stage_graph *g, int32_t stage)
{
    int32_t pair = g->pair ? g->pair[stage] : -1;
    if (!g->layer_policy || !g->pair_layer_off || pair < 0 || pair >= g->n_pairs)
        return LOOM_POLICY_NONE;
    int32_t lo = g->pair_layer_off[pair], hi = g->pair_layer_off[pair + 1];
    if (lo < 0 || hi <= lo || hi > g->n_layer_entries)
        return LOOM_POLICY_NONE;
    int policy = g->layer_policy[lo];
    for (int32_t i = lo + 1; i < hi; i++)
        if (g->layer_policy[i] != policy)
            return LOOM_OUT_POLICY_MIXED;
    return policy;
}


int loom_out_refuse(char reason[LOOM_OUT_REASON_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, LOOM_OUT_REASON_MAX, fmt, ap);
    va_end(ap);
    return 0;
}

int loom_out_spans_continue(const loom_plan *plan, const loom_position *pos, int32_t stage,
                            int32_t *next, const char *who, char reason[LOOM_OUT_REASON_MAX])
{
    const loom_partition *part = plan->partition;
    for (int32_t k = 0; pos && k < pos->n_spans; k++) {
        const loom_span *sp = &part->spans[pos->span_off + k];
        if (sp->first_layer != *next)
            return loom_out_refuse(reason,
                                   "stage %d starts a span at layer %d, expected layer %d: %s "
                                   "stages hold consecutive layers in order",
                                   stage, sp->first_layer, *next, who);
        *next += sp->n_layers;
    }
    return 1;
}
