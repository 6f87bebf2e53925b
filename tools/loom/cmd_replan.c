/* cmd_replan.c - `loom replan`: Oobleck's reconfiguration after node
 * failures (dissertation §2.5) for a job file; prints the templates, the
 * pipelines before and after, each pipeline's repair action and the layers
 * every node copies from which surviving replica. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include <loom/sys/json.h>
#include <loom/sys/replan.h>
#include <loom/sys/output.h>

/* Prints the command's help text. */
static void usage(FILE *out)
{
    fprintf(out,
            "usage: loom replan --job FILE [--failed-nodes LIST] [--full] [--json]\n"
            "                   [--out FILE]\n"
            "\n"
            "Oobleck reconfiguration (dissertation 2.5). Plans the job's pipeline\n"
            "templates (nodes n0..N-f*n0), instantiates them (or takes the job's\n"
            "\"pipelines\"), removes the failed nodes and repairs every affected\n"
            "pipeline: a smaller template, borrowing nodes, or merging pipelines;\n"
            "then lists the layers each node copies from a surviving replica and\n"
            "redistributes the same global batch. Job format:\n"
            "docs/algorithms-dissertation.md.\n"
            "\n"
            "  --job FILE            the Oobleck job (JSON)\n"
            "  --failed-nodes LIST   comma-separated node ids (none: just instantiate)\n"
            "  --full                re-instantiate from scratch instead of repairing\n"
            "  --json                print the report as JSON\n"
            "  --out FILE            write the JSON report atomically to FILE\n"
            "  -h, --help            show this help\n"
            "exit codes: 0 ok, 1 unrecoverable (fewer than (f+1)*n0 nodes, or a layer\n"
            "lost every replica), 2 usage or input error\n");
}

/* Parses "3,5,7" into ids; returns the count or -1 on a bad list. */
static int parse_ids(const char *s, int32_t *ids, int cap)
{
    int n = 0;
    while (*s) {
        char *end = NULL;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > 1000000 || n == cap)
            return -1;
        ids[n++] = (int32_t)v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

/* Number of a report field (0 when absent). */
static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Prints one state (before / after) of the report. */
static void print_state(const char *title, const cJSON *st)
{
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(st, "pipelines");
    printf("%s: %d pipeline(s), iteration %.3f ms\n", title,
           cJSON_GetArraySize(ps), num(st, "iteration_ms"));
    int i = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, ps) {
        char nodes[256];
        int at = 0;
        const cJSON *id;
        nodes[0] = 0;
        cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(p, "nodes"))
            if (at >= 0 && (size_t)at < sizeof nodes)
                at += snprintf(nodes + at, sizeof nodes - (size_t)at, "%s%d",
                               at ? "," : "", id->valueint);
        const cJSON *act = cJSON_GetObjectItemCaseSensitive(p, "action");
        printf("  [%d] nodes %-16s %2.0f-node template  %-13s %4.0f microbatches  %.3f ms\n",
               i++, nodes, num(p, "template_nodes"),
               cJSON_IsString(act) ? act->valuestring : "", num(p, "microbatches"),
               num(p, "time_ms"));
    }
}

/* Prints the report for people. */
static void print_report(const cJSON *r)
{
    printf("Oobleck job: %.0f node(s) x %.0f GPU(s), f = %.0f, n0 = %.0f, %.0f microbatches\n",
           num(r, "nodes"), num(r, "gpus_per_node"), num(r, "fault_tolerance"),
           num(r, "min_nodes"), num(r, "microbatches"));
    printf("templates:\n");
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(r, "templates")) {
        printf("  %2.0f node(s):", num(t, "nodes"));
        const cJSON *s;
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(t, "stages")) {
            const cJSON *l = cJSON_GetObjectItemCaseSensitive(s, "layers");
            printf(" [L%d-%d %.0fgpu n%.0f]", cJSON_GetArrayItem(l, 0)->valueint,
                   cJSON_GetArrayItem(l, 1)->valueint, num(s, "gpus"), num(s, "node"));
        }
        printf("  T(N_b=4S) %.3f ms\n", num(t, "iteration_ms"));
    }
    print_state("before", cJSON_GetObjectItemCaseSensitive(r, "before"));
    const cJSON *after = cJSON_GetObjectItemCaseSensitive(r, "after");
    if (!after)
        return;
    printf("failed nodes:");
    const cJSON *id;
    cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(r, "failed_nodes"))
        printf(" %d", id->valueint);
    printf("\n");
    print_state(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(after, "full_replan"))
                    ? "after (full re-instantiation)"
                    : "after",
                after);
    const cJSON *cp = cJSON_GetObjectItemCaseSensitive(r, "copies");
    printf("copies (%d):\n", cJSON_GetArraySize(cp));
    const cJSON *c;
    cJSON_ArrayForEach(c, cp)
        printf("  layer %.0f -> node %.0f from node %.0f\n", num(c, "layer"),
               num(c, "to_node"), num(c, "from_node"));
}

