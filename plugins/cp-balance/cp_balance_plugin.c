/*
 * cp_balance_plugin.c - Cornstarch's token-workload-balanced context
 * parallelism (dissertation §3.3.2, Algorithm 1) as a pipeline step.
 *
 * Loom models a context-parallel group like a TP group: one rank. This
 * partitioner, chained after a layout partitioner, builds for every
 * microbatch of every candidate the backbone's packed attention mask (one
 * document per sample: the encoders' tokens bidirectional within their
 * modality, then the text causal over everything earlier, or everything
 * causal), assigns its token blocks to the CP GPUs longest-first, and
 * reports the result next to the causal zigzag baseline: the candidate's
 * label gains "cp<G> lpt<x> zz<y>" (slowest GPU over the mean, worst
 * microbatch) and the log lists every microbatch. The algorithm is
 * core/cp_balance.c, compiled into this plugin (it uses only libc), the
 * same code `loom cp-balance` runs.
 */
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/algorithms/cp_balance.h>

typedef struct cpb_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} cpb_self;

/* Creates an instance holding the host table and the step context. */
static int cpb_create(const loom_host_api *host, loom_ctx *ctx,
                      void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    cpb_self *c = host->alloc(sizeof *c);
    if (!c)
        return host->error(err, LOOM_ENOMEM, "cp-balance: out of memory");
    c->host = host;
    c->ctx = ctx;
    *self = c;
    return LOOM_OK;
}

/* Releases an instance from cpb_create. */
static void cpb_destroy(void *self)
{
    cpb_self *c = self;
    if (c)
        c->host->free(c);
}

/* The module whose sequence is balanced: the first text backbone. */
static int32_t cpb_module(const loom_model *model)
{
    for (int32_t m = 0; m < model->n_modules; m++)
        if (model->modules[m].kind == LOOM_MODULE_BACKBONE &&
            model->modules[m].modality == LOOM_MODALITY_TEXT)
            return m;
    return -1;
}

/* Scratch of one call. */
typedef struct cpb_buf {
    loom_cp_run *runs;
    int32_t n_runs, cap_runs;
    int64_t *w, *loads;
    int32_t *assign;
    int64_t cap_blocks;
} cpb_buf;

/* Appends a run, growing the array. */
static int cpb_push(const loom_host_api *host, cpb_buf *b, int64_t tokens,
                    uint64_t bits, int32_t doc)
{
    if (tokens <= 0)
        return LOOM_OK;
    if (b->n_runs == b->cap_runs) {
        int32_t cap = b->cap_runs ? 2 * b->cap_runs : 64;
        loom_cp_run *nr = host->realloc(b->runs, (size_t)cap * sizeof *nr);
        if (!nr)
            return LOOM_ENOMEM;
        b->runs = nr;
        b->cap_runs = cap;
    }
    b->runs[b->n_runs++] = (loom_cp_run){tokens, bits, doc, 0};
    return LOOM_OK;
}

