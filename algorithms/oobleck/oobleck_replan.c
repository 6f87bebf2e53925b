/*
 * oobleck_replan.c - Oobleck's dynamic reconfiguration (dissertation §2.5
 * and appendix A.2): after node failures every affected pipeline is
 * repaired in the chapter's order - simple reinstantiation from a smaller
 * template, borrowing nodes from pipelines that can spare one, merging
 * pipelines - the nodes that gained layers copy them from a surviving
 * replica, and the same global batch is redistributed (§2.5.2).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/algorithms/oobleck.h>

const char *loom_oobleck_action_name(int action)
{
    static const char *const names[] = {"keep", "reinstantiate", "borrow",
                                        "lend", "merge", "replan"};
    if (action < 0 || action > LOOM_OOBLECK_REPLAN)
        return "unknown";
    return names[action];
}

void loom_oobleck_state_clear_pipelines(loom_oobleck_state *st)
{
    if (!st)
        return;
    for (int32_t i = 0; i < st->n_pipelines; i++)
        free(st->pipelines[i].nodes);
    free(st->pipelines);
    st->pipelines = NULL;
    st->n_pipelines = 0;
}

void loom_oobleck_replan_clear(loom_oobleck_replan *r)
{
    if (!r)
        return;
    loom_oobleck_state_clear_pipelines(&r->next);
    free(r->actions);
    free(r->copies);
    memset(r, 0, sizeof *r);
}

/* Time of template `index` of the state for `mb` microbatches. */
static double rp_time(void *user, int32_t index, int32_t mb)
{
    const loom_oobleck_state *st = user;
    return loom_oobleck_template_time_ms(&st->templates[index], mb);
}

/* Checks the templates: present, ascending consecutive node counts. */
static int rp_check_templates(const loom_oobleck_state *st, loom_error *err)
{
    if (st->n_templates < 1 || !st->templates)
        return loom_error_format(err, LOOM_EINVAL, "oobleck: no pipeline templates");
    for (int32_t i = 1; i < st->n_templates; i++)
        if (st->templates[i].nodes != st->templates[0].nodes + i)
            return loom_error_format(err, LOOM_EINVAL,
                           "oobleck: templates[%d] has %d nodes, expected %d "
                           "(consecutive node counts)", i,
                           st->templates[i].nodes, st->templates[0].nodes + i);
    return LOOM_OK;
}

/* Builds pipelines for plan x (per-template counts, template shares mb)
 * on `ids` in order. */
static int rp_build(loom_oobleck_state *st, const int32_t *x, const int32_t *mb,
                    const int32_t *ids, loom_error *err)
{
    int32_t n = 0;
    for (int32_t j = 0; j < st->n_templates; j++)
        n += x[j];
    st->pipelines = calloc((size_t)n, sizeof *st->pipelines);
    if (!st->pipelines)
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    st->n_pipelines = n;
    int32_t at = 0, k = 0;
    for (int32_t j = 0; j < st->n_templates; j++) {
        for (int32_t c = 0; c < x[j]; c++, k++) {
            loom_oobleck_pipeline *p = &st->pipelines[k];
            p->template_index = j;
            p->n_nodes = st->templates[j].nodes;
            p->microbatches = loom_oobleck_share(mb[j], x[j], c);
            p->nodes = malloc((size_t)p->n_nodes * sizeof *p->nodes);
            if (!p->nodes)
                return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
            memcpy(p->nodes, ids + at, (size_t)p->n_nodes * sizeof *ids);
            at += p->n_nodes;
        }
    }
    return LOOM_OK;
}

/* Instantiates the best plan for node ids `ids` (n of them) into st. */
static int rp_instantiate_ids(loom_oobleck_state *st, const int32_t *ids,
                              int32_t n, double *iteration_ms, loom_error *err)
{
    int32_t *sizes = malloc((size_t)st->n_templates * sizeof *sizes);
    if (!sizes)
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    for (int32_t j = 0; j < st->n_templates; j++)
        sizes[j] = st->templates[j].nodes;
    loom_oobleck_choice ch;
    int rc = loom_oobleck_choose(sizes, st->n_templates, rp_time, st, n, st->f,
                                 st->microbatches, 0, &ch, err);
    free(sizes);
    if (rc != LOOM_OK)
        return rc;
    rc = rp_build(st, ch.x, ch.mb, ids, err);
    if (iteration_ms)
        *iteration_ms = ch.iteration_ms;
    loom_oobleck_choice_clear(&ch);
    return rc;
}

