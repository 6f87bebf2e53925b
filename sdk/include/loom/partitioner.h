/*
 * loom/partitioner.h - the partitioner role: layers -> chunks -> ranks and
 * samples -> microbatches -> sub-microbatches, as candidate partitions.
 *
 * Partitioners chain: each receives the candidates the previous ones made
 * (none for the first) and may refine them in place, add new ones or drop
 * them. The core then builds one stage graph per candidate.
 *
 * Ownership: the candidate set and every partition in it are host-owned.
 * add()/clone() return host-allocated partitions with capacities large
 * enough for the problem (see loom_partition in loom/graph.h).
 */
#ifndef LOOM_PARTITIONER_H
#define LOOM_PARTITIONER_H

#include <loom/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_PARTITIONER_VERSION 1u

typedef struct loom_candidates loom_candidates;
struct loom_candidates {
    uint32_t struct_size;
    int32_t n;                 /* candidates currently in the set */
    loom_partition **items;    /* n entries */
    /* Appends an empty partition (all counts 0, sample_mb all -1,
     * subs all 1, tp from the problem) and returns it in *out. */
    int (*add)(loom_candidates *set, loom_partition **out, loom_error *err);
    /* Appends a copy of items[index] and returns it in *out. */
    int (*clone)(loom_candidates *set, int32_t index, loom_partition **out,
                 loom_error *err);
    /* Removes items[index]; later items shift down. */
    void (*remove)(loom_candidates *set, int32_t index);
    void *host_private;
    /* Appended (read it when LOOM_STRUCT_HAS(set, loom_candidates,
     * add_sized) and it is not NULL). Appends an empty partition as add
     * does, with room for cap_microbatches microbatches (1 up to the
     * set's own) instead of the set's: subs and cp_attention_scale are
     * that much smaller. For a partitioner that offers many candidates of
     * few microbatches each (oobleck-templates' microbatch shares). */
    int (*add_sized)(loom_candidates *set, int32_t cap_microbatches, loom_partition **out,
                     loom_error *err);
};

typedef struct loom_partitioner_vtable {
    loom_role_header header; /* { sizeof(this), LOOM_PARTITIONER_VERSION } */
    /* Required. See loom_cost_model_vtable.create. */
    int (*create)(const loom_host_api *host, loom_ctx *ctx, void *plugin_state,
                  void **self, loom_error *err);
    /* Required. */
    void (*destroy)(void *self);
    /* Required. Refines or fills `set` for one iteration's samples. May
     * return LOOM_DECLINED when the problem is not for it (the host then
     * skips it with a note). */
    int (*partition)(void *self, const loom_problem *problem,
                     const loom_iteration *iteration, loom_candidates *set,
                     loom_error *err);
} loom_partitioner_vtable;

#ifdef __cplusplus
}
#endif
#endif
