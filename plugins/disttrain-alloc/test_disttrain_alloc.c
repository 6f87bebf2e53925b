/* test_disttrain_alloc.c - DistTrain's orchestration (Algorithm 1): the
 * digest's worked vector (the relaxation prefers DP=2, the best integer
 * plan is DP=1 on (1, 40, 2) GPUs), Eq. 1 + 5 closed forms, the memory
 * bound, the broker (connector) gcd rule, integer optimality and the
 * search against brute force, the layout as a partition, the plugin over
 * a fake cost service, and the 72B / 1296-GPU / BS 1920 speed target. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <loom/mock_host.h>
#include <loom/mock_sim.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include "dt_alloc.h"
#include "dt_layout.h"

const loom_plugin_info *loom_static_disttrain_alloc(void);

/* A unit with C(TP) given for the listed TPs only (others unusable). */
static loom_dt_unit unit(double c1, double c2, double c4, double c8, int max_pp)
{
    loom_dt_unit u;
    memset(&u, 0, sizeof u);
    u.present = 1;
    u.max_pp = max_pp;
    u.c_ms[0] = c1;
    u.c_ms[1] = c2;
    u.c_ms[2] = c4;
    u.c_ms[3] = c8;
    return u;
}

/* The digest's worked vector (§2.4): N 48, BS 64, C_lm(8) 4.0,
 * C_me(1) 0.6, C_mg(1) 1.0, no memory or layer limits. */
static void worked(loom_dt_unit u[3], loom_dt_config *cfg)
{
    u[LOOM_DT_ENC] = unit(0.6, -1, -1, -1, 1000);
    u[LOOM_DT_LLM] = unit(-1, -1, -1, 4.0, 1000);
    u[LOOM_DT_GEN] = unit(1.0, -1, -1, -1, 1000);
    memset(cfg, 0, sizeof *cfg);
    cfg->gpus = 48;
    cfg->global_batch = 64;
    cfg->max_tp = 8;
    cfg->vpp = 1;
}

START_TEST(connectors_are_the_gcd_of_dp_sizes)
{
    /* Fig. 9: encoder DP 2, LLM DP 3, generator DP 1 -> 1 broker each */
    ck_assert_int_eq(loom_dt_gcd(2, 3), 1);
    ck_assert_int_eq(loom_dt_gcd(3, 1), 1);
    ck_assert_int_eq(loom_dt_gcd(4, 6), 2);
    ck_assert_int_eq(loom_dt_gcd(8, 8), 8);
    ck_assert_int_eq(loom_dt_gcd(0, 5), 5);
    ck_assert_int_eq(loom_dt_gcd(1920, 1296), 48);
}
END_TEST

START_TEST(divisors_of_the_global_batch)
{
    int32_t d[64];
    ck_assert_int_eq(loom_dt_divisors(1920, d, 64), 32); /* digest: 32 */
    ck_assert_int_eq(d[0], 1);
    ck_assert_int_eq(d[1], 2);
    ck_assert_int_eq(d[31], 1920);
    for (int i = 1; i < 32; i++)
        ck_assert_int_lt(d[i - 1], d[i]);
    ck_assert_int_eq(loom_dt_divisors(64, d, 64), 7);
    ck_assert_int_eq(d[3], 8);
    ck_assert_int_eq(loom_dt_divisors(36, d, 3), 9); /* counts past cap */
    ck_assert_int_eq(d[2], 3);
    ck_assert_int_eq(loom_dt_divisors(0, d, 64), 0);
}
END_TEST

START_TEST(relaxation_prefers_dp2)
{
    loom_dt_unit u[3];
    loom_dt_config cfg;
    worked(u, &cfg);
    int32_t tp[3] = {1, 8, 1}, dp2[3] = {2, 2, 2}, dp1[3] = {1, 1, 1};
    double lo[3] = {0, 0, 0}, g[3], t;
    ck_assert_int_eq(loom_dt_relaxed(u, tp, dp2, lo, 48, g, &t), LOOM_OK);
    ck_assert_double_eq_tol(t, 1.4, 1e-12);
    ck_assert_double_eq_tol(g[LOOM_DT_ENC], 1.2 / 1.4, 1e-12); /* 0.857 */
    ck_assert_double_eq_tol(g[LOOM_DT_LLM], 64 / 1.4, 1e-9);   /* 45.71 */
    ck_assert_double_eq_tol(g[LOOM_DT_GEN], 2 / 1.4, 1e-12);   /* 1.429 */
    ck_assert_double_eq_tol(loom_dt_iter_ms(u, tp, dp2, g, 64, 1), 49.0, 1e-9);
    ck_assert_int_eq(loom_dt_relaxed(u, tp, dp1, lo, 48, g, &t), LOOM_OK);
    ck_assert_double_eq_tol(t, 0.7, 1e-12);
    ck_assert_double_eq_tol(loom_dt_iter_ms(u, tp, dp1, g, 64, 1), 49.7, 1e-9);
    /* a binding lower bound: the LLM must keep 47 GPUs */
    double lo2[3] = {0, 47, 0};
    ck_assert_int_eq(loom_dt_relaxed(u, tp, dp1, lo2, 48, g, &t), LOOM_OK);
    ck_assert_double_eq_tol(g[0] + g[1] + g[2], 48, 1e-6);
    ck_assert_double_eq_tol(g[1], 47, 1e-9);
    ck_assert_double_eq_tol(t, 1.6 / 1.0, 1e-6); /* (0.6 + 1.0) / 1 GPU */
    double lo3[3] = {10, 40, 0};
    ck_assert_int_eq(loom_dt_relaxed(u, tp, dp1, lo3, 48, g, &t),
                     LOOM_EINFEASIBLE);
}
END_TEST

