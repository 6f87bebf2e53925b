/* session.c - opens a planning run (manifest, plugins, problem, workload)
 * and plans its iterations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine_api.h"
#include "pipeline.h"
#include <loom/sys/planner.h>
#include <loom/sys/problem.h>
#include "registry_priv.h"
#include <loom/sys/session.h>
#include "output.h"
#include "problem_inputs.h"
#include "run_priv.h"
#include <loom/tokens.h>

#define LOOM_DEFAULT_ITERATIONS 4
#define LOOM_MAX_ITERATIONS 100000

void loom_session_args_init(loom_session_args *a)
{
    memset(a, 0, sizeof *a);
}

static const loom_session_option session_options[] = {
    {"manifest", 1},      {"model", 1},        {"cluster", 1},    {"parallel", 1},
    {"workload", 1},      {"generate", 1},     {"packing-window", 1},
    {"stage-times", 1},   {"memory-cap", 1},
    {"iterations", 1},    {"seed", 1},         {"evaluations", 1}, {"use", 1},
    {"param", 1},         {"plugin-path", 1},  {"allow-untrusted-plugins", 0},
    {"global-batch", 1},  {"micro-batch-size", 1}, {"seq-len", 1},
    {NULL, 0}};

const loom_session_option *loom_session_options(void)
{
    return session_options;
}

/* Appends `v` to one of the repeatable override lists. */
static int push(const char **list, int *count, const char *flag, const char *v, loom_error *err)
{
    if (*count >= LOOM_SESSION_MAX_OVERRIDES)
        return loom_set_error(err, LOOM_EINVAL, "too many --%s options (at most %d)", flag,
                              LOOM_SESSION_MAX_OVERRIDES);
    list[(*count)++] = v;
    return LOOM_OK;
}

/* --global-batch, --micro-batch-size and --seq-len: positive integers. */
static int set_batch(loom_session_args *a, const char *name, const char *v, loom_error *err)
{
    char *end = NULL;
    long long n = strtoll(v, &end, 10);
    long long hi = !strcmp(name, "global-batch") ? (1LL << 40)
                 : !strcmp(name, "seq-len") ? (1LL << 20) : LOOM_MAX_PARALLEL_DEGREE;
    if (!*v || !end || *end || n < 1 || n > hi)
        return loom_set_error(err, LOOM_EINVAL, "--%s: expected an integer in [1, %lld], found '%s'",
                              name, hi, v);
    if (!strcmp(name, "global-batch"))
        a->global_batch = n;
    else if (!strcmp(name, "seq-len"))
        a->seq_len = (int32_t)n;
    else
        a->micro_batch_size = (int32_t)n;
    return LOOM_OK;
}

