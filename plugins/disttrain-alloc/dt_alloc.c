/*
 * dt_alloc.c - DistTrain's disaggregated model orchestration (DistTrain §5,
 * Algorithm 1): iteration-time model, memory bounds, relaxed and integer
 * GPU allocation, and the ranked search over TP x DP. See dt_alloc.h.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "dt_alloc.h"

#define DT_MAX_DIVISORS 2048
#define DT_REL_TOL 1e-9

/* Euclid's algorithm on absolute values. */
int32_t loom_dt_gcd(int32_t a, int32_t b)
{
    if (a < 0)
        a = -a;
    if (b < 0)
        b = -b;
    while (b) {
        int32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Divisors in ascending order: those up to sqrt(n) (at most 1024 for any
 * int32 n), then their co-divisors in reverse. */
int32_t loom_dt_divisors(int32_t n, int32_t *out, int32_t cap)
{
    if (n < 1)
        return 0;
    int32_t small[1024], n_small = 0, total = 0;
    for (int64_t d = 1; d * d <= n && n_small < 1024; d++)
        if (n % d == 0)
            small[n_small++] = (int32_t)d;
    for (int32_t i = 0; i < n_small; i++, total++)
        if (total < cap)
            out[total] = small[i];
    for (int32_t i = n_small - 1; i >= 0; i--) {
        int32_t co = n / small[i];
        if (co == small[i])
            continue;
        if (total < cap)
            out[total] = co;
        total++;
    }
    return total;
}

/* C_m(tp), or NaN when tp is not a usable candidate of u. */
static double dt_c(const loom_dt_unit *u, int32_t tp)
{
    for (int i = 0; i < LOOM_DT_N_TP; i++)
        if ((1 << i) == tp)
            return u->c_ms[i] >= 0 ? u->c_ms[i] : NAN;
    return NAN;
}

double loom_dt_stage_ms(const loom_dt_unit *u, int32_t tp, int32_t dp_llm,
                        double gpus)
{
    if (!u->present || gpus <= 0)
        return 0;
    return (double)dp_llm * (double)tp * dt_c(u, tp) / gpus;
}

double loom_dt_warmup_ms(const loom_dt_unit u[LOOM_DT_UNITS],
                         const int32_t tp[LOOM_DT_UNITS],
                         const int32_t dp[LOOM_DT_UNITS], int32_t vpp)
{
    double dp_llm = dp[LOOM_DT_LLM], w = 0;
    for (int m = 0; m < LOOM_DT_UNITS; m++)
        if (u[m].present)
            w += dp_llm / (double)dp[m] * dt_c(&u[m], tp[m]);
    return w / (vpp > 1 ? vpp : 1);
}

double loom_dt_iter_ms(const loom_dt_unit u[LOOM_DT_UNITS],
                       const int32_t tp[LOOM_DT_UNITS],
                       const int32_t dp[LOOM_DT_UNITS],
                       const double gpus[LOOM_DT_UNITS], int32_t global_batch,
                       int32_t vpp)
{
    double worst = 0;
    for (int m = 0; m < LOOM_DT_UNITS; m++) {
        double t = loom_dt_stage_ms(&u[m], tp[m], dp[LOOM_DT_LLM], gpus[m]);
        worst = t > worst ? t : worst;
    }
    double rest = (double)(global_batch / dp[LOOM_DT_LLM]) - 1.0;
    return loom_dt_warmup_ms(u, tp, dp, vpp) + worst * (rest > 0 ? rest : 0);
}

int loom_dt_min_gpus(const loom_dt_unit *u, int32_t tp, int32_t dp,
                     int32_t dp_llm, double gpu_bytes, int zero1,
                     double *min_gpus)
{
    *min_gpus = 0;
    if (!u->present || gpu_bytes <= 0)
        return LOOM_OK;
    double act = (double)dp_llm / (double)dp * u->act_bytes / (double)tp;
    if (act >= gpu_bytes)
        return LOOM_EINFEASIBLE;
    if (zero1)
        *min_gpus = ((double)dp * u->param_bytes + u->state_bytes) /
                    (gpu_bytes - act);
    else
        *min_gpus = (double)(dp > dp_llm ? dp : dp_llm) *
                    (u->param_bytes + u->state_bytes) / (gpu_bytes - act);
    return LOOM_OK;
}

/* A_m = DP_lm * TP_m * C_m: T_m = A_m / gpus. */
static double dt_work(const loom_dt_unit *u, int32_t tp, int32_t dp_llm)
{
    return u->present ? (double)dp_llm * (double)tp * dt_c(u, tp) : 0;
}

/* GPUs the relaxed problem needs for bottleneck t. */
static double dt_relaxed_need(const double a[LOOM_DT_UNITS],
                              const double lo[LOOM_DT_UNITS], double t)
{
    double sum = 0;
    for (int m = 0; m < LOOM_DT_UNITS; m++) {
        double g = a[m] > 0 ? a[m] / t : 0;
        sum += g > lo[m] ? g : lo[m];
    }
    return sum;
}

int loom_dt_relaxed(const loom_dt_unit u[LOOM_DT_UNITS],
                    const int32_t tp[LOOM_DT_UNITS],
                    const int32_t dp[LOOM_DT_UNITS],
                    const double min_gpus[LOOM_DT_UNITS], int32_t n,
                    double gpus_out[LOOM_DT_UNITS], double *bottleneck_ms)
{
    double a[LOOM_DT_UNITS], lo[LOOM_DT_UNITS], sum_a = 0, sum_lo = 0;
    for (int m = 0; m < LOOM_DT_UNITS; m++) {
        a[m] = dt_work(&u[m], tp[m], dp[LOOM_DT_LLM]);
        lo[m] = u[m].present ? min_gpus[m] : 0;
        sum_a += a[m];
        sum_lo += lo[m];
    }
    if (sum_lo > n || n <= 0 || !(sum_a > 0))
        return LOOM_EINFEASIBLE;
    double t = sum_a / n;
    if (dt_relaxed_need(a, lo, t) > n * (1 + DT_REL_TOL)) {
        /* a bound binds: the need is decreasing in t, bisect on it */
        double t_lo = t, t_hi = t;
        while (dt_relaxed_need(a, lo, t_hi) > n)
            t_hi *= 2;
        for (int i = 0; i < 200 && t_hi - t_lo > t_hi * 1e-15; i++) {
            double mid = 0.5 * (t_lo + t_hi);
            if (dt_relaxed_need(a, lo, mid) > n)
                t_lo = mid;
            else
                t_hi = mid;
        }
        t = t_hi;
    }
    for (int m = 0; m < LOOM_DT_UNITS; m++) {
        double g = a[m] > 0 ? a[m] / t : 0;
        gpus_out[m] = u[m].present ? (g > lo[m] ? g : lo[m]) : 0;
    }
    *bottleneck_ms = t;
    return LOOM_OK;
}

int loom_dt_integer(const loom_dt_unit u[LOOM_DT_UNITS],
                    const int32_t tp[LOOM_DT_UNITS],
                    const int32_t dp[LOOM_DT_UNITS],
                    const int32_t pp_min[LOOM_DT_UNITS], int32_t n,
                    int32_t pp_out[LOOM_DT_UNITS], double *bottleneck_ms)
{
    double a[LOOM_DT_UNITS], per[LOOM_DT_UNITS];
    int64_t used = 0;
    for (int m = 0; m < LOOM_DT_UNITS; m++) {
        pp_out[m] = 0;
        a[m] = 0;
        per[m] = 0;
        if (!u[m].present)
            continue;
        int32_t p = pp_min[m] > 1 ? pp_min[m] : 1;
        if (p > u[m].max_pp)
            return LOOM_EINFEASIBLE;
        a[m] = dt_work(&u[m], tp[m], dp[LOOM_DT_LLM]);
        per[m] = (double)tp[m] * (double)dp[m];
        pp_out[m] = p;
        used += (int64_t)tp[m] * dp[m] * p;
    }
    if (used > n)
        return LOOM_EINFEASIBLE;
    for (;;) {
        int b = -1;
        double v1 = -1, v2 = 0;
        for (int m = 0; m < LOOM_DT_UNITS; m++) {
            if (!u[m].present)
                continue;
            double v = a[m] / (per[m] * pp_out[m]);
            if (v > v1) {
                v2 = v1 > v2 ? v1 : v2;
                v1 = v;
                b = m;
            } else if (v > v2) {
                v2 = v;
            }
        }
        int64_t cost = (int64_t)tp[b] * dp[b];
        int64_t afford = (n - used) / cost;
        int64_t room = u[b].max_pp - pp_out[b];
        if (afford < 1 || room < 1)
            break;
        /* jump straight to the PP at which b stops being above v2 */
        int64_t want = v2 > 0 ? (int64_t)ceil(a[b] / (per[b] * v2) - 1e-12)
                              : room + pp_out[b];
        int64_t step = want - pp_out[b];
        if (step < 1)
            step = 1;
        if (step > afford)
            step = afford;
        if (step > room)
            step = room;
        pp_out[b] += (int32_t)step;
        used += step * cost;
    }
    double worst = 0;
    for (int m = 0; m < LOOM_DT_UNITS; m++)
        if (u[m].present) {
            double v = a[m] / (per[m] * pp_out[m]);
            worst = v > worst ? v : worst;
        }
    /* give back stages the final bottleneck does not need */
    for (int m = 0; m < LOOM_DT_UNITS; m++) {
        if (!u[m].present)
            continue;
        int32_t floor_pp = pp_min[m] > 1 ? pp_min[m] : 1;
        while (pp_out[m] > floor_pp &&
               a[m] / (per[m] * (pp_out[m] - 1)) <= worst * (1 + 1e-12))
            pp_out[m]--;
    }
    *bottleneck_ms = worst;
    return LOOM_OK;
}

void loom_dt_plan_eval(const loom_dt_unit u[LOOM_DT_UNITS],
                       int32_t global_batch, int32_t vpp, loom_dt_plan *plan)
{
    double g[LOOM_DT_UNITS], worst = 0;
    for (int m = 0; m < LOOM_DT_UNITS; m++) {
        plan->gpus[m] = u[m].present ? plan->tp[m] * plan->dp[m] * plan->pp[m] : 0;
        g[m] = plan->gpus[m];
        plan->stage_ms[m] =
            loom_dt_stage_ms(&u[m], plan->tp[m], plan->dp[LOOM_DT_LLM], g[m]);
        worst = plan->stage_ms[m] > worst ? plan->stage_ms[m] : worst;
    }
    double rest = (double)(global_batch / plan->dp[LOOM_DT_LLM]) - 1.0;
    plan->warmup_ms = loom_dt_warmup_ms(u, plan->tp, plan->dp, vpp);
    plan->steady_ms = worst * (rest > 0 ? rest : 0);
    plan->iter_ms = plan->warmup_ms + plan->steady_ms;
}

int loom_dt_plan_better(const loom_dt_plan *a, const loom_dt_plan *b)
{
    double scale = fabs(a->iter_ms) > fabs(b->iter_ms) ? fabs(a->iter_ms)
                                                       : fabs(b->iter_ms);
    if (fabs(a->iter_ms - b->iter_ms) > DT_REL_TOL * scale)
        return a->iter_ms < b->iter_ms;
    int32_t ga = 0, gb = 0, pa = 0, pb = 0;
    for (int m = 0; m < LOOM_DT_UNITS; m++) {
        ga += a->gpus[m];
        gb += b->gpus[m];
        pa += a->pp[m];
        pb += b->pp[m];
    }
    if (ga != gb)
        return ga < gb;
    return pa < pb;
}

/* Inserts plan into the sorted top-k list (stable: an equal plan found
 * later goes after the earlier ones). */
static void dt_keep(loom_dt_plan *best, int32_t k, int32_t *n_best,
                    const loom_dt_plan *plan)
{
    int32_t at = *n_best;
    while (at > 0 && loom_dt_plan_better(plan, &best[at - 1]))
        at--;
    if (at >= k)
        return;
    int32_t last = *n_best < k ? *n_best : k - 1;
    for (int32_t i = last; i > at; i--)
        best[i] = best[i - 1];
    best[at] = *plan;
    if (*n_best < k)
        (*n_best)++;
}

/* The TP values of u to try (all 0 for an absent unit). */
static int dt_tps(const loom_dt_unit *u, int32_t max_tp, int32_t *out)
{
    if (!u->present) {
        out[0] = 0;
        return 1;
    }
    int n = 0;
    for (int i = 0; i < LOOM_DT_N_TP; i++)
        if ((1 << i) <= max_tp && u->c_ms[i] >= 0)
            out[n++] = 1 << i;
    return n;
}

/* Everything the inner loops need about one (unit, tp, dp) choice. */
typedef struct dt_choice {
    int32_t tp, dp, pp_min;
    double work, warm; /* A_m and its warm-up share (DP_lm/DP_m) C_m */
    double t_floor;    /* A_m / (TP DP max_pp): best stage time it allows */
} dt_choice;

/* Fills c for unit u; 0 when the choice is infeasible on its own. */
static int dt_choose(const loom_dt_unit *u, int32_t tp, int32_t dp,
                     int32_t dp_llm, const loom_dt_config *cfg, dt_choice *c)
{
    memset(c, 0, sizeof *c);
    if (!u->present)
        return 1;
    if ((int64_t)tp * dp > cfg->gpus)
        return 0;
    double g_min = 0;
    if (loom_dt_min_gpus(u, tp, dp, dp_llm, cfg->gpu_bytes, cfg->zero1, &g_min) !=
        LOOM_OK)
        return 0;
    double per = (double)tp * dp;
    double pmin = ceil(g_min / per - 1e-9);
    c->pp_min = pmin > 1 ? (pmin > 1e9 ? 1000000000 : (int32_t)pmin) : 1;
    if (c->pp_min > u->max_pp)
        return 0;
    c->tp = tp;
    c->dp = dp;
    c->work = dt_work(u, tp, dp_llm);
    c->warm = (double)dp_llm / dp * dt_c(u, tp);
    c->t_floor = c->work / (per * u->max_pp);
    return 1;
}

/* Solves one TP x DP candidate and offers its plan to the top-k list. */
static void dt_try(const loom_dt_unit u[LOOM_DT_UNITS],
                   const loom_dt_config *cfg, const dt_choice c[LOOM_DT_UNITS],
                   loom_dt_plan *best, int32_t k, int32_t *n_best,
                   loom_dt_stats *st)
{
    int32_t dp_llm = c[LOOM_DT_LLM].dp;
    double rest = (double)(cfg->global_batch / dp_llm) - 1.0;
    double warm = 0, sum_a = 0, t_lb = 0;
    int64_t min_used = 0;
    for (int m = 0; m < LOOM_DT_UNITS; m++) {
        warm += c[m].warm;
        sum_a += c[m].work;
        t_lb = c[m].t_floor > t_lb ? c[m].t_floor : t_lb;
        min_used += (int64_t)c[m].tp * c[m].dp * c[m].pp_min;
    }
    st->parallelisms++;
    if (min_used > cfg->gpus)
        return;
    warm /= cfg->vpp > 1 ? cfg->vpp : 1;
    t_lb = sum_a / cfg->gpus > t_lb ? sum_a / cfg->gpus : t_lb;
    if (*n_best == k) {
        double lb = warm + t_lb * (rest > 0 ? rest : 0);
        if (lb > best[k - 1].iter_ms * (1 + DT_REL_TOL)) {
            st->pruned++;
            return;
        }
    }
    loom_dt_plan plan;
    memset(&plan, 0, sizeof plan);
    int32_t pp_min[LOOM_DT_UNITS];
    for (int m = 0; m < LOOM_DT_UNITS; m++) {
        plan.tp[m] = c[m].tp;
        plan.dp[m] = c[m].dp;
        pp_min[m] = c[m].pp_min;
    }
    st->solved++;
    double bottleneck = 0;
    if (rest > 0) {
        if (loom_dt_integer(u, plan.tp, plan.dp, pp_min, cfg->gpus, plan.pp,
                            &bottleneck) != LOOM_OK)
            return;
    } else {
        /* one microbatch per pipeline: no steady state, least GPUs win */
        for (int m = 0; m < LOOM_DT_UNITS; m++)
            plan.pp[m] = u[m].present ? pp_min[m] : 0;
    }
    st->feasible++;
    loom_dt_plan_eval(u, cfg->global_batch, cfg->vpp, &plan);
    dt_keep(best, k, n_best, &plan);
}

int loom_dt_search(const loom_dt_unit u[LOOM_DT_UNITS],
                   const loom_dt_config *cfg, loom_dt_plan *best, int32_t k,
                   int32_t *n_best, loom_dt_stats *stats, loom_error *err)
{
    loom_dt_stats local;
    loom_dt_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    *n_best = 0;
    if (k < 1 || cfg->gpus < 1 || cfg->global_batch < 1 || cfg->max_tp < 1)
        return loom_error_format(err, LOOM_EINVAL,
                       "disttrain-alloc: expected k, gpus, global batch and "
                       "max TP >= 1, found %d, %d, %d and %d",
                       k, cfg->gpus, cfg->global_batch, cfg->max_tp);
    if (!u[LOOM_DT_LLM].present)
        return loom_error_format(err, LOOM_EINVAL,
                       "disttrain-alloc: expected a backbone module, found "
                       "none");
    int32_t tps[LOOM_DT_UNITS][LOOM_DT_N_TP], n_tp[LOOM_DT_UNITS];
    for (int m = 0; m < LOOM_DT_UNITS; m++) {
        if (u[m].present && u[m].max_pp < 1)
            return loom_error_format(err, LOOM_EINVAL,
                           "disttrain-alloc: unit %d: expected at least one "
                           "layer, found %d", m, u[m].max_pp);
        n_tp[m] = dt_tps(&u[m], cfg->max_tp, tps[m]);
        if (n_tp[m] == 0)
            return loom_error_format(err, LOOM_EINVAL,
                           "disttrain-alloc: unit %d: expected a non-negative "
                           "time C(TP) for some TP in {1,2,4,8} <= %d, found "
                           "none", m, cfg->max_tp);
    }
    int32_t divs[DT_MAX_DIVISORS];
    int32_t n_div = loom_dt_divisors(cfg->global_batch, divs, DT_MAX_DIVISORS);
    if (n_div > DT_MAX_DIVISORS)
        n_div = DT_MAX_DIVISORS;

    dt_choice c[LOOM_DT_UNITS];
    int32_t none = 0;
    for (int a = 0; a < n_tp[LOOM_DT_LLM]; a++)
        for (int32_t i = 0; i < n_div; i++) {
            int32_t dp_llm = divs[i];
            if (dp_llm < cfg->min_dp_llm)
                continue;
            if (!dt_choose(&u[LOOM_DT_LLM], tps[LOOM_DT_LLM][a], dp_llm, dp_llm,
                           cfg, &c[LOOM_DT_LLM]))
                continue;
            for (int b = 0; b < n_tp[LOOM_DT_ENC]; b++)
                for (int32_t j = 0; j < (u[LOOM_DT_ENC].present ? n_div : 1); j++) {
                    int32_t dp_me = u[LOOM_DT_ENC].present ? divs[j] : 0;
                    if (dp_me > dp_llm && !cfg->dp_above_backbone)
                        break;
                    if (!dt_choose(&u[LOOM_DT_ENC], tps[LOOM_DT_ENC][b], dp_me,
                                   dp_llm, cfg, &c[LOOM_DT_ENC]))
                        continue;
                    for (int d = 0; d < n_tp[LOOM_DT_GEN]; d++)
                        for (int32_t q = 0; q < (u[LOOM_DT_GEN].present ? n_div : 1); q++) {
                            int32_t dp_mg = u[LOOM_DT_GEN].present ? divs[q] : 0;
                            if (dp_mg > dp_llm && !cfg->dp_above_backbone)
                                break;
                            if (!dt_choose(&u[LOOM_DT_GEN], tps[LOOM_DT_GEN][d],
                                           dp_mg, dp_llm, cfg, &c[LOOM_DT_GEN]))
                                continue;
                            dt_try(u, cfg, c, best, k, n_best, st);
                        }
                }
            none++;
        }
    if (*n_best == 0)
        return loom_error_format(err, LOOM_EINFEASIBLE,
                       "disttrain-alloc: no integer-feasible plan: %lld TP x "
                       "DP combinations on %d GPUs with global batch %d "
                       "(%d backbone choices fit memory on their own), none "
                       "fits the GPUs, the memory (%.3g bytes per GPU) and "
                       "PP <= layers",
                       (long long)st->parallelisms, cfg->gpus,
                       cfg->global_batch, none, cfg->gpu_bytes);
    return LOOM_OK;
}
