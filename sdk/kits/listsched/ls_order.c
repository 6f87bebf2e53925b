/*
 * ls_order.c - the slots of the list-scheduling kit (see
 * <loom/kits/listsched.h>): every stage's position in its queue's order by
 * priority, tie key and stage id.
 */
#include <string.h>
#include <loom/kits/listsched.h>
#include "ls_order.h"

int32_t *loom_ls_radix(uint32_t *key, int32_t *id, uint32_t *key2,
                       int32_t *id2, int32_t n)
{
    uint32_t all_and = 0xffffffffu, all_or = 0;
    for (int32_t i = 0; i < n; i++) {
        all_and &= key[i];
        all_or |= key[i];
    }
    uint32_t varies = all_and ^ all_or;
    for (int shift = 0; shift < 32; shift += 8) {
        if (((varies >> shift) & 0xffu) == 0)
            continue;
        int32_t count[257] = {0};
        for (int32_t i = 0; i < n; i++)
            count[((key[i] >> shift) & 0xffu) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (int32_t i = 0; i < n; i++) {
            int32_t at = count[(key[i] >> shift) & 0xffu]++;
            key2[at] = key[i];
            id2[at] = id[i];
        }
        uint32_t *tk = key;
        key = key2;
        key2 = tk;
        int32_t *ti = id;
        id = id2;
        id2 = ti;
    }
    return id;
}

uint32_t loom_ls_prio_key(float p)
{
    if (p != p)
        return 0xffffffffu;
    if (p == 0)
        p = 0; /* -0 sorts with +0 */
    uint32_t u;
    memcpy(&u, &p, sizeof u);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u); /* ascending order */
    return ~u;
}

/* Sorts the stages by tie key, then id, into tie_order, unless the tie
 * keys are the ones it was last built from. */
static void ls_tie_order(loom_ls *ls, int32_t n)
{
    if (ls->tie_n == n && !memcmp(ls->tie_seen, ls->tie, (size_t)n * sizeof *ls->tie))
        return;
    uint32_t *key = ls->sort_key, *key2 = ls->sort_key + n;
    int32_t *id = ls->sort_id, *id2 = ls->sort_id + n;
    for (int32_t v = 0; v < n; v++) {
        key[v] = (uint32_t)ls->tie[v] ^ 0x80000000u;
        id[v] = v;
    }
    const int32_t *sorted = loom_ls_radix(key, id, key2, id2, n);
    memcpy(ls->tie_order, sorted, (size_t)n * sizeof *sorted);
    memcpy(ls->tie_seen, ls->tie, (size_t)n * sizeof *ls->tie);
    ls->tie_n = n;
}

/* Hands out the slots to the n stages in `sorted` order, queue by queue. */
static void ls_slots(loom_ls *ls, const int32_t *sorted, int32_t n, int32_t Q)
{
    for (int32_t q = 0; q < Q; q++)
        ls->q_count[q] = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t v = sorted[i];
        int32_t q = ls->queue[v];
        int32_t s = ls->q_count[q]++;
        ls->slot[v] = s;
        ls->slot_stage[ls->q_off[q] + s] = v;
    }
}

/* Gives every group its class: the rank of its priority among the
 * distinct priorities of the groups (0 the highest, NaN last). Returns
 * the number of classes. */
static int32_t ls_group_classes(loom_ls *ls)
{
    int32_t G = ls->n_groups;
    uint32_t *key = ls->sort_key, *key2 = ls->sort_key + G;
    int32_t *id = ls->sort_id, *id2 = ls->sort_id + G;
    for (int32_t k = 0; k < G; k++) {
        key[k] = loom_ls_prio_key(ls->group_prio[k]);
        id[k] = k;
    }
    /* loom_ls_radix leaves the sorted keys next to the sorted ids */
    const int32_t *sorted = loom_ls_radix(key, id, key2, id2, G);
    const uint32_t *skey = sorted == id ? key : key2;
    int32_t c = -1;
    for (int32_t i = 0; i < G; i++) {
        if (i == 0 || skey[i] != skey[i - 1])
            c++;
        ls->group_class[sorted[i]] = c;
    }
    return c + 1;
}

/* With per-group priorities: the slots by a counting sort of the (tie,
 * id) order over (queue, class), the same order as a stable sort by
 * priority. Returns 0 (nothing done) when the (queue, class) cells would
 * outnumber 2 * n + 1024 (the scratch loom_ls_reserve sized), where the
 * radix sort is cheaper. */
static int ls_order_groups(loom_ls *ls, int32_t n, int32_t Q)
{
    if (ls->n_groups <= 0 || ls->n_groups > n)
        return 0;
    int32_t C = ls_group_classes(ls);
    int64_t cells = (int64_t)Q * C;
    if (cells > 2 * (int64_t)n + 1024)
        return 0;
    int32_t *cnt = ls->class_count;
    memset(cnt, 0, (size_t)cells * sizeof *cnt);
    const int32_t *order = ls->tie_order, *cls = ls->group_class;
    for (int32_t i = 0; i < n; i++) {
        int32_t v = order[i];
        cnt[ls->queue[v] * C + cls[ls->group[v]]]++;
    }
    for (int32_t q = 0; q < Q; q++) {
        int32_t sum = 0;
        for (int32_t c = 0; c < C; c++) {
            int32_t k = cnt[q * C + c];
            cnt[q * C + c] = sum;
            sum += k;
        }
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t v = order[i], q = ls->queue[v];
        int32_t s = cnt[q * C + cls[ls->group[v]]]++;
        ls->slot[v] = s;
        ls->slot_stage[ls->q_off[q] + s] = v;
    }
    return 1;
}

/* The slots (see ls_order.h): the counting sort when it applies, else a
 * stable radix sort of the (tie, id) order by priority. */
void loom_ls_order_slots(loom_ls *ls, int32_t n, int32_t Q)
{
    ls_tie_order(ls, n);
    if (ls_order_groups(ls, n, Q))
        return;
    uint32_t *key = ls->sort_key, *key2 = ls->sort_key + n;
    int32_t *id = ls->sort_id, *id2 = ls->sort_id + n;
    for (int32_t i = 0; i < n; i++) {
        int32_t v = ls->tie_order[i];
        id[i] = v;
        key[i] = loom_ls_prio_key(ls->n_groups > 0 ? ls->group_prio[ls->group[v]]
                                                   : ls->prio[v]);
    }
    ls_slots(ls, loom_ls_radix(key, id, key2, id2, n), n, Q);
}
