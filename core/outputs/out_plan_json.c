/* out_plan_json.c - plan.json (format 2): metrics, partition, stages and the per-rank
 * action lists a runtime executes (PipeWeaver Table 2 actions); the
 * format-2 sections come from out_plan_exports.c, out_exports.c and
 * out_data.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "output.h"

/* ---- metrics and partition ----------------------------------------------- */

/* Writes `key` then a module name or null. */
static void module_field(FILE *out, const loom_plan *plan, const char *key,
                         int32_t module)
{
    const char *name = loom_out_module_name(plan, module);
    fprintf(out, "\"%s\": ", key);
    if (name)
        loom_out_json_string(out, name);
    else
        fputs("null", out);
}

/* The makespan lower bound, the interleaver's proven bound (null when it
 * proved none) and the gap (makespan - bound) / makespan; 0 when the
 * order is proven optimal. */
static void write_bound(const loom_plan *plan, FILE *out)
{
    double span = plan->metrics.makespan_ms, lb = plan->lower_bound_ms;
    fputs(", \"lower_bound_ms\": ", out);
    loom_out_json_number(out, lb);
    fputs(", \"interleaver_bound_ms\": ", out);
    if (plan->interleaver_bound_ms > 0)
        loom_out_json_number(out, plan->interleaver_bound_ms);
    else
        fputs("null", out);
    fputs(", \"optimality_gap\": ", out);
    loom_out_json_number(out, span > 0 && lb < span ? (span - lb) / span : 0.0);
}

/* The "metrics" object. */
static int write_metrics(const loom_plan *plan, FILE *out, loom_error *err)
{
    const loom_metrics *m = &plan->metrics;
    const loom_stage_graph *g = plan->graph;
    fputs("  \"metrics\": {\"makespan_ms\": ", out);
    loom_out_json_number(out, m->makespan_ms);
    fputs(", \"span_ms\": [", out);
    for (int32_t r = 0; r < g->n_ranks; r++) {
        fputs(r ? ", " : "", out);
        loom_out_json_number(out, m->span_ms[r]);
    }
    fputs("], \"bubble_ratio\": ", out);
    loom_out_json_number(out, m->bubble_ratio);
    fputs(", \"peak_mem_bytes\": [", out);
    for (int32_t r = 0; r < g->n_ranks; r++)
        fprintf(out, "%s%lld", r ? ", " : "", (long long)m->peak_bytes[r]);
    double *recompute = malloc((size_t)g->n_ranks * sizeof *recompute);
    if (!recompute)
        return loom_set_error(err, LOOM_ENOMEM, "plan.json: out of memory");
    loom_graph_recompute_ms(g, recompute);
    fputs("], \"recompute_ms\": [", out);
    for (int32_t r = 0; r < g->n_ranks; r++) {
        fputs(r ? ", " : "", out);
        loom_out_json_number(out, recompute[r]);
    }
    free(recompute);
    fputs("], \"mfu\": ", out);
    if (m->mfu >= 0)
        loom_out_json_number(out, m->mfu);
    else
        fputs("null", out);
    fputs(", \"hfu\": ", out);
    if (m->hfu >= 0)
        loom_out_json_number(out, m->hfu);
    else
        fputs("null", out);
    /* where each rank's makespan goes (the simulator's breakdown) */
    const double *parts[5] = {m->compute_ms, m->p2p_wait_ms, m->dp_sync_ms, m->optimizer_ms,
                              m->bubble_ms};
    static const char *const part_names[5] = {"compute_ms", "p2p_wait_ms", "dp_sync_ms",
                                              "optimizer_ms", "bubble_ms"};
    if (parts[0] && parts[1] && parts[2] && parts[3] && parts[4]) {
        fputs(", \"breakdown\": {", out);
        for (int k = 0; k < 5; k++) {
            fprintf(out, "%s\"%s\": [", k ? ", " : "", part_names[k]);
            for (int32_t r = 0; r < g->n_ranks; r++) {
                fputs(r ? ", " : "", out);
                loom_out_json_number(out, parts[k][r]);
            }
            fputs("]", out);
        }
        fputs("}", out);
    }
    /* no plan_time_ms: plan.json is byte-identical for the same inputs and
     * seed; the wall time is in `loom plan --json` and the summary */
    fprintf(out, ", \"evaluations\": %lld, \"max_span_ms\": ",
            (long long)plan->evaluations);
    loom_out_json_number(out, m->max_span_ms);
    fprintf(out, ", \"max_peak_bytes\": %lld, \"cap_violations\": %d, "
                 "\"memory_cap_bytes\": ",
            (long long)m->max_peak_bytes, m->cap_violations);
    if (g->memory_cap_bytes > 0)
        loom_out_json_number(out, g->memory_cap_bytes);
    else
        fputs("null", out);
    /* false: some rank's peak exceeds the cap; the makespan is not valid */
    fprintf(out, ", \"feasible\": %s", m->cap_violations > 0 ? "false" : "true");
    write_bound(plan, out);
    fputs("},\n", out);
    return LOOM_OK;
}

