/*
 * mckp.c - memory candidates per stage pair through a multiple-choice
 * knapsack over the pair's layers (PipeWeaver section 6.3).
 *
 * Discretisation: with M_fast and M_frugal the activation bytes of the
 * fastest and the most frugal combinations, range = M_fast - M_frugal and
 * R = resolution, option o of layer e weighs
 *     w(e,o) = ceil((bytes(e,o) - min_o bytes(e,o)) * R / range)
 * steps (exact integer arithmetic), so w * range / R >= the true extra
 * bytes. Bucket j (1 <= j <= K-2) has the bound M_frugal + range * j/(K-1)
 * and the capacity floor(R * j / (K-1)) steps; the DP returns the fastest
 * combination whose weights fit, which therefore meets the true bound (it
 * may miss a combination that fits only without the rounding).
 */
#include <string.h>
#include <loom/kits/mckp.h>

#define MCKP_INF 1e300

/* Releases every array of the set. */
void loom_mckp_free(const loom_host_api *host, loom_mckp_set *set)
{
    host->free(set->cand_off);
    host->free(set->cand_ms);
    host->free(set->cand_bytes);
    host->free(set->cand_pol_off);
    host->free(set->policy);
    host->free(set->b_off);
    host->free(set->b_ms);
    host->free(set->b_bytes);
    host->free(set->b_pol_off);
    host->free(set->b_policy);
    host->free(set->dp);
    host->free(set->dp_next);
    host->free(set->choice);
    host->free(set->weight);
    host->free(set->opt_ms);
    host->free(set->tmp);
    host->free(set->sig_hash);
    host->free(set->sig_pair);
    memset(set, 0, sizeof *set);
}

/* Frees `field` and allocates n (+1) elements when it is too small. */
#define MCKP_RESERVE(host, field, n, cap, ok)                                  \
    do {                                                                       \
        if ((size_t)(n) > (size_t)(cap) || !(field)) {                         \
            (host)->free(field);                                               \
            (field) = (host)->alloc(((size_t)(n) + 1) * sizeof *(field));      \
            (ok) = (ok) && (field) != NULL;                                    \
        }                                                                      \
    } while (0)

/* Sizes every array for g, k and R. */
static int mckp_reserve(const loom_host_api *host, loom_mckp_set *set,
                        const loom_stage_graph *g, int32_t k, int32_t R)
{
    int32_t emax = 0;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int32_t n = g->pair_layer_off[p + 1] - g->pair_layer_off[p];
        if (n > emax)
            emax = n;
    }
    size_t cands = (size_t)g->n_pairs * ((size_t)k + 1);
    size_t pol = (size_t)g->n_layer_entries * ((size_t)k + 1);
    size_t choice = (size_t)emax * ((size_t)R + 1);
    size_t tmp = (size_t)emax * (size_t)k;
    size_t weight = (size_t)emax * LOOM_POLICY_COUNT;
    if (cands > 0x7fffffff || pol > 0x7fffffff || choice > 0x7fffffff)
        return LOOM_EINVAL;
    int ok = 1;
    MCKP_RESERVE(host, set->cand_off, g->n_pairs, set->cap_pairs, ok);
    MCKP_RESERVE(host, set->b_off, g->n_pairs, set->cap_pairs, ok);
    MCKP_RESERVE(host, set->cand_ms, cands, set->cap_cands, ok);
    MCKP_RESERVE(host, set->b_ms, cands, set->cap_cands, ok);
    MCKP_RESERVE(host, set->cand_bytes, cands, set->cap_cands, ok);
    MCKP_RESERVE(host, set->b_bytes, cands, set->cap_cands, ok);
    MCKP_RESERVE(host, set->cand_pol_off, cands, set->cap_cands, ok);
    MCKP_RESERVE(host, set->b_pol_off, cands, set->cap_cands, ok);
    MCKP_RESERVE(host, set->policy, pol, set->cap_pol, ok);
    MCKP_RESERVE(host, set->b_policy, pol, set->cap_pol, ok);
    MCKP_RESERVE(host, set->dp, R, set->cap_res, ok);
    MCKP_RESERVE(host, set->dp_next, R, set->cap_res, ok);
    MCKP_RESERVE(host, set->choice, choice, set->cap_choice, ok);
    MCKP_RESERVE(host, set->tmp, tmp, set->cap_tmp, ok);
    MCKP_RESERVE(host, set->weight, weight, set->cap_weight, ok);
    MCKP_RESERVE(host, set->opt_ms, weight, set->cap_weight, ok);
    int32_t sig = 16;
    while (sig < 2 * g->n_pairs && sig < (1 << 30))
        sig *= 2;
    if (sig > set->cap_sig || !set->sig_hash) {
        host->free(set->sig_hash);
        host->free(set->sig_pair);
        set->sig_hash = host->alloc((size_t)sig * sizeof *set->sig_hash);
        set->sig_pair = host->alloc((size_t)sig * sizeof *set->sig_pair);
        set->cap_sig = sig;
        ok = ok && set->sig_hash && set->sig_pair;
    }
    if (!ok) {
        loom_mckp_free(host, set);
        return LOOM_ENOMEM;
    }
    if (g->n_pairs > set->cap_pairs)
        set->cap_pairs = g->n_pairs;
    if ((int32_t)cands > set->cap_cands)
        set->cap_cands = (int32_t)cands;
    if ((int32_t)pol > set->cap_pol)
        set->cap_pol = (int32_t)pol;
    if (R > set->cap_res)
        set->cap_res = R;
    if ((int32_t)choice > set->cap_choice)
        set->cap_choice = (int32_t)choice;
    if ((int32_t)tmp > set->cap_tmp)
        set->cap_tmp = (int32_t)tmp;
    if ((int32_t)weight > set->cap_weight)
        set->cap_weight = (int32_t)weight;
    return LOOM_OK;
}

