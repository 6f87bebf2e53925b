/* out_megatron_args.c - the plan as Megatron-LM's command-line arguments
 * (megatron.args, docs/outputs.md), for megatron-core 0.16.1's
 * pretrain_gpt.py: one argument per line, "--name" or "--name value".
 *
 * A plan is written only when Megatron-LM runs exactly it: one decoder
 * stack split as Megatron splits (out_megatron.c's checks), layers of one
 * shape, one microbatch per unit, one backward per forward, every rank's
 * order the one Megatron's 1F1B (V = 1) or interleaved 1F1B (V > 1)
 * schedule runs, memory policies its recompute flags can state, and the
 * optimizer and overlap settings the cost model named (Megatron-FSDP for
 * a plan priced with sharded weights on one pipeline rank). Otherwise the
 * reason says which rule the plan breaks. */
#include <stdlib.h>
#include <string.h>
#include <loom/tokens.h>
#include "output.h"

enum mg_recompute { MG_RECOMPUTE_NONE, MG_SELECTIVE, MG_FULL_UNIFORM, MG_FULL_BLOCK };

/* What megatron.args says about a plan. */
typedef struct mg_args {
    int32_t tp, cp, pp, dp, vpp, layers, microbatches;
    int64_t seq_tokens;        /* 0: the plan has no samples */
    int32_t layers_per_stage;  /* every virtual stage's, or 0 when uneven */
    char *layout;              /* --pipeline-model-parallel-layout */
    int recompute;             /* enum mg_recompute */
    int32_t recompute_layers;  /* --recompute-num-layers */
    uint32_t assumed;          /* LOOM_ASSUMED_* bits */
    int megatron_fsdp;         /* weights, gradients and state sharded */
    const char *precision;     /* the precision flags, one a line */
    const loom_layer *shape;   /* every decoder layer's */
} mg_args;

/* 1 when every layer of `mod` has layer 0's shape (Megatron's GPT has one
 * hidden, FFN and head count for all layers). */
static int one_shape(const loom_module *mod, char *reason)
{
    const loom_layer *a = &mod->layers[0];
    for (int32_t i = 1; i < mod->n_layers; i++) {
        const loom_layer *b = &mod->layers[i];
        if (b->hidden != a->hidden || b->ffn_hidden != a->ffn_hidden || b->heads != a->heads ||
            b->kv_heads != a->kv_heads || b->gated_ffn != a->gated_ffn ||
            b->cross_attention != a->cross_attention)
            return loom_out_refuse(reason,
                          "layer %d of module %s has another shape than layer 0; Megatron-LM's "
                          "GPT model gives every decoder layer one hidden, FFN and head count",
                          i, mod->name);
    }
    if (a->cross_attention)
        return loom_out_refuse(reason, "module %s has cross-attention layers; Megatron-LM's GPT decoder "
                              "layers have none", mod->name);
    return 1;
}

/* 1 when every unit is a whole microbatch and every stage an F or B that
 * is not a fill: Megatron runs one backward per forward, microbatch by
 * microbatch. */
static int whole_units(const loom_plan *plan, char *reason)
{
    const loom_partition *part = plan->partition;
    const loom_stage_graph *g = plan->graph;
    for (int32_t mb = 0; mb < part->n_microbatches; mb++) {
        int32_t subs = part->subs[mb];
        if (subs != 1)
            return loom_out_refuse(reason,
                          "microbatch %d runs as %d sub-microbatches; Megatron-LM runs every "
                          "microbatch whole on every stage", mb, subs);
    }
    const int32_t *fills = loom_schedule_fills(plan->schedule);
    for (int32_t s = 0; s < g->n_stages; s++) {
        if (g->kind[s] == LOOM_STAGE_I || g->kind[s] == LOOM_STAGE_W)
            return loom_out_refuse(reason,
                          "the plan splits backward into input- and weight-gradient stages "
                          "(stage %d is %c); Megatron-LM's 1F1B schedules run one backward per "
                          "forward", s, loom_out_kind_char(g->kind[s]));
        if (fills && fills[s] > 0)
            return loom_out_refuse(reason,
                          "stage %d runs as a fill inside the next %d stages of rank %d; "
                          "Megatron-LM runs one stage at a time", s, fills[s], g->rank[s]);
    }
    return 1;
}

/* Counts the policies of every layer (counts[policy]) and the leading
 * `full` layers of every position (lead[p]). */
