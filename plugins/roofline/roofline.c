/* roofline.c - the `roofline` cost model plugin: operator-level roofline
 * times (SEMU), Korthikanti activation sizes, frozen-aware backward
 * (Cornstarch). The arithmetic lives in roofline_ops.c / roofline_memory.c;
 * this file validates inputs and fills the role's output struct. */
#include <loom/loom.h>

#include <math.h>
#include <string.h>

#include "roofline_model.h"
#include "roofline_memo.h"

#define RF_ID "org.loom.roofline"

/* One instance: the host and the params read at create(). */
typedef struct rf_self {
    const loom_host_api *host;
    double gemm_scale;          /* gemm_efficiency_scale, (0, 2] */
    double launch_ms;           /* kernel_launch_us / 1000 */
    int distributed_optimizer;  /* shard optimizer states over dp */
    int fsdp;                   /* shard weights and gradients too */
    int megatron_fsdp;          /* fsdp_implementation megatron-fsdp */
    unsigned flags;             /* LOOM_ROOFLINE_FLASH | _SEQ_PARALLEL | _FP32 | _EAGER | _GELU_TANH */
    double element_bytes;       /* 2 (bf16) or 4 (fp32 / TF32 training) */
    double optimizer_bytes;     /* optimizer state bytes per parameter */
    double tp_overlap_share;    /* tp_comm_overlap's share, 0 when off */
    loom_tail_knobs tail;       /* the iteration tail's knobs */
    int precision;              /* matmul_precision: an RF_PRECISION_* */
    uint32_t assumed_precision; /* LOOM_ASSUMED_PRECISION and its bits */
    int flash2;                 /* attention_kernel flash2 */
    rf_memo memo;               /* layer costs already computed */
} rf_self;

/* The run's matmul precision (param matmul_precision): which of the
 * cluster's peaks its FLOPs run at. */
enum { RF_PRECISION_BF16, RF_PRECISION_TF32, RF_PRECISION_FP32, RF_PRECISION_FP8 };
static const char *const rf_precision_names[] = {"bf16", "tf32", "fp32", "fp8"};

/* The params, declared once in rf_param_table (manifest.json says the same). */
typedef struct rf_params {
    double gemm_efficiency_scale;
    int distributed_optimizer;
    int fsdp;
    const char *fsdp_implementation;
    int flash_attention;
    int sequence_parallel;
    double kernel_launch_us;
    int grad_accumulation_fp32;
    int overlap_grad_reduce;
    int overlap_param_gather;
    double bucket_params;
    int tp_comm_overlap;
    double tp_comm_overlap_share;
    int64_t element_bytes;
    const char *matmul_precision;
    const char *layer_kernels;
    const char *attention_kernel;
} rf_params;

