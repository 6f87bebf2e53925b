/* out_csv.c - the PyTorch pipelining schedule CSV (the "compute_only"
 * format torch.distributed.pipelining reads): one row per rank, one column
 * per step of a lock-step replay, cells `{stage}{F|B|I|W}{mb}`, blank =
 * idle in that step.
 *
 * {stage} and {mb} are the PyTorch stage and microbatch of
 * out_torch_stages.c: the global index of the stage's flow position (flow
 * 0's positions first) and the (microbatch, sub-microbatch) unit of the
 * stage's flow. A plan that breaks PyTorch's schedule rules there (stages
 * not one chain, sub-microbatch counts that differ per module) gets no
 * file: the writer refuses it with LOOM_EINVAL saying why.
 *
 * Actions: most stages are one cell each. An I stage marked
 * LOOM_FILL_FULL_BACKWARD and its W (the next stage) are one `B` cell. A
 * forward filled into one backward action (fill_hosts 1 over a B or an
 * I, or 2 over an I and its own W) is one overlapped cell,
 * `({stage}F{mb};{stage}B{mb})OVERLAP_F_B`, as PyTorch's ScheduleDualPipeV
 * writes it. Other fills keep one cell per stage.
 *
 * Replay: in every step each rank whose next action has all predecessors
 * (outside the action) done in earlier steps runs it; the others idle.
 * Stages that finished in a step satisfy dependencies only from the next
 * step on. */
#include <stdlib.h>
#include <string.h>
#include "output.h"

/* Stages in the action that starts at order index i of a rank ending at
 * `end` (file comment): 1, 2 (a full backward, a forward over one
 * backward stage) or 3 (a forward over an I and its W). */
static int32_t action_len(const loom_stage_graph *g, const loom_schedule *sc, int32_t i,
                          int32_t end)
{
    const int32_t *fill = loom_schedule_fills(sc);
    int32_t s = sc->order[i], k = fill ? fill[s] : 0;
    if (k == LOOM_FILL_FULL_BACKWARD && i + 1 < end)
        return 2;
    if (k < 1 || k > 2 || g->kind[s] != LOOM_STAGE_F || i + k >= end)
        return 1;
    int32_t h = sc->order[i + 1];
    if (k == 1)
        return g->kind[h] == LOOM_STAGE_B || g->kind[h] == LOOM_STAGE_I ? 2 : 1;
    int32_t w = sc->order[i + 2];
    int whole = g->kind[h] == LOOM_STAGE_I && g->pair_weight[g->pair[h]] == w;
    return whole ? 3 : 1;
}

/* 1 when every predecessor of the action's stages (order[i .. i+len-1])
 * outside the action is done. */
static int action_ready(const loom_stage_graph *g, const loom_schedule *sc, int32_t i,
                        int32_t len, const uint8_t *done)
{
    for (int32_t a = i; a < i + len; a++) {
        int32_t s = sc->order[a];
        for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++) {
            int32_t p = g->pred[e], inside = 0;
            for (int32_t b = i; b < i + len; b++)
                inside |= sc->order[b] == p;
            if (!inside && !done[p])
                return 0;
        }
    }
    return 1;
}

/* Replays the schedule in lock step; col[s] receives the step of stage s
 * and *n_cols the number of steps. */
static int replay(const loom_stage_graph *g, const loom_schedule *sc,
                  int32_t *col, int32_t *n_cols, loom_error *err)
{
    int32_t P = g->n_ranks, left = g->n_stages, step = 0;
    int32_t *cursor = malloc((size_t)P * sizeof(int32_t));
    int32_t *ran = malloc((size_t)P * sizeof(int32_t));
    uint8_t *done = calloc((size_t)g->n_stages + 1, 1);
    if (!cursor || !ran || !done) {
        free(cursor);
        free(ran);
        free(done);
        return loom_set_error(err, LOOM_ENOMEM, "schedule.csv: out of memory");
    }
    for (int32_t r = 0; r < P; r++)
        cursor[r] = sc->rank_off[r];
    int rc = LOOM_OK;
    while (left > 0) {
        int32_t n_ran = 0;
        for (int32_t r = 0; r < P; r++) {
            int32_t i = cursor[r], end = sc->rank_off[r + 1];
            if (i < end && action_ready(g, sc, i, action_len(g, sc, i, end), done))
                ran[n_ran++] = r;
        }
        if (n_ran == 0) {
            char name[96];
            int32_t r = 0;
            while (cursor[r] >= sc->rank_off[r + 1])
                r++;
            rc = loom_set_error(err, LOOM_EDEADLOCK,
                                "schedule.csv: the schedule cannot be replayed: "
                                "rank %d is blocked at %s", r,
                                loom_stage_name(g, sc->order[cursor[r]], name,
                                                sizeof name));
            break;
        }
        for (int32_t j = 0; j < n_ran; j++) {
            int32_t r = ran[j], i = cursor[r];
            int32_t len = action_len(g, sc, i, sc->rank_off[r + 1]);
            for (int32_t a = i; a < i + len; a++) {
                col[sc->order[a]] = step;
                done[sc->order[a]] = 1;
            }
            cursor[r] += len;
            left -= len;
        }
        step++;
    }
    *n_cols = step;
    free(cursor);
    free(ran);
    free(done);
    return rc;
}