static void count_policies(const loom_plan *plan, const int32_t *first, int32_t *counts,
                           int32_t *lead)
{
    const loom_stage_graph *g = plan->graph;
    int32_t n_pos = plan->partition->flows[0].n_pos;
    for (int32_t p = 0; p < n_pos; p++) {
        int32_t off = g->pair_layer_off[first[p]], n = g->pair_layer_off[first[p] + 1] - off;
        lead[p] = 0;
        while (lead[p] < n && g->layer_policy[off + lead[p]] == LOOM_POLICY_FULL)
            lead[p]++;
        for (int32_t i = 0; i < n; i++)
            counts[g->layer_policy[off + i] < LOOM_POLICY_COUNT ? g->layer_policy[off + i] : 0]++;
    }
}

/* Block recomputation of the first n layers of every model chunk: 1 when
 * every position runs full on exactly its first min(n, layers) layers. */
static int block_fits(const loom_plan *plan, const int32_t *lead, int32_t n, char *reason)
{
    const loom_partition *part = plan->partition;
    for (int32_t p = 0; p < part->flows[0].n_pos; p++) {
        int32_t layers = loom_out_position_layers(part, p), want = n < layers ? n : layers;
        if (lead[p] != want)
            return loom_out_refuse(reason,
                          "stage %d runs full recomputation on its first %d of %d layers and "
                          "another stage on its first %d; Megatron-LM's block method "
                          "(--recompute-method block) recomputes the first "
                          "--recompute-num-layers layers of every model chunk, the uniform "
                          "method every layer", p, lead[p], layers, n);
    }
    return 1;
}

/* Fills a->recompute from the stages' layer policies (the same for every
 * microbatch of a stage): all none, all selective, all full (uniform, 1
 * layer a unit) or full on the first N layers of every chunk (block). */
static int recompute_of(const loom_plan *plan, mg_args *a, char *reason, int *oom)
{
    int32_t n_pos = plan->partition->flows[0].n_pos, counts[LOOM_POLICY_COUNT] = {0};
    int32_t *first = malloc((size_t)n_pos * 2 * sizeof *first);
    if (!first) {
        *oom = 1;
        return 0;
    }
    int32_t *lead = first + n_pos, n = 0;
    int ok = loom_out_position_pairs(plan, first, "Megatron-LM", reason);
    if (ok)
        count_policies(plan, first, counts, lead);
    for (int32_t p = 0; ok && p < n_pos; p++)
        n = lead[p] > n ? lead[p] : n;
    int32_t total = counts[0] + counts[1] + counts[2] + counts[3];
    if (ok && counts[LOOM_POLICY_OFFLOAD] > 0)
        ok = loom_out_refuse(reason, "%d layers offload their activations to host memory; Megatron-LM's "
                            "recompute flags have no offload policy", counts[LOOM_POLICY_OFFLOAD]);
    else if (ok && counts[LOOM_POLICY_SELECTIVE] > 0 && counts[LOOM_POLICY_SELECTIVE] != total)
        ok = loom_out_refuse(reason, "%d of %d layers run selective recomputation and the others not; "
                            "Megatron-LM's --recompute-granularity selective applies to every "
                            "layer", counts[LOOM_POLICY_SELECTIVE], total);
    else if (ok && counts[LOOM_POLICY_SELECTIVE] == total && total > 0)
        a->recompute = MG_SELECTIVE;
    else if (ok && counts[LOOM_POLICY_FULL] == total && total > 0)
        a->recompute = MG_FULL_UNIFORM;
    else if (ok && n > 0 && (ok = block_fits(plan, lead, n, reason)) != 0)
        a->recompute = MG_FULL_BLOCK;
    a->recompute_layers = a->recompute == MG_FULL_UNIFORM ? 1 : n;
    free(first);
    return ok;
}

/* Megatron's get_schedule_table entry k (microbatch, chunk) for M
 * microbatches over V chunks in groups of P microbatches (the last group
 * takes the rest): each group runs through every chunk in turn. */
static void table_entry(int32_t P, int32_t V, int32_t M, int32_t k, int32_t *mb, int32_t *chunk)
{
    int32_t start = 0;
    for (;;) {
        int32_t size = start + P >= M ? M - start : P;
        if (k < size * V) {
            *chunk = k / size;
            *mb = start + k % size;
            return;
        }
        k -= size * V;
        start += P;
    }
}

