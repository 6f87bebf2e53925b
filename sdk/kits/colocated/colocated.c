/*
 * colocated.c - the coarse-grained Optimus schedule (encoder forwards,
 * the backbone in (interleaved) 1F1B order, encoder backwards) shared by
 * the encoder-first and optimus-bubble interleavers (see
 * <loom/kits/colocated.h>).
 */
#include <string.h>
#include <loom/kits/colocated.h>

/* Scheduling efficiency (Optimus Table 7): the share of the encoder's
 * time enc_ms that does not lengthen the iteration, (enc + llm - mllm) /
 * enc clamped to [0, 1]; llm_ms is the backbone alone, mllm_ms with the
 * encoder scheduled. 1 when enc_ms <= 0. */
double loom_co_efficiency(double enc_ms, double llm_ms, double mllm_ms)
{
    if (!(enc_ms > 0))
        return 1;
    double e = (enc_ms + llm_ms - mllm_ms) / enc_ms;
    return e < 0 ? 0 : e > 1 ? 1 : e;
}

/* Releases every array of co. */
void loom_co_free(loom_co *co)
{
    if (!co || !co->host)
        return;
    const loom_host_api *h = co->host;
    h->free(co->is_encoder);
    h->free(co->flow_pos);
    h->free(co->mb_base);
    h->free(co->mb_subs);
    h->free(co->lookup);
    h->free(co->pos_rank);
    h->free(co->units);
    h->free(co->order);
    h->free(co->main_units);
    h->free(co->rank_index);
    memset(co, 0, sizeof *co);
}

/* Grows *p to hold `want` elements of `size` bytes; 0 on failure. */
static int co_grow(const loom_host_api *h, void **p, int32_t *cap,
                   int32_t want, size_t size)
{
    if (want <= *cap && *p)
        return 1;
    void *q = h->realloc(*p, (size_t)(want > 0 ? want : 1) * size);
    if (!q)
        return 0;
    *p = q;
    *cap = want;
    return 1;
}

#define CO_GROW(co, field, want)                                               \
    co_grow((co)->host, (void **)&(co)->field, &(co)->cap_##field, (want),      \
            sizeof *(co)->field)

/* Sorts unit ids by priority (higher first), microbatch, sub, flow. */
static void co_sort(const loom_co_unit *u, int32_t *ids, int32_t n)
{
    /* Shell sort on a total order (no allocation, deterministic) */
    for (int32_t gap = n / 2; gap > 0; gap /= 2)
        for (int32_t i = gap; i < n; i++) {
            int32_t x = ids[i], j = i;
            while (j >= gap) {
                const loom_co_unit *a = &u[ids[j - gap]], *b = &u[x];
                int after = a->prio < b->prio ||
                            (a->prio == b->prio &&
                             (a->mb > b->mb ||
                              (a->mb == b->mb &&
                               (a->sub > b->sub ||
                                (a->sub == b->sub && a->flow > b->flow)))));
                if (!after)
                    break;
                ids[j] = ids[j - gap];
                j -= gap;
            }
            ids[j] = x;
        }
}

/* Classifies the flows of g and indexes its stages. `problem` may be NULL
 * (then consumed flows are encoder flows). */
