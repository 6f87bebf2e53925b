/*
 * loom/graph.h - the flat data of planning: partition (layout + data
 * assignment), stage graph, schedule and simulated metrics.
 *
 * Ownership: all of these are host-owned. The host allocates every array
 * with the capacities recorded in the struct; a plugin writes counts and
 * elements within those capacities and never reallocates or frees them.
 * Units: *_ms milliseconds, *_bytes bytes.
 */
#ifndef LOOM_GRAPH_H
#define LOOM_GRAPH_H

#include <loom/common.h>
#include <loom/problem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* Partition: how layers become chunks on ranks and samples become        */
/* microbatches. The core's graph builder turns it into a stage graph.    */
/* ---------------------------------------------------------------------- */

/* A contiguous run of one module's layers. */
typedef struct loom_span {
    int32_t module;
    int32_t first_layer;
    int32_t n_layers;
    int32_t tp;        /* TP degree of this span; 0 = the partition's tp */
} loom_span;

/* One pipeline position (a chunk): the spans it runs, on which rank. */
typedef struct loom_position {
    int32_t rank;
    int32_t span_off;  /* first span in loom_partition.spans */
    int32_t n_spans;
    int32_t reserved;
} loom_position;

#define LOOM_MAX_FLOW_INPUTS 8

/* A flow: the chain of positions one (sub-)microbatch traverses forward
 * (and in reverse backward). Megatron uses one mixed flow; PipeWeaver one
 * flow per module. A flow consumes the forward outputs of its inputs. */
typedef struct loom_flow {
    int32_t pos_off;   /* first position in loom_partition.positions */
    int32_t n_pos;
    int32_t module;    /* the module of every span, or -1 when mixed */
    int32_t segments;  /* K: positions / P, informational */
    int32_t n_inputs;
    int32_t inputs[LOOM_MAX_FLOW_INPUTS]; /* indices of upstream flows */
} loom_flow;

typedef struct loom_partition {
    uint32_t struct_size;
    int32_t n_ranks;               /* pipeline ranks the layout uses */

    int32_t n_flows, cap_flows;
    loom_flow *flows;
    int32_t n_positions, cap_positions;
    loom_position *positions;
    int32_t n_spans, cap_spans;
    loom_span *spans;

    /* Data level. sample_mb[module * n_samples + s] is the microbatch of
     * sample s for that module, or -1 when the module does not see it.
     * Different modules may group samples differently (Entrain). */
    int32_t n_microbatches, cap_microbatches;
    int32_t n_samples;
    int32_t n_modules;
    int32_t *sample_mb;            /* n_modules * n_samples */
    /* subs[flow * cap_microbatches + mb]: sub-microbatches that microbatch
     * mb is split into on that flow (>= 1), or 0 when the flow does not run
     * mb (one of several replica pipelines of a module, each running its
     * own microbatches; every layer still runs once per microbatch). */
    int32_t *subs;

    int32_t split_backward;        /* 1: backward as I + W stages */
    int32_t tp;                    /* TP degree of every stage */
    char label[64];                /* candidate description, for reports */
    /* Appended in Loom 0.4: per microbatch (cap_microbatches entries, the
     * host sets 1.0), the slowest context-parallel GPU's attention work
     * over the mean when the problem has cp > 1 (a CP balancer writes it;
     * 1.0: balanced). */
    double *cp_attention_scale;
    /* Appended in Loom 0.4: per-module layouts the partitioner chose.
     * The host allocates cap_layouts (the model's module count) zeroed
     * entries and sets n_layouts 0: none, the problem's layouts (if any)
     * apply. A partitioner choosing layouts fills every module's entry
     * (struct_size = sizeof(loom_module_layout), listed 1 for a module
     * with its own layout) and sets n_layouts = cap_layouts; the graph
     * builder then uses them instead of the problem's. */
    int32_t n_layouts, cap_layouts;
    loom_module_layout *layouts;
} loom_partition;

/* ---------------------------------------------------------------------- */
/* Stage graph                                                             */
/* ---------------------------------------------------------------------- */

enum loom_stage_kind {
    LOOM_STAGE_F = 0, /* forward */
    LOOM_STAGE_B = 1, /* full backward */
    LOOM_STAGE_I = 2, /* input-gradient half of backward */
    LOOM_STAGE_W = 3  /* weight-gradient half of backward */
};

