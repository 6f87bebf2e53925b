/*
 * none.c - the "none" memory tuner: every layer of every stage pair stores
 * all of its activations (LOOM_POLICY_NONE), the fastest and most
 * memory-hungry choice; the interleaver sees the graph as built. The tuner
 * itself is the fixed-policy kit (<loom/kits/fixedpolicy.h>).
 */
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/fixedpolicy.h>

/* Creates an instance (the kit's tuner with LOOM_POLICY_NONE). */
static int none_create(const loom_host_api *host, loom_ctx *ctx,
                       void *plugin_state, void **self, loom_error *err)
{
    (void)ctx;
    (void)plugin_state;
    return loom_fp_create(host, "none", LOOM_POLICY_NONE, LOOM_VIEW_AS_BUILT,
                          (loom_fp **)self, err);
}

/* Releases an instance from none_create. */
static void none_destroy(void *self)
{
    loom_fp_destroy(self);
}

/* Sets every layer entry to LOOM_POLICY_NONE once the cap is reachable. */
static int none_tune(void *self, const loom_stage_graph *g,
                     const loom_schedule *schedule, uint8_t *policies,
                     loom_error *err)
{
    (void)schedule;
    return loom_fp_tune(self, g, policies, err);
}

/* LOOM_VIEW_AS_BUILT: the interleaver budgets the graph's own policies. */
static int none_view(void *self)
{
    return loom_fp_view(self);
}

static const loom_memory_tuner_vtable none_vtable = {
    { sizeof(loom_memory_tuner_vtable), LOOM_MEMORY_TUNER_VERSION },
    none_create,
    none_destroy,
    none_tune,
    none_view,
};

/* Returns the memory_tuner vtable for role "memory_tuner", else NULL. */
static const loom_role_header *none_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_MEMORY_TUNER) == 0)
        return &none_vtable.header;
    return NULL;
}

static const loom_plugin_info none_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.none",
    "1.0.0",
    NULL,
    NULL,
    none_role,
    NULL, /* no params */
};

LOOM_PLUGIN_DEFINE(none, none_info);
