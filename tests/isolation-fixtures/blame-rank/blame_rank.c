/* blame_rank.c - fixture ranker for the blame tests: ranks groups in
 * index order like fifo, then misbehaves per its param action: "overrun"
 * writes 4096 floats past the end of the priorities buffer the host
 * handed it, "underrun" writes the float just before it, "closefds"
 * closes descriptors 0-1023 (the isolation pipe included) and returns as
 * if nothing happened. */
#include <string.h>
#include <unistd.h>
#include <loom/loom.h>

typedef struct blame_rank {
    const loom_host_api *host;
    char action[16];
} blame_rank;

/* Reads the action. */
static int blame_create(const loom_host_api *host, loom_ctx *ctx, void *plugin_state,
                        void **self, loom_error *err)
{
    (void)plugin_state;
    blame_rank *b = host->alloc(sizeof *b);
    if (!b)
        return host->error(err, LOOM_ENOMEM, "blame-rank: out of memory");
    b->host = host;
    const char *a = host->param_string(ctx, "action");
    strncpy(b->action, a ? a : "overrun", sizeof b->action - 1);
    b->action[sizeof b->action - 1] = 0;
    *self = b;
    return LOOM_OK;
}

/* Releases an instance. */
static void blame_destroy(void *self)
{
    blame_rank *b = self;
    if (b)
        b->host->free(b);
}

/* Candidate 0, groups in index order, then the misbehaviour. */
static int blame_rank_rank(void *self, const loom_stage_graph *const *graphs, int32_t n_graphs,
                           loom_ranking *out, loom_error *err)
{
    blame_rank *b = self;
    if (n_graphs < 1 || out->cap_priorities < graphs[0]->n_groups)
        return b->host->error(err, LOOM_EINVAL, "blame-rank: no room to rank");
    for (int32_t g = 0; g < graphs[0]->n_groups; g++)
        out->priorities[g] = (float)(graphs[0]->n_groups - g);
    out->candidate = 0;
    out->evaluations = 0;
    out->best_makespan_ms = -1;
    volatile float *p = out->priorities;
    if (!strcmp(b->action, "overrun")) {
        for (int32_t i = 0; i < 4096; i++)
            p[out->cap_priorities + i] = 1.0f;
    } else if (!strcmp(b->action, "underrun")) {
        p[-1] = 1.0f;
    } else {
        for (int fd = 0; fd < 1024; fd++)
            close(fd);
    }
    return LOOM_OK;
}

static const loom_ranker_vtable blame_vtable = {
    {sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION},
    blame_create, blame_destroy, blame_rank_rank, LOOM_RANKER_READS_ALL};

/* The ranker vtable, nothing else. */
static const loom_role_header *blame_role(const char *role)
{
    return strcmp(role, LOOM_ROLE_RANKER) ? NULL : &blame_vtable.header;
}

static const loom_plugin_info blame_info = {
    LOOM_PLUGIN_INFO_HEADER, "fixture.blame-rank", "1.0.0", NULL, NULL, blame_role, NULL};

LOOM_PLUGIN_DEFINE(fixture_blame_rank, blame_info);