/* Memory policies a stage pair can use (memory tuner choices). The first
 * three are what a cost model prices (estimate() is asked for policies
 * below LOOM_POLICY_OFFLOAD only); the host derives the offload option
 * from the `none` and `full` ones with loom_offload_option()
 * (<loom/cost_model.h>). Loom 0.4 added OFFLOAD: the stride of every
 * per-policy array (layer_options, layer_recompute_flops,
 * layer_weight_held_bytes) grew from 3 to 4, and LOOM_MEMORY_TUNER_VERSION
 * became 2. */
enum loom_mem_policy {
    LOOM_POLICY_NONE = 0,      /* store every activation */
    LOOM_POLICY_SELECTIVE = 1, /* recompute attention internals */
    LOOM_POLICY_FULL = 2,      /* store layer inputs only, recompute all */
    LOOM_POLICY_OFFLOAD = 3,   /* keep layer inputs, the rest to host memory */
    LOOM_POLICY_COUNT = 4
};

/* Cost of one layer entry (or a whole stage pair) under one policy. */
typedef struct loom_policy_option {
    double forward_ms;
    double backward_ms;        /* B, or I + W when split (W part below) */
    double weight_grad_ms;     /* part of backward_ms that is W */
    int64_t activation_bytes;  /* held from F start until B/W end */
} loom_policy_option;

/* The stage graph of one iteration: stages as parallel arrays indexed by
 * stage id, predecessors in compressed rows. */
