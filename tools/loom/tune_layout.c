/* tune_layout.c - how one `loom tune` configuration is written: the
 * --parallel text `loom plan` reads (key=value pairs for one layout, the
 * parallel object inline when a module has its own layout), its layout
 * object in reports, and the GPUs it uses. */
#include <stdio.h>
#include <string.h>
#include <loom/sys/problem.h>
#include "tune.h"

int64_t loom_tune_config_gpus(const loom_tune_config *c)
{
    const loom_parallel *p = &c->par;
    int64_t top = (int64_t)p->tp * loom_parallel_cp(p) * p->pp * p->dp;
    if (c->module >= 0 && c->module_placement == LOOM_LAYOUT_DISJOINT)
        top += (int64_t)c->module_tp * c->module_pp * c->module_dp;
    return top;
}

/* The listed module of c and its degrees: its own layout, or (for a
 * manifest that lays out per-module layouts) the backbone at the
 * top-level layout, so that every configuration it plans lists one. -1
 * when c is one layout for a manifest that needs none. */
static int32_t listed_module(const loom_tune_search *t, const loom_tune_config *c,
                             int32_t deg[3], int *disjoint)
{
    *disjoint = 0;
    if (c->module >= 0) {
        deg[0] = c->module_tp;
        deg[1] = c->module_pp;
        deg[2] = c->module_dp;
        *disjoint = c->module_placement == LOOM_LAYOUT_DISJOINT;
        return c->module;
    }
    if (t->layouts[c->manifest] != 1 || t->n_module_names < 1)
        return -1;
    deg[0] = c->par.tp;
    deg[1] = c->par.pp;
    deg[2] = c->par.dp;
    return t->listed_module;
}

int loom_tune_parallel_text(const loom_tune_search *t, const loom_tune_config *c, char *buf,
                            size_t size)
{
    const loom_parallel *p = &c->par;
    int32_t deg[3];
    int disjoint;
    int32_t m = listed_module(t, c, deg, &disjoint);
    int n;
    if (m < 0)
        n = snprintf(buf, size, "tp=%d,cp=%d,pp=%d,dp=%d,vpp=%d,mb=%d", p->tp,
                     loom_parallel_cp(p), p->pp, p->dp, p->vpp, p->microbatches);
    else
        n = snprintf(buf, size, "{\"tp\": %d, \"cp\": %d, \"pp\": %d, \"dp\": %d, \"vpp\": %d, "
                     "\"microbatches\": %d, \"gpus\": %lld, \"modules\": {\"%s\": {\"tp\": %d, "
                     "\"cp\": %d, \"pp\": %d, \"dp\": %d, \"placement\": \"%s\"}}}", p->tp,
                     loom_parallel_cp(p), p->pp, p->dp, p->vpp, p->microbatches,
                     (long long)loom_tune_config_gpus(c), t->module_names[m], deg[0],
                     disjoint ? 1 : loom_parallel_cp(p), deg[1], deg[2],
                     disjoint ? "disjoint" : "colocated");
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

void loom_tune_config_layout_json(FILE *out, const loom_tune_search *t,
                                  const loom_tune_config *c)
{
    const loom_parallel *p = &c->par;
    fprintf(out, "{\"tp\": %d, \"cp\": %d, \"pp\": %d, \"dp\": %d, \"vpp\": %d, "
            "\"microbatches\": %d, \"micro_batch_size\": %d, \"global_batch\": %lld, "
            "\"gpus\": %lld", p->tp, loom_parallel_cp(p), p->pp, p->dp, p->vpp,
            p->microbatches, c->micro_batch_size, (long long)t->global_batch,
            (long long)loom_tune_config_gpus(c));
    if (c->module >= 0) {
        int disjoint = c->module_placement == LOOM_LAYOUT_DISJOINT;
        fprintf(out, ", \"modules\": {\"%s\": {\"tp\": %d, \"cp\": %d, \"pp\": %d, \"dp\": %d, "
                "\"placement\": \"%s\", \"gpus\": %lld}}", t->module_names[c->module],
                c->module_tp, disjoint ? 1 : loom_parallel_cp(p), c->module_pp, c->module_dp,
                disjoint ? "disjoint" : "colocated",
                (long long)c->module_tp * (disjoint ? 1 : loom_parallel_cp(p)) * c->module_pp *
                    c->module_dp);
    }
    fputc('}', out);
}

/* 1 when layout l differs from the top-level layout p (or is listed). */
static int own_layout(const loom_module_layout *l, const loom_parallel *p)
{
    return l->listed || l->placement != LOOM_LAYOUT_TOP || l->tp != p->tp || l->pp != p->pp ||
           l->dp != p->dp || l->cp != loom_parallel_cp(p);
}

void loom_tune_plan_layout_json(FILE *out, const loom_problem *pb,
                                const loom_module_layout *layouts, int32_t micro_batch_size,
                                int64_t global_batch)
{
    loom_parallel top = pb->parallel;
    const loom_parallel *p = &top;
    int32_t n = layouts && pb->model ? pb->model->n_modules : 0, any = 0;
    for (int32_t m = 0; m < n; m++)
        if (layouts[m].placement == LOOM_LAYOUT_TOP) { /* a partitioner's choice */
            top.tp = layouts[m].tp;
            top.cp = layouts[m].cp;
            top.pp = layouts[m].pp;
            top.dp = layouts[m].dp;
            break;
        }
    int64_t gpus = (int64_t)p->tp * loom_parallel_cp(p) * p->pp * p->dp;
    for (int32_t m = 0; m < n; m++) {
        any |= own_layout(&layouts[m], p);
        if (layouts[m].placement == LOOM_LAYOUT_DISJOINT)
            gpus += (int64_t)layouts[m].tp * layouts[m].cp * layouts[m].pp * layouts[m].dp;
    }
    fprintf(out, "{\"tp\": %d, \"cp\": %d, \"pp\": %d, \"dp\": %d, \"vpp\": %d, "
            "\"microbatches\": %d, \"micro_batch_size\": %d, \"global_batch\": %lld, "
            "\"gpus\": %lld", p->tp, loom_parallel_cp(p), p->pp, p->dp, p->vpp,
            p->microbatches, micro_batch_size, (long long)global_batch, (long long)gpus);
    if (any) { /* module names are [A-Za-z0-9_.-]+ (loom_check_name) */
        fputs(", \"modules\": {", out);
        for (int32_t m = 0, k = 0; m < n; m++) {
            const loom_module_layout *l = &layouts[m];
            if (!own_layout(l, p))
                continue;
            fprintf(out, "%s\"%s\": {\"tp\": %d, \"cp\": %d, \"pp\": %d, \"dp\": %d, "
                    "\"placement\": \"%s\", \"gpus\": %lld}", k++ ? ", " : "",
                    pb->model->modules[m].name, l->tp, l->cp, l->pp, l->dp,
                    l->placement == LOOM_LAYOUT_DISJOINT    ? "disjoint"
                    : l->placement == LOOM_LAYOUT_COLOCATED ? "colocated"
                                                            : "top",
                    (long long)l->tp * l->cp * l->pp * l->dp);
        }
        fputc('}', out);
    }
    fputc('}', out);
}