/* Chunk (virtual stage index on its rank) of every partition position:
 * from the stage graph, else the position's ordinal among its rank's. */
static int32_t *position_chunks(const loom_plan *plan)
{
    const loom_partition *part = plan->partition;
    const loom_stage_graph *g = plan->graph;
    int32_t n = part->n_positions;
    int32_t *chunk = malloc((size_t)(n > 0 ? n : 1) * sizeof *chunk);
    int32_t *count = calloc((size_t)(part->n_ranks > 0 ? part->n_ranks : 1),
                            sizeof *count);
    if (!chunk || !count) {
        free(chunk);
        free(count);
        return NULL;
    }
    for (int32_t i = 0; i < n; i++)
        chunk[i] = -1;
    for (int32_t s = 0; s < g->n_stages; s++) {
        int32_t f = g->flow[s];
        if (f < 0 || f >= part->n_flows || g->position[s] < 0 ||
            g->position[s] >= part->flows[f].n_pos)
            continue;
        int32_t k = part->flows[f].pos_off + g->position[s];
        if (k >= 0 && k < n)
            chunk[k] = g->chunk[s];
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t r = part->positions[i].rank;
        if (r < 0 || r >= part->n_ranks)
            continue;
        if (chunk[i] < 0)
            chunk[i] = count[r];
        count[r]++;
    }
    free(count);
    return chunk;
}

/* The "partition" object (null for stage-times problems). */
static int write_partition(const loom_plan *plan, FILE *out, loom_error *err)
{
    const loom_partition *part = plan->partition;
    if (!part) {
        fputs("  \"partition\": null,\n", out);
        return LOOM_OK;
    }
    int32_t *chunk = position_chunks(plan);
    if (!chunk)
        return loom_set_error(err, LOOM_ENOMEM, "plan.json: out of memory");
    fputs("  \"partition\": {\"label\": ", out);
    loom_out_json_string(out, part->label);
    fprintf(out, ", \"ranks\": %d, \"tp\": %d, \"split_backward\": %s, "
                 "\"microbatches\": %d, \"flows\": [",
            part->n_ranks, part->tp, part->split_backward ? "true" : "false",
            part->n_microbatches);
    for (int32_t f = 0; f < part->n_flows; f++) {
        const loom_flow *fl = &part->flows[f];
        fprintf(out, "%s\n    {", f ? "," : "");
        module_field(out, plan, "module", fl->module);
        fputs(", \"inputs\": [", out);
        for (int32_t i = 0; i < fl->n_inputs && i < LOOM_MAX_FLOW_INPUTS; i++)
            fprintf(out, "%s%d", i ? ", " : "", fl->inputs[i]);
        fprintf(out, "], \"segments\": %d, \"subs\": [", fl->segments);
        for (int32_t mb = 0; part->subs && mb < part->n_microbatches; mb++)
            fprintf(out, "%s%d", mb ? ", " : "",
                    part->subs[(size_t)f * (size_t)part->cap_microbatches + (size_t)mb]);
        fputs("], \"positions\": [", out);
        for (int32_t p = 0; p < fl->n_pos; p++) {
            int32_t k = fl->pos_off + p;
            const loom_position *pos = &part->positions[k];
            fprintf(out, "%s\n      {\"rank\": %d, \"chunk\": %d, \"spans\": [",
                    p ? "," : "", pos->rank, chunk[k]);
            for (int32_t i = 0; i < pos->n_spans; i++) {
                const loom_span *sp = &part->spans[pos->span_off + i];
                fputs(i ? ", {" : "{", out);
                module_field(out, plan, "module", sp->module);
                fprintf(out, ", \"first_layer\": %d, \"layers\": %d}",
                        sp->first_layer, sp->n_layers);
            }
            fputs("]}", out);
        }
        fputs("]}", out);
    }
    fputs("]},\n", out);
    free(chunk);
    return LOOM_OK;
}

