/* cmd_calibrate_batch.c - `loom calibrate-batch`: Entrain's minimum stable
 * profiling batch size (dissertation §4.4.2, Algorithm 2) for a model and
 * a pool of samples: per-sample encoder and backbone workloads from
 * Entrain's quadratic cost model, Bernoulli trials of the proportional GPU
 * split, doubling the batch until every trial agrees. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include <loom/algorithms/entrain.h>
#include <loom/sys/json.h>
#include <loom/sys/problem.h>

/* Prints the command's help text. */
static void usage(FILE *out)
{
    fprintf(out,
            "usage: loom calibrate-batch --model SPEC (--workload FILE | --generate FAMILY)\n"
            "                            --global-batch B [--gpus G] [--unit U]\n"
            "                            [--alpha A] [--p-error P] [--n0 N]\n"
            "                            [--estimator sum|mean] [--costs FILE]\n"
            "                            [--iterations N] [--seed S] [--json]\n"
            "\n"
            "Entrain's batch sizer (dissertation 4.4.2, Algorithm 2): draws batches of\n"
            "n samples from the workload (uniformly, with replacement, seeded), splits\n"
            "the G GPUs of a replica between the encoders and the backbone in\n"
            "proportion to their summed work (in units of U GPUs), and doubles n from\n"
            "n0 until k = ceil(ln A / ln(1 - P)) fresh batches all give the same split.\n"
            "Fails when no n up to the global batch is stable.\n"
            "\n"
            "  --model SPEC        model preset or model.json\n"
            "  --workload FILE     the sample pool (every sample of every iteration)\n"
            "  --generate FAMILY   or a generated pool (--iterations, default 8)\n"
            "  --global-batch B    largest batch tried (B_global)\n"
            "  --gpus G            GPUs per replica (default the model's tp * pp)\n"
            "  --unit U            allocation granularity, TP x CP (default the model's tp)\n"
            "  --alpha A           confidence (default 0.05)\n"
            "  --p-error P         tolerated flip probability (default 0.05)\n"
            "  --n0 N              first batch size (default 1)\n"
            "  --estimator E       sum: ratio of summed work (default); mean: mean of\n"
            "                      per-sample ratios (appendix C.1)\n"
            "  --costs FILE        per-layer T(x) = a x^2 + b x + c of each module:\n"
            "                      {\"vit\": {\"a\": 0, \"b\": 1e-3, \"c\": 0}, ...}; default:\n"
            "                      FLOPs of the layer shapes (frozen-aware)\n"
            "  --seed S            sampling seed (default 1)\n"
            "  --json              print the rounds as JSON\n"
            "exit codes: 0 stable, 1 not stable within the global batch, 2 usage or\n"
            "input error\n");
}

