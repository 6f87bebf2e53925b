/* cmd_calibrate.c - `loom calibrate`: fits the cluster's efficiency
 * factors to measurements (a per-layer profile CSV and/or measured
 * iterations) by bounded least squares, prints every measurement's
 * residual and writes a calibrated cluster.json (and, from a profile, a
 * table cost file). Formats and method: docs/calibration.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calib.h"
#include "cli.h"
#include <loom/sys/json.h>
#include <loom/sys/output.h>
#include <loom/sys/problem.h>

/* Prints the command's help text. */
static void usage(FILE *out)
{
    fprintf(out,
            "usage: loom calibrate --cluster SPEC (--profile CSV --model SPEC |\n"
            "                      --measured JSON)... [--manifest FILE]\n"
            "                      [--fit F1,F2,...] [--out CLUSTER.json] [--table CSV]\n"
            "                      [--max-residual PCT] [--json]\n"
            "\n"
            "Fits the cluster's efficiency factors to measured layer and iteration\n"
            "times by bounded least squares on relative residuals, prints every\n"
            "measurement's measured, predicted and residual value, and writes the\n"
            "calibrated cluster file. Nothing is written when the fit fails.\n"
            "\n"
            "  --cluster SPEC      the cluster to calibrate (preset or cluster.json)\n"
            "  --profile CSV       per-layer profile: module,layer,tokens,tp,forward_ms,\n"
            "                      backward_ms[,activation_bytes][,seq_len]\n"
            "  --model SPEC        the profiled model (preset or model.json)\n"
            "  --measured JSON     measured iterations: {\"iterations\": [{\"model\",\n"
            "                      \"parallel\", \"workload\" | \"generate\", \"iteration\",\n"
            "                      \"measured_ms\" and/or \"mfu\"}, ...]}\n"
            "  --manifest FILE     planner manifest pricing the measurements (default\n"
            "                      megatron-1f1b; its cost model must read the cluster)\n"
            "  --fit LIST          factors to fit (default the four efficiencies):\n"
            "                      eff_gemm, eff_attention, eff_memory,\n"
            "                      eff_collective, kernel_launch_us,\n"
            "                      attention_backward, gemm_half_flops,\n"
            "                      attention_half_flops, eff_optimizer;\n"
            "                      none: no fit, only\n"
            "                      the residuals of the cluster as given\n"
            "  --out FILE          write the calibrated cluster.json here\n"
            "  --table FILE        write a table cost file from the profile (plugins/table)\n"
            "  --max-residual PCT  largest root-mean-square residual accepted (default 10)\n"
            "  --json              print the result as JSON\n"
            "exit codes: 0 fitted, 1 the data contradict the model (residual too\n"
            "large), 2 usage or input error (too little data included)\n");
}

/* Options of one run. */
typedef struct calib_opts {
    const char *cluster, *model, *profile, *iterations, *manifest, *fit, *out, *table;
    double max_residual_pct;
    int json;
} calib_opts;

enum { OPT_CLUSTER = 0x100, OPT_MODEL, OPT_PROFILE, OPT_MEASURED, OPT_MANIFEST, OPT_FIT,
       OPT_OUT, OPT_TABLE, OPT_MAX_RESIDUAL, OPT_JSON };

static const loom_cli_option calibrate_options[] = {
    {"cluster", 1, OPT_CLUSTER},   {"model", 1, OPT_MODEL},     {"profile", 1, OPT_PROFILE},
    {"measured", 1, OPT_MEASURED}, {"manifest", 1, OPT_MANIFEST}, {"fit", 1, OPT_FIT},
    {"out", 1, OPT_OUT},           {"table", 1, OPT_TABLE},
    {"max-residual", 1, OPT_MAX_RESIDUAL}, {"json", 0, OPT_JSON},
    {NULL, 0, 0}};