int loom_session_args_set(loom_session_args *a, const char *name, const char *v, loom_error *err)
{
    static const char *const simple[] = {"manifest", "model", "cluster", "parallel",
                                         "workload", "generate", "stage-times"};
    const char **slots[] = {&a->manifest, &a->model, &a->cluster, &a->parallel,
                            &a->workload, &a->generate, &a->stage_times};
    if (!strcmp(name, "allow-untrusted-plugins")) {
        a->allow_untrusted = 1;
        return LOOM_OK;
    }
    if (!v)
        return loom_set_error(err, LOOM_EINVAL, "--%s needs a value", name);
    for (size_t k = 0; k < sizeof simple / sizeof simple[0]; k++)
        if (!strcmp(name, simple[k])) {
            if (!*v)
                return loom_set_error(err, LOOM_EINVAL, "--%s: expected a value, found ''", name);
            *slots[k] = v;
            return LOOM_OK;
        }
    if (!strcmp(name, "memory-cap")) {
        if (loom_parse_bytes(v, &a->memory_cap_bytes) != 0)
            return loom_set_error(err, LOOM_EINVAL,
                                  "--memory-cap: expected a size such as 80GiB, 80GB or a byte "
                                  "count (units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), found '%s'",
                                  v);
        return LOOM_OK;
    }
    if (!strcmp(name, "packing-window")) {
        char *end = NULL;
        long n = strtol(v, &end, 10);
        if (!*v || !end || *end || n < 1 || n > LOOM_MAX_PACKING_WINDOW)
            return loom_set_error(err, LOOM_EINVAL,
                                  "--packing-window: expected an integer in [1, %d], found '%s'",
                                  LOOM_MAX_PACKING_WINDOW, v);
        a->packing_window = (int32_t)n;
        return LOOM_OK;
    }
    if (!strcmp(name, "global-batch") || !strcmp(name, "micro-batch-size") ||
        !strcmp(name, "seq-len"))
        return set_batch(a, name, v, err);
    if (!strcmp(name, "iterations") || !strcmp(name, "seed") || !strcmp(name, "evaluations")) {
        char *end = NULL;
        double d = strtod(v, &end);
        if (!*v || !end || *end || !(d >= 0) || d > 1.8e19)
            return loom_set_error(err, LOOM_EINVAL, "--%s: expected a non-negative number, found '%s'",
                                  name, v);
        if (!strcmp(name, "iterations")) {
            if (d < 1 || d > LOOM_MAX_ITERATIONS || d != (double)(int32_t)d)
                return loom_set_error(err, LOOM_EINVAL,
                                      "--iterations: expected an integer in [1, %d], found '%s'",
                                      LOOM_MAX_ITERATIONS, v);
            a->iterations = (int32_t)d;
        } else if (!strcmp(name, "evaluations")) {
            if (d < 1 || d > (double)((int64_t)1 << 40) || d != (double)(int64_t)d)
                return loom_set_error(err, LOOM_EINVAL,
                                      "--evaluations: expected an integer in [1, 2^40], found '%s'", v);
            a->max_evaluations = (int64_t)d;
        } else {
            a->has_seed = 1;
            a->seed = strtoull(v, NULL, 10);
        }
        return LOOM_OK;
    }
    if (!strcmp(name, "use"))
        return push(a->uses, &a->n_uses, name, v, err);
    if (!strcmp(name, "param"))
        return push(a->params, &a->n_params, name, v, err);
    if (!strcmp(name, "plugin-path"))
        return push(a->plugin_paths, &a->n_plugin_paths, name, v, err);
    return loom_set_error(err, LOOM_ENOTFOUND, "--%s is not a planning option", name);
}

int loom_session_args_take(loom_session_args *a, int argc, char **argv, int *i)
{
    const char *opt = argv[*i];
    if (strncmp(opt, "--", 2) != 0)
        return 0;
    const loom_session_option *o = session_options;
    while (o->name && strcmp(opt + 2, o->name))
        o++;
    if (!o->name)
        return 0;
    const char *v = NULL;
    if (o->takes_value) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "loom: option %s needs a value\n", opt);
            return -1;
        }
        v = argv[++*i];
    }
    loom_error err = {0};
    if (loom_session_args_set(a, o->name, v, &err) != LOOM_OK) {
        fprintf(stderr, "loom: %s\n", err.message);
        return -1;
    }
    return 1;
}

const char *loom_default_manifest(char *buf, size_t size)
{
    loom_error ignored;
    if (loom_planner_manifest_resolve("megatron-1f1b", buf, size, &ignored) != LOOM_OK)
        snprintf(buf, size, "examples/manifests/megatron-1f1b.json");
    return buf;
}

/* 1 when the --parallel value `spec` names the microbatches itself. */
static int names_microbatches(const char *spec)
{
    loom_parallel probe = {1, 1, 1, 1, 0, 0};
    loom_layout_spec *layouts = NULL;
    loom_error ignored;
    int rc = loom_parallel_load(spec, &probe, &layouts, &ignored);
    loom_layout_spec_free(layouts);
    return rc == LOOM_OK && probe.microbatches > 0;
}

/* The batch identity B = K x M x dp: derives M from --global-batch when
 * the parallel config does not name it, else checks it; records all
 * four numbers in the session. */
