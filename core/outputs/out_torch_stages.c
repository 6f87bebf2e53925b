/* out_torch_stages.c - how a plan maps onto torch.distributed.pipelining's
 * stages and microbatches, and whether PyTorch's schedule rules
 * (_validate_schedule: every stage on one rank, the same microbatch count
 * on every stage, F before B or I, I before W; its runtime: the last
 * stage's forwards in microbatch order) can hold for it.
 *
 * PyTorch's runtime passes microbatch u from stage g-1 to stage g only, so
 * a plan is expressible when its dependency graph is one chain of stages
 * joined unit to unit: every forward of (g, u) waits for exactly the
 * forward of (g-1, u); every backward of (g, u) waits for the backward of
 * (g+1, u) (the last stage: its own forward); every W for its own I. */
#include <stdlib.h>
#include <string.h>
#include "output.h"

void loom_out_torch_free(loom_out_torch *t)
{
    free(t->stage_of);
    free(t->unit_of);
    free(t->stage_rank);
    t->stage_of = t->unit_of = t->stage_rank = NULL;
}

/* "stage 4 (flow 1, module llm, position 0)" for PyTorch stage g of the
 * graph stage s. */
static void describe(const loom_plan *plan, int32_t g, int32_t s, char *buf, size_t cap)
{
    const loom_stage_graph *gr = plan->graph;
    const char *mod = loom_out_module_name(plan, gr->module[s]);
    if (mod)
        snprintf(buf, cap, "stage %d (flow %d, module %s, position %d)", g, gr->flow[s], mod,
                 gr->position[s]);
    else
        snprintf(buf, cap, "stage %d (flow %d, position %d)", g, gr->flow[s], gr->position[s]);
}

/* Numbers every graph stage: stage_of from flow positions, unit_of from
 * (microbatch, sub) units counted per flow. */
static int number_stages(const loom_stage_graph *g, loom_out_torch *t, loom_error *err)
{
    int32_t n_flows = 1, n_mb = 1;
    for (int32_t s = 0; s < g->n_stages; s++) {
        if (g->flow[s] < 0 || g->position[s] < 0 || g->microbatch[s] < 0 || g->sub[s] < 0)
            return loom_set_error(err, LOOM_EINVAL,
                                  "schedule.csv: stage %d has flow %d, position %d, "
                                  "microbatch %d, sub %d; expected all >= 0",
                                  s, g->flow[s], g->position[s], g->microbatch[s], g->sub[s]);
        if (g->flow[s] >= n_flows)
            n_flows = g->flow[s] + 1;
        if (g->microbatch[s] >= n_mb)
            n_mb = g->microbatch[s] + 1;
    }
    size_t cells = (size_t)n_flows * (size_t)n_mb;
    int32_t *pos_base = calloc((size_t)n_flows + 1, sizeof(int32_t));
    int32_t *unit_base = calloc(cells + 1, sizeof(int32_t));
    if (!pos_base || !unit_base) {
        free(pos_base);
        free(unit_base);
        return loom_set_error(err, LOOM_ENOMEM, "schedule.csv: out of memory");
    }
    for (int32_t s = 0; s < g->n_stages; s++) {
        int32_t f = g->flow[s];
        size_t k = (size_t)f * (size_t)n_mb + (size_t)g->microbatch[s];
        if (g->position[s] + 1 > pos_base[f])
            pos_base[f] = g->position[s] + 1;
        if (g->sub[s] + 1 > unit_base[k])
            unit_base[k] = g->sub[s] + 1;
    }
    int32_t acc = 0;
    for (int32_t f = 0; f < n_flows; f++) {
        int32_t n = pos_base[f], units = 0;
        pos_base[f] = acc;
        acc += n;
        for (int32_t mb = 0; mb < n_mb; mb++) {
            size_t k = (size_t)f * (size_t)n_mb + (size_t)mb;
            int32_t u = unit_base[k];
            unit_base[k] = units;
            units += u;
        }
    }
    t->n_stages = acc;
    for (int32_t s = 0; s < g->n_stages; s++) {
        int32_t f = g->flow[s];
        t->stage_of[s] = pos_base[f] + g->position[s];
        t->unit_of[s] = unit_base[(size_t)f * (size_t)n_mb + (size_t)g->microbatch[s]] + g->sub[s];
    }
    free(pos_base);
    free(unit_base);
    return LOOM_OK;
}