START_TEST(best_integer_plan_is_dp1)
{
    loom_dt_unit u[3];
    loom_dt_config cfg;
    worked(u, &cfg);
    int32_t tp[3] = {1, 8, 1}, dp2[3] = {2, 2, 2}, dp1[3] = {1, 1, 1};
    int32_t pmin[3] = {1, 1, 1}, pp[3];
    double t;
    /* best integer plan with DP 2: PP_lm 2 (y = 32), 67.6 */
    ck_assert_int_eq(loom_dt_integer(u, tp, dp2, pmin, 48, pp, &t), LOOM_OK);
    ck_assert_int_eq(pp[LOOM_DT_LLM], 2);
    ck_assert_double_eq_tol(t, 2.0, 1e-12);
    loom_dt_plan p2;
    memset(&p2, 0, sizeof p2);
    memcpy(p2.tp, tp, sizeof tp);
    memcpy(p2.dp, dp2, sizeof dp2);
    memcpy(p2.pp, pp, sizeof pp);
    loom_dt_plan_eval(u, 64, 1, &p2);
    ck_assert_double_eq_tol(p2.iter_ms, 67.6, 1e-9);
    ck_assert_int_eq(p2.gpus[LOOM_DT_LLM], 32);
    /* DP 1: PP_lm 5 (y = 40), the LLM's 0.8 is the bottleneck */
    ck_assert_int_eq(loom_dt_integer(u, tp, dp1, pmin, 48, pp, &t), LOOM_OK);
    ck_assert_int_eq(pp[LOOM_DT_ENC], 1);
    ck_assert_int_eq(pp[LOOM_DT_LLM], 5);
    ck_assert_int_eq(pp[LOOM_DT_GEN], 2);
    ck_assert_double_eq_tol(t, 0.8, 1e-12);

    /* the search: 56.0 on (x, y, z) = (1, 40, 2), 43 GPUs (fewest) */
    loom_dt_plan best[4];
    int32_t n = 0;
    loom_dt_stats st;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_dt_search(u, &cfg, best, 4, &n, &st, &err), LOOM_OK);
    ck_assert_int_eq(n, 4);
    ck_assert_double_eq_tol(best[0].iter_ms, 56.0, 1e-9);
    ck_assert_double_eq_tol(best[0].warmup_ms, 5.6, 1e-12);
    ck_assert_int_eq(best[0].dp[LOOM_DT_LLM], 1);
    ck_assert_int_eq(best[0].pp[LOOM_DT_LLM], 5);
    ck_assert_int_eq(best[0].gpus[LOOM_DT_ENC], 1);
    ck_assert_int_eq(best[0].gpus[LOOM_DT_LLM], 40);
    ck_assert_int_eq(best[0].gpus[LOOM_DT_GEN], 2);
    /* it ties with (x, z) = (2, 6) and (4, 4); fewest GPUs ranks first */
    static const int32_t ties[2][3] = {{2, 5, 6}, {4, 5, 4}};
    for (int i = 0; i < 2; i++) {
        loom_dt_plan tie = best[0];
        memcpy(tie.pp, ties[i], sizeof tie.pp);
        loom_dt_plan_eval(u, 64, 1, &tie);
        ck_assert_double_eq_tol(tie.iter_ms, 56.0, 1e-9);
        ck_assert_int_eq(loom_dt_plan_better(&best[0], &tie), 1);
        ck_assert_int_eq(loom_dt_plan_better(&tie, &best[0]), 0);
    }
    /* the runner-up is another parallelism, no better */
    ck_assert_int_eq(loom_dt_plan_better(&best[1], &best[0]), 0);
    ck_assert_double_ge(best[1].iter_ms, 56.0);
    ck_assert_int_gt(st.parallelisms, 0);
    ck_assert_int_le(st.solved + st.pruned, st.parallelisms);
    /* the plan does not depend on how many are kept */
    loom_dt_plan one;
    ck_assert_int_eq(loom_dt_search(u, &cfg, &one, 1, &n, NULL, &err), LOOM_OK);
    ck_assert_int_eq(memcmp(&one, &best[0], sizeof one), 0);
}
END_TEST

