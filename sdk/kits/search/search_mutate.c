/*
 * search_mutate.c - local moves on a valid order: the "polish" jobs of the
 * mcts ranker (docs/search.md) perturb the best order found so far.
 */
#include <stdint.h>
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

/* Moves the group at slot `from` to slot `to`; the groups in between
 * shift by one slot and keep their relative order. */
static void sk_relocate(int32_t *order, int32_t *slot_of, int32_t from,
                        int32_t to)
{
    int32_t g = order[from], s = from;
    for (; s < to; s++) {
        order[s] = order[s + 1];
        slot_of[order[s]] = s;
    }
    for (; s > to; s--) {
        order[s] = order[s - 1];
        slot_of[order[s]] = s;
    }
    order[to] = g;
    slot_of[g] = to;
}

/* Restores precedence after groups moved earlier: in reverse topological
 * order, a predecessor found after its successor moves to just before it.
 * One pass suffices: a move only takes a group earlier, past groups whose
 * own predecessors are fixed later in the pass. */
static void sk_pull(const loom_sk_prec *pc, int32_t *order, int32_t *slot_of)
{
    for (int32_t i = pc->n - 1; i >= 0; i--) {
        int32_t x = pc->topo[i];
        for (int32_t e = pc->pred_off[x]; e < pc->pred_off[x + 1]; e++)
            if (slot_of[pc->pred[e]] > slot_of[x])
                sk_relocate(order, slot_of, slot_of[pc->pred[e]], slot_of[x]);
    }
}

/* Restores precedence after groups moved later: in topological order, a
 * successor found before a predecessor moves to just after it. */
static void sk_push(const loom_sk_prec *pc, int32_t *order, int32_t *slot_of)
{
    for (int32_t i = 0; i < pc->n; i++) {
        int32_t x = pc->topo[i];
        for (int32_t e = pc->pred_off[x]; e < pc->pred_off[x + 1]; e++)
            if (slot_of[pc->pred[e]] > slot_of[x])
                sk_relocate(order, slot_of, slot_of[x], slot_of[pc->pred[e]]);
    }
}

/* Restores precedence after a move that took groups earlier (pull) or
 * later (push). */
static void sk_repair(const loom_sk_prec *pc, int32_t *order, int32_t *slot_of,
                      int earlier)
{
    if (earlier)
        sk_pull(pc, order, slot_of);
    else
        sk_push(pc, order, slot_of);
}

/* Insertion: a uniformly drawn group is taken out of its slot and put
 * back at a uniformly drawn slot after its last predecessor and before its
 * first successor, so every precedence still holds. */
static void sk_insert(const loom_sk_prec *pc, uint64_t *rng, int32_t *order,
                      int32_t *slot_of)
{
    int32_t n = pc->n;
    int32_t g = (int32_t)loom_sk_below(rng, (uint32_t)n);
    int32_t lo = 0, hi = n - 1;
    for (int32_t e = pc->pred_off[g]; e < pc->pred_off[g + 1]; e++)
        if (slot_of[pc->pred[e]] + 1 > lo)
            lo = slot_of[pc->pred[e]] + 1;
    for (int32_t e = pc->succ_off[g]; e < pc->succ_off[g + 1]; e++)
        if (slot_of[pc->succ[e]] - 1 < hi)
            hi = slot_of[pc->succ[e]] - 1;
    if (hi <= lo)
        return; /* pinned between its neighbours */
    int32_t t = lo + (int32_t)loom_sk_below(rng, (uint32_t)(hi - lo + 1));
    sk_relocate(order, slot_of, slot_of[g], t);
}

/* Dragging insertion: a uniformly drawn group goes to a uniformly drawn
 * slot anywhere; predecessors it passed on the way up come along, just
 * before it, as successors it passed on the way down do, just after it
 * (and theirs, transitively). */
static void sk_insert_drag(const loom_sk_prec *pc, uint64_t *rng,
                           int32_t *order, int32_t *slot_of)
{
    int32_t n = pc->n;
    int32_t g = (int32_t)loom_sk_below(rng, (uint32_t)n);
    int32_t t = (int32_t)loom_sk_below(rng, (uint32_t)n), s = slot_of[g];
    if (t == s)
        return;
    sk_relocate(order, slot_of, s, t);
    sk_repair(pc, order, slot_of, t < s);
}

/* Shift: a uniformly drawn group and its direct predecessors and
 * successors all move d slots (d uniform in -(n-1)..n-1, not 0) past the
 * other groups, in their own order; the others keep theirs. A member
 * lands just before the group that held slot s + d (d < 0), or just after
 * it (d > 0), clamped to the ends; groups it passed that must stay on its
 * far side are dragged as above. `mark` and `tmp` are n ints. */
static void sk_shift(const loom_sk_prec *pc, uint64_t *rng, int32_t *order,
                     int32_t *slot_of, int32_t *mark, int32_t *tmp)
{
    int32_t n = pc->n;
    int32_t g = (int32_t)loom_sk_below(rng, (uint32_t)n);
    int32_t d = (int32_t)loom_sk_below(rng, (uint32_t)(2 * n - 1)) - (n - 1);
    if (d == 0)
        return;
    mark[g] = 1;
    for (int32_t e = pc->pred_off[g]; e < pc->pred_off[g + 1]; e++)
        mark[pc->pred[e]] = 1;
    for (int32_t e = pc->succ_off[g]; e < pc->succ_off[g + 1]; e++)
        mark[pc->succ[e]] = 1;
    /* Merge the members (key 2(s + d) -+ 1) with the others (key 2s), both
     * already in slot order; the keys never tie. */
    int32_t out = 0, m = 0, o = 0;
    while (m < n || o < n) {
        while (m < n && !mark[order[m]])
            m++;
        while (o < n && mark[order[o]])
            o++;
        if (m == n && o == n)
            break;
        int64_t km = m < n ? 2 * ((int64_t)m + d) + (d < 0 ? -1 : 1) : INT64_MAX;
        int64_t ko = o < n ? 2 * (int64_t)o : INT64_MAX;
        tmp[out++] = km < ko ? order[m++] : order[o++];
    }
    for (int32_t k = 0; k < n; k++) {
        order[k] = tmp[k];
        slot_of[order[k]] = k;
        mark[order[k]] = 0;
    }
    sk_repair(pc, order, slot_of, d < 0);
}

int32_t loom_sk_max_moves(int32_t n)
{
    return n / 64 > 3 ? n / 64 : 3;
}

void loom_sk_mutate_order(const loom_sk_prec *pc, uint64_t *rng,
                          int32_t *order, int32_t *scratch, int32_t moves)
{
    int32_t n = pc->n;
    if (n < 2)
        return;
    int32_t *slot_of = scratch, *mark = scratch + n, *tmp = scratch + 2 * (size_t)n;
    for (int32_t k = 0; k < n; k++) {
        slot_of[order[k]] = k;
        mark[k] = 0;
    }
    for (int32_t i = 0; i < moves; i++) {
        switch (loom_sk_below(rng, 3)) {
        case 0:
            sk_insert(pc, rng, order, slot_of);
            break;
        case 1:
            sk_insert_drag(pc, rng, order, slot_of);
            break;
        default:
            sk_shift(pc, rng, order, slot_of, mark, tmp);
        }
    }
}