/* Sets t->ok = 0 and the reason for a dependency that is not unit to unit. */
static void bad_edge(const loom_plan *plan, loom_out_torch *t, int32_t s, int32_t p)
{
    const loom_stage_graph *g = plan->graph;
    char a[160], b[160];
    describe(plan, t->stage_of[s], s, a, sizeof a);
    describe(plan, t->stage_of[p], p, b, sizeof b);
    t->ok = 0;
    snprintf(t->reason, sizeof t->reason,
             "the %c of microbatch %d on %s waits for the %c of microbatch %d on %s; PyTorch "
             "pipelining passes microbatch u only from stage g-1 to stage g (forward) and back, "
             "so the plan's stages are not one chain",
             loom_out_kind_char(g->kind[s]), t->unit_of[s], a, loom_out_kind_char(g->kind[p]),
             t->unit_of[p], b);
}

/* Sets t->ok = 0 and the reason for a stage lacking a chain dependency. */
static void missing_edge(const loom_plan *plan, loom_out_torch *t, int32_t s, int32_t want_g,
                         char want_kind)
{
    char a[160];
    describe(plan, t->stage_of[s], s, a, sizeof a);
    t->ok = 0;
    snprintf(t->reason, sizeof t->reason,
             "the %c of microbatch %d on %s does not wait for the %c of microbatch %d on stage %d; "
             "PyTorch pipelining passes microbatch u only from stage g-1 to stage g (forward) and "
             "back, so the plan's stages are not one chain",
             loom_out_kind_char(plan->graph->kind[s]), t->unit_of[s], a, want_kind,
             t->unit_of[s], want_g);
}

/* Checks every dependency against the chain rules (t->ok cleared with the
 * first violation). */
static void check_chain(const loom_plan *plan, loom_out_torch *t)
{
    const loom_stage_graph *g = plan->graph;
    int32_t last = t->n_stages - 1;
    for (int32_t s = 0; t->ok && s < g->n_stages; s++) {
        int32_t gs = t->stage_of[s], u = t->unit_of[s], k = g->kind[s];
        int has_chain = 0;
        for (int32_t e = g->pred_off[s]; t->ok && e < g->pred_off[s + 1]; e++) {
            int32_t p = g->pred[e], gp = t->stage_of[p], kp = g->kind[p];
            int same_unit = t->unit_of[p] == u, ok = 0;
            if (k == LOOM_STAGE_F) {
                ok = kp == LOOM_STAGE_F && gp == gs - 1 && same_unit;
                has_chain |= ok;
            } else if (k == LOOM_STAGE_W) {
                ok = kp == LOOM_STAGE_I && gp == gs && same_unit;
                has_chain |= ok;
            } else if (kp == LOOM_STAGE_F) {
                ok = gp == gs && same_unit;
                has_chain |= ok && gs == last;
            } else {
                ok = (kp == LOOM_STAGE_B || kp == LOOM_STAGE_I) && gp == gs + 1 && same_unit;
                has_chain |= ok;
            }
            if (!ok)
                bad_edge(plan, t, s, p);
        }
        if (t->ok && !has_chain && !(k == LOOM_STAGE_F && gs == 0))
            missing_edge(plan, t, s,
                         k == LOOM_STAGE_F ? gs - 1 : k == LOOM_STAGE_W || gs == last ? gs : gs + 1,
                         k == LOOM_STAGE_F   ? 'F'
                         : k == LOOM_STAGE_W ? 'I'
                         : gs == last        ? 'F'
                                             : (char)loom_out_kind_char(k));
    }
}

/* Checks that every stage runs one backward (B, or I and W) per forward
 * (t->ok cleared with the first violation); `count` is scratch of
 * 3 x n_stages entries. */
static void check_backwards(const loom_plan *plan, loom_out_torch *t, int32_t *count)
{
    const loom_stage_graph *g = plan->graph;
    int32_t n = t->n_stages;
    memset(count, 0, 3 * (size_t)n * sizeof(int32_t));
    for (int32_t s = 0; s < g->n_stages; s++) {
        int32_t k = g->kind[s], gs = t->stage_of[s];
        count[gs] += k == LOOM_STAGE_F;
        count[n + gs] += k == LOOM_STAGE_B || k == LOOM_STAGE_I;
        count[2 * n + gs] += k == LOOM_STAGE_W ? 1 : k == LOOM_STAGE_I ? -1 : 0;
    }
    for (int32_t i = 0; t->ok && i < n; i++)
        if (count[n + i] != count[i] || count[2 * n + i] != 0) {
            t->ok = 0;
            snprintf(t->reason, sizeof t->reason,
                     "stage %d runs %d forwards and %d backwards (B or I, with as many W as I "
                     "expected); PyTorch pipelining needs one backward per forward",
                     i, count[i], count[n + i]);
        }
}

/* Checks ranks and unit counts per PyTorch stage (t->ok cleared with the
 * first violation); `units` has n_stages entries. */