static int apply_batch(loom_session *s, const loom_session_args *a, loom_error *err)
{
    loom_parallel *p = &s->problem.parallel;
    int64_t K = a->micro_batch_size > 0 ? a->micro_batch_size : 1;
    int64_t D = p->dp > 0 ? p->dp : 1, B = a->global_batch;
    if (B > 0 && a->parallel && names_microbatches(a->parallel)) {
        if (B != K * p->microbatches * D)
            return loom_set_error(err, LOOM_EINVAL,
                                  "--global-batch %lld != micro-batch-size %lld x microbatches "
                                  "%d x dp %lld = %lld", (long long)B, (long long)K,
                                  (int)p->microbatches, (long long)D,
                                  (long long)(K * p->microbatches * D));
    } else if (B > 0) {
        if (B % (K * D) != 0 || B / (K * D) > LOOM_MAX_PARALLEL_DEGREE)
            return loom_set_error(err, LOOM_EINVAL,
                                  "--global-batch %lld: expected a multiple of micro-batch-size "
                                  "%lld x dp %lld = %lld giving at most %d microbatches",
                                  (long long)B, (long long)K, (long long)D, (long long)(K * D),
                                  LOOM_MAX_PARALLEL_DEGREE);
        p->microbatches = (int32_t)(B / (K * D));
    }
    s->micro_batch_size = (int32_t)K;
    s->problem.micro_batch_size = (int32_t)K;
    s->global_batch = K * p->microbatches * D;
    s->seq_len = a->seq_len > 0 ? a->seq_len : LOOM_DEFAULT_SEQUENCE_TOKENS;
    return LOOM_OK;
}

/* The one-line description of a generated workload: the family and why
 * (--generate, or the default for the model's modalities). */
static void describe_generated(loom_session *s, const loom_session_args *a, const char *family)
{
    const loom_model *m = s->problem.model;
    int image = 0, video = 0;
    for (int32_t i = 0; m && i < m->n_modules; i++) {
        video |= m->modules[i].modality == LOOM_MODALITY_VIDEO;
        image |= m->modules[i].modality == LOOM_MODALITY_IMAGE;
    }
    const char *why = a->generate ? "--generate"
                      : video     ? "default for a video model"
                      : image     ? "default for an image-text model"
                                  : "default for a text-only model";
    snprintf(s->workload_desc, sizeof s->workload_desc, "generated %.40s (%s)", family, why);
}

/* Puts K consecutive generated sequences into each microbatch: the same
 * sequences for every K, grouped K at a time. */
static void group_sequences(loom_workload *w, int32_t K)
{
    for (int64_t i = 0; K > 1 && i < w->n_samples; i++)
        if (w->samples[i].microbatch >= 0)
            w->samples[i].microbatch /= K;
}

