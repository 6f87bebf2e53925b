/*
 * mt_timeline.c - the per-rank memory timeline of a schedule: the slot (in
 * the rank's order) where each stage pair allocates its activations (its
 * F) and where it frees them (its B, or its W when backward is split).
 * Peaks are prefix-sum maxima over a rank's slots, exactly as the
 * simulator accumulates memory deltas in each rank's order. A release
 * stage the schedule runs as a fill (loom_schedule.fill_hosts) frees at
 * its last host's slot, as the simulator frees it.
 */
#include <string.h>
#include <loom/kits/memtune.h>

/* Frees `field` and allocates it anew with room for n elements (the
 * callers decide when it is too small; contents are not kept). */
#define MT_RESERVE(host, field, n)                                             \
    do {                                                                       \
        (host)->free(field);                                                   \
        (field) = (host)->alloc(((size_t)(n) + 1) * sizeof *(field));          \
    } while (0)

/* Makes room for the given counts (contents are not kept). */
static int mt_reserve(const loom_host_api *host, loom_mt_timeline *t,
                      int32_t n_ranks, int32_t n_pairs, int32_t n_stages)
{
    if (n_ranks > t->cap_ranks || !t->rank_off) {
        MT_RESERVE(host, t->rank_off, n_ranks);
        MT_RESERVE(host, t->rank_pair_off, n_ranks);
        MT_RESERVE(host, t->peak_bytes, n_ranks);
        MT_RESERVE(host, t->peak_slot, n_ranks);
        t->cap_ranks = n_ranks;
    }
    if (n_pairs > t->cap_pairs || !t->pair_rank) {
        MT_RESERVE(host, t->pair_rank, n_pairs);
        MT_RESERVE(host, t->pair_open, n_pairs);
        MT_RESERVE(host, t->pair_close, n_pairs);
        MT_RESERVE(host, t->rank_pairs, n_pairs);
        MT_RESERVE(host, t->close_prefix, n_pairs);
        MT_RESERVE(host, t->close_next, n_pairs);
        t->cap_pairs = n_pairs;
    }
    if (n_stages > t->cap_stages || !t->stage_slot) {
        MT_RESERVE(host, t->stage_slot, n_stages);
        MT_RESERVE(host, t->slot_open, n_stages);
        MT_RESERVE(host, t->slot_close, n_stages);
        t->cap_stages = n_stages;
        t->cap_slots = n_stages;
    }
    if (!t->rank_off || !t->rank_pair_off || !t->peak_bytes || !t->peak_slot ||
        !t->pair_rank || !t->pair_open || !t->pair_close || !t->rank_pairs ||
        !t->close_prefix || !t->close_next ||
        !t->stage_slot || !t->slot_open || !t->slot_close) {
        t->cap_ranks = t->cap_pairs = t->cap_stages = t->cap_slots = 0;
        return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

/* Releases every array of the timeline. */
void loom_mt_timeline_free(const loom_host_api *host, loom_mt_timeline *t)
{
    host->free(t->pair_rank);
    host->free(t->pair_open);
    host->free(t->pair_close);
    host->free(t->close_next);
    host->free(t->rank_off);
    host->free(t->slot_open);
    host->free(t->slot_close);
    host->free(t->rank_pair_off);
    host->free(t->rank_pairs);
    host->free(t->close_prefix);
    host->free(t->peak_bytes);
    host->free(t->peak_slot);
    host->free(t->stage_slot);
    memset(t, 0, sizeof *t);
}

/* Slot of every stage; checks each is listed once on its own rank. */
static int mt_slots(const loom_host_api *host, loom_mt_timeline *t,
                    const loom_stage_graph *g, const loom_schedule *s,
                    loom_error *err)
{
    for (int32_t v = 0; v < g->n_stages; v++)
        t->stage_slot[v] = -1;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        t->rank_off[r] = s->rank_off[r];
        for (int32_t k = s->rank_off[r]; k < s->rank_off[r + 1]; k++) {
            int32_t v = s->order[k];
            if (v < 0 || v >= g->n_stages || g->rank[v] != r ||
                t->stage_slot[v] >= 0)
                return host->error(err, LOOM_EINVAL,
                                   "memory tuner: schedule slot %d of rank %d "
                                   "holds stage %d, which is out of range, on "
                                   "another rank or listed twice", k, r, v);
            t->stage_slot[v] = k;
            t->slot_open[k] = -1;
            t->slot_close[k] = -1;
        }
    }
    t->rank_off[g->n_ranks] = s->rank_off[g->n_ranks];
    return LOOM_OK;
}

/* Opening and closing slots of every pair (a fill closes at its last
 * host's slot). */
static int mt_pairs(const loom_host_api *host, loom_mt_timeline *t,
                    const loom_stage_graph *g, const loom_schedule *s, loom_error *err)
{
    const int32_t *fill = loom_schedule_fills(s);
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int32_t f = g->pair_forward[p];
        int32_t rel = g->pair_weight[p] >= 0 ? g->pair_weight[p]
                                             : g->pair_backward[p];
        if (f < 0 || f >= g->n_stages || rel < 0 || rel >= g->n_stages)
            return host->error(err, LOOM_EINVAL,
                               "memory tuner: pair %d has forward stage %d "
                               "and release stage %d", p, f, rel);
        int32_t a = t->stage_slot[f], b = t->stage_slot[rel];
        if (a < 0 || b < 0)
            return host->error(err, LOOM_EINVAL,
                               "memory tuner: the schedule misses a stage of "
                               "pair %d", p);
        if (fill && fill[rel] > 0 && b + fill[rel] < t->rank_off[g->rank[rel] + 1])
            b += fill[rel];
        if (g->rank[f] != g->rank[rel] || b < a)
            return host->error(err, LOOM_EINVAL,
                               "memory tuner: pair %d frees its activations "
                               "(slot %d) before its forward stage (slot %d) "
                               "or on another rank", p, b, a);
        t->pair_rank[p] = g->rank[f];
        t->pair_open[p] = a;
        t->pair_close[p] = b;
        t->slot_open[a] = p;
        t->close_next[p] = -1;
        if (b > a) {
            t->close_next[p] = t->slot_close[b];
            t->slot_close[b] = p;
        }
    }
    return LOOM_OK;
}

