/* out_csv.c - the PyTorch pipelining schedule CSV (the "compute_only"
 * format torch.distributed.pipelining reads): one row per rank, one column
 * per step of a lock-step replay, cells `{stage}{F|B|I|W}{mb}`, blank =
 * idle in that step.
 *
 * {stage} is the global index of the stage's position: positions numbered
 * consecutively flow by flow (flow 0's positions first). {mb} counts the
 * (microbatch, sub-microbatch) units of the stage's flow in order, so it is
 * the microbatch itself when no flow splits microbatches.
 *
 * Replay: in every step each rank whose next stage has all predecessors
 * done in earlier steps runs it; the others idle. Stages that finished in
 * a step satisfy dependencies only from the next step on. */
#include <stdlib.h>
#include <string.h>
#include "output.h"

/* Cell numbering of a graph. */
typedef struct csv_numbering {
    int32_t n_flows, n_mb;
    int32_t *pos_base;  /* per flow: global index of its position 0 */
    int32_t *unit_base; /* per (flow, microbatch): index of its sub 0 */
} csv_numbering;

/* Releases the numbering arrays. */
static void numbering_free(csv_numbering *nb)
{
    free(nb->pos_base);
    free(nb->unit_base);
}

/* Computes the position and unit bases from the stages themselves. */
static int numbering_build(const loom_stage_graph *g, csv_numbering *nb,
                           loom_error *err)
{
    memset(nb, 0, sizeof *nb);
    nb->n_flows = 1;
    nb->n_mb = 1;
    for (int32_t s = 0; s < g->n_stages; s++) {
        if (g->flow[s] < 0 || g->position[s] < 0 || g->microbatch[s] < 0 ||
            g->sub[s] < 0)
            return loom_set_error(err, LOOM_EINVAL,
                                  "schedule.csv: stage %d has flow %d, position %d, "
                                  "microbatch %d, sub %d; expected all >= 0",
                                  s, g->flow[s], g->position[s], g->microbatch[s],
                                  g->sub[s]);
        if (g->flow[s] >= nb->n_flows)
            nb->n_flows = g->flow[s] + 1;
        if (g->microbatch[s] >= nb->n_mb)
            nb->n_mb = g->microbatch[s] + 1;
    }
    size_t cells = (size_t)nb->n_flows * (size_t)nb->n_mb;
    nb->pos_base = calloc((size_t)nb->n_flows + 1, sizeof(int32_t));
    nb->unit_base = calloc(cells + 1, sizeof(int32_t));
    if (!nb->pos_base || !nb->unit_base)
        return loom_set_error(err, LOOM_ENOMEM, "schedule.csv: out of memory");
    /* First pass: counts (positions per flow, subs per (flow, mb)). */
    for (int32_t s = 0; s < g->n_stages; s++) {
        int32_t f = g->flow[s];
        size_t k = (size_t)f * (size_t)nb->n_mb + (size_t)g->microbatch[s];
        if (g->position[s] + 1 > nb->pos_base[f])
            nb->pos_base[f] = g->position[s] + 1;
        if (g->sub[s] + 1 > nb->unit_base[k])
            nb->unit_base[k] = g->sub[s] + 1;
    }
    /* Second pass: exclusive prefix sums (units restart at every flow). */
    int32_t acc = 0;
    for (int32_t f = 0; f < nb->n_flows; f++) {
        int32_t n = nb->pos_base[f];
        nb->pos_base[f] = acc;
        acc += n;
        int32_t units = 0;
        for (int32_t mb = 0; mb < nb->n_mb; mb++) {
            size_t k = (size_t)f * (size_t)nb->n_mb + (size_t)mb;
            int32_t u = nb->unit_base[k];
            nb->unit_base[k] = units;
            units += u;
        }
    }
    return LOOM_OK;
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
            if (cursor[r] >= sc->rank_off[r + 1])
                continue;
            int32_t s = sc->order[cursor[r]], e = g->pred_off[s];
            while (e < g->pred_off[s + 1] && done[g->pred[e]])
                e++;
            if (e == g->pred_off[s + 1])
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
        for (int32_t i = 0; i < n_ran; i++) {
            int32_t s = sc->order[cursor[ran[i]]++];
            col[s] = step;
            done[s] = 1;
        }
        left -= n_ran;
        step++;
    }
    *n_cols = step;
    free(cursor);
    free(ran);
    free(done);
    return rc;
}

/* Writes the rows. */
static int write_csv(const loom_plan *plan, FILE *out, loom_error *err)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    csv_numbering nb;
    int rc = numbering_build(g, &nb, err);
    int32_t *col = NULL, n_cols = 0;
    if (rc == LOOM_OK) {
        col = malloc((size_t)(g->n_stages > 0 ? g->n_stages : 1) * sizeof(int32_t));
        if (!col)
            rc = loom_set_error(err, LOOM_ENOMEM, "schedule.csv: out of memory");
    }
    if (rc == LOOM_OK)
        rc = replay(g, sc, col, &n_cols, err);
    for (int32_t r = 0; rc == LOOM_OK && r < g->n_ranks; r++) {
        int32_t i = sc->rank_off[r];
        for (int32_t c = 0; c < n_cols; c++) {
            if (c)
                fputc(',', out);
            if (i < sc->rank_off[r + 1] && col[sc->order[i]] == c) {
                int32_t s = sc->order[i++], f = g->flow[s];
                int32_t unit = nb.unit_base[(size_t)f * (size_t)nb.n_mb +
                                            (size_t)g->microbatch[s]] + g->sub[s];
                fprintf(out, "%d%c%d", nb.pos_base[f] + g->position[s],
                        loom_out_kind_char(g->kind[s]), unit);
            }
        }
        fputc('\n', out);
    }
    free(col);
    numbering_free(&nb);
    return rc;
}

int loom_write_schedule_csv(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    int rc = loom_out_begin(plan, "schedule.csv", &frame, err);
    if (rc == LOOM_OK)
        rc = write_csv(plan, out, err);
    return loom_out_end(&frame, out, "schedule.csv", rc, err);
}