/* The "stages" array, by stage id; every stage of a model plan (and a
 * stage-times stage whose policy is mixed) lists its layers' policies. */
static void write_stages(const loom_plan *plan, FILE *out)
{
    const loom_stage_graph *g = plan->graph;
    fputs("  \"stages\": [", out);
    for (int32_t s = 0; s < g->n_stages; s++) {
        fprintf(out, "%s\n    {\"id\": %d, \"rank\": %d, \"kind\": \"%c\", ",
                s ? "," : "", s, g->rank[s], loom_out_kind_char(g->kind[s]));
        module_field(out, plan, "module", g->module[s]);
        fprintf(out, ", \"flow\": %d, \"position\": %d, \"chunk\": %d, "
                     "\"microbatch\": %d, \"sub\": %d, \"group\": %d, \"pair\": %d, "
                     "\"start_ms\": ",
                g->flow[s], g->position[s], g->chunk[s], g->microbatch[s],
                g->sub[s], g->group[s], g->pair[s]);
        loom_out_json_number(out, plan->metrics.start_ms[s]);
        fputs(", \"end_ms\": ", out);
        loom_out_json_number(out, plan->metrics.end_ms[s]);
        int policy = loom_out_stage_policy(g, s);
        fprintf(out, ", \"mem_delta_bytes\": %lld, \"policy\": \"%s\"",
                (long long)g->mem_delta_bytes[s], loom_out_policy_name(policy));
        if ((policy == LOOM_OUT_POLICY_MIXED || plan->partition) && g->layer_policy &&
            g->pair_layer_off && g->pair[s] >= 0 && g->pair[s] < g->n_pairs) {
            int32_t pair = g->pair[s];
            fputs(", \"layer_policies\": [", out);
            for (int32_t i = g->pair_layer_off[pair]; i < g->pair_layer_off[pair + 1]; i++)
                fprintf(out, "%s\"%s\"", i > g->pair_layer_off[pair] ? ", " : "",
                        loom_out_policy_name(g->layer_policy[i]));
            fputc(']', out);
        }
        fputc('}', out);
    }
    fputs("\n  ],\n", out);
}

/* The column names of the compact "stages" table, in row order. */
static const char *const compact_columns[] = {
    "id", "rank", "kind", "module", "flow", "position", "chunk", "microbatch", "sub",
    "group", "pair", "start_ms", "end_ms", "mem_delta_bytes", "policy", "fill_hosts"};

/* The compact "stages" table: the columns once, then a row per stage id
 * holding the full form's fields in that order (no layer_policies);
 * fill_hosts is 0 for an ordinary stage. */
static void write_stage_rows(const loom_plan *plan, FILE *out)
{
    const loom_stage_graph *g = plan->graph;
    fputs("  \"stages\": {\"columns\": [", out);
    for (size_t i = 0; i < sizeof compact_columns / sizeof *compact_columns; i++)
        fprintf(out, "%s\"%s\"", i ? ", " : "", compact_columns[i]);
    fputs("], \"rows\": [", out);
    for (int32_t s = 0; s < g->n_stages; s++) {
        fprintf(out, "%s\n    [%d, %d, \"%c\", ", s ? "," : "", s, g->rank[s],
                loom_out_kind_char(g->kind[s]));
        const char *name = loom_out_module_name(plan, g->module[s]);
        if (name)
            loom_out_json_string(out, name);
        else
            fputs("null", out);
        fprintf(out, ", %d, %d, %d, %d, %d, %d, %d, ", g->flow[s], g->position[s],
                g->chunk[s], g->microbatch[s], g->sub[s], g->group[s], g->pair[s]);
        loom_out_json_number(out, plan->metrics.start_ms[s]);
        fputs(", ", out);
        loom_out_json_number(out, plan->metrics.end_ms[s]);
        int hosts = loom_out_fill_hosts(plan->schedule, s);
        fprintf(out, ", %lld, \"%s\", %d]", (long long)g->mem_delta_bytes[s],
                loom_out_policy_name(loom_out_stage_policy(g, s)), hosts > 0 ? hosts : 0);
    }
    fputs("\n  ]},\n", out);
}

/* The compact form's "rank_actions": null, then "rank_orders": every
 * rank's stage ids in the order it runs them. */