/* Builds the timeline (see header). */
int loom_mt_timeline_build(const loom_host_api *host, loom_mt_timeline *t,
                           const loom_stage_graph *g,
                           const loom_schedule *sched, loom_error *err)
{
    if (!sched || sched->n_ranks != g->n_ranks ||
        sched->rank_off[0] != 0 || sched->rank_off[g->n_ranks] != g->n_stages)
        return host->error(err, LOOM_EINVAL,
                           "memory tuner: the schedule does not list the "
                           "graph's %d stages on its %d ranks",
                           g->n_stages, g->n_ranks);
    if (mt_reserve(host, t, g->n_ranks, g->n_pairs, g->n_stages) != LOOM_OK)
        return host->error(err, LOOM_ENOMEM, "memory tuner: out of memory");
    t->n_ranks = g->n_ranks;
    t->n_pairs = g->n_pairs;
    t->n_slots = g->n_stages;
    int rc = mt_slots(host, t, g, sched, err);
    if (rc == LOOM_OK)
        rc = mt_pairs(host, t, g, sched, err);
    if (rc != LOOM_OK)
        return rc;
    /* pairs per rank, in slot order (a counting pass over the slots) */
    for (int32_t r = 0; r <= g->n_ranks; r++)
        t->rank_pair_off[r] = 0;
    for (int32_t p = 0; p < g->n_pairs; p++)
        t->rank_pair_off[t->pair_rank[p] + 1]++;
    for (int32_t r = 0; r < g->n_ranks; r++)
        t->rank_pair_off[r + 1] += t->rank_pair_off[r];
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int32_t n = t->rank_pair_off[r];
        int32_t latest = -1;
        for (int32_t k = t->rank_off[r]; k < t->rank_off[r + 1]; k++)
            if (t->slot_open[k] >= 0) {
                int32_t p = t->slot_open[k];
                if (t->pair_close[p] > latest)
                    latest = t->pair_close[p];
                t->close_prefix[n] = latest;
                t->rank_pairs[n++] = p;
            }
        t->peak_bytes[r] = 0;
        t->peak_slot[r] = -1;
    }
    return LOOM_OK;
}