START_TEST(eq1_eq5_closed_forms)
{
    /* uniform stages: (l + p - 1)(tf + tb), tf 1, tb 2: encoder 1 stage,
     * LLM 2 stages, generator 1 stage (p = 4) */
    loom_dt_unit u[3];
    u[LOOM_DT_ENC] = unit(3, -1, -1, -1, 8);
    u[LOOM_DT_LLM] = unit(6, -1, -1, -1, 8);
    u[LOOM_DT_GEN] = unit(3, -1, -1, -1, 8);
    int32_t tp[3] = {1, 1, 1}, dp[3] = {1, 1, 1};
    double g[3] = {1, 2, 1};
    ck_assert_double_eq_tol(loom_dt_iter_ms(u, tp, dp, g, 6, 1), 27, 1e-12);
    ck_assert_double_eq_tol(loom_dt_iter_ms(u, tp, dp, g, 8, 1), 33, 1e-12);
    /* interleaved: the warm-up term is divided by vpp */
    ck_assert_double_eq_tol(loom_dt_iter_ms(u, tp, dp, g, 8, 2), 6 + 21, 1e-12);
    /* one microbatch per pipeline: no steady state */
    ck_assert_double_eq_tol(loom_dt_iter_ms(u, tp, dp, g, 1, 1), 12, 1e-12);
    /* encoder bottleneck (digest §2.2): 1 encoder stage, 3 LLM stages at
     * tf 1, tb = 2 tf: the analytic model gives 57 (the simulator 51,
     * see test_interval_fill), 117 for encoder tf 3 with l 12, and 31.5
     * for encoder tf 0.5 (both agree there) */
    u[LOOM_DT_GEN].present = 0;
    u[LOOM_DT_LLM] = unit(9, -1, -1, -1, 8);
    u[LOOM_DT_ENC] = unit(6, -1, -1, -1, 8);
    double g3[3] = {1, 3, 0};
    ck_assert_double_eq_tol(loom_dt_iter_ms(u, tp, dp, g3, 8, 1), 57, 1e-12);
    u[LOOM_DT_ENC].c_ms[0] = 9;
    ck_assert_double_eq_tol(loom_dt_iter_ms(u, tp, dp, g3, 12, 1), 117, 1e-12);
    u[LOOM_DT_ENC].c_ms[0] = 1.5;
    ck_assert_double_eq_tol(loom_dt_iter_ms(u, tp, dp, g3, 8, 1), 31.5, 1e-12);
    /* T_m = DP_lm TP_m C_m / GPUs */
    ck_assert_double_eq_tol(loom_dt_stage_ms(&u[LOOM_DT_LLM], 1, 2, 6), 3, 1e-12);
    ck_assert_double_eq(loom_dt_stage_ms(&u[LOOM_DT_GEN], 1, 2, 6), 0);
}
END_TEST

START_TEST(memory_lower_bound)
{
    loom_dt_unit u = unit(1, 1, 1, 1, 8);
    u.param_bytes = 100;
    u.state_bytes = 300;
    u.act_bytes = 40;
    double g;
    /* (DP P + S) / (M - (DP_lm/DP) L / TP) = (200 + 300) / (100 - 20) */
    ck_assert_int_eq(loom_dt_min_gpus(&u, 2, 2, 2, 100, 1, &g), LOOM_OK);
    ck_assert_double_eq_tol(g, 6.25, 1e-12);
    /* an encoder serving 2 backbone replicas holds twice the activations */
    ck_assert_int_eq(loom_dt_min_gpus(&u, 2, 1, 2, 100, 1, &g), LOOM_OK);
    ck_assert_double_eq_tol(g, 400.0 / 60.0, 1e-12);
    /* per-rank states as the simulator charges them: max(DP, DP_lm) (P+S) */
    ck_assert_int_eq(loom_dt_min_gpus(&u, 2, 1, 2, 100, 0, &g), LOOM_OK);
    ck_assert_double_eq_tol(g, 2 * 400.0 / 60.0, 1e-12);
    ck_assert_int_eq(loom_dt_min_gpus(&u, 2, 2, 2, 100, 0, &g), LOOM_OK);
    ck_assert_double_eq_tol(g, 2 * 400.0 / 80.0, 1e-12);
    /* L / TP >= M: infeasible at this TP */
    u.act_bytes = 200;
    ck_assert_int_eq(loom_dt_min_gpus(&u, 2, 2, 2, 100, 1, &g), LOOM_EINFEASIBLE);
    ck_assert_int_eq(loom_dt_min_gpus(&u, 4, 2, 2, 100, 1, &g), LOOM_OK);
    ck_assert_int_eq(loom_dt_min_gpus(&u, 2, 2, 2, 0, 1, &g), LOOM_OK);
    ck_assert_double_eq(g, 0);

    /* the search respects it: the LLM now needs 8 GPUs of 8 */
    loom_dt_unit us[3];
    us[LOOM_DT_ENC] = unit(1, -1, -1, -1, 4);
    us[LOOM_DT_LLM] = unit(8, -1, -1, -1, 8);
    us[LOOM_DT_GEN].present = 0;
    us[LOOM_DT_LLM].param_bytes = 700;
    loom_dt_config cfg = {9, 4, 8, 1, 0, 0, 100.0, 1};
    loom_dt_plan best[1];
    int32_t n;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_dt_search(us, &cfg, best, 1, &n, NULL, &err), LOOM_OK);
    ck_assert_int_eq(best[0].gpus[LOOM_DT_LLM], 8);
    ck_assert_int_eq(best[0].gpus[LOOM_DT_ENC], 1);
    cfg.gpus = 7;
    ck_assert_int_eq(loom_dt_search(us, &cfg, best, 1, &n, NULL, &err),
                     LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "no integer-feasible plan"));
    ck_assert_ptr_nonnull(strstr(err.message, "on 7 GPUs with global batch 4"));
}
END_TEST

/* Deterministic pseudo-random numbers for the property tests. */
static uint64_t rng_state = 12345;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