typedef struct loom_stage_graph {
    uint32_t struct_size;
    int32_t n_stages, n_ranks, n_groups, n_microbatches, n_edges, n_pairs;

    int32_t *rank;          /* per stage */
    uint8_t *kind;          /* enum loom_stage_kind */
    int32_t *module;        /* module index, or -1 (mixed / stage-times) */
    int32_t *flow;          /* flow index */
    int32_t *position;      /* position within the flow (0 = first) */
    int32_t *chunk;         /* virtual stage index on its rank */
    int32_t *microbatch;
    int32_t *sub;           /* sub-microbatch within the microbatch */
    int32_t *group;         /* segment group (flow, microbatch) */
    int32_t *pair;          /* stage pair id (F with its B or I+W) */
    double *duration_ms;
    int64_t *mem_delta_bytes; /* + allocated at start, - freed at end */
    double *flops;          /* model FLOPs of the stage (0 unknown) */

    int32_t *pred_off;      /* n_stages + 1 */
    int32_t *pred;          /* n_edges predecessor stage ids */
    double *pred_p2p_ms;    /* transfer time on each edge */

    int32_t *group_flow;    /* per group */
    int32_t *group_microbatch;
    int32_t *group_pred_off; /* group precedence (n_groups + 1): a group's */
    int32_t *group_pred;     /* forward cannot start before these groups'  */

    /* Per stage pair: the F stage, the B (or I) stage, the W stage or -1. */
    int32_t *pair_forward, *pair_backward, *pair_weight;
    /* Memory policies are chosen per layer entry: a pair's layers are the
     * entries pair_layer_off[p] .. pair_layer_off[p+1]-1 (one entry per
     * layer of the chunk; one per pair for stage-times problems). Each
     * entry has LOOM_POLICY_COUNT options and its chosen policy. A pair's
     * costs are the sums over its entries. */
    int32_t n_layer_entries;
    int32_t *pair_layer_off;           /* n_pairs + 1 */
    loom_policy_option *layer_options; /* n_layer_entries * LOOM_POLICY_COUNT */
    uint8_t *layer_policy;             /* n_layer_entries */

    int64_t *static_bytes;  /* per rank: params, grads, optimizer state */
    double memory_cap_bytes; /* per rank total cap; 0 = none */
    double total_flops;     /* model FLOPs of the iteration (0 unknown) */
    double peak_flops_per_rank; /* FLOP/s behind one rank (its TP group), mean over ranks */
    /* Appended in Loom 0.4: the iteration's tail per rank, NULL when the
     * graph has none (stage-times problems): the data-parallel gradient
     * sync, the share of it one bucket takes (what overlapping with the
     * backward cannot hide), whether it overlaps, the exposed parameter
     * all-gather and the optimizer step. The simulator adds them after
     * each rank's last stage (docs/cost-models.md, "Iteration tail"). */
    double *tail_grad_sync_ms;     /* n_ranks */
    double *tail_grad_bucket_ms;   /* n_ranks */
    uint8_t *tail_overlap;         /* n_ranks: 1 overlap the grad sync */
    double *tail_param_gather_ms;  /* n_ranks */
    double *tail_optimizer_ms;     /* n_ranks */
    /* FLOPs recomputation adds per layer entry and policy
     * (n_layer_entries * LOOM_POLICY_COUNT), NULL when unknown, and their
     * sum under the chosen policies (loom_graph_apply_policies). */
    double *layer_recompute_flops;
    double recompute_flops;
    /* Appended (read it when LOOM_STRUCT_HAS(g, loom_stage_graph,
     * layer_weight_held_bytes)). Memory per phase of a split backward:
     * per layer entry and policy, like layer_options, the part of that
     * option's activation_bytes still held after the entry's I stage
     * until its W stage ends; the rest is freed when I ends. So F adds
     * activation_bytes, I frees activation_bytes - held, W frees held.
     * NULL: everything is held until W. Unused without W stages. */
    int64_t *layer_weight_held_bytes;
    /* Appended (read it when LOOM_STRUCT_HAS(g, loom_stage_graph,
     * tail_chunk_share)). How a rank's overlapped gradient sync divides
     * among its virtual stages: tail_chunk_share[r * tail_chunks + c] is
     * the fraction of rank r's trainable parameters that chunk c (the
     * stages' `chunk`) holds; a rank's row sums to 1 when it holds any.
     * NULL: an equal share for every chunk with a backward. */
    int32_t tail_chunks;
    double *tail_chunk_share;
    /* Appended (read it when LOOM_STRUCT_HAS(g, loom_stage_graph,
     * comm_ms)). Per stage, the part of duration_ms that is exposed
     * tensor-parallel communication: the collectives during which the
     * GPU's compute stream idles (Optimus §2.2's TP bubbles). Another
     * stage's compute can fill that time (loom_schedule.fill_hosts).
     * NULL: unknown, no stage has any. */
    double *comm_ms;
    /* Appended (read it when LOOM_STRUCT_HAS(g, loom_stage_graph,
     * assumed)). The Megatron-LM settings the cost model's times assume,
     * LOOM_ASSUMED_* bits, the same for every rank (from its rank_tail,
     * loom_rank_tail.assumed); 0: unknown (no cost model said, or its ranks
     * disagreed). megatron.args writes them as flags; megatron.args and
     * torchtitan.toml refuse a plan whose precision their runtime would
     * not run. */
    uint32_t assumed;
    uint32_t reserved_assumed;
    /* Appended (read it when LOOM_STRUCT_HAS(g, loom_stage_graph,
     * revision)). A stamp of everything in the graph but layer_policy and
     * what a policy choice derives (duration_ms, mem_delta_bytes,
     * recompute_flops): the host gives each graph it builds for planning a
     * nonzero revision no other graph of the process has had, and changes
     * nothing else in it while it lives. A plugin that meets a nonzero
     * revision it has seen may reuse what it derived from that content
     * without comparing it. 0: no stamp (graphs that plugins or kits
     * build, and copies); compare the content. Plugins never write it. */
    uint64_t revision;
    /* Appended (read it when LOOM_STRUCT_HAS(g, loom_stage_graph,
     * tail_param_prefetch_ms)). Per rank, with the other tail arrays
     * (NULL when the graph has no tail): the distributed optimizer's
     * parameter all-gather when it overlaps the next step's forward
     * (Megatron-LM's --overlap-param-gather; tail_param_gather_ms is then
     * 0). It runs from the step's start a model chunk at a time, in the
     * order of the chunks' first forwards on the rank, each chunk's part
     * in proportion to its trainable parameters (tail_chunk_share, else
     * equal); a chunk's first forward waits until its part has arrived,
     * and the wait is exposed DP sync (docs/cost-models.md, "Iteration
     * tail"). */
    double *tail_param_prefetch_ms;
} loom_stage_graph;

