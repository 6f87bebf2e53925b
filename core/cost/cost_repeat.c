/* cost_repeat.c - when a layer costs exactly what the layer before it
 * costs, so that the graph builder need not ask the cost model again. */
#include <string.h>
#include "cost_rules.h"

int loom_cost_repeats_previous(int reads_layer_fields, const loom_module *mod,
                               int32_t span_first, int32_t l, int same_upstream)
{
    /* the embedding prices a module's first layer, the LM head its last */
    return reads_layer_fields && same_upstream && l > span_first && l - 1 > 0 &&
           l < mod->n_layers - 1 &&
           memcmp(&mod->layers[l - 1], &mod->layers[l], sizeof mod->layers[l]) == 0;
}
