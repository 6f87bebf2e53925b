/* out_torchtitan.c - the plan as a torchtitan 0.2.2 job config
 * (torchtitan.toml).
 *
 * torchtitan builds pipeline stages from module_fqns_per_model_part: part
 * g lists the top-level modules, and the layers of its ModuleDicts, that
 * stage g keeps (torchtitan/distributed/pipeline_parallel.py,
 * pipeline_module_split). Its Llama models name them tok_embeddings,
 * layers.<i>, norm and output. The stage of each rank follows the style of
 * pipeline_parallel_schedule (loop or V, out_placement.c), and with
 * pipeline_parallel_schedule_csv set the runtime is PyTorch's
 * _PipelineScheduleRuntime replaying schedule.csv. The microbatch count
 * is training.local_batch_size over
 * parallelism.pipeline_parallel_microbatch_size; a Loom microbatch packs
 * the problem's micro_batch_size sequences (1 unless --micro-batch-size),
 * so local_batch_size is that times the microbatches. torchtitan
 * pipelines only when pipeline_parallel_degree > 1 (train.py); a plan on
 * one rank runs the whole model, one microbatch of K sequences a step of
 * gradient accumulation (global_batch_size over local_batch_size times
 * the data-parallel degree). Its 0.2.2 VLM experiment has no pipelining
 * function.
 *
 * torchtitan checkpoints activations per transformer block
 * (torchtitan/distributed/activation_checkpoint.py): mode "none" none,
 * "full" every block, "selective" with an integer option N the j-th block
 * a rank builds when j mod N = 0, counting from 1 over its stages in the
 * order pipeline_module_split builds them (ascending stage index); its
 * default is "selective" with "2". The file states the setting the plan's
 * layer policies are (the torchtitan-recompute tuner chooses one).
 *
 * A plan is written only when all of this holds: a language model alone,
 * one layout for it (one torchtitan mesh), at least two pipeline ranks,
 * one PyTorch pipeline (schedule.csv written), a placement style
 * torchtitan has, every stage holding the next layers in order, a
 * precision and tensor parallelism torchtitan runs (precision_of), and
 * layer memory policies one of those settings states. */
#include <stdlib.h>
#include <string.h>
#include "output.h"

#define TORCHTITAN_RELEASE "0.2.2"

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

/* The model's one module when it is a language model; else -1 with
 * `reason`. */
static int32_t text_module(const loom_model *model, char *reason)
{
    if (model->n_modules == 1 && model->modules[0].modality == LOOM_MODALITY_TEXT)
        return 0;
    for (int32_t i = 0; i < model->n_modules; i++)
        if (model->modules[i].modality != LOOM_MODALITY_TEXT) {
            snprintf(reason, LOOM_OUT_REASON_MAX,
                     "module %s is not a language model: torchtitan %s pipelines language "
                     "models only (its VLM experiment has no pipelining function)",
                     model->modules[i].name, TORCHTITAN_RELEASE);
            return -1;
        }
    snprintf(reason, LOOM_OUT_REASON_MAX,
             "the model has %d text modules: torchtitan %s pipelines one language model",
             model->n_modules, TORCHTITAN_RELEASE);
    return -1;
}

/* 1 when every stage holds the language model's next layers in order;
 * else 0 with `reason`. */
static int split_fits(const loom_plan *plan, const loom_out_torch *t, char *reason)
{
    const loom_partition *part = plan->partition;
    int32_t next = 0;
    for (int32_t g = 0; g < t->n_stages; g++)
        if (!loom_out_spans_continue(plan, stage_position(part, g), g, &next, "torchtitan's",
                                     reason))
            return 0;
    return 1;
}

/* What torchtitan.toml states beside the layout. */
typedef struct tt_job {
    const char *ac_mode;  /* [activation_checkpoint] mode: "none", "full", "selective" */
    int32_t ac_every;     /* selective: selective_ac_option N */
    int64_t seq_len;      /* [training] seq_len; 0: not stated */
    const char *param_dtype; /* [training] mixed_precision_param */
    int float8;           /* Linear GEMMs in float8: the converter's tables */
    int async_tp;         /* TP collectives overlapped: enable_async_tensor_parallel */
} tt_job;