static const loom_param_def rf_param_table[] = {
    LOOM_FLOAT_PARAM(rf_params, gemm_efficiency_scale, 1, 0, 2,
                   "calibration factor multiplying the cluster's eff_gemm (must be > 0; the "
                   "product is capped at 1)"),
    LOOM_BOOL_PARAM(rf_params, distributed_optimizer, 1,
                   "shard the 12 bytes/param of fp32 master weights and Adam moments over the "
                   "data-parallel replicas"),
    LOOM_BOOL_PARAM(rf_params, fsdp, 0,
                   "shard the weights and gradients over the data-parallel replicas (dp x cp) "
                   "as well, as FSDP2 (torchtitan's data_parallel_shard_degree) and ZeRO-3 do: "
                   "a GPU keeps 1/(dp x cp) of each layer's weights, gradients and states, "
                   "gathers a layer's weights before its forward and again before its "
                   "backward and reduce-scatters its gradients after it, overlapped with the "
                   "neighbouring layer's compute (only what runs longer costs time); the "
                   "tail keeps the last bucket's reduce-scatter and the Adam step over the "
                   "shard, no all-gather; under pipeline parallelism the weights stay gathered "
                   "and the gradients whole until each chunk's last backward, as PyTorch's "
                   "pipelining runs FSDP2. Implies the distributed optimizer"),
    LOOM_ENUM_PARAM(rf_params, fsdp_implementation, "fsdp2", "fsdp2|megatron-fsdp",
                   "with fsdp, whose memory is priced: fsdp2, PyTorch's FSDP2 as torchtitan "
                   "applies it, whose fp32 weight shard is the optimizer's master copy "
                   "((grad + 12) bytes a parameter over the shards with 2-byte elements); "
                   "megatron-fsdp, Megatron-FSDP's optim_grads_params, which keeps a shard of "
                   "the weights in their element precision beside the fp32 one (2 bytes more "
                   "over the shards) and runs without pipeline parallelism here (a plan with "
                   "pp > 1 is refused). Under pipeline parallelism fsdp2's weights stay "
                   "gathered (see fsdp)"),
    LOOM_BOOL_PARAM(rf_params, flash_attention, 1,
                   "fused attention core: scores never reach HBM, so no softmax traffic and "
                   "no stored scores (policy none stores what selective stores)"),
    LOOM_BOOL_PARAM(rf_params, sequence_parallel, 1,
                   "Megatron-LM sequence parallelism when tp > 1 (Korthikanti et al. 2022): "
                   "norms and residuals run on tokens / tp, each all-reduce becomes an "
                   "all-gather before the column-parallel GEMM and a reduce-scatter after the "
                   "row-parallel one, and the stored activations are split over the TP group"),
    LOOM_FLOAT_PARAM(rf_params, kernel_launch_us, 0, 0, 1000,
                   "fixed overhead added to every operator that does work (kernel launch and "
                   "tail effects); makes small sub-microbatches cost what they cost on a GPU"),
    LOOM_BOOL_PARAM(rf_params, grad_accumulation_fp32, 1,
                   "gradients accumulated and reduced in fp32 (4 bytes per parameter), as "
                   "Megatron-LM does for bf16 training; false: 2 bytes"),
    LOOM_BOOL_PARAM(rf_params, overlap_grad_reduce, 1,
                   "reduce gradients bucket by bucket while the last backward of each model "
                   "chunk runs; false: the whole sync follows the rank's last stage"),
    LOOM_BOOL_PARAM(rf_params, overlap_param_gather, 0,
                   "overlap the distributed optimizer's parameter all-gather with the next "
                   "iteration's forwards, as Megatron-LM's --overlap-param-gather does: each "
                   "model chunk's first forward waits for its chunk's gather, dispatched one "
                   "chunk ahead; false: the whole gather follows the optimizer step"),
    LOOM_FLOAT_PARAM(rf_params, bucket_params, 0, 0, 1000000000000,
                   "parameters per gradient bucket; 0: Megatron-LM's max(40e6, 1e6 * dp)"),
    LOOM_BOOL_PARAM(rf_params, tp_comm_overlap, 0,
                   "tensor-parallel collectives split and overlapped with the neighbouring "
                   "GEMM: only the part longer than that GEMM costs time"),
    LOOM_FLOAT_PARAM(rf_params, tp_comm_overlap_share, 1, 0, 1,
                   "with tp_comm_overlap, the share of what the neighbouring GEMM can hide that "
                   "the runtime hides: a collective costs its time less this share of the "
                   "smaller of it and that GEMM's (1: all, the ideal overlap; a runtime's "
                   "measured async-TP gain fits it)"),
    LOOM_INT_PARAM(rf_params, element_bytes, 2, 2, 4,
                   "bytes of one activation and weight element: 2 for bf16 or fp16 training, "
                   "4 for fp32 or TF32 (then HBM traffic, TP and pipeline transfers, stored "
                   "activations and weights double, the weights are their own fp32 master "
                   "copy, so optimizer states are Adam's m and v, 8 bytes a parameter, and an "
                   "Adam step moves 32 bytes a parameter; pair it with matmul_precision tf32 "
                   "or fp32); 3 is refused"),
    LOOM_ENUM_PARAM(rf_params, matmul_precision, "bf16", "bf16|fp16|tf32|fp32|fp8",
                   "the precision the run's matmuls execute in, a property of the run: bf16 "
                   "and fp16 run at the cluster's peak_flops, tf32, fp32 and fp8 at its "
                   "peak_flops_tf32, peak_flops_fp32 and peak_flops_fp8 (datasheet dense "
                   "peaks; the cluster presets carry them, fp8 on Hopper only). PyTorch 1.12 "
                   "and later run float32 matmuls in fp32 unless "
                   "torch.backends.cuda.matmul.allow_tf32 is set; Megatron-LM and torchtitan "
                   "train fp8 GEMMs with --fp8-format and float8 recipes: under fp8 the "
                   "Linear layers' GEMMs pay the casts of their operands (torchao's "
                   "tensorwise recipe) and the attention core and the LM head stay bf16"),
    LOOM_ENUM_PARAM(rf_params, layer_kernels, "fused", "fused|hf-gpt2|hf-bert",
                   "the kernels a layer runs as: fused (Megatron-LM, Transformer Engine, torch.compi"
                   "le: dropout-free, one kernel for the softmax and one for the activation), or Hug"
                   "ging Face transformers' eager layers, one kernel per PyTorch operator with their"
                   " default dropouts (0.1) on: hf-gpt2 (GPT2Block: the scores scaled, causally mask"
                   "ed, padding-masked, soft-maxed and dropped out by separate kernels, dropouts aft"
                   "er the attention output and the MLP, GELU as the eight-operator tanh approximati"
                   "on) and hf-bert (BertLayer: the same without the causal mask, the erf GELU one k"
                   "ernel); hf-* need flash_attention false"),
    LOOM_ENUM_PARAM(rf_params, attention_kernel, "fused", "fused|flash2",
                   "the fused attention kernel the run's runtime picks: fused (the cluster's efficie"
                   "ncy.attention: the kernel Transformer Engine picks, cuDNN's on Hopper, as Megatr"
                   "on-LM runs it) or flash2 (FlashAttention-2, PyTorch's scaled_dot_product_attenti"
                   "on flash backend, which PyTorch tried first on every GPU until 2.9, as torchtita"
                   "n runs it: the cluster's efficiency.attention_flash2, or efficiency.attention wh"
                   "en the cluster gives none); flash2 needs flash_attention true"),
    LOOM_PARAM_END};