/* One option of `loom calibrate` (loom_cli_spec.handle). */
static int calibrate_option(void *ctx, int key, const char *name, const char *s)
{
    calib_opts *o = ctx;
    const char **strs[] = {&o->cluster, &o->model, &o->profile, &o->iterations,
                           &o->manifest, &o->fit, &o->out, &o->table};
    if (key >= OPT_CLUSTER && key <= OPT_TABLE) {
        *strs[key - OPT_CLUSTER] = s;
        return 0;
    }
    switch (key) {
    case OPT_MAX_RESIDUAL: {
        double v = 0;
        if (loom_cli_number("calibrate", name, s, 0, 1000, &v))
            return -1;
        if (v <= 0) {
            loom_cli_error("calibrate", "--max-residual: expected a percentage in (0, 1000], "
                           "found '%s'", s);
            return -1;
        }
        o->max_residual_pct = v;
        return 0;
    }
    case OPT_JSON: o->json = 1; return 0;
    case LOOM_CLI_OPERAND:
        loom_cli_error("calibrate", "unexpected argument '%s'", s);
        return -1;
    default:
        return -1;
    }
}

/* Parses argv into *o; returns -1 to continue, else an exit code. */
static int parse_args(int argc, char **argv, calib_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_residual_pct = 10;
    loom_cli_spec spec = {"calibrate", calibrate_options, NULL, NULL, calibrate_option, o};
    int parsed = loom_cli_parse(&spec, argc, argv);
    if (parsed != 0) {
        usage(parsed > 0 ? loom_cli_out() : stderr);
        return parsed > 0 ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    }
    if (!o->cluster || (!o->profile && !o->iterations) || (o->profile && !o->model)) {
        fprintf(stderr, "loom calibrate: --cluster and --profile (with --model) and/or "
                        "--measured are required\n");
        usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    if (o->table && !o->profile) {
        fprintf(stderr, "loom calibrate: --table needs --profile (the table holds "
                        "per-layer measurements)\n");
        return LOOM_EXIT_USAGE;
    }
    return -1;
}

/* Fills set->fit from --fit (NULL: every factor that is not opt-in). */
static int choose_factors(loom_calib_set *set, const char *list, loom_error *err)
{
    int n = 0;
    const loom_calib_factor *all = loom_calib_factors(&n);
    if (!list) {
        for (int i = 0; i < n && set->n_fit < LOOM_CALIB_MAX_FACTORS; i++)
            if (!all[i].opt_in)
                set->fit[set->n_fit++] = &all[i];
        return LOOM_OK;
    }
    if (!strcmp(list, "none"))
        return LOOM_OK; /* prediction only: the residuals of the cluster as given */
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), p);
        const loom_calib_factor *f = loom_calib_factor_find(name);
        char known[512] = "";
        for (int i = 0; i < n; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                     all[i].name);
        if (!f)
            return loom_set_error(err, LOOM_EINVAL, "--fit: expected factors among %s, found "
                                  "\"%s\"", known, name);
        for (int j = 0; j < set->n_fit; j++)
            if (set->fit[j] == f)
                return loom_set_error(err, LOOM_EINVAL, "--fit: %s appears twice", name);
        if (set->n_fit == LOOM_CALIB_MAX_FACTORS)
            return loom_set_error(err, LOOM_EINVAL, "--fit: too many factors");
        set->fit[set->n_fit++] = f;
        p += len;
        if (*p == ',')
            p++;
    }
    if (!set->n_fit)
        return loom_set_error(err, LOOM_EINVAL, "--fit: expected at least one factor");
    return LOOM_OK;
}

/* Checks that the profile can become one table: one TP degree and one
 * sequence length per (module, layer, tokens). */
static int check_table(const loom_calib_set *set, loom_error *err)
{
    for (int i = 0; i < set->n_layers; i++)
        for (int j = 0; j < i; j++) {
            const loom_calib_layer *a = &set->layers[j], *b = &set->layers[i];
            if (a->module == b->module && a->layer == b->layer && a->tokens == b->tokens)
                return loom_set_error(err, LOOM_EINVAL,
                                      "--table: %s:%d and line %d measure the same layer and "
                                      "tokens at different tp or seq_len; a table cost file "
                                      "holds one of each (profile at the degree you plan with)",
                                      set->profile_path, b->line, a->line);
        }
    return LOOM_OK;
}

