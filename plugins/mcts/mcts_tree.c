/*
 * loom_mcts_tree.c - the MCTS search tree over priority assignments (PipeWeaver
 * §6.1): node at depth d fixes group d - 1's value; selection by UCB
 * s^alpha + beta * sqrt(ln N_parent / N_child) with virtual visits, one
 * expansion per selection, max-score backpropagation, and exhaustion
 * bookkeeping so a finished subtree is never selected again.
 */
#include <math.h>
#include <string.h>
#include "mcts.h"

int loom_mcts_tree_init(loom_mcts_tree *t, const loom_host_api *host,
                   const loom_sk_prec *pc, double alpha, double beta,
                   loom_error *err)
{
    memset(t, 0, sizeof *t);
    t->host = host;
    t->pc = pc;
    t->n = pc->n;
    t->alpha = alpha;
    t->beta = beta;
    size_t k = (size_t)(t->n > 0 ? t->n : 1);
    t->cap_nodes = 1024;
    t->nodes = host->alloc((size_t)t->cap_nodes * sizeof *t->nodes);
    t->value_of = host->alloc(k * sizeof *t->value_of);
    t->options = host->alloc(k * sizeof *t->options);
    t->used = host->alloc(k + 1);
    if (!t->nodes || !t->value_of || !t->options || !t->used ||
        loom_mcts_fill_init(&t->fill, host, t->n) != LOOM_OK) {
        loom_mcts_tree_free(t);
        return host->error(err, LOOM_ENOMEM, "mcts: out of memory");
    }
    loom_mcts_node *root = &t->nodes[0];
    memset(root, 0, sizeof *root);
    root->parent = root->first_child = root->next_sibling = -1;
    root->n_options = t->n > 0 ? -1 : 0;
    root->exhausted = t->n == 0;
    t->n_nodes = 1;
    return LOOM_OK;
}

void loom_mcts_tree_free(loom_mcts_tree *t)
{
    if (!t->host)
        return;
    t->host->free(t->nodes);
    t->host->free(t->value_of);
    t->host->free(t->options);
    t->host->free(t->used);
    loom_mcts_fill_free(&t->fill);
    memset(t, 0, sizeof *t);
}

void loom_mcts_tree_prefix(const loom_mcts_tree *t, int32_t x, int32_t *value_of)
{
    for (int32_t g = 0; g < t->n; g++)
        value_of[g] = 0;
    for (; x > 0; x = t->nodes[x].parent)
        value_of[t->nodes[x].depth - 1] = t->nodes[x].value;
}

int loom_mcts_tree_exhausted(const loom_mcts_tree *t)
{
    return t->nodes[0].exhausted;
}

/* 1 when every feasible child of x exists. */
static int fully_expanded(const loom_mcts_node *x)
{
    return x->n_options >= 0 && x->n_children >= x->n_options;
}

/* 1 when every feasible child of x exists and is exhausted. */
static int children_done(const loom_mcts_tree *t, int32_t x)
{
    if (!fully_expanded(&t->nodes[x]))
        return 0;
    for (int32_t c = t->nodes[x].first_child; c >= 0; c = t->nodes[c].next_sibling)
        if (!t->nodes[c].exhausted)
            return 0;
    return 1;
}

/* Marks x exhausted and every ancestor whose children now all are. */
static void mark_exhausted(loom_mcts_tree *t, int32_t x)
{
    t->nodes[x].exhausted = 1;
    for (int32_t p = t->nodes[x].parent; p >= 0 && children_done(t, p);
         p = t->nodes[p].parent)
        t->nodes[p].exhausted = 1;
}

/* Adds a child of x for one untried feasible value; returns its index,
 * -2 when out of memory. */