/* Bits of loom_stage_graph.assumed and loom_rank_tail.assumed. */
#define LOOM_ASSUMED_KNOWN 1u                  /* the tail bits below are set */
#define LOOM_ASSUMED_DISTRIBUTED_OPTIMIZER 2u  /* --use-distributed-optimizer */
#define LOOM_ASSUMED_OVERLAP_GRAD_REDUCE 4u    /* --overlap-grad-reduce */
#define LOOM_ASSUMED_OVERLAP_PARAM_GATHER 8u   /* --overlap-param-gather */
#define LOOM_ASSUMED_SEQUENCE_PARALLEL 16u     /* --sequence-parallel (tp > 1) */
#define LOOM_ASSUMED_TP_COMM_OVERLAP 2048u     /* --tp-comm-overlap (tp > 1) */
#define LOOM_ASSUMED_GRAD_REDUCE_BF16 4096u    /* --grad-reduce-in-bf16 (16-bit weights) */
#define LOOM_ASSUMED_UNFUSED_ATTENTION 8192u   /* --attention-backend unfused */
#define LOOM_ASSUMED_EAGER_LAYERS 16384u       /* Hugging Face transformers' eager layers */
#define LOOM_ASSUMED_SHARDED_PARAMS 32768u     /* FSDP2 / ZeRO-3: weights sharded over dp x cp */
#define LOOM_ASSUMED_MEGATRON_FSDP 65536u      /* sharded as Megatron-FSDP keeps memory */
/* The precision the times and bytes assume; LOOM_ASSUMED_PRECISION says
 * the bits after it are set. Elements (weights, activations) are 2-byte
 * over fp32 master weights unless LOOM_ASSUMED_ELEMENTS_FP32; matmuls run
 * in bf16 unless one LOOM_ASSUMED_MATMUL_* bit says otherwise. */
#define LOOM_ASSUMED_PRECISION 32u             /* the precision bits are set */
#define LOOM_ASSUMED_ELEMENTS_FP32 64u         /* 4-byte weights and activations */
#define LOOM_ASSUMED_MATMUL_FP16 128u          /* matmuls in fp16 (2-byte fp16 elements) */
#define LOOM_ASSUMED_MATMUL_TF32 256u          /* fp32 matmuls run as TF32 */
#define LOOM_ASSUMED_MATMUL_FP32 512u          /* matmuls in fp32 */
#define LOOM_ASSUMED_MATMUL_FP8 1024u          /* Linear GEMMs in fp8, tensorwise scaling */

/* A schedule: the order of stage ids on every rank. Size-prefixed: the
 * host allocates every schedule it hands out (struct_size set); a plugin
 * passing one to the simulator passes one of those, or a copy of one with
 * struct_size set to the copy's own sizeof (the host's may be larger). */
typedef struct loom_schedule {
    uint32_t struct_size;  /* sizeof(loom_schedule) of its allocator */
    int32_t n_ranks;
    int32_t n_stages;      /* total entries in order */
    int32_t *rank_off;     /* n_ranks + 1 offsets into order */
    int32_t *order;        /* stage ids, rank by rank */
    /* Appended: a lower bound on the makespan of every order of the graph
     * that the interleaver proved (equal to its order's makespan when it
     * proved that order optimal), in ms; 0 when it claims none. The host
     * clears it before each interleave() and reports it in plan.json; an
     * interleaver writes it only when struct_size covers it. */
    double lower_bound_ms;
    /* Appended: fills, indexed by stage id (n_stages entries; NULL: none).
     * fill_hosts[v] = k > 0 makes stage v run inside the next k stages of
     * its rank's order (its hosts, none of them a fill): v's compute runs
     * in the hosts' exposed TP communication (loom_stage_graph.comm_ms)
     * and its own communication under the hosts' compute, kernel by
     * kernel, as Optimus §4.2-4.3 schedules encoder kernels into the
     * backbone's TP bubbles. The first host starts once v's inputs are
     * ready; v ends with the last host, which runs longer by whatever of v
     * did not fit (docs/cost-models.md, "Filled stages"). 0: an ordinary
     * stage. The host allocates it and clears it before each
     * interleave(); an interleaver writes it only when struct_size covers
     * it. */
    int32_t *fill_hosts;
} loom_schedule;

/* fill_hosts[v] of an I stage whose W is the next stage of its rank: the
 * two are one full backward action (PyTorch's B), run back to back and
 * priced as I then W; the schedule.csv writer writes them as one B. An
 * interleaver whose order mixes full and split backwards (DualPipeV)
 * marks the full ones so. Appended: a host that predates it rejects a
 * negative fill_hosts. */
#define LOOM_FILL_FULL_BACKWARD (-1)

/* The schedule's fills (fill_hosts by stage id), or NULL when it has
 * none or predates them. */
