/*
 * greedy.c - the "greedy" memory tuner (PipeWeaver section 6.3's greedy
 * solution, usable on its own).
 *
 * Every layer entry starts at policy NONE. For every rank whose static
 * bytes plus activation peak exceed the cap (from the schedule's memory
 * timeline: peaks depend only on each rank's order and the chosen bytes,
 * memtune.h, so they are exact without simulating), the entry with the
 * best bytes-saved per ms-added ratio among the pairs live at the peak
 * slot moves to its next more frugal policy (the policy with the most
 * bytes strictly below its current one), and so on until that slot fits;
 * then the next peak, until the rank fits.
 * LOOM_EINFEASIBLE names the rank and the bytes short when every entry
 * live at its peak is already at its most frugal policy.
 * Param view (frugal | as_built): the memory the interleaver budgets with.
 *
 * The chains of policies per layer entry depend only on the entries'
 * options and the pairs' entry rows. A search tunes one graph many times,
 * so the instance keeps the chains and the revision stamp of the graph
 * they were built from (the host stamps every graph it builds, and a new
 * stamp means new content); while it is unchanged a call only resets
 * every entry to its chain's start. For a graph without a stamp the
 * instance keeps a copy of the options and pair rows instead and compares
 * them (reading the options once instead of rebuilding the chains).
 */
#include <string.h>
#include <loom/kits/memtune.h>

typedef struct greedy_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    loom_mt_driver drv;
    loom_mt_entry_chains chains;
    int view; /* LOOM_VIEW_FRUGAL or LOOM_VIEW_AS_BUILT */
    /* What the chains were built from (valid: chains_n_entries >= 0): the
     * graph's revision, or with none (chains_revision 0) a copy. */
    loom_policy_option *options_seen; /* n_entries * LOOM_POLICY_COUNT */
    int32_t *pair_off_seen;           /* n_pairs + 1 */
    int32_t chains_n_entries, chains_n_pairs;
    uint64_t chains_revision; /* the graph's revision, 0: none */
    size_t cap_options, cap_pair_off; /* elements */
} greedy_self;

/* The params, declared once in greedy_param_table (manifest.json says the same). */
typedef struct greedy_params {
    const char *view;
} greedy_params;

static const loom_param_def greedy_param_table[] = {
    LOOM_ENUM_PARAM(greedy_params, view, "frugal", "frugal|as_built",
                   "memory the interleaver budgets with before tuning: frugal, every layer at "
                   "its most frugal policy (the order is not throttled by memory that "
                   "recomputation recovers); as_built, the layers as built, so a memory-gated "
                   "interleaver (dual-queue) keeps the order within the cap where it can and "
                   "only what still overflows is recomputed"),
    LOOM_PARAM_END};

/* Creates an instance with the view param; the driver looks up the
 * simulator once. */
static int greedy_create(const loom_host_api *host, loom_ctx *ctx,
                         void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    greedy_params prm;
    int rc = loom_params_read(host, ctx, "greedy", greedy_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    greedy_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "greedy: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->ctx = ctx;
    s->view = strcmp(prm.view, "as_built") == 0 ? LOOM_VIEW_AS_BUILT : LOOM_VIEW_FRUGAL;
    s->chains_n_entries = -1;
    loom_mt_driver_init(host, ctx, &s->drv);
    *self = s;
    return LOOM_OK;
}

/* Releases an instance from greedy_create. */
static void greedy_destroy(void *self)
{
    greedy_self *s = self;
    if (!s)
        return;
    loom_mt_entry_chains_free(s->host, &s->chains);
    loom_mt_driver_free(s->host, &s->drv);
    s->host->free(s->options_seen);
    s->host->free(s->pair_off_seen);
    s->host->free(s);
}

/* g's revision stamp, 0 when it has none. */
static uint64_t graph_revision(const loom_stage_graph *g)
{
    return LOOM_STRUCT_HAS(g, loom_stage_graph, revision) ? g->revision : 0;
}

/* 1 when the chains were built from g's options and pair rows: the same
 * nonzero revision, or, built from a graph without one, the same content. */
static int greedy_chains_current(const greedy_self *s, const loom_stage_graph *g)
{
    if (s->chains_n_entries < 0)
        return 0;
    if (s->chains_revision != 0)
        return s->chains_revision == graph_revision(g);
    size_t n_opt = (size_t)g->n_layer_entries * LOOM_POLICY_COUNT;
    return s->chains_n_entries == g->n_layer_entries && s->chains_n_pairs == g->n_pairs &&
           (n_opt == 0 ||
            !memcmp(s->options_seen, g->layer_options, n_opt * sizeof *g->layer_options)) &&
           !memcmp(s->pair_off_seen, g->pair_layer_off,
                   ((size_t)g->n_pairs + 1) * sizeof *g->pair_layer_off);
}

/* Puts every entry back at its chain's start, with the pairs' bytes there
 * (what building the chains leaves). */
static void greedy_chains_reset(greedy_self *s, const loom_stage_graph *g)
{
    loom_mt_entry_chains *c = &s->chains;
    memset(c->state, 0, (size_t)g->n_layer_entries * sizeof *c->state);
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int64_t sum = 0;
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++)
            sum += c->chain_bytes[c->chain_off[e]];
        c->pair_bytes[p] = sum;
    }
}