/* Time (forward + backward) of option o of entry e. */
static double mckp_ms(const loom_stage_graph *g, int32_t e, int o)
{
    const loom_policy_option *x =
        &g->layer_options[(size_t)e * LOOM_POLICY_COUNT + (size_t)o];
    return x->forward_ms + x->backward_ms;
}

/* Activation bytes of option o of entry e. */
static int64_t mckp_bytes(const loom_stage_graph *g, int32_t e, int o)
{
    return g->layer_options[(size_t)e * LOOM_POLICY_COUNT + (size_t)o]
        .activation_bytes;
}

/* Per entry of [e0, e0+n): the fastest option (ties: fewer bytes, then
 * the lower policy) into fast, the most frugal (ties: less time) into
 * frugal. */
static void mckp_extremes(const loom_stage_graph *g, int32_t e0, int32_t n,
                          int np, uint8_t *fast, uint8_t *frugal)
{
    for (int32_t i = 0; i < n; i++) {
        int32_t e = e0 + i;
        int f = 0, m = 0;
        for (int o = 1; o < np; o++) {
            double t = mckp_ms(g, e, o), tf = mckp_ms(g, e, f);
            int64_t b = mckp_bytes(g, e, o), bm = mckp_bytes(g, e, m);
            if (t < tf || (t == tf && b < mckp_bytes(g, e, f)))
                f = o;
            if (b < bm || (b == bm && t < mckp_ms(g, e, m)))
                m = o;
        }
        fast[i] = (uint8_t)f;
        frugal[i] = (uint8_t)m;
    }
}

/* Sums a combination's time and bytes. */
static void mckp_cost(const loom_stage_graph *g, int32_t e0, int32_t n,
                      const uint8_t *pol, double *ms, int64_t *bytes)
{
    double t = 0.0;
    int64_t b = 0;
    for (int32_t i = 0; i < n; i++) {
        t += mckp_ms(g, e0 + i, pol[i]);
        b += mckp_bytes(g, e0 + i, pol[i]);
    }
    *ms = t;
    *bytes = b;
}

/* The knapsack DP for one pair: writes the fastest combination within
 * each of the k-2 bucket capacities into out (k-2 rows of n) and returns
 * the rows written. frugal gives each entry's smallest bytes. */
