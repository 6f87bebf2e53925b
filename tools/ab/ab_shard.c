/* ab_shard.c - sharded `loom ab` runs: the K/N selection, the shard report
 * (the JSON report of the shard's cases plus "shard" and "runs") and the
 * merge of shard reports into the whole suite's report. The merge rebuilds
 * every run output bit for bit (numbers print as the shortest decimal that
 * reads back exactly), so the writers of ab_report.c give the bytes of an
 * unsharded run. */
#define _DEFAULT_SOURCE
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ab_shard.h"
#include <loom/sys/json.h>
#include <loom/sys/output.h>

/* ---- selection -------------------------------------------------------------- */

int loom_ab_shard_parse(const char *text, int32_t *k, int32_t *n, loom_error *err)
{
    const char *t = text ? text : "";
    char *end = NULL;
    long kk = -1, nn = -1;
    if (*t >= '0' && *t <= '9') {
        kk = strtol(t, &end, 10);
        if (*end == '/' && end[1] >= '0' && end[1] <= '9')
            nn = strtol(end + 1, &end, 10);
        else
            nn = -1;
    }
    if (nn < 1 || !end || *end || kk < 1 || kk > nn || nn > LOOM_AB_MAX_CASES)
        return loom_set_error(err, LOOM_EINVAL,
                              "--shard: expected K/N with integers 1 <= K <= N <= %d (shard K "
                              "of N, e.g. 2/4), found '%s'",
                              LOOM_AB_MAX_CASES, t);
    *k = (int32_t)kk;
    *n = (int32_t)nn;
    return LOOM_OK;
}

int loom_ab_shard_selects(int32_t k, int32_t n, int32_t index)
{
    return n > 0 && index >= 0 && index % n == k - 1;
}

int32_t loom_ab_shard_index(int32_t k, int32_t n, int32_t j)
{
    return k - 1 + j * n;
}

/* Number of cases shard k of n runs in a suite of `total`. */
static int32_t shard_count(int32_t k, int32_t n, int32_t total)
{
    return k - 1 < total ? (total - k + n) / n : 0;
}

/* ---- options and digests ---------------------------------------------------- */

/* Appends " --flag value" (value NULL: the flag alone) to s->options. */
static void opt(loom_ab_shard *s, const char *flag, const char *value)
{
    size_t len = strlen(s->options), size = sizeof s->options;
    if (len + 1 >= size)
        return;
    snprintf(s->options + len, size - len, "%s%s%s%s", len ? " " : "", flag, value ? " " : "",
             value ? value : "");
}

/* "fnv1a:<hex>" of a file's bytes into buf. */
static int digest_file(const char *path, char *buf, size_t size, loom_error *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = loom_read_file(path, &text, &len, err);
    if (rc != LOOM_OK)
        return rc;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)text[i];
        h *= 0x100000001b3ull;
    }
    free(text);
    snprintf(buf, size, "fnv1a:%016llx", (unsigned long long)h);
    return LOOM_OK;
}

int loom_ab_shard_describe(loom_ab_shard *s, const loom_session_args *b,
                           const loom_isolate_opts *iso, const char *manifest_a,
                           const char *manifest_b, const char *suite, loom_error *err)
{
    char num[64];
    s->options[0] = 0;
    const char *const problem[][2] = {
        {"--model", b->model},       {"--cluster", b->cluster},
        {"--parallel", b->parallel}, {"--workload", b->workload},
        {"--generate", b->generate}, {"--stage-times", b->stage_times}};
    for (size_t i = 0; i < sizeof problem / sizeof problem[0]; i++)
        if (problem[i][1])
            opt(s, problem[i][0], problem[i][1]);
    if (b->iterations > 0) {
        snprintf(num, sizeof num, "%d", b->iterations);
        opt(s, "--iterations", num);
    }
    if (b->has_seed) {
        snprintf(num, sizeof num, "%llu", (unsigned long long)b->seed);
        opt(s, "--seed", num);
    }
    const struct { const char *flag; long long v; } batch[] = {
        {"--global-batch", (long long)b->global_batch},
        {"--micro-batch-size", (long long)b->micro_batch_size},
        {"--seq-len", (long long)b->seq_len}, {"--packing-window", (long long)b->packing_window}};
    for (size_t i = 0; i < sizeof batch / sizeof batch[0]; i++)
        if (batch[i].v > 0) {
            snprintf(num, sizeof num, "%lld", batch[i].v);
            opt(s, batch[i].flag, num);
        }
    if (b->memory_cap_bytes > 0) {
        snprintf(num, sizeof num, "%.17g", b->memory_cap_bytes);
        opt(s, "--memory-cap", num);
    }
    if (b->max_evaluations > 0) {
        snprintf(num, sizeof num, "%lld", (long long)b->max_evaluations);
        opt(s, "--evaluations", num);
    } else if (b->default_max_evaluations <= 0) {
        opt(s, "--wall-clock", NULL);
    }
    for (int i = 0; i < b->n_uses; i++)
        opt(s, "--use", b->uses[i]);
    for (int i = 0; i < b->n_params; i++)
        opt(s, "--param", b->params[i]);
    for (int i = 0; i < b->n_plugin_paths; i++)
        opt(s, "--plugin-path", b->plugin_paths[i]);
    if (b->allow_untrusted)
        opt(s, "--allow-untrusted-plugins", NULL);
    if (iso->timeout_given) {
        snprintf(num, sizeof num, "%.17g", iso->timeout_ms);
        opt(s, "--timeout-ms", num);
    }
    if (iso->memory_limit_mb != LOOM_ISOLATE_DEFAULT_MEMORY_MB) {
        snprintf(num, sizeof num, "%lld", (long long)iso->memory_limit_mb);
        opt(s, "--memory-limit-mb", num);
    }
    s->digest_suite[0] = 0;
    int rc = digest_file(manifest_a, s->digest_a, sizeof s->digest_a, err);
    if (rc == LOOM_OK)
        rc = digest_file(manifest_b, s->digest_b, sizeof s->digest_b, err);
    if (rc == LOOM_OK && suite)
        rc = digest_file(suite, s->digest_suite, sizeof s->digest_suite, err);
    return rc;
}

