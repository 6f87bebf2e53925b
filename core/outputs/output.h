/*
 * output.h - the writers of single output files and the helpers they
 * share (not exported, not installed); what tools call is declared in
 * <loom/sys/output.h>.
 */
#ifndef LOOM_OUTPUT_H
#define LOOM_OUTPUT_H

#include <locale.h>
#include <stdio.h>
#include "engine_api.h"
#include <loom/sys/output.h>

/* ---- the writers (one file each) ---------------------------------------- */

/* Checks that every number a writer prints is finite: the metrics
 * (makespan, bubble ratio, MFU, spans, plan time), every stage's start,
 * end and duration, every transfer time, the memory cap and the group
 * priorities. LOOM_EINVAL naming the first value that is not ("the plan's
 * makespan_ms is inf, expected a finite number; refusing to write it").
 * Every writer below calls it before writing anything, and
 * loom_session_plan refuses a plan that fails it. */
int loom_plan_check_finite(const loom_plan *plan, loom_error *err);

/* The path the target was opened with (for messages). */
const char *loom_out_target_path(const loom_out_target *t);

/* loom_write_atomic into entry `name` of folder dirfd, a new file getting
 * permission bits `mode` (a replaced file keeps its own); `shown` names it
 * in messages. */
int loom_write_atomic_at(int dirfd, const char *name, const char *shown, unsigned mode,
                         loom_out_writer write, void *ctx, loom_error *err);

/* plan.json: metrics, partition (null for stage-times problems), every
 * stage, and "rank_actions": per rank the forward_stage / backward_stage /
 * isend / irecv / wait_isend / wait_irecv list a runtime executes. */
int loom_write_plan_json(const loom_plan *plan, FILE *out, loom_error *err);

/* Chrome Trace Event JSON: one process per rank, stages as complete ("X")
 * events, memory (static + activations, bytes) as "C" counter events. */
int loom_write_trace_json(const loom_plan *plan, FILE *out, loom_error *err);

/* PyTorch pipelining schedule CSV: one row per rank, one column per
 * lock-step replay step, cells like 2F0 / 1I3 / 0W3, blank = idle.
 * LOOM_EDEADLOCK when the schedule cannot be replayed; LOOM_EINVAL
 * ("schedule.csv: not written: <reason>"), writing nothing, when the plan
 * cannot obey PyTorch's schedule rules (loom_schedule_csv_check). */
int loom_write_schedule_csv(const loom_plan *plan, FILE *out, loom_error *err);

/* SVG 1.1 timeline: one lane per rank, one rect per stage, time axis in
 * ms, legend. No scripts. */
int loom_write_svg(const loom_plan *plan, FILE *out, loom_error *err);

/* report.html: one self-contained page (inline CSS and script, no
 * network): a summary table (metrics, layout, per-rank peak memory against
 * the cap), the timeline drawn on a canvas from JSON embedded in the page
 * (modules coloured, zoom, pan, hover) and each rank's memory over time.
 * A number that is not finite is LOOM_EINVAL, before anything is written. */
int loom_write_html_report(const loom_plan *plan, FILE *out, loom_error *err);

/* Runtime exports: each is written only when the consumer's own code
 * builds exactly the plan from it; otherwise plan.json's "exports" names
 * the reason and the file is not written. Each writer refuses (LOOM_EINVAL
 * "<file>: not written: <reason>", writing nothing) a plan it cannot
 * express. docs/outputs.md gives the formats and where to paste them. */

/* torchtitan.toml: the [parallelism] and [training] tables of a torchtitan
 * 0.2.2 job config (pipeline degree, schedule, schedule.csv, the split as
 * module_fqns_per_model_part, TP / CP / DP degrees, the microbatch count
 * as local_batch_size over pipeline_parallel_microbatch_size). */
int loom_write_torchtitan_toml(const loom_plan *plan, FILE *out, loom_error *err);

/* megatron.args: Megatron-LM's command-line arguments, one per line
 * (sizes, layout or virtual stages, sequence parallel, micro and global
 * batch, recomputation from the layers' policies, and the optimizer and
 * overlap settings the cost model assumed). */