int loom_co_prepare(loom_co *co, const loom_stage_graph *g,
                    const loom_problem *problem, const float *priorities,
                    loom_error *err)
{
    const loom_host_api *h = co->host;
    int32_t F = 0, M = g->n_microbatches, maxp = 0;
    for (int32_t v = 0; v < g->n_stages; v++) {
        F = g->flow[v] + 1 > F ? g->flow[v] + 1 : F;
        maxp = g->position[v] + 1 > maxp ? g->position[v] + 1 : maxp;
    }
    if (F < 1 || M < 1)
        return h->error(err, LOOM_EINVAL, "empty graph: %d flows, %d microbatches",
                        F, M);
    int32_t fm = F * M;
    if (!CO_GROW(co, is_encoder, F) || !CO_GROW(co, flow_pos, F) ||
        !CO_GROW(co, mb_base, fm) || !CO_GROW(co, mb_subs, fm))
        return h->error(err, LOOM_ENOMEM, "out of memory");
    co->n_flows = F;
    co->M = M;
    co->max_pos = maxp;
    for (int32_t i = 0; i < fm; i++)
        co->mb_subs[i] = 0;
    for (int32_t f = 0; f < F; f++) {
        co->flow_pos[f] = 0;
        co->is_encoder[f] = 0;
    }
    for (int32_t v = 0; v < g->n_stages; v++) {
        int32_t at = g->flow[v] * M + g->microbatch[v];
        co->mb_subs[at] = g->sub[v] + 1 > co->mb_subs[at] ? g->sub[v] + 1 : co->mb_subs[at];
        if (g->position[v] + 1 > co->flow_pos[g->flow[v]])
            co->flow_pos[g->flow[v]] = g->position[v] + 1;
    }
    int32_t n_units = 0;
    for (int32_t i = 0; i < fm; i++) {
        co->mb_base[i] = n_units;
        n_units += co->mb_subs[i];
    }
    int32_t n_lookup = n_units * maxp * 2, n_pr = F * maxp;
    if (!CO_GROW(co, units, n_units) || !CO_GROW(co, order, n_units) ||
        !CO_GROW(co, main_units, n_units) ||
        !CO_GROW(co, lookup, n_lookup) || !CO_GROW(co, pos_rank, n_pr) ||
        !CO_GROW(co, rank_index, g->n_ranks))
        return h->error(err, LOOM_ENOMEM, "out of memory");
    co->n_units = n_units;
    for (int32_t i = 0; i < n_lookup; i++)
        co->lookup[i] = -1;
    for (int32_t i = 0; i < n_pr; i++)
        co->pos_rank[i] = -1;
    for (int32_t v = 0; v < g->n_stages; v++) {
        int32_t f = g->flow[v];
        int32_t unit = co->mb_base[f * M + g->microbatch[v]] + g->sub[v];
        loom_co_unit *u = &co->units[unit];
        u->flow = f;
        u->mb = g->microbatch[v];
        u->sub = g->sub[v];
        u->prio = priorities ? priorities[g->group[v]] : -(float)g->group[v];
        if (u->prio != u->prio)
            u->prio = -1e30f;
        co->pos_rank[f * maxp + g->position[v]] = g->rank[v];
        if (g->kind[v] != LOOM_STAGE_W)
            co->lookup[((size_t)unit * maxp + g->position[v]) * 2 +
                       (g->kind[v] != LOOM_STAGE_F)] = v;
    }
    /* encoder flows: by module kind, else consumed by another flow */
    const loom_model *model = problem && problem->kind == LOOM_PROBLEM_MODEL
                                  ? problem->model : NULL;
    for (int32_t v = 0; v < g->n_stages; v++) {
        int32_t m = g->module[v];
        if (model && m >= 0 && m < model->n_modules)
            co->is_encoder[g->flow[v]] = model->modules[m].kind == LOOM_MODULE_ENCODER;
    }
    if (!model)
        for (int32_t grp = 0; grp < g->n_groups; grp++)
            for (int32_t e = g->group_pred_off[grp]; e < g->group_pred_off[grp + 1]; e++) {
                int32_t in = g->group_flow[g->group_pred[e]];
                if (in != g->group_flow[grp])
                    co->is_encoder[in] = 1;
            }
    co->main_flow = -1;
    for (int32_t f = 0; f < F; f++) {
        if (co->is_encoder[f])
            continue;
        if (co->main_flow >= 0)
            return h->error(err, LOOM_EINVAL,
                            "expects one backbone flow and encoder flows, "
                            "found non-encoder flows %d and %d",
                            co->main_flow, f);
        co->main_flow = f;
    }
    if (co->main_flow < 0)
        return h->error(err, LOOM_EINVAL, "expects a backbone flow, found only "
                        "encoder flows");
    for (int32_t i = 0; i < n_units; i++)
        co->order[i] = i;
    co_sort(co->units, co->order, n_units);
    co->n_main_units = 0;
    for (int32_t i = 0; i < n_units; i++)
        if (co->units[co->order[i]].flow == co->main_flow)
            co->main_units[co->n_main_units++] = co->order[i];
    /* the backbone's shape: position s on the (s mod P)-th rank */
    int32_t mf = co->main_flow, np = co->flow_pos[mf];
    for (int32_t r = 0; r < g->n_ranks; r++)
        co->rank_index[r] = -1;
    int32_t P = 0;
    while (P < np && co->rank_index[co->pos_rank[mf * maxp + P]] < 0) {
        co->rank_index[co->pos_rank[mf * maxp + P]] = P;
        P++;
    }
    if (P < 1 || np % P != 0)
        return h->error(err, LOOM_EINVAL,
                        "expects the backbone flow as P x V positions, found "
                        "%d positions over %d ranks", np, P);
    for (int32_t s = 0; s < np; s++)
        if (co->pos_rank[mf * maxp + s] != co->pos_rank[mf * maxp + s % P])
            return h->error(err, LOOM_EINVAL,
                            "expects backbone position %d on the rank of "
                            "position %d (Megatron order), found rank %d",
                            s, s % P, co->pos_rank[mf * maxp + s]);
    co->P = P;
    co->V = np / P;
    return LOOM_OK;
}