/* ---- writing ---------------------------------------------------------------- */

static const char *const phase_names[] = {"open", "iteration", "after"};

/* A failure with every field, or null. */
static void js_failure(FILE *out, const loom_failure *f)
{
    if (f->kind == LOOM_FAIL_NONE) {
        fputs("null", out);
        return;
    }
    fputs("{\"kind\": ", out);
    loom_ab_json_string(out, loom_fail_kind_name(f->kind));
    fprintf(out, ", \"status\": %d, \"signal\": %d, \"exit_code\": %d, \"limit_ms\": ", f->status,
            f->signal, f->exit_code);
    loom_ab_json_number(out, f->limit_ms);
    fprintf(out, ", \"limit_mb\": %lld, \"phase\": ", (long long)f->limit_mb);
    loom_ab_json_string(out, phase_names[f->phase >= 0 && f->phase <= 2 ? f->phase : 0]);
    fprintf(out, ", \"iteration\": %d, \"step\": %d, \"plugin\": ", f->iteration, f->step);
    loom_ab_json_string(out, f->plugin_id);
    fputs(", \"message\": ", out);
    loom_ab_json_string(out, f->message);
    fputc('}', out);
}

/* One side of a run: every result and the failure. */
static void js_run(FILE *out, const loom_run_output *o)
{
    fprintf(out, "{\"n_iterations\": %d, \"failure\": ", o->n_iterations);
    js_failure(out, &o->failure);
    fputs(", \"results\": [", out);
    for (int32_t i = 0; i < o->n_results; i++) {
        const loom_iter_result *x = &o->results[i];
        fprintf(out, "%s\n        {\"iteration\": %d, \"makespan_ms\": ", i ? "," : "",
                x->iteration);
        loom_ab_json_number(out, x->makespan_ms);
        fputs(", \"bubble_ratio\": ", out);
        loom_ab_json_number(out, x->bubble_ratio);
        fputs(", \"mfu\": ", out);
        loom_ab_json_number(out, x->mfu);
        fprintf(out, ", \"peak_bytes\": %lld, \"cap_violations\": %d, \"evaluations\": %lld, "
                     "\"ranks\": %d, \"plan_time_ms\": ",
                (long long)x->peak_bytes, x->cap_violations, (long long)x->evaluations, x->ranks);
        loom_ab_json_number(out, x->plan_time_ms);
        fputc('}', out);
    }
    fputs(o->n_results ? "\n      ]}" : "]}", out);
}

