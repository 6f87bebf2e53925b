/* out_plan_exports.c - the plan.json (format 2) sections that say what a
 * runtime or another framework needs beyond the action lists: the
 * iteration's samples, their (sub-)microbatch assignment, whether
 * schedule.csv expresses the plan, the torchtitan placement style and
 * Megatron-LM's layout string (docs/outputs.md). */
#include <stdlib.h>
#include <string.h>
#include "output.h"

/* Writes a string or null. */
static void string_or_null(FILE *out, const char *s)
{
    if (s)
        loom_out_json_string(out, s);
    else
        fputs("null", out);
}

void loom_out_json_iteration(const loom_plan *plan, FILE *out)
{
    const loom_iteration *it = plan->iteration;
    if (!it || !plan->partition) {
        fputs("  \"iteration\": null,\n", out);
        return;
    }
    fprintf(out, "  \"iteration\": {\"index\": %d, \"samples\": [", it->index);
    for (int32_t i = 0; i < it->n_samples; i++) {
        const loom_sample *s = &it->samples[i];
        fprintf(out, "%s\n    {\"text_tokens\": %lld, \"images\": %d, \"video_seconds\": ",
                i ? "," : "", (long long)s->text_tokens, s->images);
        loom_out_json_number(out, s->video_seconds);
        fputs(", \"audio_seconds\": ", out);
        loom_out_json_number(out, s->audio_seconds);
        fputc('}', out);
    }
    fputs(it->n_samples ? "\n  ]},\n" : "]},\n", out);
}

void loom_out_json_data(const loom_out_data *d, FILE *out)
{
    fputs("  \"data\": [", out);
    for (int32_t u = 0; u < d->n_units; u++) {
        fprintf(out, "%s\n    {\"flow\": %d, \"microbatch\": %d, \"sub\": %d, \"samples\": [",
                u ? "," : "", d->unit_flow[u], d->unit_mb[u], d->unit_sub[u]);
        for (int32_t k = d->list_off[u]; k < d->list_off[u + 1]; k++)
            fprintf(out, "%s%d", k > d->list_off[u] ? ", " : "", d->list[k]);
        fputs("]}", out);
    }
    fputs(d->n_units ? "\n  ],\n" : "],\n", out);
}

/* The torchtitan options of a fitting style: field names of torchtitan's
 * [parallelism] table, and local_batch_size of its [training] table (the
 * whole job config, split included, is torchtitan.toml). On one rank
 * torchtitan runs no pipeline: one microbatch of K sequences a step of
 * gradient accumulation, global_batch_size K x microbatches x dp. */
static void write_torchtitan(const loom_plan *plan, const loom_out_torch *t,
                             const loom_out_placement *pl, FILE *out)
{
    int32_t K = loom_problem_micro_batch_size(plan->problem);
    if (plan->graph->n_ranks == 1) {
        int32_t tp, cp, dp;
        loom_out_mesh_degrees(plan, &tp, &cp, &dp);
        fprintf(out, "{\"pipeline_parallel_degree\": 1, \"local_batch_size\": %d, "
                     "\"global_batch_size\": %lld}",
                K, (long long)t->microbatches * K * dp);
        return;
    }
    fprintf(out, "{\"pipeline_parallel_degree\": %d, \"pipeline_parallel_schedule\": ",
            plan->graph->n_ranks);
    loom_out_json_string(out, pl->schedule);
    fprintf(out, ", \"pipeline_parallel_schedule_csv\": \"schedule.csv\", "
                 "\"pipeline_parallel_microbatch_size\": %d, \"local_batch_size\": %lld}",
            K, (long long)t->microbatches * K);
}

/* "schedule_csv" and "placement". */
static void write_torch(const loom_plan *plan, const loom_out_torch *t, FILE *out)
{
    fprintf(out, "  \"schedule_csv\": {\"written\": %s, \"stages\": %d, \"microbatches\": %d, "
                 "\"reason\": ",
            t->ok ? "true" : "false", t->n_stages, t->microbatches);
    string_or_null(out, t->ok ? NULL : t->reason);
    fputs("},\n", out);
    loom_out_placement pl;
    loom_out_placement_find(plan, t, &pl);
    fputs("  \"placement\": {\"style\": ", out);
    string_or_null(out, pl.style);
    fputs(", \"reason\": ", out);
    string_or_null(out, pl.style ? NULL : pl.reason);
    fprintf(out, ", \"stages\": %d, \"stages_per_rank\": ", t->n_stages);
    if (pl.style)
        fprintf(out, "%d", pl.stages_per_rank);
    else
        fputs("null", out);
    fputs(", \"stage_ranks\": [", out);
    for (int32_t i = 0; i < t->n_stages; i++)
        fprintf(out, "%s%d", i ? ", " : "", t->stage_rank[i]);
    fputs("], \"torchtitan\": ", out);
    if (pl.style)
        write_torchtitan(plan, t, &pl, out);
    else
        fputs("null", out);
    fputs("},\n", out);
}

int loom_out_json_exports(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_torch t;
    int rc = loom_out_torch_build(plan, &t, err);
    if (rc != LOOM_OK)
        return loom_error_prefix(err, rc, "plan.json");
    write_torch(plan, &t, out);
    loom_out_torch_free(&t);
    char reason[LOOM_OUT_REASON_MAX];
    int oom = 0;
    char *layout = loom_out_megatron_layout(plan, reason, &oom);
    if (oom)
        return loom_set_error(err, LOOM_ENOMEM, "plan.json: out of memory");
    fprintf(out, "  \"megatron\": {\"pipeline_model_parallel_size\": %d, "
                 "\"pipeline_model_parallel_layout\": ",
            plan->graph->n_ranks);
    string_or_null(out, layout);
    fputs(", \"reason\": ", out);
    string_or_null(out, layout ? NULL : reason);
    fputs("},\n", out);
    free(layout);
    return LOOM_OK;
}

int loom_out_exports_find(const loom_plan *plan, const char *what, loom_out_exports *x,
                          loom_error *err)
{
    memset(x, 0, sizeof *x);
    loom_out_torch t;
    int rc = loom_out_torch_build(plan, &t, err);
    if (rc != LOOM_OK)
        return loom_error_prefix(err, rc, what);
    x->csv_ok = t.ok;
    x->microbatches = t.microbatches;
    loom_out_placement_find(plan, &t, &x->placement);
    loom_out_torch_free(&t);
    char reason[LOOM_OUT_REASON_MAX];
    int oom = 0;
    x->megatron = loom_out_megatron_layout(plan, reason, &oom);
    if (oom)
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", what);
    return LOOM_OK;
}

void loom_out_exports_free(loom_out_exports *x)
{
    free(x->megatron);
    x->megatron = NULL;
}