/* Parses a finite number in [lo, hi]. */
static int parse_num(const char *s, double lo, double hi, double *out)
{
    if (!s || !*s)
        return 0;
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

/* Reads --costs: an object of module name -> {a, b, c}. */
static int load_costs(const char *path, const loom_model *model,
                      loom_entrain_quad *quad, loom_error *err)
{
    cJSON *root = NULL;
    int rc = loom_json_load(path, &root, err);
    if (rc != LOOM_OK)
        return rc;
    if (!cJSON_IsObject(root)) {
        rc = loom_set_error(err, LOOM_EINVAL, "%s: expected an object of modules, "
                            "found %s", path, loom_json_type_name(root));
        goto done;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, root) {
        int m = -1;
        for (int32_t k = 0; k < model->n_modules; k++)
            if (!strcmp(model->modules[k].name, it->string))
                m = k;
        if (m < 0) {
            rc = loom_set_error(err, LOOM_EINVAL, "%s: %s: expected a module of "
                                "model %s, found an unknown name", path,
                                it->string, model->name);
            goto done;
        }
        static const char *const keys[] = {"a", "b", "c", NULL};
        if ((rc = loom_json_check_keys(path, it, it->string, keys, err)) ||
            (rc = loom_json_get_double(path, it, it->string, "a", 0, 0, 1e12,
                                       &quad[m].a, err)) ||
            (rc = loom_json_get_double(path, it, it->string, "b", 0, 0, 1e12,
                                       &quad[m].b, err)) ||
            (rc = loom_json_get_double(path, it, it->string, "c", 0, 0, 1e12,
                                       &quad[m].c, err)))
            goto done;
    }
done:
    cJSON_Delete(root);
    return rc;
}

/* Prints the result for people or as JSON. */
static void print_result(const loom_entrain_calib_result *r, int json, int rc)
{
    if (json) {
        printf("{\"trials\": %d, \"b_min\": %d, \"split\": [%d, %d], "
               "\"encoder_share\": %.6f, \"rounds\": [", r->trials, r->b_min,
               r->alloc[0], r->alloc[1], r->enc_share);
        for (int32_t i = 0; i < r->n_rounds; i++) {
            const loom_entrain_round *x = &r->rounds[i];
            printf("%s{\"batch\": %d, \"stable\": %s, \"splits\": [", i ? ", " : "",
                   x->batch, x->stable ? "true" : "false");
            for (int32_t s = 0; s < x->n_seen; s++)
                printf("%s[%d, %d]", s ? ", " : "", x->seen[s][0], x->seen[s][1]);
            printf("]}");
        }
        printf("]}\n");
        return;
    }
    printf("k = %d Bernoulli trials per batch size\n", r->trials);
    for (int32_t i = 0; i < r->n_rounds; i++) {
        const loom_entrain_round *x = &r->rounds[i];
        printf("  b = %-6d %s", x->batch, x->stable ? "stable  " : "unstable");
        for (int32_t s = 0; s < x->n_seen; s++)
            printf("%s %d:%d", s ? "," : "", x->seen[s][0], x->seen[s][1]);
        printf("\n");
    }
    if (rc == LOOM_OK)
        printf("b_min = %d: encoder:backbone = %d:%d GPUs (encoder share %.4f)\n",
               r->b_min, r->alloc[0], r->alloc[1], r->enc_share);
}

enum { OPT_ALPHA = 0x100, OPT_P_ERROR, OPT_GPUS, OPT_UNIT, OPT_N0, OPT_GLOBAL_BATCH,
       OPT_ITERATIONS, OPT_SEED, OPT_MODEL, OPT_WORKLOAD, OPT_GENERATE, OPT_COSTS, OPT_ESTIMATOR,
       OPT_JSON };

static const loom_cli_option calibrate_options[] = {
    {"alpha", 1, OPT_ALPHA},        {"p-error", 1, OPT_P_ERROR},
    {"gpus", 1, OPT_GPUS},          {"unit", 1, OPT_UNIT},
    {"n0", 1, OPT_N0},              {"global-batch", 1, OPT_GLOBAL_BATCH},
    {"iterations", 1, OPT_ITERATIONS}, {"seed", 1, OPT_SEED},
    {"model", 1, OPT_MODEL},        {"workload", 1, OPT_WORKLOAD},
    {"generate", 1, OPT_GENERATE},  {"costs", 1, OPT_COSTS},
    {"estimator", 1, OPT_ESTIMATOR}, {"json", 0, OPT_JSON},
    {NULL, 0, 0}};

/* What `loom calibrate-batch` was asked for. */
typedef struct calibrate_cli {
    const char *model_spec, *wl, *family, *costs, *estimator;
    double alpha, perr, gpus, unit, n0, batch, iters, seed;
    int json;
} calibrate_cli;

/* One option of `loom calibrate-batch` (loom_cli_spec.handle). */
static int calibrate_option(void *ctx, int key, const char *name, const char *s)
{
    calibrate_cli *o = ctx;
    struct { int key; double *dst, lo, hi; int integer; } nums[] = {
        {OPT_ALPHA, &o->alpha, 1e-12, 1 - 1e-12, 0}, {OPT_P_ERROR, &o->perr, 1e-12, 1 - 1e-12, 0},
        {OPT_GPUS, &o->gpus, 2, 1 << 20, 1}, {OPT_UNIT, &o->unit, 1, 1 << 20, 1},
        {OPT_N0, &o->n0, 1, LOOM_ENTRAIN_MAX_BATCH, 1},
        {OPT_GLOBAL_BATCH, &o->batch, 1, LOOM_ENTRAIN_MAX_BATCH, 1},
        {OPT_ITERATIONS, &o->iters, 1, 100000, 1}, {OPT_SEED, &o->seed, 0, 9e15, 1}};
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
        if (nums[k].key != key)
            continue;
        double v = 0;
        if (!parse_num(s, nums[k].lo, nums[k].hi, &v) || (nums[k].integer && v != floor(v))) {
            loom_cli_error("calibrate-batch", "--%s: expected a number in [%g, %g]%s, found '%s'",
                           name, nums[k].lo, nums[k].hi, nums[k].integer ? " (an integer)" : "",
                           s);
            return -1;
        }
        *nums[k].dst = v;
        return 0;
    }
    switch (key) {
    case OPT_MODEL: o->model_spec = s; return 0;
    case OPT_WORKLOAD: o->wl = s; return 0;
    case OPT_GENERATE: o->family = s; return 0;
    case OPT_COSTS: o->costs = s; return 0;
    case OPT_ESTIMATOR: o->estimator = s; return 0;
    case OPT_JSON: o->json = 1; return 0;
    case LOOM_CLI_OPERAND:
        loom_cli_error("calibrate-batch", "unexpected argument '%s'", s);
        return -1;
    default:
        return -1;
    }
}