static void write_rank_orders(const loom_plan *plan, FILE *out)
{
    const loom_schedule *sc = plan->schedule;
    fputs("  \"rank_actions\": null,\n  \"rank_orders\": [", out);
    for (int32_t r = 0; r < sc->n_ranks; r++) {
        fputs(r ? ",\n    [" : "\n    [", out);
        for (int32_t j = sc->rank_off[r]; j < sc->rank_off[r + 1]; j++)
            fprintf(out, "%s%d", j > sc->rank_off[r] ? ", " : "", sc->order[j]);
        fputc(']', out);
    }
    fputs("\n  ]\n", out);
}

/* ---- per-rank actions ------------------------------------------------------ */

enum { ACT_IRECV = 0, ACT_WAIT_ISEND = 1 };

/* An irecv or wait_isend, placed before stage `target` of its rank's list
 * (target == list length: after the last stage). */
typedef struct pending {
    int32_t rank, target, edge, type;
    double t_ms; /* producer end (irecv) or transfer end (wait_isend) */
} pending;

/* Orders pending actions by rank, slot, time, type, edge. */
static int pending_cmp(const void *a, const void *b)
{
    const pending *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->target != y->target)
        return x->target < y->target ? -1 : 1;
    if (x->t_ms != y->t_ms)
        return x->t_ms < y->t_ms ? -1 : 1;
    if (x->type != y->type)
        return x->type < y->type ? -1 : 1;
    return (x->edge > y->edge) - (x->edge < y->edge);
}

/* First index j in [lo, hi) of rank list `order` whose stage starts at or
 * after t (hi when none). Start times along one rank never decrease. */
static int32_t first_start_at(const int32_t *order, const double *start,
                              int32_t lo, int32_t hi, double t)
{
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (start[order[mid]] >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Working arrays of the action lists: the consumer of every edge, the
 * cross-rank out-edges of every stage (CSR) and the pending actions. */
typedef struct action_index {
    int32_t *consumer;  /* per edge */
    int32_t *succ_off;  /* n_stages + 1 */
    int32_t *succ;      /* cross-rank edge ids by producer */
    int32_t *slot;      /* per stage: index within its rank's list */
    pending *items;
    int32_t n_items;
} action_index;

/* Releases the index arrays (safe on a partly built index). */
static void action_index_free(action_index *ix)
{
    free(ix->consumer);
    free(ix->succ_off);
    free(ix->succ);
    free(ix->slot);
    free(ix->items);
}

/* Builds the index: every cross-rank edge yields an isend (by producer),
 * an irecv and a wait_isend slot, sorted for emission. */
static int action_index_build(const loom_plan *plan, action_index *ix)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    const double *start = plan->metrics.start_ms, *end = plan->metrics.end_ms;
    int32_t n = g->n_stages, E = g->pred_off[n];
    memset(ix, 0, sizeof *ix);
    ix->consumer = malloc((size_t)(E > 0 ? E : 1) * sizeof(int32_t));
    ix->succ_off = calloc((size_t)n + 2, sizeof(int32_t));
    ix->succ = malloc((size_t)(E > 0 ? E : 1) * sizeof(int32_t));
    ix->slot = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    ix->items = malloc((size_t)(E > 0 ? 2 * (size_t)E : 1) * sizeof(pending));
    if (!ix->consumer || !ix->succ_off || !ix->succ || !ix->slot || !ix->items)
        return LOOM_ENOMEM;
    for (int32_t r = 0; r < sc->n_ranks; r++)
        for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++)
            ix->slot[sc->order[i]] = i - sc->rank_off[r];
    for (int32_t s = 0; s < n; s++)
        for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++) {
            ix->consumer[e] = s;
            if (g->rank[g->pred[e]] != g->rank[s])
                ix->succ_off[g->pred[e] + 2]++;
        }
    for (int32_t s = 0; s < n; s++)
        ix->succ_off[s + 2] += ix->succ_off[s + 1];
    for (int32_t e = 0; e < E; e++) {
        int32_t p = g->pred[e], s = ix->consumer[e];
        int32_t a = g->rank[p], b = g->rank[s];
        if (a == b)
            continue;
        ix->succ[ix->succ_off[p + 1]++] = e;
        const int32_t *ob = sc->order + sc->rank_off[b];
        const int32_t *oa = sc->order + sc->rank_off[a];
        int32_t nb = sc->rank_off[b + 1] - sc->rank_off[b];
        int32_t na = sc->rank_off[a + 1] - sc->rank_off[a];
        pending *rv = &ix->items[ix->n_items++];
        rv->rank = b;
        rv->edge = e;
        rv->type = ACT_IRECV;
        rv->t_ms = end[p];
        rv->target = first_start_at(ob, start, 0, nb, end[p]);
        if (rv->target > ix->slot[s])
            rv->target = ix->slot[s];
        pending *ws = &ix->items[ix->n_items++];
        ws->rank = a;
        ws->edge = e;
        ws->type = ACT_WAIT_ISEND;
        ws->t_ms = end[p] + g->pred_p2p_ms[e];
        ws->target = first_start_at(oa, start, ix->slot[p] + 1, na, ws->t_ms);
    }
    qsort(ix->items, (size_t)ix->n_items, sizeof(pending), pending_cmp);
    return LOOM_OK;
}