/* The members after the report's "summary": "shard" and "runs". */
static void js_extension(FILE *out, const loom_ab_report *r, const loom_ab_shard *s)
{
    fprintf(out, ",\n  \"shard\": {\"k\": %d, \"n\": %d, \"suite_cases\": %d, \"cases\": [", s->k,
            s->n, s->suite_cases);
    for (int32_t j = 0; j < r->n_cases; j++)
        fprintf(out, "%s%d", j ? ", " : "", loom_ab_shard_index(s->k, s->n, j));
    fputs("],\n            \"memory_threshold\": ", out);
    loom_ab_json_number(out, r->memory_threshold);
    fprintf(out, ", \"timings\": %s, \"options\": ", r->timings ? "true" : "false");
    loom_ab_json_string(out, s->options);
    fputs(",\n            \"digests\": {\"a\": ", out);
    loom_ab_json_string(out, s->digest_a);
    fputs(", \"b\": ", out);
    loom_ab_json_string(out, s->digest_b);
    fputs(", \"suite\": ", out);
    if (s->digest_suite[0])
        loom_ab_json_string(out, s->digest_suite);
    else
        fputs("null", out);
    fputs("}},\n  \"runs\": [", out);
    for (int32_t j = 0; j < r->n_cases; j++) {
        const loom_ab_case_result *c = &r->cases[j];
        fprintf(out, "%s\n    {\"index\": %d, \"name\": ", j ? "," : "",
                loom_ab_shard_index(s->k, s->n, j));
        loom_ab_json_string(out, c->name);
        fputs(", \"problem\": ", out);
        loom_ab_json_string(out, c->problem);
        fputs(",\n     \"a\": ", out);
        js_run(out, &c->a);
        fputs(",\n     \"b\": ", out);
        js_run(out, &c->b);
        fputc('}', out);
    }
    fputs(r->n_cases ? "\n  ]\n}\n" : "]\n}\n", out);
}

int loom_ab_write_shard_json(const loom_ab_report *r, const loom_ab_shard *s, FILE *out,
                             loom_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return loom_set_error(err, LOOM_ENOMEM, "ab shard report: out of memory");
    int rc = loom_ab_write_json(r, mem, err);
    if (fclose(mem) != 0 && rc == LOOM_OK)
        rc = loom_set_error(err, LOOM_ENOMEM, "ab shard report: out of memory");
    /* the report ends with the summary and "\n}\n": the shard's members
     * go before that closing brace */
    if (rc == LOOM_OK && (len < 3 || strcmp(buf + len - 3, "\n}\n") != 0))
        rc = loom_set_error(err, LOOM_EIO, "ab shard report: unexpected end of the JSON report");
    if (rc != LOOM_OK) {
        free(buf);
        return rc;
    }
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c) {
        free(buf);
        return loom_set_error(err, LOOM_ENOMEM, "ab shard report: cannot create the C locale");
    }
    locale_t saved = uselocale(c);
    fwrite(buf, 1, len - 3, out);
    js_extension(out, r, s);
    uselocale(saved);
    freelocale(c);
    free(buf);
    if (ferror(out))
        return loom_set_error(err, LOOM_EIO, "ab report: writing the JSON shard report failed");
    return LOOM_OK;
}

/* What loom_write_atomic passes to the shard writer. */
typedef struct shard_job {
    const loom_ab_report *r;
    const loom_ab_shard *s;
} shard_job;

/* The shard writer in the shape loom_write_atomic calls. */
static int write_job(void *ctx, FILE *out, loom_error *err)
{
    const shard_job *j = ctx;
    return loom_ab_write_shard_json(j->r, j->s, out, err);
}

int loom_ab_write_shard_file(const char *path, const loom_ab_report *r, const loom_ab_shard *s,
                             loom_error *err)
{
    shard_job j = {r, s};
    return loom_write_atomic(path, write_job, &j, err);
}

/* ---- reading ------------------------------------------------------------------ */

struct loom_ab_merge {
    cJSON **docs;
    int n_docs;
    loom_ab_case_result *cases;
    int32_t n_cases;
    loom_ab_report report;
};

/* Reads a number member that may be null (NAN). */
static int get_number(const char *file, const cJSON *obj, const char *path, const char *key,
                      double *out, loom_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsNull(it)) {
        *out = NAN;
        return LOOM_OK;
    }
    return loom_json_get_double(file, obj, path, key, 1, -HUGE_VAL, HUGE_VAL, out, err);
}

/* Reads an int member into an int32_t. */
static int get_i32(const char *file, const cJSON *obj, const char *path, const char *key,
                   int64_t min, int64_t max, int32_t *out, loom_error *err)
{
    int64_t v = 0;
    int rc = loom_json_get_int(file, obj, path, key, 1, min, max, &v, err);
    if (rc == LOOM_OK)
        *out = (int32_t)v;
    return rc;
}

/* Copies a required string member into buf (at most size - 1 bytes). */
static int get_text(const char *file, const cJSON *obj, const char *path, const char *key,
                    char *buf, size_t size, loom_error *err)
{
    const char *v = NULL;
    int rc = loom_json_get_string(file, obj, path, key, 1, &v, err);
    if (rc != LOOM_OK)
        return rc;
    if (strlen(v) >= size) {
        char where[256];
        loom_json_path_key(where, sizeof where, path, key);
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected at most %zu bytes, found %zu",
                              file, where, size - 1, strlen(v));
    }
    snprintf(buf, size, "%s", v);
    return LOOM_OK;
}

