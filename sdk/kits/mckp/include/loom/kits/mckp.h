/*
 * <loom/kits/mckp.h> - the multiple-choice knapsack kit (CMake target
 * loom_kit_mckp, Loom::kit_mckp when installed; it links loom_kit_memtune):
 * per-stage-pair memory candidates (PipeWeaver section 6.3, "Candidate
 * Generation") shared by the knapsack and ilp memory tuners.
 *
 * For each stage pair: the fastest combination of per-layer policies, the
 * most memory-frugal one, and for K-2 memory bounds evenly spaced between
 * them the fastest combination within the bound, found by a
 * multiple-choice knapsack (a DP over the pair's layers with memory
 * discretised into `resolution` steps, rounded up so a DP-feasible
 * combination always meets its true bound). The candidates of a pair are
 * Pareto-sorted: strictly increasing time, strictly decreasing memory,
 * from the fastest (index 0) to the most frugal (last). Pairs whose layer
 * options are identical (same layers, same shape) are solved once.
 *
 * Ownership: the set is caller-owned; loom_mckp_free releases what
 * loom_mckp_build allocated with the host's allocator. Units: ms, bytes.
 */
#ifndef LOOM_KITS_MCKP_H
#define LOOM_KITS_MCKP_H

#include <loom/loom.h>
#include <loom/kits/memtune.h>

typedef struct loom_mckp_set {
    int32_t n_pairs, n_cands;
    int32_t *cand_off;     /* n_pairs + 1: candidates of pair p */
    double *cand_ms;       /* per candidate: forward + backward, all layers */
    int64_t *cand_bytes;   /* per candidate: activation bytes */
    int32_t *cand_pol_off; /* per candidate: its policies in `policy` */
    uint8_t *policy;       /* per candidate: one policy per layer entry */
    /* the same arrays again, loom_mckp_add writes there and swaps */
    int32_t *b_off, *b_pol_off;
    double *b_ms;
    int64_t *b_bytes;
    uint8_t *b_policy;
    int32_t cap_pairs, cap_cands, cap_pol;
    /* DP scratch */
    double *dp, *dp_next;  /* resolution + 1 each */
    uint8_t *choice;       /* entries x (resolution + 1) */
    int32_t *weight;       /* entries x LOOM_POLICY_COUNT: DP steps */
    double *opt_ms;        /* entries x LOOM_POLICY_COUNT: option times */
    uint8_t *tmp;          /* K x entries: raw candidates of one pair */
    int32_t cap_res, cap_choice, cap_tmp, cap_weight;
    /* pairs with identical layer options share their candidates: an open
     * addressing table from an options signature to the first such pair */
    uint64_t *sig_hash;
    int32_t *sig_pair;     /* -1: empty slot */
    int32_t cap_sig;       /* a power of two */
    int32_t n_policies;    /* policies the last build chose among */
} loom_mckp_set;

/* Builds up to k (>= 2) candidates for every pair of g with `resolution`
 * (>= 1) memory steps, each layer choosing among the recomputation
 * policies (none, selective, full). LOOM_EINVAL for bad k / resolution,
 * LOOM_ENOMEM. */
int loom_mckp_build(const loom_host_api *host, loom_mckp_set *set,
                    const loom_stage_graph *g, int32_t k, int32_t resolution,
                    loom_error *err);
/* The same with each layer choosing among the first n_policies policies
 * (LOOM_POLICY_COUNT: offload too; a value outside 1..LOOM_POLICY_COUNT
 * means the recomputation ones). */
int loom_mckp_build_policies(const loom_host_api *host, loom_mckp_set *set,
                             const loom_stage_graph *g, int32_t k, int32_t resolution,
                             int n_policies, loom_error *err);

/* Adds to every pair's candidates (built by loom_mckp_build for the same
 * g) the pair's combination in `extra` (one policy per layer entry),
 * keeping the Pareto order: it is dropped when a candidate dominates it
 * and it drops the candidates it dominates, so a pair ends with at most
 * k + 1 candidates. The ilp tuner uses it to make its greedy warm start a
 * feasible point of the programme. */
void loom_mckp_add(loom_mckp_set *set, const loom_stage_graph *g,
                   const uint8_t *extra);
/* Releases every array of the set (host allocator) and zeroes it. */
void loom_mckp_free(const loom_host_api *host, loom_mckp_set *set);

/* Writes the per-entry policies of candidate `cand` (an index into the
 * set, cand_off[pair] <= cand < cand_off[pair + 1]) into policies,
 * indexed like the graph's layer entries. */
void loom_mckp_apply(const loom_mckp_set *set, const loom_stage_graph *g,
                     int32_t pair, int32_t cand, uint8_t *policies);

/* The candidate set as descent units for the memory tuners' driver: one
 * unit per pair, walking the pair's candidates from the fastest to the
 * most frugal. Owns its per-pair arrays. */
typedef struct loom_mckp_units {
    int32_t *unit_off;   /* per pair + 1: pair p owns unit p */
    int32_t *state;      /* per pair: index within its candidates */
    int64_t *pair_bytes; /* per pair: bytes of its current candidate */
    int32_t cap_pairs;
} loom_mckp_units;

/* Puts every pair of `set` at its fastest candidate (growing the arrays)
 * and writes the units view to *out. LOOM_ENOMEM naming `who`. */
int loom_mckp_units_reset(const loom_host_api *host, loom_mckp_units *mu,
                          const loom_mckp_set *set, loom_mt_units *out,
                          const char *who, loom_error *err);
/* Releases the units' arrays (host allocator) and zeroes them. */
void loom_mckp_units_free(const loom_host_api *host, loom_mckp_units *mu);

/* loom_mt_materialise_fn for those units (user = the loom_mckp_set): each
 * pair's current candidate as per-entry policies. */
void loom_mckp_materialise(void *user, const loom_stage_graph *g,
                           const loom_mt_units *u, uint8_t *policies);

#endif
