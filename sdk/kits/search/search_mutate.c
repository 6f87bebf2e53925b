/*
 * search_mutate.c - local moves on a valid order: the "polish" jobs of the
 * mcts ranker (docs/search.md) perturb the best order found so far.
 */
#include <loom/kits/search.h>

void loom_sk_prio_to_order(const float *prio, int32_t n, int32_t *order)
{
    /* insertion sort by priority, higher first, ties to the lower group */
    for (int32_t g = 0; g < n; g++) {
        int32_t k = g;
        while (k > 0 && prio[order[k - 1]] < prio[g]) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = g;
    }
}

/* One move: a uniformly drawn group is taken out of its slot and put back
 * at a uniformly drawn slot after its last predecessor and before its
 * first successor (the groups in between shift by one slot, keeping their
 * relative order, so every precedence still holds). */
static void sk_move(const loom_sk_prec *pc, uint64_t *rng, int32_t *order,
                    int32_t *slot_of)
{
    int32_t n = pc->n;
    int32_t g = (int32_t)loom_sk_below(rng, (uint32_t)n);
    int32_t s = slot_of[g], lo = 0, hi = n - 1;
    for (int32_t e = pc->pred_off[g]; e < pc->pred_off[g + 1]; e++)
        if (slot_of[pc->pred[e]] + 1 > lo)
            lo = slot_of[pc->pred[e]] + 1;
    for (int32_t e = pc->succ_off[g]; e < pc->succ_off[g + 1]; e++)
        if (slot_of[pc->succ[e]] - 1 < hi)
            hi = slot_of[pc->succ[e]] - 1;
    if (hi <= lo)
        return; /* pinned between its neighbours */
    int32_t t = lo + (int32_t)loom_sk_below(rng, (uint32_t)(hi - lo + 1));
    for (; s < t; s++) {
        order[s] = order[s + 1];
        slot_of[order[s]] = s;
    }
    for (; s > t; s--) {
        order[s] = order[s - 1];
        slot_of[order[s]] = s;
    }
    order[t] = g;
    slot_of[g] = t;
}

void loom_sk_mutate_order(const loom_sk_prec *pc, uint64_t *rng,
                          int32_t *order, int32_t *slot_of, int32_t moves)
{
    if (pc->n < 2)
        return;
    for (int32_t k = 0; k < pc->n; k++)
        slot_of[order[k]] = k;
    for (int32_t i = 0; i < moves; i++)
        sk_move(pc, rng, order, slot_of);
}
