/*
 * fault_rank.h - the ranker both isolation fixtures are built from (tests
 * only): it ranks groups in index order like fifo, but its N-th rank()
 * call in a process (N = the int param FAULT_PARAM, default 3) calls
 * fault_now() instead. Each fixture defines, before including this file:
 *   FAULT_PARAM  the param's name, a string literal
 *   FAULT_WHO    its name for messages, a string literal
 *   FAULT_ID     its plugin id, a string literal
 * and a static void fault_now(void); then LOOM_PLUGIN_DEFINE(<name>,
 * fault_info). A fixture that also misbehaves in create() defines
 *   FAULT_CREATE_HOOK  a function (const loom_host_api *, loom_ctx *) that
 *                      create() calls after reading FAULT_PARAM.
 */
#ifndef LOOM_FAULT_RANK_H
#define LOOM_FAULT_RANK_H

#include <string.h>
#include <loom/loom.h>

static void fault_now(void);

typedef struct fault_rank {
    const loom_host_api *host;
    int64_t fault_on_call;
} fault_rank;

static int64_t calls; /* rank() calls in this process */

#ifdef FAULT_CREATE_HOOK
static void FAULT_CREATE_HOOK(const loom_host_api *host, loom_ctx *ctx);
#endif

/* Reads FAULT_PARAM. */
static int fault_create(const loom_host_api *host, loom_ctx *ctx, void *plugin_state,
                        void **self, loom_error *err)
{
    (void)plugin_state;
    fault_rank *f = host->alloc(sizeof *f);
    if (!f)
        return host->error(err, LOOM_ENOMEM, FAULT_WHO ": out of memory");
    f->host = host;
    f->fault_on_call = 3;
    host->param_int(ctx, FAULT_PARAM, &f->fault_on_call);
#ifdef FAULT_CREATE_HOOK
    FAULT_CREATE_HOOK(host, ctx);
#endif
    *self = f;
    return LOOM_OK;
}

/* Releases an instance. */
static void fault_destroy(void *self)
{
    fault_rank *f = self;
    if (f)
        f->host->free(f);
}

/* Candidate 0, groups in index order; the fault on the configured call. */
static int fault_rank_rank(void *self, const loom_stage_graph *const *graphs, int32_t n_graphs,
                           loom_ranking *out, loom_error *err)
{
    fault_rank *f = self;
    if (++calls == f->fault_on_call)
        fault_now();
    if (n_graphs < 1 || out->cap_priorities < graphs[0]->n_groups)
        return f->host->error(err, LOOM_EINVAL, FAULT_WHO ": no room to rank");
    for (int32_t g = 0; g < graphs[0]->n_groups; g++)
        out->priorities[g] = (float)(graphs[0]->n_groups - g);
    out->candidate = 0;
    out->evaluations = 0;
    out->best_makespan_ms = -1;
    return LOOM_OK;
}

static const loom_ranker_vtable fault_vtable = {
    {sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION},
    fault_create, fault_destroy, fault_rank_rank, LOOM_RANKER_READS_ALL};

/* The ranker vtable, nothing else. */
static const loom_role_header *fault_role(const char *role)
{
    return strcmp(role, LOOM_ROLE_RANKER) ? NULL : &fault_vtable.header;
}

static const loom_plugin_info fault_info = {
    LOOM_PLUGIN_INFO_HEADER, FAULT_ID, "1.0.0", NULL, NULL, fault_role, NULL};

#endif
