/*
 * loom/sys/problem.h - loading the planning problem's inputs: model.json (or a
 * model preset), cluster.json (or a cluster preset), the parallel config
 * string, workloads as JSON Lines (and the seeded workload generator) and
 * stage-times problems. Formats: docs/formats.md.
 *
 * Ownership: every loader returns an object the caller frees with the
 * matching *_free (NULL is accepted). Pointers returned by accessors stay
 * valid until that object is freed. Name lists are static.
 * Errors: every message names the file, the JSON path or line, what was
 * expected and what was found.
 * Units: milliseconds, bytes, bytes per second, FLOP/s.
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

LOOM_EXPORT const loom_model *loom_model_data_model(const loom_model_data *m);
/* Parallel config in the file or preset; NULL when none. */
LOOM_EXPORT const loom_parallel *loom_model_data_parallel(const loom_model_data *m);
/* Default workload family: "interleaved" for VLMs, "video" for T2V, NULL
 * when neither the file nor the modules suggest one. */
LOOM_EXPORT const char *loom_model_data_family(const loom_model_data *m);

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

/* Parses "tp=4,pp=4,dp=1,vpp=1,mb=16" (keys tp, pp, dp, vpp, mb or
 * microbatches; any subset, each at most once) and applies the values over
 * *inout; *inout is unchanged on error. */
LOOM_EXPORT int loom_parallel_parse(const char *spec, loom_parallel *inout, loom_error *err);
/* Checks tp, pp, dp, vpp, microbatches in [1, 65536], tp*pp*dp <= 2^20 and
 * pp*vpp*microbatches <= LOOM_MAX_FORWARD_STAGES; when `model` is non-NULL
 * also that every module has >= 1 layer, that tp divides every layer's
 * attention heads and that layers*microbatches <=
 * LOOM_MAX_LAYER_MICROBATCHES. The message names the field and the bound. */
LOOM_EXPORT int loom_parallel_validate(const loom_parallel *p, const loom_model *model,
                           loom_error *err);

/* ---- per-module layouts (docs/formats.md, "Per-module layouts") -------- */

/* The per-module layouts of a parallel config as read (module names not
 * yet resolved); freed with loom_layout_spec_free. */
typedef struct loom_layout_spec loom_layout_spec;

/* The layouts of the model file's "parallel" object; NULL when it lists
 * no module. Owned by m. */
LOOM_EXPORT const loom_layout_spec *loom_model_data_layouts(const loom_model_data *m);
/* Modules the spec lists (0 for NULL). */
LOOM_EXPORT int32_t loom_layout_spec_count(const loom_layout_spec *s);
LOOM_EXPORT void loom_layout_spec_free(loom_layout_spec *s);

/* Applies a --parallel value over *inout: key=value pairs as
 * loom_parallel_parse, a path ending in ".json" to a parallel object, or
 * the object itself written inline ("{...}", named "--parallel" in messages)
 * (tp, pp, dp, vpp, microbatches, cp, and optionally modules and gpus).
 * *layouts gets the file's per-module layouts (NULL when it lists none,
 * or for key=value pairs); the caller frees it. */
LOOM_EXPORT int loom_parallel_load(const char *spec, loom_parallel *inout,
                                   loom_layout_spec **layouts, loom_error *err);

/* Resolves `spec` against `model` and the top-level layout `p`: one
 * loom_module_layout per module (malloc'd into *out, model->n_modules
 * entries, freed by the caller with free()) and the GPUs of every set
 * (*total_gpus). Checks, each a LOOM_EINVAL naming the file and the JSON
 * path with expected and found values: listed names are modules; the
 * top-level p as loom_parallel_validate for the modules it runs; each
 * listed module's tp divides its heads, pp is at most its layers, dp
 * divides dp*microbatches; colocated_with names another module, without
 * cycles; a colocated module's tp*cp*pp*dp equals its set's GPUs (an
 * omitted dp fills the set); "gpus", when given, equals the total. */
LOOM_EXPORT int loom_module_layouts_resolve(const loom_layout_spec *spec,
                                            const loom_parallel *p, const loom_model *model,
                                            loom_module_layout **out, int32_t *total_gpus,
                                            loom_error *err);

/* ---- workloads ----------------------------------------------------------- */

/* A workload: per-iteration sample metadata. `iterations[i].samples` point
 * into `samples` (all samples, iteration after iteration). */
typedef struct loom_workload {
    int32_t n_iterations;
    loom_iteration *iterations; /* n_iterations entries */
    int64_t n_samples;          /* total over all iterations */
    loom_sample *samples;       /* n_samples entries, owned */
} loom_workload;

/* Checks one sample against the workload rules (docs/formats.md): text
 * tokens in [0, 2^32], images in [0, 2^20], video and audio seconds in
 * [0, 1e6] (NaN is not), microbatch in [-1, 65535], and something in it.
 * LOOM_EINVAL "where: path.field: expected ..., found ...". The JSON Lines
 * reader and the C API both check every sample with it. */
LOOM_EXPORT int loom_sample_validate(const char *where, const char *path, const loom_sample *s,
                                     loom_error *err);
/* Checks the n samples of one iteration: 1 to 10^6 of them, each as
 * loom_sample_validate (paths samples[i]), and either every sample names
 * its microbatch or none does. */
LOOM_EXPORT int loom_samples_validate(const char *where, const loom_sample *samples, int32_t n,
                                      loom_error *err);

/* Reads JSON Lines: one iteration per line, blank lines skipped. Errors
 * read "file:LINE: samples[3].images: expected ..., found ...". */
LOOM_EXPORT int loom_workload_load(const char *path, loom_workload **out, loom_error *err);
/* The same from text in memory (`name` is used in messages; text[len] must
 * be writable, e.g. the NUL terminator). */
LOOM_EXPORT int loom_workload_parse(const char *name, char *text, size_t len, loom_workload **out,
                        loom_error *err);
/* Generates `iterations` iterations of `microbatches` packed microbatches
 * each (every sample's microbatch set) for a family of
 * loom_workload_family_names(). Same arguments -> same samples on every
 * platform. */
LOOM_EXPORT int loom_workload_generate(const char *family, int32_t iterations,
                           int32_t microbatches, uint64_t seed,
                           loom_workload **out, loom_error *err);
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

/* loom_workload_generate with the packing `packing` (NULL: the defaults).
 * The caller keeps `packing`; *out is the caller's (loom_workload_free). */
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

/* ---- stage-times problems ------------------------------------------------ */

typedef struct loom_stage_times_data loom_stage_times_data;

LOOM_EXPORT const loom_stage_times *loom_stage_times_data_get(const loom_stage_times_data *s);
LOOM_EXPORT int loom_stage_times_load(const char *path, loom_stage_times_data **out,
                          loom_error *err);
LOOM_EXPORT void loom_stage_times_data_free(loom_stage_times_data *s);

#ifdef __cplusplus
}
#endif

#endif
