/* graph_revision.c - the revision stamps the host gives the stage graphs
 * it builds for planning (loom_stage_graph.revision). */
#include <stdatomic.h>
#include "stage_graph.h"

/* The last stamp handed out; 0 is never one. */
static atomic_uint_fast64_t last_revision;

void loom_graph_stamp(loom_stage_graph *g)
{
    if (LOOM_STRUCT_HAS(g, loom_stage_graph, revision))
        g->revision = (uint64_t)atomic_fetch_add(&last_revision, 1) + 1;
}
