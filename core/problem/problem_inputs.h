/*
 * problem_inputs.h - the problem layer's readers and checks that only the
 * core and its tests call (not exported, not installed): parallel
 * configs and per-module layouts, sample checks, workloads from memory,
 * the unpacked workload generator, stage-times problems, and what a
 * loaded model holds. Tools reach them through a session
 * (loom/sys/session.h) or loom_model_data_info.
 *
 * Ownership and errors as in <loom/sys/problem.h>.
 */
#ifndef LOOM_PROBLEM_INPUTS_H
#define LOOM_PROBLEM_INPUTS_H

#include <stddef.h>
#include <loom/sys/problem.h>

/* ---- model ------------------------------------------------------------- */

const loom_model *loom_model_data_model(const loom_model_data *m);
/* Parallel config in the file or preset; NULL when none. */
const loom_parallel *loom_model_data_parallel(const loom_model_data *m);
/* Default workload family: "interleaved" for VLMs, "video" for T2V, NULL
 * when neither the file nor the modules suggest one. */
const char *loom_model_data_family(const loom_model_data *m);

/* ---- parallel config ----------------------------------------------------- */

/* Parses "tp=4,pp=4,dp=1,vpp=1,mb=16" (keys tp, pp, dp, vpp, mb or
 * microbatches; any subset, each at most once) and applies the values over
 * *inout; *inout is unchanged on error. */
int loom_parallel_parse(const char *spec, loom_parallel *inout, loom_error *err);
/* Checks tp, pp, dp, vpp, microbatches in [1, 65536], tp*pp*dp <= 2^20 and
 * pp*vpp*microbatches <= LOOM_MAX_FORWARD_STAGES; when `model` is non-NULL
 * also that every module has >= 1 layer, that tp divides every layer's
 * attention heads and that layers*microbatches <=
 * LOOM_MAX_LAYER_MICROBATCHES. The message names the field and the bound. */
int loom_parallel_validate(const loom_parallel *p, const loom_model *model, loom_error *err);

/* ---- per-module layouts (docs/formats.md, "Per-module layouts") -------- */

/* The per-module layouts of a parallel config as read (module names not
 * yet resolved); freed with loom_layout_spec_free. */
typedef struct loom_layout_spec loom_layout_spec;

/* The layouts of the model file's "parallel" object; NULL when it lists
 * no module. Owned by m. */
const loom_layout_spec *loom_model_data_layouts(const loom_model_data *m);
/* Modules the spec lists (0 for NULL). */
int32_t loom_layout_spec_count(const loom_layout_spec *s);
void loom_layout_spec_free(loom_layout_spec *s);

/* Applies a --parallel value over *inout: key=value pairs as
 * loom_parallel_parse, a path ending in ".json" to a parallel object, or
 * the object itself written inline ("{...}", named "--parallel" in messages)
 * (tp, pp, dp, vpp, microbatches, cp, and optionally modules and gpus).
 * *layouts gets the file's per-module layouts (NULL when it lists none,
 * or for key=value pairs); the caller frees it. */
int loom_parallel_load(const char *spec, loom_parallel *inout, loom_layout_spec **layouts,
                       loom_error *err);

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
int loom_module_layouts_resolve(const loom_layout_spec *spec, const loom_parallel *p,
                                const loom_model *model, loom_module_layout **out,
                                int32_t *total_gpus, loom_error *err);

/* ---- workloads ----------------------------------------------------------- */

/* Checks one sample against the workload rules (docs/formats.md): text
 * tokens in [0, 2^32], images in [0, 2^20], video and audio seconds in
 * [0, 1e6] (NaN is not), microbatch in [-1, 65535], and something in it.
 * LOOM_EINVAL "where: path.field: expected ..., found ...". The JSON Lines
 * reader and the C API both check every sample with it. */
int loom_sample_validate(const char *where, const char *path, const loom_sample *s,
                         loom_error *err);
/* Checks the n samples of one iteration: 1 to 10^6 of them, each as
 * loom_sample_validate (paths samples[i]), and either every sample names
 * its microbatch or none does. */
int loom_samples_validate(const char *where, const loom_sample *samples, int32_t n,
                          loom_error *err);

/* loom_workload_load from text in memory (`name` is used in messages;
 * text[len] must be writable, e.g. the NUL terminator). */
int loom_workload_parse(const char *name, char *text, size_t len, loom_workload **out,
                        loom_error *err);
/* loom_workload_generate_packed with the default packing. */
int loom_workload_generate(const char *family, int32_t iterations, int32_t microbatches,
                           uint64_t seed, loom_workload **out, loom_error *err);

/* ---- stage-times problems ------------------------------------------------ */

typedef struct loom_stage_times_data loom_stage_times_data;

const loom_stage_times *loom_stage_times_data_get(const loom_stage_times_data *s);
int loom_stage_times_load(const char *path, loom_stage_times_data **out, loom_error *err);
void loom_stage_times_data_free(loom_stage_times_data *s);

#endif