/* Appends a backward slot (B, or I then its W) to sched at *k. */
static void co_emit_back(const loom_stage_graph *g, int32_t v,
                         loom_schedule *out, int32_t *k)
{
    out->order[(*k)++] = v;
    if (g->kind[v] == LOOM_STAGE_I)
        out->order[(*k)++] = g->pair_weight[g->pair[v]];
}

/* The n-th forward (back = 0) or backward of pipeline rank index i:
 * units in groups of P, each group visiting chunks 0..V-1 (backwards
 * V-1..0) with all its units per chunk (Megatron's order). */
static int32_t co_nth(const loom_co *co, int32_t n, int back, int32_t i)
{
    int32_t P = co->P, V = co->V, U = co->n_main_units;
    int32_t g0 = n / (P * V) * P;
    int32_t gsz = U - g0 < P ? U - g0 : P;
    int32_t c = (n - g0 * V) / gsz, j = (n - g0 * V) % gsz;
    if (back)
        c = V - 1 - c;
    return loom_co_stage(co, co->main_units[g0 + j], c * P + i, back);
}

/* The backbone's (interleaved) 1F1B order on pipeline rank index i:
 * w warm-up forwards, then one forward one backward, then the rest. */
static void co_main(const loom_co *co, const loom_stage_graph *g, int32_t i,
                    int warmup, loom_schedule *out, int32_t *k)
{
    int32_t P = co->P, V = co->V, total = co->n_main_units * V, w;
    if (V == 1)
        w = P - i - 1;
    else if (warmup == LOOM_CO_WARMUP_DEFERRED)
        w = (P - i - 1) + (V - 1) * P;
    else
        w = 2 * (P - i - 1) + (V - 1) * P;
    if (w > total)
        w = total;
    for (int32_t n = 0; n < w; n++)
        out->order[(*k)++] = co_nth(co, n, 0, i);
    for (int32_t t = 0; t < total - w; t++) {
        out->order[(*k)++] = co_nth(co, w + t, 0, i);
        co_emit_back(g, co_nth(co, t, 1, i), out, k);
    }
    for (int32_t t = total - w; t < total; t++)
        co_emit_back(g, co_nth(co, t, 1, i), out, k);
}

/* Writes the coarse order of every rank into out (see the file comment). */
int loom_co_coarse(const loom_co *co, const loom_stage_graph *g, int warmup,
                   loom_schedule *out, loom_error *err)
{
    int32_t k = 0, maxp = co->max_pos;
    out->n_ranks = g->n_ranks;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        out->rank_off[r] = k;
        for (int32_t t = 0; t < co->n_units; t++) {
            int32_t u = co->order[t], f = co->units[u].flow;
            if (!co->is_encoder[f])
                continue;
            for (int32_t p = 0; p < co->flow_pos[f]; p++)
                if (co->pos_rank[f * maxp + p] == r)
                    out->order[k++] = loom_co_stage(co, u, p, 0);
        }
        if (co->rank_index[r] >= 0)
            co_main(co, g, co->rank_index[r], warmup, out, &k);
        for (int32_t t = 0; t < co->n_units; t++) {
            int32_t u = co->order[t], f = co->units[u].flow;
            if (!co->is_encoder[f])
                continue;
            for (int32_t p = co->flow_pos[f] - 1; p >= 0; p--)
                if (co->pos_rank[f * maxp + p] == r)
                    co_emit_back(g, loom_co_stage(co, u, p, 1), out, &k);
        }
    }
    out->rank_off[g->n_ranks] = k;
    out->n_stages = k;
    if (k != g->n_stages)
        return co->host->error(err, LOOM_EINVAL,
                               "placed %d of %d stages (a unit without all "
                               "its stages?)", k, g->n_stages);
    return LOOM_OK;
}
