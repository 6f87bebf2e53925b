/*
 * problem_io_priv.h - seams between the problem-input files (not
 * installed): the model builder shared by model.json parsing and the
 * presets, the preset tables, the workload builder shared by the JSONL
 * reader and the generator, and small message helpers.
 *
 * Ownership: descriptions passed to builders are borrowed for the call;
 * builders copy what they keep.
 */
#ifndef LOOM_PROBLEM_IO_PRIV_H
#define LOOM_PROBLEM_IO_PRIV_H

#include <cjson/cJSON.h>
#include "base.h"
#include <loom/sys/json.h>
#include <loom/sys/problem.h>
#include "problem_inputs.h"

/* ---- model builder (model_data.c) ---------------------------------------- */

/* `count` consecutive layers of one shape. */
typedef struct loom_layer_group {
    int32_t count;
    loom_layer layer;
} loom_layer_group;

typedef struct loom_module_desc {
    const char *name;
    int32_t kind;     /* enum loom_module_kind */
    int32_t modality; /* enum loom_modality */
    int64_t tokens_per_item;
    int64_t vocab;
    int32_t frozen;
    int32_t n_groups;
    const loom_layer_group *groups;
    int32_t n_inputs;
    const char *const *inputs; /* names of upstream modules */
    int64_t patches_per_item;  /* 0: tokens_per_item */
} loom_module_desc;

typedef struct loom_model_desc {
    const char *name;
    int32_t n_modules;
    const loom_module_desc *modules; /* in file order */
    const loom_parallel *parallel;   /* NULL: none */
    const char *family;              /* NULL: inferred from modalities */
} loom_model_desc;

/* Copies `d` into a new loom_model_data: resolves inputs by name, rejects
 * duplicate names, unknown or repeated inputs and cycles (naming the
 * cycle), expands layer groups and stores modules in topological order
 * (file order among independent modules). Messages start with `file` and
 * use file-order paths such as `modules[2].inputs[0]`. */
int loom_model_build(const char *file, const loom_model_desc *d,
                     loom_model_data **out, loom_error *err);

/* ---- per-module layouts (layout_io.c, parallel_io.c) --------------------- */

/* Reads the optional "modules" and "gpus" members of the parallel object
 * `parallel` at JSON path `path` ("" for a parallel file's root): *out is
 * NULL when neither is there. Messages name `file` and the JSON path. */
int loom_layout_spec_parse(const char *file, const cJSON *parallel, const char *path,
                           loom_layout_spec **out, loom_error *err);

/* loom_parallel_validate, leaving out of the tp | heads check every module
 * m with skip[m] != 0 (the modules with their own layout); skip NULL:
 * none. */
int loom_parallel_validate_skip(const loom_parallel *p, const loom_model *model,
                                const unsigned char *skip, loom_error *err);

/* Gives m the per-module layouts of its parallel object (m owns them). */
void loom_model_data_set_layouts(loom_model_data *m, loom_layout_spec *layouts);

/* ---- Hugging Face configs (hf_config.c) ------------------------------------ */

/* 1 when root looks like a Hugging Face config.json (a model_type or
 * architectures member and no "modules"). */
int loom_model_is_hf_config(const cJSON *root);

/* The model of a Hugging Face config.json (supported model_type values in
 * docs/formats.md); an unknown one is LOOM_EINVAL naming model_type and the
 * supported list. */
int loom_model_from_hf(const char *file, const cJSON *root, loom_model_data **out,
                       loom_error *err);

/* ---- presets (presets.c) ------------------------------------------------- */

/* Cluster defaults shared by cluster.json and the presets. */
#define LOOM_DEFAULT_EFF_GEMM 0.75
#define LOOM_DEFAULT_EFF_ATTENTION 0.6
#define LOOM_DEFAULT_EFF_MEMORY 0.8
#define LOOM_DEFAULT_EFF_COLLECTIVE 0.7
#define LOOM_DEFAULT_P2P_LATENCY_MS 0.02
#define LOOM_DEFAULT_GPUS_PER_NODE 8

/* Builds the model preset `name` (case-insensitive). LOOM_ENOTFOUND, with
 * err untouched, when there is no such preset. */
int loom_model_preset(const char *name, loom_model_data **out, loom_error *err);
/* Fills *out with the cluster preset `name` (case-insensitive); returns 1
 * when found, 0 otherwise. out->name points to static storage. */
int loom_cluster_preset(const char *name, loom_cluster *out);
/* Reads the JSON file named by `spec`, a string that is not a preset name
 * of `what` ("model", "cluster"). A spec that neither looks like a path
 * (contains '/' or ends in ".json") nor names an existing file is
 * LOOM_ENOTFOUND listing `presets`; an unreadable file is LOOM_EIO with the
 * presets appended. Caller frees *root with cJSON_Delete. */
int loom_load_spec_json(const char *what, const char *spec, const char *const *presets,
                        cJSON **root, loom_error *err);
/* Rewrites err's message as "<prefix>: <message>" and returns `code`. */
int loom_error_prefix(loom_error *err, int code, const char *prefix);
/* Writes "a, b, c" (a NULL-terminated list) into buf. */
void loom_join_names(const char *const *names, char *buf, size_t size);
/* ASCII case-insensitive string equality. */
int loom_name_eq(const char *a, const char *b);

/* ---- message helpers (model_io.c) ----------------------------------------- */

/* Checks that a name is 1..63 characters of [A-Za-z0-9_.-]; the message
 * reads "file: path: expected a name ..., found \"...\"". */
int loom_check_name(const char *file, const char *path, const char *name,
                    loom_error *err);
/* Short literal description of a JSON value for "found ..." messages. */
const char *loom_json_describe(const cJSON *item, char *buf, size_t size);

/* ---- workload builder (workload_io.c) ------------------------------------- */

typedef struct loom_workload_builder {
    loom_workload *w;
    int32_t iterations_cap;
    int64_t samples_cap;
} loom_workload_builder;

/* Starts an empty workload. */
int loom_wb_init(loom_workload_builder *b, loom_error *err);
/* Opens iteration `index`; later samples belong to it. Fails past
 * LOOM_MAX_ITERATIONS. */
int loom_wb_begin_iteration(loom_workload_builder *b, int32_t index,
                            loom_error *err);
/* Appends one sample to the open iteration. Fails past the per-iteration
 * and total sample bounds. */
int loom_wb_add_sample(loom_workload_builder *b, const loom_sample *s,
                       loom_error *err);
/* Hands the finished workload to *out (sample pointers fixed up). */
void loom_wb_finish(loom_workload_builder *b, loom_workload **out);
/* Frees a builder's partial workload. */
void loom_wb_abort(loom_workload_builder *b);

#endif
