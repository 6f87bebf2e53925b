/* test_offload_plan.c - activation offload end to end: the PipeWeaver
 * pipeline on vlm-s at a binding cap with the knapsack and ilp-memory
 * tuners, offload off and on. With offload the plan keeps the cap, names
 * "offload" in plan.json's layer policies and is not slower; a cluster
 * file without host_bytes_per_s is refused naming the field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"
#include "engine_api.h"
#include "output.h"
#include <loom/sys/session.h>
#include "run_priv.h"

/* Plans iteration 0 of vlm-s under a 30e9-byte cap (which binds: about
 * 41 GB uncapped) with `tuner`, offload on or off, on `cluster` (NULL:
 * h800); returns the status and fills *plan on success. */
static int plan_vlm_s(const char *tuner, int offload, const char *cluster, loom_session *s,
                      loom_plan *plan, loom_error *err)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = loom_test_src("examples/manifests/pipeweaver.json");
    a.model = "vlm-s";
    a.cluster = cluster;
    a.iterations = 1;
    a.memory_cap_bytes = 30e9;
    a.params[a.n_params++] = "ranker.max_evaluations=30";
    a.params[a.n_params++] = "ranker.budget_ms=600000";
    a.params[a.n_params++] = offload ? "memory_tuner.offload=true" : "memory_tuner.offload=false";
    static char use[64];
    snprintf(use, sizeof use, "memory_tuner=%s", tuner);
    a.uses[a.n_uses++] = use;
    int rc = loom_session_init(s, &a, err);
    if (rc != LOOM_OK)
        return rc;
    return loom_session_plan(s, 0, plan, err);
}

/* plan.json text of a plan (caller frees). */
static char *plan_json(const loom_plan *plan)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_error err = {0};
    ck_assert_int_eq(loom_write_plan_json(plan, f, &err), LOOM_OK);
    fclose(f);
    return buf;
}

START_TEST(test_offload_keeps_cap_and_is_not_slower)
{
    static const char *const tuners[] = {"knapsack", "ilp-memory"};
    for (int i = 0; i < 2; i++) {
        double ms[2] = {0, 0};
        for (int off = 0; off < 2; off++) {
            loom_session s;
            loom_plan plan;
            loom_error err = {0};
            int rc = plan_vlm_s(tuners[i], off, NULL, &s, &plan, &err);
            ck_assert_msg(rc == LOOM_OK, "%s: %s", tuners[i], err.message);
            const loom_stage_graph *g = plan.graph;
            ck_assert(g->memory_cap_bytes == 30e9);
            for (int32_t r = 0; r < g->n_ranks; r++)
                ck_assert((double)plan.metrics.peak_bytes[r] <= g->memory_cap_bytes);
            ms[off] = plan.metrics.makespan_ms;
            char *json = plan_json(&plan);
            ck_assert_msg((strstr(json, "\"offload\"") != NULL) == off, "%s offload %d",
                          tuners[i], off);
            free(json);
            loom_plan_clear(&plan);
            loom_session_release(&s);
        }
        ck_assert_msg(ms[1] <= ms[0], "%s: %.6f ms with offload > %.6f without", tuners[i],
                      ms[1], ms[0]);
    }
}
END_TEST

START_TEST(test_cluster_without_host_bandwidth)
{
    char cluster[256];
    snprintf(cluster, sizeof cluster, "%s", loom_test_src("examples/clusters/h800.json"));
    /* the h800 file without its host_bytes_per_s line */
    char dir[] = "/tmp/loom-offload-XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/cluster.json", dir);
    FILE *in = fopen(cluster, "r"), *out = fopen(path, "w");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    char line[512];
    while (fgets(line, sizeof line, in))
        if (!strstr(line, "host_bytes_per_s"))
            fputs(line, out);
    fclose(in);
    fclose(out);
    static const char *const tuners[] = {"knapsack", "ilp-memory"};
    static const char *const who[] = {"knapsack", "ilp"};
    for (int i = 0; i < 2; i++) {
        loom_session s;
        loom_plan plan;
        loom_error err = {0};
        ck_assert_int_ne(plan_vlm_s(tuners[i], 1, path, &s, &plan, &err), LOOM_OK);
        char want[160];
        snprintf(want, sizeof want,
                 "%s: params.offload is true, but cluster \"h800\" has no host_bytes_per_s",
                 who[i]);
        ck_assert_msg(strstr(err.message, want) != NULL, "%s", err.message);
        loom_session_release(&s);
        /* offload off: the same cluster plans */
        ck_assert_msg(plan_vlm_s(tuners[i], 0, path, &s, &plan, &err) == LOOM_OK, "%s",
                      err.message);
        loom_plan_clear(&plan);
        loom_session_release(&s);
    }
    unlink(path);
    rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("offload_plan");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_offload_keeps_cap_and_is_not_slower);
    tcase_add_test(tc, test_cluster_without_host_bandwidth);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