/* The RF_PRECISION_* of the enum param matmul_precision ("fp16" runs at
 * the bf16 peak). */
static int rf_precision_of(const char *v)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(v, rf_precision_names[i]))
            return i;
    return RF_PRECISION_BF16;
}

/* The peak FLOP/s the run's matmuls reach on cluster c: peak_flops (bf16
 * and fp16), else the cluster's figure for the precision (0 when the
 * cluster gives none). */
static double rf_peak_flops(const rf_self *s, const loom_cluster *c)
{
    switch (s->precision) {
    case RF_PRECISION_TF32: return c->peak_flops_tf32;
    case RF_PRECISION_FP32: return c->peak_flops_fp32;
    case RF_PRECISION_FP8: return c->peak_flops_fp8;
    default: return c->peak_flops;
    }
}

/* Sets the iteration-tail, overlap, element-size and precision params of
 * s from prm (the element size sets the tail's weight and Adam-step bytes,
 * the optimizer state per parameter and LOOM_ROOFLINE_FP32 in s->flags;
 * both set the LOOM_ASSUMED_* precision bits the tail reports). */
static void rf_tail_params(const rf_params *prm, rf_self *s)
{
    int fp32 = prm->grad_accumulation_fp32, grad = prm->overlap_grad_reduce;
    int gather = prm->overlap_param_gather;
    int64_t element = prm->element_bytes;
    double bucket = prm->bucket_params;
    s->precision = rf_precision_of(prm->matmul_precision);
    s->assumed_precision =
        LOOM_ASSUMED_PRECISION | (element == 4 ? LOOM_ASSUMED_ELEMENTS_FP32 : 0u) |
        (!strcmp(prm->matmul_precision, "fp16") ? LOOM_ASSUMED_MATMUL_FP16 : 0u) |
        (s->precision == RF_PRECISION_TF32 ? LOOM_ASSUMED_MATMUL_TF32 : 0u) |
        (s->precision == RF_PRECISION_FP32 ? LOOM_ASSUMED_MATMUL_FP32 : 0u) |
        (s->precision == RF_PRECISION_FP8 ? LOOM_ASSUMED_MATMUL_FP8 : 0u);
    s->tp_overlap_share = prm->tp_comm_overlap ? prm->tp_comm_overlap_share : 0.0;
    s->tail.distributed_optimizer = s->distributed_optimizer || s->fsdp;
    s->tail.shard_params = s->fsdp;
    s->tail.overlap_grad_reduce = grad != 0;
    s->tail.overlap_param_gather = gather != 0;
    s->tail.grad_bytes = fp32 || element == 4 ? 4.0 : 2.0;
    s->tail.bucket_params = bucket;
    /* fp32 weights are their own master copy: no bf16 copy to gather
     * from or write, Adam keeps m and v only */
    s->element_bytes = (double)element;
    s->optimizer_bytes = element == 4 ? 8.0 : 12.0;
    loom_tail_knobs_set_element(&s->tail, element);
    if (element == 4)
        s->flags |= LOOM_ROOFLINE_FP32;
}

/* create(): reads gemm_efficiency_scale, distributed_optimizer,
 * flash_attention, sequence_parallel, kernel_launch_us, layer_kernels,
 * attention_kernel and the tail's params (defaults in manifest.json). */
static int rf_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    rf_params prm;
    int rc = loom_params_read(host, ctx, "roofline", rf_param_table, &prm, err);
    if (rc == LOOM_OK)
        rc = loom_check_element_bytes(host, "roofline", prm.element_bytes, err);
    if (rc != LOOM_OK)
        return rc;
    double scale = prm.gemm_efficiency_scale, launch_us = prm.kernel_launch_us;
    int dist = prm.distributed_optimizer, flash = prm.flash_attention;
    int seqpar = prm.sequence_parallel;
    if (!(scale > 0.0)) /* an open bound: the table's [0, 2] admits 0 */
        return host->error(err, LOOM_EINVAL,
                           "roofline: param gemm_efficiency_scale: expected "
                           "a number in (0, 2], found %g", scale);
    int eager = strcmp(prm.layer_kernels, "fused") != 0;
    if (eager && flash)
        return host->error(err, LOOM_EINVAL,
                           "roofline: param layer_kernels: %s runs the attention unfused, so "
                           "expected flash_attention false, found true", prm.layer_kernels);
    int flash2 = !strcmp(prm.attention_kernel, "flash2");
    if (flash2 && !flash)
        return host->error(err, LOOM_EINVAL,
                           "roofline: param attention_kernel: flash2 is a fused kernel, so "
                           "expected flash_attention true, found false");
    rf_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "roofline: out of memory");
    s->host = host;
    s->flash2 = flash2;
    s->gemm_scale = scale;
    s->distributed_optimizer = dist != 0;
    s->fsdp = prm.fsdp != 0;
    s->megatron_fsdp = !strcmp(prm.fsdp_implementation, "megatron-fsdp");
    s->flags = (flash ? LOOM_ROOFLINE_FLASH : 0u) |
               (seqpar ? LOOM_ROOFLINE_SEQ_PARALLEL : 0u) |
               (eager ? LOOM_ROOFLINE_EAGER : 0u) |
               (!strcmp(prm.layer_kernels, "hf-gpt2") ? LOOM_ROOFLINE_GELU_TANH : 0u);
    s->launch_ms = launch_us / 1000.0;
    rf_memo_init(&s->memo);
    rf_tail_params(&prm, s);
    *self = s;
    return LOOM_OK;
}

