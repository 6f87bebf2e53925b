/* out_layouts.c - a plan's per-module layouts (the partition's, else the
 * problem's) in plan.json ("layouts"), the summary and the report. */
#include <stdlib.h>
#include "output.h"

const loom_module_layout *loom_out_layout(const loom_plan *plan, int32_t m)
{
    const loom_partition *pt = plan->partition;
    if (pt && LOOM_STRUCT_HAS(pt, loom_partition, layouts) && pt->layouts && pt->n_layouts > 0)
        return m >= 0 && m < pt->n_layouts ? &pt->layouts[m] : NULL;
    return loom_problem_module_layout(plan->problem, m);
}

/* "disjoint", "colocated" or "top" for a placement. */
static const char *placement_name(int32_t placement)
{
    return placement == LOOM_LAYOUT_DISJOINT    ? "disjoint"
           : placement == LOOM_LAYOUT_COLOCATED ? "colocated"
                                                   : "top";
}

/* The pipeline ranks running module m's spans, ascending, as a JSON list. */
static void write_ranks(FILE *out, const loom_partition *pt, int32_t m)
{
    fputc('[', out);
    int first = 1;
    for (int32_t r = 0; pt && r < pt->n_ranks; r++) {
        int on = 0;
        for (int32_t i = 0; i < pt->n_positions && !on; i++)
            for (int32_t k = 0; k < pt->positions[i].n_spans && !on; k++)
                on = pt->positions[i].rank == r &&
                     pt->spans[pt->positions[i].span_off + k].module == m;
        if (on) {
            fprintf(out, "%s%d", first ? "" : ", ", r);
            first = 0;
        }
    }
    fputc(']', out);
}

void loom_out_json_layouts(const loom_plan *plan, FILE *out)
{
    const loom_model *model = plan->problem ? plan->problem->model : NULL;
    if (!model || !loom_out_layout(plan, 0))
        return;
    fputs("  \"layouts\": [", out);
    for (int32_t m = 0; m < model->n_modules; m++) {
        const loom_module_layout *l = loom_out_layout(plan, m);
        if (!l)
            continue;
        fputs(m ? ",\n    {\"module\": " : "\n    {\"module\": ", out);
        loom_out_json_string(out, model->modules[m].name);
        fprintf(out, ", \"tp\": %d, \"cp\": %d, \"pp\": %d, \"dp\": %d, \"placement\": \"%s\", "
                     "\"colocated_with\": ", l->tp, l->cp, l->pp, l->dp,
                placement_name(l->placement));
        if (l->placement == LOOM_LAYOUT_COLOCATED && l->colocated_with >= 0 &&
            l->colocated_with < model->n_modules)
            loom_out_json_string(out, model->modules[l->colocated_with].name);
        else
            fputs("null", out);
        fprintf(out, ", \"first_gpu\": %d, \"gpus\": %d, \"ranks\": ", l->first_gpu, l->gpus);
        write_ranks(out, plan->partition, m);
        fputc('}', out);
    }
    fputs("\n  ],\n", out);
}

void loom_out_summary_layouts(const loom_plan *plan, FILE *out)
{
    const loom_model *model = plan->problem ? plan->problem->model : NULL;
    for (int32_t m = 0; model && m < model->n_modules; m++) {
        const loom_module_layout *l = loom_out_layout(plan, m);
        if (!l)
            return;
        fprintf(out, "  layout        %s: tp %d x cp %d x pp %d x dp %d, %s", model->modules[m].name,
                l->tp, l->cp, l->pp, l->dp, placement_name(l->placement));
        if (l->placement == LOOM_LAYOUT_COLOCATED && l->colocated_with >= 0 &&
            l->colocated_with < model->n_modules)
            fprintf(out, " with %s", model->modules[l->colocated_with].name);
        fprintf(out, ", GPUs %d-%d\n", l->first_gpu, l->first_gpu + l->gpus - 1);
    }
}

void loom_out_rank_layouts(const loom_plan *plan, int32_t rank, char *buf, size_t size)
{
    const loom_partition *pt = plan->partition;
    const loom_model *model = plan->problem ? plan->problem->model : NULL;
    size_t k = 0;
    buf[0] = '\0';
    if (!pt || !model || !loom_out_layout(plan, 0))
        return;
    for (int32_t m = 0; m < model->n_modules && k < size; m++) {
        int on = 0;
        for (int32_t i = 0; i < pt->n_positions && !on; i++)
            for (int32_t s = 0; s < pt->positions[i].n_spans && !on; s++)
                on = pt->positions[i].rank == rank &&
                     pt->spans[pt->positions[i].span_off + s].module == m;
        const loom_module_layout *l = loom_out_layout(plan, m);
        if (!on || !l)
            continue;
        int n = snprintf(buf + k, size - k, "%s%s tp %d cp %d pp %d dp %d %s", k ? ", " : "",
                         model->modules[m].name, l->tp, l->cp, l->pp, l->dp,
                         placement_name(l->placement));
        if (n < 0)
            break;
        k += (size_t)n;
    }
}
