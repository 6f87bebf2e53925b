/*
 * pipeline.h - a planner manifest resolved against the registry: one
 * loaded plugin, validated params, a host copy of the role vtable and a
 * created instance per step (internal, not installed).
 *
 * Ownership: the pipeline owns its steps, params and instances; plugins
 * and the registry are borrowed (close the pipeline before freeing the
 * registry).
 */
#ifndef LOOM_PIPELINE_H
#define LOOM_PIPELINE_H

#include <stdio.h>
#include "ctx.h"
#include <loom/sys/planner.h>

/* Role indices; the same order as loom_role_index(). */
enum loom_role_id {
    LOOM_ROLE_ID_COST_MODEL,
    LOOM_ROLE_ID_PARTITIONER,
    LOOM_ROLE_ID_RANKER,
    LOOM_ROLE_ID_INTERLEAVER,
    LOOM_ROLE_ID_MEMORY_TUNER,
    LOOM_ROLE_ID_COUNT
};

typedef struct loom_step {
    int role;             /* enum loom_role_id */
    loom_plugin *plugin;  /* registry-owned */
    loom_ctx ctx;         /* plugin_id, label "pipeline[i]", params, seed */
    union {
        loom_role_header header;
        loom_cost_model_vtable cost_model;
        loom_partitioner_vtable partitioner;
        loom_ranker_vtable ranker;
        loom_interleaver_vtable interleaver;
        loom_memory_tuner_vtable memory_tuner;
    } vt;                 /* host copy, zero-filled past the plugin's size */
    void *instance;       /* from vt.*.create, destroyed by loom_pipeline_close */
    loom_param_value *params; /* owned, n_params entries */
    int n_params;
} loom_step;

struct loom_pipeline {
    loom_step *steps;
    int n_steps;
    int cost_model, ranker, interleaver, memory_tuner; /* step index or -1 */
    int first_partitioner, n_partitioners;
    loom_registry *registry; /* borrowed */
    uint64_t seed;
    double budget_ms;
    double memory_cap_bytes;
    char *name;          /* owned */
    char *manifest_path; /* owned */
};

#endif