/* The i-th action of rank r in Megatron-LM's (interleaved) 1F1B: kind
 * (LOOM_STAGE_F or LOOM_STAGE_B), microbatch and chunk. Warm-up forwards
 * (P - r - 1; interleaved 2 (P - r - 1) + (V - 1) P, at most M V), then
 * one forward and one backward at a time, then the remaining backwards;
 * a backward runs the chunks in reverse order. */
static void megatron_action(int32_t P, int32_t V, int32_t M, int32_t r, int32_t i, int *kind,
                            int32_t *mb, int32_t *chunk)
{
    int32_t total = M * V;
    int32_t warm = P == 1 ? 0 : V == 1 ? P - r - 1 : 2 * (P - r - 1) + (V - 1) * P;
    warm = warm < total ? warm : total;
    int32_t left = total - warm, j = i - warm, k;
    if (i < warm) {
        *kind = LOOM_STAGE_F, k = i;
    } else if (j < 2 * left) {
        *kind = j % 2 ? LOOM_STAGE_B : LOOM_STAGE_F;
        k = j % 2 ? j / 2 : warm + j / 2;
    } else {
        *kind = LOOM_STAGE_B, k = j - left;
    }
    table_entry(P, V, M, k, mb, chunk);
    if (*kind == LOOM_STAGE_B)
        *chunk = V - 1 - *chunk;
}

/* 1 when every rank's order is Megatron-LM's schedule for P, V, M. */
static int megatron_order(const loom_plan *plan, const mg_args *a, char *reason)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    int32_t P = a->pp, V = a->vpp, M = a->microbatches;
    const char *name = V > 1 ? "interleaved 1F1B" : "1F1B";
    if (V > 1 && (P < 2 || M % P != 0))
        return loom_out_refuse(reason,
                      "%d microbatches on %d ranks with %d virtual stages each; Megatron-LM's "
                      "interleaved schedule needs more than one rank and a microbatch count "
                      "that is a multiple of the ranks (its groups of P microbatches)", M, P, V);
    for (int32_t r = 0; r < P; r++) {
        int32_t n = sc->rank_off[r + 1] - sc->rank_off[r];
        if (n != 2 * M * V)
            return loom_out_refuse(reason, "rank %d runs %d stages; Megatron-LM's %s runs %d (a forward "
                                  "and a backward per microbatch and chunk)", r, n, name,
                          2 * M * V);
        for (int32_t i = 0; i < n; i++) {
            int32_t s = sc->order[sc->rank_off[r] + i], mb, chunk;
            int kind;
            megatron_action(P, V, M, r, i, &kind, &mb, &chunk);
            int32_t own_chunk = g->position[s] / P;
            if (g->kind[s] != kind || g->microbatch[s] != mb || own_chunk != chunk)
                return loom_out_refuse(reason,
                              "rank %d runs %c of microbatch %d (chunk %d) as its stage %d; "
                              "Megatron-LM's %s schedule runs %c of microbatch %d (chunk %d) "
                              "there", r, loom_out_kind_char(g->kind[s]), g->microbatch[s],
                              own_chunk, i, name, loom_out_kind_char(kind), mb, chunk);
        }
    }
    return 1;
}

/* Greatest common divisor of two positive numbers. */
static int64_t gcd64(int64_t x, int64_t y)
{
    while (y) {
        int64_t t = x % y;
        x = y;
        y = t;
    }
    return x;
}

/* a->seq_tokens: the text tokens of the longest microbatch (one packed
 * sequence), rounded up to what Megatron-LM requires: a multiple of tp
 * with sequence parallelism and of 2 cp with context parallelism. */
static int sequence_tokens(const loom_plan *plan, mg_args *a, int *oom)
{
    if (loom_out_longest_microbatch_tokens(plan, &a->seq_tokens, NULL) != LOOM_OK) {
        *oom = 1;
        return 0;
    }
    int64_t sp = a->tp > 1 && (a->assumed & LOOM_ASSUMED_SEQUENCE_PARALLEL) ? a->tp : 1;
    int64_t cp = a->cp > 1 ? 2 * (int64_t)a->cp : 1, unit = sp / gcd64(sp, cp) * cp;
    a->seq_tokens = (a->seq_tokens + unit - 1) / unit * unit;
    return 1;
}

/* The optimizer and overlap settings the cost model assumed (the stage
 * graph's `assumed`), as Megatron-LM accepts them together; sharded
 * weights (cost_model.fsdp) become Megatron-FSDP without a pipeline and
 * are refused with one. */