/* Rank r's peak by one prefix pass (see header). */
int64_t loom_mt_rank_peak(loom_mt_timeline *t, int32_t r,
                          const int64_t *pair_bytes)
{
    int64_t cur = 0, peak = 0;
    int32_t at = -1;
    for (int32_t k = t->rank_off[r]; k < t->rank_off[r + 1]; k++) {
        int32_t o = t->slot_open[k];
        if (o >= 0)
            cur += pair_bytes[o];
        if (cur > peak) { /* a host's allocation precedes its fill's release */
            peak = cur;
            at = k;
        }
        for (int32_t c = t->slot_close[k]; c >= 0; c = t->close_next[c])
            cur -= pair_bytes[c];
    }
    t->peak_bytes[r] = peak;
    t->peak_slot[r] = at;
    return peak;
}

double loom_mt_policy_costs(const loom_stage_graph *g, const uint8_t *policies,
                            int64_t *pair_bytes, double *rank_ms)
{
    for (int32_t r = 0; r < g->n_ranks; r++)
        rank_ms[r] = 0;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int64_t sum = 0;
        double extra = 0;
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++) {
            const loom_policy_option *o = &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
            sum += o[policies[e]].activation_bytes;
            extra += o[policies[e]].backward_ms - o[LOOM_POLICY_NONE].backward_ms;
        }
        pair_bytes[p] = sum;
        rank_ms[g->rank[g->pair_forward[p]]] += extra;
    }
    double most = 0;
    for (int32_t r = 0; r < g->n_ranks; r++)
        most = rank_ms[r] > most ? rank_ms[r] : most;
    return most;
}

int32_t loom_mt_first_over_cap(loom_mt_timeline *t, const loom_stage_graph *g,
                               const int64_t *pair_bytes, double *short_bytes)
{
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int64_t peak = loom_mt_rank_peak(t, r, pair_bytes);
        double total = (double)(g->static_bytes ? g->static_bytes[r] : 0) + (double)peak;
        if (total > g->memory_cap_bytes) {
            *short_bytes = total - g->memory_cap_bytes;
            return r;
        }
    }
    return -1;
}

/* Pairs of rank r live at `slot` (see header). Pairs are in opening
 * order, so those opened after the slot form a suffix; and every pair
 * before the first whose close_prefix passes the slot is already freed:
 * only the entries between are scanned (in a first-in-first-out order,
 * just the live window). */
/* A binary search for the first entry with close_prefix > slot (see
 * header). */
int32_t loom_mt_live_from(const loom_mt_timeline *t, int32_t r, int32_t slot)
{
    int32_t lo = t->rank_pair_off[r], hi = t->rank_pair_off[r + 1];
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (t->close_prefix[mid] > slot)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

int32_t loom_mt_live_pairs(const loom_mt_timeline *t, int32_t r, int32_t slot,
                           int32_t *out)
{
    int32_t b = t->rank_pair_off[r + 1], n = 0;
    for (int32_t i = loom_mt_live_from(t, r, slot); i < b; i++) {
        int32_t p = t->rank_pairs[i];
        if (t->pair_open[p] > slot)
            break;
        if (t->pair_close[p] > slot)
            out[n++] = p;
    }
    return n;
}

/* Local maximum test (see header). */
int loom_mt_is_crest(const loom_mt_timeline *t, int32_t r, int32_t slot)
{
    if (t->slot_open[slot] < 0)
        return 0;
    int32_t next = slot + 1;
    if (next >= t->rank_off[r + 1])
        return 1;
    return t->slot_open[next] < 0;
}