/* loom_write_atomic callback: the report as formatted JSON. */
static int write_report(void *ctx, FILE *out, loom_error *err)
{
    char *s = cJSON_Print(ctx);
    if (!s)
        return loom_set_error(err, LOOM_ENOMEM, "replan: out of memory");
    int ok = fputs(s, out) >= 0 && fputc('\n', out) != EOF;
    free(s);
    return ok ? LOOM_OK : loom_set_error(err, LOOM_EIO, "replan: write failed");
}

enum { OPT_JOB = 0x100, OPT_FAILED_NODES, OPT_OUT, OPT_FULL, OPT_JSON };

static const loom_cli_option replan_options[] = {
    {"job", 1, OPT_JOB}, {"failed-nodes", 1, OPT_FAILED_NODES}, {"out", 1, OPT_OUT},
    {"full", 0, OPT_FULL}, {"json", 0, OPT_JSON}, {NULL, 0, 0}};

/* What `loom replan` was asked for. */
typedef struct replan_cli {
    const char *job, *failed, *out;
    int full, json;
} replan_cli;

/* One option of `loom replan` (loom_cli_spec.handle). */
static int replan_option(void *ctx, int key, const char *name, const char *v)
{
    replan_cli *o = ctx;
    (void)name;
    switch (key) {
    case OPT_JOB: o->job = v; return 0;
    case OPT_FAILED_NODES: o->failed = v; return 0;
    case OPT_OUT: o->out = v; return 0;
    case OPT_FULL: o->full = 1; return 0;
    case OPT_JSON: o->json = 1; return 0;
    case LOOM_CLI_OPERAND:
        loom_cli_error("replan", "unexpected argument '%s'", v);
        return -1;
    default:
        return -1;
    }
}

int loom_cmd_replan(int argc, char **argv)
{
    static const char *const conflicts[][2] = {{"out", "json"}, {NULL, NULL}};
    replan_cli o = {NULL, "", NULL, 0, 0};
    loom_cli_spec spec = {"replan", replan_options, NULL, conflicts, replan_option, &o};
    int parsed = loom_cli_parse(&spec, argc, argv);
    if (parsed != 0) {
        usage(parsed > 0 ? stdout : stderr);
        return parsed > 0 ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    }
    const char *job = o.job, *failed_s = o.failed, *out = o.out;
    int full = o.full, json = o.json;
    if (!job || !*job) {
        fprintf(stderr, "loom replan: --job FILE is required\n");
        usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    int32_t failed[4096];
    int n_failed = parse_ids(failed_s, failed, 4096);
    if (n_failed < 0) {
        fprintf(stderr, "loom replan: --failed-nodes: expected comma-separated "
                        "node ids, found \"%s\"\n", failed_s);
        return LOOM_EXIT_USAGE;
    }
    loom_error err = {0, ""};
    char *text = NULL;
    cJSON *report = NULL;
    int rc = loom_read_file(job, &text, NULL, &err);
    if (rc == LOOM_OK)
        rc = loom_oobleck_job_replan(job, text, failed, n_failed, full, &report, &err);
    free(text);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom replan: %s\n", err.message);
        return loom_cli_exit_for_status(rc);
    }
    if (out)
        rc = loom_write_atomic(out, write_report, report, &err);
    else if (json)
        rc = write_report(report, stdout, &err);
    if (!out && !json)
        print_report(report);
    cJSON_Delete(report);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom replan: %s\n", err.message);
        return loom_cli_exit_for_status(rc);
    }
    return LOOM_EXIT_OK;
}