/* The root-mean-square of the rows' relative residuals, in %. */
static double rms_pct(const loom_calib_set *set)
{
    double s = 0;
    for (int i = 0; i < set->n_rows; i++) {
        double r = (set->rows[i].predicted - set->rows[i].measured) / set->rows[i].measured;
        s += r * r;
    }
    return set->n_rows ? 100.0 * sqrt(s / set->n_rows) : 0;
}

/* Prints the factors and the rows' residuals (people or JSON). */
static void print_result(FILE *out, const loom_calib_set *set, const double *start,
                         const double *x, int iterations, double rms, int json)
{
    if (json) {
        fprintf(out, "{\"iterations\": %d, \"rms_residual_pct\": %.6g, \"factors\": {",
                iterations, rms);
        for (int j = 0; j < set->n_fit; j++)
            fprintf(out, "%s\"%s\": {\"start\": %.9g, \"fitted\": %.9g}", j ? ", " : "",
                    set->fit[j]->name, start[j], x[j]);
        fprintf(out, "}, \"rows\": [");
        for (int i = 0; i < set->n_rows; i++) {
            const loom_calib_row *r = &set->rows[i];
            fprintf(out, "%s{\"row\": ", i ? ", " : "");
            loom_cli_json_string(out, r->where);
            fprintf(out, ", \"unit\": \"%s\", \"measured\": %.9g, \"predicted\": %.9g, "
                    "\"residual_pct\": %.6g}", r->is_mfu ? "mfu" : "ms", r->measured,
                    r->predicted, 100.0 * (r->predicted - r->measured) / r->measured);
        }
        fprintf(out, "]}\n");
        return;
    }
    fprintf(out, "factor            start     fitted\n");
    for (int j = 0; j < set->n_fit; j++)
        fprintf(out, "%-15s %8.4f %10.4f\n", set->fit[j]->name, start[j], x[j]);
    fprintf(out, "\n%14s %14s %10s  measurement\n", "measured", "predicted", "residual");
    for (int i = 0; i < set->n_rows; i++) {
        const loom_calib_row *r = &set->rows[i];
        double scale = r->is_mfu ? 100.0 : 1.0;
        fprintf(out, "%12.4f%s %12.4f%s %9.2f%%  %s\n", r->measured * scale,
                r->is_mfu ? " %" : "ms", r->predicted * scale, r->is_mfu ? " %" : "ms",
                100.0 * (r->predicted - r->measured) / r->measured, r->where);
    }
    fprintf(out, "\n%d measurements, %d factors, %d steps: rms residual %.2f %%\n",
            set->n_rows, set->n_fit, iterations, rms);
}

/* Sets the number at dotted `path` (e.g. "efficiency.gemm") of root,
 * creating the objects on the way; 0 when out of memory or a member on
 * the way is not an object. */
static int set_path(cJSON *root, const char *path, double v)
{
    cJSON *obj = root;
    char key[64];
    const char *p = path;
    for (const char *dot; (dot = strchr(p, '.')); p = dot + 1) {
        snprintf(key, sizeof key, "%.*s", (int)(dot - p), p);
        cJSON *next = cJSON_GetObjectItemCaseSensitive(obj, key);
        if (!next)
            next = cJSON_AddObjectToObject(obj, key);
        if (!cJSON_IsObject(next))
            return 0;
        obj = next;
    }
    cJSON *num = cJSON_CreateNumber(v);
    if (!num)
        return 0;
    if (cJSON_GetObjectItemCaseSensitive(obj, p)
            ? cJSON_ReplaceItemInObjectCaseSensitive(obj, p, num)
            : cJSON_AddItemToObject(obj, p, num))
        return 1;
    cJSON_Delete(num);
    return 0;
}

