/*
 * bench_ilp_memory.h - instances for the ilp memory tuner benchmark.
 *
 * Ownership: an instance owns its graph and schedule; release it with
 * loom_bench_instance_free. Units: ms, bytes.
 */
#ifndef LOOM_BENCH_ILP_MEMORY_H
#define LOOM_BENCH_ILP_MEMORY_H

#include "engine_api.h"

typedef struct loom_bench_instance {
    loom_stage_graph *graph;
    loom_schedule *schedule;
    char label[160];
} loom_bench_instance;

/* A synthetic instance of VLM-M's order of size: 4 ranks, 16 positions
 * (position s on rank s % 4), 24 sub-microbatches, 10 layer entries per
 * stage pair with seeded options, a backward-first list schedule. */
int loom_bench_synthetic(uint64_t seed, loom_bench_instance *out);

/* Iteration k of `model` planned with the manifest (its ranker replaced
 * by fifo): the stage graph and schedule the memory tuner would see. */
int loom_bench_planned(const char *manifest, const char *model, int32_t k,
                       loom_bench_instance *out, loom_error *err);

void loom_bench_instance_free(loom_bench_instance *in);

/* Highest per-rank peak (static bytes included) of the instance's
 * schedule with every layer entry at policy pol. */
int64_t loom_bench_uniform_peak(const loom_stage_graph *g,
                                const loom_schedule *s, int pol);

#endif
