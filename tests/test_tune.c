/* test_tune.c - `loom tune`'s search: on spaces small enough to simulate
 * whole (a 12-layer VLM fixture, with and without a memory cap that makes
 * some layouts infeasible, one and two manifests), the pruned search ranks
 * exactly what simulating every configuration (--no-prune) ranks, prunes
 * something, and no simulation comes in under its bound; and the report's
 * shape (ordering, the batch identity of every layout, reasons in GiB,
 * the counts), per-module layouts among them (an encoder colocated at a
 * narrower TP, or disjoint on GPUs of its own with hetero-search).
 * `loom tune`'s command line is test_tune_cli.c. */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "testutil.h"

#define MANIFESTS LOOM_TEST_SOURCE_DIR "/examples/manifests/"
#define TUNED "--manifest " MANIFESTS "megatron-tuned.json"
/* a 12-layer VLM whose searches take a fraction of a second */
#define TINY "--model " LOOM_TEST_SOURCE_DIR "/tests/fixtures/models/tune-tiny.json --seq-len 2048"


/* The "ranked" member of a report file as compact JSON (malloc'd). */
static char *ranked_of(const char *path, int *pruned)
{
    char *text = loom_test_slurp(path);
    cJSON *doc = cJSON_Parse(text);
    ck_assert_msg(doc != NULL, "%s: not JSON:\n%.2000s", path, text);
    cJSON *r = cJSON_GetObjectItemCaseSensitive(doc, "ranked");
    ck_assert_msg(cJSON_GetArraySize(r) > 0, "%s: nothing ranked", path);
    if (pruned)
        *pruned = cJSON_GetObjectItemCaseSensitive(doc, "pruned")->valueint;
    char *s = cJSON_PrintUnformatted(r);
    cJSON_Delete(doc);
    free(text);
    return s;
}

/* One small space: the pruned ranking equals the full one; returns how
 * many configurations the pruned run skipped. */
static int same_ranking(const char *space)
{
    char dir[64], a[128], b[128];
    loom_test_mkdtemp(dir, sizeof dir, "tune");
    snprintf(a, sizeof a, "%s/pruned.json", dir);
    snprintf(b, sizeof b, "%s/full.json", dir);
    char *o1 = loom_test_cli_expect(0, "tune %s --quiet --json %s", space, a);
    char *o2 = loom_test_cli_expect(0, "tune %s --quiet --no-prune --json %s", space, b);
    ck_assert_msg(!strstr(o1, "warning") && !strstr(o2, "warning"),
                  "a simulation came in under its bound:\n%s\n%s", o1, o2);
    int pruned = 0, none = -1;
    char *r1 = ranked_of(a, &pruned), *r2 = ranked_of(b, &none);
    ck_assert_int_eq(none, 0);
    ck_assert_msg(!strcmp(r1, r2), "%s: pruned ranking\n%s\ndiffers from the full one\n%s",
                  space, r1, r2);
    free(r1);
    free(r2);
    free(o1);
    free(o2);
    loom_test_rmdir(dir);
    return pruned;
}

START_TEST(pruning_is_exact)
{
    int pruned = 0;
    /* under a cap that leaves some layouts infeasible, statically or not */
    pruned += same_ranking(TINY " --gpus 8 --global-batch 8 --top 3 --memory-cap 3GiB " TUNED);
    pruned += same_ranking(TINY " --gpus 4 --global-batch 16 --micro-batch-size 1 --top 3 " TUNED);
    /* two manifests: the top mixes them */
    pruned += same_ranking(TINY " --gpus 4 --global-batch 8 --top 2 " TUNED
                           " --manifest " MANIFESTS "megatron-1f1b.json");
    ck_assert_msg(pruned > 0, "no configuration was pruned: the test checks nothing");
}
END_TEST

