/* out_torchtitan.c - the plan as a torchtitan 0.2.2 job config
 * (torchtitan.toml).
 *
 * torchtitan builds pipeline stages from module_fqns_per_model_part: part
 * g lists the top-level modules, and the layers of its ModuleDicts, that
 * stage g keeps (torchtitan/distributed/pipeline_parallel.py,
 * pipeline_module_split). Its Llama models name them tok_embeddings,
 * layers.<i>, norm and output; its VLM experiment adds encoder and
 * projector, which must sit with tok_embeddings on the first stage (the
 * image features are merged into the token embeddings there). The stage
 * of each rank follows the style of pipeline_parallel_schedule (loop or V,
 * out_placement.c), and with pipeline_parallel_schedule_csv set the
 * runtime is PyTorch's _PipelineScheduleRuntime replaying schedule.csv.
 * The microbatch count is training.local_batch_size over
 * parallelism.pipeline_parallel_microbatch_size; a Loom microbatch packs
 * the problem's micro_batch_size sequences (1 unless --micro-batch-size),
 * so local_batch_size is that times the microbatches.
 *
 * A plan is written only when all of this holds: one PyTorch pipeline
 * (schedule.csv written), a placement style torchtitan has, one layout
 * for the whole model (one torchtitan mesh), a text model, optionally
 * fed by one image module that lies whole in stage 0, and every stage
 * holding the next layers of the language model in order. */
#include <stdlib.h>
#include <string.h>
#include "output.h"

#define TORCHTITAN_RELEASE "0.2.2"

/* The plan's modules as torchtitan sees them. */
typedef struct tt_model {
    int32_t text;   /* the language model's module index */
    int32_t vision; /* the image module's index, or -1 */
} tt_model;

/* Position g of the plan's flows, numbered as PyTorch stages are (flow 0's
 * positions first), or NULL. */
static const loom_position *stage_position(const loom_partition *part, int32_t g)
{
    for (int32_t f = 0; f < part->n_flows; f++) {
        const loom_flow *fl = &part->flows[f];
        if (g < fl->n_pos)
            return &part->positions[fl->pos_off + g];
        g -= fl->n_pos;
    }
    return NULL;
}

/* Finds the text module and at most one image module; 0 with `reason`
 * for any other model. */
static int find_modules(const loom_model *model, tt_model *m, char *reason)
{
    m->text = m->vision = -1;
    for (int32_t i = 0; i < model->n_modules; i++) {
        const loom_module *mod = &model->modules[i];
        int32_t *slot = mod->modality == LOOM_MODALITY_TEXT    ? &m->text
                        : mod->modality == LOOM_MODALITY_IMAGE ? &m->vision
                                                               : NULL;
        if (!slot || *slot >= 0) {
            snprintf(reason, LOOM_OUT_REASON_MAX,
                     "module %s: torchtitan %s pipelines a language model, optionally with "
                     "one vision encoder, and this model has another %s module",
                     mod->name, TORCHTITAN_RELEASE, slot ? "such" : "kind of");
            return 0;
        }
        *slot = i;
    }
    if (m->text < 0) {
        snprintf(reason, LOOM_OUT_REASON_MAX,
                 "the model has no text module: torchtitan %s pipelines a language model",
                 TORCHTITAN_RELEASE);
        return 0;
    }
    return 1;
}

/* 1 when every stage holds the language model's next layers in order and
 * the image module lies whole in stage 0; else 0 with `reason`. */
static int split_fits(const loom_plan *plan, const loom_out_torch *t, const tt_model *m,
                      char *reason)
{
    const loom_partition *part = plan->partition;
    const loom_model *model = plan->problem->model;
    int32_t next = 0, vision_layers = 0;
    for (int32_t g = 0; g < t->n_stages; g++) {
        const loom_position *pos = stage_position(part, g);
        for (int32_t k = 0; pos && k < pos->n_spans; k++) {
            const loom_span *sp = &part->spans[pos->span_off + k];
            if (sp->module == m->vision) {
                if (g != 0) {
                    snprintf(reason, LOOM_OUT_REASON_MAX,
                             "stage %d holds layers of %s: torchtitan %s runs the vision "
                             "encoder as one module beside tok_embeddings on the first stage",
                             g, model->modules[m->vision].name, TORCHTITAN_RELEASE);
                    return 0;
                }
                vision_layers += sp->n_layers;
                continue;
            }
            if (sp->first_layer != next) {
                snprintf(reason, LOOM_OUT_REASON_MAX,
                         "stage %d starts a span at layer %d of %s, expected layer %d: "
                         "torchtitan's stages hold consecutive layers in order", g,
                         sp->first_layer, model->modules[m->text].name, next);
                return 0;
            }
            next += sp->n_layers;
        }
    }
    if (m->vision >= 0 && vision_layers != model->modules[m->vision].n_layers) {
        snprintf(reason, LOOM_OUT_REASON_MAX,
                 "stage 0 holds %d of the %d layers of %s: torchtitan %s runs the vision "
                 "encoder whole on the first stage", vision_layers,
                 model->modules[m->vision].n_layers, model->modules[m->vision].name,
                 TORCHTITAN_RELEASE);
        return 0;
    }
    return 1;
}

/* 1 when one torchtitan mesh runs every module (no module has a layout
 * of its own); else 0 with `reason`. */