/* Counts the policies of every layer of every position (counts[policy]);
 * first[] as loom_out_position_pairs fills it. */
static void count_ac(const loom_plan *plan, const int32_t *first, int32_t *counts)
{
    const loom_stage_graph *g = plan->graph;
    for (int32_t p = 0; p < plan->partition->flows[0].n_pos; p++) {
        if (first[p] < 0)
            continue;
        const uint8_t *pol = &g->layer_policy[g->pair_layer_off[first[p]]];
        int32_t n = loom_out_position_layers(plan->partition, p);
        for (int32_t i = 0; i < n; i++)
            counts[pol[i] < LOOM_POLICY_COUNT ? pol[i] : 0]++;
    }
}

/* Walks the layers every rank builds (its stages in ascending order, the
 * j-th from 1) with first[] as loom_out_position_pairs fills it. With k >
 * 0: 1 when full recomputation runs exactly on the layers with j mod k =
 * 0. With k = 0: the first j that runs it on any rank, 0 when none. */
static int32_t walk_full(const loom_plan *plan, const loom_out_torch *t, const int32_t *first,
                         int32_t k)
{
    const loom_stage_graph *g = plan->graph;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int32_t j = 0;
        for (int32_t st = 0; st < t->n_stages; st++) {
            if (t->stage_rank[st] != r || first[st] < 0)
                continue;
            const uint8_t *pol = &g->layer_policy[g->pair_layer_off[first[st]]];
            int32_t n = loom_out_position_layers(plan->partition, st);
            for (int32_t i = 0; i < n; i++) {
                j++;
                int full = pol[i] == LOOM_POLICY_FULL;
                if (k == 0 && full)
                    return j;
                if (k > 0 && full != (j % k == 0))
                    return 0;
            }
        }
    }
    return k > 0;
}

/* Fills job's checkpointing from the stages' layer policies (the same for
 * every microbatch of a stage): all none, all full, or full on every N-th
 * block each rank builds; else 0 with the reason. LOOM_ENOMEM in *rc. */
static int ac_of(const loom_plan *plan, const loom_out_torch *t, tt_job *job, char *reason,
                 int *rc, loom_error *err)
{
    int32_t n_pos = plan->partition->flows[0].n_pos, counts[LOOM_POLICY_COUNT] = {0};
    int32_t *first = malloc((size_t)n_pos * sizeof *first);
    if (!first) {
        *rc = loom_set_error(err, LOOM_ENOMEM, "torchtitan.toml: out of memory");
        return 0;
    }
    int ok = loom_out_position_pairs(plan, first, "torchtitan " TORCHTITAN_RELEASE, reason);
    if (ok)
        count_ac(plan, first, counts);
    int32_t total = counts[0] + counts[1] + counts[2] + counts[3];
    job->ac_mode = "none";
    job->ac_every = 0;
    if (ok && counts[LOOM_POLICY_OFFLOAD] > 0)
        ok = loom_out_refuse(reason, "%d layers offload their activations to host memory; "
                             "torchtitan %s's activation checkpointing has no offload mode",
                             counts[LOOM_POLICY_OFFLOAD], TORCHTITAN_RELEASE);
    else if (ok && counts[LOOM_POLICY_SELECTIVE] > 0)
        ok = loom_out_refuse(reason, "%d of %d layers run selective recomputation (the attention "
                             "core); torchtitan %s's selective modes checkpoint whole blocks "
                             "or save operators by its 'op' policy, never the attention core "
                             "alone", counts[LOOM_POLICY_SELECTIVE], total, TORCHTITAN_RELEASE);
    else if (ok && counts[LOOM_POLICY_FULL] > 0 && counts[LOOM_POLICY_FULL] == total)
        job->ac_mode = "full";
    else if (ok && counts[LOOM_POLICY_FULL] > 0) {
        /* the first layer checkpointed is the N-th a rank builds */
        int32_t k = walk_full(plan, t, first, 0);
        if (k >= 2 && walk_full(plan, t, first, k))
            job->ac_mode = "selective", job->ac_every = k;
        if (!job->ac_every)
            ok = loom_out_refuse(reason, "%d of %d layers run full recomputation and the others "
                                 "none, not on every N-th block each rank builds; torchtitan "
                                 "%s checkpoints every block (mode full), none, or the j-th "
                                 "block a rank builds when j mod N = 0 (selective_ac_option N, "
                                 "the torchtitan-recompute tuner's settings)",
                                 counts[LOOM_POLICY_FULL], total, TORCHTITAN_RELEASE);
    }
    free(first);
    return ok;
}