/* Keeps a copy of g's options and pair rows (a graph without a revision
 * stamp); LOOM_ENOMEM. */
static int greedy_copy_content(greedy_self *s, const loom_stage_graph *g, loom_error *err)
{
    const loom_host_api *h = s->host;
    size_t n_opt = (size_t)g->n_layer_entries * LOOM_POLICY_COUNT;
    size_t n_off = (size_t)g->n_pairs + 1;
    if (n_opt > s->cap_options) {
        loom_policy_option *o = h->realloc(s->options_seen, n_opt * sizeof *o);
        if (!o)
            return h->error(err, LOOM_ENOMEM, "greedy: out of memory");
        s->options_seen = o;
        s->cap_options = n_opt;
    }
    if (n_off > s->cap_pair_off) {
        int32_t *o = h->realloc(s->pair_off_seen, n_off * sizeof *o);
        if (!o)
            return h->error(err, LOOM_ENOMEM, "greedy: out of memory");
        s->pair_off_seen = o;
        s->cap_pair_off = n_off;
    }
    if (n_opt)
        memcpy(s->options_seen, g->layer_options, n_opt * sizeof *g->layer_options);
    memcpy(s->pair_off_seen, g->pair_layer_off, n_off * sizeof *g->pair_layer_off);
    return LOOM_OK;
}

/* Builds the chains for g and remembers what from: its revision stamp, or
 * without one a copy of its content; LOOM_ENOMEM. */
static int greedy_chains_build(greedy_self *s, const loom_stage_graph *g, loom_error *err)
{
    s->chains_n_entries = -1;
    int rc = loom_mt_entry_chains_build(s->host, &s->chains, g, err);
    if (rc == LOOM_OK && graph_revision(g) == 0)
        rc = greedy_copy_content(s, g, err);
    if (rc != LOOM_OK)
        return rc;
    s->chains_n_entries = g->n_layer_entries;
    s->chains_n_pairs = g->n_pairs;
    s->chains_revision = graph_revision(g);
    return LOOM_OK;
}

/* Chooses a policy for every layer entry (see the file comment). */
static int greedy_tune(void *self, const loom_stage_graph *g,
                       const loom_schedule *sched, uint8_t *policies,
                       loom_error *err)
{
    greedy_self *s = self;
    int rc = loom_mt_check_inputs(s->host, g, sched, policies, "greedy", err);
    if (rc != LOOM_OK)
        return rc;
    if (greedy_chains_current(s, g)) {
        s->chains_revision = graph_revision(g);
        greedy_chains_reset(s, g);
    }
    else if ((rc = greedy_chains_build(s, g, err)) != LOOM_OK)
        return rc;
    loom_mt_units u = loom_mt_entry_units(&s->chains, g);
    rc = loom_mt_driver_run(s->host, &s->drv, g, sched, &u,
                            s->chains.pair_bytes, loom_mt_entry_materialise,
                            &s->chains, policies, "greedy", err);
    if (rc == LOOM_OK && s->drv.descended)
        s->host->log(s->ctx, LOOM_LOG_DEBUG, "greedy: %lld policy moves",
                     (long long)s->drv.moves);
    return rc;
}

/* view frugal (the default): the interleaver budgets with every layer at
 * its most frugal option, so memory this tuner recovers by recomputation
 * does not throttle the order. view as_built: it budgets with the layers
 * as built, so a memory-gated interleaver keeps the order within the cap
 * where it can and the tuner recomputes only what still overflows. */
static int greedy_interleave_view(void *self)
{
    const greedy_self *s = self;
    return s->view;
}

static const loom_memory_tuner_vtable greedy_vtable = {
    { sizeof(loom_memory_tuner_vtable), LOOM_MEMORY_TUNER_VERSION },
    greedy_create,
    greedy_destroy,
    greedy_tune,
    greedy_interleave_view,
};

/* Returns the memory_tuner vtable for role "memory_tuner", else NULL. */
static const loom_role_header *greedy_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_MEMORY_TUNER) == 0)
        return &greedy_vtable.header;
    return NULL;
}

static const loom_plugin_info greedy_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.greedy",
    "1.0.0",
    NULL,
    NULL,
    greedy_role,
    greedy_param_table,
};

LOOM_PLUGIN_DEFINE(greedy, greedy_info);