static int32_t mckp_buckets(loom_mckp_set *set, const loom_stage_graph *g,
                            int32_t e0, int32_t n, const uint8_t *frugal,
                            int64_t range, int32_t k, int32_t R, uint8_t *out)
{
    size_t row = (size_t)R + 1;
    for (int32_t i = 0; i < n; i++) {
        int64_t base = mckp_bytes(g, e0 + i, frugal[i]);
        for (int o = 0; o < set->n_policies; o++) {
            int64_t x = mckp_bytes(g, e0 + i, o) - base;
            int64_t w = x <= 0 ? 0 : (x * (int64_t)R + range - 1) / range;
            set->weight[i * LOOM_POLICY_COUNT + o] =
                w > R ? R + 1 : (int32_t)w;
            set->opt_ms[i * LOOM_POLICY_COUNT + o] = mckp_ms(g, e0 + i, o);
        }
    }
    double *dp = set->dp, *next = set->dp_next;
    int32_t top = (int32_t)((int64_t)R * (k - 2) / (k - 1)); /* largest cap */
    for (int32_t c = 0; c <= top; c++)
        dp[c] = 0.0;
    for (int32_t i = 0; i < n; i++) {
        uint8_t *ch = &set->choice[(size_t)i * row];
        for (int32_t c = 0; c <= top; c++) {
            double best = MCKP_INF;
            int bo = frugal[i];
            for (int o = 0; o < set->n_policies; o++) {
                int32_t w = set->weight[i * LOOM_POLICY_COUNT + o];
                if (w > c)
                    continue;
                double v = dp[c - w] + set->opt_ms[i * LOOM_POLICY_COUNT + o];
                if (v < best ||
                    (v == best && w < set->weight[i * LOOM_POLICY_COUNT + bo])) {
                    best = v;
                    bo = o;
                }
            }
            next[c] = best;
            ch[c] = (uint8_t)bo;
        }
        double *t = dp;
        dp = next;
        next = t;
    }
    int32_t rows = 0;
    for (int32_t j = 1; j <= k - 2; j++) {
        int32_t cap = (int32_t)((int64_t)R * j / (k - 1));
        if (!(dp[cap] < MCKP_INF))
            continue;
        uint8_t *pol = &out[(size_t)rows * (size_t)n];
        int32_t c = cap;
        for (int32_t i = n - 1; i >= 0; i--) {
            int o = set->choice[(size_t)i * row + (size_t)c];
            pol[i] = (uint8_t)o;
            c -= set->weight[i * LOOM_POLICY_COUNT + o];
        }
        rows++;
    }
    return rows;
}

/* Candidates of one pair into the set (Pareto-sorted, see header). */
static void mckp_pair(loom_mckp_set *set, const loom_stage_graph *g,
                      int32_t p, int32_t k, int32_t R, int32_t *pol_used)
{
    int32_t e0 = g->pair_layer_off[p], n = g->pair_layer_off[p + 1] - e0;
    uint8_t *raw = set->tmp; /* row 0 fastest, row 1 frugal, then buckets */
    mckp_extremes(g, e0, n, set->n_policies, raw, raw + n);
    double ms[64];
    int64_t bytes[64];
    mckp_cost(g, e0, n, raw, &ms[0], &bytes[0]);
    mckp_cost(g, e0, n, raw + n, &ms[1], &bytes[1]);
    int32_t rows = 2;
    if (bytes[0] > bytes[1] && k > 2)
        rows += mckp_buckets(set, g, e0, n, raw + n, bytes[0] - bytes[1], k, R,
                             raw + 2 * (size_t)n);
    for (int32_t r = 2; r < rows; r++)
        mckp_cost(g, e0, n, raw + (size_t)r * (size_t)n, &ms[r], &bytes[r]);
    /* insertion sort of row ids by (time, bytes) */
    int32_t idx[64];
    for (int32_t r = 0; r < rows; r++) {
        int32_t j = r - 1;
        while (j >= 0 && (ms[idx[j]] > ms[r] ||
                          (ms[idx[j]] == ms[r] && bytes[idx[j]] > bytes[r]))) {
            idx[j + 1] = idx[j];
            j--;
        }
        idx[j + 1] = r;
    }
    set->cand_off[p] = set->n_cands;
    int64_t last = 0;
    for (int32_t i = 0; i < rows; i++) {
        int32_t r = idx[i];
        if (i > 0 && bytes[r] >= last)
            continue; /* dominated: no faster and no smaller */
        int32_t c = set->n_cands++;
        set->cand_ms[c] = ms[r];
        set->cand_bytes[c] = bytes[r];
        set->cand_pol_off[c] = *pol_used;
        memcpy(&set->policy[*pol_used], raw + (size_t)r * (size_t)n, (size_t)n);
        *pol_used += n;
        last = bytes[r];
    }
}

/* A signature of pair p's layer options (a multiply-xorshift hash of
 * their bytes, with the entry count). */
static uint64_t mckp_signature(const loom_stage_graph *g, int32_t p)
{
    int32_t e0 = g->pair_layer_off[p], n = g->pair_layer_off[p + 1] - e0;
    const unsigned char *b =
        (const unsigned char *)&g->layer_options[(size_t)e0 * LOOM_POLICY_COUNT];
    size_t len = (size_t)n * LOOM_POLICY_COUNT * sizeof(loom_policy_option);
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)len;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
    }
    return h;
}

