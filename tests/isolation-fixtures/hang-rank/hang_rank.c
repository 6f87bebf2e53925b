/* hang_rank.c - fixture ranker for the isolation tests: ranks groups in
 * index order like fifo, but its hang_on_call-th rank() call in a process
 * sleeps forever, ignoring the time budget. */
#include <time.h>
#include "../../fixtures/fixture_common.h"

typedef struct hang_rank {
    const loom_host_api *host;
    int64_t hang_on_call;
} hang_rank;

/* rank() calls seen by this process. */
static int64_t calls;

/* Reads hang_on_call. */
static int hang_create(const loom_host_api *host, loom_ctx *ctx, void *plugin_state,
                       void **self, loom_error *err)
{
    (void)plugin_state;
    hang_rank *h = host->alloc(sizeof *h);
    if (!h)
        return host->error(err, LOOM_ENOMEM, "hang-rank: out of memory");
    h->host = host;
    h->hang_on_call = 3;
    host->param_int(ctx, "hang_on_call", &h->hang_on_call);
    *self = h;
    return LOOM_OK;
}

/* Frees an instance. */
static void hang_destroy(void *self)
{
    hang_rank *h = self;
    if (h)
        h->host->free(h);
}

/* Sleeps in one-second steps for ever. */
static void hang_forever(void)
{
    for (;;) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
}

/* Candidate 0, groups in index order; never returns on the configured
 * call. */
static int hang_rank_rank(void *self, const loom_stage_graph *const *graphs, int32_t n_graphs,
                          loom_ranking *out, loom_error *err)
{
    hang_rank *h = self;
    if (++calls == h->hang_on_call)
        hang_forever();
    if (n_graphs < 1 || out->cap_priorities < graphs[0]->n_groups)
        return h->host->error(err, LOOM_EINVAL, "hang-rank: no room to rank");
    for (int32_t g = 0; g < graphs[0]->n_groups; g++)
        out->priorities[g] = (float)(graphs[0]->n_groups - g);
    out->candidate = 0;
    out->evaluations = 0;
    out->best_makespan_ms = -1;
    return LOOM_OK;
}

static const loom_ranker_vtable hang_vtable = {
    {sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION},
    hang_create, hang_destroy, hang_rank_rank};

/* The ranker vtable, nothing else. */
static const loom_role_header *hang_role(const char *role)
{
    return strcmp(role, LOOM_ROLE_RANKER) ? NULL : &hang_vtable.header;
}

static const loom_plugin_info hang_info = {
    LOOM_PLUGIN_INFO_HEADER, "fixture.hang-rank", "1.0.0", NULL, NULL, hang_role};

LOOM_PLUGIN_DEFINE(fixture_hang_rank, hang_info);