/* destroy(): frees the instance. */
static void rf_destroy(void *self)
{
    rf_self *s = self;
    if (s) {
        rf_memo_free(&s->memo, s->host);
        s->host->free(s);
    }
}

/* 1 when fsdp runs under pipeline parallelism: PyTorch's pipelining
 * stages keep an FSDP module's weights gathered and its gradients
 * unsharded from the first forward to the REDUCE_GRAD after the last
 * backward (stage.py: set_reshard_after_backward(False),
 * set_requires_gradient_sync(False)), and torchtitan does not reshard
 * after forward under PP (apply_fsdp, reshard_after_forward "default"). */
static int rf_fsdp_pipelined(const rf_self *s, const loom_problem *problem)
{
    return s->fsdp && problem && problem->parallel.pp > 1;
}

/* The state sharding loom_roofline_state_bytes takes (a
 * LOOM_ROOFLINE_SHARD_*). */
static int rf_sharding(const rf_self *s, const loom_problem *problem)
{
    if (s->fsdp)
        return rf_fsdp_pipelined(s, problem) ? LOOM_ROOFLINE_SHARD_ALL_WHOLE_GRADS
                                             : LOOM_ROOFLINE_SHARD_ALL;
    return s->distributed_optimizer ? LOOM_ROOFLINE_SHARD_OPTIMIZER : LOOM_ROOFLINE_SHARD_NONE;
}

/* The optimizer bytes a parameter under this instance's sharding over
 * `shards` GPUs: FSDP2 without a pipeline keeps its fp32 weight shard as
 * the optimizer's master copy, so of the 12 bytes of master weight and
 * Adam moments the element-precision shard (param_bytes / shards, which
 * loom_layer_cost_static_bytes counts) is already part; Megatron-FSDP
 * keeps both shards, as the distributed optimizer does. */
static double rf_optimizer_bytes(const rf_self *s, const loom_problem *problem, int32_t shards)
{
    int fp32_shard_only = s->fsdp && !s->megatron_fsdp && !rf_fsdp_pipelined(s, problem) &&
                          shards > 1 && s->element_bytes < 4.0;
    return s->optimizer_bytes - (fp32_shard_only ? s->element_bytes : 0.0);
}

/* Rounds a non-negative byte count up to an integer. */
static int64_t rf_bytes(double x)
{
    if (!(x > 0.0))
        return 0;
    int64_t v = (int64_t)x;
    return ((double)v < x) ? v + 1 : v;
}

/* Under fsdp: a layer's weights sharded over its dp x cp GPUs (`shards`),
 * gathered whole (element bytes a weight) before its forward and again
 * before its backward, its gradients reduce-scattered (the tail's
 * gradient bytes) after the backward. Each collective is prefetched while
 * the neighbouring layer computes, so a pass pays only what its
 * collectives take beyond its own compute (the first gather of a pass is
 * not charged: docs/cost-models.md, "FSDP"). The gathered weights of this
 * layer and of the next, and the unsharded gradient, are transient. */
static void rf_fsdp_layer(const rf_self *s, const loom_problem *problem, const loom_shape *shape,
                          double params, int frozen, loom_layer_cost *out)
{
    int32_t shards = loom_shape_state_shards(shape, problem);
    if (shards <= 1 || !LOOM_LAYER_COST_HAS(out, param_shards))
        return;
    const loom_cluster *c = problem->cluster;
    double t = shape->tp > 1 ? (double)shape->tp : 1.0;
    double frac = (double)(shards - 1) / shards, weights = params / t;
    int same_node = loom_dp_group_same_node(c, shape->tp, shards);
    double grad = frozen ? 0.0 : s->tail.grad_bytes;
    out->param_shards = shards;
    out->transient_bytes += rf_bytes((2.0 * s->element_bytes + grad) * weights);
    if (shape->tokens <= 0)
        return; /* nothing runs, nothing is gathered */
    double gather = loom_ring_ms(c, same_node, shards, frac * s->element_bytes * weights, 1);
    double scatter = loom_ring_ms(c, same_node, shards, frac * grad * weights, 1);
    if (gather > out->forward_ms)
        out->forward_ms = gather;
    double backward = out->input_grad_ms + out->weight_grad_ms + out->recompute_ms;
    if (!(out->input_grad_ms + out->weight_grad_ms > 0) || gather + scatter <= backward)
        return;
    if (out->weight_grad_ms > 0)
        out->weight_grad_ms += gather + scatter - backward;
    else
        out->input_grad_ms += gather + scatter - backward;
}