/* Reads a failure object (null: none) at path. */
static int read_failure(const char *file, const cJSON *obj, const char *path, loom_failure *f,
                        loom_error *err)
{
    memset(f, 0, sizeof *f);
    f->iteration = -1;
    f->step = -1;
    if (cJSON_IsNull(obj))
        return LOOM_OK;
    if (!cJSON_IsObject(obj))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected a failure object or null, "
                              "found %s", file, path, loom_json_type_name(obj));
    static const char *const keys[] = {"kind",  "status", "signal", "exit_code",
                                       "limit_ms", "limit_mb", "phase", "iteration",
                                       "step",  "plugin", "message", NULL};
    int rc = loom_json_check_keys(file, obj, path, keys, err);
    const char *kind = NULL, *phase = NULL;
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, obj, path, "kind", 1, &kind, err);
    if (rc == LOOM_OK) {
        f->kind = -1;
        for (int k = LOOM_FAIL_STATUS; k <= LOOM_FAIL_EXIT; k++)
            if (!strcmp(kind, loom_fail_kind_name(k)))
                f->kind = k;
        if (f->kind < 0) {
            char where[256];
            loom_json_path_key(where, sizeof where, path, "kind");
            rc = loom_set_error(err, LOOM_EINVAL, "%s: %s: expected one of status, signal, "
                                "timeout, memory, garbage, exit, found \"%s\"", file, where,
                                kind);
        }
    }
    if (rc == LOOM_OK)
        rc = get_i32(file, obj, path, "status", -1000, 1000, &f->status, err);
    if (rc == LOOM_OK)
        rc = get_i32(file, obj, path, "signal", 0, 1000, &f->signal, err);
    if (rc == LOOM_OK)
        rc = get_i32(file, obj, path, "exit_code", -1000, 1000, &f->exit_code, err);
    if (rc == LOOM_OK)
        rc = get_number(file, obj, path, "limit_ms", &f->limit_ms, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_int(file, obj, path, "limit_mb", 1, 0, INT64_MAX, &f->limit_mb, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, obj, path, "phase", 1, &phase, err);
    if (rc == LOOM_OK) {
        f->phase = -1;
        for (int p = 0; p < 3; p++)
            if (!strcmp(phase, phase_names[p]))
                f->phase = p;
        if (f->phase < 0) {
            char where[256];
            loom_json_path_key(where, sizeof where, path, "phase");
            rc = loom_set_error(err, LOOM_EINVAL, "%s: %s: expected one of open, iteration, "
                                "after, found \"%s\"", file, where, phase);
        }
    }
    if (rc == LOOM_OK)
        rc = get_i32(file, obj, path, "iteration", -1, INT32_MAX, &f->iteration, err);
    if (rc == LOOM_OK)
        rc = get_i32(file, obj, path, "step", -1, INT32_MAX, &f->step, err);
    if (rc == LOOM_OK)
        rc = get_text(file, obj, path, "plugin", f->plugin_id, sizeof f->plugin_id, err);
    if (rc == LOOM_OK)
        rc = get_text(file, obj, path, "message", f->message, sizeof f->message, err);
    return rc;
}

