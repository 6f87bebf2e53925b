/* out_mimo.c - the plan's per-module layouts as Megatron-Bridge's
 * MegatronMIMOParallelismConfig (mimo.json, docs/outputs.md): one
 * ModuleParallelismConfig per module, the language model keyed
 * "language" (megatron-core's MIMO_LANGUAGE_MODULE_KEY), the others by
 * their module names.
 *
 * The rules are those of Megatron-Bridge commit fc35d9b (2026-07-13,
 * src/megatron/bridge/models/megatron_mimo/megatron_mimo_config.py): every
 * module on its own range of ranks [rank_offset, rank_offset + tp cp pp
 * dp), the ranges tiling the world without gap or overlap (heterogeneous
 * deployment; that class has no colocated mode), TP sizes powers of two,
 * DP sizes pairwise dividing. Loom numbers GPUs as that class does: the
 * top-level layout first, then each disjoint module's set. */
#include <stdlib.h>
#include <string.h>
#include "output.h"

/* The key MIMO gives the language model. */
#define MIMO_LANGUAGE_KEY "language"

/* The language model: the model's one text module, or -1 with a reason. */
static int32_t language_module(const loom_model *model, char *reason)
{
    int32_t found = -1, n = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        if (model->modules[m].modality == LOOM_MODALITY_TEXT) {
            found = found < 0 ? m : found;
            n++;
        }
    if (n != 1) {
        loom_out_refuse(reason, "the model has %d text modules; MIMO keys exactly one language model "
                       "\"" MIMO_LANGUAGE_KEY "\"", n);
        return -1;
    }
    for (int32_t m = 0; m < model->n_modules; m++)
        if (m != found && strcmp(model->modules[m].name, MIMO_LANGUAGE_KEY) == 0) {
            loom_out_refuse(reason, "module %d is named \"" MIMO_LANGUAGE_KEY "\", the key MIMO gives the "
                           "language model (%s)", m, model->modules[found].name);
            return -1;
        }
    return found;
}

/* 1 when module m's layout is a rank range of its own that MIMO takes:
 * not colocated, tp cp pp dp GPUs, a power-of-two TP size. */
static int own_range(const loom_model *model, int32_t m, const loom_module_layout *l,
                     char *reason)
{
    const char *name = model->modules[m].name;
    if (l->placement == LOOM_LAYOUT_COLOCATED)
        return loom_out_refuse(reason,
                      "module %s is colocated on the GPUs of %s; MegatronMIMOParallelismConfig "
                      "(Megatron-Bridge fc35d9b) gives every module its own range of ranks and "
                      "has no colocated mode", name,
                      l->colocated_with >= 0 && l->colocated_with < model->n_modules
                          ? model->modules[l->colocated_with].name
                          : "the top-level layout");
    int64_t ranks = (int64_t)l->tp * l->cp * l->pp * l->dp;
    if (ranks != l->gpus)
        return loom_out_refuse(reason,
                      "module %s runs on %d GPUs but its layout tp %d x cp %d x pp %d x dp %d "
                      "covers %lld; MIMO gives a module exactly tp x cp x pp x dp ranks", name,
                      l->gpus, l->tp, l->cp, l->pp, l->dp, (long long)ranks);
    if (l->tp < 1 || (l->tp & (l->tp - 1)) != 0)
        return loom_out_refuse(reason, "module %s has TP %d; MIMO's cross-module communication needs "
                              "a power-of-two TP size", name, l->tp);
    return 1;
}

/* 1 when the modules' ranges tile GPUs 0 .. world-1 in some order
 * without gap or overlap and their DP sizes pairwise divide. */
static int tiles_world(const loom_plan *plan, char *reason)
{
    const loom_model *model = plan->problem->model;
    int32_t at = 0, world = plan->problem->total_gpus;
    for (int32_t placed = 0; placed < model->n_modules; placed++) {
        int32_t next = -1;
        for (int32_t m = 0; m < model->n_modules; m++) {
            const loom_module_layout *l = loom_out_layout(plan, m);
            if (l->first_gpu == at && next >= 0)
                return loom_out_refuse(reason, "modules %s and %s both start at GPU %d; MIMO's rank "
                                      "ranges must not overlap", model->modules[next].name,
                              model->modules[m].name, at);
            next = l->first_gpu == at ? m : next;
        }
        if (next < 0)
            return loom_out_refuse(reason, "no module starts at GPU %d; MIMO's rank ranges must tile "
                                  "the world without gaps", at);
        at += loom_out_layout(plan, next)->gpus;
    }
    if (world > 0 && at != world)
        return loom_out_refuse(reason, "the modules cover GPUs 0-%d of the job's %d; MIMO's rank ranges "
                              "must tile the world", at - 1, world);
    for (int32_t a = 0; a < model->n_modules; a++)
        for (int32_t b = a + 1; b < model->n_modules; b++) {
            int32_t x = loom_out_layout(plan, a)->dp, y = loom_out_layout(plan, b)->dp;
            if (x % y != 0 && y % x != 0)
                return loom_out_refuse(reason, "module %s has DP %d and module %s DP %d; MIMO needs one "
                                      "to divide the other", model->modules[a].name, x,
                              model->modules[b].name, y);
        }
    return 1;
}