int loom_oobleck_redistribute(loom_oobleck_state *st, double *iteration_ms,
                              loom_error *err)
{
    int rc = rp_check_templates(st, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t *x = calloc((size_t)st->n_templates, sizeof *x);
    int32_t *mb = calloc((size_t)st->n_templates, sizeof *mb);
    if (!x || !mb) {
        free(x);
        free(mb);
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    }
    for (int32_t i = 0; i < st->n_pipelines; i++) {
        int32_t j = st->pipelines[i].template_index;
        if (j < 0 || j >= st->n_templates) {
            free(x);
            free(mb);
            return loom_error_format(err, LOOM_EINVAL,
                           "oobleck: pipelines[%d] uses template %d of %d", i,
                           j, st->n_templates);
        }
        x[j]++;
    }
    rc = loom_oobleck_distribute(x, st->n_templates, rp_time, st,
                                 st->microbatches, mb, iteration_ms, NULL, err);
    if (rc == LOOM_OK) {
        memset(x, 0, (size_t)st->n_templates * sizeof *x);
        for (int32_t i = 0; i < st->n_pipelines; i++) {
            loom_oobleck_pipeline *q = &st->pipelines[i];
            int32_t j = q->template_index, cnt = 0;
            for (int32_t k = 0; k < st->n_pipelines; k++)
                cnt += st->pipelines[k].template_index == j;
            q->microbatches = loom_oobleck_share(mb[j], cnt, x[j]++);
        }
    }
    free(x);
    free(mb);
    return rc;
}

int loom_oobleck_instantiate(loom_oobleck_state *st, int32_t nodes,
                             loom_error *err)
{
    int rc = rp_check_templates(st, err);
    if (rc != LOOM_OK)
        return rc;
    if (nodes < 1 || nodes > LOOM_OOBLECK_MAX_NODES)
        return loom_error_format(err, LOOM_EINVAL,
                       "oobleck: nodes: expected 1 to %d, found %d",
                       LOOM_OOBLECK_MAX_NODES, nodes);
    int32_t *ids = malloc((size_t)nodes * sizeof *ids);
    if (!ids)
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    for (int32_t i = 0; i < nodes; i++)
        ids[i] = i;
    loom_oobleck_state_clear_pipelines(st);
    rc = rp_instantiate_ids(st, ids, nodes, NULL, err);
    free(ids);
    if (rc != LOOM_OK)
        loom_oobleck_state_clear_pipelines(st);
    return rc;
}

/* Marks in `held` (n_layers entries) the layers node index `k` of a
 * pipeline built from template t holds. */
static void rp_layers_of(const loom_oobleck_template *t, int32_t k,
                         unsigned char *held, int32_t n_layers)
{
    memset(held, 0, (size_t)n_layers);
    for (int32_t s = 0; s < t->n_stages; s++) {
        const loom_oobleck_stage *st = &t->stages[s];
        if (st->node != k)
            continue;
        for (int32_t l = st->first_layer; l < st->first_layer + st->n_layers; l++)
            held[l] = 1;
    }
}

/* A pipeline being repaired: its node ids and what happened to it. */
typedef struct rp_pipe {
    int32_t *ids;
    int32_t n, cap;
    int action;
    int alive;    /* 0: merged away or lost every node */
} rp_pipe;

/* Appends node id to a pipeline under repair. */
static int rp_push(rp_pipe *p, int32_t id)
{
    if (p->n == p->cap) {
        int32_t ncap = p->cap ? p->cap * 2 : 8;
        int32_t *ni = realloc(p->ids, (size_t)ncap * sizeof *ni);
        if (!ni)
            return LOOM_ENOMEM;
        p->ids = ni;
        p->cap = ncap;
    }
    p->ids[p->n++] = id;
    return LOOM_OK;
}

/* Local repair in the chapter's order. Returns 1 when it succeeded, 0 when
 * a full re-instantiation is needed, < 0 on allocation failure. */
static int rp_repair(const loom_oobleck_state *st, rp_pipe *pp, int32_t n0,
                     int32_t n_max)
{
    int32_t np = st->n_pipelines;
    for (int32_t i = 0; i < np; i++) {
        if (!pp[i].alive || pp[i].n >= n0)
            continue;
        /* borrow: one node at a time from the largest pipeline above n0 */
        while (pp[i].n < n0) {
            int32_t donor = -1;
            for (int32_t j = 0; j < np; j++)
                if (j != i && pp[j].alive && pp[j].n > n0 &&
                    (donor < 0 || pp[j].n > pp[donor].n))
                    donor = j;
            if (donor < 0)
                break;
            if (rp_push(&pp[i], pp[donor].ids[--pp[donor].n]) != LOOM_OK)
                return -1;
            pp[donor].action = LOOM_OOBLECK_LEND;
            pp[i].action = LOOM_OOBLECK_BORROW;
        }
        /* merge: another short pipeline first, else the smallest one */
        while (pp[i].n < n0) {
            int32_t other = -1;
            for (int32_t j = 0; j < np && other < 0; j++)
                if (j != i && pp[j].alive && pp[j].n < n0)
                    other = j;
            if (other < 0)
                for (int32_t j = 0; j < np; j++)
                    if (j != i && pp[j].alive &&
                        (other < 0 || pp[j].n < pp[other].n))
                        other = j;
            if (other < 0)
                return 0;
            for (int32_t k = 0; k < pp[other].n; k++)
                if (rp_push(&pp[i], pp[other].ids[k]) != LOOM_OK)
                    return -1;
            pp[other].alive = 0;
            pp[other].n = 0;
            pp[i].action = LOOM_OOBLECK_MERGE;
        }
        if (pp[i].n > n_max)
            return 0;
    }
    int32_t count = 0;
    for (int32_t i = 0; i < np; i++)
        count += pp[i].alive;
    return count >= st->f + 1;
}

/* Adds copies for every layer the new pipelines need on a node that the
 * node did not hold before, sourced from the lowest surviving holder. */
static int rp_copies(const loom_oobleck_state *st, const loom_oobleck_state *nx,
                     const unsigned char *old_held, const int32_t *node_max,
                     loom_oobleck_replan *out, loom_error *err)
{
    int32_t L = st->n_layers, cap = 0;
    unsigned char *held = malloc((size_t)L);
    if (!held)
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    for (int32_t i = 0; i < nx->n_pipelines; i++) {
        const loom_oobleck_pipeline *p = &nx->pipelines[i];
        for (int32_t k = 0; k < p->n_nodes; k++) {
            int32_t node = p->nodes[k];
            rp_layers_of(&st->templates[p->template_index], k, held, L);
            for (int32_t l = 0; l < L; l++) {
                if (!held[l] || old_held[(size_t)node * L + l])
                    continue;
                int32_t src = -1;
                for (int32_t m = 0; m < *node_max && src < 0; m++)
                    if (old_held[(size_t)m * L + l] == 1)
                        src = m;
                if (out->n_copies == cap) {
                    cap = cap ? cap * 2 : 64;
                    loom_oobleck_copy *nc =
                        realloc(out->copies, (size_t)cap * sizeof *nc);
                    if (!nc) {
                        free(held);
                        return loom_error_format(err, LOOM_ENOMEM,
                                       "oobleck: out of memory");
                    }
                    out->copies = nc;
                }
                out->copies[out->n_copies++] =
                    (loom_oobleck_copy){l, node, src};
            }
        }
    }
    free(held);
    return LOOM_OK;
}

int loom_oobleck_replan_run(const loom_oobleck_state *st, const int32_t *failed,
                            int32_t n_failed, int full,
                            loom_oobleck_replan *out, loom_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = rp_check_templates(st, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t n0 = st->templates[0].nodes;
    int32_t n_max = st->templates[st->n_templates - 1].nodes;
    int32_t L = st->n_layers, node_max = 0, total = 0;
    for (int32_t i = 0; i < st->n_pipelines; i++) {
        const loom_oobleck_pipeline *p = &st->pipelines[i];
        if (p->template_index < 0 || p->template_index >= st->n_templates ||
            st->templates[p->template_index].nodes != p->n_nodes)
            return loom_error_format(err, LOOM_EINVAL,
                           "oobleck: pipelines[%d] has %d nodes but uses "
                           "template %d", i, p->n_nodes, p->template_index);
        for (int32_t k = 0; k < p->n_nodes; k++)
            if (p->nodes[k] + 1 > node_max)
                node_max = p->nodes[k] + 1;
        total += p->n_nodes;
    }
    if (node_max > LOOM_OOBLECK_MAX_NODES || L < 1)
        return loom_error_format(err, LOOM_EINVAL, "oobleck: node ids must be below %d",
                       LOOM_OOBLECK_MAX_NODES);
    /* where: pipeline of every node (-1 none); state: 1 alive, 2 failed */
    int32_t *where = malloc((size_t)node_max * sizeof *where);
    int32_t *ids = malloc((size_t)node_max * sizeof *ids);
    unsigned char *dead = calloc((size_t)node_max, 1);
    unsigned char *old_held = calloc((size_t)node_max * (size_t)L, 1);
    rp_pipe *pp = calloc((size_t)st->n_pipelines + 1, sizeof *pp);
    if (!where || !ids || !dead || !old_held || !pp) {
        rc = loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
        goto done;
    }
    for (int32_t m = 0; m < node_max; m++)
        where[m] = -1;
    for (int32_t i = 0; i < st->n_pipelines; i++) {
        const loom_oobleck_pipeline *p = &st->pipelines[i];
        for (int32_t k = 0; k < p->n_nodes; k++) {
            if (p->nodes[k] < 0 || where[p->nodes[k]] >= 0) {
                rc = loom_error_format(err, LOOM_EINVAL,
                             "oobleck: node %d appears twice or is negative",
                             p->nodes[k]);
                goto done;
            }
            where[p->nodes[k]] = i;
            rp_layers_of(&st->templates[p->template_index], k,
                         old_held + (size_t)p->nodes[k] * L, L);
        }
    }
    for (int32_t f = 0; f < n_failed; f++) {
        int32_t id = failed[f];
        if (id < 0 || id >= node_max || where[id] < 0) {
            rc = loom_error_format(err, LOOM_EINVAL,
                         "oobleck: failed node %d is not in any pipeline", id);
            goto done;
        }
        if (dead[id]) {
            rc = loom_error_format(err, LOOM_EINVAL,
                         "oobleck: failed node %d is listed twice", id);
            goto done;
        }
        dead[id] = 1;
        memset(old_held + (size_t)id * L, 0, (size_t)L);
    }
    int32_t remaining = total - n_failed;
    if (remaining < (st->f + 1) * n0) {
        rc = loom_error_format(err, LOOM_EINFEASIBLE,
                     "oobleck: %d nodes remain, fewer than (f+1)*n0 = %d*%d = "
                     "%d needed for f+1 pipeline replicas: save progress and "
                     "exit until enough nodes return", remaining, st->f + 1, n0,
                     (st->f + 1) * n0);
        goto done;
    }
    for (int32_t l = 0; l < L; l++) {
        int found = 0;
        for (int32_t m = 0; m < node_max && !found; m++)
            found = old_held[(size_t)m * L + l];
        if (!found) {
            rc = loom_error_format(err, LOOM_EINFEASIBLE,
                         "oobleck: layer %d lost every replica (all nodes "
                         "holding it failed): unrecoverable without a "
                         "checkpoint", l);
            goto done;
        }
    }
    out->next.f = st->f;
    out->next.n_layers = L;
    out->next.n_templates = st->n_templates;
    out->next.templates = st->templates;
    out->next.microbatches = st->microbatches;
    int repaired = 0;
    if (!full) {
        for (int32_t i = 0; i < st->n_pipelines; i++) {
            const loom_oobleck_pipeline *p = &st->pipelines[i];
            pp[i].alive = 1;
            for (int32_t k = 0; k < p->n_nodes; k++)
                if (!dead[p->nodes[k]] && rp_push(&pp[i], p->nodes[k])) {
                    rc = loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
                    goto done;
                }
            pp[i].action = pp[i].n == p->n_nodes ? LOOM_OOBLECK_KEEP
                                                 : LOOM_OOBLECK_REINSTANTIATE;
            if (pp[i].n == 0)
                pp[i].alive = 0;
        }
        repaired = rp_repair(st, pp, n0, n_max);
        if (repaired < 0) {
            rc = loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
            goto done;
        }
    }
    if (repaired) {
        int32_t n = 0;
        for (int32_t i = 0; i < st->n_pipelines; i++)
            n += pp[i].alive;
        out->next.pipelines = calloc((size_t)n, sizeof *out->next.pipelines);
        out->actions = calloc((size_t)n, sizeof *out->actions);
        if (!out->next.pipelines || !out->actions) {
            rc = loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
            goto done;
        }
        int32_t *x = calloc((size_t)st->n_templates, sizeof *x);
        int32_t *nb = calloc((size_t)st->n_templates, sizeof *nb);
        if (!x || !nb) {
            free(x);
            free(nb);
            rc = loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
            goto done;
        }
        for (int32_t i = 0; i < st->n_pipelines; i++) {
            if (!pp[i].alive)
                continue;
            loom_oobleck_pipeline *q = &out->next.pipelines[out->next.n_pipelines];
            out->actions[out->next.n_pipelines++] = pp[i].action;
            q->template_index = pp[i].n - n0;
            q->n_nodes = pp[i].n;
            q->nodes = pp[i].ids;
            pp[i].ids = NULL;
            x[q->template_index]++;
        }
        int32_t rec = 0;
        rc = loom_oobleck_distribute(x, st->n_templates, rp_time, (void *)st,
                                     st->microbatches, nb, &out->iteration_ms,
                                     &rec, err);
        /* the k-th pipeline of a template gets its share of mb[j] */
        memset(x, 0, (size_t)st->n_templates * sizeof *x);
        for (int32_t i = 0; rc == LOOM_OK && i < out->next.n_pipelines; i++) {
            loom_oobleck_pipeline *q = &out->next.pipelines[i];
            int32_t j = q->template_index, cnt = 0;
            for (int32_t k = 0; k < out->next.n_pipelines; k++)
                cnt += out->next.pipelines[k].template_index == j;
            q->microbatches = loom_oobleck_share(nb[j], cnt, x[j]++);
        }
        free(x);
        free(nb);
        if (rc != LOOM_OK)
            goto done;
    } else {
        int32_t n = 0;
        for (int32_t m = 0; m < node_max; m++)
            if (where[m] >= 0 && !dead[m])
                ids[n++] = m;
        rc = rp_instantiate_ids(&out->next, ids, n, &out->iteration_ms, err);
        if (rc != LOOM_OK)
            goto done;
        out->actions = calloc((size_t)out->next.n_pipelines + 1,
                              sizeof *out->actions);
        if (!out->actions) {
            rc = loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
            goto done;
        }
        for (int32_t i = 0; i < out->next.n_pipelines; i++)
            out->actions[i] = LOOM_OOBLECK_REPLAN;
        out->full_replan = 1;
    }
    rc = rp_copies(st, &out->next, old_held, &node_max, out, err);
done:
    if (pp)
        for (int32_t i = 0; i < st->n_pipelines; i++)
            free(pp[i].ids);
    free(pp);
    free(where);
    free(ids);
    free(dead);
    free(old_held);
    if (rc != LOOM_OK)
        loom_oobleck_replan_clear(out);
    return rc;
}