/* What the cluster writer needs. */
typedef struct cluster_out {
    const char *spec;
    const loom_cluster *c;
    const loom_calib_set *set;
} cluster_out;

/* Writes the calibrated cluster.json: the input file with its efficiency
 * factors replaced, or a preset spelled out. */
static int write_cluster(void *user, FILE *out, loom_error *err)
{
    const cluster_out *co = user;
    const loom_cluster *c = co->c;
    cJSON *root = NULL;
    const char *const *presets = loom_cluster_preset_names();
    int preset = 0;
    for (int i = 0; presets[i]; i++)
        preset |= loom_name_eq(presets[i], co->spec);
    if (!preset) {
        int rc = loom_json_load(co->spec, &root, err);
        if (rc != LOOM_OK)
            return rc;
    } else {
        root = cJSON_CreateObject();
        if (!root)
            return loom_set_error(err, LOOM_ENOMEM, "out of memory");
        cJSON_AddStringToObject(root, "name", c->name);
        cJSON_AddNumberToObject(root, "peak_flops", c->peak_flops);
        cJSON_AddNumberToObject(root, "hbm_bytes_per_s", c->hbm_bytes_per_s);
        cJSON_AddNumberToObject(root, "hbm_bytes", (double)c->hbm_bytes);
        cJSON_AddNumberToObject(root, "gpus_per_node", c->gpus_per_node);
        cJSON_AddNumberToObject(root, "nvlink_bytes_per_s", c->nvlink_bytes_per_s);
        cJSON_AddNumberToObject(root, "net_bytes_per_s", c->net_bytes_per_s);
        if (c->host_bytes_per_s > 0)
            cJSON_AddNumberToObject(root, "host_bytes_per_s", c->host_bytes_per_s);
        if (c->peak_flops_tf32 > 0)
            cJSON_AddNumberToObject(root, "peak_flops_tf32", c->peak_flops_tf32);
        if (c->peak_flops_fp32 > 0)
            cJSON_AddNumberToObject(root, "peak_flops_fp32", c->peak_flops_fp32);
        if (c->peak_flops_fp8 > 0)
            cJSON_AddNumberToObject(root, "peak_flops_fp8", c->peak_flops_fp8);
        cJSON_AddNumberToObject(root, "p2p_latency_ms", c->p2p_latency_ms);
    }
    int n = 0, ok = 1;
    const loom_calib_factor *all = loom_calib_factors(&n);
    for (int i = 0; ok && i < n; i++) {
        double v = loom_calib_factor_get(c, &all[i]);
        int fitted = 0;
        for (int j = 0; j < co->set->n_fit; j++)
            fitted |= co->set->fit[j] == &all[i];
        if (all[i].opt_in && !fitted && !(v > 0))
            continue; /* absent stays absent */
        ok = set_path(root, all[i].json_key, round(v * 1e6) / 1e6);
    }
    /* a spelled-out preset keeps its FlashAttention-2 factor (not fitted) */
    if (ok && preset && c->eff_attention_flash2 > 0)
        ok = set_path(root, "efficiency.attention_flash2", c->eff_attention_flash2);
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    fprintf(out, "%s\n", text);
    cJSON_free(text);
    return ferror(out) ? loom_set_error(err, LOOM_EIO, "cannot write") : LOOM_OK;
}

/* Reads, fits, checks and writes into the targets of --out and --table
 * (tgt[0], tgt[1], resolved before any plugin code ran); the exit code. */
