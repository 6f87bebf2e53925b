/* test_lower_bound.c - no interleaver reports a makespan below the
 * problem's lower bound: random stage-times problems (per-stage times,
 * per-stage transfer times, microbatch scales, some with a memory cap),
 * planned with every interleaver Loom ships; the busiest rank's work is
 * summed here from the problem itself. Plus: a split-backward interleaver
 * on a problem without I/W times is an error that says how to give them,
 * and plan.json reports the bound and the gap (0 when ilp proves the
 * optimum). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include "engine_api.h"
#include "output.h"
#include <loom/sys/session.h>
#include <loom/sys/util.h>
#include "run_priv.h"

static const char *const INTERLEAVERS[] = {"1f1b", "gpipe", "interleaved-1f1b", "dual-queue",
                                           "encoder-first", "optimus-bubble", "zero-bubble",
                                           "ilp"};

/* One random problem: its JSON text and the busiest rank's work. */
typedef struct problem {
    char json[4096];
    double work_ms;
} problem;

/* Appends `n` numbers a + step * (rand % k) as a JSON array. */
static void numbers(char *buf, size_t size, uint64_t *st, int n, double a, double step, int k,
                    double *out)
{
    size_t len = strlen(buf);
    len += (size_t)snprintf(buf + len, size - len, "[");
    for (int i = 0; i < n; i++) {
        out[i] = a + step * (double)(loom_splitmix64(st) % (uint64_t)k);
        len += (size_t)snprintf(buf + len, size - len, "%s%g", i ? ", " : "", out[i]);
    }
    snprintf(buf + len, size - len, "]");
}

/* A random stage-times problem from seed (split: I + W times). */
static void make_problem(uint64_t seed, int split, problem *p)
{
    uint64_t st = seed * 0x9e3779b97f4a7c15ULL + 7;
    int P = 2 + (int)(loom_splitmix64(&st) % 3), V = 1 + (int)(loom_splitmix64(&st) % 2);
    int M = 2 + (int)(loom_splitmix64(&st) % 4), S = P * V;
    double f[8], b[8], w[8], scale[8], p2p[8];
    char *j = p->json;
    size_t size = sizeof p->json;
    snprintf(j, size, "{\"kind\": \"stage-times\", \"ranks\": %d, \"microbatches\": %d, "
             "\"virtual_stages\": %d, \"forward_ms\": ", P, M, V);
    numbers(j, size, &st, S, 0.5, 0.25, 8, f);
    strcat(j, split ? ", \"input_grad_ms\": " : ", \"backward_ms\": ");
    numbers(j, size, &st, S, 0.5, 0.25, 8, b);
    if (split) {
        strcat(j, ", \"weight_grad_ms\": ");
        numbers(j, size, &st, S, 0.25, 0.25, 4, w);
    } else {
        for (int s = 0; s < S; s++)
            w[s] = 0;
    }
    strcat(j, ", \"microbatch_scale\": ");
    numbers(j, size, &st, M, 0.5, 0.25, 5, scale);
    strcat(j, ", \"p2p_ms\": ");
    numbers(j, size, &st, S, 0, 0.125, 3, p2p);
    if (loom_splitmix64(&st) % 2) /* room for about two microbatches per stage */
        snprintf(j + strlen(j), size - strlen(j),
                 ", \"activation_bytes\": 1, \"memory_cap_bytes\": %d", 2 * V * 3);
    strcat(j, "}");
    p->work_ms = 0;
    for (int r = 0; r < P; r++) {
        double load = 0;
        for (int s = r; s < S; s += P)
            for (int m = 0; m < M; m++)
                load += scale[m] * (f[s] + b[s] + w[s]);
        p->work_ms = load > p->work_ms ? load : p->work_ms;
    }
}

/* Plans problem text with `interleaver`; returns the session's code. */
static int plan_with(const char *json, const char *interleaver, loom_session *s, loom_plan *plan,
                     loom_error *err)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.stage_times = loom_test_tmpfile(".json", json);
    static char use[64];
    snprintf(use, sizeof use, "interleaver=%s", interleaver);
    a.uses[a.n_uses++] = use;
    if (!strcmp(interleaver, "ilp")) /* proofs are not the point here */
        a.params[a.n_params++] = "interleaver.timeout_ms=200";
    int rc = loom_session_init(s, &a, err);
    if (rc == LOOM_OK)
        rc = loom_session_plan(s, 0, plan, err);
    return rc;
}

