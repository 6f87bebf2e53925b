/*
 * optimus_plans.c - Optimus's encoder plans, memory model, microbatch
 * splits, placement, global ordering and bubble closed forms. See
 * optimus_plans.h.
 */
#include <stdint.h>
#include "optimus_plans.h"

int32_t loom_optimus_divisors(int32_t n, int32_t *out, int32_t cap)
{
    int32_t total = 0;
    for (int32_t d = 1; d <= n; d++)
        if (n % d == 0) {
            if (total < cap)
                out[total] = d;
            total++;
        }
    return total;
}

double loom_optimus_model_state_bytes(double k, int64_t dp_enc, double phi_enc,
                                      int64_t dp_llm, double phi_llm,
                                      int64_t n_gpu)
{
    if (n_gpu < 1)
        return 0;
    return k * ((double)dp_enc * phi_enc + (double)dp_llm * phi_llm) /
           (double)n_gpu;
}

int32_t loom_optimus_enc_plans(int32_t pp_llm, int32_t tp_llm, int32_t dp_llm,
                               double k, double phi_enc, double phi_llm,
                               loom_optimus_plan *out, int32_t cap)
{
    if (pp_llm < 1 || tp_llm < 1 || dp_llm < 1)
        return 0;
    int32_t pps[64], tps[64];
    int32_t n_pp = loom_optimus_divisors(pp_llm, pps, 64);
    int32_t n_tp = loom_optimus_divisors(tp_llm, tps, 64);
    n_pp = n_pp < 64 ? n_pp : 64;
    n_tp = n_tp < 64 ? n_tp : 64;
    int64_t gpus = (int64_t)dp_llm * pp_llm * tp_llm;
    int32_t n = 0;
    for (int32_t i = 0; i < n_pp; i++)
        for (int32_t j = 0; j < n_tp; j++, n++) {
            if (n >= cap)
                continue;
            loom_optimus_plan *p = &out[n];
            p->pp = pps[i];
            p->tp = tps[j];
            p->m_pp = pp_llm / pps[i];
            p->m_tp = tp_llm / tps[j];
            p->m = p->m_pp * p->m_tp;
            p->dp = dp_llm * p->m;
            p->state_bytes = loom_optimus_model_state_bytes(k, p->dp, phi_enc,
                                                            dp_llm, phi_llm, gpus);
            p->overhead_bytes = k * (double)(p->dp - dp_llm) * phi_enc / (double)gpus;
        }
    return n;
}

int64_t loom_optimus_compositions(int32_t n, int32_t m)
{
    if (m < 1 || m > n)
        return 0;
    /* C(n-1, m-1) by the multiplicative formula, exact while it fits */
    int64_t r = 1;
    int32_t top = n - 1, k = m - 1 < n - m ? m - 1 : n - m;
    for (int32_t i = 1; i <= k; i++) {
        int64_t num = top - k + i;
        if (r > INT64_MAX / num)
            return INT64_MAX;
        r = r * num / i;
    }
    return r;
}

int loom_optimus_split_first(int32_t n, int32_t m, int32_t *parts)
{
    if (m < 1 || m > n)
        return 0;
    for (int32_t j = 0; j < m - 1; j++)
        parts[j] = 1;
    parts[m - 1] = n - m + 1;
    return 1;
}

int loom_optimus_split_next(int32_t n, int32_t m, int32_t *parts)
{
    (void)n;
    /* the rightmost part before the last that can grow: the parts after
     * it must keep >= 1 each */
    for (int32_t i = m - 2; i >= 0; i--) {
        int32_t rest = 0;
        for (int32_t j = i + 1; j < m; j++)
            rest += parts[j];
        if (rest > m - 1 - i) {
            parts[i]++;
            rest--;
            for (int32_t j = i + 1; j < m - 1; j++) {
                parts[j] = 1;
                rest--;
            }
            parts[m - 1] = rest;
            return 1;
        }
    }
    return 0;
}

void loom_optimus_deal(int32_t n, int32_t m, const int32_t *parts,
                       int32_t *owner)
{
    int32_t given[64] = {0};
    for (int32_t i = 0; i < n; i++) {
        int32_t best = -1;
        for (int32_t j = 0; j < m && j < 64; j++) {
            if (given[j] >= parts[j])
                continue;
            /* compare (given_j + 1) / parts_j without division */
            if (best < 0 || (int64_t)(given[j] + 1) * parts[best] <
                                (int64_t)(given[best] + 1) * parts[j])
                best = j;
        }
        owner[i] = best;
        if (best >= 0)
            given[best]++;
    }
}

void loom_optimus_place(int32_t a, int32_t b, int32_t k, int32_t pp_enc,
                        int32_t tp_enc, int32_t *llm_stage, int32_t *tp_first)
{
    *llm_stage = a * pp_enc + k;
    *tp_first = b * tp_enc;
}

int32_t loom_optimus_global_order(int32_t n_pipes, const int32_t *count,
                                  const double *ef, int32_t *map)
{
    int32_t n = 0;
    for (int32_t j = 0; j < n_pipes; j++)
        for (int32_t q = 0; q < count[j]; q++, n++)
            map[n] = n;
    /* insertion sort: stable, so ties keep (pipeline, q) order */
    for (int32_t i = 1; i < n; i++) {
        int32_t x = map[i], at = i;
        while (at > 0 && ef[map[at - 1]] > ef[x]) {
            map[at] = map[at - 1];
            at--;
        }
        map[at] = x;
    }
    return n;
}

int loom_optimus_check_deps(int32_t n, const double *F, const double *B,
                            const double *ef, const double *eb,
                            const int32_t *map)
{
    for (int32_t i = 0; i < n; i++)
        if (ef[map[i]] > F[i])
            return 0;
    for (int32_t i = 0; i < n; i++)
        if (eb[map[i]] < B[i])
            return 0;
    return 1;
}

int64_t loom_optimus_p2p_pairs(int32_t n_pipes, const int32_t *count)
{
    int64_t pairs = 0;
    for (int32_t j = 0; j < n_pipes; j++)
        pairs += 2 * (int64_t)count[j];
    return pairs;
}

double loom_optimus_1f1b_makespan(int32_t p, int32_t n, double tf, double tb)
{
    return (double)(n + p - 1) * (tf + tb);
}

void loom_optimus_1f1b_idle(int32_t p, int32_t s, double tf, double tb,
                            double *warm, double *other, double *tail)
{
    *warm = s * tf;
    *other = (p - 1 - s) * (tf + tb);
    *tail = s * tb;
}
