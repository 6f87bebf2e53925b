/* calib_fit.c - the cluster factors `loom calibrate` fits and a small
 * bounded least-squares solver (projected Levenberg-Marquardt). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "calib.h"

static const loom_calib_factor factors[] = {
    {"eff_gemm", "efficiency.gemm", offsetof(loom_cluster, eff_gemm), LOOM_MIN_EFFICIENCY, 1.0, 0},
    {"eff_attention", "efficiency.attention", offsetof(loom_cluster, eff_attention),
     LOOM_MIN_EFFICIENCY, 1.0, 0},
    {"eff_memory", "efficiency.memory", offsetof(loom_cluster, eff_memory), LOOM_MIN_EFFICIENCY,
     1.0, 0},
    {"eff_collective", "efficiency.collective", offsetof(loom_cluster, eff_collective),
     LOOM_MIN_EFFICIENCY, 1.0, 0},
    /* the shape of the model, fitted when named: they need rows over a
     * range of sizes (small ones for the launch overhead and the curves) */
    {"kernel_launch_us", "efficiency.kernel_launch_us", offsetof(loom_cluster, kernel_launch_us),
     0.0, 100.0, 1},
    {"attention_backward", "efficiency.attention_backward",
     offsetof(loom_cluster, attention_backward), 1.0, 6.0, 1},
    {"gemm_half_flops", "efficiency.gemm_half_flops", offsetof(loom_cluster, gemm_half_flops),
     0.0, 1e12, 1},
    {"attention_half_flops", "efficiency.attention_half_flops",
     offsetof(loom_cluster, attention_half_flops), 0.0, 1e12, 1},
    {"eff_optimizer", "efficiency.optimizer", offsetof(loom_cluster, eff_optimizer),
     LOOM_MIN_EFFICIENCY, 1.0, 1},
};

const loom_calib_factor *loom_calib_factors(int *n)
{
    *n = (int)(sizeof factors / sizeof factors[0]);
    return factors;
}

const loom_calib_factor *loom_calib_factor_find(const char *name)
{
    for (size_t i = 0; i < sizeof factors / sizeof factors[0]; i++)
        if (!strcmp(factors[i].name, name))
            return &factors[i];
    return NULL;
}

double loom_calib_factor_get(const loom_cluster *c, const loom_calib_factor *f)
{
    double v;
    memcpy(&v, (const char *)c + f->offset, sizeof v);
    return v;
}

void loom_calib_factor_set(loom_cluster *c, const loom_calib_factor *f, double v)
{
    memcpy((char *)c + f->offset, &v, sizeof v);
}

/* Half the sum of squares of r[0..m). */
static double half_ss(const double *r, int m)
{
    double s = 0;
    for (int i = 0; i < m; i++)
        s += r[i] * r[i];
    return 0.5 * s;
}

/* Clamps x[0..n) into the box. */
static void project(const loom_calib_problem *p, double *x)
{
    for (int j = 0; j < p->n; j++)
        x[j] = x[j] < p->lo[j] ? p->lo[j] : x[j] > p->hi[j] ? p->hi[j] : x[j];
}

/* Forward-difference Jacobian J (m x n, row-major) at x with residuals r;
 * a step that would leave the box goes the other way. */
static int jacobian(const loom_calib_problem *p, const double *x, const double *r, double *J,
                    double *xt, double *rt, loom_error *err)
{
    for (int j = 0; j < p->n; j++) {
        memcpy(xt, x, (size_t)p->n * sizeof *xt);
        double h = 1e-6 * (fabs(x[j]) > 1e-3 ? fabs(x[j]) : 1e-3);
        if (xt[j] + h > p->hi[j])
            h = -h;
        xt[j] += h;
        int rc = p->fn(p->user, xt, rt, err);
        if (rc != LOOM_OK)
            return rc;
        for (int i = 0; i < p->m; i++)
            J[(size_t)i * (size_t)p->n + (size_t)j] = (rt[i] - r[i]) / h;
    }
    return LOOM_OK;
}

/* Solves the n x n system A d = b by Gaussian elimination with partial
 * pivoting (A and b are overwritten); 0 when A is singular. */
static int solve(double *A, double *b, double *d, int n)
{
    for (int k = 0; k < n; k++) {
        int piv = k;
        for (int i = k + 1; i < n; i++)
            if (fabs(A[i * n + k]) > fabs(A[piv * n + k]))
                piv = i;
        if (!(fabs(A[piv * n + k]) > 1e-300))
            return 0;
        if (piv != k) {
            for (int j = 0; j < n; j++) {
                double t = A[k * n + j];
                A[k * n + j] = A[piv * n + j];
                A[piv * n + j] = t;
            }
            double t = b[k];
            b[k] = b[piv];
            b[piv] = t;
        }
        for (int i = k + 1; i < n; i++) {
            double f = A[i * n + k] / A[k * n + k];
            for (int j = k; j < n; j++)
                A[i * n + j] -= f * A[k * n + j];
            b[i] -= f * b[k];
        }
    }
    for (int k = n - 1; k >= 0; k--) {
        double s = b[k];
        for (int j = k + 1; j < n; j++)
            s -= A[k * n + j] * d[j];
        d[k] = s / A[k * n + k];
    }
    return 1;
}

