/* calib.h - `loom calibrate`: the table of fitted cluster factors, the
 * bounded least-squares fitter and the two measurement readers (a per-layer
 * profile CSV and a JSON list of measured iterations). Formats:
 * docs/calibration.md.
 *
 * Ownership: a loom_calib_set owns its rows and sessions (free with
 * loom_calib_set_free); the cluster copy it prices with is the caller's
 * and must outlive every residual evaluation. Units: ms, bytes. */
#ifndef LOOM_CALIB_H
#define LOOM_CALIB_H

#include <stddef.h>
#include <stdio.h>
#include <loom/sys/problem.h>
#include <loom/sys/session.h>
#include <loom/sys/util.h>

/* ---- fitted factors (calib_fit.c) ----------------------------------------- */

/* One row of the factor table: a double member of loom_cluster, its
 * dotted path in cluster.json and its bounds. Adding a factor is adding a
 * row. */
typedef struct loom_calib_factor {
    const char *name;     /* "eff_gemm" */
    const char *json_key; /* "efficiency.gemm": its path in cluster.json */
    size_t offset;        /* offsetof(loom_cluster, member), a double */
    double lo, hi;        /* box bounds of the fit */
    int opt_in;           /* 1: fitted only when --fit names it; written
                             only when fitted or already non-zero */
} loom_calib_factor;

/* The factor table; *n gets its length. */
const loom_calib_factor *loom_calib_factors(int *n);

/* The factor named `name`, or NULL. */
const loom_calib_factor *loom_calib_factor_find(const char *name);

/* Reads / writes factor f of cluster c. */
double loom_calib_factor_get(const loom_cluster *c, const loom_calib_factor *f);
void loom_calib_factor_set(loom_cluster *c, const loom_calib_factor *f, double v);

/* Residuals r[0..m) at parameters x[0..n); LOOM_OK or an error. */
typedef int (*loom_calib_residual_fn)(void *user, const double *x, double *r,
                                      loom_error *err);

typedef struct loom_calib_problem {
    int n;                   /* free parameters */
    int m;                   /* residuals */
    const double *lo, *hi;   /* n bounds each */
    const char *const *names; /* n names, for messages */
    loom_calib_residual_fn fn;
    void *user;
} loom_calib_problem;

/* Bounded least squares: minimises sum r_i(x)^2 over lo <= x <= hi from
 * x (updated in place) by Levenberg-Marquardt with forward-difference
 * Jacobians and every step projected onto the box. LOOM_EINVAL when
 * m < n ("too little data") or when no residual depends on some parameter
 * (named); errors of fn are passed on. *iterations (may be NULL) gets the
 * accepted steps. */
int loom_calib_fit(const loom_calib_problem *p, double *x, int *iterations, loom_error *err);

/* ---- measurements ----------------------------------------------------------- */

/* One measured quantity and where it came from. */
typedef struct loom_calib_row {
    char where[320];   /* "profile.csv:7 vit layer 0 tokens 1690 tp 1 forward" */
    double measured;   /* ms, or an MFU fraction */
    double predicted;  /* at the last evaluation */
    int is_mfu;        /* 1: an MFU, else ms */
} loom_calib_row;

/* One measured layer of a profile, as read. */
typedef struct loom_calib_layer {
    int line;
    int32_t module, layer, tp;
    int64_t tokens, seq_len;
    double forward_ms, backward_ms, activation_bytes; /* activation: < 0 absent */
    /* the model's split of the backward, at the last evaluation */
    double input_grad_ms, weight_grad_ms, param_bytes, predicted_activation_bytes;
} loom_calib_layer;

/* One measured iteration (its own session, model and workload). */
typedef struct loom_calib_iter {
    loom_session *session;       /* owned; NULL until opened */
    int32_t iteration;
    double measured_ms, mfu; /* < 0: not given */
} loom_calib_iter;

#define LOOM_CALIB_MAX_FACTORS 16

typedef struct loom_calib_set {
    loom_cluster *cluster;       /* the caller's copy every session prices with */
    const loom_calib_factor *fit[LOOM_CALIB_MAX_FACTORS]; /* the free factors */
    int n_fit;
    loom_session *profile;       /* the profile's session (owned; NULL until opened) */
    const char *profile_path;
    loom_calib_layer *layers;
    int n_layers;
    loom_calib_iter *iters;
    int n_iters;
    loom_calib_row *rows;
    int n_rows;
} loom_calib_set;

/* Reads the profile CSV at `path` against `model_spec`, priced through
 * `manifest` (NULL: the default) on set->cluster. file:line errors. */
int loom_calib_read_profile(loom_calib_set *set, const char *path, const char *model_spec,
                            const char *cluster_spec, const char *manifest, loom_error *err);

/* Prices profile layer L at set->cluster's current factors: *fwd and
 * *bwd (input + weight gradient, no recomputation) in ms; records the
 * model's backward split and sizes in L. */
int loom_calib_price_layer(loom_calib_set *set, loom_calib_layer *L, double *fwd, double *bwd,
                           loom_error *err);

/* The profile CSV `text` (modified in place) read against `model` into
 * set->layers: the header, one measured layer per line, no two alike.
 * `path` is for file:line errors. Opens nothing. */
int loom_calib_parse_profile(loom_calib_set *set, const char *path, char *text,
                             const loom_model *model, loom_error *err);

/* One entry of the iterations JSON as read (strings borrowed from the
 * parsed file; numbers < 0 where not given, iteration 0). */
typedef struct loom_calib_entry {
    const char *model, *cluster, *manifest, *parallel, *workload, *generate;
    int64_t seed, iteration;
    double measured_ms, mfu;
} loom_calib_entry;

/* Called with each parsed entry i of n (JSON path `path`); LOOM_OK to go
 * on, or an error that stops the reading. */
typedef int (*loom_calib_entry_fn)(void *user, int i, int n, const char *path,
                                   const loom_calib_entry *e, loom_error *err);

/* Reads the iterations JSON at `path` and checks every entry (keys,
 * types, ranges, measured_ms or mfu, workload or generate, the cluster
 * being `cluster_spec`), passing each to fn; opens nothing itself. An
 * entry without "manifest" gets `manifest`. file: JSON-path errors. */
int loom_calib_parse_iterations(const char *path, const char *cluster_spec,
                                const char *manifest, loom_calib_entry_fn fn, void *user,
                                loom_error *err);

/* Reads the iterations JSON at `path`: one session per entry, each on
 * set->cluster. file: JSON-path errors. `cluster_spec` is the cluster
 * being fitted: an entry naming another one is an error. */
int loom_calib_read_iterations(loom_calib_set *set, const char *path, const char *cluster_spec,
                               const char *manifest, loom_error *err);

/* Sets the free factors set->fit of set->cluster to x, prices every
 * measurement and writes relative residuals (predicted - measured) /
 * measured, one per row, into r (set->n_rows entries). */
int loom_calib_residuals(void *set, const double *x, double *r, loom_error *err);

/* Writes a table cost file (plugins/table's CSV) from the profile: the
 * measured times, the backward split in the fitted model's proportion. */
int loom_calib_write_table(void *set, FILE *out, loom_error *err);

void loom_calib_set_free(loom_calib_set *set);

#endif