/* One communication action of dependency edge `edge` (into stage
 * `consumer`); *clock_ms advances to its replay time. */
static void write_comm(FILE *out, const loom_plan *plan, const loom_out_data *d,
                       const char *action, int32_t stage, int32_t peer_stage, int32_t edge,
                       int32_t consumer, double t_ms, double *clock_ms, int *first)
{
    const loom_stage_graph *g = plan->graph;
    if (t_ms > *clock_ms)
        *clock_ms = t_ms;
    fprintf(out, "%s\n      {\"action\": \"%s\", \"stage\": %d, \"peer\": %d, "
                 "\"peer_stage\": %d, \"microbatch\": %d, \"sub\": %d, \"t_ms\": ",
            *first ? "" : ",", action, stage, g->rank[peer_stage], peer_stage,
            g->microbatch[stage], g->sub[stage]);
    loom_out_json_number(out, *clock_ms);
    int64_t rows = 0, cols = 0;
    if (loom_out_edge_tensor(plan, d, edge, consumer, &rows, &cols))
        fprintf(out, ", \"tensor\": {\"shape\": [%lld, %lld], \"dtype\": \"bfloat16\", "
                     "\"bytes\": %lld}}",
                (long long)rows, (long long)cols, (long long)(rows * cols * 2));
    else
        fputs(", \"tensor\": null}", out);
    *first = 0;
}

/* One pending irecv / wait_isend. */
static void write_pending(FILE *out, const loom_plan *plan, const loom_out_data *d,
                          const action_index *ix, const pending *it,
                          double *clock_ms, int *first)
{
    int32_t p = plan->graph->pred[it->edge], s = ix->consumer[it->edge];
    if (it->type == ACT_IRECV)
        write_comm(out, plan, d, "irecv", s, p, it->edge, s, it->t_ms, clock_ms, first);
    else
        write_comm(out, plan, d, "wait_isend", p, s, it->edge, s, it->t_ms, clock_ms, first);
}

/* The forward_stage / backward_stage action of stage s. */
static void write_stage_action(FILE *out, const loom_plan *plan, int32_t s,
                               double *clock_ms, int *first)
{
    const loom_stage_graph *g = plan->graph;
    double start = plan->metrics.start_ms[s], end = plan->metrics.end_ms[s];
    fprintf(out, "%s\n      {\"action\": \"%s\", \"stage\": %d, \"microbatch\": %d, "
                 "\"sub\": %d, \"chunk\": %d, \"kind\": \"%c\", \"start_ms\": ",
            *first ? "" : ",",
            g->kind[s] == LOOM_STAGE_F ? "forward_stage" : "backward_stage", s,
            g->microbatch[s], g->sub[s], g->chunk[s], loom_out_kind_char(g->kind[s]));
    loom_out_json_number(out, start);
    fputs(", \"end_ms\": ", out);
    loom_out_json_number(out, end);
    fprintf(out, ", \"policy\": \"%s\"", loom_out_policy_name(loom_out_stage_policy(g, s)));
    if (loom_out_fill_hosts(plan->schedule, s) > 0) /* runs inside the next k stages */
        fprintf(out, ", \"fill_hosts\": %d", loom_out_fill_hosts(plan->schedule, s));
    fputc('}', out);
    if (end > *clock_ms)
        *clock_ms = end;
    *first = 0;
}