START_TEST(integer_step_is_optimal)
{
    /* against every PP vector, over random small instances */
    for (int trial = 0; trial < 400; trial++) {
        loom_dt_unit u[3];
        int32_t tp[3], dp[3], pmin[3];
        for (int m = 0; m < 3; m++) {
            u[m] = unit(0.1 + rnd(100) / 10.0, -1, -1, -1, 1 + (int)rnd(6));
            u[m].present = m == LOOM_DT_LLM || rnd(4) != 0;
            tp[m] = 1;
            dp[m] = 1 + (int)rnd(3);
            pmin[m] = 1 + (int)rnd(2);
        }
        int32_t n = 2 + (int)rnd(40), pp[3];
        double t;
        int rc = loom_dt_integer(u, tp, dp, pmin, n, pp, &t);
        double best = INFINITY;
        int32_t best_gpus = 0;
        for (int32_t a = 1; a <= 6; a++)
            for (int32_t b = 1; b <= 6; b++)
                for (int32_t c = 1; c <= 6; c++) {
                    int32_t v[3] = {a, b, c};
                    double worst = 0;
                    int32_t used = 0, ok = 1;
                    for (int m = 0; m < 3; m++) {
                        if (!u[m].present) {
                            ok &= v[m] == 1;
                            continue;
                        }
                        ok &= v[m] >= pmin[m] && v[m] <= u[m].max_pp;
                        used += dp[m] * v[m];
                        double s = dp[LOOM_DT_LLM] * u[m].c_ms[0] / (dp[m] * v[m]);
                        worst = s > worst ? s : worst;
                    }
                    if (!ok || used > n)
                        continue;
                    if (worst < best * (1 - 1e-12) ||
                        (worst <= best * (1 + 1e-12) && used < best_gpus)) {
                        best = worst;
                        best_gpus = used;
                    }
                }
        if (isinf(best)) {
            ck_assert_int_eq(rc, LOOM_EINFEASIBLE);
            continue;
        }
        ck_assert_int_eq(rc, LOOM_OK);
        ck_assert_double_eq_tol(t, best, best * 1e-12);
        int32_t used = 0;
        for (int m = 0; m < 3; m++)
            used += u[m].present ? dp[m] * pp[m] : 0;
        ck_assert_int_eq(used, best_gpus);
    }
}
END_TEST

START_TEST(search_matches_brute_force)
{
    static const int32_t tps[4] = {1, 2, 4, 8};
    for (int trial = 0; trial < 12; trial++) {
        loom_dt_unit u[3];
        for (int m = 0; m < 3; m++) {
            u[m] = unit(-1, -1, -1, -1, 1 + (int)rnd(4));
            for (int i = 0; i < 4; i++)
                if (rnd(3))
                    u[m].c_ms[i] = 0.5 + rnd(40) / 4.0;
            u[m].c_ms[rnd(4)] = 1 + rnd(20);
        }
        u[LOOM_DT_GEN].present = trial % 3 != 0;
        loom_dt_config cfg = {8 + (int)rnd(24), 1 + (int)rnd(12), 8, 1, 0, 0, 0, 1};
        cfg.dp_above_backbone = trial % 4 == 1;
        loom_dt_plan best, got;
        memset(&best, 0, sizeof best);
        int found = 0;
        int32_t dv[16], nd = loom_dt_divisors(cfg.global_batch, dv, 16);
        /* every (tp, dp, pp) in the search's enumeration order */
        for (int a = 0; a < 4; a++)
            for (int ia = 0; ia < nd; ia++)
                for (int b = 0; b < 4; b++)
                    for (int ib = 0; ib < nd; ib++)
                        for (int c = 0; c < 4; c++)
                            for (int ic = 0; ic < nd; ic++)
                                for (int pa = 1; pa <= 4; pa++)
                                    for (int pb = 1; pb <= 4; pb++)
                                        for (int pc = 1; pc <= 4; pc++) {
                                            loom_dt_plan p;
                                            memset(&p, 0, sizeof p);
                                            int32_t t3[3] = {tps[b], tps[a], tps[c]};
                                            int32_t d3[3] = {dv[ib], dv[ia], dv[ic]};
                                            int32_t p3[3] = {pb, pa, pc};
                                            int ok = 1, used = 0;
                                            for (int m = 0; m < 3; m++) {
                                                if (!u[m].present) {
                                                    ok &= t3[m] == 1 && d3[m] == 1 && p3[m] == 1;
                                                    continue;
                                                }
                                                ok &= u[m].c_ms[a * (m == 1) + b * (m == 0) + c * (m == 2)] >= 0;
                                                ok &= p3[m] <= u[m].max_pp;
                                                ok &= cfg.dp_above_backbone || d3[m] <= d3[1];
                                                p.tp[m] = t3[m];
                                                p.dp[m] = d3[m];
                                                p.pp[m] = p3[m];
                                                used += t3[m] * d3[m] * p3[m];
                                            }
                                            if (!ok || used > cfg.gpus)
                                                continue;
                                            loom_dt_plan_eval(u, cfg.global_batch, 1, &p);
                                            if (!found || loom_dt_plan_better(&p, &best)) {
                                                best = p;
                                                found = 1;
                                            }
                                        }
        int32_t n = 0;
        loom_error err = {0, ""};
        int rc = loom_dt_search(u, &cfg, &got, 1, &n, NULL, &err);
        if (!found) {
            ck_assert_int_eq(rc, LOOM_EINFEASIBLE);
            continue;
        }
        ck_assert_msg(rc == LOOM_OK, "%s", err.message);
        ck_assert_double_eq_tol(got.iter_ms, best.iter_ms, best.iter_ms * 1e-9);
        ck_assert_int_eq(got.gpus[0] + got.gpus[1] + got.gpus[2],
                         best.gpus[0] + best.gpus[1] + best.gpus[2]);
        ck_assert_int_eq(got.pp[0] + got.pp[1] + got.pp[2],
                         best.pp[0] + best.pp[1] + best.pp[2]);
    }
}
END_TEST