int loom_write_megatron_args(const loom_plan *plan, FILE *out, loom_error *err);

/* mimo.json: Megatron-Bridge MIMO's per-module parallelism
 * (MegatronMIMOParallelismConfig.module_parallelisms, the language model
 * keyed "language") for plans with per-module layouts. */
int loom_write_mimo_json(const loom_plan *plan, FILE *out, loom_error *err);

/* Writes the output set into dir (created with its parents if missing,
 * mode 0755), each file atomically: plan.json, trace.json, timeline.svg,
 * summary.txt, report.html, and each runtime export (schedule.csv,
 * torchtitan.toml, megatron.args, mimo.json) whose consumer can build the
 * plan; an export that cannot is not written (a previous one in dir is
 * removed) and plan.json's "exports" says why. Stops at the first failure. */
int loom_write_outputs(const loom_plan *plan, const char *dir, loom_error *err);

/* loom_write_outputs into the open folder dirfd (which must exist);
 * `shown` names it in messages. */
int loom_write_outputs_at(const loom_plan *plan, int dirfd, const char *shown,
                          loom_error *err);

/* The staging folder to write the run's files into (its path, for
 * messages; write through loom_out_dir_write, which does not depend on the
 * current directory). */
const char *loom_out_dir_path(const loom_out_dir *d);


/* State of one writer call: the "C" numeric locale it switched to and the
 * locale to restore. */
typedef struct loom_out_frame {
    locale_t c_locale;
    locale_t saved;
} loom_out_frame;

/* Checks the plan has what every writer needs (LOOM_EINVAL naming the
 * missing part, `what` naming the output) and switches the calling thread
 * to the "C" locale until loom_out_end. */
int loom_out_begin(const loom_plan *plan, const char *what,
                   loom_out_frame *frame, loom_error *err);

/* Restores the locale; turns a stream error on `out` into LOOM_EIO when
 * `rc` is LOOM_OK. Returns the final status. */
int loom_out_end(loom_out_frame *frame, FILE *out, const char *what, int rc,
                 loom_error *err);

/* Writes `s` as a JSON string literal (quotes and escapes included). */
void loom_out_json_string(FILE *out, const char *s);

/* Writes a JSON number: the shortest of %.15g / %.17g that reads back
 * exactly; null when not finite. */
void loom_out_json_number(FILE *out, double v);

/* Name of model module `module`, or NULL (stage-times problems, -1). */
const char *loom_out_module_name(const loom_plan *plan, int32_t module);

/* Policy value of a stage whose layer entries use different policies. */
/* Plans of more stages than this write plan.json and trace.json in their
 * compact forms (docs/outputs.md, "Compact form"). */
#define LOOM_OUT_COMPACT_STAGES 65536

#define LOOM_OUT_POLICY_MIXED (-1)

/* "none", "selective", "full" for enum loom_mem_policy, "mixed" for
 * LOOM_OUT_POLICY_MIXED. */
const char *loom_out_policy_name(int policy);

/* 'F', 'B', 'I', 'W' for enum loom_stage_kind ('?' otherwise). */
char loom_out_kind_char(int kind);

/* Memory policy of a stage: the policy every layer entry of its pair
 * uses (enum loom_mem_policy), or LOOM_OUT_POLICY_MIXED. */
int loom_out_stage_policy(const loom_stage_graph *g, int32_t stage);

/* Hosts of stage s when the schedule runs it as a fill (inside the next
 * that many stages of its rank, loom_schedule.fill_hosts), else 0. A
 * fill's time overlaps its hosts': a rank's busy time leaves it out. */
int32_t loom_out_fill_hosts(const loom_schedule *sched, int32_t s);

/* ---- the atomic file writer (atomic_file.c) ------------------------------ */

/* Creates the folders of the first `upto` characters of dir (mode 0777
 * minus loom_out_umask); errors name dir. */
int loom_out_make_dirs_upto(const char *dir, size_t upto, loom_error *err);

/* A number no other call in this process got: temporary names' suffix. */
unsigned loom_out_next_serial(void);

/* ---- PyTorch pipelining stages (out_torch_stages.c) ---------------------- */