static int open_problem(loom_session *s, const loom_session_args *a, loom_error *err)
{
    loom_problem *pb = &s->problem;
    pb->struct_size = sizeof *pb;
    if (a->stage_times) {
        int rc = loom_stage_times_load(a->stage_times, &s->stage_times, err);
        if (rc != LOOM_OK)
            return rc;
        const loom_stage_times *st = loom_stage_times_data_get(s->stage_times);
        pb->kind = LOOM_PROBLEM_STAGE_TIMES;
        pb->stage_times = st;
        pb->parallel = (loom_parallel){1, st->ranks, 1, st->virtual_stages, st->microbatches, 0};
        pb->memory_cap_bytes = a->memory_cap_bytes > 0 ? a->memory_cap_bytes
                                                        : st->memory_cap_bytes;
        s->n_iterations = 1;
        return LOOM_OK;
    }
    int rc = loom_model_load(a->model ? a->model : "vlm-s", &s->model, err);
    if (rc == LOOM_OK)
        rc = loom_cluster_load(a->cluster ? a->cluster : "h800", &s->cluster, err);
    if (rc != LOOM_OK)
        return rc;
    pb->kind = LOOM_PROBLEM_MODEL;
    pb->model = loom_model_data_model(s->model);
    pb->cluster = loom_cluster_data_cluster(s->cluster);
    const loom_parallel *own = loom_model_data_parallel(s->model);
    pb->parallel = own ? *own : (loom_parallel){1, 1, 1, 1, 4, 0};
    if (a->parallel &&
        (rc = loom_parallel_load(a->parallel, &pb->parallel, &s->parallel_layouts, err)) != LOOM_OK)
        return rc;
    /* a model without a parallel object (a Hugging Face config): 4 x pp
     * microbatches unless --parallel names them (docs/formats.md) */
    if (!own && !(a->parallel && names_microbatches(a->parallel)))
        pb->parallel.microbatches = 4 * (int64_t)pb->parallel.pp > LOOM_MAX_PARALLEL_DEGREE
                                        ? LOOM_MAX_PARALLEL_DEGREE
                                        : 4 * pb->parallel.pp;
    if ((rc = apply_batch(s, a, err)) != LOOM_OK)
        return rc;
    const loom_layout_spec *layouts =
        s->parallel_layouts ? s->parallel_layouts : loom_model_data_layouts(s->model);
    if (layouts) { /* per-module layouts: the problem carries one per module */
        rc = loom_module_layouts_resolve(layouts, &pb->parallel, pb->model, &s->module_layouts,
                                         &pb->total_gpus, err);
        if (rc != LOOM_OK)
            return rc;
        pb->module_layouts = s->module_layouts;
        pb->n_module_layouts = pb->model->n_modules;
        pb->module_layout_size = (uint32_t)sizeof(loom_module_layout);
    } else if ((rc = loom_parallel_validate(&pb->parallel, pb->model, err)) != LOOM_OK) {
        return rc;
    }
    pb->memory_cap_bytes = a->memory_cap_bytes > 0 ? a->memory_cap_bytes : s->cfg->memory_cap_bytes;

    uint64_t seed = a->has_seed ? a->seed : s->cfg->seed;
    if (a->no_workload) {
        s->n_iterations = 0;
    } else if (a->workload) {
        if (a->generate)
            return loom_set_error(err, LOOM_EINVAL, "give --workload or --generate, not both");
        if (a->packing_window > 0)
            return loom_set_error(err, LOOM_EINVAL,
                                  "--packing-window packs a generated workload; a --workload file "
                                  "is packed already");
        if (a->micro_batch_size > 0 || a->seq_len > 0)
            return loom_set_error(err, LOOM_EINVAL,
                                  "--%s packs a generated workload; a --workload file is packed "
                                  "already", a->seq_len > 0 ? "seq-len" : "micro-batch-size");
        rc = loom_workload_load(a->workload, &s->workload, err);
        if (rc != LOOM_OK)
            return rc;
        snprintf(s->workload_desc, sizeof s->workload_desc, "file %.140s", a->workload);
        s->n_iterations = s->workload->n_iterations;
        if (a->iterations > 0 && a->iterations < s->n_iterations)
            s->n_iterations = a->iterations;
    } else {
        const char *family = a->generate ? a->generate : loom_model_data_family(s->model);
        if (!family) /* no image or video module: a text-only model */
            family = "text";
        describe_generated(s, a, family);
        s->n_iterations = a->iterations > 0 ? a->iterations : LOOM_DEFAULT_ITERATIONS;
        loom_workload_packing packing = {sizeof packing, s->seq_len,
                                         LOOM_DEFAULT_TOKENS_PER_IMAGE, a->packing_window, 0};
        int64_t K = s->micro_batch_size, per = (int64_t)pb->parallel.microbatches * K;
        if (per > LOOM_MAX_PARALLEL_DEGREE)
            return loom_set_error(err, LOOM_EINVAL,
                                  "micro-batch-size %lld x microbatches %d: expected at most %d "
                                  "sequences per replica", (long long)K,
                                  (int)pb->parallel.microbatches, LOOM_MAX_PARALLEL_DEGREE);
        /* with --global-batch, the whole batch, of which the heaviest
         * replica is planned (when it is not too large to generate) */
        int32_t dp = pb->parallel.dp > 1 ? pb->parallel.dp : 1;
        int whole = a->global_batch > 0 && dp > 1 && per * dp <= LOOM_MAX_PARALLEL_DEGREE;
        rc = loom_workload_generate_packed(family, s->n_iterations,
                                           (int32_t)(whole ? per * dp : per), seed, &packing,
                                           &s->workload, err);
        if (rc == LOOM_OK && whole)
            rc = loom_batch_keep_heaviest(s->workload, pb->model, (int32_t)per, dp, (int32_t)K,
                                          &s->batch, err);
        if (rc != LOOM_OK)
            return rc;
        group_sequences(s->workload, (int32_t)K);
    }
    if (s->workload && s->n_iterations > 0) { /* the iterations this run plans */
        pb->iterations = s->workload->iterations;
        pb->n_iterations = s->n_iterations;
    }
    return LOOM_OK;
}