START_TEST(search_input_errors)
{
    loom_dt_unit u[3];
    loom_dt_config cfg;
    worked(u, &cfg);
    loom_dt_plan best[1];
    int32_t n;
    loom_error err = {0, ""};
    cfg.global_batch = 0;
    ck_assert_int_eq(loom_dt_search(u, &cfg, best, 1, &n, NULL, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "found 1, 48, 0 and 8"));
    worked(u, &cfg);
    cfg.max_tp = 4; /* the LLM only has a C for TP 8 */
    ck_assert_int_eq(loom_dt_search(u, &cfg, best, 1, &n, NULL, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "unit 1: expected a non-negative time"));
    worked(u, &cfg);
    u[LOOM_DT_LLM].present = 0;
    ck_assert_int_eq(loom_dt_search(u, &cfg, best, 1, &n, NULL, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "expected a backbone module"));
    /* BS smaller than the GPUs can use: DP_lm 1 and 2 only */
    worked(u, &cfg);
    cfg.global_batch = 2;
    ck_assert_int_eq(loom_dt_search(u, &cfg, best, 1, &n, NULL, &err), LOOM_OK);
    ck_assert_int_le(best[0].dp[LOOM_DT_LLM], 2);
    /* DP_lm at least min_dp_llm */
    worked(u, &cfg);
    cfg.min_dp_llm = 2;
    ck_assert_int_eq(loom_dt_search(u, &cfg, best, 1, &n, NULL, &err), LOOM_OK);
    ck_assert_int_ge(best[0].dp[LOOM_DT_LLM], 2);
    ck_assert_double_gt(best[0].iter_ms, 56.0);
    ck_assert_double_le(best[0].iter_ms, 67.6); /* DP 2's best is 67.6 */
    worked(u, &cfg);
    /* BS / DP_lm = 1: no steady state, fewest GPUs */
    cfg.global_batch = 1;
    ck_assert_int_eq(loom_dt_search(u, &cfg, best, 1, &n, NULL, &err), LOOM_OK);
    ck_assert_double_eq(best[0].steady_ms, 0);
    ck_assert_int_eq(best[0].gpus[0] + best[0].gpus[1] + best[0].gpus[2], 10);
}
END_TEST

/* A 72B-class problem: ViT-Huge (32 layers), Llama3-70B (80), SD 2.1 as
 * 32 layers; C(TP) from FLOPs at 50% of 312 TFLOP/s with a TP
 * communication overhead, bf16 weights, ZeRO-1 states, 80 GB GPUs. */
static void seventy_two_b(loom_dt_unit u[3], loom_dt_config *cfg)
{
    static const double params[3] = {0.63e9, 70e9, 1.0e9};
    static const double tokens[3] = {4 * 4096.0, 8192.0, 2 * 16384.0};
    static const int layers[3] = {32, 80, 32};
    for (int m = 0; m < 3; m++) {
        double flops = 6.0 * params[m] * tokens[m];
        u[m] = unit(0, 0, 0, 0, layers[m]);
        for (int i = 0; i < 4; i++) {
            int tp = 1 << i;
            u[m].c_ms[i] = flops / (0.5 * 312e12) * 1e3 * (1 + 0.08 * i);
            (void)tp;
        }
        u[m].param_bytes = 4 * params[m];
        u[m].state_bytes = 12 * params[m];
        u[m].act_bytes = 34.0 * tokens[m] * 8192 * (layers[m] / 80.0);
    }
    memset(cfg, 0, sizeof *cfg);
    cfg->gpus = 1296;
    cfg->global_batch = 1920;
    cfg->max_tp = 8;
    cfg->vpp = 1;
    cfg->gpu_bytes = 80e9;
}

/* Monotonic clock in milliseconds. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

START_TEST(speed_72b_on_1296_gpus)
{
    loom_dt_unit u[3];
    loom_dt_config cfg;
    seventy_two_b(u, &cfg);
    loom_dt_plan best[4];
    int32_t n;
    loom_dt_stats st;
    loom_error err = {0, ""};
    double t0 = now_ms();
    ck_assert_msg(loom_dt_search(u, &cfg, best, 4, &n, &st, &err) == LOOM_OK,
                  "%s", err.message);
    double ms = now_ms() - t0;
    ck_assert_int_eq(n, 4);
    ck_assert_int_le(best[0].gpus[0] + best[0].gpus[1] + best[0].gpus[2], 1296);
    ck_assert_int_eq(1920 % best[0].dp[LOOM_DT_LLM], 0);
    ck_assert_int_ge(st.parallelisms, 100000);
#if defined(__SANITIZE_ADDRESS__)
    ck_assert_double_lt(ms, 20000.0);
#else
    ck_assert_double_lt(ms, 1000.0); /* the paper's convex solver: 922 ms */
#endif
}
END_TEST