/* Longest reason text an export check gives. */
#define LOOM_OUT_REASON_MAX 1024

/* How a plan maps onto PyTorch pipelining's numbering: stage = the global
 * index of a flow position (flow 0's positions first), microbatch = the
 * (microbatch, sub) unit of the stage's flow in order. `ok` is 1 when the
 * plan obeys PyTorch's schedule rules (one chain of stages, each on one
 * rank, every stage running the same units, unit u passed from stage g-1
 * to stage g only); otherwise `reason` says exactly why not. */
typedef struct loom_out_torch {
    int32_t n_stages;      /* PyTorch stages (flow positions) */
    int32_t microbatches;  /* units of stage 0 (every stage's when ok) */
    int32_t *stage_of;     /* per graph stage: its PyTorch stage */
    int32_t *unit_of;      /* per graph stage: its PyTorch microbatch */
    int32_t *stage_rank;   /* per PyTorch stage: its rank */
    int ok;
    char reason[LOOM_OUT_REASON_MAX];
} loom_out_torch;

/* Fills *t (LOOM_EINVAL for stages without flow, position, microbatch or
 * sub; LOOM_ENOMEM). The caller frees it with loom_out_torch_free. */
int loom_out_torch_build(const loom_plan *plan, loom_out_torch *t, loom_error *err);

/* Releases the arrays of *t (safe on a zeroed or partly built one). */
void loom_out_torch_free(loom_out_torch *t);

/* ---- torchtitan placement (out_placement.c) ------------------------------ */

/* The torchtitan placement style a plan's stage-to-rank map fits: "loop"
 * (stage s on rank s mod P) or "v" (two stages per rank, stage s < P on
 * rank s, stage s >= P on rank 2P-1-s), else style NULL and `reason`. */
typedef struct loom_out_placement {
    const char *style;        /* "loop", "v" or NULL */
    const char *schedule;     /* torchtitan pipeline_parallel_schedule */
    int32_t stages_per_rank;  /* 0 when no style fits */
    char reason[LOOM_OUT_REASON_MAX];
} loom_out_placement;

/* 1 when the plan splits backward into I and W stages. */
int loom_out_split_backward(const loom_stage_graph *g);

/* Finds the style of the plan's PyTorch stage map t (built from plan). */
void loom_out_placement_find(const loom_plan *plan, const loom_out_torch *t,
                             loom_out_placement *pl);

/* 1 when one torchtitan mesh runs every module of the plan (no module has
 * a layout of its own); else 0 with `reason` (LOOM_OUT_REASON_MAX). */
int loom_out_one_mesh(const loom_plan *plan, char *reason);

/* The language model's tensor, context and data parallel degrees on
 * torchtitan's one mesh (each at least 1; 1 where a stage-times plan has
 * none). */
void loom_out_mesh_degrees(const loom_plan *plan, int32_t *tp, int32_t *cp, int32_t *dp);

/* ---- Megatron-LM layout (out_megatron.c) ---------------------------------- */

/* Megatron-LM's --pipeline-model-parallel-layout for the plan: stages
 * split by '|', in virtual-stage order (stage i on rank i mod P), "E" the
 * embedding on the first, "t" or "t*N" the decoder layers, "L" the loss
 * on the last. Returns a malloc'd string the caller frees, or NULL with
 * `reason` filled when the plan cannot be written so (*oom set to 1 when
 * allocation failed). */
char *loom_out_megatron_layout(const loom_plan *plan, char reason[LOOM_OUT_REASON_MAX],
                               int *oom);

/* ---- the output set and the runtime exports (out_files.c, out_exports.c;
 * each export's check beside its writer: out_csv.c, out_torchtitan.c,
 * out_megatron_args.c, out_mimo.c) ------------------------------------------ */

/* Whether an export can express the plan: sets *fits to 1, or to 0 with
 * `reason` filled. Returns LOOM_OK, or an error (LOOM_ENOMEM, LOOM_EINVAL
 * for a plan missing what the check reads). */
typedef int (*loom_out_fits_fn)(const loom_plan *plan, int *fits,
                                char reason[LOOM_OUT_REASON_MAX], loom_error *err);