int loom_session_init(loom_session *s, const loom_session_args *a, loom_error *err)
{
    memset(s, 0, sizeof *s);
    (void)loom_out_umask(); /* before plugin code could change it */
    if (a->manifest)
        snprintf(s->manifest_path, sizeof s->manifest_path, "%s", a->manifest);
    else
        loom_default_manifest(s->manifest_path, sizeof s->manifest_path);
    if (a->stage_times) { /* a stage-times problem carries its own shape */
        const char *with = a->model ? "--model" : a->cluster ? "--cluster"
                         : a->parallel ? "--parallel" : a->workload ? "--workload"
                         : a->generate ? "--generate"
                         : a->packing_window > 0 ? "--packing-window"
                         : a->global_batch > 0 ? "--global-batch"
                         : a->micro_batch_size > 0 ? "--micro-batch-size"
                         : a->seq_len > 0 ? "--seq-len"
                         : a->iterations > 1 ? "--iterations" : NULL;
        if (with)
            return loom_set_error(err, LOOM_EINVAL,
                                  "--stage-times and %s contradict each other: a stage-times "
                                  "problem gives its own ranks, microbatches and times", with);
    }
    int rc = loom_planner_config_load(s->manifest_path, &s->cfg, err);
    if (rc == LOOM_OK)
        rc = loom_planner_config_apply(s->cfg, a->uses, a->n_uses, a->params, a->n_params, err);
    if (rc != LOOM_OK)
        return rc;
    if (a->has_seed)
        s->cfg->seed = a->seed;
    if (a->max_evaluations > 0)
        s->cfg->max_evaluations = a->max_evaluations;
    else if (s->cfg->max_evaluations == 0 && a->default_max_evaluations > 0)
        s->cfg->max_evaluations = a->default_max_evaluations;
    s->manifest_name = s->cfg->name ? s->cfg->name : s->manifest_path;
    rc = loom_registry_open(a->plugin_paths, a->n_plugin_paths, a->allow_untrusted, &s->reg,
                            err);
    if (rc != LOOM_OK)
        return rc;
    if ((rc = open_problem(s, a, err)) != LOOM_OK)
        return rc;
    loom_pipeline_hooks hooks = {a->step_marker, a->on_step, a->on_step_user,
                                 a->last_step_marker};
    rc = loom_pipeline_open_ex(s->reg, s->cfg, &hooks, &s->pl, err);
    if (rc != LOOM_OK)
        return rc;
    s->pl->problem = &s->problem;
    return LOOM_OK;
}

/* Total makespan and feasibility of candidate c over every iteration of
 * the run, and in *offered how many candidates iteration 0 offered (0
 * when its partitioners failed); its label in iteration 0 goes to label,
 * and a later iteration that labels it otherwise is an error that sets
 * *mismatch (its partitioners do not offer the same candidates every
 * iteration). */