static int one_layout(const loom_plan *plan, char *reason)
{
    const loom_model *model = plan->problem->model;
    for (int32_t i = 0; i < model->n_modules; i++) {
        const loom_module_layout *l = loom_out_layout(plan, i);
        if (l && l->placement != LOOM_LAYOUT_TOP) {
            snprintf(reason, LOOM_OUT_REASON_MAX,
                     "module %s has a layout of its own (tp %d, pp %d, dp %d): torchtitan "
                     "runs every module on one mesh", model->modules[i].name, l->tp, l->pp,
                     l->dp);
            return 0;
        }
    }
    return 1;
}

/* Decides whether torchtitan can build the plan; on success fills *m and
 * *pl (t must be built). */
static void decide(const loom_plan *plan, const loom_out_torch *t, tt_model *m,
                   loom_out_placement *pl, int *fits, char *reason)
{
    *fits = 0;
    const loom_model *model = plan->problem ? plan->problem->model : NULL;
    if (!model || !plan->partition) {
        snprintf(reason, LOOM_OUT_REASON_MAX,
                 "a stage-times problem has no model modules to name");
        return;
    }
    loom_out_placement_find(t, plan->graph->n_ranks, loom_out_split_backward(plan->graph), pl);
    if (!pl->style) {
        snprintf(reason, LOOM_OUT_REASON_MAX, "%s", pl->reason);
        return;
    }
    if (!one_layout(plan, reason) || !find_modules(model, m, reason) ||
        !split_fits(plan, t, m, reason))
        return;
    *fits = 1;
}

int loom_out_torchtitan_fits(const loom_plan *plan, int *fits,
                             char reason[LOOM_OUT_REASON_MAX], loom_error *err)
{
    loom_out_torch t;
    *fits = 0;
    int rc = loom_out_torch_build(plan, &t, err);
    if (rc != LOOM_OK)
        return loom_error_prefix(err, rc, "torchtitan.toml");
    tt_model m;
    loom_out_placement pl;
    decide(plan, &t, &m, &pl, fits, reason);
    loom_out_torch_free(&t);
    return LOOM_OK;
}

/* Part g of module_fqns_per_model_part. */
static void write_part(FILE *out, const loom_plan *plan, const loom_out_torch *t,
                       const tt_model *m, int32_t g)
{
    const loom_partition *part = plan->partition;
    const loom_position *pos = stage_position(part, g);
    int first = 1;
    fputs("  [", out);
    if (g == 0) {
        if (m->vision >= 0)
            fputs("\"encoder\", \"projector\", ", out);
        fputs("\"tok_embeddings\"", out);
        first = 0;
    }
    for (int32_t k = 0; pos && k < pos->n_spans; k++) {
        const loom_span *sp = &part->spans[pos->span_off + k];
        if (sp->module != m->text)
            continue;
        for (int32_t l = sp->first_layer; l < sp->first_layer + sp->n_layers; l++) {
            fprintf(out, "%s\"layers.%d\"", first ? "" : ", ", l);
            first = 0;
        }
    }
    if (g == t->n_stages - 1)
        fprintf(out, "%s\"norm\", \"output\"", first ? "" : ", ");
    fputs("],\n", out);
}

/* The whole file of a plan torchtitan can build. */
static void write_toml(FILE *out, const loom_plan *plan, const loom_out_torch *t,
                       const tt_model *m, const loom_out_placement *pl)
{
    const loom_parallel *par = &plan->problem->parallel;
    fputs("# torchtitan " TORCHTITAN_RELEASE " job config for the Loom plan ", out);
    loom_out_json_string(out, plan->label);
    fputs("\n# Pass it with --job.config_file, or copy its tables into your job config.\n"
          "# pipeline_parallel_schedule_csv is relative to the directory torchtitan runs in.\n"
          "[parallelism]\n", out);
    fprintf(out, "pipeline_parallel_degree = %d\n", plan->graph->n_ranks);
    fprintf(out, "pipeline_parallel_schedule = \"%s\"\n", pl->schedule);
    int32_t K = loom_problem_micro_batch_size(plan->problem);
    fprintf(out, "pipeline_parallel_schedule_csv = \"schedule.csv\"\n"
            "pipeline_parallel_microbatch_size = %d\n"
            "module_fqns_per_model_part = [\n", K);
    for (int32_t g = 0; g < t->n_stages; g++)
        write_part(out, plan, t, m, g);
    fputs("]\n", out);
    fprintf(out, "tensor_parallel_degree = %d\n",
            plan->partition->tp > 0 ? plan->partition->tp : 1);
    fprintf(out, "context_parallel_degree = %d\n", loom_parallel_cp(par));
    fprintf(out, "data_parallel_shard_degree = %d\n", par->dp > 0 ? par->dp : 1);
    fputs("\n[training]\n", out);
    fprintf(out, "local_batch_size = %lld\n", (long long)t->microbatches * K);
}

int loom_write_torchtitan_toml(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    loom_out_torch t;
    int rc = loom_out_begin(plan, "torchtitan.toml", &frame, err);
    if (rc == LOOM_OK && (rc = loom_out_torch_build(plan, &t, err)) == LOOM_OK) {
        tt_model m;
        loom_out_placement pl;
        int fits = 0;
        char reason[LOOM_OUT_REASON_MAX];
        decide(plan, &t, &m, &pl, &fits, reason);
        if (fits)
            write_toml(out, plan, &t, &m, &pl);
        else
            rc = loom_set_error(err, LOOM_EINVAL, "torchtitan.toml: not written: %s", reason);
        loom_out_torch_free(&t);
    }
    return loom_out_end(&frame, out, "torchtitan.toml", rc, err);
}
