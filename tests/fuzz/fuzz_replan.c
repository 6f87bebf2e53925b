/* fuzz_replan.c - libFuzzer harness for the `loom replan` job file
 * (core/run/replan_job.c: loom_oobleck_job_replan, and loom_replan_json of
 * the C API). An optional first line "#failed=ID,ID,... [full]" names the
 * failed nodes; the rest is the job. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "fuzz_input.h"
#include <loom/algorithms/oobleck.h>
#include <loom/api.h>
#include <loom/sys/replan.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FAILED 16

/* Reads the "#failed=..." line at the start of text; returns the job text
 * after it (or text itself when there is none). */
static const char *read_header(const char *text, int32_t *failed, int32_t *n_failed, int *full)
{
    *n_failed = 0;
    *full = 0;
    if (text[0] != '#')
        return text;
    const char *nl = strchr(text, '\n');
    const char *end = nl ? nl : text + strlen(text);
    const char *p = strstr(text, "failed=");
    if (p && p < end) {
        p += 7;
        while (p < end && *n_failed < MAX_FAILED && *p >= '0' && *p <= '9') {
            long v = 0;
            while (p < end && *p >= '0' && *p <= '9' && v < 100000)
                v = v * 10 + (*p++ - '0');
            failed[(*n_failed)++] = (int32_t)v;
            while (p < end && (*p < '0' || *p > '9') && *p != ' ')
                p++;
        }
    }
    for (const char *q = text; q + 4 <= end; q++)
        if (!strncmp(q, "full", 4))
            *full = 1;
    return nl ? nl + 1 : end;
}

/* An integer member of obj, or `dflt`. */
static double num(const cJSON *obj, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* 1 when the job would take more than a moment although within Loom's
 * bounds (the bounds allow seconds of planning; fuzzing wants thousands of
 * inputs per second), judged from the same figures the bounds use. */
static int too_slow(const char *job)
{
    cJSON *root = cJSON_Parse(job);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return 0;
    }
    double nodes = num(root, "nodes", 1), gpus = num(root, "gpus_per_node", 1);
    double f = num(root, "fault_tolerance", 1), n0 = num(root, "min_nodes", 1);
    double mb = num(root, "microbatches", 1), max_stages = num(root, "max_stages", 0);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    double n_layers = cJSON_IsArray(layers) ? cJSON_GetArraySize(layers)
                      : num(layers, "count", 1);
    cJSON_Delete(root);
    if (!(nodes >= 1 && nodes <= LOOM_OOBLECK_MAX_NODES && gpus >= 1 && gpus <= 64 &&
          n_layers >= 1 && n_layers <= LOOM_OOBLECK_MAX_LAYERS && n0 >= 1 && f >= 0 &&
          max_stages >= 0 && max_stages <= LOOM_OOBLECK_MAX_LAYERS && mb >= 1 && mb <= 1e6))
        return 0; /* refused by the parser */
    double last = nodes - f * n0; /* NaN when f is 0 and n0 infinite */
    if (!(last >= n0))
        return 0;
    if (loom_oobleck_work((int32_t)n_layers, (int32_t)gpus, (int32_t)last,
                          (int32_t)max_stages) > 2000000)
        return 1;
    int32_t sizes[LOOM_OOBLECK_MAX_NODES];
    int32_t n_sizes = 0;
    for (double s = n0; s <= last && n_sizes < LOOM_OOBLECK_MAX_NODES; s++)
        sizes[n_sizes++] = (int32_t)s;
    double plans = (double)loom_oobleck_plan_count(sizes, n_sizes, (int32_t)nodes);
    return plans * n_sizes * mb > 2000000;
}

/* Fails unless every number in the tree is finite. */
static void check_finite(const cJSON *item)
{
    if (cJSON_IsNumber(item) && !isfinite(item->valuedouble))
        loom_fuzz_fail("replan report holds a number that is not finite");
    for (const cJSON *c = item->child; c; c = c->next)
        check_finite(c);
}

/* Fails when a failed node is in a pipeline after the repair or a node is
 * in two pipelines. */
static void check_after(const cJSON *report, const int32_t *failed, int32_t n_failed)
{
    const cJSON *after = cJSON_GetObjectItemCaseSensitive(report, "after");
    const cJSON *pipes = cJSON_GetObjectItemCaseSensitive(after, "pipelines");
    static unsigned char seen[LOOM_OOBLECK_MAX_NODES];
    memset(seen, 0, sizeof seen);
    const cJSON *p;
    cJSON_ArrayForEach(p, pipes) {
        const cJSON *id;
        cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(p, "nodes")) {
            int v = id->valueint;
            if (v < 0 || v >= LOOM_OOBLECK_MAX_NODES || seen[v]++)
                loom_fuzz_fail("a node is in two pipelines after the repair");
            for (int32_t k = 0; k < n_failed; k++)
                if (failed[k] == v)
                    loom_fuzz_fail("a failed node is in a pipeline after the repair");
        }
    }
}

/* libFuzzer entry: never fails on bad input, only on a crash, a leak or a
 * broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = loom_fuzz_strdup(data, size);
    if (!text)
        return 0;
    int32_t failed[MAX_FAILED], n_failed = 0;
    int full = 0;
    const char *job = read_header(text, failed, &n_failed, &full);
    if (too_slow(job)) {
        free(text);
        return 0;
    }
    cJSON *report = NULL;
    loom_error err = {0, ""};
    int rc = loom_oobleck_job_replan("job.json", job, failed, n_failed, full, &report, &err);
    if (rc == LOOM_OK) {
        if (!cJSON_IsObject(report))
            loom_fuzz_fail("replan succeeded without a report");
        check_finite(report);
        if (n_failed > 0)
            check_after(report, failed, n_failed);
        /* the C API plans the same job the same way */
        char *json = NULL;
        loom_error e2 = {0, ""};
        if (loom_replan_json(job, failed, n_failed, full, &json, &e2) != LOOM_OK || !json)
            loom_fuzz_fail("loom_replan_json failed on a job the replanner accepted");
        cJSON *again = cJSON_Parse(json);
        if (!cJSON_IsObject(again))
            loom_fuzz_fail("loom_replan_json wrote a report that is not JSON");
        cJSON_Delete(again);
        loom_free(json);
    } else {
        if (!err.message[0])
            loom_fuzz_fail("replan failed without a message");
        for (const unsigned char *p = (const unsigned char *)err.message; *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                loom_fuzz_fail("replan message holds a control character");
    }
    cJSON_Delete(report);
    free(text);
    return 0;
}