START_TEST(no_interleaver_beats_the_lower_bound)
{
    int planned = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        problem p;
        make_problem(seed, (int)(seed % 2), &p);
        for (size_t i = 0; i < sizeof INTERLEAVERS / sizeof INTERLEAVERS[0]; i++) {
            loom_session s;
            loom_plan plan;
            memset(&plan, 0, sizeof plan);
            loom_error err = {0};
            int rc = plan_with(p.json, INTERLEAVERS[i], &s, &plan, &err);
            if (rc == LOOM_OK) {
                double span = plan.metrics.makespan_ms;
                ck_assert_msg(span >= p.work_ms * (1 - 1e-12), "%s: makespan %.9g below the "
                              "busiest rank's work %.9g\n%s", INTERLEAVERS[i], span, p.work_ms,
                              p.json);
                ck_assert(plan.lower_bound_ms >= p.work_ms * (1 - 1e-12));
                ck_assert(plan.lower_bound_ms <= span * (1 + 1e-12));
                planned++;
            } else {
                /* a refusal names the plugin, e.g. zero-bubble without I/W */
                ck_assert_msg(strstr(err.message, INTERLEAVERS[i]) != NULL, "%s: %s",
                              INTERLEAVERS[i], err.message);
            }
            loom_plan_clear(&plan);
            loom_session_release(&s);
        }
    }
    ck_assert_int_gt(planned, 12 * 5); /* most interleavers plan every problem */
}
END_TEST

START_TEST(split_interleaver_needs_input_and_weight_times)
{
    const char *json = "{\"kind\": \"stage-times\", \"ranks\": 2, \"microbatches\": 2, "
                       "\"forward_ms\": 1, \"backward_ms\": 2}";
    loom_session s;
    loom_plan plan;
    memset(&plan, 0, sizeof plan);
    loom_error err = {0};
    ck_assert_int_eq(plan_with(json, "zero-bubble", &s, &plan, &err), LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, "zero-bubble") != NULL, "%s", err.message);
    ck_assert_ptr_nonnull(strstr(err.message, "backward_ms only"));
    ck_assert_ptr_nonnull(strstr(err.message, "give input_grad_ms and weight_grad_ms"));
    loom_session_release(&s);
}
END_TEST

/* plan.json's metrics for the ZB-H1 setting of examples/stage-times/
 * oracle-zb.json (P = 4, M = 8, F = I = W = 1, room for P activations):
 * ilp proves 27 = 3 + 24; 1f1b proves nothing, so its gap is against
 * the busiest rank's work, 24 (the longest chain, 4 F + 4 I + 1 W = 9,
 * is shorter). */
START_TEST(plan_json_reports_bound_and_gap)
{
    const char *names[] = {"ilp", "1f1b"};
    for (int i = 0; i < 2; i++) {
        loom_session_args a;
        loom_session_args_init(&a);
        a.stage_times = loom_test_src("examples/stage-times/oracle-zb.json");
        static char use[64];
        snprintf(use, sizeof use, "interleaver=%s", names[i]);
        a.uses[a.n_uses++] = use;
        loom_session s;
        loom_plan plan;
        memset(&plan, 0, sizeof plan);
        loom_error err = {0};
        ck_assert_int_eq(loom_session_init(&s, &a, &err), LOOM_OK);
        ck_assert_msg(loom_session_plan(&s, 0, &plan, &err) == LOOM_OK, "%s", err.message);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        ck_assert_int_eq(loom_write_plan_json(&plan, f, &err), LOOM_OK);
        fclose(f);
        cJSON *root = cJSON_Parse(buf);
        const cJSON *m = cJSON_GetObjectItem(root, "metrics");
        double span = cJSON_GetObjectItem(m, "makespan_ms")->valuedouble;
        double lb = cJSON_GetObjectItem(m, "lower_bound_ms")->valuedouble;
        double gap = cJSON_GetObjectItem(m, "optimality_gap")->valuedouble;
        const cJSON *ib = cJSON_GetObjectItem(m, "interleaver_bound_ms");
        if (i == 0) {
            ck_assert_double_eq(span, 27.0);
            ck_assert_double_eq(lb, 27.0);
            ck_assert_double_eq(cJSON_GetNumberValue(ib), 27.0);
            ck_assert_double_eq(gap, 0.0);
        } else {
            ck_assert(cJSON_IsNull(ib));
            ck_assert_double_eq(lb, 24.0);
            ck_assert_double_eq_tol(gap, (span - 24.0) / span, 1e-12);
        }
        cJSON_Delete(root);
        free(buf);
        loom_plan_clear(&plan);
        loom_session_release(&s);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lower_bound");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, no_interleaver_beats_the_lower_bound);
    tcase_add_test(tc, split_interleaver_needs_input_and_weight_times);
    tcase_add_test(tc, plan_json_reports_bound_and_gap);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