/* Checks that the problem is a model problem and `module` exists. */
static int rf_check_module(const rf_self *s, const loom_problem *p,
                           int32_t module, loom_error *err)
{
    if (!p || p->kind != LOOM_PROBLEM_MODEL || !p->model || !p->cluster)
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: expected a model problem (model + "
                              "cluster), found %s",
                              !p ? "no problem" : "a stage-times problem");
    if (module < 0 || module >= p->model->n_modules)
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: module index %d out of range "
                              "[0, %d)",
                              (int)module, (int)p->model->n_modules);
    if (s->fsdp && s->megatron_fsdp && p->parallel.pp > 1)
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: param fsdp_implementation: megatron-fsdp is priced "
                              "without pipeline parallelism, found pp %d (fsdp2 prices "
                              "PyTorch's pipelined FSDP2)", (int)p->parallel.pp);
    return LOOM_OK;
}

/* Checks one layer's shape fields. */
static int rf_check_layer(const rf_self *s, const loom_module *m,
                          int32_t index, loom_error *err)
{
    const loom_layer *L = &m->layers[index];
    const char *what = NULL;
    long long found = 0;
    if (L->hidden <= 0)
        what = "hidden > 0", found = (long long)L->hidden;
    else if (L->heads <= 0)
        what = "heads > 0", found = L->heads;
    else if (L->kv_heads <= 0 || L->kv_heads > L->heads)
        what = "kv_heads in [1, heads]", found = L->kv_heads;
    else if (L->ffn_hidden < 0)
        what = "ffn_hidden >= 0", found = (long long)L->ffn_hidden;
    if (!what)
        return LOOM_OK;
    return s->host->error(err, LOOM_EINVAL,
                          "roofline: module \"%s\" layer %d: expected %s, "
                          "found %lld",
                          m->name ? m->name : "?", (int)index, what, found);
}

/* Builds the hardware rates for a TP degree, checking the cluster. */
static int rf_hardware(const rf_self *s, const loom_cluster *c, int32_t tp,
                       loom_roofline_hw *hw, loom_error *err)
{
    const char *name = c->name ? c->name : "?";
    /* is_eff: an efficiency, in (0, 1]; else a rate, > 0 */
    struct { const char *key; double v; int needed, is_eff; } f[] = {
        {"peak_flops", c->peak_flops, 1, 0},
        {"hbm_bytes_per_s", c->hbm_bytes_per_s, 1, 0},
        {"eff_gemm", c->eff_gemm, 1, 1},
        {"eff_attention", c->eff_attention, 1, 1},
        {"eff_memory", c->eff_memory, 1, 1},
        {"eff_collective", c->eff_collective, tp > 1, 1},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        int is_eff = f[i].is_eff;
        if (f[i].needed && !(f[i].v > 0.0 && (!is_eff || f[i].v <= 1.0)))
            return s->host->error(err, LOOM_EINVAL,
                                  "roofline: cluster \"%s\": expected %s %s, "
                                  "found %g",
                                  name, f[i].key,
                                  is_eff ? "in (0, 1]" : "> 0", f[i].v);
    }
    int intra = c->gpus_per_node <= 0 || tp <= c->gpus_per_node;
    hw->peak_flops = rf_peak_flops(s, c);
    if (!(hw->peak_flops > 0.0))
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: cluster \"%s\": matmul_precision %s needs "
                              "peak_flops_%s > 0, found %g (give the GPU's dense %s peak in "
                              "the cluster file)",
                              name, rf_precision_names[s->precision],
                              rf_precision_names[s->precision], hw->peak_flops,
                              rf_precision_names[s->precision]);
    hw->hbm_bytes_per_s = c->hbm_bytes_per_s;
    hw->link_bytes_per_s = intra ? c->nvlink_bytes_per_s : c->net_bytes_per_s;
    if (tp > 1 && !(hw->link_bytes_per_s > 0.0))
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: cluster \"%s\": expected %s > 0 for "
                              "TP %d, found %g",
                              name,
                              intra ? "nvlink_bytes_per_s" : "net_bytes_per_s",
                              (int)tp, hw->link_bytes_per_s);
    hw->eff_gemm = c->eff_gemm * s->gemm_scale;
    if (hw->eff_gemm > 1.0)
        hw->eff_gemm = 1.0;
    /* the runtime's attention kernel: FlashAttention-2 where the cluster
     * gives its factor, else the cluster's fused kernel */
    hw->eff_attention = s->flash2 && c->eff_attention_flash2 > 0 ? c->eff_attention_flash2
                                                                 : c->eff_attention;
    hw->eff_memory = c->eff_memory;
    /* the manifest's kernel_launch_us, when set, overrides the cluster's */
    hw->launch_ms = s->launch_ms > 0 ? s->launch_ms : c->kernel_launch_us / 1000.0;
    hw->attention_backward = c->attention_backward > 0 ? c->attention_backward : 2.0;
    hw->eff_collective = c->eff_collective;
    hw->gemm_half_flops = c->gemm_half_flops > 0 ? c->gemm_half_flops : 0;
    hw->attention_half_flops = c->attention_half_flops > 0 ? c->attention_half_flops : 0;
    hw->tp_overlap_share = s->tp_overlap_share;
    hw->cp = 1;
    hw->cp_link_bytes_per_s = 0;
    hw->p2p_latency_ms = c->p2p_latency_ms;
    /* fp8 converts the Linear layers only (torchao.float8, Transformer
     * Engine's fp8 GEMMs): the attention core and the LM head stay bf16 */
    hw->high_peak_flops = s->precision == RF_PRECISION_FP8 ? c->peak_flops : 0.0;
    hw->fp8_casts = s->precision == RF_PRECISION_FP8;
    return LOOM_OK;
}

