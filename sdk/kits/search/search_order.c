/*
 * search_order.c - group precedence (both directions, topological order)
 * and the orders built from it: the reference order and uniformly drawn
 * random orders (see <loom/kits/search.h>).
 */
#include <string.h>
#include <loom/kits/search.h>

/* Allocates n (>= 1) int32 entries. */
static int32_t *ints(const loom_host_api *host, int64_t n)
{
    return host->alloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
}

int loom_sk_prec_build(const loom_host_api *host, const char *who,
                       const loom_stage_graph *g, loom_sk_prec *pc,
                       loom_error *err)
{
    int32_t n = g->n_groups;
    int32_t m = (n > 0 && g->group_pred_off) ? g->group_pred_off[n] : 0;
    memset(pc, 0, sizeof *pc);
    pc->n = n;
    pc->n_edges = m;
    if (m > 0 && !g->group_pred)
        return host->error(err, LOOM_EINVAL, "%s: the graph declares %d group "
                           "precedence edges but no group_pred array", who, m);
    pc->pred_off = ints(host, (int64_t)n + 1);
    pc->pred = ints(host, m);
    pc->succ_off = ints(host, (int64_t)n + 1);
    pc->succ = ints(host, m);
    pc->topo = ints(host, n);
    int32_t *left = ints(host, n);
    if (!pc->pred_off || !pc->pred || !pc->succ_off || !pc->succ ||
        !pc->topo || !left) {
        host->free(left);
        loom_sk_prec_free(host, pc);
        return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
    }
    int rc = LOOM_OK;
    for (int32_t v = 0; v <= n; v++) {
        pc->pred_off[v] = g->group_pred_off ? g->group_pred_off[v] : 0;
        pc->succ_off[v] = 0;
    }
    for (int32_t v = 0; v < n && rc == LOOM_OK; v++) {
        if (pc->pred_off[v + 1] < pc->pred_off[v] || pc->pred_off[v] < 0 ||
            pc->pred_off[v + 1] > m)
            rc = host->error(err, LOOM_EINVAL, "%s: group %d: precedence row "
                             "%d..%d, expected within 0..%d", who, v,
                             pc->pred_off[v], pc->pred_off[v + 1], m);
        for (int32_t e = pc->pred_off[v]; e < pc->pred_off[v + 1] && rc == LOOM_OK; e++) {
            int32_t p = g->group_pred[e];
            if (p < 0 || p >= n || p == v)
                rc = host->error(err, LOOM_EINVAL, "%s: group %d must follow "
                                 "group %d, expected a group in 0..%d other "
                                 "than itself", who, v, p, n - 1);
            else {
                pc->pred[e] = p;
                pc->succ_off[p + 1]++;
            }
        }
    }
    if (rc == LOOM_OK) {
        for (int32_t v = 0; v < n; v++)
            pc->succ_off[v + 1] += pc->succ_off[v];
        for (int32_t v = 0; v < n; v++)
            left[v] = pc->succ_off[v];
        for (int32_t v = 0; v < n; v++)
            for (int32_t e = pc->pred_off[v]; e < pc->pred_off[v + 1]; e++)
                pc->succ[left[pc->pred[e]]++] = v;
        /* Kahn's algorithm for the topological order; a leftover is a cycle. */
        int32_t head = 0, tail = 0;
        for (int32_t v = 0; v < n; v++) {
            left[v] = pc->pred_off[v + 1] - pc->pred_off[v];
            if (left[v] == 0)
                pc->topo[tail++] = v;
        }
        while (head < tail) {
            int32_t v = pc->topo[head++];
            for (int32_t e = pc->succ_off[v]; e < pc->succ_off[v + 1]; e++)
                if (--left[pc->succ[e]] == 0)
                    pc->topo[tail++] = pc->succ[e];
        }
        if (tail < n) {
            int32_t bad = 0;
            while (bad < n && left[bad] == 0)
                bad++;
            rc = host->error(err, LOOM_EINVAL, "%s: group precedence has a "
                             "cycle through group %d", who, bad);
        }
    }
    host->free(left);
    if (rc != LOOM_OK)
        loom_sk_prec_free(host, pc);
    return rc;
}

void loom_sk_prec_free(const loom_host_api *host, loom_sk_prec *pc)
{
    host->free(pc->pred_off);
    host->free(pc->pred);
    host->free(pc->succ_off);
    host->free(pc->succ);
    host->free(pc->topo);
    memset(pc, 0, sizeof *pc);
}

void loom_sk_first_order(const loom_sk_prec *pc, int32_t *left, int32_t *order)
{
    int32_t n = pc->n;
    for (int32_t v = 0; v < n; v++)
        left[v] = pc->pred_off[v + 1] - pc->pred_off[v];
    /* left[v] < 0 marks a placed group; scan for the lowest free one. */
    for (int32_t k = 0; k < n; k++) {
        int32_t v = 0;
        while (v < n && left[v] != 0)
            v++;
        order[k] = v;
        left[v] = -1;
        for (int32_t e = pc->succ_off[v]; e < pc->succ_off[v + 1]; e++)
            left[pc->succ[e]]--;
    }
}

void loom_sk_random_order(const loom_sk_prec *pc, uint64_t *rng, int32_t *left,
                          int32_t *avail, int32_t *order)
{
    int32_t n = pc->n, n_avail = 0;
    for (int32_t v = 0; v < n; v++) {
        left[v] = pc->pred_off[v + 1] - pc->pred_off[v];
        if (left[v] == 0)
            avail[n_avail++] = v;
    }
    for (int32_t k = 0; k < n; k++) {
        uint32_t i = loom_sk_below(rng, (uint32_t)n_avail);
        int32_t v = avail[i];
        avail[i] = avail[--n_avail];
        order[k] = v;
        for (int32_t e = pc->succ_off[v]; e < pc->succ_off[v + 1]; e++)
            if (--left[pc->succ[e]] == 0)
                avail[n_avail++] = pc->succ[e];
    }
}

int loom_sk_prio_valid(const loom_sk_prec *pc, const float *prio)
{
    for (int32_t v = 0; v < pc->n; v++)
        for (int32_t e = pc->pred_off[v]; e < pc->pred_off[v + 1]; e++)
            if (!(prio[pc->pred[e]] > prio[v]))
                return 0;
    return 1;
}