static int tail_settings(const loom_plan *plan, mg_args *a, char *reason)
{
    const loom_stage_graph *g = plan->graph;
    a->assumed = LOOM_STRUCT_HAS(g, loom_stage_graph, assumed) ? g->assumed : 0;
    if (!(a->assumed & LOOM_ASSUMED_KNOWN))
        return loom_out_refuse(reason,
                      "the cost model did not say which optimizer and gradient-overlap "
                      "settings its iteration tail assumes (loom_rank_tail.assumed), so the "
                      "Megatron-LM flags for them are unknown");
    if (a->assumed & LOOM_ASSUMED_SHARDED_PARAMS) {
        if (a->pp > 1)
            return loom_out_refuse(reason,
                          "the plan is priced with the weights and gradients sharded over the "
                          "data-parallel replicas (cost_model.fsdp) under pipeline parallelism, "
                          "where PyTorch's pipelining keeps a stage's weights gathered and its "
                          "gradients whole until the step; Megatron-FSDP "
                          "(--use-megatron-fsdp) gathers and reshards every layer's weights "
                          "and reduce-scatters its gradients on every microbatch, which the "
                          "plan does not price");
        if (!(a->assumed & LOOM_ASSUMED_MEGATRON_FSDP))
            return loom_out_refuse(reason,
                          "the plan is priced with PyTorch FSDP2's memory, whose fp32 weight "
                          "shard is the only copy; Megatron-FSDP keeps a shard in element "
                          "precision beside it (plan with "
                          "cost_model.fsdp_implementation=megatron-fsdp)");
        a->megatron_fsdp = 1;
    }
    uint32_t need = LOOM_ASSUMED_DISTRIBUTED_OPTIMIZER | LOOM_ASSUMED_OVERLAP_GRAD_REDUCE;
    if (!a->megatron_fsdp && (a->assumed & LOOM_ASSUMED_OVERLAP_PARAM_GATHER) &&
        (a->assumed & need) != need)
        return loom_out_refuse(reason,
                      "the cost model overlaps the parameter all-gather without %s; Megatron-LM "
                      "takes --overlap-param-gather only with --use-distributed-optimizer and "
                      "--overlap-grad-reduce",
                      (a->assumed & LOOM_ASSUMED_DISTRIBUTED_OPTIMIZER)
                          ? "overlapping the gradient reduce"
                          : "the distributed optimizer");
    if (a->assumed & LOOM_ASSUMED_EAGER_LAYERS)
        return loom_out_refuse(reason,
                      "the plan is priced with Hugging Face transformers' eager layers "
                      "(cost_model.layer_kernels); Megatron-LM runs its own fused layers");
    if (a->tp > 1 && (a->assumed & LOOM_ASSUMED_TP_COMM_OVERLAP) &&
        !(a->assumed & LOOM_ASSUMED_SEQUENCE_PARALLEL))
        return loom_out_refuse(reason,
                      "the cost model overlaps the tensor-parallel collectives with the GEMMs "
                      "without sequence parallelism; Megatron-LM takes --tp-comm-overlap only "
                      "with --sequence-parallel");
    return 1;
}

/* The precision flags of the plan (the cost model's LOOM_ASSUMED_*
 * precision bits): --bf16, --fp16, fp8 GEMMs under bf16 with Transformer
 * Engine's hybrid format and current (tensorwise) scaling, or none for
 * fp32, Megatron-LM's default; 0 with a reason for what Megatron-LM does
 * not run. */
static int precision_flags(const loom_plan *plan, mg_args *a, char *reason)
{
    loom_out_prec p;
    if (!loom_out_precision(plan, &p))
        return loom_out_refuse(reason,
                      "the cost model did not say which precision its times assume "
                      "(loom_rank_tail.assumed), so --bf16, --fp16 or fp32 is unknown");
    int two = p.element_bytes == 2;
    if (two && !strcmp(p.matmul, "bf16"))
        a->precision = "--bf16\n";
    else if (two && !strcmp(p.matmul, "fp16"))
        a->precision = "--fp16\n";
    else if (two && !strcmp(p.matmul, "fp8"))
        a->precision = "--bf16\n--fp8-format hybrid\n--fp8-recipe tensorwise\n";
    else if (!two && !strcmp(p.matmul, "fp32"))
        a->precision = "";
    else
        return loom_out_refuse(reason,
                      "the plan is priced with %d-byte elements and %s matmuls; Megatron-LM "
                      "(core_v0.16.1) runs 2-byte elements with bf16, fp16 or fp8 matmuls "
                      "(--bf16, --fp16, --fp8-format) or 4-byte ones with fp32 matmuls (its "
                      "default: it leaves torch.backends.cuda.matmul.allow_tf32 off)",
                      p.element_bytes, p.matmul);
    return 1;
}

