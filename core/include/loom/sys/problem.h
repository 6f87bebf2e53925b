/*
 * loom/sys/problem.h - loading the planning problem's inputs that tools
 * read on their own: model.json (or a model preset), cluster.json (or a
 * cluster preset), workloads as JSON Lines and the seeded workload
 * generator. Formats: docs/formats.md. (Parallel configs and stage-times
 * problems are read by the session, loom/sys/session.h.)
 *
 * Ownership: every loader returns an object the caller frees with the
 * matching *_free (NULL is accepted). Pointers returned by accessors stay
 * valid until that object is freed. Name lists are static.
 * Errors: every message names the file, the JSON path or line, what was
 * expected and what was found.
 * Units: milliseconds, bytes, bytes per second, FLOP/s.
 *
 * Layer: problem (core/problem).
 */
#ifndef LOOM_SYS_PROBLEM_H
#define LOOM_SYS_PROBLEM_H

#include <stdio.h>
#include <loom/problem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- bounds ------------------------------------------------------------ */

#define LOOM_MAX_MODULES 64
#define LOOM_MAX_LAYERS_PER_MODULE 100000
#define LOOM_MAX_LAYERS_TOTAL 100000 /* summed over a model's modules */
#define LOOM_MAX_PARALLEL_DEGREE 65536     /* tp, pp, dp, vpp, microbatches */
#define LOOM_MAX_GPUS (1 << 20)            /* tp*pp*dp */
#define LOOM_MAX_ITERATIONS 100000
#define LOOM_MAX_SAMPLES_PER_ITERATION 1000000
#define LOOM_MAX_SAMPLES_TOTAL (1 << 24)   /* whole workload */
#define LOOM_MAX_STAGE_POSITIONS 4096      /* ranks*virtual_stages */
/* Work of one iteration, bounded before planning: forward stages of the
 * stage graph (pipeline positions * microbatches: pp*vpp*microbatches, or
 * ranks*virtual_stages*microbatches of a stage-times problem), and layer
 * costs the cost model prices (layers of the model * microbatches). */
#define LOOM_MAX_FORWARD_STAGES (1 << 20)
#define LOOM_MAX_LAYER_MICROBATCHES (1 << 23)
#define LOOM_MIN_EFFICIENCY 1e-3          /* cluster efficiency factors: [1e-3, 1] */
#define LOOM_MAX_SAMPLE_TEXT_TOKENS ((int64_t)1 << 32) /* per sample */
#define LOOM_MAX_SAMPLE_IMAGES (1 << 20)   /* per sample */
#define LOOM_MAX_SAMPLE_SECONDS 1e6        /* video or audio seconds per sample */

/* ---- model ------------------------------------------------------------- */

typedef struct loom_model_data loom_model_data; /* owns everything loom_model points to */

/* What a loaded model holds, borrowed from it (valid until it is freed). */
typedef struct loom_model_info {
    const loom_model *model;       /* the modules and their layers */
    const loom_parallel *parallel; /* the file's or preset's parallel config;
                                    * NULL when it names none */
    int32_t has_module_layouts;    /* 1 when the file's "parallel" object
                                    * gives per-module layouts ("modules"
                                    * or "gpus"), else 0 */
} loom_model_info;

/* Fills *out from m (every member NULL or 0 for a NULL m). */
LOOM_EXPORT void loom_model_data_info(const loom_model_data *m, loom_model_info *out);


/* `spec` is a preset name (case-insensitive, e.g. "vlm-s") or a path to a
 * model.json. Unknown preset / missing file: LOOM_ENOTFOUND / LOOM_EIO with
 * a message listing the presets. Bad content: LOOM_EINVAL. *out is owned
 * by the caller (loom_model_data_free). */
LOOM_EXPORT int loom_model_load(const char *spec, loom_model_data **out, loom_error *err);
LOOM_EXPORT void loom_model_data_free(loom_model_data *m);
LOOM_EXPORT const char *const *loom_model_preset_names(void); /* NULL-terminated */