/* The layer's costs plus its vocabulary's (embedding on layer 0, LM head
 * and loss on the last layer of a backbone or decoder) for `shape`. */
static void rf_layer_and_vocab(const rf_self *s, const loom_module *m, int32_t layer,
                               const loom_shape *shape, const loom_roofline_hw *hw,
                               int32_t policy, loom_roofline_costs *c)
{
    loom_roofline_layer_costs(&m->layers[layer], shape, hw, policy, s->flags,
                              shape->trainable_upstream != 0, !m->frozen, c);
    int head = loom_module_has_lm_head(m);
    if (m->vocab > 0 && (layer == 0 || (head && layer == m->n_layers - 1)))
        loom_roofline_vocab_costs((double)m->layers[0].hidden, (double)m->vocab, shape, hw,
                                  s->flags, layer == 0, head && layer == m->n_layers - 1,
                                  shape->trainable_upstream != 0, !m->frozen, c);
}

/* Sets hw's context-parallel group: cp and the link its ring attention
 * uses (NVLink when the tp x cp GPUs fit a node, else the network). */
static int rf_context_parallel(const rf_self *s, const loom_cluster *c, const loom_shape *shape,
                               int32_t cp, loom_roofline_hw *hw, loom_error *err)
{
    hw->cp = cp;
    hw->cp_link_bytes_per_s = 0;
    if (cp <= 1)
        return LOOM_OK;
    int64_t group = (int64_t)(shape->tp > 1 ? shape->tp : 1) * cp;
    int intra = c->gpus_per_node <= 0 || group <= c->gpus_per_node;
    hw->cp_link_bytes_per_s = intra ? c->nvlink_bytes_per_s : c->net_bytes_per_s;
    hw->p2p_latency_ms = c->p2p_latency_ms;
    if (!(hw->cp_link_bytes_per_s > 0.0) || !(c->eff_collective > 0.0))
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: cluster \"%s\": expected %s > 0 and eff_collective > 0 "
                              "for CP %d, found %g and %g", c->name ? c->name : "?",
                              intra ? "nvlink_bytes_per_s" : "net_bytes_per_s", (int)cp,
                              hw->cp_link_bytes_per_s, c->eff_collective);
    return LOOM_OK;
}

/* The memo key of one estimate (see rf_memo_key). */
static void rf_key_of(const loom_problem *problem, int32_t module, int32_t layer,
                      const loom_shape *shape, int32_t policy, rf_memo_key *key)
{
    const loom_module *m = &problem->model->modules[module];
    memset(key, 0, sizeof *key);
    key->model = problem->model;
    key->layer = m->layers[layer];
    key->tokens = shape->tokens;
    key->sequences = shape->sequences;
    key->seq_sq_sum = shape->seq_sq_sum;
    key->tp = shape->tp;
    key->cp = LOOM_SHAPE_HAS(shape, cp) && shape->cp > 1 ? shape->cp : 1;
    key->attention_scale = key->cp > 1 && LOOM_SHAPE_HAS(shape, cp_attention_scale) &&
                                   shape->cp_attention_scale > 1.0
                               ? shape->cp_attention_scale
                               : 1.0;
    key->module = module;
    key->kind = m->kind;
    key->frozen = m->frozen;
    key->n_layers = m->n_layers;
    key->vocab = m->vocab;
    key->vocab_hidden = m->layers[0].hidden;
    key->vocab_role = (layer == 0 ? 1 : 0) | (layer == m->n_layers - 1 ? 2 : 0);
    key->policy = policy;
    key->trainable_upstream = shape->trainable_upstream != 0;
}

/* The costs of one layer on one GPU of its TP x CP group under policy
 * on hardware hw (what the memo holds). */
static int rf_compute(const rf_self *s, const loom_module *m, int32_t layer,
                      const loom_shape *shape, const loom_roofline_hw *hw, int32_t policy,
                      loom_roofline_costs *c)
{
    /* the caller's shape may predate the cp members: copy the V1 ones */
    loom_shape whole = LOOM_SHAPE_INIT;
    whole.tokens = shape->tokens;
    whole.seq_sq_sum = shape->seq_sq_sum;
    whole.sequences = shape->sequences;
    whole.tp = shape->tp;
    whole.trainable_upstream = shape->trainable_upstream;
    int32_t cp = hw->cp > 1 ? hw->cp : 1;
    double scale = 1.0;
    if (cp > 1 && LOOM_SHAPE_HAS(shape, cp_attention_scale) && shape->cp_attention_scale > 1.0)
        scale = shape->cp_attention_scale;
    /* one GPU of the CP group: 1/cp of the tokens, the slowest GPU's
     * share of the attention work */
    loom_shape local = whole;
    if (cp > 1) {
        local.tokens = (whole.tokens + cp - 1) / cp;
        local.seq_sq_sum = whole.seq_sq_sum / cp * scale;
    }
    rf_layer_and_vocab(s, m, layer, &local, hw, policy, c);
    if (cp > 1) { /* model FLOPs are the whole microbatch's */
        loom_roofline_costs all;
        rf_layer_and_vocab(s, m, layer, &whole, hw, policy, &all);
        c->flops = all.flops;
        c->recompute_flops = all.recompute_flops;
    }
    return LOOM_OK;
}

