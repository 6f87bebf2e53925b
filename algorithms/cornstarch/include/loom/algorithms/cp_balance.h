/*
 * cp_balance.h - Cornstarch's token-workload-balanced context parallelism
 * (dissertation §3.3.2, Algorithm 1): the workload of a block of query
 * tokens is the number of key blocks its rows of the attention mask touch
 * (fully masked tiles are skipped); blocks are assigned longest-first to
 * the least-loaded GPU. The causal "zigzag" split is the baseline.
 *
 * The mask is given as runs of tokens sharing a bitfield and a document
 * (packed samples never attend across documents). Bitfield semantics
 * (pinned here; the text and the reference code disagree): bit 0 is text,
 * bits 1..62 are encoders, bit 63 is "causal". A query with the causal bit
 * attends every earlier-or-equal key of its document that shares one of
 * its modality bits; a query without it attends every key of its document
 * whose modality bits equal its own (bidirectional within the modality).
 * A token without modality bits attends nothing.
 *
 * cp_balance.c uses only the C library, so the cp-balance plugin compiles
 * the same file. Ownership: outputs are caller-provided arrays.
 */
#ifndef LOOM_CP_BALANCE_H
#define LOOM_CP_BALANCE_H

#include <loom/common.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_CP_TEXT_BIT ((uint64_t)1)
#define LOOM_CP_CAUSAL_BIT ((uint64_t)1 << 63)
#define LOOM_CP_ENCODER_BIT(k) ((uint64_t)1 << (k)) /* k in 1..62 */
#define LOOM_CP_MAX_TOKENS ((int64_t)1 << 32)
#define LOOM_CP_MAX_BLOCKS (1 << 20)
#define LOOM_CP_MAX_GPUS 65536
#define LOOM_CP_MAX_WORKLOAD ((int64_t)1 << 40) /* one block's workload */
#define LOOM_CP_MAX_SEGMENTS 1024               /* runs of a --segments spec */
/* Work of loom_cp_block_workloads beyond its O(blocks + runs log runs):
 * comparisons of a run class with the runs of its document, plus key
 * ranges merged for query blocks that mix classes. */
#define LOOM_CP_MAX_STEPS ((int64_t)1 << 27)

/* A run of consecutive tokens with the same bitfield and document. */
typedef struct loom_cp_run {
    int64_t tokens;
    uint64_t bits;
    int32_t doc;
    int32_t reserved;
} loom_cp_run;

/* Number of blocks of `block` tokens covering `tokens` (the last may be
 * ragged), or -1 when either is < 1. */
int64_t loom_cp_block_count(int64_t tokens, int32_t block);

/* Workload of every query block: the number of key blocks with at least
 * one attended (query, key) pair. w has loom_cp_block_count() entries.
 * 1 to LOOM_CP_MAX_BLOCKS runs. Runs of one document with one bitfield
 * attend the same keys, so the key blocks of each such class are found
 * once, as ranges; a block is then counted by a binary search (one class)
 * or by merging the ranges of its classes. Time O(blocks log runs + runs
 * log runs + steps); more than LOOM_CP_MAX_STEPS steps is LOOM_EINVAL
 * naming the bound. */
int loom_cp_block_workloads(const loom_cp_run *runs, int32_t n_runs,
                            int32_t block, int64_t *w, loom_error *err);

/* Runs of a per-token bitfield (bits[i] for token i, one document). *out
 * (caller frees) gets *n_out runs. */
int loom_cp_runs_from_bits(const uint64_t *bits, int64_t tokens,
                           loom_cp_run **out, int32_t *n_out, loom_error *err);

/* Algorithm 1: blocks in order (sorted = 0, as listed) or by decreasing
 * workload (sorted = 1, LPT as the prose says; ties by block index) go to
 * the GPU with the least load (ties: lowest GPU). assign[b] = GPU of block
 * b; loads has `gpus` entries. */
int loom_cp_lpt(const int64_t *w, int32_t n, int32_t gpus, int sorted,
                int32_t *assign, int64_t *loads, loom_error *err);

/* The causal baseline: 2*gpus equal chunks of blocks, GPU i takes chunks i
 * and 2*gpus-1-i. Same outputs as loom_cp_lpt. */
int loom_cp_zigzag(const int64_t *w, int32_t n, int32_t gpus, int32_t *assign,
                   int64_t *loads, loom_error *err);

/* Parses a segment spec "KIND:TOKENS,..." (KIND text, image, audio, video
 * or enc1..enc62; TOKENS 1 to LOOM_CP_MAX_TOKENS; '/' instead of ',' starts
 * a new document) into at most `cap` runs: text runs are causal and see
 * every modality of their document, the others attend their own modality
 * both ways. Returns the run count, or -1 with err (LOOM_EINVAL). */
int32_t loom_cp_parse_segments(const char *spec, loom_cp_run *runs, int32_t cap,
                               loom_error *err);

/* Parses comma-separated block workloads "1,2,2,4" (each 0 to
 * LOOM_CP_MAX_WORKLOAD, 1 to LOOM_CP_MAX_BLOCKS of them) into *w (malloc'd,
 * the caller frees) and *n. LOOM_EINVAL / LOOM_ENOMEM with err. */
int loom_cp_parse_workloads(const char *list, int64_t **w, int32_t *n, loom_error *err);

/* Largest load. */
int64_t loom_cp_makespan(const int64_t *loads, int32_t gpus);

/* Lower bound of any assignment: max(ceil(sum w / gpus), max w). */
int64_t loom_cp_lower_bound(const int64_t *w, int32_t n, int32_t gpus);

#ifdef __cplusplus
}
#endif
#endif
