/*
 * none.c - the "none" memory tuner: every layer of every stage pair stores
 * all of its activations (LOOM_POLICY_NONE), the fastest and most
 * memory-hungry choice; the interleaver sees the graph as built.
 */
#define LOOM_FP_POLICY LOOM_POLICY_NONE
#define LOOM_FP_WHO "none"
#define LOOM_FP_ID "org.loom.none"
#define LOOM_FP_VIEW LOOM_VIEW_AS_BUILT
#include "fixed_policy.h"

LOOM_PLUGIN_DEFINE(none, fp_info);