static inline const int32_t *loom_schedule_fills(const loom_schedule *s)
{
    return s && LOOM_STRUCT_HAS(s, loom_schedule, fill_hosts) ? s->fill_hosts : NULL;
}

/* Stage v's exposed TP communication (comm_ms) in 0..its duration; 0 when
 * the graph has none. */
static inline double loom_stage_comm_ms(const loom_stage_graph *g, int32_t v)
{
    double d = g->duration_ms[v];
    double c = LOOM_STRUCT_HAS(g, loom_stage_graph, comm_ms) && g->comm_ms ? g->comm_ms[v] : 0;
    return c > 0 ? (c < d ? c : d) : 0;
}

/* What of a fill of fill_ms (comm_ms of it exposed communication) its
 * hosts do not hold: its compute beyond their exposed communication plus
 * its communication beyond their compute (docs/cost-models.md, "Filled
 * stages"; the rank's idle time takes the rest). */
static inline double loom_fill_left_ms(double fill_ms, double comm_ms, double host_comm_ms,
                                       double host_compute_ms)
{
    double compute = fill_ms - comm_ms - host_comm_ms, link = comm_ms - host_compute_ms;
    return (compute > 0 ? compute : 0) + (link > 0 ? link : 0);
}

/* Smallest loom_schedule the host reads (every member above). */
#define LOOM_SCHEDULE_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_schedule, order))
#define LOOM_SCHEDULE_INIT { .struct_size = (uint32_t)sizeof(loom_schedule) }

/* What the simulator reports about one schedule. Size-prefixed: the caller
 * allocates it and sets struct_size (LOOM_METRICS_INIT or
 * loom_metrics_init()); the host fills it. The simulator and the evaluator
 * reject a struct_size below LOOM_METRICS_SIZE_V1 with LOOM_EABI, and
 * write only the members struct_size covers (a member appended later is
 * left as the caller initialised it by a host that predates it). */
typedef struct loom_metrics {
    uint32_t struct_size;   /* sizeof(loom_metrics) of the caller */
    double makespan_ms;     /* from t = 0 to the last stage end */
    double bubble_ratio;    /* 1 - busy / (ranks * makespan) */
    double mfu;             /* model FLOPs utilisation, < 0 when unknown */
    double max_span_ms;     /* max over ranks of (last end - first start) */
    int64_t max_peak_bytes; /* max over ranks of peak memory */
    int32_t cap_violations; /* ranks whose peak exceeds the cap */
    int32_t reserved;
    /* Optional per-rank / per-stage outputs; NULL when not requested. */
    double *span_ms;        /* n_ranks */
    int64_t *peak_bytes;    /* n_ranks */
    double *start_ms;       /* n_stages */
    double *end_ms;         /* n_stages */
    /* Appended in Loom 0.4. Hardware FLOPs utilisation: model FLOPs plus
     * the recomputation's, < 0 when unknown (mfu never counts those). */
    double hfu;
    /* Optional per-rank breakdown of the makespan, NULL when not
     * requested; per rank the five add up to makespan_ms: stage time,
     * idle time waiting on P2P transfers, exposed data-parallel sync
     * (gradients and parameter all-gather), the optimizer step, and the
     * rest of the idle time (pipeline bubble, waiting for other ranks). */
    double *compute_ms;     /* n_ranks */
    double *p2p_wait_ms;    /* n_ranks */
    double *dp_sync_ms;     /* n_ranks */
    double *optimizer_ms;   /* n_ranks */
    double *bubble_ms;      /* n_ranks */
} loom_metrics;

/* Smallest loom_metrics the host accepts (every member above). */
#define LOOM_METRICS_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_metrics, end_ms))
/* `loom_metrics m = LOOM_METRICS_INIT;`: zeroed, struct_size set. */
#define LOOM_METRICS_INIT { .struct_size = (uint32_t)sizeof(loom_metrics) }
/* 1 when *m is large enough to hold `member`. */
#define LOOM_METRICS_HAS(m, member) LOOM_STRUCT_HAS(m, loom_metrics, member)

/* Zeroes *m and sets its struct_size (what LOOM_METRICS_INIT does). */
static inline void loom_metrics_init(loom_metrics *m)
{
    *m = (loom_metrics)LOOM_METRICS_INIT;
}

#ifdef __cplusplus
}
#endif
#endif
