/*
 * oobleck_common.h - what the two Oobleck plugins must agree on: the node
 * count N and GPUs per node M of the cluster they plan for, and the order
 * of the candidates oobleck-templates emits (templates by ascending node
 * count n0..N-f*n0, each for every share of the M microbatches, see
 * oobleck_shares_per_template, or only the full batch).
 * Header-only (static functions) so both plugins share one definition.
 */
#ifndef LOOM_OOBLECK_COMMON_H
#define LOOM_OOBLECK_COMMON_H

#include <loom/loom.h>

/* Pipelines never hold more microbatch shares than this many candidates. */
#define OOBLECK_MAX_SHARES 128

/* Candidates per template when every share is emitted: shares 1..mbs, or
 * 1..OOBLECK_MAX_SHARES and then mbs when the batch is larger. */
static inline int32_t oobleck_shares_per_template(int32_t mbs)
{
    return mbs > OOBLECK_MAX_SHARES ? OOBLECK_MAX_SHARES + 1 : mbs;
}

/* Microbatches of a template's k-th candidate (k from 0) in that order. */
static inline int32_t oobleck_share_of(int32_t k, int32_t mbs)
{
    return k < OOBLECK_MAX_SHARES ? k + 1 : mbs;
}

/* N and M from the params "nodes" (n) and "gpus_per_node" (m), each 0
 * when derived: M is the cluster's GPUs per node (all of them when fewer
 * GPUs exist), N the tp * pp * dp GPUs of the problem divided by M. */
static int oobleck_nodes(const loom_host_api *host, const loom_problem *pb, int64_t n,
                         int64_t m, int32_t *nodes, int32_t *gpus_per_node, loom_error *err)
{
    int64_t gpus = (int64_t)(pb->parallel.tp > 0 ? pb->parallel.tp : 1) *
                   (pb->parallel.pp > 0 ? pb->parallel.pp : 1) *
                   (pb->parallel.dp > 0 ? pb->parallel.dp : 1);
    if (m <= 0)
        m = pb->cluster && pb->cluster->gpus_per_node > 0
                ? pb->cluster->gpus_per_node
                : 8;
    if (m > gpus && n <= 0)
        m = gpus;
    if (n <= 0)
        n = gpus / m;
    if (n < 1 || n > 4096 || m < 1 || m > 64)
        return host->error(err, LOOM_EINVAL,
                           "oobleck: expected 1 to 4096 nodes of 1 to 64 GPUs, "
                           "found %lld nodes of %lld (params nodes, "
                           "gpus_per_node; or tp*pp*dp = %lld GPUs)",
                           (long long)n, (long long)m, (long long)gpus);
    *nodes = (int32_t)n;
    *gpus_per_node = (int32_t)m;
    return LOOM_OK;
}

#endif