START_TEST(report_shape)
{
    char *out = loom_test_cli_expect(0, "tune " TINY " --gpus 8 --global-batch 16 --top 2 --quiet --json "
                       "--memory-cap 3GiB " TUNED);
    cJSON *doc = cJSON_Parse(out);
    ck_assert_ptr_nonnull(doc);
    cJSON *ranked = cJSON_GetObjectItemCaseSensitive(doc, "ranked");
    ck_assert_int_eq(cJSON_GetArraySize(ranked), 2);
    cJSON *first = cJSON_GetArrayItem(ranked, 0), *second = cJSON_GetArrayItem(ranked, 1);
    double a = cJSON_GetObjectItemCaseSensitive(first, "makespan_ms")->valuedouble;
    double b = cJSON_GetObjectItemCaseSensitive(second, "makespan_ms")->valuedouble;
    ck_assert(a <= b);
    ck_assert(a >= cJSON_GetObjectItemCaseSensitive(first, "lower_bound_ms")->valuedouble);
    cJSON *lay = cJSON_GetObjectItemCaseSensitive(first, "layout");
    int g = 1;
    const char *deg[] = {"tp", "cp", "pp", "dp"};
    for (int i = 0; i < 4; i++)
        g *= cJSON_GetObjectItemCaseSensitive(lay, deg[i])->valueint;
    ck_assert_int_eq(g, 8);
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(lay, "global_batch")->valueint, 16);
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(lay, "micro_batch_size")->valueint *
                         cJSON_GetObjectItemCaseSensitive(lay, "microbatches")->valueint *
                         cJSON_GetObjectItemCaseSensitive(lay, "dp")->valueint,
                     16);
    /* every static-memory verdict says GiB, parameters and optimizer states */
    cJSON *inf = cJSON_GetObjectItemCaseSensitive(doc, "infeasible"), *e;
    ck_assert(cJSON_GetArraySize(inf) > 0);
    cJSON_ArrayForEach(e, inf)
    {
        const char *why = cJSON_GetObjectItemCaseSensitive(e, "reason")->valuestring;
        loom_test_has(why, "GiB");
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "simulated")))
            loom_test_has(why, "gradients + optimizer states");
    }
    int considered = cJSON_GetObjectItemCaseSensitive(doc, "considered")->valueint;
    int simulated = cJSON_GetObjectItemCaseSensitive(doc, "simulated")->valueint;
    int pruned = cJSON_GetObjectItemCaseSensitive(doc, "pruned")->valueint;
    ck_assert(considered >= simulated + pruned);
    cJSON_Delete(doc);
    free(out);
    /* the table names the columns and the counts */
    out = loom_test_cli_expect(0, "tune " TINY " --gpus 4 --global-batch 8 --quiet " TUNED);
    loom_test_has(out, "peak/cap GiB");
    loom_test_has(out, "considered ");
    free(out);
}
END_TEST

/* The number of ranked and infeasible entries of a report whose layout
 * lists module "vit" with the given placement. */
static int with_module(const cJSON *doc, const char *placement)
{
    int n = 0;
    const char *lists[] = {"ranked", "infeasible"};
    for (int i = 0; i < 2; i++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, lists[i]))
        {
            const cJSON *lay = cJSON_GetObjectItemCaseSensitive(e, "layout");
            const cJSON *vit = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(lay, "modules"), "vit");
            const cJSON *pl = cJSON_GetObjectItemCaseSensitive(vit, "placement");
            n += cJSON_IsString(pl) && !strcmp(pl->valuestring, placement);
        }
    }
    return n;
}

START_TEST(per_module_pruning_is_exact)
{
    /* colocated encoders (megatron-tuned) and disjoint ones (hetero): the
     * per-set bounds prune, and the pruned ranking is still the full one */
    int pruned = same_ranking(TINY " --gpus 8 --global-batch 16 --top 3 " TUNED);
    pruned += same_ranking(TINY " --gpus 8 --global-batch 16 --micro-batch-size 1 --top 3 "
                           "--manifest " MANIFESTS "hetero.json");
    ck_assert_msg(pruned > 0, "no configuration was pruned: the test checks nothing");
}
END_TEST

START_TEST(per_module_layouts_in_the_report)
{
    char *out = loom_test_cli_expect(0, "tune " TINY " --gpus 8 --global-batch 16 "
                                     "--micro-batch-size 1 --top 100000 --quiet --json "
                                     "--manifest " MANIFESTS "hetero.json");
    cJSON *doc = cJSON_Parse(out);
    ck_assert_ptr_nonnull(doc);
    ck_assert_int_gt(with_module(doc, "colocated"), 0);
    ck_assert_int_gt(with_module(doc, "disjoint"), 0);
    /* every layout's GPUs add up: the top-level set plus a disjoint vit's */
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "ranked"))
    {
        const cJSON *lay = cJSON_GetObjectItemCaseSensitive(e, "layout");
        const char *deg[] = {"tp", "cp", "pp", "dp"};
        int top = 1, own = 1;
        const cJSON *vit = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(lay, "modules"), "vit");
        for (int i = 0; i < 4; i++) {
            top *= cJSON_GetObjectItemCaseSensitive(lay, deg[i])->valueint;
            if (vit)
                own *= cJSON_GetObjectItemCaseSensitive(vit, deg[i])->valueint;
        }
        int disjoint = vit && !strcmp(cJSON_GetObjectItemCaseSensitive(vit, "placement")
                                          ->valuestring, "disjoint");
        ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(lay, "gpus")->valueint, 8);
        ck_assert_int_eq(top + (disjoint ? own : 0), 8);
        if (vit && !disjoint) /* a colocated vit fills the top-level GPUs */
            ck_assert_int_eq(own, 8);
        if (vit)
            ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(vit, "gpus")->valueint, own);
    }
    cJSON_Delete(doc);
    free(out);
    /* --single-layouts: one layout for the whole model */
    out = loom_test_cli_expect(0, "tune " TINY " --gpus 8 --global-batch 16 --top 100000 "
                               "--quiet --json --single-layouts " TUNED);
    doc = cJSON_Parse(out);
    ck_assert_ptr_nonnull(doc);
    ck_assert_int_eq(with_module(doc, "colocated") + with_module(doc, "disjoint"), 0);
    cJSON_Delete(doc);
    free(out);
}
END_TEST

/* The suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("tune");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, pruning_is_exact);
    tcase_add_test(tc, report_shape);
    tcase_add_test(tc, per_module_pruning_is_exact);
    tcase_add_test(tc, per_module_layouts_in_the_report);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