/* Without pipeline parallelism torchtitan runs one microbatch a step of
 * gradient accumulation, its forward then its whole backward (train.py,
 * forward_backward_step): 1 when the plan's one rank runs each
 * microbatch's stages together and every backward whole; else 0 with
 * the reason (LOOM_ENOMEM in *rc). */
static int one_rank_fits(const loom_plan *plan, char *reason, int *rc, loom_error *err)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *s = plan->schedule;
    int32_t M = plan->partition->n_microbatches;
    int32_t *left = calloc((size_t)(M > 0 ? M : 1), sizeof *left);
    if (!left) {
        *rc = loom_set_error(err, LOOM_ENOMEM, "torchtitan.toml: out of memory");
        return 0;
    }
    for (int32_t v = 0; v < g->n_stages; v++)
        left[g->microbatch[v]]++;
    int ok = 1;
    int32_t current = -1;
    for (int32_t i = s->rank_off[0]; i < s->rank_off[1] && ok; i++) {
        int32_t v = s->order[i], mb = g->microbatch[v];
        if (g->kind[v] == LOOM_STAGE_I || g->kind[v] == LOOM_STAGE_W)
            ok = loom_out_refuse(reason,
                          "the plan splits backwards into input and weight gradients on its "
                          "one rank; torchtitan %s without pipeline parallelism runs every "
                          "backward whole", TORCHTITAN_RELEASE);
        else if (mb != current && current >= 0 && left[current] > 0)
            ok = loom_out_refuse(reason,
                          "the plan's one rank runs microbatch %d before microbatch %d's "
                          "backward has ended; torchtitan %s without pipeline parallelism runs "
                          "one microbatch's forward and backward at a time (gradient "
                          "accumulation; plan with vpp 1)",
                          mb, current, TORCHTITAN_RELEASE);
        current = mb;
        left[mb]--;
    }
    free(left);
    return ok;
}

void loom_out_mesh_degrees(const loom_plan *plan, int32_t *tp, int32_t *cp, int32_t *dp)
{
    const loom_parallel *par = &plan->problem->parallel;
    const loom_module_layout *l = loom_out_layout(plan, 0);
    *tp = l ? l->tp : plan->partition && plan->partition->tp > 0 ? plan->partition->tp : 1;
    *cp = l ? l->cp : loom_parallel_cp(par);
    *dp = l ? l->dp : par->dp > 0 ? par->dp : 1;
    *tp = *tp > 0 ? *tp : 1;
    *cp = *cp > 0 ? *cp : 1;
    *dp = *dp > 0 ? *dp : 1;
}

/* What torchtitan runs in the plan's precision (the cost model's
 * LOOM_ASSUMED_* bits) and tensor parallelism, job->param_dtype; else 0
 * with the reason. torchtitan's tensor parallelism always shards the norms
 * and activations along the sequence (parallelize.py apply_tp:
 * SequenceParallel). It trains mixed precision through FSDP, which it
 * applies when the data-parallel shard degree or cp is above 1; without
 * FSDP, under tensor or pipeline parallelism, it trains in float32, and
 * on one GPU under autocast over float32 weights (distributed/utils.py
 * maybe_enable_amp). Its mixed_precision_param is
 * bfloat16 or float32, and it never enables TF32 matmuls. It overlaps
 * the TP collectives with the GEMMs as async TP, which needs the model
 * compiled (distributed/tensor_parallel.py maybe_enable_async_tp). Its float8
 * converter (components/quantization/float8.py) swaps the Linear layers
 * not named in filter_fqns for torchao's Float8Linear, tensorwise scaled
 * without a recipe_name, as roofline's fp8 prices the blocks' GEMMs; the
 * LM head ("output") stays bf16, the attention core is no Linear. Its
 * FSDP2 shards weights, gradients and optimizer states, so a plan it runs
 * with FSDP must be priced so (LOOM_ASSUMED_SHARDED_PARAMS), and with
 * FSDP2's memory, not Megatron-FSDP's (LOOM_ASSUMED_MEGATRON_FSDP). */