/* 1 when every flow runs each microbatch whole (MIMO hands a module's
 * microbatch to the next module as one batch). */
static int whole_microbatches(const loom_plan *plan, char *reason)
{
    const loom_partition *part = plan->partition;
    const loom_model *model = plan->problem->model;
    for (int32_t f = 0; f < part->n_flows; f++)
        for (int32_t mb = 0; mb < part->n_microbatches; mb++) {
            int32_t subs = part->subs[f * part->cap_microbatches + mb];
            int32_t m = part->flows[f].module;
            if (subs > 1)
                return loom_out_refuse(reason,
                              "flow %d (module %s) splits microbatch %d into %d "
                              "sub-microbatches; MIMO hands every microbatch from module to "
                              "module whole", f,
                              m >= 0 && m < model->n_modules ? model->modules[m].name : "mixed",
                              mb, subs);
        }
    return 1;
}

/* Sets *fits and `reason`; *language to the language module. */
static void mimo_check(const loom_plan *plan, int *fits, int32_t *language, char *reason)
{
    const loom_model *model = plan->problem ? plan->problem->model : NULL;
    *fits = 0;
    *language = -1;
    reason[0] = '\0';
    if (!model || !plan->partition) {
        loom_out_refuse(reason, "a stage-times problem has no modules to lay out");
        return;
    }
    if (!loom_out_layout(plan, 0)) {
        loom_out_refuse(reason, "the plan has one layout for the whole model, no per-module layouts; "
                       "megatron.args describes such plans");
        return;
    }
    *language = language_module(model, reason);
    if (*language < 0)
        return;
    for (int32_t m = 0; m < model->n_modules; m++) {
        const loom_module_layout *l = loom_out_layout(plan, m);
        if (!l) {
            loom_out_refuse(reason, "module %s has no layout", model->modules[m].name);
            return;
        }
        if (!own_range(model, m, l, reason))
            return;
    }
    *fits = tiles_world(plan, reason) && whole_microbatches(plan, reason);
}

int loom_out_mimo_fits(const loom_plan *plan, int *fits, char reason[LOOM_OUT_REASON_MAX],
                       loom_error *err)
{
    (void)err;
    int32_t language;
    mimo_check(plan, fits, &language, reason);
    return LOOM_OK;
}

/* One module's ModuleParallelismConfig fields. */
static void write_module(FILE *out, const loom_module_layout *l)
{
    fprintf(out, "{\"tensor_model_parallel_size\": %d, \"pipeline_model_parallel_size\": %d, "
                 "\"context_parallel_size\": %d, \"expert_model_parallel_size\": 1, "
                 "\"expert_tensor_parallel_size\": 1, \"data_parallel_size\": %d, "
                 "\"rank_offset\": %d}",
            l->tp, l->pp, l->cp, l->dp, l->first_gpu);
}

int loom_write_mimo_json(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    char reason[LOOM_OUT_REASON_MAX];
    int fits = 0;
    int32_t language = -1;
    int rc = loom_out_begin(plan, "mimo.json", &frame, err);
    if (rc != LOOM_OK)
        return rc;
    mimo_check(plan, &fits, &language, reason);
    if (!fits) {
        rc = loom_set_error(err, LOOM_EINVAL, "mimo.json: not written: %s", reason);
        return loom_out_end(&frame, out, "mimo.json", rc, err);
    }
    const loom_model *model = plan->problem->model;
    fputs("{\"module_parallelisms\": {", out);
    for (int32_t m = 0; m < model->n_modules; m++) {
        fputs(m ? ",\n  " : "\n  ", out);
        loom_out_json_string(out, m == language ? MIMO_LANGUAGE_KEY : model->modules[m].name);
        fputs(": ", out);
        write_module(out, loom_out_layout(plan, m));
    }
    fputs("\n}}\n", out);
    return loom_out_end(&frame, out, "mimo.json", LOOM_OK, err);
}