/* Reads one planned iteration at path. */
static int read_result(const char *file, const cJSON *obj, const char *path, loom_iter_result *x,
                       loom_error *err)
{
    static const char *const keys[] = {"iteration",   "makespan_ms",    "bubble_ratio",
                                       "mfu",         "peak_bytes",     "cap_violations",
                                       "evaluations", "ranks",          "plan_time_ms",
                                       NULL};
    if (!cJSON_IsObject(obj))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected an object, found %s", file,
                              path, loom_json_type_name(obj));
    memset(x, 0, sizeof *x);
    int rc = loom_json_check_keys(file, obj, path, keys, err);
    if (rc == LOOM_OK)
        rc = get_i32(file, obj, path, "iteration", 0, INT32_MAX, &x->iteration, err);
    if (rc == LOOM_OK)
        rc = get_number(file, obj, path, "makespan_ms", &x->makespan_ms, err);
    if (rc == LOOM_OK)
        rc = get_number(file, obj, path, "bubble_ratio", &x->bubble_ratio, err);
    if (rc == LOOM_OK)
        rc = get_number(file, obj, path, "mfu", &x->mfu, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_int(file, obj, path, "peak_bytes", 1, INT64_MIN, INT64_MAX,
                               &x->peak_bytes, err);
    if (rc == LOOM_OK)
        rc = get_i32(file, obj, path, "cap_violations", 0, INT32_MAX, &x->cap_violations, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_int(file, obj, path, "evaluations", 1, INT64_MIN, INT64_MAX,
                               &x->evaluations, err);
    if (rc == LOOM_OK)
        rc = get_i32(file, obj, path, "ranks", 0, INT32_MAX, &x->ranks, err);
    if (rc == LOOM_OK)
        rc = get_number(file, obj, path, "plan_time_ms", &x->plan_time_ms, err);
    return rc;
}

/* Reads one side of a run (runs[j].a or .b) into *o. */
static int read_run(const char *file, const cJSON *run, const char *run_path, const char *side,
                    loom_run_output *o, loom_error *err)
{
    char path[256], at[256];
    const cJSON *obj = NULL, *results = NULL;
    memset(o, 0, sizeof *o);
    int rc = loom_json_get_object(file, run, run_path, side, 1, &obj, err);
    if (rc != LOOM_OK)
        return rc;
    loom_json_path_key(path, sizeof path, run_path, side);
    static const char *const keys[] = {"n_iterations", "failure", "results", NULL};
    rc = loom_json_check_keys(file, obj, path, keys, err);
    if (rc == LOOM_OK)
        rc = get_i32(file, obj, path, "n_iterations", 0, INT32_MAX, &o->n_iterations, err);
    if (rc == LOOM_OK) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, "failure");
        loom_json_path_key(at, sizeof at, path, "failure");
        if (!f)
            rc = loom_set_error(err, LOOM_EINVAL, "%s: %s: expected a failure object or null, "
                                "found nothing", file, at);
        else
            rc = read_failure(file, f, at, &o->failure, err);
    }
    if (rc == LOOM_OK)
        rc = loom_json_get_array(file, obj, path, "results", 1, &results, err);
    if (rc != LOOM_OK)
        return rc;
    int n = cJSON_GetArraySize(results);
    o->results = calloc((size_t)(n > 0 ? n : 1), sizeof *o->results);
    if (!o->results)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    loom_json_path_key(at, sizeof at, path, "results");
    for (int i = 0; i < n && rc == LOOM_OK; i++) {
        char item[256];
        loom_json_path_index(item, sizeof item, at, i);
        rc = read_result(file, cJSON_GetArrayItem(results, i), item, &o->results[i], err);
        if (rc == LOOM_OK && i > 0 && o->results[i].iteration <= o->results[i - 1].iteration) {
            char where[256];
            loom_json_path_key(where, sizeof where, item, "iteration");
            rc = loom_set_error(err, LOOM_EINVAL, "%s: %s: expected an iteration after %d (results "
                                "are in iteration order), found %d", file, where,
                                o->results[i - 1].iteration, o->results[i].iteration);
        }
        o->n_results = i + 1;
    }
    return rc;
}

/* The header of one shard report: what must agree between shards. */
typedef struct shard_head {
    const char *file;
    const char *manifest_a, *manifest_b, *name_a, *name_b;
    const char *suite; /* NULL: null */
    double threshold, memory_threshold;
    int32_t resamples;
    int timings;
    int32_t k, n, suite_cases;
    const char *options, *digest_a, *digest_b, *digest_suite; /* digest_suite NULL: null */
    const cJSON *runs;
} shard_head;

/* Reads a string member that may be null (NULL). */
static int get_string_or_null(const char *file, const cJSON *obj, const char *path,
                              const char *key, const char **out, loom_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (cJSON_IsNull(it))
        return LOOM_OK;
    return loom_json_get_string(file, obj, path, key, 1, out, err);
}

