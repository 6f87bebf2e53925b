/*
 * optimus_layout.h - an Optimus plan as a Loom partition (Optimus §4.1,
 * Fig. 5): the backbone as P x V positions (position s on rank s mod P,
 * layers split evenly), and each encoder module cut into PP_enc stages
 * colocated on the backbone's ranks: encoder pipeline a's stage k runs on
 * backbone rank a * PP_enc + k. With several encoder modules every stage
 * holds a slice of each (Optimus §4.4), one flow per (pipeline, module).
 * Optimus has no generators (§3); decoder modules are appended to the
 * backbone's layer chain, as Megatron-LM stacks extra modules as
 * pipeline stages, so a position may hold spans of two modules.
 * Each encoder stage is one position, or one position per layer so an
 * interleaver can place single layers into bubbles.
 *
 * With more than one encoder pipeline per backbone pipeline the encoder
 * layers appear in several flows and `owner` says which pipeline runs
 * each microbatch: subs[flow][mb] is 1 there and 0 elsewhere. The core's
 * graph builder must support such replica flows (see
 * docs/algorithms-optimus-disttrain.md); with one pipeline every flow
 * runs every microbatch.
 *
 * Ownership: `part` is host-owned; nothing here allocates.
 */
#ifndef LOOM_OPTIMUS_LAYOUT_H
#define LOOM_OPTIMUS_LAYOUT_H

#include <loom/loom.h>

typedef struct loom_optimus_layout {
    int32_t pp, vpp;       /* backbone ranks P and chunks V */
    int32_t pp_enc;        /* encoder stages */
    int32_t pipelines;     /* encoder pipelines per backbone pipeline */
    int32_t per_layer;     /* 1: one position per encoder layer */
    int32_t microbatches;  /* N_mb */
    const int32_t *owner;  /* microbatch -> pipeline; NULL: pipeline 0 */
} loom_optimus_layout;

/* Flows, positions and spans the layout needs. */
void loom_optimus_layout_size(const loom_model *model,
                              const loom_optimus_layout *lay, int32_t *flows,
                              int32_t *positions, int32_t *spans);

/* Writes the layout into the empty partition `part`: flows (encoders
 * first, the backbone last consuming them), positions, spans, the sample
 * map (the workload's packing or an even split into microbatches) and
 * subs. LOOM_EINVAL naming the problem when the backbone has fewer layers
 * than P x V, a sample names a microbatch >= N_mb, or the partition's
 * capacities are too small. */
int loom_optimus_layout_write(const loom_model *model,
                              const loom_optimus_layout *lay,
                              const loom_iteration *it, loom_partition *part,
                              loom_error *err);

#endif