/* The hardware an estimate runs on: the cluster's rates at the shape's
 * TP and CP (zeroed first: the memo key holds it bytewise). */
static int rf_hardware_of(const rf_self *s, const loom_problem *problem,
                          const loom_shape *shape, loom_roofline_hw *hw, loom_error *err)
{
    memset(hw, 0, sizeof *hw);
    int rc = rf_hardware(s, problem->cluster, shape->tp, hw, err);
    if (rc != LOOM_OK)
        return rc;
    loom_shape whole = LOOM_SHAPE_INIT;
    whole.tp = shape->tp;
    int32_t cp = LOOM_SHAPE_HAS(shape, cp) && shape->cp > 1 ? shape->cp : 1;
    return rf_context_parallel(s, problem->cluster, &whole, cp, hw, err);
}

/* estimate(): one layer's times and memory under a policy. */
static int rf_estimate(void *self, const loom_problem *problem,
                       int32_t module, int32_t layer, const loom_shape *shape,
                       int32_t policy, loom_layer_cost *out, loom_error *err)
{
    const rf_self *s = self;
    int rc = rf_check_module(s, problem, module, err);
    if (rc != LOOM_OK)
        return rc;
    const loom_module *m = &problem->model->modules[module];
    const char *mname = m->name ? m->name : "?";
    if (layer < 0 || layer >= m->n_layers || !m->layers)
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: module \"%s\": layer %d out of "
                              "range [0, %d)",
                              mname, (int)layer, (int)m->n_layers);
    if (!shape || shape->tokens < 0 || !(shape->seq_sq_sum >= 0.0) ||
        shape->tp < 1)
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: module \"%s\" layer %d: expected a "
                              "shape with tokens >= 0, seq_sq_sum >= 0, "
                              "tp >= 1, found %s",
                              mname, (int)layer,
                              !shape ? "none" : "an invalid shape");
    if (policy < 0 || policy >= LOOM_POLICY_OFFLOAD)
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: expected a memory policy in [0, %d), "
                              "found %d",
                              (int)LOOM_POLICY_OFFLOAD, (int)policy);
    if ((rc = rf_check_layer(s, m, layer, err)) != LOOM_OK)
        return rc;
    const loom_layer *L = &m->layers[layer];
    loom_roofline_costs c;
    rf_memo_key key;
    rf_key_of(problem, module, layer, shape, policy, &key);
    if ((rc = rf_hardware_of(s, problem, shape, &key.hw, err)) != LOOM_OK)
        return rc;
    if (!rf_memo_get(&((rf_self *)self)->memo, &key, &c)) {
        rf_compute(s, m, layer, shape, &key.hw, policy, &c);
        rf_memo_put(&((rf_self *)self)->memo, s->host, &key, &c);
    }
    double params = loom_roofline_layer_params(L);
    loom_layer_cost_clear(out);
    out->forward_ms = c.forward_ms;
    out->input_grad_ms = c.input_grad_ms;
    out->weight_grad_ms = c.weight_grad_ms;
    out->recompute_ms = c.recompute_ms;
    out->activation_bytes = rf_bytes(c.activation_bytes);
    out->transient_bytes = rf_bytes(c.transient_bytes);
    out->param_bytes = rf_bytes(s->element_bytes * params / shape->tp);
    int32_t shards = loom_shape_state_shards(shape, problem);
    out->state_bytes = rf_bytes(loom_roofline_state_bytes(
        params, shape->tp, shards, rf_sharding(s, problem), m->frozen, s->tail.grad_bytes,
        rf_optimizer_bytes(s, problem, shards)));
    out->flops = c.flops;
    if (LOOM_LAYER_COST_HAS(out, recompute_flops))
        out->recompute_flops = c.recompute_flops;
    if (LOOM_LAYER_COST_HAS(out, input_grad_comm_ms)) {
        out->forward_comm_ms = c.forward_comm_ms;
        out->input_grad_comm_ms = c.input_grad_comm_ms;
    }
    if (LOOM_LAYER_COST_HAS(out, element_bytes))
        out->element_bytes = s->element_bytes;
    if (s->fsdp && !rf_fsdp_pipelined(s, problem))
        rf_fsdp_layer(s, problem, shape, params, m->frozen, out);
    return LOOM_OK;
}

/* module_extra(): the embedding (and untied output head of a backbone or
 * decoder) of a module with vocab > 0: vocab * hidden params each. */
