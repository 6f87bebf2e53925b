/* calib_set.c - the measurements of one `loom calibrate` run as rows of
 * residuals: profile layers (forward and backward each) and measured
 * iterations (time and/or MFU), priced at trial factor values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calib.h"

/* Prices every row at the cluster's current factors into rows[].predicted. */
static int price_all(loom_calib_set *set, loom_error *err)
{
    int k = 0, rc;
    for (int i = 0; i < set->n_layers; i++) {
        loom_calib_layer *L = &set->layers[i];
        double fwd = 0, bwd = 0;
        loom_error why = {0, ""};
        if ((rc = loom_calib_price_layer(set, L, &fwd, &bwd, &why)) != LOOM_OK)
            return loom_set_error(err, rc, "%s:%d: %s", set->profile_path, L->line,
                                  why.message);
        set->rows[k++].predicted = fwd;
        if (L->backward_ms > 0)
            set->rows[k++].predicted = bwd;
    }
    for (int i = 0; i < set->n_iters; i++) {
        loom_calib_iter *it = &set->iters[i];
        loom_plan plan;
        loom_error why = {0, ""};
        if ((rc = loom_session_plan(it->session, it->iteration, &plan, &why)) != LOOM_OK)
            return loom_set_error(err, rc, "iterations[%d]: %s", i, why.message);
        if (it->measured_ms > 0)
            set->rows[k++].predicted = plan.metrics.makespan_ms;
        if (it->mfu > 0) {
            double mfu = plan.metrics.mfu;
            loom_plan_clear(&plan);
            if (!(mfu > 0))
                return loom_set_error(err, LOOM_EINVAL,
                                      "iterations[%d].mfu: the cost model reports no MFU "
                                      "(no FLOP counts); give measured_ms instead", i);
            set->rows[k++].predicted = mfu;
        } else {
            loom_plan_clear(&plan);
        }
    }
    return LOOM_OK;
}

/* Describes the rows (once, before the first evaluation). */
static int describe_rows(loom_calib_set *set, loom_error *err)
{
    int n = 0;
    for (int i = 0; i < set->n_layers; i++)
        n += set->layers[i].backward_ms > 0 ? 2 : 1;
    for (int i = 0; i < set->n_iters; i++)
        n += (set->iters[i].measured_ms > 0) + (set->iters[i].mfu > 0);
    if (!(set->rows = calloc((size_t)(n ? n : 1), sizeof *set->rows)))
        return loom_set_error(err, LOOM_ENOMEM, "calibrate: out of memory");
    int k = 0;
    for (int i = 0; i < set->n_layers; i++) {
        const loom_calib_layer *L = &set->layers[i];
        const char *mod = loom_session_problem(set->profile)->model->modules[L->module].name;
        char layer[16];
        if (L->layer < 0)
            snprintf(layer, sizeof layer, "*");
        else
            snprintf(layer, sizeof layer, "%d", L->layer);
        for (int b = 0; b < 2; b++) {
            if (b && !(L->backward_ms > 0))
                continue;
            loom_calib_row *r = &set->rows[k++];
            snprintf(r->where, sizeof r->where, "%.200s:%d %.40s layer %s tokens %lld tp %d %s",
                     set->profile_path, L->line, mod, layer, (long long)L->tokens, L->tp,
                     b ? "backward" : "forward");
            r->measured = b ? L->backward_ms : L->forward_ms;
        }
    }
    for (int i = 0; i < set->n_iters; i++) {
        const loom_calib_iter *it = &set->iters[i];
        const loom_problem *pb = loom_session_problem(it->session);
        for (int b = 0; b < 2; b++) {
            double v = b ? it->mfu : it->measured_ms;
            if (!(v > 0))
                continue;
            loom_calib_row *r = &set->rows[k++];
            snprintf(r->where, sizeof r->where,
                     "iterations[%d] %.60s tp=%d,pp=%d,dp=%d,vpp=%d,mb=%d iteration %d %s", i,
                     pb->model->name, pb->parallel.tp, pb->parallel.pp, pb->parallel.dp,
                     pb->parallel.vpp, pb->parallel.microbatches, it->iteration,
                     b ? "MFU" : "time");
            r->measured = v;
            r->is_mfu = b;
        }
    }
    set->n_rows = k;
    return LOOM_OK;
}

int loom_calib_residuals(void *user, const double *x, double *r, loom_error *err)
{
    loom_calib_set *set = user;
    if (!set->rows) {
        int rc = describe_rows(set, err);
        if (rc != LOOM_OK)
            return rc;
    }
    for (int j = 0; j < set->n_fit; j++)
        loom_calib_factor_set(set->cluster, set->fit[j], x[j]);
    int rc = price_all(set, err);
    if (rc != LOOM_OK)
        return rc;
    for (int i = 0; r && i < set->n_rows; i++)
        r[i] = (set->rows[i].predicted - set->rows[i].measured) / set->rows[i].measured;
    return LOOM_OK;
}

void loom_calib_set_free(loom_calib_set *set)
{
    loom_session_close(set->profile);
    for (int i = 0; i < set->n_iters; i++)
        loom_session_close(set->iters[i].session);
    free(set->iters);
    free(set->layers);
    free(set->rows);
    memset(set, 0, sizeof *set);
}
