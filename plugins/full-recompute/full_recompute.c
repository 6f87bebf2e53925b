/*
 * full_recompute.c - the "full-recompute" memory tuner: every layer of
 * every stage pair keeps only its input and recomputes the rest in
 * backward (LOOM_POLICY_FULL), Megatron-LM's answer to memory pressure.
 * The interleaver budgets memory with every layer at its most frugal
 * policy, which is FULL wherever FULL stores the least. The tuner itself
 * is the fixed-policy kit (<loom/kits/fixedpolicy.h>).
 */
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/fixedpolicy.h>

/* Creates an instance (the kit's tuner with LOOM_POLICY_FULL). */
static int fr_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)ctx;
    (void)plugin_state;
    return loom_fp_create(host, "full-recompute", LOOM_POLICY_FULL,
                          LOOM_VIEW_FRUGAL, (loom_fp **)self, err);
}

/* Releases an instance from fr_create. */
static void fr_destroy(void *self)
{
    loom_fp_destroy(self);
}

/* Sets every layer entry to LOOM_POLICY_FULL once the cap is reachable. */
static int fr_tune(void *self, const loom_stage_graph *g,
                   const loom_schedule *schedule, uint8_t *policies,
                   loom_error *err)
{
    (void)schedule;
    return loom_fp_tune(self, g, policies, err);
}

/* LOOM_VIEW_FRUGAL: the interleaver budgets every layer at its most
 * frugal policy. */
static int fr_view(void *self)
{
    return loom_fp_view(self);
}

static const loom_memory_tuner_vtable fr_vtable = {
    { sizeof(loom_memory_tuner_vtable), LOOM_MEMORY_TUNER_VERSION },
    fr_create,
    fr_destroy,
    fr_tune,
    fr_view,
};

/* Returns the memory_tuner vtable for role "memory_tuner", else NULL. */
static const loom_role_header *fr_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_MEMORY_TUNER) == 0)
        return &fr_vtable.header;
    return NULL;
}

static const loom_plugin_info fr_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.full-recompute",
    "1.0.0",
    NULL,
    NULL,
    fr_role,
    NULL, /* no params */
};

LOOM_PLUGIN_DEFINE(full_recompute, fr_info);