/* The "rank_actions" array. */
static int write_actions(const loom_plan *plan, const loom_out_data *d, FILE *out,
                         loom_error *err)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    const double *end = plan->metrics.end_ms;
    action_index ix;
    if (action_index_build(plan, &ix) != LOOM_OK) {
        action_index_free(&ix);
        return loom_set_error(err, LOOM_ENOMEM, "plan.json: out of memory");
    }
    fputs("  \"rank_actions\": [", out);
    int32_t k = 0; /* next pending item */
    for (int32_t r = 0; r < sc->n_ranks; r++) {
        fprintf(out, "%s\n    {\"rank\": %d, \"actions\": [", r ? "," : "", r);
        int32_t n = sc->rank_off[r + 1] - sc->rank_off[r];
        double clock_ms = 0;
        int first = 1;
        for (int32_t j = 0; j <= n; j++) {
            for (; k < ix.n_items && ix.items[k].rank == r && ix.items[k].target == j; k++)
                write_pending(out, plan, d, &ix, &ix.items[k], &clock_ms, &first);
            if (j == n)
                break;
            int32_t s = sc->order[sc->rank_off[r] + j];
            for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++) {
                int32_t p = g->pred[e];
                if (g->rank[p] != r)
                    write_comm(out, plan, d, "wait_irecv", s, p, e, s,
                               end[p] + g->pred_p2p_ms[e], &clock_ms, &first);
            }
            write_stage_action(out, plan, s, &clock_ms, &first);
            for (int32_t i = ix.succ_off[s]; i < ix.succ_off[s + 1]; i++) {
                int32_t e = ix.succ[i];
                write_comm(out, plan, d, "isend", s, ix.consumer[e], e, ix.consumer[e],
                           end[s], &clock_ms, &first);
            }
        }
        fputs(first ? "]}" : "\n    ]}", out);
    }
    fputs("\n  ]\n", out);
    action_index_free(&ix);
    return LOOM_OK;
}

/* ---- the document ------------------------------------------------------------ */

/* Writes the whole plan.json document. */
static int write_plan(const loom_plan *plan, FILE *out, loom_error *err)
{
    const loom_stage_graph *g = plan->graph;
    fputs("{\n  \"loom_plan\": 2,\n  \"label\": ", out);
    loom_out_json_string(out, plan->label);
    int stage_times = plan->problem ? plan->problem->kind == LOOM_PROBLEM_STAGE_TIMES
                                    : !plan->partition;
    fprintf(out, ",\n  \"problem\": \"%s\",\n  \"model\": ",
            stage_times ? "stage_times" : "model");
    if (plan->problem && plan->problem->model && plan->problem->model->name)
        loom_out_json_string(out, plan->problem->model->name);
    else
        fputs("null", out);
    fprintf(out, ",\n  \"ranks\": %d,\n  \"microbatches\": %d,\n"
                 "  \"candidate\": %d,\n  \"candidates\": %d,\n",
            g->n_ranks, g->n_microbatches, plan->candidate, plan->n_candidates);
    int rc = write_metrics(plan, out, err);
    if (rc != LOOM_OK)
        return rc;
    rc = write_partition(plan, out, err);
    if (rc != LOOM_OK)
        return rc;
    loom_out_json_layouts(plan, out);
    loom_out_json_iteration(plan, out);
    loom_out_data data;
    rc = loom_out_data_build(plan, &data, err);
    if (rc != LOOM_OK)
        return rc;
    loom_out_json_data(&data, out);
    rc = loom_out_json_exports(plan, out, err);
    if (rc == LOOM_OK)
        rc = loom_out_json_runtime_exports(plan, out, err);
    if (rc != LOOM_OK) {
        loom_out_data_free(&data);
        return rc;
    }
    fputs("  \"priorities\": ", out);
    if (plan->priorities) {
        fputc('[', out);
        for (int32_t i = 0; i < g->n_groups; i++) {
            fputs(i ? ", " : "", out);
            loom_out_json_number(out, (double)plan->priorities[i]);
        }
        fputs("],\n", out);
    } else {
        fputs("null,\n", out);
    }
    if (g->n_stages > LOOM_OUT_COMPACT_STAGES) { /* "stages" as rows, "rank_orders" */
        write_stage_rows(plan, out);
        write_rank_orders(plan, out);
    } else {
        write_stages(plan, out);
        rc = write_actions(plan, &data, out, err);
    }
    loom_out_data_free(&data);
    if (rc != LOOM_OK)
        return rc;
    fputs("}\n", out);
    return LOOM_OK;
}

int loom_write_plan_json(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    int rc = loom_out_begin(plan, "plan.json", &frame, err);
    if (rc == LOOM_OK)
        rc = write_plan(plan, out, err);
    return loom_out_end(&frame, out, "plan.json", rc, err);
}