/* 1 when pairs p and q have byte-identical layer options. */
static int mckp_same(const loom_stage_graph *g, int32_t p, int32_t q)
{
    int32_t np = g->pair_layer_off[p + 1] - g->pair_layer_off[p];
    int32_t nq = g->pair_layer_off[q + 1] - g->pair_layer_off[q];
    if (np != nq)
        return 0;
    return !memcmp(
        &g->layer_options[(size_t)g->pair_layer_off[p] * LOOM_POLICY_COUNT],
        &g->layer_options[(size_t)g->pair_layer_off[q] * LOOM_POLICY_COUNT],
        (size_t)np * LOOM_POLICY_COUNT * sizeof(loom_policy_option));
}

/* Copies pair q's candidates (already built) as pair p's. */
static void mckp_copy(loom_mckp_set *set, const loom_stage_graph *g,
                      int32_t p, int32_t q, int32_t *pol_used)
{
    int32_t n = g->pair_layer_off[p + 1] - g->pair_layer_off[p];
    set->cand_off[p] = set->n_cands;
    int32_t a = set->cand_off[q];
    int32_t b = q + 1 == p ? set->cand_off[p] : set->cand_off[q + 1];
    for (int32_t c = a; c < b; c++) {
        int32_t d = set->n_cands++;
        set->cand_ms[d] = set->cand_ms[c];
        set->cand_bytes[d] = set->cand_bytes[c];
        set->cand_pol_off[d] = *pol_used;
        memmove(&set->policy[*pol_used], &set->policy[set->cand_pol_off[c]],
                (size_t)n);
        *pol_used += n;
    }
}

/* Builds the candidates of every pair over none, selective and full. */
int loom_mckp_build(const loom_host_api *host, loom_mckp_set *set,
                    const loom_stage_graph *g, int32_t k, int32_t resolution,
                    loom_error *err)
{
    return loom_mckp_build_policies(host, set, g, k, resolution, LOOM_POLICY_OFFLOAD, err);
}

/* Builds the candidates of every pair over the first n_policies policies
 * (see header). */
int loom_mckp_build_policies(const loom_host_api *host, loom_mckp_set *set,
                             const loom_stage_graph *g, int32_t k, int32_t resolution,
                             int n_policies, loom_error *err)
{
    set->n_policies = n_policies >= 1 && n_policies <= LOOM_POLICY_COUNT
                          ? n_policies : LOOM_POLICY_OFFLOAD;
    if (k < 2 || k > 62 || resolution < 1 || resolution > 1 << 20)
        return host->error(err, LOOM_EINVAL,
                           "memory candidates: k must be 2..62 and resolution "
                           "1..1048576, found %d and %d", k, resolution);
    int rc = mckp_reserve(host, set, g, k, resolution);
    if (rc == LOOM_ENOMEM)
        return host->error(err, rc, "memory candidates: out of memory");
    if (rc != LOOM_OK)
        return host->error(err, rc,
                           "memory candidates: %d pairs x %d candidates is "
                           "too many",
                           g->n_pairs, k);
    set->n_pairs = g->n_pairs;
    set->n_cands = 0;
    uint64_t mask = (uint64_t)set->cap_sig - 1;
    for (int32_t i = 0; i < set->cap_sig; i++)
        set->sig_pair[i] = -1;
    int32_t pol_used = 0;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        uint64_t h = mckp_signature(g, p);
        uint64_t slot = h & mask;
        int32_t twin = -1;
        while (set->sig_pair[slot] >= 0) {
            int32_t q = set->sig_pair[slot];
            if (set->sig_hash[slot] == h && mckp_same(g, p, q)) {
                twin = q;
                break;
            }
            slot = (slot + 1) & mask;
        }
        if (twin >= 0) {
            mckp_copy(set, g, p, twin, &pol_used);
            continue;
        }
        mckp_pair(set, g, p, k, resolution, &pol_used);
        set->sig_pair[slot] = p;
        set->sig_hash[slot] = h;
    }
    set->cand_off[g->n_pairs] = set->n_cands;
    return LOOM_OK;
}

/* Writes a candidate's policies into the graph-indexed array. */
void loom_mckp_apply(const loom_mckp_set *set, const loom_stage_graph *g,
                     int32_t pair, int32_t cand, uint8_t *policies)
{
    int32_t e0 = g->pair_layer_off[pair], n = g->pair_layer_off[pair + 1] - e0;
    memcpy(&policies[e0], &set->policy[set->cand_pol_off[cand]], (size_t)n);
}

/* Appends candidate (ms, bytes, policies pol of n entries) of the pair
 * being written to the shadow arrays. */
