/*
 * dt_layout.h - turning a DistTrain plan (per-module TP, DP, PP on
 * disjoint GPUs) into a Loom partition that models one backbone pipeline.
 *
 * Each module is a flow on its own ranks (disaggregation: more ranks than
 * the backbone's PP). The backbone flow has PP_lm positions. The encoder
 * and the generator serve DP_lm / DP_m backbone pipelines each, so one
 * backbone pipeline's share of module m is PP_m * DP_m / DP_lm ranks of
 * TP_m GPUs; its flow gets that many positions (rounded to the nearest
 * whole number, at least 1, at most the module's layers), which gives each
 * stage the paper's stage time T_m = DP_lm TP_m C_m / GPUs_m exactly when
 * DP_lm divides PP_m * DP_m. Layers are split evenly over positions.
 *
 * Data: the modelled pipeline runs l = BS / DP_lm microbatches taken from
 * the iteration's LLM microbatches ("units": the workload's packed
 * sequences, or an even split into `units`): with stride G = units / l
 * (at least 1), unit u is its microbatch u / G when u % G == 0 and
 * u / G < l - the units dealt round-robin to G groups, group 0 modelled.
 * Samples of other units are -1.
 *
 * Ownership: `part` is host-owned (capacities from the host); nothing here
 * allocates.
 */
#ifndef LOOM_DT_LAYOUT_H
#define LOOM_DT_LAYOUT_H

#include <loom/loom.h>
#include "dt_alloc.h"

/* Finds the encoder, backbone and generator modules of `model`
 * (unit_module[LOOM_DT_ENC/LLM/GEN], -1 when absent). LOOM_EINVAL naming
 * the modules when a kind appears twice or there is no backbone. */
int loom_dt_find_units(const loom_model *model,
                       int32_t unit_module[LOOM_DT_UNITS], loom_error *err);

/* Positions one backbone pipeline's share of a module gets:
 * round(pp * dp / dp_llm) clamped to [1, layers]. */
int32_t loom_dt_share_positions(int32_t pp, int32_t dp, int32_t dp_llm,
                                int32_t layers);

/* The unit (LLM microbatch) of sample i: its own microbatch field when
 * >= 0, else the even contiguous split i * units / n_samples. */
int32_t loom_dt_unit_of(const loom_iteration *it, int32_t i, int32_t units);

/* Writes the flows, positions, spans, sample map and label of `plan` into
 * the empty partition `part`. it may be NULL (no samples). LOOM_EINVAL when
 * the partition's capacities are too small. */
int loom_dt_layout(const loom_model *model,
                   const int32_t unit_module[LOOM_DT_UNITS],
                   const loom_dt_plan *plan, const loom_iteration *it,
                   int32_t units, int32_t global_batch, loom_partition *part,
                   loom_error *err);

#endif