static void check_stages(const loom_plan *plan, loom_out_torch *t, int32_t *units,
                         int32_t *first)
{
    const loom_stage_graph *g = plan->graph;
    for (int32_t i = 0; i < t->n_stages; i++) {
        t->stage_rank[i] = -1;
        first[i] = -1;
    }
    for (int32_t s = 0; s < g->n_stages; s++) {
        int32_t gs = t->stage_of[s];
        if (first[gs] < 0)
            first[gs] = s;
        if (t->stage_rank[gs] < 0)
            t->stage_rank[gs] = g->rank[s];
        else if (t->ok && t->stage_rank[gs] != g->rank[s]) {
            char a[160];
            describe(plan, gs, s, a, sizeof a);
            t->ok = 0;
            snprintf(t->reason, sizeof t->reason,
                     "%s runs on ranks %d and %d; PyTorch pipelining needs each stage on "
                     "exactly one rank", a, t->stage_rank[gs], g->rank[s]);
        }
        if (g->kind[s] == LOOM_STAGE_F)
            units[gs]++;
    }
    t->microbatches = t->n_stages > 0 ? units[0] : 0;
    for (int32_t i = 1; t->ok && i < t->n_stages; i++)
        if (units[i] != units[0] && first[i] >= 0 && first[0] >= 0) {
            char a[160], b[160];
            describe(plan, i, first[i], a, sizeof a);
            describe(plan, 0, first[0], b, sizeof b);
            t->ok = 0;
            snprintf(t->reason, sizeof t->reason,
                     "%s runs %d (sub-)microbatches and %s runs %d; PyTorch pipelining needs "
                     "the same microbatch count on every stage, and the plan splits "
                     "microbatches into a different number of sub-microbatches per module",
                     a, units[i], b, units[0]);
        }
}

/* PyTorch's runtime keeps the last stage's losses in the order its
 * forwards ran and hands backward u the u-th of them
 * (_PipelineScheduleRuntime: _maybe_compute_loss appends, _maybe_get_loss
 * indexes by microbatch), so the last stage must run its forwards as
 * microbatch 0, 1, 2, ... Sets t->ok = 0 with the reason when it does
 * not. */
static void check_loss_order(const loom_plan *plan, loom_out_torch *t)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    int32_t last = t->n_stages - 1;
    if (!sc || last < 0 || t->stage_rank[last] < 0)
        return;
    int32_t r = t->stage_rank[last], next = 0;
    for (int32_t k = sc->rank_off[r]; k < sc->rank_off[r + 1]; k++) {
        int32_t s = sc->order[k];
        if (t->stage_of[s] != last || g->kind[s] != LOOM_STAGE_F)
            continue;
        if (t->unit_of[s] != next) {
            char a[160];
            describe(plan, last, s, a, sizeof a);
            t->ok = 0;
            snprintf(t->reason, sizeof t->reason,
                     "the last stage, %s, runs the forward of microbatch %d where PyTorch's "
                     "runtime needs microbatch %d: it hands the backward of microbatch u the "
                     "loss of the u-th forward the last stage ran", a, t->unit_of[s], next);
            return;
        }
        next++;
    }
}

int loom_out_torch_build(const loom_plan *plan, loom_out_torch *t, loom_error *err)
{
    const loom_stage_graph *g = plan->graph;
    memset(t, 0, sizeof *t);
    size_t n = (size_t)(g->n_stages > 0 ? g->n_stages : 1);
    t->stage_of = malloc(n * sizeof(int32_t));
    t->unit_of = malloc(n * sizeof(int32_t));
    if (!t->stage_of || !t->unit_of) {
        loom_out_torch_free(t);
        return loom_set_error(err, LOOM_ENOMEM, "schedule.csv: out of memory");
    }
    int rc = number_stages(g, t, err);
    if (rc != LOOM_OK) {
        loom_out_torch_free(t);
        return rc;
    }
    size_t m = (size_t)(t->n_stages > 0 ? t->n_stages : 1);
    t->stage_rank = malloc(m * sizeof(int32_t));
    int32_t *units = calloc(3 * m, sizeof(int32_t));
    int32_t *first = malloc(m * sizeof(int32_t));
    if (!t->stage_rank || !units || !first) {
        free(units);
        free(first);
        loom_out_torch_free(t);
        return loom_set_error(err, LOOM_ENOMEM, "schedule.csv: out of memory");
    }
    t->ok = 1;
    check_stages(plan, t, units, first);
    if (t->ok)
        check_backwards(plan, t, units);
    if (t->ok)
        check_chain(plan, t);
    if (t->ok)
        check_loss_order(plan, t);
    free(units);
    free(first);
    return LOOM_OK;
}
