/*
 * <loom/kits/fixedpolicy.h> - the fixed-policy kit (CMake target
 * loom_kit_fixedpolicy, Loom::kit_fixedpolicy when installed): a memory
 * tuner that gives every layer entry one fixed policy, shared by the
 * "none" (LOOM_POLICY_NONE) and "full-recompute" (LOOM_POLICY_FULL)
 * plugins. A plugin's memory_tuner vtable forwards create / destroy / tune
 * / interleave_view to the functions below.
 *
 * The tuner rejects a graph whose memory cap cannot be met by any choice:
 * when some rank's static bytes plus its largest single pair activation
 * under the most frugal policies already exceed the cap.
 *
 * Ownership: a loom_fp is allocated with the host's allocator by
 * loom_fp_create and released by loom_fp_destroy, with its scratch; `who`
 * must outlive it (a string literal). Graphs are borrowed read-only; the
 * policies array is the caller's. Units: bytes.
 */
#ifndef LOOM_KITS_FIXEDPOLICY_H
#define LOOM_KITS_FIXEDPOLICY_H

#include <loom/loom.h>

/* One fixed-policy tuner instance. */
typedef struct loom_fp {
    const loom_host_api *host;
    const char *who;   /* plugin name for messages */
    uint8_t policy;    /* what every layer entry gets */
    int view;          /* LOOM_VIEW_FRUGAL or LOOM_VIEW_AS_BUILT */
    int64_t *need;     /* per rank: largest frugal activation, bytes */
    int32_t cap_need;
} loom_fp;

/* Creates an instance that sets every entry to `policy` (a
 * loom_mem_policy) and reports `view` (a loom_interleave_view) to the
 * interleaver; *out gets it. LOOM_ENOMEM "who: out of memory". */
int loom_fp_create(const loom_host_api *host, const char *who, uint8_t policy,
                   int view, loom_fp **out, loom_error *err);

/* Releases an instance from loom_fp_create and its scratch; NULL is
 * ignored. */
void loom_fp_destroy(loom_fp *fp);

/* Activation bytes of pair p when each of its layers takes its most
 * frugal recomputation policy (the sum over the pair's layer entries of
 * the smallest of none, selective and full). Without layer entries: the F stage's current delta. */
int64_t loom_fp_frugal_bytes(const loom_stage_graph *g, int32_t p);

/* LOOM_EINFEASIBLE naming the rank, its static bytes, its largest frugal
 * activation and the bytes short when some rank cannot fit those two
 * under g's cap; LOOM_OK without a cap or when every rank fits. */
int loom_fp_check_cap(loom_fp *fp, const loom_stage_graph *g, loom_error *err);

/* Sets policies[e] = fp->policy for every layer entry of g once
 * loom_fp_check_cap passes (and writes nothing otherwise). */
int loom_fp_tune(loom_fp *fp, const loom_stage_graph *g, uint8_t *policies,
                 loom_error *err);

/* How the interleaver should budget memory before this tuner runs: the
 * `view` given to loom_fp_create. */
int loom_fp_view(const loom_fp *fp);

#endif