int loom_cmd_calibrate_batch(int argc, char **argv)
{
    static const char *const conflicts[][2] = {{"workload", "generate"}, {NULL, NULL}};
    calibrate_cli cli = {NULL, NULL, NULL, NULL, "sum", 0.05, 0.05, 0, 0, 1, 0, 8, 1, 0};
    loom_cli_spec spec = {"calibrate-batch", calibrate_options, NULL, conflicts,
                          calibrate_option, &cli};
    int parsed = loom_cli_parse(&spec, argc, argv);
    if (parsed != 0) {
        usage(parsed > 0 ? stdout : stderr);
        return parsed > 0 ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    }
    const char *model_spec = cli.model_spec, *wl = cli.wl, *family = cli.family;
    const char *costs = cli.costs, *estimator = cli.estimator;
    double alpha = cli.alpha, perr = cli.perr, gpus = cli.gpus, unit = cli.unit, n0 = cli.n0;
    double batch = cli.batch, iters = cli.iters, seed = cli.seed;
    int json = cli.json;
    if (!model_spec || (!wl == !family) || batch < 1) {
        fprintf(stderr, "loom calibrate-batch: --model, --global-batch and exactly "
                        "one of --workload, --generate are required\n");
        usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    if (strcmp(estimator, "sum") && strcmp(estimator, "mean")) {
        fprintf(stderr, "loom calibrate-batch: --estimator: expected sum or mean, "
                        "found \"%s\"\n", estimator);
        return LOOM_EXIT_USAGE;
    }
    loom_error err = {0, ""};
    loom_model_data *md = NULL;
    loom_workload *w = NULL;
    loom_entrain_work *pool = NULL;
    loom_entrain_quad quad[LOOM_MAX_MODULES];
    loom_entrain_calib_result res;
    memset(&res, 0, sizeof res);
    int rc = loom_model_load(model_spec, &md, &err);
    if (rc == LOOM_OK)
        rc = wl ? loom_workload_load(wl, &w, &err)
                : loom_workload_generate_packed(family, (int32_t)iters, 16, (uint64_t)seed, NULL,
                                                &w, &err);
    loom_model_info mi = {0};
    loom_model_data_info(md, &mi);
    const loom_model *model = mi.model;
    if (rc == LOOM_OK) {
        loom_entrain_quad_from_shapes(model, quad);
        if (costs)
            rc = load_costs(costs, model, quad, &err);
    }
    if (rc == LOOM_OK && w->n_samples > INT32_MAX)
        rc = loom_set_error(&err, LOOM_EINVAL, "calibrate: too many samples");
    if (rc == LOOM_OK && !(pool = malloc((size_t)w->n_samples * sizeof *pool)))
        rc = loom_set_error(&err, LOOM_ENOMEM, "calibrate: out of memory");
    if (rc == LOOM_OK) {
        for (int64_t s = 0; s < w->n_samples; s++)
            pool[s] = loom_entrain_sample_work(model, quad, &w->samples[s]);
        const loom_parallel *par = mi.parallel;
        int32_t tp = par && par->tp > 0 ? par->tp : 1, pp = par && par->pp > 0 ? par->pp : 1;
        loom_entrain_calib_options o = {
            alpha, perr, (int32_t)n0, (int32_t)batch,
            gpus > 0 ? (int32_t)gpus : tp * pp, unit > 0 ? (int32_t)unit : tp,
            strcmp(estimator, "mean") ? LOOM_ENTRAIN_RATIO_OF_SUMS
                                      : LOOM_ENTRAIN_MEAN_OF_RATIOS,
            0, (uint64_t)seed};
        rc = loom_entrain_calibrate(pool, (int32_t)w->n_samples, &o, &res, &err);
        if (rc == LOOM_OK || rc == LOOM_EINFEASIBLE)
            print_result(&res, json, rc);
    }
    if (rc != LOOM_OK)
        fprintf(stderr, "loom calibrate-batch: %s\n", err.message);
    free(pool);
    loom_workload_free(w);
    loom_model_data_free(md);
    return loom_cli_exit_for_status(rc);
}