/* ---- cluster ----------------------------------------------------------- */

typedef struct loom_cluster_data loom_cluster_data;

LOOM_EXPORT const loom_cluster *loom_cluster_data_cluster(const loom_cluster_data *c);
/* Preset "h800", "h100", "a100", "a40" (case-insensitive) or a path to a
 * cluster.json. Errors as loom_model_load. */
LOOM_EXPORT int loom_cluster_load(const char *spec, loom_cluster_data **out, loom_error *err);
LOOM_EXPORT void loom_cluster_data_free(loom_cluster_data *c);
LOOM_EXPORT const char *const *loom_cluster_preset_names(void); /* NULL-terminated */

/* ---- parallel config ----------------------------------------------------- */



/* ---- workloads ----------------------------------------------------------- */

/* A workload: per-iteration sample metadata. `iterations[i].samples` point
 * into `samples` (all samples, iteration after iteration). */
typedef struct loom_workload {
    int32_t n_iterations;
    loom_iteration *iterations; /* n_iterations entries */
    int64_t n_samples;          /* total over all iterations */
    loom_sample *samples;       /* n_samples entries, owned */
} loom_workload;

/* Reads JSON Lines: one iteration per line, blank lines skipped. Errors
 * read "file:LINE: samples[3].images: expected ..., found ...". */
LOOM_EXPORT int loom_workload_load(const char *path, loom_workload **out, loom_error *err);
/* How generated microbatches are packed: one sequence of sequence_tokens
 * tokens (2048 to 2^20; default 8192), every image taking
 * tokens_per_image of them (1 to sequence_tokens / 4; default 169, a
 * 768 px image after PipeWeaver's ViT), so at most
 * (sequence_tokens - 1) / tokens_per_image images (48 by default).
 * Size-prefixed: fields past struct_size take their defaults. */
typedef struct loom_workload_packing {
    uint32_t struct_size;     /* sizeof(loom_workload_packing) of the caller */
    int64_t sequence_tokens;  /* tokens per packed microbatch */
    int64_t tokens_per_image; /* sequence tokens one image takes */
    /* Appended: samples drawn ahead that a microbatch may take from, in
     * draw order, the first that fits (first-fit over a window); 0 or 1:
     * the next sample only (next-fit, the default), at most
     * LOOM_MAX_PACKING_WINDOW. */
    int32_t window;
    int32_t reserved;
} loom_workload_packing;

#define LOOM_MAX_PACKING_WINDOW 4096
/* The packing the generator uses when given none: 8192-token sequences,
 * 169 tokens a 768 px image (PipeWeaver §8.1), next-fit. */
#define LOOM_DEFAULT_SEQUENCE_TOKENS 8192
#define LOOM_DEFAULT_TOKENS_PER_IMAGE 169

/* Generates `iterations` iterations of `microbatches` packed microbatches
 * each (every sample's microbatch set) for a family of
 * loom_workload_family_names(), packed as `packing` says (NULL: the
 * defaults). Same arguments -> same samples on every platform. The caller
 * keeps `packing`; *out is the caller's (loom_workload_free). */
LOOM_EXPORT int loom_workload_generate_packed(const char *family, int32_t iterations,
                                              int32_t microbatches, uint64_t seed,
                                              const loom_workload_packing *packing,
                                              loom_workload **out, loom_error *err);
/* "image-pairs", "interleaved", "video", "rise-and-fall", "text", NULL. */
LOOM_EXPORT const char *const *loom_workload_family_names(void);
LOOM_EXPORT void loom_workload_free(loom_workload *w);
/* Writes JSON Lines that loom_workload_load reads back identically.
 * LOOM_EIO when writing fails. */
LOOM_EXPORT int loom_workload_write(const loom_workload *w, FILE *out, loom_error *err);

#ifdef __cplusplus
}
#endif

#endif