static int precision_of(const loom_plan *plan, tt_job *job, char *reason)
{
    int32_t tp, cp, dp;
    loom_out_mesh_degrees(plan, &tp, &cp, &dp);
    const loom_stage_graph *g = plan->graph;
    uint32_t a = LOOM_STRUCT_HAS(g, loom_stage_graph, assumed) ? g->assumed : 0;
    if (tp > 1 && (a & LOOM_ASSUMED_KNOWN) && !(a & LOOM_ASSUMED_SEQUENCE_PARALLEL))
        return loom_out_refuse(reason,
                      "the plan is priced with tensor parallelism without sequence "
                      "parallelism; torchtitan %s's tensor parallelism always shards the "
                      "norms and activations along the sequence (plan with "
                      "cost_model.sequence_parallel=true)", TORCHTITAN_RELEASE);
    job->async_tp = tp > 1 && (a & LOOM_ASSUMED_TP_COMM_OVERLAP);
    if (a & LOOM_ASSUMED_EAGER_LAYERS)
        return loom_out_refuse(reason,
                      "the plan is priced with Hugging Face transformers' eager layers "
                      "(cost_model.layer_kernels); torchtitan %s runs its own Llama blocks",
                      TORCHTITAN_RELEASE);
    if (a & LOOM_ASSUMED_UNFUSED_ATTENTION)
        return loom_out_refuse(reason,
                      "the plan is priced with the attention core unfused (scores in HBM); "
                      "torchtitan %s's Llama runs scaled_dot_product_attention, a fused "
                      "kernel (plan with cost_model.flash_attention=true)", TORCHTITAN_RELEASE);
    if (a & LOOM_ASSUMED_GRAD_REDUCE_BF16)
        return loom_out_refuse(reason,
                      "the plan is priced with the gradients reduced in bf16; torchtitan %s "
                      "reduces them in float32 (mixed_precision_reduce)", TORCHTITAN_RELEASE);
    loom_out_prec p;
    if (!loom_out_precision(plan, &p))
        return loom_out_refuse(reason,
                      "the cost model did not say which precision its times assume "
                      "(loom_rank_tail.assumed), so torchtitan's dtype is unknown");
    int fsdp = dp > 1 || cp > 1;
    if (fsdp && (a & LOOM_ASSUMED_KNOWN) && !(a & LOOM_ASSUMED_SHARDED_PARAMS))
        return loom_out_refuse(reason,
                      "the plan is priced with Megatron-LM's distributed optimizer, whole "
                      "weights and gradients on every data-parallel replica; torchtitan %s "
                      "shards them with FSDP2 over the data-parallel shard degree and cp, "
                      "which keeps other memory and gathers every layer's weights (plan with "
                      "cost_model.fsdp=true, as examples/manifests/torchtitan-tuned.json does)",
                      TORCHTITAN_RELEASE);
    if (fsdp && (a & LOOM_ASSUMED_MEGATRON_FSDP))
        return loom_out_refuse(reason,
                      "the plan is priced with Megatron-FSDP's memory, a weight shard in "
                      "element precision beside the fp32 one; torchtitan %s's FSDP2 keeps "
                      "the fp32 shard alone (plan with cost_model.fsdp_implementation=fsdp2)",
                      TORCHTITAN_RELEASE);
    int mixed = p.element_bytes == 2 && (!strcmp(p.matmul, "bf16") || !strcmp(p.matmul, "fp8"));
    job->float8 = mixed && !strcmp(p.matmul, "fp8");
    if (mixed && fsdp)
        job->param_dtype = "bfloat16";
    else if (p.element_bytes == 4 && !strcmp(p.matmul, "fp32"))
        job->param_dtype = "float32";
    else if (mixed && tp == 1 && plan->partition->n_ranks == 1)
        return loom_out_refuse(reason,
                      "the plan is priced in %s on one GPU; torchtitan %s trains one GPU "
                      "under autocast over float32 weights and gradients (maybe_enable_amp), "
                      "which keeps other memory than the plan prices", p.matmul,
                      TORCHTITAN_RELEASE);
    else if (mixed)
        return loom_out_refuse(reason,
                      "the plan is priced in %s at data-parallel degree 1 and cp 1; "
                      "torchtitan %s trains mixed precision only through FSDP (data-parallel "
                      "shard degree or cp above 1) and otherwise, under pipeline "
                      "parallelism, in float32", p.matmul, TORCHTITAN_RELEASE);
    else
        return loom_out_refuse(reason,
                      "the plan is priced with %d-byte elements and %s matmuls; torchtitan "
                      "%s trains bf16 (with float8 GEMMs or not) over float32 weights under "
                      "FSDP, or float32 with fp32 matmuls; it never enables TF32 and has no "
                      "fp16 mixed precision", p.element_bytes, p.matmul, TORCHTITAN_RELEASE);
    return 1;
}

