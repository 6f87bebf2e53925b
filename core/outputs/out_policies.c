/* out_policies.c - the layer memory policies of a one-flow plan, per
 * position, as runtime exports read them: a runtime applies recomputation
 * to modules, so every microbatch of a position must run the same
 * policies (megatron.args, torchtitan.toml). */
#include <string.h>
#include "output.h"

int32_t loom_out_position_layers(const loom_partition *part, int32_t p)
{
    const loom_position *pos = &part->positions[part->flows[0].pos_off + p];
    int32_t n = 0;
    for (int32_t k = 0; k < pos->n_spans; k++)
        n += part->spans[pos->span_off + k].n_layers;
    return n;
}

int loom_out_position_pairs(const loom_plan *plan, int32_t *first, const char *who,
                            char reason[LOOM_OUT_REASON_MAX])
{
    const loom_stage_graph *g = plan->graph;
    const loom_partition *part = plan->partition;
    int32_t n_pos = part->flows[0].n_pos;
    for (int32_t p = 0; p < n_pos; p++)
        first[p] = -1;
    for (int32_t q = 0; q < g->n_pairs; q++) {
        int32_t f = g->pair_forward[q], p = g->position[f];
        int32_t off = g->pair_layer_off[q], n = g->pair_layer_off[q + 1] - off;
        if (p < 0 || p >= n_pos || n != loom_out_position_layers(part, p))
            return loom_out_refuse(reason, "stage %d's memory policies do not list one entry per layer "
                                  "of its position", f);
        if (first[p] < 0) {
            first[p] = q;
            continue;
        }
        const uint8_t *a = &g->layer_policy[g->pair_layer_off[first[p]]];
        if (memcmp(a, &g->layer_policy[off], (size_t)n) != 0)
            return loom_out_refuse(reason,
                          "stage %d (microbatch %d) runs other memory policies than microbatch "
                          "%d on stage %d's layers; %s recomputes the same layers for "
                          "every microbatch", p, g->microbatch[f],
                          g->microbatch[g->pair_forward[first[p]]], p, who);
    }
    return 1;
}