/* Sizes, split and shape of the plan; 0 with a reason when Megatron's
 * layout cannot hold it (a->layout owned by the caller when set). */
static int sizes_of(const loom_plan *plan, mg_args *a, char *reason, int *oom)
{
    a->layout = loom_out_megatron_layout(plan, reason, oom);
    if (!a->layout)
        return 0;
    const loom_problem *pb = plan->problem;
    const loom_partition *part = plan->partition;
    const loom_module *mod = &pb->model->modules[0];
    const loom_module_layout *l = loom_out_layout(plan, 0);
    a->tp = loom_problem_module_tp(pb, 0);
    a->cp = loom_problem_module_cp(pb, 0);
    a->pp = part->n_ranks;
    a->dp = l && l->dp > 0 ? l->dp : pb->parallel.dp > 0 ? pb->parallel.dp : 1;
    a->vpp = part->flows[0].n_pos / part->n_ranks;
    a->microbatches = part->n_microbatches;
    a->layers = 0;
    a->layers_per_stage = loom_out_position_layers(part, 0);
    for (int32_t p = 0; p < part->flows[0].n_pos; p++) {
        a->layers += loom_out_position_layers(part, p);
        if (loom_out_position_layers(part, p) != a->layers_per_stage)
            a->layers_per_stage = 0;
    }
    a->shape = mod->n_layers > 0 ? &mod->layers[0] : NULL;
    if (a->layers != mod->n_layers || !a->shape)
        return loom_out_refuse(reason, "the stages hold %d of module %s's %d layers; Megatron-LM builds "
                              "every layer", a->layers, mod->name, mod->n_layers);
    return one_shape(mod, reason);
}

/* Fills *a (a->layout malloc'd; free it with free) and *fits, with
 * `reason` when the plan does not fit. LOOM_ENOMEM on allocation failure. */
static int build_args(const loom_plan *plan, mg_args *a, int *fits, char *reason,
                      loom_error *err)
{
    int oom = 0;
    memset(a, 0, sizeof *a);
    reason[0] = '\0';
    *fits = sizes_of(plan, a, reason, &oom) && whole_units(plan, reason) &&
            tail_settings(plan, a, reason) && precision_flags(plan, a, reason) &&
            recompute_of(plan, a, reason, &oom) &&
            megatron_order(plan, a, reason) && sequence_tokens(plan, a, &oom);
    if (oom) {
        free(a->layout);
        a->layout = NULL;
        return loom_set_error(err, LOOM_ENOMEM, "megatron.args: out of memory");
    }
    return LOOM_OK;
}

int loom_out_megatron_args_fits(const loom_plan *plan, int *fits,
                                char reason[LOOM_OUT_REASON_MAX], loom_error *err)
{
    mg_args a;
    int rc = build_args(plan, &a, fits, reason, err);
    free(a.layout);
    return rc;
}

