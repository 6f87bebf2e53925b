/*
 * ilp_model.c - the pipeline scheduling programme of PipeWeaver section
 * 3.1 in lp_solve: start times, a makespan, precedence, one ordering
 * binary per pair of same-rank stages that no dependency orders (big-M
 * disjunctions with M taken from each start's bounds), the per-rank
 * memory constraint, minimise the makespan.
 *
 * Columns (1-based): T, then s_v for every stage v, then the binaries.
 * Bounds: est_v <= s_v <= H - tail_v and LB <= T <= H, where H is the
 * incumbent's makespan (shaved by 1e-9 relative so only better orders are
 * feasible) or, without one, the sum of every duration and transfer.
 * Rows T - s_v >= tail_v are valid for every optimal schedule and much
 * tighter than T >= s_v + lat_v. Memory bytes are scaled so the cap is
 * 1e4.
 */
#include <lp_lib.h>
#include <math.h>
#include <string.h>
#include "ilp.h"

/* The abort callback's view of the clock. */
typedef struct ilpi_clock {
    const loom_host_api *host;
    double deadline_ms;
} ilpi_clock;

/* lp_solve abort callback: TRUE once the deadline has passed. */
static int __WINAPI ilpi_abort(lprec *lp, void *handle)
{
    const ilpi_clock *c = handle;
    (void)lp;
    return c->host->now_ms() > c->deadline_ms ? TRUE : FALSE;
}

/* Scratch of one solve. */
typedef struct ilpi_model {
    int32_t n, cols, n_free;
    int32_t *pair_col;  /* n x n: column of the binary of (u < v), or 0 */
    int32_t *colno;     /* row buffer */
    double *vals;
    double horizon_ms;
} ilpi_model;

/* Column of s_v. */
static int32_t ilpi_scol(int32_t v)
{
    return 2 + v;
}

/* 1 when the ordering of u and v is left to the solver. */
static int ilpi_free_pair(const loom_ilpi_problem *pb, int32_t u, int32_t v)
{
    return !pb->reach[(size_t)u * (size_t)pb->n + (size_t)v] &&
           !pb->reach[(size_t)v * (size_t)pb->n + (size_t)u];
}

/* Numbers the binaries; returns 0 when out of memory. */
static int ilpi_columns(const loom_host_api *host, const loom_ilpi_problem *pb,
                        ilpi_model *m)
{
    int32_t n = pb->n;
    m->n = n;
    m->pair_col = host->alloc((size_t)n * (size_t)n * sizeof *m->pair_col + 1);
    if (!m->pair_col)
        return 0;
    memset(m->pair_col, 0, (size_t)n * (size_t)n * sizeof *m->pair_col);
    int32_t col = n + 2;
    for (int32_t r = 0; r < pb->n_ranks; r++)
        for (int32_t i = pb->rank_off[r]; i < pb->rank_off[r + 1]; i++)
            for (int32_t j = i + 1; j < pb->rank_off[r + 1]; j++) {
                int32_t u = pb->rank_stages[i], v = pb->rank_stages[j];
                if (ilpi_free_pair(pb, u, v))
                    m->pair_col[(size_t)u * (size_t)n + (size_t)v] = col++;
            }
    m->cols = col - 1;
    m->n_free = col - (n + 2);
    size_t row = (size_t)m->cols + 2;
    m->colno = host->alloc(row * sizeof *m->colno);
    m->vals = host->alloc(row * sizeof *m->vals);
    return m->colno && m->vals;
}

/* Bounds of T and every s_v. */
static void ilpi_bounds(lprec *lp, const loom_ilpi_problem *pb,
                        const ilpi_model *m)
{
    set_lowbo(lp, 1, pb->lower_bound_ms);
    set_upbo(lp, 1, m->horizon_ms);
    for (int32_t v = 0; v < pb->n; v++) {
        double hi = m->horizon_ms - pb->tail_ms[v];
        if (hi < pb->est_ms[v])
            hi = pb->est_ms[v];
        set_lowbo(lp, ilpi_scol(v), pb->est_ms[v]);
        set_upbo(lp, ilpi_scol(v), hi);
    }
    for (int32_t c = pb->n + 2; c <= m->cols; c++)
        set_binary(lp, c, TRUE);
}

