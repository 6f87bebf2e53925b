/* out_placement.c - the torchtitan placement style a plan needs.
 *
 * torchtitan does not read stage placement from schedule.csv: it builds
 * the stages of each rank from the style of its pipeline_parallel_schedule
 * (torchtitan/distributed/pipeline_parallel.py, pipeline_module_split):
 * "v" for ScheduleZBVZeroBubble and ScheduleDualPipeV (two stages per
 * rank: rank r holds stages r and 2P-1-r), "loop" for every other class
 * (rank r holds stages r, r+P, r+2P, ...). A plan fits a style when its
 * PyTorch stage-to-rank map is exactly that one (the executor runs such a
 * map on PyTorch's runtime too). Whether torchtitan runs the plan at all
 * (one mesh for every module) is loom_out_one_mesh. */
#include <string.h>
#include "output.h"

int loom_out_split_backward(const loom_stage_graph *g)
{
    for (int32_t s = 0; s < g->n_stages; s++)
        if (g->kind[s] == LOOM_STAGE_I)
            return 1;
    return 0;
}

/* 1 when stage g sits on rank g mod P for every g. */
static int fits_loop(const loom_out_torch *t, int32_t P)
{
    for (int32_t g = 0; g < t->n_stages; g++)
        if (t->stage_rank[g] != g % P)
            return 0;
    return 1;
}

/* 1 when there are 2P stages, stage g < P on rank g and g >= P on 2P-1-g. */
static int fits_v(const loom_out_torch *t, int32_t P)
{
    if (t->n_stages != 2 * P)
        return 0;
    for (int32_t g = 0; g < t->n_stages; g++)
        if (t->stage_rank[g] != (g < P ? g : 2 * P - 1 - g))
            return 0;
    return 1;
}

/* 1 when one torchtitan mesh runs every module (no module has a layout
 * of its own); else 0 with `reason`. */
int loom_out_one_mesh(const loom_plan *plan, char *reason)
{
    const loom_model *model = plan->problem ? plan->problem->model : NULL;
    if (!model)
        return 1;
    for (int32_t i = 0; i < model->n_modules; i++) {
        const loom_module_layout *l = loom_out_layout(plan, i);
        if (l && l->placement != LOOM_LAYOUT_TOP) {
            snprintf(reason, LOOM_OUT_REASON_MAX,
                     "module %s has a layout of its own (tp %d, pp %d, dp %d): torchtitan "
                     "runs every module on one mesh", model->modules[i].name, l->tp, l->pp,
                     l->dp);
            return 0;
        }
    }
    return 1;
}

void loom_out_placement_find(const loom_plan *plan, const loom_out_torch *t,
                             loom_out_placement *pl)
{
    memset(pl, 0, sizeof *pl);
    int32_t P = plan->graph->n_ranks, n = t->n_stages;
    int split = loom_out_split_backward(plan->graph);
    if (!t->ok) {
        snprintf(pl->reason, sizeof pl->reason,
                 "no torchtitan style fits: the plan is not one PyTorch pipeline (%.900s)",
                 t->reason);
        return;
    }
    if (P < 1 || n % P != 0) {
        snprintf(pl->reason, sizeof pl->reason,
                 "no torchtitan style fits: %d stages on %d ranks, and torchtitan needs the same "
                 "number of stages on every rank", n, P);
        return;
    }
    int32_t V = n / P;
    if (fits_loop(t, P)) {
        pl->style = "loop";
        pl->stages_per_rank = V;
        pl->schedule = V == 1 ? "1F1B" : split ? "InterleavedZeroBubble" : "Interleaved1F1B";
        return;
    }
    if (fits_v(t, P)) {
        pl->style = "v";
        pl->stages_per_rank = 2;
        pl->schedule = "ZBVZeroBubble";
        return;
    }
    int32_t bad = 0;
    while (bad < n && t->stage_rank[bad] == bad % P)
        bad++;
    int32_t v_rank = bad < P ? bad : 2 * P - 1 - bad;
    if (n == 2 * P)
        snprintf(pl->reason, sizeof pl->reason,
                 "no torchtitan style fits: stage %d is on rank %d; the loop style puts it on "
                 "rank %d and the V style on rank %d", bad, t->stage_rank[bad], bad % P, v_rank);
    else
        snprintf(pl->reason, sizeof pl->reason,
                 "no torchtitan style fits: stage %d is on rank %d; the loop style puts it on "
                 "rank %d (the V style needs exactly 2 stages per rank, the plan has %d)",
                 bad, t->stage_rank[bad], bad % P, V);
}
