/*
 * ilpm_model.c - builds and solves the memory-choice integer programme of
 * PipeWeaver section 6.3 with lp_solve, one rank at a time.
 *
 * Memory rows: a rank's memory only rises when a stage pair allocates
 * (its F), so its peak sits at an allocating slot followed by a free or
 * by nothing (a "crest", loom_mt_is_crest); only those slots get a row,
 * and of those only the rows the all-fastest choice violates (every
 * candidate holds at most the fastest one's bytes, so the others can never
 * bind). Bytes are scaled so the cap is 1e4 and the right-hand side is
 * shaved by 1e-7 of that unit; the solver's answer is then re-checked with
 * exact integers on the timeline before it is accepted.
 *
 * Per rank, lower bounds of increasing cost decide whether the warm start
 * is already within the relative gap (the incumbent test branch and bound
 * would make at its root): every active pair at its fastest candidate,
 * then the window bound (ilpm_bound.c), then the LP relaxation. When the
 * relaxation is integral it is the rank's optimum. Else
 * the columns become binary and branch and bound runs with the warm
 * start's objective as lp_solve's initial bound (set_obj_bound: nodes no
 * better are pruned from the start), the relative gap (set_mip_gap) and
 * the wall-clock deadline (an abort callback, plus set_timeout in whole
 * seconds as a backstop).
 */
#include <lp_lib.h>
#include <math.h>
#include <string.h>
#include "ilp_memory.h"

/* The abort callback's view of the clock. */
typedef struct ilpm_clock {
    const loom_host_api *host;
    double deadline_ms;
} ilpm_clock;

/* lp_solve abort callback: TRUE once the deadline has passed. */
static int __WINAPI ilpm_abort(lprec *lp, void *handle)
{
    const ilpm_clock *c = handle;
    (void)lp;
    return c->host->now_ms() > c->deadline_ms ? TRUE : FALSE;
}

/* Releases the work arrays. */
void loom_ilpm_free(const loom_host_api *host, loom_ilpm_work *w)
{
    host->free(w->col_of);
    host->free(w->row_off);
    host->free(w->row_pairs);
    host->free(w->row_rank);
    host->free(w->row_slot);
    host->free(w->segs);
    host->free(w->wins);
    host->free(w->dp);
    host->free(w->live);
    host->free(w->colno);
    host->free(w->vals);
    host->free(w->trial);
    host->free(w->bytes);
    memset(w, 0, sizeof *w);
}

/* Grows `*p` (elements of `size` bytes) to hold n, keeping its contents
 * and updating *cap. */
static int ilpm_grow(const loom_host_api *host, void **p, int32_t *cap,
                     int64_t n, size_t size)
{
    if (n <= *cap && *p)
        return LOOM_OK;
    int64_t want = *cap > 0 ? *cap : 64;
    while (want < n)
        want *= 2;
    if (want > 0x7fffffff)
        return LOOM_ENOMEM;
    void *q = host->realloc(*p, (size_t)want * size);
    if (!q)
        return LOOM_ENOMEM;
    *p = q;
    *cap = (int32_t)want;
    return LOOM_OK;
}