/* Makespan and precedence rows. */
static int ilpi_timing_rows(lprec *lp, const loom_ilpi_problem *pb)
{
    const loom_stage_graph *g = pb->g;
    int ok = 1;
    for (int32_t v = 0; v < pb->n && ok; v++) {
        int c2[2] = {1, ilpi_scol(v)};
        double a2[2] = {1.0, -1.0};
        ok = add_constraintex(lp, 2, a2, c2, GE, pb->tail_ms[v]);
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1] && ok; k++) {
            int32_t u = g->pred[k];
            int c[2] = {ilpi_scol(v), ilpi_scol(u)};
            double a[2] = {1.0, -1.0};
            ok = add_constraintex(lp, 2, a, c, GE,
                                  g->duration_ms[u] + g->pred_p2p_ms[k]);
        }
    }
    return ok;
}

/* The two big-M rows of every free pair. */
static int ilpi_disjunction_rows(lprec *lp, const loom_ilpi_problem *pb,
                                 const ilpi_model *m)
{
    const loom_stage_graph *g = pb->g;
    int32_t n = pb->n;
    for (int32_t u = 0; u < n; u++)
        for (int32_t v = u + 1; v < n; v++) {
            int32_t col = m->pair_col[(size_t)u * (size_t)n + (size_t)v];
            if (!col)
                continue;
            double ub_u = m->horizon_ms - pb->tail_ms[u];
            double ub_v = m->horizon_ms - pb->tail_ms[v];
            double lu = g->duration_ms[u], lv = g->duration_ms[v];
            double m1 = lu + ub_u - pb->est_ms[v];
            double m2 = lv + ub_v - pb->est_ms[u];
            m1 = m1 > 0.0 ? m1 : 0.0;
            m2 = m2 > 0.0 ? m2 : 0.0;
            /* lp_solve may reorder a row's arrays: one pair per row */
            int ca[3] = {ilpi_scol(v), ilpi_scol(u), col};
            double a[3] = {1.0, -1.0, -m1}; /* o = 1: u, then v */
            if (!add_constraintex(lp, 3, a, ca, GE, lu - m1))
                return 0;
            int cb[3] = {ilpi_scol(v), ilpi_scol(u), col};
            double b[3] = {-1.0, 1.0, m2}; /* o = 0: v, then u */
            if (!add_constraintex(lp, 3, b, cb, GE, lv))
                return 0;
        }
    return 1;
}

/* Memory rows: for every stage v with a positive delta, the deltas of
 * the stages of its rank placed before it plus its own fit the cap. */
static int ilpi_memory_rows(lprec *lp, const loom_ilpi_problem *pb,
                            ilpi_model *m)
{
    const loom_stage_graph *g = pb->g;
    int32_t n = pb->n;
    double cap = g->memory_cap_bytes, scale = cap / 1e4;
    for (int32_t v = 0; v < n; v++) {
        int64_t dv = g->mem_delta_bytes[v];
        if (dv <= 0)
            continue;
        int32_t r = g->rank[v], k = 0;
        double rhs = cap - (double)(g->static_bytes ? g->static_bytes[r] : 0) -
                     (double)dv;
        for (int32_t i = pb->rank_off[r]; i < pb->rank_off[r + 1]; i++) {
            int32_t u = pb->rank_stages[i];
            double du = (double)g->mem_delta_bytes[u];
            if (u == v || du == 0.0)
                continue;
            if (pb->reach[(size_t)u * (size_t)n + (size_t)v]) {
                rhs -= du; /* always before v */
            } else if (!pb->reach[(size_t)v * (size_t)n + (size_t)u]) {
                if (u < v) { /* o(u,v) = 1: u before v */
                    m->colno[k] = m->pair_col[(size_t)u * (size_t)n + (size_t)v];
                    m->vals[k++] = du / scale;
                } else { /* u before v when o(v,u) = 0 */
                    m->colno[k] = m->pair_col[(size_t)v * (size_t)n + (size_t)u];
                    m->vals[k++] = -du / scale;
                    rhs -= du;
                }
            }
        }
        if (!add_constraintex(lp, k, m->vals, m->colno, LE, rhs / scale))
            return 0;
    }
    return 1;
}

/* Per rank, sorts the stages by the solver's start times (ties: a
 * dependency, then the ordering binary, then the id) into order. */