int loom_out_csv_fits(const loom_plan *plan, int *fits, char reason[LOOM_OUT_REASON_MAX],
                      loom_error *err);
int loom_out_torchtitan_fits(const loom_plan *plan, int *fits,
                             char reason[LOOM_OUT_REASON_MAX], loom_error *err);
int loom_out_megatron_args_fits(const loom_plan *plan, int *fits,
                                char reason[LOOM_OUT_REASON_MAX], loom_error *err);
int loom_out_mimo_fits(const loom_plan *plan, int *fits, char reason[LOOM_OUT_REASON_MAX],
                       loom_error *err);

/* Writes an export check's reason (printf-style) and returns 0, so that a
 * check reads `return loom_out_refuse(reason, ...)`. */
int loom_out_refuse(char reason[LOOM_OUT_REASON_MAX], const char *fmt, ...)
    LOOM_PRINTF(2, 3);

/* 1 when the spans of position `pos` (PyTorch or virtual stage `stage`)
 * continue the one-module layer run at *next, advancing *next past them;
 * else 0 with the reason ("... expected layer N: <who> stages hold
 * consecutive layers in order"). */
int loom_out_spans_continue(const loom_plan *plan, const loom_position *pos, int32_t stage,
                            int32_t *next, const char *who, char reason[LOOM_OUT_REASON_MAX]);

/* Layers of position p of the plan's flow 0 (out_policies.c). */
int32_t loom_out_position_layers(const loom_partition *part, int32_t p);

/* Fills first[p] (n_pos entries) with the first stage pair of every
 * position of flow 0; 0 with the reason when a pair's policies do not list
 * one entry per layer of its position, or two pairs of one position run
 * different policies (runtime `who` recomputes the same layers for every
 * microbatch). */
int loom_out_position_pairs(const loom_plan *plan, int32_t *first, const char *who,
                            char reason[LOOM_OUT_REASON_MAX]);

/* *tokens: the text tokens of the plan's longest microbatch (of the
 * first module), 0 when the plan has no samples (out_sequence.c);
 * LOOM_ENOMEM. */
int loom_out_longest_microbatch_tokens(const loom_plan *plan, int64_t *tokens,
                                       loom_error *err);

/* The precision a plan was priced in: element_bytes 2 (16-bit weights and
 * activations over fp32 masters) or 4 (fp32), matmul "bf16", "fp16",
 * "tf32", "fp32" or "fp8" (a static string). */
typedef struct loom_out_prec {
    int element_bytes;
    const char *matmul;
} loom_out_prec;

/* Fills *prec from the stage graph's LOOM_ASSUMED_* precision bits and
 * returns 1; 0 when the cost model did not say (out_precision.c). */
int loom_out_precision(const loom_plan *plan, loom_out_prec *prec);

/* One output format, one row of the output set: the file's name; its
 * writer (the public loom_write_* function); for a runtime export its key
 * in plan.json's "exports" and the check of whether its consumer can build
 * the plan (both NULL for the files every plan gets); and the option of
 * `loom plan` that writes it. Each row exists once, in one of the two
 * tables below; the set is the two in a row (loom_out_set_format). */
typedef struct loom_out_format {
    const char *name;
    int (*write)(const loom_plan *plan, FILE *out, loom_error *err);
    const char *key;
    loom_out_fits_fn fits;
    const char *option;
} loom_out_format;

/* The files every plan gets, plan.json first (out_files.c). */
extern const loom_out_format loom_out_plain_files[];
extern const size_t loom_out_n_plain_files;

/* The runtime exports, in plan.json's "exports" order (out_exports.c).
 * A table of its own, which the plan.json and summary writers read: they
 * are rows of the set, so a single table would make them depend on
 * themselves. */
extern const loom_out_format loom_out_runtime_exports[];
extern const size_t loom_out_n_runtime_exports;

/* The output set in writing order: the plain files, then the runtime
 * exports; format i < loom_out_set_size() (out_files.c). */
size_t loom_out_set_size(void);
const loom_out_format *loom_out_set_format(size_t i);

/* "exports" of plan.json: for each runtime export {"file": name} or
 * {"reason": why not}. */