/* Reads the header of shard report `doc` (file `file`). */
static int read_head(const char *file, const cJSON *doc, shard_head *h, loom_error *err)
{
    memset(h, 0, sizeof *h);
    h->file = file;
    if (!cJSON_IsObject(doc))
        return loom_set_error(err, LOOM_EINVAL, "%s: expected a loom ab shard report (an "
                              "object), found %s", file, loom_json_type_name(doc));
    int64_t version = 0;
    const cJSON *a = NULL, *b = NULL, *shard = NULL, *digests = NULL;
    int rc = loom_json_get_int(file, doc, "", "loom_ab", 1, 1, 1, &version, err);
    if (rc != LOOM_OK)
        return rc;
    if (!cJSON_GetObjectItemCaseSensitive(doc, "shard"))
        return loom_set_error(err, LOOM_EINVAL, "%s: shard: expected the report of a sharded run "
                              "(loom ab --shard K/N --json FILE), found a report without "
                              "\"shard\"", file);
    rc = loom_json_get_object(file, doc, "", "a", 1, &a, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_object(file, doc, "", "b", 1, &b, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, a, "a", "manifest", 1, &h->manifest_a, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, a, "a", "name", 1, &h->name_a, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, b, "b", "manifest", 1, &h->manifest_b, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, b, "b", "name", 1, &h->name_b, err);
    if (rc == LOOM_OK)
        rc = get_string_or_null(file, doc, "", "suite", &h->suite, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_double(file, doc, "", "threshold", 1, 0, 0.99, &h->threshold, err);
    if (rc == LOOM_OK)
        rc = get_i32(file, doc, "", "resamples", 1, 100000000, &h->resamples, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_object(file, doc, "", "shard", 1, &shard, err);
    if (rc == LOOM_OK)
        rc = get_i32(file, shard, "shard", "n", 1, LOOM_AB_MAX_CASES, &h->n, err);
    if (rc == LOOM_OK)
        rc = get_i32(file, shard, "shard", "k", 1, h->n, &h->k, err);
    if (rc == LOOM_OK)
        rc = get_i32(file, shard, "shard", "suite_cases", 1, LOOM_AB_MAX_CASES, &h->suite_cases,
                     err);
    if (rc == LOOM_OK)
        rc = loom_json_get_double(file, shard, "shard", "memory_threshold", 1, -1, 10,
                                  &h->memory_threshold, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_bool(file, shard, "shard", "timings", 1, &h->timings, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, shard, "shard", "options", 1, &h->options, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_object(file, shard, "shard", "digests", 1, &digests, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, digests, "shard.digests", "a", 1, &h->digest_a, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, digests, "shard.digests", "b", 1, &h->digest_b, err);
    if (rc == LOOM_OK)
        rc = get_string_or_null(file, digests, "shard.digests", "suite", &h->digest_suite, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_array(file, doc, "", "runs", 1, &h->runs, err);
    return rc;
}

/* 1 when two optional strings are equal (both NULL counts). */
static int same_str(const char *x, const char *y)
{
    return (!x && !y) || (x && y && !strcmp(x, y));
}

/* Compares one string field of h with the first report's. */
static int agree_str(const shard_head *first, const shard_head *h, const char *path,
                     const char *want, const char *found, loom_error *err)
{
    if (same_str(want, found))
        return LOOM_OK;
    return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected %s%s%s as in %s (shards of one "
                          "run), found %s%s%s", h->file, path, want ? "\"" : "",
                          want ? want : "null", want ? "\"" : "", first->file,
                          found ? "\"" : "", found ? found : "null", found ? "\"" : "");
}

/* Compares one number field of h with the first report's. */
static int agree_num(const shard_head *first, const shard_head *h, const char *path, double want,
                     double found, loom_error *err)
{
    if (want == found)
        return LOOM_OK;
    char w[40], f[40];
    snprintf(w, sizeof w, "%.15g", want);
    if (strtod(w, NULL) != want)
        snprintf(w, sizeof w, "%.17g", want);
    snprintf(f, sizeof f, "%.15g", found);
    if (strtod(f, NULL) != found)
        snprintf(f, sizeof f, "%.17g", found);
    return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected %s as in %s (shards of one "
                          "run), found %s", h->file, path, w, first->file, f);
}

/* Checks that h describes the same run as the first report. */
static int agree(const shard_head *f, const shard_head *h, loom_error *err)
{
    int rc = agree_str(f, h, "a.manifest", f->manifest_a, h->manifest_a, err);
    if (rc == LOOM_OK)
        rc = agree_str(f, h, "a.name", f->name_a, h->name_a, err);
    if (rc == LOOM_OK)
        rc = agree_str(f, h, "shard.digests.a", f->digest_a, h->digest_a, err);
    if (rc == LOOM_OK)
        rc = agree_str(f, h, "b.manifest", f->manifest_b, h->manifest_b, err);
    if (rc == LOOM_OK)
        rc = agree_str(f, h, "b.name", f->name_b, h->name_b, err);
    if (rc == LOOM_OK)
        rc = agree_str(f, h, "shard.digests.b", f->digest_b, h->digest_b, err);
    if (rc == LOOM_OK)
        rc = agree_str(f, h, "suite", f->suite, h->suite, err);
    if (rc == LOOM_OK)
        rc = agree_str(f, h, "shard.digests.suite", f->digest_suite, h->digest_suite, err);
    if (rc == LOOM_OK)
        rc = agree_num(f, h, "shard.suite_cases", f->suite_cases, h->suite_cases, err);
    if (rc == LOOM_OK)
        rc = agree_num(f, h, "shard.n", f->n, h->n, err);
    if (rc == LOOM_OK)
        rc = agree_num(f, h, "threshold", f->threshold, h->threshold, err);
    if (rc == LOOM_OK)
        rc = agree_num(f, h, "shard.memory_threshold", f->memory_threshold, h->memory_threshold,
                       err);
    if (rc == LOOM_OK)
        rc = agree_num(f, h, "resamples", f->resamples, h->resamples, err);
    if (rc == LOOM_OK && f->timings != h->timings)
        rc = loom_set_error(err, LOOM_EINVAL, "%s: shard.timings: expected %s as in %s (shards "
                            "of one run), found %s", h->file, f->timings ? "true" : "false",
                            f->file, h->timings ? "true" : "false");
    if (rc == LOOM_OK)
        rc = agree_str(f, h, "shard.options", f->options, h->options, err);
    return rc;
}

/* Reads the runs of shard h into m->cases at their suite indexes. */
static int read_runs(loom_ab_merge *m, const shard_head *h, loom_error *err)
{
    int32_t want = shard_count(h->k, h->n, h->suite_cases);
    int found = cJSON_GetArraySize(h->runs);
    if (found != want)
        return loom_set_error(err, LOOM_EINVAL, "%s: runs: expected %d case%s (shard %d/%d of a "
                              "%d-case suite: the cases whose index i has i %% %d == %d), "
                              "found %d", h->file, want, want == 1 ? "" : "s", h->k, h->n,
                              h->suite_cases, h->n, h->k - 1, found);
    static const char *const keys[] = {"index", "name", "problem", "a", "b", NULL};
    for (int32_t j = 0; j < want; j++) {
        const cJSON *run = cJSON_GetArrayItem(h->runs, j);
        char path[64];
        loom_json_path_index(path, sizeof path, "runs", j);
        if (!cJSON_IsObject(run))
            return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected an object, found %s",
                                  h->file, path, loom_json_type_name(run));
        int32_t index = -1, expected = loom_ab_shard_index(h->k, h->n, j);
        int rc = loom_json_check_keys(h->file, run, path, keys, err);
        if (rc == LOOM_OK)
            rc = get_i32(h->file, run, path, "index", 0, INT32_MAX, &index, err);
        if (rc != LOOM_OK)
            return rc;
        if (index != expected)
            return loom_set_error(err, LOOM_EINVAL, "%s: %s.index: expected %d (case %d of "
                                  "shard %d/%d), found %d", h->file, path, expected, j, h->k,
                                  h->n, index);
        loom_ab_case_result *c = &m->cases[index];
        rc = loom_json_get_string(h->file, run, path, "name", 1, &c->name, err);
        if (rc == LOOM_OK)
            rc = loom_json_get_string(h->file, run, path, "problem", 1, &c->problem, err);
        if (rc == LOOM_OK)
            rc = read_run(h->file, run, path, "a", &c->a, err);
        if (rc == LOOM_OK)
            rc = read_run(h->file, run, path, "b", &c->b, err);
        if (rc != LOOM_OK)
            return rc;
    }
    return LOOM_OK;
}

/* Checks that case names are unique over the merged suite. */
static int unique_names(const loom_ab_merge *m, const shard_head *heads, const int *owner,
                        loom_error *err)
{
    for (int32_t i = 0; i < m->n_cases; i++)
        for (int32_t j = 0; j < i; j++)
            if (!strcmp(m->cases[i].name, m->cases[j].name)) {
                const shard_head *hi = &heads[owner[i % heads[0].n]];
                const shard_head *hj = &heads[owner[j % heads[0].n]];
                return loom_set_error(err, LOOM_EINVAL, "%s: runs[%d].name: expected a case name "
                                      "not used before in the suite, found \"%s\" (also %s "
                                      "runs[%d].name)", hi->file, i / hi->n, m->cases[i].name,
                                      hj->file, j / hj->n);
            }
    return LOOM_OK;
}

/* Checks every shard 1..N is given exactly once; owner[k - 1] = its file. */
static int every_shard_once(const shard_head *heads, int n_heads, int *owner, loom_error *err)
{
    int32_t n = heads[0].n;
    for (int32_t k = 0; k < n; k++)
        owner[k] = -1;
    for (int i = 0; i < n_heads; i++) {
        int32_t k = heads[i].k;
        if (owner[k - 1] >= 0)
            return loom_set_error(err, LOOM_EINVAL, "%s: shard.k: expected each shard of %d once, "
                                  "found shard %d/%d again (also in %s)", heads[i].file, n, k, n,
                                  heads[owner[k - 1]].file);
        owner[k - 1] = i;
    }
    for (int32_t k = 0; k < n; k++)
        if (owner[k] < 0) {
            char given[512];
            size_t len = 0;
            given[0] = 0;
            for (int i = 0; i < n_heads && len + 1 < sizeof given; i++)
                len += (size_t)snprintf(given + len, sizeof given - len, "%s%d/%d (%s)",
                                        i ? ", " : "", heads[i].k, n, heads[i].file);
            return loom_set_error(err, LOOM_EINVAL, "missing shard %d/%d: expected every shard "
                                  "1..%d once, found %s", k + 1, n, n, given);
        }
    return LOOM_OK;
}

/* Loads and parses every file into m->docs and heads. */
static int load_heads(loom_ab_merge *m, const char *const *paths, int n_paths,
                      shard_head *heads, loom_error *err)
{
    for (int i = 0; i < n_paths; i++) {
        int rc = loom_json_load(paths[i], &m->docs[i], err);
        if (rc != LOOM_OK)
            return rc;
        m->n_docs = i + 1;
        rc = read_head(paths[i], m->docs[i], &heads[i], err);
        if (rc == LOOM_OK && i > 0)
            rc = agree(&heads[0], &heads[i], err);
        if (rc != LOOM_OK)
            return rc;
    }
    return LOOM_OK;
}

/* Rebuilds and evaluates the cases once the heads agree. */
static int rebuild(loom_ab_merge *m, const shard_head *heads, int n_heads, loom_error *err)
{
    const shard_head *f = &heads[0];
    int *owner = malloc((size_t)f->n * sizeof *owner);
    m->n_cases = f->suite_cases;
    m->cases = calloc((size_t)m->n_cases, sizeof *m->cases);
    if (!owner || !m->cases) {
        free(owner);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    int rc = every_shard_once(heads, n_heads, owner, err);
    for (int i = 0; i < n_heads && rc == LOOM_OK; i++)
        rc = read_runs(m, &heads[i], err);
    if (rc == LOOM_OK)
        rc = unique_names(m, heads, owner, err);
    for (int32_t i = 0; i < m->n_cases && rc == LOOM_OK; i++) {
        loom_ab_case_result *c = &m->cases[i];
        rc = loom_ab_evaluate(c, f->threshold, f->resamples, err);
        if (rc != LOOM_OK) {
            char msg[LOOM_ERROR_MSG_BYTES];
            snprintf(msg, sizeof msg, "%s", err->message);
            const shard_head *h = &heads[owner[i % f->n]];
            rc = loom_set_error(err, rc, "%s: runs[%d] (case %s): %s", h->file, i / f->n,
                                c->name, msg);
            break;
        }
        loom_ab_judge_memory(c, f->memory_threshold);
    }
    free(owner);
    if (rc != LOOM_OK)
        return rc;
    loom_ab_report *r = &m->report;
    r->manifest_a = f->manifest_a;
    r->manifest_b = f->manifest_b;
    r->name_a = f->name_a;
    r->name_b = f->name_b;
    r->suite = f->suite;
    r->threshold = f->threshold;
    r->memory_threshold = f->memory_threshold;
    r->resamples = f->resamples;
    r->timings = f->timings;
    r->cases = m->cases;
    r->n_cases = m->n_cases;
    return LOOM_OK;
}

int loom_ab_merge_load(const char *const *paths, int n_paths, loom_ab_merge **out,
                       loom_error *err)
{
    *out = NULL;
    if (n_paths < 1)
        return loom_set_error(err, LOOM_EINVAL, "merge: expected shard reports, found none");
    loom_ab_merge *m = calloc(1, sizeof *m);
    shard_head *heads = calloc((size_t)n_paths, sizeof *heads);
    if (m)
        m->docs = calloc((size_t)n_paths, sizeof *m->docs);
    if (!m || !heads || !m->docs) {
        free(heads);
        loom_ab_merge_free(m);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    int rc = load_heads(m, paths, n_paths, heads, err);
    if (rc == LOOM_OK)
        rc = rebuild(m, heads, n_paths, err);
    free(heads);
    if (rc != LOOM_OK) {
        loom_ab_merge_free(m);
        return rc;
    }
    *out = m;
    return LOOM_OK;
}

const loom_ab_report *loom_ab_merge_report(const loom_ab_merge *m)
{
    return &m->report;
}

void loom_ab_merge_free(loom_ab_merge *m)
{
    if (!m)
        return;
    for (int32_t i = 0; i < m->n_cases; i++)
        loom_ab_case_result_clear(&m->cases[i]);
    free(m->cases);
    for (int i = 0; i < m->n_docs; i++)
        cJSON_Delete(m->docs[i]);
    free(m->docs);
    free(m);
}