START_TEST(share_positions_round_the_dp_ratio)
{
    ck_assert_int_eq(loom_dt_share_positions(1, 4, 2, 32), 2);
    ck_assert_int_eq(loom_dt_share_positions(2, 2, 2, 32), 2);
    ck_assert_int_eq(loom_dt_share_positions(1, 2, 3, 32), 1); /* 2/3 */
    ck_assert_int_eq(loom_dt_share_positions(3, 2, 3, 32), 2);
    ck_assert_int_eq(loom_dt_share_positions(1, 1, 8, 32), 1); /* >= 1 */
    ck_assert_int_eq(loom_dt_share_positions(40, 4, 1, 32), 32); /* <= layers */
}
END_TEST

static loom_layer tlayers[16];
static const int32_t llm_in[1] = {0}, gen_in[1] = {1};

/* vit (4 layers) -> llm (8) -> gen (4), and 8 samples in 4 microbatches. */
typedef struct fixture {
    loom_module modules[3];
    loom_model model;
    loom_problem problem;
    loom_sample samples[8];
    loom_iteration it;
} fixture;

/* Fills f with the model above and tp 2 x pp 4 x dp 1 = 8 GPUs. */
static void setup(fixture *f)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 16; i++) {
        tlayers[i].hidden = 256;
        tlayers[i].ffn_hidden = 1024;
        tlayers[i].heads = 4;
        tlayers[i].kv_heads = 4;
    }
    static const char *names[3] = {"vit", "llm", "gen"};
    static const int kinds[3] = {LOOM_MODULE_ENCODER, LOOM_MODULE_BACKBONE,
                                 LOOM_MODULE_DECODER};
    static const int nl[3] = {4, 8, 4};
    for (int m = 0; m < 3; m++) {
        f->modules[m].name = names[m];
        f->modules[m].kind = kinds[m];
        f->modules[m].modality = m == 1 ? LOOM_MODALITY_TEXT : LOOM_MODALITY_IMAGE;
        f->modules[m].n_layers = nl[m];
        f->modules[m].layers = tlayers;
        f->modules[m].tokens_per_item = 16;
    }
    f->modules[1].n_inputs = 1;
    f->modules[1].inputs = llm_in;
    f->modules[2].n_inputs = 1;
    f->modules[2].inputs = gen_in;
    f->model.name = "toy";
    f->model.n_modules = 3;
    f->model.modules = f->modules;
    f->problem.struct_size = sizeof f->problem;
    f->problem.kind = LOOM_PROBLEM_MODEL;
    f->problem.model = &f->model;
    f->problem.parallel = (loom_parallel){2, 4, 1, 1, 4, 0};
    for (int i = 0; i < 8; i++) {
        f->samples[i].text_tokens = 100;
        f->samples[i].images = 1 + i % 3;
        f->samples[i].microbatch = i / 2;
    }
    f->it = (loom_iteration){3, 8, f->samples};
}

