/*
 * ilp_memo.c - dominance between nodes of the exact interleaver's search.
 *
 * Two nodes that placed the same set of stages leave the same stages to
 * place under the same memory state. If node A's profile - each rank's
 * free time, the placed stages' latest end, and the end of every placed
 * stage that an unplaced stage still waits for (a successor, or the next
 * identical microbatch's stage) - is at most node B's, every completion
 * of B can be replayed from A with no stage later, so B holds nothing
 * better than A. Once A is settled (its subtree searched, or pruned by
 * the bound, with no idle-child exclusion in force), B is pruned.
 *
 * The memo is a 4-way set-associative table keyed by a Zobrist hash of
 * the placed set; each entry keeps the exact set (the hash only finds
 * the bucket) and the profile in doubles. A full bucket overwrites an
 * entry in turn: a lost entry only costs pruning.
 */
#include <string.h>
#include "ilp_bnb.h"

#define MEMO_WAYS 4

/* splitmix64 step: the stage keys. */
static uint64_t memo_mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Allocates the memo (see header). */
int loom_ilpi_memo_init(loom_ilpi_bnb *b, size_t budget)
{
    const loom_host_api *h = b->host;
    b->words = (b->n + 63) / 64;
    b->front_cap = b->n < 48 ? b->n : 48;
    b->slot_bytes = sizeof(uint64_t) * (1 + (size_t)b->words) +
                    sizeof(double) * ((size_t)b->P + 1 + (size_t)b->front_cap);
    size_t buckets = 1;
    while (buckets * 2 * MEMO_WAYS * b->slot_bytes <= budget)
        buckets *= 2;
    b->n_buckets = buckets;
    b->zobrist = h->alloc(((size_t)b->n + 1) * sizeof *b->zobrist);
    b->set = h->alloc(((size_t)b->words + 1) * sizeof *b->set);
    b->profile = h->alloc(((size_t)b->P + 2 + (size_t)b->front_cap) * sizeof *b->profile);
    b->memo = h->alloc(buckets * MEMO_WAYS * b->slot_bytes);
    if (!b->zobrist || !b->set || !b->profile || !b->memo)
        return 0;
    memset(b->memo, 0, buckets * MEMO_WAYS * b->slot_bytes);
    memset(b->set, 0, (size_t)b->words * sizeof *b->set);
    uint64_t seed = 0x6c6f6f6d696c70ULL;
    for (int32_t v = 0; v < b->n; v++)
        b->zobrist[v] = memo_mix(&seed) | 1; /* a nonzero hash marks a used entry */
    b->hash = 0;
    return 1;
}

/* Frees the memo. */
void loom_ilpi_memo_free(loom_ilpi_bnb *b)
{
    const loom_host_api *h = b->host;
    h->free(b->zobrist);
    h->free(b->set);
    h->free(b->profile);
    h->free(b->memo);
}

/* Marks v placed or unplaced (see header). */
void loom_ilpi_memo_mark(loom_ilpi_bnb *b, int32_t v, int placed)
{
    b->hash ^= b->zobrist[v];
    uint64_t bit = (uint64_t)1 << (v & 63);
    if (placed)
        b->set[v >> 6] |= bit;
    else
        b->set[v >> 6] &= ~bit;
}

/* 1 when a placed stage v has an unplaced successor or twin. */
static int memo_frontier(const loom_ilpi_bnb *b, int32_t v)
{
    const loom_ilpi_problem *pb = b->pb;
    if (b->twin_next[v] >= 0 && b->start[b->twin_next[v]] < 0.0)
        return 1;
    for (int32_t k = pb->succ_off[v]; k < pb->succ_off[v + 1]; k++)
        if (b->start[pb->succ[k]] < 0.0)
            return 1;
    return 0;
}

/* Computes the profile (see header). */
int loom_ilpi_memo_key(loom_ilpi_bnb *b)
{
    const loom_stage_graph *g = b->g;
    int32_t len = 0;
    for (int32_t r = 0; r < b->P; r++)
        b->profile[len++] = b->free_ms[r];
    b->profile[len++] = b->makespan;
    for (int32_t v = 0; v < b->n; v++) {
        if (b->start[v] < 0.0 || !memo_frontier(b, v))
            continue;
        if (len >= b->P + 1 + b->front_cap)
            return 0;
        b->profile[len++] = b->start[v] + g->duration_ms[v];
    }
    b->profile_len = len;
    return 1;
}

/* The entry `way` of the node's bucket. */
static unsigned char *memo_slot(const loom_ilpi_bnb *b, int way)
{
    size_t bucket = (size_t)(b->hash >> 7) & (b->n_buckets - 1);
    return b->memo + (bucket * MEMO_WAYS + (size_t)way) * b->slot_bytes;
}

/* 1 when the entry holds the node's placed set. */
static int memo_same_set(const loom_ilpi_bnb *b, const unsigned char *slot)
{
    uint64_t hash;
    memcpy(&hash, slot, sizeof hash);
    return hash == b->hash &&
           memcmp(slot + sizeof hash, b->set, (size_t)b->words * sizeof *b->set) == 0;
}

/* The entry's profile. */
static double *memo_profile(const loom_ilpi_bnb *b, unsigned char *slot)
{
    return (double *)(void *)(slot + sizeof(uint64_t) * (1 + (size_t)b->words));
}

/* 1 when every value of x is at most y's (within the search's slack). */
static int memo_le(const loom_ilpi_bnb *b, const double *x, const double *y)
{
    double slack = 1e-3 * b->tol;
    for (int32_t i = 0; i < b->profile_len; i++)
        if (x[i] > y[i] + slack)
            return 0;
    return 1;
}

/* Looks the node up (see header). */
int loom_ilpi_memo_dominated(loom_ilpi_bnb *b)
{
    if (b->hash == 0)
        return 0; /* the empty set, or a key that looks like an unused entry */
    for (int w = 0; w < MEMO_WAYS; w++) {
        unsigned char *slot = memo_slot(b, w);
        if (memo_same_set(b, slot) && memo_le(b, memo_profile(b, slot), b->profile)) {
            b->memo_hits++;
            return 1;
        }
    }
    return 0;
}

/* Stores the node (see header): over an entry of the same set that it
 * dominates, else an empty entry, else the next entry in turn. */
void loom_ilpi_memo_store(loom_ilpi_bnb *b)
{
    unsigned char *dst = NULL;
    if (b->hash == 0)
        return;
    for (int w = 0; w < MEMO_WAYS && !dst; w++) {
        unsigned char *slot = memo_slot(b, w);
        if (memo_same_set(b, slot) && memo_le(b, b->profile, memo_profile(b, slot)))
            dst = slot;
    }
    for (int w = 0; w < MEMO_WAYS && !dst; w++) {
        unsigned char *slot = memo_slot(b, w);
        uint64_t hash;
        memcpy(&hash, slot, sizeof hash);
        if (hash == 0)
            dst = slot;
    }
    if (!dst)
        dst = memo_slot(b, (int)(b->memo_turn++ % MEMO_WAYS));
    memcpy(dst, &b->hash, sizeof b->hash);
    memcpy(dst + sizeof b->hash, b->set, (size_t)b->words * sizeof *b->set);
    memcpy(memo_profile(b, dst), b->profile, (size_t)b->profile_len * sizeof *b->profile);
}
