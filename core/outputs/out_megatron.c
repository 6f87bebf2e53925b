/* out_megatron.c - the plan as Megatron-LM's --pipeline-model-parallel-layout.
 *
 * Megatron lists P x V stages split by '|', virtual stage i on pipeline
 * rank i mod P (chunk i / P), each a run of layer symbols: E the
 * embedding (first stage), t a decoder layer ("t*N" for N of them), L the
 * loss (last stage). It describes one decoder stack, so only plans of an
 * LLM-only model (one text module) on one flow whose positions follow
 * Megatron's rank order and hold consecutive layers can be written. */
#include <stdlib.h>
#include <string.h>
#include "output.h"

/* Checks the plan fits the layout; fills `reason` and returns 0 if not. */
static int layout_fits(const loom_plan *plan, char *reason)
{
    const loom_partition *part = plan->partition;
    const loom_model *model = plan->problem ? plan->problem->model : NULL;
    if (!part || !model) {
        snprintf(reason, LOOM_OUT_REASON_MAX,
                 "a stage-times problem has no model layers to lay out");
        return 0;
    }
    if (model->n_modules != 1 || model->modules[0].modality != LOOM_MODALITY_TEXT) {
        snprintf(reason, LOOM_OUT_REASON_MAX,
                 "the model has %d modules (first: %s); Megatron's layout describes one decoder "
                 "stack, so only LLM-only models (one text module) can be written",
                 model->n_modules, model->n_modules > 0 ? model->modules[0].name : "none");
        return 0;
    }
    if (part->n_flows != 1) {
        snprintf(reason, LOOM_OUT_REASON_MAX,
                 "the plan has %d flows; Megatron's layout is one chain of stages",
                 part->n_flows);
        return 0;
    }
    const loom_flow *fl = &part->flows[0];
    int32_t P = part->n_ranks, next = 0;
    if (P < 1 || fl->n_pos % P != 0) {
        snprintf(reason, LOOM_OUT_REASON_MAX,
                 "%d stages on %d pipeline ranks; Megatron needs a multiple of the ranks",
                 fl->n_pos, P);
        return 0;
    }
    for (int32_t p = 0; p < fl->n_pos; p++) {
        const loom_position *pos = &part->positions[fl->pos_off + p];
        if (pos->rank != p % P) {
            snprintf(reason, LOOM_OUT_REASON_MAX,
                     "stage %d is on rank %d; Megatron puts virtual stage %d on rank %d", p,
                     pos->rank, p, p % P);
            return 0;
        }
        if (!loom_out_spans_continue(plan, pos, p, &next, "Megatron's", reason))
            return 0;
    }
    return 1;
}

char *loom_out_megatron_layout(const loom_plan *plan, char reason[LOOM_OUT_REASON_MAX],
                               int *oom)
{
    *oom = 0;
    reason[0] = '\0';
    if (!layout_fits(plan, reason))
        return NULL;
    const loom_partition *part = plan->partition;
    const loom_flow *fl = &part->flows[0];
    size_t cap = (size_t)fl->n_pos * 16 + 8, len = 0;
    char *out = malloc(cap);
    if (!out) {
        *oom = 1;
        return NULL;
    }
    for (int32_t p = 0; p < fl->n_pos; p++) {
        const loom_position *pos = &part->positions[fl->pos_off + p];
        int32_t layers = 0;
        for (int32_t k = 0; k < pos->n_spans; k++)
            layers += part->spans[pos->span_off + k].n_layers;
        len += (size_t)snprintf(out + len, cap - len, "%s%s", p ? "|" : "", p == 0 ? "E" : "");
        if (layers == 1)
            len += (size_t)snprintf(out + len, cap - len, "t");
        else if (layers > 1)
            len += (size_t)snprintf(out + len, cap - len, "t*%d", layers);
        if (p == fl->n_pos - 1)
            len += (size_t)snprintf(out + len, cap - len, "L");
    }
    return out;
}