static int score_candidate(loom_session *s, int32_t c, double *total_ms, int *feasible,
                           int *mismatch, int32_t *offered, loom_error *err)
{
    char label[64];
    *total_ms = 0.0;
    *feasible = 1;
    *mismatch = 0;
    *offered = 0;
    s->pl->fixed_candidate = c;
    for (int32_t i = 0; i < s->n_iterations; i++) {
        loom_plan plan;
        int rc = loom_engine_plan(s->pl, &s->problem, &s->workload->iterations[i], &plan, err);
        if (i == 0)
            *offered = s->pl->offered;
        if (rc != LOOM_OK)
            return rc;
        if (i == 0) {
            snprintf(label, sizeof label, "%s", plan.label);
        } else if (strcmp(label, plan.label)) {
            *mismatch = 1;
            rc = loom_set_error(err, LOOM_EINVAL,
                                "choose run: candidate %d is \"%s\" in iteration 0 and \"%s\" "
                                "in iteration %d; a choice for the whole run needs "
                                "partitioners that offer the same candidates every iteration",
                                c, label, plan.label, i);
            loom_plan_clear(&plan);
            return rc;
        }
        *total_ms += plan.metrics.makespan_ms;
        *feasible &= plan.metrics.cap_violations == 0;
        loom_plan_clear(&plan);
    }
    return LOOM_OK;
}

/* "choose": "run": the candidate every iteration uses, as a Megatron-LM
 * job is configured once. Each candidate is planned on every iteration
 * (candidate 0's first plan also tells how many there are, even when it
 * fails after the partitioners), and the one with the least total
 * makespan wins, one that fits the memory cap in every iteration before
 * any that does not, ties to the lowest index. A candidate that cannot be
 * planned in some iteration is skipped; when none can, the error says so
 * and quotes the last failure. Running out of memory or an interrupt ends
 * the choice at once. */
static int choose_run_candidate(loom_session *s, loom_error *err)
{
    int rc = LOOM_OK;
    int32_t n = 1;
    int32_t best = -1;
    double best_ms = 0.0;
    int best_feasible = 0;
    for (int32_t c = 0; c < n; c++) {
        double total_ms;
        int feasible, mismatch;
        int32_t offered;
        loom_error why = {0};
        rc = score_candidate(s, c, &total_ms, &feasible, &mismatch, &offered, &why);
        if (mismatch || rc == LOOM_ENOMEM || rc == LOOM_EINTERRUPTED) {
            *err = why;
            s->pl->fixed_candidate = -1;
            return rc;
        }
        if (c == 0)
            n = offered; /* 0: the partitioners failed, so every candidate would */
        if (rc != LOOM_OK) {
            *err = why;
            continue;
        }
        if (best < 0 || feasible > best_feasible ||
            (feasible == best_feasible && total_ms < best_ms)) {
            best = c;
            best_ms = total_ms;
            best_feasible = feasible;
        }
    }
    s->pl->fixed_candidate = -1;
    if (best < 0 && n > 0) {
        loom_error last = *err;
        return loom_set_error(err, rc, "choose run: none of the %d candidates can be planned "
                              "in every iteration; the last: %s", n, last.message);
    }
    if (best < 0)
        return rc;
    s->run_candidate = best;
    s->run_chosen = 1;
    return LOOM_OK;
}

/* Plans `it` and refuses a plan holding a number that is not finite, so
 * that no output, --json printer, A/B record or C API getter sees one. */
static int checked_plan(loom_session *s, const loom_iteration *it, loom_plan *plan,
                        loom_error *err)
{
    if (s->cfg->choose_run && s->problem.kind == LOOM_PROBLEM_MODEL && s->n_iterations > 0 &&
        !s->run_chosen) {
        int rc = choose_run_candidate(s, err);
        if (rc != LOOM_OK)
            return rc;
    }
    s->pl->fixed_candidate = s->cfg->choose_run && s->run_chosen ? s->run_candidate : -1;
    int rc = loom_engine_plan(s->pl, &s->problem, it, plan, err);
    s->pl->fixed_candidate = -1;
    if (rc == LOOM_OK)
        plan->workload = s->workload_desc[0] ? s->workload_desc : NULL;
    if (rc == LOOM_OK && (rc = loom_plan_check_finite(plan, err)) != LOOM_OK)
        loom_plan_clear(plan);
    return rc;
}