/* Builds the mask runs of microbatch mb of the backbone module. */
static int cpb_runs(const loom_host_api *host, const loom_model *model,
                    int32_t bb, const loom_iteration *it,
                    const loom_partition *p, int32_t mb, int causal_only,
                    cpb_buf *b)
{
    const loom_module *mod = &model->modules[bb];
    int32_t n = it->n_samples;
    b->n_runs = 0;
    for (int32_t s = 0; s < n; s++) {
        if (p->sample_mb[(size_t)bb * (size_t)n + (size_t)s] != mb)
            continue;
        const loom_sample *smp = &it->samples[s];
        uint64_t all = LOOM_CP_TEXT_BIT;
        int64_t enc_tokens = 0;
        for (int32_t k = 0; k < mod->n_inputs && k < 62; k++) {
            const loom_module *in = &model->modules[mod->inputs[k]];
            int64_t t = loom_sample_output_tokens(in, smp);
            uint64_t bit = LOOM_CP_ENCODER_BIT(k + 1);
            all |= bit;
            enc_tokens += t;
            if (!causal_only && cpb_push(host, b, t, bit, s) != LOOM_OK)
                return LOOM_ENOMEM;
        }
        int64_t text = smp->text_tokens + (causal_only ? enc_tokens : 0);
        if (cpb_push(host, b, text, all | LOOM_CP_CAUSAL_BIT, s) != LOOM_OK)
            return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

/* Grows the per-block arrays to hold `blocks` blocks and `gpus` loads. */
static int cpb_reserve(const loom_host_api *host, cpb_buf *b, int64_t blocks,
                       int32_t gpus)
{
    if (blocks <= b->cap_blocks)
        return LOOM_OK;
    host->free(b->w);
    host->free(b->assign);
    b->w = host->alloc((size_t)blocks * sizeof *b->w);
    b->assign = host->alloc((size_t)blocks * sizeof *b->assign);
    if (!b->loads)
        b->loads = host->alloc((size_t)gpus * sizeof *b->loads);
    b->cap_blocks = (b->w && b->assign && b->loads) ? blocks : 0;
    return b->cap_blocks ? LOOM_OK : LOOM_ENOMEM;
}

/* Balances every microbatch of candidate p; writes the label summary. */
static int cpb_candidate(cpb_self *c, const loom_model *model, int32_t bb,
                         const loom_iteration *it, loom_partition *p,
                         int32_t gpus, int32_t block, int sorted, int causal,
                         int use_zigzag, cpb_buf *b, loom_error *err)
{
    const loom_host_api *host = c->host;
    double worst_lpt = 1, worst_zz = 1;
    for (int32_t mb = 0; mb < p->n_microbatches; mb++) {
        if (cpb_runs(host, model, bb, it, p, mb, causal, b) != LOOM_OK)
            return host->error(err, LOOM_ENOMEM, "cp-balance: out of memory");
        if (b->n_runs == 0)
            continue;
        int64_t tokens = 0;
        for (int32_t r = 0; r < b->n_runs; r++)
            tokens += b->runs[r].tokens;
        int64_t nb = loom_cp_block_count(tokens, block);
        if (nb > LOOM_CP_MAX_BLOCKS)
            return host->error(err, LOOM_EINVAL,
                               "cp-balance: microbatch %d has %lld tokens, "
                               "more than %d blocks of %d", mb,
                               (long long)tokens, LOOM_CP_MAX_BLOCKS, block);
        if (cpb_reserve(host, b, nb, gpus) != LOOM_OK)
            return host->error(err, LOOM_ENOMEM, "cp-balance: out of memory");
        int rc = loom_cp_block_workloads(b->runs, b->n_runs, block, b->w, err);
        if (rc == LOOM_OK)
            rc = loom_cp_zigzag(b->w, (int32_t)nb, gpus, b->assign, b->loads, err);
        if (rc != LOOM_OK)
            return rc;
        int64_t zz = loom_cp_makespan(b->loads, gpus), total = 0;
        for (int64_t k = 0; k < nb; k++)
            total += b->w[k];
        rc = loom_cp_lpt(b->w, (int32_t)nb, gpus, sorted, b->assign, b->loads, err);
        if (rc != LOOM_OK)
            return rc;
        int64_t lpt = loom_cp_makespan(b->loads, gpus);
        double mean = total > 0 ? (double)total / gpus : 1;
        double rl = total > 0 ? lpt / mean : 1, rz = total > 0 ? zz / mean : 1;
        worst_lpt = rl > worst_lpt ? rl : worst_lpt;
        worst_zz = rz > worst_zz ? rz : worst_zz;
        /* the plan's attention runs at the chosen split's slowest GPU */
        if (LOOM_STRUCT_HAS(p, loom_partition, cp_attention_scale) && p->cp_attention_scale &&
            mb < p->cap_microbatches)
            p->cp_attention_scale[mb] = use_zigzag ? rz : rl;
        host->log(c->ctx, LOOM_LOG_DEBUG,
                  "microbatch %d: %lld tokens, %lld blocks, %lld tiles: "
                  "slowest GPU %lld tiles (zigzag %lld, lower bound %lld)",
                  mb, (long long)tokens, (long long)nb, (long long)total,
                  (long long)lpt, (long long)zz,
                  (long long)loom_cp_lower_bound(b->w, (int32_t)nb, gpus));
    }
    char tail[48];
    snprintf(tail, sizeof tail, " cp%d lpt%.2f zz%.2f", gpus, worst_lpt, worst_zz);
    size_t len = strlen(p->label);
    if (len + strlen(tail) < sizeof p->label)
        memcpy(p->label + len, tail, strlen(tail) + 1);
    host->log(c->ctx, LOOM_LOG_INFO,
              "%s: worst microbatch's slowest CP GPU is %.3fx the mean "
              "(zigzag %.3fx)", p->label, worst_lpt, worst_zz);
    return LOOM_OK;
}

/* The params, declared once in cpb_param_table (manifest.json says the same). */
typedef struct cpb_params {
    int64_t gpus;
    const char *split;
    int64_t block_tokens;
    const char *order;
    const char *mask;
} cpb_params;

static const loom_param_def cpb_param_table[] = {
    LOOM_INT_PARAM(cpb_params, gpus, 4, 1, 65536,
                   "GPUs of the context-parallel group; the problem's cp replaces it when cp "
                   "> 1"),
    LOOM_ENUM_PARAM(cpb_params, split, "lpt", "lpt|zigzag",
                   "the assignment the plan uses when the problem has cp > 1: each "
                   "microbatch's slowest CP GPU over the mean (LPT's or zigzag's) scales the "
                   "attention time of its layers"),
    LOOM_INT_PARAM(cpb_params, block_tokens, 128, 1, 1048576,
                   "tokens per block N_B"),
    LOOM_ENUM_PARAM(cpb_params, order, "sorted", "sorted|unsorted",
                   "sorted: longest block first (LPT, as the prose says); unsorted: blocks in "
                   "sequence order (Algorithm 1 as listed)"),
    LOOM_ENUM_PARAM(cpb_params, mask, "prefix", "prefix|causal",
                   "prefix: per sample, encoder tokens attend within their modality, text "
                   "attends every earlier token; causal: every token causal"),
    LOOM_PARAM_END};

/* Balances context parallelism for every candidate's microbatches. */
static int cpb_partition(void *self, const loom_problem *problem,
                         const loom_iteration *it, loom_candidates *set,
                         loom_error *err)
{
    cpb_self *c = self;
    const loom_host_api *host = c->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return host->error(err, LOOM_DECLINED,
                           "cp-balance: only model problems carry sequences");
    if (set->n < 1)
        return host->error(err, LOOM_EINVAL,
                           "cp-balance: expected a layout partitioner before "
                           "it, found no candidates");
    int32_t bb = cpb_module(problem->model);
    if (bb < 0)
        return host->error(err, LOOM_DECLINED,
                           "cp-balance: the model has no text backbone");
    if (!it || it->n_samples < 1)
        return LOOM_OK;
    cpb_params prm;
    int rc = loom_params_read(host, c->ctx, "cp-balance", cpb_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    int64_t gpus = prm.gpus, block = prm.block_tokens;
    const char *order = prm.order, *mask = prm.mask, *split = prm.split;
    if (problem->parallel.cp > 1) /* the problem's CP group wins over the param */
        gpus = problem->parallel.cp;
    int use_zigzag = strcmp(split, "zigzag") == 0;
    int sorted = strcmp(order, "unsorted") != 0;
    int causal = strcmp(mask, "causal") == 0;
    cpb_buf b;
    memset(&b, 0, sizeof b);
    for (int32_t k = 0; rc == LOOM_OK && k < set->n; k++) {
        loom_partition *p = set->items[k];
        if (!p->sample_mb || p->n_samples != it->n_samples)
            rc = host->error(err, LOOM_EINVAL,
                             "cp-balance: candidate \"%s\" has no sample "
                             "assignment", p->label);
        else
            rc = cpb_candidate(c, problem->model, bb, it, p, (int32_t)gpus,
                               (int32_t)block, sorted, causal, use_zigzag, &b, err);
    }
    host->free(b.runs);
    host->free(b.w);
    host->free(b.assign);
    host->free(b.loads);
    return rc;
}

static const loom_partitioner_vtable cpb_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    cpb_create,
    cpb_destroy,
    cpb_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *cpb_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &cpb_vtable.header;
    return NULL;
}

static const loom_plugin_info cpb_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.cp-balance",
    "1.0.0",
    NULL,
    NULL,
    cpb_role,
    cpb_param_table,
};

LOOM_PLUGIN_DEFINE(cp_balance, cpb_info);