static void mckp_push(loom_mckp_set *set, int32_t *n_cands, int32_t *pol_used,
                      double ms, int64_t bytes, const uint8_t *pol, int32_t n)
{
    int32_t c = (*n_cands)++;
    set->b_ms[c] = ms;
    set->b_bytes[c] = bytes;
    set->b_pol_off[c] = *pol_used;
    memcpy(&set->b_policy[*pol_used], pol, (size_t)n);
    *pol_used += n;
}

/* Swaps the shadow arrays in. */
static void mckp_swap(loom_mckp_set *set)
{
    int32_t *off = set->cand_off, *pol_off = set->cand_pol_off;
    double *ms = set->cand_ms;
    int64_t *bytes = set->cand_bytes;
    uint8_t *policy = set->policy;
    set->cand_off = set->b_off;
    set->cand_pol_off = set->b_pol_off;
    set->cand_ms = set->b_ms;
    set->cand_bytes = set->b_bytes;
    set->policy = set->b_policy;
    set->b_off = off;
    set->b_pol_off = pol_off;
    set->b_ms = ms;
    set->b_bytes = bytes;
    set->b_policy = policy;
}

/* Merges each pair's `extra` combination into its candidates (see
 * header). */
void loom_mckp_add(loom_mckp_set *set, const loom_stage_graph *g,
                   const uint8_t *extra)
{
    int32_t n_cands = 0, pol_used = 0;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int32_t e0 = g->pair_layer_off[p], n = g->pair_layer_off[p + 1] - e0;
        double xms;
        int64_t xb;
        mckp_cost(g, e0, n, extra + e0, &xms, &xb);
        set->b_off[p] = n_cands;
        int placed = 0, kept = 0;
        int64_t last = 0;
        for (int32_t c = set->cand_off[p]; c <= set->cand_off[p + 1]; c++) {
            int end = c == set->cand_off[p + 1];
            /* the extra goes before the first candidate slower than it
             * (or as fast with more bytes) */
            if (!placed && (end || set->cand_ms[c] > xms ||
                            (set->cand_ms[c] == xms && set->cand_bytes[c] > xb))) {
                placed = 1;
                if (!kept || xb < last) {
                    mckp_push(set, &n_cands, &pol_used, xms, xb, extra + e0, n);
                    last = xb;
                    kept = 1;
                }
            }
            if (end)
                break;
            if (kept && set->cand_bytes[c] >= last)
                continue; /* dominated */
            mckp_push(set, &n_cands, &pol_used, set->cand_ms[c],
                      set->cand_bytes[c], &set->policy[set->cand_pol_off[c]],
                      n);
            last = set->cand_bytes[c];
            kept = 1;
        }
    }
    set->b_off[g->n_pairs] = n_cands;
    set->n_cands = n_cands;
    mckp_swap(set);
}

int loom_mckp_units_reset(const loom_host_api *host, loom_mckp_units *mu,
                          const loom_mckp_set *set, loom_mt_units *out,
                          const char *who, loom_error *err)
{
    int32_t n_pairs = set->n_pairs;
    if (n_pairs > mu->cap_pairs || !mu->unit_off) {
        loom_mckp_units_free(host, mu);
        size_t n = (size_t)n_pairs + 1;
        mu->unit_off = host->alloc(n * sizeof *mu->unit_off);
        mu->state = host->alloc(n * sizeof *mu->state);
        mu->pair_bytes = host->alloc(n * sizeof *mu->pair_bytes);
        if (!mu->unit_off || !mu->state || !mu->pair_bytes) {
            loom_mckp_units_free(host, mu);
            return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
        }
        mu->cap_pairs = n_pairs;
    }
    for (int32_t p = 0; p <= n_pairs; p++)
        mu->unit_off[p] = p;
    for (int32_t p = 0; p < n_pairs; p++) {
        mu->state[p] = 0;
        mu->pair_bytes[p] = set->cand_bytes[set->cand_off[p]];
    }
    loom_mt_units u = {n_pairs, mu->unit_off, set->cand_off, set->cand_ms,
                       set->cand_bytes, mu->state, set->cand_off + 1};
    *out = u;
    return LOOM_OK;
}

void loom_mckp_units_free(const loom_host_api *host, loom_mckp_units *mu)
{
    host->free(mu->unit_off);
    host->free(mu->state);
    host->free(mu->pair_bytes);
    memset(mu, 0, sizeof *mu);
}

void loom_mckp_materialise(void *user, const loom_stage_graph *g,
                           const loom_mt_units *u, uint8_t *policies)
{
    const loom_mckp_set *set = user;
    for (int32_t p = 0; p < g->n_pairs; p++)
        loom_mckp_apply(set, g, p, u->chain_off[p] + u->state[p], policies);
}