int loom_out_json_runtime_exports(const loom_plan *plan, FILE *out, loom_error *err);

/* ---- sample assignment and edge tensors (out_data.c) ---------------------- */

/* Which samples every (flow, microbatch, sub) unit of a model plan runs.
 * Units are numbered flow by flow, then microbatch, then sub. */
typedef struct loom_out_data {
    int32_t n_samples, n_flows, n_mb, n_units;
    int32_t *unit_off;  /* [flow * n_mb + mb]: its sub 0's unit (n_flows*n_mb+1) */
    int32_t *unit_mb;   /* per unit: microbatch */
    int32_t *unit_sub;  /* per unit: sub */
    int32_t *unit_flow; /* per unit: flow */
    int32_t *list_off;  /* per unit: first entry in list (n_units + 1) */
    int32_t *list;      /* sample indices, ascending within a unit */
    int32_t *unit_of;   /* [flow * n_samples + i]: unit of sample i, or -1 */
} loom_out_data;

/* Builds the assignment of a model plan (a zeroed *d for stage-times
 * plans): a flow's samples of a microbatch are those its module sees
 * there (partition sample_mb); they go to the sub with the fewest tokens
 * so far, largest sample first (ties: lower sample index, lower sub). */
int loom_out_data_build(const loom_plan *plan, loom_out_data *d, loom_error *err);

/* Releases the arrays of *d. */
void loom_out_data_free(loom_out_data *d);

/* The tensor crossing dependency edge `edge` (into stage `consumer`), as
 * one TP rank of the producing position holds it: rows = ceil(tokens /
 * tp), cols = hidden, bf16. tokens: the forward producer's output tokens
 * of the samples both ends' units hold. 0 when the plan has no model. */
int loom_out_edge_tensor(const loom_plan *plan, const loom_out_data *d, int32_t edge,
                         int32_t consumer, int64_t *rows, int64_t *cols);

/* ---- plan.json format-2 sections (out_plan_exports.c) --------------------- */

/* "iteration": the samples of a model plan's iteration; null otherwise. */
void loom_out_json_iteration(const loom_plan *plan, FILE *out);

/* "data": one entry per unit of d ([] for stage-times plans). */
void loom_out_json_data(const loom_out_data *d, FILE *out);

/* "schedule_csv", "placement" and "megatron". */
int loom_out_json_exports(const loom_plan *plan, FILE *out, loom_error *err);

/* What summary.txt and report.html say about the exports: whether
 * schedule.csv is written, its microbatch count, the torchtitan placement
 * and the Megatron layout (malloc'd, NULL when none). */
typedef struct loom_out_exports {
    int csv_ok;
    int32_t microbatches;
    loom_out_placement placement;
    char *megatron;
} loom_out_exports;

/* Fills *x (LOOM_ENOMEM, or LOOM_EINVAL for a graph without flow
 * numbering, with `what` in front of the message). */
int loom_out_exports_find(const loom_plan *plan, const char *what, loom_out_exports *x,
                          loom_error *err);

/* Releases x->megatron. */
void loom_out_exports_free(loom_out_exports *x);

/* Module m's layout in the plan: the chosen partition's when its
 * partitioner chose layouts, else the problem's; NULL for a single-layout
 * plan (or m out of range). */
const loom_module_layout *loom_out_layout(const loom_plan *plan, int32_t m);

/* Writes plan.json's "layouts" member (with its trailing comma and
 * newline): per module its tp, cp, pp, dp, placement, colocated_with, its
 * GPU set (first_gpu, gpus) and the pipeline ranks running it. Nothing for
 * a single-layout plan. */
void loom_out_json_layouts(const loom_plan *plan, FILE *out);

/* One "layout" line per module for the summary; nothing for a
 * single-layout plan. */
void loom_out_summary_layouts(const loom_plan *plan, FILE *out);

/* "vit tp 1 cp 1 pp 2 dp 2 disjoint, ..." for the modules rank `rank`
 * runs (truncated to size); "" for a single-layout plan. */
void loom_out_rank_layouts(const loom_plan *plan, int32_t rank, char *buf, size_t size);

#endif