static int32_t expand(loom_mcts_tree *t, int32_t x, uint64_t *rng)
{
    int32_t n = t->n, d = t->nodes[x].depth;
    loom_mcts_tree_prefix(t, x, t->value_of);
    memset(t->used, 0, (size_t)n + 1);
    for (int32_t g = 0; g < d; g++)
        t->used[t->value_of[g]] = 1;
    int check = t->pc->n_edges > 0;
    if (check)
        loom_mcts_fill_set(&t->fill, t->value_of);
    int32_t n_opt = 0, n_free = 0;
    for (int32_t v = 1; v <= n; v++) {
        if (t->used[v])
            continue;
        int ok = 1;
        if (check) {
            int32_t s = n - v;
            t->fill.slot_of[d] = s;
            t->fill.group_at[s] = d;
            ok = loom_mcts_fill_feasible(&t->fill, t->pc);
            t->fill.slot_of[d] = -1;
            t->fill.group_at[s] = -1;
        }
        if (ok) {
            n_opt++;
            t->options[n_free++] = v;
        }
    }
    t->nodes[x].n_options = n_opt;
    /* Drop the values some child already took. */
    for (int32_t c = t->nodes[x].first_child; c >= 0; c = t->nodes[c].next_sibling)
        t->used[t->nodes[c].value] = 1;
    int32_t k = 0;
    for (int32_t i = 0; i < n_free; i++)
        if (!t->used[t->options[i]])
            t->options[k++] = t->options[i];
    if (k == 0)
        return -1; /* callers only expand nodes that are not full */

    if (t->n_nodes == t->cap_nodes) {
        int32_t cap = t->cap_nodes * 2;
        loom_mcts_node *p = t->host->realloc(t->nodes, (size_t)cap * sizeof *p);
        if (!p)
            return -2;
        t->nodes = p;
        t->cap_nodes = cap;
    }
    int32_t c = t->n_nodes++;
    loom_mcts_node *nd = &t->nodes[c];
    memset(nd, 0, sizeof *nd);
    nd->parent = x;
    nd->first_child = -1;
    nd->value = t->options[loom_sk_below(rng, (uint32_t)k)];
    nd->depth = d + 1;
    nd->n_options = nd->depth == n ? 0 : -1;
    /* Append, so children keep their creation order. */
    nd->next_sibling = -1;
    int32_t *link = &t->nodes[x].first_child;
    while (*link >= 0)
        link = &t->nodes[*link].next_sibling;
    *link = c;
    t->nodes[x].n_children++;
    return c;
}

/* The child of x with the highest UCB among those not exhausted, or -1. */
static int32_t best_child(const loom_mcts_tree *t, int32_t x)
{
    const loom_mcts_node *nx = &t->nodes[x];
    double n_parent = (double)nx->visits + nx->virt;
    double log_n = n_parent > 1 ? log(n_parent) : 0;
    int32_t best = -1;
    double best_u = 0;
    for (int32_t c = nx->first_child; c >= 0; c = t->nodes[c].next_sibling) {
        const loom_mcts_node *nc = &t->nodes[c];
        if (nc->exhausted)
            continue;
        double n_c = (double)nc->visits + nc->virt;
        double u = n_c <= 0 ? HUGE_VAL
                            : pow(nc->score, t->alpha) +
                                  t->beta * sqrt(log_n / n_c);
        if (best < 0 || u > best_u) {
            best = c;
            best_u = u;
        }
    }
    return best;
}

int32_t loom_mcts_tree_select(loom_mcts_tree *t, uint64_t *rng)
{
    for (;;) {
        if (t->nodes[0].exhausted)
            return -1;
        int32_t x = 0, leaf = -1;
        while (leaf < 0) {
            if (!fully_expanded(&t->nodes[x])) {
                leaf = expand(t, x, rng);
                if (leaf == -2)
                    return -2;
                if (leaf == -1) { /* every option is taken after all */
                    if (children_done(t, x))
                        mark_exhausted(t, x);
                    break;
                }
            } else {
                int32_t c = best_child(t, x);
                if (c < 0) {
                    mark_exhausted(t, x);
                    break;
                }
                x = c;
            }
        }
        if (leaf < 0)
            continue;
        for (int32_t y = leaf; y >= 0; y = t->nodes[y].parent)
            t->nodes[y].virt++;
        if (t->nodes[leaf].depth == t->n)
            mark_exhausted(t, leaf); /* a full assignment: one evaluation */
        return leaf;
    }
}

void loom_mcts_tree_backprop(loom_mcts_tree *t, int32_t leaf, double score)
{
    for (int32_t y = leaf; y >= 0; y = t->nodes[y].parent) {
        loom_mcts_node *nd = &t->nodes[y];
        if (score > nd->score)
            nd->score = score;
        nd->visits++;
        nd->virt--;
    }
}