static int run(const calib_opts *o, loom_out_target *const tgt[2], loom_calib_set *set,
               loom_cluster *work, loom_error *err)
{
    int rc = choose_factors(set, o->fit, err);
    if (rc == LOOM_OK && o->profile)
        rc = loom_calib_read_profile(set, o->profile, o->model, o->cluster, o->manifest, err);
    if (rc == LOOM_OK && o->iterations)
        rc = loom_calib_read_iterations(set, o->iterations, o->cluster, o->manifest, err);
    if (rc == LOOM_OK && o->table)
        rc = check_table(set, err);
    double start[LOOM_CALIB_MAX_FACTORS], x[LOOM_CALIB_MAX_FACTORS];
    double lo[LOOM_CALIB_MAX_FACTORS], hi[LOOM_CALIB_MAX_FACTORS];
    const char *names[LOOM_CALIB_MAX_FACTORS];
    for (int j = 0; j < set->n_fit; j++) {
        x[j] = start[j] = loom_calib_factor_get(work, set->fit[j]);
        lo[j] = set->fit[j]->lo;
        hi[j] = set->fit[j]->hi;
        names[j] = set->fit[j]->name;
    }
    if (rc == LOOM_OK)
        rc = loom_calib_residuals(set, x, NULL, err); /* lays out the rows */
    int steps = 0;
    if (rc == LOOM_OK && set->n_fit == 0 && (o->out || o->table))
        rc = loom_set_error(err, LOOM_EINVAL,
                            "--fit none: nothing is fitted, so there is no calibrated %s to write",
                            o->out ? "cluster (--out)" : "table (--table)");
    else if (rc == LOOM_OK && set->n_fit > 0) {
        loom_calib_problem p = {set->n_fit, set->n_rows, lo, hi, names,
                                loom_calib_residuals, set};
        rc = loom_calib_fit(&p, x, &steps, err);
    }
    if (rc != LOOM_OK)
        return loom_cli_exit_for_status(rc);
    double rms = rms_pct(set);
    print_result(loom_cli_out(), set, start, x, steps, rms, o->json);
    if (!(rms <= o->max_residual_pct)) {
        loom_set_error(err, LOOM_EINFEASIBLE,
                       "the measurements contradict each other or the cost model: rms "
                       "residual %.2f %% %s exceeds --max-residual %g %% (see the "
                       "rows above); nothing written", rms,
                       set->n_fit ? "after fitting" : "of the cluster as given",
                       o->max_residual_pct);
        return LOOM_EXIT_PLAN;
    }
    cluster_out co = {o->cluster, work, set};
    if (o->out && (rc = loom_out_target_write(tgt[0], write_cluster, &co, err)) != LOOM_OK)
        return loom_cli_exit_for_status(rc);
    if (o->table &&
        (rc = loom_out_target_write(tgt[1], loom_calib_write_table, set, err)) != LOOM_OK) {
        if (o->out)
            loom_out_target_remove(tgt[0]); /* both files or neither */
        return loom_cli_exit_for_status(rc);
    }
    return LOOM_EXIT_OK;
}

int loom_cmd_calibrate(int argc, char **argv)
{
    calib_opts o;
    int code = parse_args(argc, argv, &o);
    if (code >= 0)
        return code;
    loom_error err = {0, ""};
    loom_cluster_data *cd = NULL;
    int rc = loom_cluster_load(o.cluster, &cd, &err);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom calibrate: %s\n", err.message);
        return loom_cli_exit_for_status(rc);
    }
    loom_cluster work = *loom_cluster_data_cluster(cd);
    loom_calib_set set;
    memset(&set, 0, sizeof set);
    set.cluster = &work;
    loom_out_target *tgt[2] = {NULL, NULL};
    const char *paths[2] = {o.out, o.table};
    code = LOOM_EXIT_OK;
    for (int k = 0; k < 2 && code == LOOM_EXIT_OK; k++)
        if (paths[k] && (rc = loom_out_target_open(paths[k], &tgt[k], &err)) != LOOM_OK)
            code = loom_cli_exit_for_status(rc);
    if (code == LOOM_EXIT_OK)
        code = run(&o, tgt, &set, &work, &err);
    if (code != LOOM_EXIT_OK)
        fprintf(stderr, "loom calibrate: %s\n", err.message);
    loom_out_target_close(tgt[0]);
    loom_out_target_close(tgt[1]);
    loom_calib_set_free(&set);
    loom_cluster_data_free(cd);
    return code;
}