START_TEST(layout_one_flow_per_module_on_disjoint_ranks)
{
    fixture f;
    setup(&f);
    int32_t um[3];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_dt_find_units(&f.model, um, &err), LOOM_OK);
    ck_assert_int_eq(um[LOOM_DT_ENC], 0);
    ck_assert_int_eq(um[LOOM_DT_LLM], 1);
    ck_assert_int_eq(um[LOOM_DT_GEN], 2);
    loom_dt_plan plan;
    memset(&plan, 0, sizeof plan);
    int32_t tp[3] = {1, 2, 1}, dp[3] = {4, 2, 2}, pp[3] = {1, 4, 2};
    memcpy(plan.tp, tp, sizeof tp);
    memcpy(plan.dp, dp, sizeof dp);
    memcpy(plan.pp, pp, sizeof pp);
    int32_t gpus[3] = {4, 16, 4}; /* tp * dp * pp */
    memcpy(plan.gpus, gpus, sizeof gpus);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &f.it);
    loom_partition *p = NULL;
    ck_assert_int_eq(set->add(set, &p, &err), LOOM_OK);
    ck_assert_int_eq(loom_dt_layout(&f.model, um, &plan, &f.it, 4, 4, p, &err), LOOM_OK);
    /* encoder share 1*4/2 = 2 ranks, LLM 4, generator 2*2/2 = 2 */
    ck_assert_int_eq(p->n_flows, 3);
    ck_assert_int_eq(p->n_ranks, 8);
    ck_assert_int_eq(p->flows[0].n_pos, 2);
    ck_assert_int_eq(p->flows[1].n_pos, 4);
    ck_assert_int_eq(p->flows[2].n_pos, 2);
    ck_assert_int_eq(p->flows[0].n_inputs, 0);
    ck_assert_int_eq(p->flows[1].n_inputs, 1);
    ck_assert_int_eq(p->flows[1].inputs[0], 0);
    ck_assert_int_eq(p->flows[2].inputs[0], 1);
    for (int s = 0; s < 8; s++) {
        ck_assert_int_eq(p->positions[s].rank, s);
        ck_assert_int_eq(p->positions[s].n_spans, 1);
    }
    ck_assert_int_eq(p->spans[0].n_layers, 2);
    ck_assert_int_eq(p->spans[0].tp, 1);
    ck_assert_int_eq(p->spans[2].module, 1);
    ck_assert_int_eq(p->spans[2].tp, 2);
    ck_assert_int_eq(p->spans[5].first_layer, 6);
    ck_assert_int_eq(p->spans[7].module, 2);
    ck_assert_int_eq(p->tp, 2);
    /* units 0 and 2 (of 4) belong to DP group 0 of 2: microbatches 0, 1 */
    ck_assert_int_eq(p->n_microbatches, 2);
    static const int want[8] = {0, 0, -1, -1, 1, 1, -1, -1};
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < 8; i++)
            ck_assert_int_eq(p->sample_mb[m * 8 + i], want[i]);
    ck_assert_str_eq(p->label, "disttrain e1.4.1 l2.2.4 g1.2.2 conn2,2");
    /* the per-module layouts it emits: the LLM as the top-level layout,
     * the encoder and the generator on their own GPUs after it */
    ck_assert_int_eq(p->n_layouts, 3);
    ck_assert_int_eq(p->layouts[0].placement, LOOM_LAYOUT_DISJOINT);
    ck_assert_int_eq(p->layouts[0].tp, 1);
    ck_assert_int_eq(p->layouts[0].dp, 4);
    ck_assert_int_eq(p->layouts[0].pp, 1);
    ck_assert_int_eq(p->layouts[0].first_gpu, 16);
    ck_assert_int_eq(p->layouts[0].gpus, 4);
    ck_assert_int_eq(p->layouts[1].placement, LOOM_LAYOUT_TOP);
    ck_assert_int_eq(p->layouts[1].tp, 2);
    ck_assert_int_eq(p->layouts[1].pp, 4);
    ck_assert_int_eq(p->layouts[1].dp, 2);
    ck_assert_int_eq(p->layouts[2].placement, LOOM_LAYOUT_DISJOINT);
    ck_assert_int_eq(p->layouts[2].first_gpu, 20);
    ck_assert_int_eq(p->layouts[2].gpus, 4);
    /* Fig. 9's DP sizes: encoder 2, LLM 3, generator 1 -> conn 1,1 */
    plan.dp[0] = 2;
    plan.dp[1] = 3;
    plan.dp[2] = 1;
    ck_assert_int_eq(loom_dt_layout(&f.model, um, &plan, &f.it, 4, 4, p, &err), LOOM_OK);
    ck_assert_ptr_nonnull(strstr(p->label, "conn1,1"));
    ck_assert_int_eq(p->flows[0].n_pos, 1); /* share 2/3 rounds to 1 */
    ck_assert_int_eq(p->n_microbatches, 1); /* BS 4 / DP 3: unit 0 */
    ck_assert_int_eq(p->sample_mb[0], 0);
    ck_assert_int_eq(p->sample_mb[6], -1);
    /* the global batch is 4 replicas' share: 8 microbatches per pipeline
     * of DP 2 but only 4 units: all 4, in order */
    plan.dp[1] = 2;
    ck_assert_int_eq(loom_dt_layout(&f.model, um, &plan, &f.it, 4, 16, p, &err), LOOM_OK);
    ck_assert_int_eq(p->n_microbatches, 4);
    ck_assert_int_eq(p->sample_mb[7], 3);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(find_units_errors)
{
    fixture f;
    setup(&f);
    int32_t um[3];
    loom_error err = {0, ""};
    f.modules[2].kind = LOOM_MODULE_ENCODER;
    ck_assert_int_eq(loom_dt_find_units(&f.model, um, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message,
                     "disttrain-alloc: expected at most one encoder module "
                     "(DistTrain's encoder, backbone, generator), found vit "
                     "and gen");
    f.modules[2].kind = LOOM_MODULE_DECODER;
    f.modules[1].kind = LOOM_MODULE_DECODER;
    ck_assert_int_eq(loom_dt_find_units(&f.model, um, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "found llm and gen"));
    f.model.n_modules = 1;
    ck_assert_int_eq(loom_dt_find_units(&f.model, um, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "expected a backbone module, found none"));
}
END_TEST

/* Fake "loom.cost": every module sees 1000 tokens per microbatch; a layer
 * of module m takes base[m] / tp forward, twice that backward (input
 * grad), param_bytes 2e6 / tp and 1e6 activation bytes / tp. */
static const double fake_base[3] = {1.0, 3.0, 2.0};
static int fake_layer(loom_ctx *ctx, int32_t module, int32_t layer,
                      const loom_shape *shape, int32_t policy,
                      loom_layer_cost *out, loom_error *err)
{
    (void)ctx, (void)layer, (void)policy, (void)err;
    memset(out, 0, sizeof *out);
    out->forward_ms = fake_base[module] / shape->tp;
    out->input_grad_ms = 2 * out->forward_ms;
    out->param_bytes = 2000000 / shape->tp;
    out->activation_bytes = 1000000 / shape->tp;
    return LOOM_OK;
}
static int fake_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                      int32_t microbatches, int32_t microbatch, int32_t subs,
                      loom_shape *out, loom_error *err)
{
    (void)ctx, (void)module, (void)it, (void)microbatches, (void)microbatch,
        (void)subs, (void)err;
    memset(out, 0, sizeof *out);
    out->tokens = 1000;
    out->sequences = 1;
    out->tp = 1;
    return LOOM_OK;
}
static const loom_cost_service fake_cost = {
    sizeof(loom_cost_service), 1, fake_layer, fake_shape, NULL, NULL, NULL,
};

