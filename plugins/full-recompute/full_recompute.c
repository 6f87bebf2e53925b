/*
 * full_recompute.c - the "full-recompute" memory tuner: every layer of
 * every stage pair keeps only its input and recomputes the rest in
 * backward (LOOM_POLICY_FULL), Megatron-LM's answer to memory pressure.
 * The interleaver budgets memory with every layer at its most frugal
 * policy, which is FULL wherever FULL stores the least.
 */
#define LOOM_FP_POLICY LOOM_POLICY_FULL
#define LOOM_FP_WHO "full-recompute"
#define LOOM_FP_ID "org.loom.full-recompute"
#define LOOM_FP_VIEW LOOM_VIEW_FRUGAL
#include "../none/fixed_policy.h"

LOOM_PLUGIN_DEFINE(full_recompute, fp_info);