/* Writes one cell `{stage}{kind}{mb}` for graph stage s as `kind`. */
static void put_cell(const loom_out_torch *t, int32_t s, char kind, FILE *out)
{
    fprintf(out, "%d%c%d", t->stage_of[s], kind, t->unit_of[s]);
}

/* Writes the action of `len` stages at order[i] (file comment). */
static void put_action(const loom_stage_graph *g, const loom_out_torch *t,
                       const loom_schedule *sc, int32_t i, int32_t len, FILE *out)
{
    int32_t s = sc->order[i];
    if (len == 1) {
        put_cell(t, s, loom_out_kind_char(g->kind[s]), out);
    } else if (g->kind[s] != LOOM_STAGE_F) { /* a full backward: I and its W */
        put_cell(t, s, 'B', out);
    } else {
        int32_t h = sc->order[i + 1];
        fputc('(', out);
        put_cell(t, s, 'F', out);
        fputc(';', out);
        put_cell(t, h, len == 3 ? 'B' : loom_out_kind_char(g->kind[h]), out);
        fputs(")OVERLAP_F_B", out);
    }
}

/* Writes the rows. */
static int write_csv(const loom_plan *plan, const loom_out_torch *t, FILE *out,
                     loom_error *err)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    int32_t n_cols = 0;
    int32_t *col = malloc((size_t)(g->n_stages > 0 ? g->n_stages : 1) * sizeof(int32_t));
    if (!col)
        return loom_set_error(err, LOOM_ENOMEM, "schedule.csv: out of memory");
    int rc = replay(g, sc, col, &n_cols, err);
    for (int32_t r = 0; rc == LOOM_OK && r < g->n_ranks; r++) {
        int32_t i = sc->rank_off[r], end = sc->rank_off[r + 1];
        for (int32_t c = 0; c < n_cols; c++) {
            if (c)
                fputc(',', out);
            if (i < end && col[sc->order[i]] == c) {
                int32_t len = action_len(g, sc, i, end);
                put_action(g, t, sc, i, len, out);
                i += len;
            }
        }
        fputc('\n', out);
    }
    free(col);
    return rc;
}

/* LOOM_EINVAL "schedule.csv: not written: <reason>" unless t is ok. */
static int refusal(const loom_out_torch *t, loom_error *err)
{
    if (t->ok)
        return LOOM_OK;
    return loom_set_error(err, LOOM_EINVAL, "schedule.csv: not written: %s", t->reason);
}

/* Checks the plan as every writer does, then numbers its PyTorch stages
 * into *t (freed by the caller when LOOM_OK). */
static int checked_torch(const loom_plan *plan, loom_out_torch *t, loom_error *err)
{
    loom_out_frame frame;
    int rc = loom_out_begin(plan, "schedule.csv", &frame, err);
    if (rc != LOOM_OK)
        return rc;
    uselocale(frame.saved);
    freelocale(frame.c_locale);
    return loom_out_torch_build(plan, t, err);
}

int loom_schedule_csv_check(const loom_plan *plan, loom_error *err)
{
    loom_out_torch t;
    int rc = checked_torch(plan, &t, err);
    if (rc == LOOM_OK) {
        rc = refusal(&t, err);
        loom_out_torch_free(&t);
    }
    return rc;
}

int loom_write_schedule_csv(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    loom_out_torch t;
    int rc = loom_out_begin(plan, "schedule.csv", &frame, err);
    if (rc == LOOM_OK && (rc = loom_out_torch_build(plan, &t, err)) == LOOM_OK) {
        rc = refusal(&t, err);
        if (rc == LOOM_OK)
            rc = write_csv(plan, &t, out, err);
        loom_out_torch_free(&t);
    }
    return loom_out_end(&frame, out, "schedule.csv", rc, err);
}

int loom_out_csv_fits(const loom_plan *plan, int *fits, char reason[LOOM_OUT_REASON_MAX],
                      loom_error *err)
{
    loom_out_torch t;
    *fits = 0;
    int rc = checked_torch(plan, &t, err);
    if (rc != LOOM_OK)
        return rc;
    *fits = t.ok;
    snprintf(reason, LOOM_OUT_REASON_MAX, "%s", t.ok ? "" : t.reason);
    loom_out_torch_free(&t);
    return LOOM_OK;
}