/* Runs the plugin with params "key=value" pairs (NULL-terminated). */
static int run_plugin(const loom_problem *pb, const loom_iteration *it,
                      loom_candidates *set, const char *const *params,
                      int with_cost, loom_error *err)
{
    const loom_partitioner_vtable *vt =
        (const loom_partitioner_vtable *)loom_static_disttrain_alloc()->role(
            LOOM_ROLE_PARTITIONER);
    ck_assert_ptr_nonnull(vt);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(h, pb);
    if (with_cost)
        loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &fake_cost);
    for (int i = 0; params && params[i]; i += 2)
        loom_mock_host_set_param(h, params[i], params[i + 1]);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, err), LOOM_OK);
    int rc = vt->partition(self, pb, it, set, err);
    if (rc == LOOM_OK)
        ck_assert_ptr_nonnull(strstr(loom_mock_host_last_log(h), "TP x DP choices"));
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

START_TEST(plugin_emits_the_ranked_plans)
{
    fixture f;
    setup(&f);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &f.it);
    loom_error err = {0, ""};
    static const char *const params[] = {"candidates", "3", NULL};
    ck_assert_msg(run_plugin(&f.problem, &f.it, set, params, 1, &err) == LOOM_OK,
                  "%s", err.message);
    ck_assert_int_eq(set->n, 3);
    /* the same search by hand: C_m(tp) = layers * 3 * base / tp */
    loom_dt_unit u[3];
    static const int nl[3] = {4, 8, 4};
    for (int m = 0; m < 3; m++) {
        u[m] = unit(0, 0, 0, 0, nl[m]);
        for (int i = 0; i < 4; i++)
            u[m].c_ms[i] = nl[m] * 3 * fake_base[m] / (1 << i);
        u[m].param_bytes = 4e6 * nl[m];
        u[m].state_bytes = 12e6 * nl[m];
        u[m].act_bytes = 1e6 * nl[m];
    }
    loom_dt_config cfg = {8, 4, 8, 1, 0, 0, 0, 0};
    loom_dt_plan best[3];
    int32_t n;
    ck_assert_int_eq(loom_dt_search(u, &cfg, best, 3, &n, NULL, &err), LOOM_OK);
    int32_t um[3] = {0, 1, 2};
    for (int c = 0; c < 3; c++) {
        loom_partition *want = NULL;
        ck_assert_int_eq(set->add(set, &want, &err), LOOM_OK);
        ck_assert_int_eq(loom_dt_layout(&f.model, um, &best[c], &f.it, 4, 4, want, &err),
                         LOOM_OK);
        ck_assert_str_eq(set->items[c]->label, want->label);
        ck_assert_int_eq(set->items[c]->n_ranks, want->n_ranks);
    }
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(plugin_errors)
{
    fixture f;
    setup(&f);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &f.it);
    loom_error err = {0, ""};
    ck_assert_int_eq(run_plugin(&f.problem, &f.it, set, NULL, 0, &err), LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.message, "\"loom.cost\" service"));
    ck_assert_int_eq(run_plugin(&f.problem, NULL, set, NULL, 1, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "expected the iteration's samples"));
    static const char *const tiny[] = {"gpus", "3", NULL};
    ck_assert_int_eq(run_plugin(&f.problem, &f.it, set, tiny, 1, &err), LOOM_OK);
    ck_assert_int_eq(set->items[set->n - 1]->n_ranks, 3); /* 1 GPU each */
    f.problem.memory_cap_bytes = 1e6; /* activations alone exceed it */
    ck_assert_int_eq(run_plugin(&f.problem, &f.it, set, NULL, 1, &err),
                     LOOM_EINFEASIBLE);
    f.problem.kind = LOOM_PROBLEM_STAGE_TIMES;
    ck_assert_int_eq(run_plugin(&f.problem, &f.it, set, NULL, 1, &err), LOOM_DECLINED);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_disttrain_alloc();
    cJSON *m = loom_test_json(loom_test_src("plugins/disttrain-alloc/manifest.json"));
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring, info->version);
    const cJSON *prov = cJSON_GetObjectItem(m, "provides");
    ck_assert_str_eq(cJSON_GetObjectItem(prov, "role")->valuestring, LOOM_ROLE_PARTITIONER);
    ck_assert_ptr_nonnull(info->role(LOOM_ROLE_PARTITIONER));
    ck_assert_ptr_null(info->role(LOOM_ROLE_RANKER));
    cJSON_Delete(m);
}
END_TEST

/* The disttrain-alloc suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("disttrain-alloc");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, connectors_are_the_gcd_of_dp_sizes);
    tcase_add_test(tc, divisors_of_the_global_batch);
    tcase_add_test(tc, relaxation_prefers_dp2);
    tcase_add_test(tc, best_integer_plan_is_dp1);
    tcase_add_test(tc, eq1_eq5_closed_forms);
    tcase_add_test(tc, memory_lower_bound);
    tcase_add_test(tc, integer_step_is_optimal);
    tcase_add_test(tc, search_matches_brute_force);
    tcase_add_test(tc, search_input_errors);
    tcase_add_test(tc, speed_72b_on_1296_gpus);
    tcase_add_test(tc, share_positions_round_the_dp_ratio);
    tcase_add_test(tc, layout_one_flow_per_module_on_disjoint_ranks);
    tcase_add_test(tc, find_units_errors);
    tcase_add_test(tc, plugin_emits_the_ranked_plans);
    tcase_add_test(tc, plugin_errors);
    tcase_add_test(tc, manifest_matches_binary);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
