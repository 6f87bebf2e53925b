/* crash_rank.c - fixture ranker for the isolation tests: ranks groups in
 * index order like fifo, but its crash_on_call-th rank() call in a process
 * writes to a page it mapped without access, a genuine segfault. */
#define _DEFAULT_SOURCE
#include <sys/mman.h>
#include "../../fixtures/fixture_common.h"

typedef struct crash_rank {
    const loom_host_api *host;
    int64_t crash_on_call;
} crash_rank;

/* rank() calls seen by this process. */
static int64_t calls;

/* Reads crash_on_call. */
static int crash_create(const loom_host_api *host, loom_ctx *ctx, void *plugin_state,
                        void **self, loom_error *err)
{
    (void)plugin_state;
    crash_rank *c = host->alloc(sizeof *c);
    if (!c)
        return host->error(err, LOOM_ENOMEM, "crash-rank: out of memory");
    c->host = host;
    c->crash_on_call = 3;
    host->param_int(ctx, "crash_on_call", &c->crash_on_call);
    *self = c;
    return LOOM_OK;
}

/* Frees an instance. */
static void crash_destroy(void *self)
{
    crash_rank *c = self;
    if (c)
        c->host->free(c);
}

/* Writes into an inaccessible page: the kernel delivers SIGSEGV. */
static void crash_now(void)
{
    volatile char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page != MAP_FAILED)
        page[0] = 1;
}

/* Candidate 0, groups in index order; crashes on the configured call. */
static int crash_rank_rank(void *self, const loom_stage_graph *const *graphs, int32_t n_graphs,
                           loom_ranking *out, loom_error *err)
{
    crash_rank *c = self;
    if (++calls == c->crash_on_call)
        crash_now();
    if (n_graphs < 1 || out->cap_priorities < graphs[0]->n_groups)
        return c->host->error(err, LOOM_EINVAL, "crash-rank: no room to rank");
    for (int32_t g = 0; g < graphs[0]->n_groups; g++)
        out->priorities[g] = (float)(graphs[0]->n_groups - g);
    out->candidate = 0;
    out->evaluations = 0;
    out->best_makespan_ms = -1;
    return LOOM_OK;
}

static const loom_ranker_vtable crash_vtable = {
    {sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION},
    crash_create, crash_destroy, crash_rank_rank};

/* The ranker vtable, nothing else. */
static const loom_role_header *crash_role(const char *role)
{
    return strcmp(role, LOOM_ROLE_RANKER) ? NULL : &crash_vtable.header;
}

static const loom_plugin_info crash_info = {
    LOOM_PLUGIN_INFO_HEADER, "fixture.crash-rank", "1.0.0", NULL, NULL, crash_role};

LOOM_PLUGIN_DEFINE(fixture_crash_rank, crash_info);