/* The label with control characters replaced, for the comment line. */
static void write_label(FILE *out, const char *label)
{
    for (const char *c = label; *c; c++)
        fputc((unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c, out);
}

/* The model's shape: hidden, FFN and head sizes, GQA groups, SwiGLU. */
static void write_shape(const mg_args *a, FILE *out)
{
    const loom_layer *l = a->shape;
    fprintf(out, "--num-layers %d\n--hidden-size %lld\n--ffn-hidden-size %lld\n"
                 "--num-attention-heads %d\n",
            a->layers, (long long)l->hidden, (long long)l->ffn_hidden, l->heads);
    if (l->kv_heads > 0 && l->kv_heads != l->heads)
        fprintf(out, "--group-query-attention\n--num-query-groups %d\n", l->kv_heads);
    if (l->gated_ffn)
        fputs("--swiglu\n", out);
}

/* The precision, split, recomputation and the cost model's settings. */
static void write_schedule(const mg_args *a, FILE *out)
{
    fputs(a->precision, out);
    if (a->layers_per_stage == 0)
        fprintf(out, "--pipeline-model-parallel-layout %s\n", a->layout);
    else if (a->vpp > 1)
        fprintf(out, "--num-virtual-stages-per-pipeline-rank %d\n", a->vpp);
    if (a->tp > 1 && (a->assumed & LOOM_ASSUMED_SEQUENCE_PARALLEL))
        fputs("--sequence-parallel\n", out);
    if (a->tp > 1 && (a->assumed & LOOM_ASSUMED_TP_COMM_OVERLAP))
        fputs("--tp-comm-overlap\n", out);
    if (a->assumed & LOOM_ASSUMED_UNFUSED_ATTENTION)
        fputs("--attention-backend unfused\n", out);
    if (a->recompute == MG_SELECTIVE)
        fputs("--recompute-granularity selective\n", out);
    else if (a->recompute != MG_RECOMPUTE_NONE)
        fprintf(out, "--recompute-granularity full\n--recompute-method %s\n"
                     "--recompute-num-layers %d\n",
                a->recompute == MG_FULL_UNIFORM ? "uniform" : "block", a->recompute_layers);
    if (a->assumed & LOOM_ASSUMED_GRAD_REDUCE_BF16)
        fputs("--grad-reduce-in-bf16\n", out);
    if (a->megatron_fsdp) {
        /* the flags Megatron-LM's Megatron-FSDP user guide requires; its
         * optim_grads_params strategy overlaps both collectives layer by
         * layer whatever the overlap flags say, as the plan prices it */
        fputs("--use-megatron-fsdp\n--data-parallel-sharding-strategy optim_grads_params\n"
              "--no-gradient-accumulation-fusion\n--ckpt-format fsdp_dtensor\n"
              "--use-distributed-optimizer\n--overlap-grad-reduce\n--overlap-param-gather\n",
              out);
        return;
    }
    if (a->assumed & LOOM_ASSUMED_DISTRIBUTED_OPTIMIZER)
        fputs("--use-distributed-optimizer\n", out);
    if (a->assumed & LOOM_ASSUMED_OVERLAP_GRAD_REDUCE)
        fputs("--overlap-grad-reduce\n", out);
    if (a->assumed & LOOM_ASSUMED_OVERLAP_PARAM_GATHER)
        fputs("--overlap-param-gather\n", out);
}

/* Every line of megatron.args. */
static void write_args(const loom_plan *plan, const mg_args *a, FILE *out)
{
    fputs("# Megatron-LM arguments for plan \"", out);
    write_label(out, plan->label);
    fputs("\" (megatron-core 0.16.1); pass them with set -f (the layout holds '*'):"
          " pretrain_gpt.py $(grep -v '^#' megatron.args)\n", out);
    if (a->megatron_fsdp)
        fputs("# Megatron-FSDP: leave CUDA_DEVICE_MAX_CONNECTIONS unset (Megatron-LM's "
              "validate_args refuses 1)\n", out);
    fprintf(out, "--tensor-model-parallel-size %d\n--pipeline-model-parallel-size %d\n"
                 "--context-parallel-size %d\n",
            a->tp, a->pp, a->cp);
    write_shape(a, out);
    /* a microbatch of K > 1 sequences: its tokens do not give one
     * sequence's length, which stays the user's --seq-length */
    int32_t K = loom_problem_micro_batch_size(plan->problem);
    if (a->seq_tokens > 0 && K == 1)
        fprintf(out, "--seq-length %lld\n--max-position-embeddings %lld\n",
                (long long)a->seq_tokens, (long long)a->seq_tokens);
    fprintf(out, "--micro-batch-size %d\n--global-batch-size %lld\n", K,
            (long long)a->microbatches * a->dp * K);
    write_schedule(a, out);
}

int loom_write_megatron_args(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    char reason[LOOM_OUT_REASON_MAX];
    mg_args a = {0};
    int fits = 0;
    int rc = loom_out_begin(plan, "megatron.args", &frame, err);
    if (rc != LOOM_OK)
        return rc;
    rc = build_args(plan, &a, &fits, reason, err);
    if (rc == LOOM_OK && !fits)
        rc = loom_set_error(err, LOOM_EINVAL, "megatron.args: not written: %s", reason);
    if (rc == LOOM_OK)
        write_args(plan, &a, out);
    free(a.layout);
    return loom_out_end(&frame, out, "megatron.args", rc, err);
}