static void ilpi_extract(const loom_ilpi_problem *pb, const ilpi_model *m,
                         const double *x, int32_t *rank_off, int32_t *order)
{
    int32_t n = pb->n;
    for (int32_t r = 0; r <= pb->n_ranks; r++)
        rank_off[r] = pb->rank_off[r];
    for (int32_t r = 0; r < pb->n_ranks; r++) {
        int32_t a = pb->rank_off[r], b = pb->rank_off[r + 1];
        for (int32_t i = a; i < b; i++) {
            int32_t v = pb->rank_stages[i], j = i - 1;
            while (j >= a) {
                int32_t u = order[j];
                double su = x[ilpi_scol(u) - 1], sv = x[ilpi_scol(v) - 1];
                int u_first;
                if (fabs(su - sv) > 1e-9)
                    u_first = su < sv;
                else if (pb->reach[(size_t)u * (size_t)n + (size_t)v] ||
                         pb->reach[(size_t)v * (size_t)n + (size_t)u])
                    u_first = pb->reach[(size_t)u * (size_t)n + (size_t)v];
                else if (u < v)
                    u_first = x[m->pair_col[(size_t)u * n + (size_t)v] - 1] > 0.5;
                else
                    u_first = x[m->pair_col[(size_t)v * n + (size_t)u] - 1] < 0.5;
                if (u_first)
                    break;
                order[j + 1] = order[j];
                j--;
            }
            order[j + 1] = v;
        }
    }
}

/* Builds the programme into lp; 0 when lp_solve refused a row. */
static int ilpi_fill(lprec *lp, const loom_ilpi_problem *pb, ilpi_model *m)
{
    set_add_rowmode(lp, TRUE);
    int ok = ilpi_timing_rows(lp, pb) && ilpi_disjunction_rows(lp, pb, m);
    if (ok && pb->g->memory_cap_bytes > 0.0)
        ok = ilpi_memory_rows(lp, pb, m);
    set_add_rowmode(lp, FALSE);
    if (!ok)
        return 0;
    int c1 = 1;
    double a1 = 1.0;
    if (!set_obj_fnex(lp, 1, &a1, &c1))
        return 0;
    set_minim(lp);
    ilpi_bounds(lp, pb, m);
    return 1;
}

/* Solves the programme (see header). */
int loom_ilpi_solve(const loom_host_api *host, loom_ilpi_problem *pb,
                    double incumbent_ms, double timeout_ms, int32_t *rank_off,
                    int32_t *order, double *makespan_ms, int *proven,
                    loom_error *err)
{
    const loom_stage_graph *g = pb->g;
    ilpi_model m;
    memset(&m, 0, sizeof m);
    *makespan_ms = incumbent_ms;
    *proven = 0;
    double sum = 0.0;
    for (int32_t v = 0; v < pb->n; v++) {
        sum += g->duration_ms[v];
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            sum += g->pred_p2p_ms[k];
    }
    m.horizon_ms = incumbent_ms >= 0.0
                       ? incumbent_ms - 1e-9 * (incumbent_ms > 1.0 ? incumbent_ms : 1.0)
                       : sum;
    if (m.horizon_ms < pb->lower_bound_ms) {
        *proven = 1; /* the incumbent meets the lower bound */
        return LOOM_OK;
    }
    int ok = ilpi_columns(host, pb, &m);
    lprec *lp = ok ? make_lp(0, m.cols) : NULL;
    int rc = LOOM_OK;
    if (!lp || !ilpi_fill(lp, pb, &m)) {
        rc = host->error(err, LOOM_ENOMEM,
                         "ilp: could not build the programme (%d columns)",
                         m.cols);
    } else {
        ilpi_clock clk = {host, host->now_ms() + timeout_ms};
        set_verbose(lp, NEUTRAL);
        put_abortfunc(lp, ilpi_abort, &clk);
        long secs = (long)ceil(timeout_ms / 1000.0);
        set_timeout(lp, secs < 1 ? 1 : secs);
        set_mip_gap(lp, TRUE, 1e-9);
        set_mip_gap(lp, FALSE, 1e-9);
        int st = solve(lp);
        REAL *x = NULL;
        if ((st == OPTIMAL || st == SUBOPTIMAL) && get_ptr_variables(lp, &x)) {
            ilpi_extract(pb, &m, x, rank_off, order);
            double span = loom_ilpi_replay(pb, rank_off, order, NULL);
            if (span >= 0.0 && (incumbent_ms < 0.0 || span < incumbent_ms))
                *makespan_ms = span;
            *proven = st == OPTIMAL;
        } else if (st == INFEASIBLE) {
            *proven = 1;
            if (incumbent_ms < 0.0)
                rc = host->error(err, LOOM_EINFEASIBLE,
                                 "ilp: no order of the %d stages keeps every "
                                 "rank under the memory cap of %.0f bytes",
                                 pb->n, g->memory_cap_bytes);
        }
    }
    if (lp)
        delete_lp(lp);
    host->free(m.pair_col);
    host->free(m.colno);
    host->free(m.vals);
    return rc;
}