static int rf_module_extra(void *self, const loom_problem *problem,
                           int32_t module, int32_t tp, int64_t *param_bytes,
                           int64_t *state_bytes, loom_error *err)
{
    const rf_self *s = self;
    int rc = rf_check_module(s, problem, module, err);
    if (rc != LOOM_OK)
        return rc;
    const loom_module *m = &problem->model->modules[module];
    if (tp < 1)
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: module \"%s\": expected tp >= 1, "
                              "found %d",
                              m->name ? m->name : "?", (int)tp);
    *param_bytes = 0;
    *state_bytes = 0;
    if (m->vocab <= 0)
        return LOOM_OK;
    if (m->n_layers < 1 || !m->layers || m->layers[0].hidden <= 0)
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: module \"%s\": expected a first "
                              "layer with hidden > 0 to size its vocab %lld "
                              "embedding, found none",
                              m->name ? m->name : "?", (long long)m->vocab);
    int tables = (m->kind == LOOM_MODULE_BACKBONE ||
                  m->kind == LOOM_MODULE_DECODER) ? 2 : 1;
    double params = (double)tables * (double)m->vocab *
                    (double)m->layers[0].hidden;
    int32_t shards = problem->parallel.dp * loom_parallel_cp(&problem->parallel);
    *param_bytes = rf_bytes(s->element_bytes * params / tp);
    *state_bytes = rf_bytes(loom_roofline_state_bytes(
        params, tp, shards, rf_sharding(s, problem), m->frozen, s->tail.grad_bytes,
        rf_optimizer_bytes(s, problem, shards)));
    return LOOM_OK;
}

/* p2p_ms(): latency plus bytes over the link's bandwidth (NVLink within a
 * node, the network across nodes) at the collective efficiency: the
 * SDK's loom_p2p_link_ms() on the problem's cluster. */
static int rf_p2p_ms(void *self, const loom_problem *problem,
                     const loom_p2p_link *link, double bytes, double *ms,
                     loom_error *err)
{
    const rf_self *s = self;
    if (!problem || !problem->cluster)
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: a transfer time needs a cluster, found none");
    *ms = loom_p2p_link_ms(problem->cluster, link, bytes);
    return LOOM_OK;
}

/* rank_tail_ms(): the gradient sync, parameter all-gather and Adam step
 * of one rank (loom_rank_tail_compute() under this instance's params),
 * and the Megatron-LM settings and precision they and estimate() assume. */
static int rf_rank_tail_ms(void *self, const loom_problem *problem,
                           const loom_rank_state *state, loom_rank_tail *out,
                           loom_error *err)
{
    const rf_self *s = self;
    if (!problem || !problem->cluster)
        return s->host->error(err, LOOM_EINVAL,
                              "roofline: an iteration tail needs a cluster, found none");
    if (rf_fsdp_pipelined(s, problem)) {
        /* the whole stage's gradients reduce-scattered after its last
         * backward (REDUCE_GRAD), a chunk at a time; the weights gathered
         * layer by layer at the first forward, hidden as without PP */
        loom_tail_knobs k = s->tail;
        k.shard_params = 0;
        k.distributed_optimizer = k.overlap_grad_reduce = 1;
        k.overlap_param_gather = 0;
        k.bucket_params = HUGE_VAL;
        loom_rank_tail_compute(problem->cluster, state, &k, out);
        out->param_gather_ms = 0;
        if (LOOM_STRUCT_HAS(out, loom_rank_tail, assumed))
            out->assumed |= LOOM_ASSUMED_SHARDED_PARAMS;
    } else {
        loom_rank_tail_compute(problem->cluster, state, &s->tail, out);
    }
    if (!LOOM_STRUCT_HAS(out, loom_rank_tail, assumed))
        return LOOM_OK;
    if (s->fsdp && s->megatron_fsdp)
        out->assumed |= LOOM_ASSUMED_MEGATRON_FSDP;
    if (s->flags & LOOM_ROOFLINE_SEQ_PARALLEL)
        out->assumed |= LOOM_ASSUMED_SEQUENCE_PARALLEL;
    if (s->tp_overlap_share > 0.0)
        out->assumed |= LOOM_ASSUMED_TP_COMM_OVERLAP;
    if (!(s->flags & LOOM_ROOFLINE_FLASH))
        out->assumed |= LOOM_ASSUMED_UNFUSED_ATTENTION;
    if (s->flags & LOOM_ROOFLINE_EAGER)
        out->assumed |= LOOM_ASSUMED_EAGER_LAYERS;
    out->assumed |= s->assumed_precision;
    return LOOM_OK;
}

static const loom_cost_model_vtable rf_vtable = {
    {sizeof(loom_cost_model_vtable), LOOM_COST_MODEL_VERSION},
    rf_create,
    rf_destroy,
    rf_estimate,
    rf_module_extra,
    rf_p2p_ms,
    rf_rank_tail_ms,
    /* the memo key holds the layer's members and its vocabulary role,
     * never its index (rf_key_of) */
    LOOM_COST_READS_LAYER_FIELDS,
};

/* The vtable for the cost_model role, NULL for any other. */
static const loom_role_header *rf_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_COST_MODEL) == 0)
        return &rf_vtable.header;
    return NULL;
}

static const loom_plugin_info rf_info = {
    LOOM_PLUGIN_INFO_HEADER, RF_ID, "1.0.0", NULL, NULL, rf_role, rf_param_table
};

LOOM_PLUGIN_DEFINE(roofline, rf_info);