/* job->seq_len: for one sequence a microbatch, the text tokens of the
 * longest, rounded up to a multiple of tp x 2 cp (torchtitan's
 * seq_len_divisor, which parallelize_llama asserts); 0 for K > 1
 * sequences a microbatch (their tokens give no one length) or no samples. */
static int seq_len_of(const loom_plan *plan, tt_job *job, loom_error *err)
{
    job->seq_len = 0;
    if (loom_problem_micro_batch_size(plan->problem) != 1)
        return LOOM_OK;
    int64_t tokens;
    int rc = loom_out_longest_microbatch_tokens(plan, &tokens, err);
    if (rc != LOOM_OK)
        return loom_error_prefix(err, rc, "torchtitan.toml");
    int32_t tp, cp, dp;
    loom_out_mesh_degrees(plan, &tp, &cp, &dp);
    int64_t unit = (int64_t)tp * 2 * cp;
    job->seq_len = tokens > 0 ? (tokens + unit - 1) / unit * unit : 0;
    return LOOM_OK;
}

/* Decides whether torchtitan can build the plan; on success fills *pl
 * (t must be built). */
static int decide(const loom_plan *plan, const loom_out_torch *t, loom_out_placement *pl,
                  tt_job *job, int *fits, char *reason, loom_error *err)
{
    *fits = 0;
    int rc = LOOM_OK;
    const loom_model *model = plan->problem ? plan->problem->model : NULL;
    if (!model || !plan->partition) {
        snprintf(reason, LOOM_OUT_REASON_MAX,
                 "a stage-times problem has no model modules to name");
        return rc;
    }
    if (!loom_out_one_mesh(plan, reason) || text_module(model, reason) < 0)
        return rc;
    memset(pl, 0, sizeof *pl);
    if (plan->graph->n_ranks > 1) { /* pipelined: the stages and the schedule */
        loom_out_placement_find(plan, t, pl);
        if (!pl->style) {
            snprintf(reason, LOOM_OUT_REASON_MAX, "%s", pl->reason);
            return rc;
        }
    } else if (!one_rank_fits(plan, reason, &rc, err)) {
        return rc;
    }
    if (!split_fits(plan, t, reason) || !ac_of(plan, t, job, reason, &rc, err) ||
        !precision_of(plan, job, reason))
        return rc;
    if ((rc = seq_len_of(plan, job, err)) == LOOM_OK)
        *fits = 1;
    return rc;
}

int loom_out_torchtitan_fits(const loom_plan *plan, int *fits,
                             char reason[LOOM_OUT_REASON_MAX], loom_error *err)
{
    loom_out_torch t;
    *fits = 0;
    int rc = loom_out_torch_build(plan, &t, err);
    if (rc != LOOM_OK)
        return loom_error_prefix(err, rc, "torchtitan.toml");
    loom_out_placement pl;
    tt_job job;
    rc = decide(plan, &t, &pl, &job, fits, reason, err);
    loom_out_torch_free(&t);
    return rc;
}