int loom_session_plan_iteration(loom_session *s, const loom_iteration *it, loom_plan *plan,
                                loom_error *err)
{
    if (!it || it->n_samples < 1)
        return loom_set_error(err, LOOM_EINVAL, "iteration: expected at least one sample");
    int32_t M = s->problem.parallel.microbatches;
    for (int32_t i = 0; i < it->n_samples; i++)
        if (it->samples[i].microbatch >= M)
            return loom_set_error(err, LOOM_EINVAL,
                                  "iteration %d: samples[%d].microbatch: expected -1..%d "
                                  "(the parallel config has %d microbatches), found %d",
                                  it->index, i, M - 1, M, it->samples[i].microbatch);
    return checked_plan(s, it, plan, err);
}

int loom_session_plan(loom_session *s, int32_t k, loom_plan *plan, loom_error *err)
{
    if (s->problem.kind == LOOM_PROBLEM_STAGE_TIMES)
        return checked_plan(s, NULL, plan, err);
    if (k < 0 || k >= s->n_iterations)
        return loom_set_error(err, LOOM_EINVAL, "no iteration %d (the workload has %d)", k,
                              s->n_iterations);
    int rc = loom_session_plan_iteration(s, &s->workload->iterations[k], plan, err);
    if (rc == LOOM_OK && s->batch && plan->partition && k < s->batch->n_iterations)
        loom_batch_job_metrics(s->batch, k, plan);
    return rc;
}

int loom_session_tp_warning(const loom_session *s, char *buf, size_t size)
{
    const loom_problem *pb = &s->problem;
    const loom_cluster *c = pb->cluster;
    if (pb->kind != LOOM_PROBLEM_MODEL || !c || c->gpus_per_node <= 0)
        return 0;
    int32_t tp = pb->parallel.tp;
    for (int32_t m = 0; pb->model && m < pb->model->n_modules; m++)
        if (loom_problem_module_tp(pb, m) > tp)
            tp = loom_problem_module_tp(pb, m);
    if (tp <= c->gpus_per_node)
        return 0;
    snprintf(buf, size,
             "tp %d spans %d nodes of %d GPUs (%s): every layer's tensor-parallel all-reduce "
             "then crosses the inter-node network (%.0f GB/s per GPU instead of NVLink's %.0f "
             "GB/s), so the plan is slow; keep tp <= %d and use pp or dp across nodes",
             tp, (tp + c->gpus_per_node - 1) / c->gpus_per_node, c->gpus_per_node,
             c->name ? c->name : "cluster", c->net_bytes_per_s / 1e9, c->nvlink_bytes_per_s / 1e9,
             c->gpus_per_node);
    return 1;
}

void loom_session_release(loom_session *s)
{
    if (s->pl)
        loom_pipeline_close(s->pl);
    if (s->reg)
        loom_registry_free(s->reg);
    if (s->cfg)
        loom_planner_config_free(s->cfg);
    if (s->workload)
        loom_workload_free(s->workload);
    if (s->model)
        loom_model_data_free(s->model);
    if (s->cluster)
        loom_cluster_data_free(s->cluster);
    if (s->stage_times)
        loom_stage_times_data_free(s->stage_times);
    free(s->module_layouts);
    loom_layout_spec_free(s->parallel_layouts);
    loom_batch_replicas_free(s->batch);
    memset(s, 0, sizeof *s);
}

void loom_session_set_progress(loom_session *s, loom_progress_fn fn, void *user)
{
    if (!s || !s->pl)
        return;
    pthread_mutex_lock(&s->pl->progress.lock);
    s->pl->progress.fn = fn;
    s->pl->progress.user = user;
    pthread_mutex_unlock(&s->pl->progress.lock);
}

int32_t loom_session_progress_curve(const loom_session *s, const loom_progress_point **points)
{
    *points = s && s->pl ? s->pl->progress.points : NULL;
    return s && s->pl ? s->pl->progress.n : 0;
}