/* Per-pair arrays sized for the graph. */
static int ilpm_reserve_pairs(const loom_host_api *host, loom_ilpm_work *w,
                              int32_t n_pairs)
{
    if (n_pairs <= w->cap_pairs && w->col_of)
        return LOOM_OK;
    host->free(w->col_of);
    host->free(w->live);
    host->free(w->trial);
    host->free(w->bytes);
    size_t n = (size_t)n_pairs + 1;
    w->col_of = host->alloc(n * sizeof *w->col_of);
    w->live = host->alloc(n * sizeof *w->live);
    w->trial = host->alloc(n * sizeof *w->trial);
    w->bytes = host->alloc(n * sizeof *w->bytes);
    w->cap_pairs = n_pairs;
    if (!w->col_of || !w->live || !w->trial || !w->bytes) {
        w->cap_pairs = 0;
        return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

/* Bytes of pair p's fastest candidate. */
static int64_t ilpm_fast_bytes(const loom_mckp_set *set, int32_t p)
{
    return set->cand_bytes[set->cand_off[p]];
}

/* Collects the binding memory rows (see ilp_memory.h). */
int32_t loom_ilpm_rows(const loom_host_api *host, loom_ilpm_work *w,
                       const loom_mt_timeline *t, const loom_stage_graph *g,
                       const loom_mckp_set *set)
{
    if (ilpm_reserve_pairs(host, w, g->n_pairs) != LOOM_OK)
        return -1;
    int32_t rows = 0, used = 0;
    void *off = w->row_off, *rank = w->row_rank, *pairs = w->row_pairs;
    void *slot = w->row_slot;
    int32_t cap_rows = w->cap_rows, cap_rank = w->cap_rows;
    int32_t cap_slot = w->cap_rows, cap_pairs = w->cap_row_pairs;
    for (int32_t r = 0; r < t->n_ranks; r++) {
        int64_t stat = g->static_bytes ? g->static_bytes[r] : 0;
        for (int32_t k = t->rank_off[r]; k < t->rank_off[r + 1]; k++) {
            if (!loom_mt_is_crest(t, r, k))
                continue;
            int32_t n = loom_mt_live_pairs(t, r, k, w->live);
            int64_t sum = stat;
            for (int32_t i = 0; i < n; i++)
                sum += ilpm_fast_bytes(set, w->live[i]);
            if ((double)sum <= g->memory_cap_bytes)
                continue;
            int bad =
                ilpm_grow(host, &off, &cap_rows, rows + 2, sizeof(int32_t)) ||
                ilpm_grow(host, &rank, &cap_rank, rows + 2, sizeof(int32_t)) ||
                ilpm_grow(host, &slot, &cap_slot, rows + 2, sizeof(int32_t)) ||
                ilpm_grow(host, &pairs, &cap_pairs, (int64_t)used + n + 1,
                          sizeof(int32_t));
            w->row_off = off;
            w->row_rank = rank;
            w->row_slot = slot;
            w->row_pairs = pairs;
            if (bad)
                return -1;
            w->row_off[rows] = used;
            w->row_rank[rows] = r;
            w->row_slot[rows] = k;
            memcpy(&w->row_pairs[used], w->live, (size_t)n * sizeof(int32_t));
            used += n;
            rows++;
        }
    }
    w->cap_rows = cap_rows < cap_rank ? cap_rows : cap_rank;
    if (cap_slot < w->cap_rows)
        w->cap_rows = cap_slot;
    w->cap_row_pairs = cap_pairs;
    if (rows > 0)
        w->row_off[rows] = used;
    return rows;
}

/* Numbers the columns of rank r's pairs that appear in rows
 * [lo, hi) (1-based, lp_solve's convention); the rank's other pairs get
 * -1 and their fastest latency is summed into *fixed_ms. Returns the
 * column count. */
static int32_t ilpm_columns(loom_ilpm_work *w, const loom_mt_timeline *t,
                            const loom_mckp_set *set, int32_t r, int32_t lo,
                            int32_t hi, int32_t *active, double *fixed_ms)
{
    for (int32_t i = t->rank_pair_off[r]; i < t->rank_pair_off[r + 1]; i++)
        w->col_of[t->rank_pairs[i]] = -1;
    for (int32_t i = w->row_off[lo]; i < w->row_off[hi]; i++)
        w->col_of[w->row_pairs[i]] = 0;
    int32_t cols = 0, act = 0;
    double fixed = 0.0;
    for (int32_t i = t->rank_pair_off[r]; i < t->rank_pair_off[r + 1]; i++) {
        int32_t p = t->rank_pairs[i];
        if (w->col_of[p] < 0) {
            fixed += set->cand_ms[set->cand_off[p]];
            continue;
        }
        w->col_of[p] = cols + 1;
        cols += set->cand_off[p + 1] - set->cand_off[p];
        act++;
    }
    *active = act;
    *fixed_ms = fixed;
    return cols;
}

/* Adds rank r's rows (one choice per active pair, memory rows [lo, hi))
 * and objective to lp; 0 when lp_solve refused. */
static int ilpm_fill(lprec *lp, loom_ilpm_work *w, const loom_mt_timeline *t,
                     const loom_stage_graph *g, const loom_mckp_set *set,
                     int32_t r, int32_t lo, int32_t hi, int32_t cols)
{
    double scale = g->memory_cap_bytes / 1e4;
    set_add_rowmode(lp, TRUE);
    for (int32_t i = t->rank_pair_off[r]; i < t->rank_pair_off[r + 1]; i++) {
        int32_t p = t->rank_pairs[i];
        if (w->col_of[p] < 0)
            continue;
        int32_t k = set->cand_off[p + 1] - set->cand_off[p];
        for (int32_t j = 0; j < k; j++) {
            w->colno[j] = w->col_of[p] + j;
            w->vals[j] = 1.0;
        }
        if (!add_constraintex(lp, k, w->vals, w->colno, EQ, 1.0))
            return 0;
    }
    double stat = g->static_bytes ? (double)g->static_bytes[r] : 0.0;
    double rhs = (g->memory_cap_bytes - stat) / scale - 1e-7;
    for (int32_t row = lo; row < hi; row++) {
        int32_t n = 0;
        for (int32_t i = w->row_off[row]; i < w->row_off[row + 1]; i++) {
            int32_t p = w->row_pairs[i];
            for (int32_t c = set->cand_off[p]; c < set->cand_off[p + 1]; c++) {
                w->colno[n] = w->col_of[p] + (c - set->cand_off[p]);
                w->vals[n++] = (double)set->cand_bytes[c] / scale;
            }
        }
        if (!add_constraintex(lp, n, w->vals, w->colno, LE, rhs))
            return 0;
    }
    set_add_rowmode(lp, FALSE);
    for (int32_t i = t->rank_pair_off[r]; i < t->rank_pair_off[r + 1]; i++) {
        int32_t p = t->rank_pairs[i];
        if (w->col_of[p] < 0)
            continue;
        for (int32_t c = set->cand_off[p]; c < set->cand_off[p + 1]; c++) {
            int32_t col = w->col_of[p] + (c - set->cand_off[p]);
            w->colno[col - 1] = col;
            w->vals[col - 1] = set->cand_ms[c];
        }
    }
    if (!set_obj_fnex(lp, cols, w->vals, w->colno))
        return 0;
    set_minim(lp);
    return 1;
}

/* Reads the solver's choice of rank r's pairs into w->trial (inactive
 * pairs: the fastest candidate). Returns 0 when an active pair has no
 * column at 1, or (integral_only) when some column is fractional. */
static int ilpm_read(lprec *lp, loom_ilpm_work *w, const loom_mt_timeline *t,
                     const loom_mckp_set *set, int32_t r, int integral_only)
{
    REAL *x = NULL;
    if (!get_ptr_variables(lp, &x) || !x)
        return 0;
    for (int32_t i = t->rank_pair_off[r]; i < t->rank_pair_off[r + 1]; i++) {
        int32_t p = t->rank_pairs[i];
        w->trial[p] = 0;
        if (w->col_of[p] < 0)
            continue;
        int32_t k = set->cand_off[p + 1] - set->cand_off[p], pick = -1;
        for (int32_t j = 0; j < k; j++) {
            double v = x[w->col_of[p] - 1 + j];
            if (integral_only && v > 1e-9 && v < 1.0 - 1e-9)
                return 0;
            if (v > 0.5)
                pick = j;
        }
        if (pick < 0)
            return 0;
        w->trial[p] = pick;
    }
    return 1;
}

/* Total latency of rank r's pairs under w->trial when every memory peak of
 * the rank fits the cap by the exact timeline, else a negative value. */
static double ilpm_rank_check(loom_ilpm_work *w, loom_mt_timeline *t,
                              const loom_stage_graph *g,
                              const loom_mckp_set *set, int32_t r)
{
    double ms = 0.0;
    for (int32_t i = t->rank_pair_off[r]; i < t->rank_pair_off[r + 1]; i++) {
        int32_t p = t->rank_pairs[i];
        int32_t c = set->cand_off[p] + w->trial[p];
        w->bytes[p] = set->cand_bytes[c];
        ms += set->cand_ms[c];
    }
    int64_t stat = g->static_bytes ? g->static_bytes[r] : 0;
    int64_t peak = loom_mt_rank_peak(t, r, w->bytes);
    return (double)stat + (double)peak <= g->memory_cap_bytes ? ms : -1.0;
}

/* Makes room for `cols` columns in colno / vals. */
static int ilpm_reserve_cols(const loom_host_api *host, loom_ilpm_work *w,
                             int32_t cols)
{
    void *cn = w->colno, *vs = w->vals;
    int32_t cap_cn = w->cap_cols, cap_vs = w->cap_cols;
    int bad = ilpm_grow(host, &cn, &cap_cn, (int64_t)cols + 1,
                        sizeof(int32_t)) ||
              ilpm_grow(host, &vs, &cap_vs, (int64_t)cols + 1, sizeof(double));
    w->colno = cn;
    w->vals = vs;
    w->cap_cols = cap_cn < cap_vs ? cap_cn : cap_vs;
    return bad ? LOOM_ENOMEM : LOOM_OK;
}

/* LP relaxation, then (when needed) branch and bound, of rank r's
 * programme with memory rows [lo, hi). Returns 1 when w->trial holds a
 * valid choice of the rank's pairs faster than warm_ms, 0 otherwise,
 * < 0 when out of memory. */
static int ilpm_solve_rank(const loom_host_api *host, loom_ilpm_work *w,
                           loom_mt_timeline *t, const loom_stage_graph *g,
                           const loom_mckp_set *set,
                           const loom_ilpm_params *prm, ilpm_clock *clk,
                           int32_t r, int32_t lo, int32_t hi, double warm_ms,
                           loom_ilpm_stats *st)
{
    int32_t active = 0;
    double fixed = 0.0;
    int32_t cols = ilpm_columns(w, t, set, r, lo, hi, &active, &fixed);
    st->columns += cols;
    st->active_pairs += active;
    if (cols == 0 || ilpm_reserve_cols(host, w, cols) != LOOM_OK)
        return cols == 0 ? 0 : -1;
    double bound = warm_ms - fixed; /* the warm start's active part */
    double fastest = 0.0;         /* a lower bound: every pair fastest */
    for (int32_t i = t->rank_pair_off[r]; i < t->rank_pair_off[r + 1]; i++)
        if (w->col_of[t->rank_pairs[i]] >= 0)
            fastest += set->cand_ms[set->cand_off[t->rank_pairs[i]]];
    if (bound - fastest <= prm->gap * fabs(bound))
        return 0; /* the warm start is proven within the gap */
    double window = loom_ilpm_window_bound(host, w, t, g, set, r, lo, hi);
    if (window < 0.0)
        return -1;
    if (bound - (fastest + window) <= prm->gap * fabs(bound)) {
        st->bound_ranks++;
        return 0; /* proven by the window bound */
    }
    lprec *lp = make_lp(0, cols);
    if (!lp)
        return -1;
    set_verbose(lp, NEUTRAL);
    put_abortfunc(lp, ilpm_abort, clk);
    long secs = (long)ceil((clk->deadline_ms - host->now_ms()) / 1000.0);
    set_timeout(lp, secs < 1 ? 1 : secs);
    int found = 0;
    if (ilpm_fill(lp, w, t, g, set, r, lo, hi, cols)) {
        st->lp_ranks++;
        int rc = solve(lp);
        double lb = get_objective(lp);
        if (rc == OPTIMAL && ilpm_read(lp, w, t, set, r, 1)) {
            found = 1; /* an integral relaxation is the rank's optimum */
        } else if (rc == OPTIMAL && bound - lb > prm->gap * fabs(bound)) {
            st->mip_ranks++;
            for (int32_t c = 1; c <= cols; c++)
                set_binary(lp, c, TRUE);
            set_mip_gap(lp, FALSE, prm->gap);
            set_obj_bound(lp, bound + 1e-9 * fabs(bound) + 1e-9);
            rc = solve(lp);
            found = (rc == OPTIMAL || rc == SUBOPTIMAL) &&
                    ilpm_read(lp, w, t, set, r, 0);
        }
        if (rc == USERABORT || rc == TIMEOUT || rc == SUBOPTIMAL)
            st->timed_out |= host->now_ms() > clk->deadline_ms;
    }
    delete_lp(lp);
    if (!found)
        return 0;
    double ms = ilpm_rank_check(w, t, g, set, r);
    return ms >= 0.0 && ms < warm_ms;
}

/* Builds and solves the programme rank by rank (see header). */
int loom_ilpm_solve(const loom_host_api *host, loom_ilpm_work *w,
                    loom_mt_timeline *t, const loom_stage_graph *g,
                    const loom_mckp_set *set, const loom_ilpm_params *prm,
                    const double *warm_rank_ms, int32_t *choice,
                    uint8_t *rank_improved, loom_ilpm_stats *st,
                    loom_error *err)
{
    double t0 = host->now_ms();
    memset(st, 0, sizeof *st);
    for (int32_t r = 0; r < t->n_ranks; r++) {
        rank_improved[r] = 0;
        st->warm_ms += warm_rank_ms[r];
    }
    st->best_ms = st->warm_ms;
    if (!(g->memory_cap_bytes > 0.0))
        return LOOM_OK;
    int32_t rows = loom_ilpm_rows(host, w, t, g, set);
    if (rows < 0)
        return host->error(err, LOOM_ENOMEM, "ilp: out of memory");
    st->constraints = rows;
    ilpm_clock clk = {host, t0 + prm->timeout_ms};
    if (prm->deadline_ms >= 0 && prm->deadline_ms < clk.deadline_ms)
        clk.deadline_ms = prm->deadline_ms; /* the caller's search deadline */
    for (int32_t lo = 0; lo < rows;) {
        int32_t r = w->row_rank[lo], hi = lo;
        while (hi < rows && w->row_rank[hi] == r)
            hi++;
        if (host->now_ms() > clk.deadline_ms) {
            st->timed_out = 1;
            break;
        }
        int got = ilpm_solve_rank(host, w, t, g, set, prm, &clk, r, lo, hi,
                                  warm_rank_ms[r], st);
        if (got < 0)
            return host->error(err, LOOM_ENOMEM,
                               "ilp: out of memory for rank %d's programme", r);
        if (got > 0) {
            double ms = 0.0;
            for (int32_t i = t->rank_pair_off[r]; i < t->rank_pair_off[r + 1];
                 i++) {
                int32_t p = t->rank_pairs[i];
                choice[p] = w->trial[p];
                ms += set->cand_ms[set->cand_off[p] + choice[p]];
            }
            st->best_ms += ms - warm_rank_ms[r];
            rank_improved[r] = 1;
            st->improved++;
        }
        lo = hi;
    }
    st->solve_ms = host->now_ms() - t0;
    return LOOM_OK;
}