/* Part g of module_fqns_per_model_part. */
static void write_part(FILE *out, const loom_plan *plan, const loom_out_torch *t, int32_t g)
{
    const loom_partition *part = plan->partition;
    const loom_position *pos = stage_position(part, g);
    int first = g != 0;
    fputs(g == 0 ? "  [\"tok_embeddings\"" : "  [", out);
    for (int32_t k = 0; pos && k < pos->n_spans; k++) {
        const loom_span *sp = &part->spans[pos->span_off + k];
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
                       const loom_out_placement *pl, const tt_job *job)
{
    int32_t tp, cp, dp;
    loom_out_mesh_degrees(plan, &tp, &cp, &dp);
    fputs("# torchtitan " TORCHTITAN_RELEASE " job config for the Loom plan ", out);
    loom_out_json_string(out, plan->label);
    int pipelined = plan->graph->n_ranks > 1;
    fputs(pipelined ? "\n# Pass it with --job.config_file, or copy its tables into your job "
                      "config.\n# pipeline_parallel_schedule_csv is relative to the directory "
                      "torchtitan runs in.\n"
                    : "\n# Pass it with --job.config_file, or copy its tables into your job "
                      "config.\n", out);
    fprintf(out, "[parallelism]\npipeline_parallel_degree = %d\n", plan->graph->n_ranks);
    int32_t K = loom_problem_micro_batch_size(plan->problem);
    if (pipelined) {
        fprintf(out, "pipeline_parallel_schedule = \"%s\"\n", pl->schedule);
        fprintf(out, "pipeline_parallel_schedule_csv = \"schedule.csv\"\n"
                "pipeline_parallel_microbatch_size = %d\n"
                "module_fqns_per_model_part = [\n", K);
        for (int32_t g = 0; g < t->n_stages; g++)
            write_part(out, plan, t, g);
        fputs("]\n", out);
    }
    fprintf(out, "tensor_parallel_degree = %d\n", tp);
    if (job->async_tp)
        fputs("enable_async_tensor_parallel = true\n", out);
    fprintf(out, "context_parallel_degree = %d\n", cp);
    fprintf(out, "data_parallel_shard_degree = %d\n", dp);
    fputs("\n[training]\n", out);
    if (pipelined) /* the schedule runs the microbatches */
        fprintf(out, "local_batch_size = %lld\n", (long long)t->microbatches * K);
    else /* one microbatch a step of gradient accumulation (train.py) */
        fprintf(out, "local_batch_size = %d\nglobal_batch_size = %lld\n", K,
                (long long)t->microbatches * K * dp);
    if (job->seq_len > 0)
        fprintf(out, "seq_len = %lld\n", (long long)job->seq_len);
    fprintf(out, "mixed_precision_param = \"%s\"\n", job->param_dtype);
    /* roofline's fused kernels: one for each norm and activation, as
     * torch.compile of each block gives (parallelize_llama, apply_compile) */
    fputs("\n[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n", out);
    fprintf(out, "\n[activation_checkpoint]\nmode = \"%s\"\n", job->ac_mode);
    if (job->ac_every > 0)
        fprintf(out, "selective_ac_option = \"%d\"\n", job->ac_every);
    if (job->float8)
        fputs("\n[model]\nconverters = [\"quantize.linear.float8\"]\n"
              "\n[quantize.linear.float8]\nfilter_fqns = [\"output\"]\n", out);
}

int loom_write_torchtitan_toml(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    loom_out_torch t;
    int rc = loom_out_begin(plan, "torchtitan.toml", &frame, err);
    if (rc == LOOM_OK && (rc = loom_out_torch_build(plan, &t, err)) == LOOM_OK) {
        loom_out_placement pl;
        tt_job job;
        int fits = 0;
        char reason[LOOM_OUT_REASON_MAX];
        rc = decide(plan, &t, &pl, &job, &fits, reason, err);
        if (rc == LOOM_OK && fits)
            write_toml(out, plan, &t, &pl, &job);
        else if (rc == LOOM_OK)
            rc = loom_set_error(err, LOOM_EINVAL, "torchtitan.toml: not written: %s", reason);
        loom_out_torch_free(&t);
    }
    return loom_out_end(&frame, out, "torchtitan.toml", rc, err);
}