/* The LM loop on allocated scratch (see loom_calib_fit). */
static int lm(const loom_calib_problem *p, double *x, int *iterations, double *r, double *rt,
              double *J, double *A, double *g, double *d, double *xt, double *xn,
              loom_error *err)
{
    int n = p->n, m = p->m, steps = 0;
    project(p, x);
    int rc = p->fn(p->user, x, r, err);
    if (rc != LOOM_OK)
        return rc;
    if ((rc = jacobian(p, x, r, J, xt, rt, err)) != LOOM_OK)
        return rc;
    for (int j = 0; j < n; j++) {
        double most = 0;
        for (int i = 0; i < m; i++)
            most = fmax(most, fabs(J[(size_t)i * (size_t)n + (size_t)j]));
        /* scaled by the factor's size: a change of the whole factor
         * must move some residual (factors range from 0.5 to 1e10) */
        if (!(most * fmax(fabs(x[j]), 1e-3) > 1e-9))
            return loom_set_error(err, LOOM_EINVAL,
                                  "too little data: no measurement depends on %s (its value "
                                  "does not change any prediction); add measurements that "
                                  "exercise it or leave it out of --fit",
                                  p->names[j]);
    }
    double cost = half_ss(r, m), lambda = 1e-3;
    for (int it = 0; it < 500 && lambda < 1e12; it++) {
        for (int a = 0; a < n; a++) {
            g[a] = 0;
            for (int i = 0; i < m; i++)
                g[a] += J[(size_t)i * (size_t)n + (size_t)a] * r[i];
            for (int b = 0; b < n; b++) {
                double s = 0;
                for (int i = 0; i < m; i++)
                    s += J[(size_t)i * (size_t)n + (size_t)a] *
                         J[(size_t)i * (size_t)n + (size_t)b];
                A[a * n + b] = s;
            }
        }
        for (int a = 0; a < n; a++) {
            A[a * n + a] *= 1.0 + lambda;
            A[a * n + a] += 1e-12;
            g[a] = -g[a];
        }
        if (!solve(A, g, d, n)) {
            lambda *= 4;
            continue;
        }
        double moved = 0;
        for (int j = 0; j < n; j++) {
            xn[j] = x[j] + d[j];
            xn[j] = xn[j] < p->lo[j] ? p->lo[j] : xn[j] > p->hi[j] ? p->hi[j] : xn[j];
            moved = fmax(moved, fabs(xn[j] - x[j]) / fmax(fabs(x[j]), 1e-3));
        }
        if (moved < 1e-12)
            break; /* converged, or pinned at the bounds */
        if ((rc = p->fn(p->user, xn, rt, err)) != LOOM_OK)
            return rc;
        double c2 = half_ss(rt, m);
        if (c2 < cost) {
            double gain = cost - c2;
            memcpy(x, xn, (size_t)n * sizeof *x);
            memcpy(r, rt, (size_t)m * sizeof *r);
            cost = c2;
            steps++;
            lambda = fmax(lambda / 3, 1e-12);
            if (gain <= 1e-15 * fmax(cost, 1e-30) || cost < 1e-24)
                break;
            if ((rc = jacobian(p, x, r, J, xt, rt, err)) != LOOM_OK)
                return rc;
        } else {
            lambda *= 4;
        }
    }
    if (iterations)
        *iterations = steps;
    /* leave the residuals of the returned x in place for the caller */
    return p->fn(p->user, x, r, err);
}

int loom_calib_fit(const loom_calib_problem *p, double *x, int *iterations, loom_error *err)
{
    if (p->n < 1)
        return loom_set_error(err, LOOM_EINVAL, "nothing to fit: no factor is free");
    if (p->m < p->n)
        return loom_set_error(err, LOOM_EINVAL,
                              "too little data: %d measurement%s for %d free factor%s; "
                              "expected at least as many measurements as factors",
                              p->m, p->m == 1 ? "" : "s", p->n, p->n == 1 ? "" : "s");
    size_t n = (size_t)p->n, m = (size_t)p->m;
    double *r = malloc(m * sizeof *r), *rt = malloc(m * sizeof *rt);
    double *J = malloc(m * n * sizeof *J), *A = malloc(n * n * sizeof *A);
    double *g = malloc(n * sizeof *g), *d = malloc(n * sizeof *d);
    double *xt = malloc(n * sizeof *xt), *xn = malloc(n * sizeof *xn);
    int rc = (r && rt && J && A && g && d && xt && xn)
                 ? lm(p, x, iterations, r, rt, J, A, g, d, xt, xn, err)
                 : loom_set_error(err, LOOM_ENOMEM, "calibrate: out of memory");
    free(r);
    free(rt);
    free(J);
    free(A);
    free(g);
    free(d);
    free(xt);
    free(xn);
    return rc;
}
