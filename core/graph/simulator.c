/* simulator.c - the event-driven pipeline simulator (the hot path of every
 * search). Each rank runs its stage list in order; a stage starts when its
 * rank is free and every predecessor has ended plus the edge's P2P time.
 * Ranks blocked on a predecessor wait on it and are woken when it ends, so
 * one run touches every stage and edge a constant number of times. A fill
 * (loom_schedule.fill_hosts) runs inside the next stages of its rank: the
 * first of them waits for its inputs too, the last ends it and runs longer
 * by what of it the hosts' exposed communication and compute did not hold
 * (docs/cost-models.md, "Filled stages"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim_scratch.h"

loom_sim_scratch *loom_sim_scratch_new(void)
{
    return calloc(1, sizeof(loom_sim_scratch));
}

void loom_sim_scratch_free(loom_sim_scratch *s)
{
    if (!s)
        return;
    free(s->end_ms);
    free(s->done);
    free(s->seen);
    free(s->wait_head);
    free(s->wait_next);
    free(s->cursor);
    free(s->scan);
    free(s->ready_ms);
    free(s->free_ms);
    free(s->first_ms);
    free(s->mem);
    free(s->peak);
    free(s->stack);
    free(s->raw_ms);
    free(s->busy_ms);
    free(s->p2p_ms);
    free(s->start_ms);
    free(s->sync_end_ms);
    free(s->chunk_start);
    free(s->chunk_end);
    free(s->fill);
    free(s->gate_ms);
    free(s->gate_part);
    free(s->gate_order);
    free(s->gate_used);
    free(s->gate_pos);
    free(s->gate_link);
    free(s->gate_wait_ms);
    free(s);
}

/* Grows the scratch to hold a graph of this size (no-op when it fits). */
static int reserve(loom_sim_scratch *s, int32_t n_stages, int32_t n_ranks)
{
    if (n_stages > s->cap_stages) {
        size_t n = (size_t)n_stages;
        free(s->end_ms);
        free(s->done);
        free(s->seen);
        free(s->wait_head);
        free(s->start_ms);
        s->start_ms = malloc(n * sizeof(double));
        s->end_ms = malloc(n * sizeof(double));
        s->done = malloc(n);
        s->seen = calloc(n, sizeof(int32_t));
        s->wait_head = malloc(n * sizeof(int32_t));
        s->stamp = 0;
        if (!s->end_ms || !s->done || !s->seen || !s->wait_head || !s->start_ms) {
            s->cap_stages = 0;
            return LOOM_ENOMEM;
        }
        s->cap_stages = n_stages;
    }
    if (n_ranks > s->cap_ranks) {
        size_t n = (size_t)n_ranks;
        free(s->wait_next);
        free(s->cursor);
        free(s->scan);
        free(s->ready_ms);
        free(s->free_ms);
        free(s->first_ms);
        free(s->mem);
        free(s->peak);
        free(s->stack);
        free(s->raw_ms);
        free(s->busy_ms);
        free(s->p2p_ms);
        free(s->sync_end_ms);
        free(s->fill);
        free(s->gate_wait_ms);
        s->fill = malloc(n * sizeof(sim_fill));
        s->gate_wait_ms = malloc(n * sizeof(double));
        s->raw_ms = malloc(n * sizeof(double));
        s->busy_ms = malloc(n * sizeof(double));
        s->p2p_ms = malloc(n * sizeof(double));
        s->sync_end_ms = malloc(n * sizeof(double));
        s->wait_next = malloc(n * sizeof(int32_t));
        s->cursor = malloc(n * sizeof(int32_t));
        s->scan = malloc(n * sizeof(int32_t));
        s->ready_ms = malloc(n * sizeof(double));
        s->free_ms = malloc(n * sizeof(double));
        s->first_ms = malloc(n * sizeof(double));
        s->mem = malloc(n * sizeof(int64_t));
        s->peak = malloc(n * sizeof(int64_t));
        s->stack = malloc(n * sizeof(int32_t));
        if (!s->wait_next || !s->cursor || !s->scan || !s->ready_ms ||
            !s->free_ms || !s->first_ms || !s->mem || !s->peak || !s->stack ||
            !s->raw_ms || !s->busy_ms || !s->p2p_ms || !s->sync_end_ms || !s->fill ||
            !s->gate_wait_ms) {
            s->cap_ranks = 0;
            return LOOM_ENOMEM;
        }
        s->cap_ranks = n_ranks;
    }
    return LOOM_OK;
}

const char *loom_stage_name(const loom_stage_graph *g, int32_t stage,
                            char *buf, size_t size)
{
    static const char kinds[] = "FBIW";
    uint8_t k = g->kind[stage];
    snprintf(buf, size, "%c(mb %d.%d, flow %d, pos %d, rank %d)",
             k < 4 ? kinds[k] : '?', g->microbatch[stage], g->sub[stage],
             g->flow[stage], g->position[stage], g->rank[stage]);
    return buf;
}

/* A full backward mark (LOOM_FILL_FULL_BACKWARD) at order index i: an I
 * stage followed on its rank by its own W, which is no fill. */
static int validate_full_backward(const loom_stage_graph *g, const loom_schedule *sched,
                                  int32_t i, int32_t end, loom_error *err)
{
    char a[96];
    int32_t st = sched->order[i];
    int32_t w = g->kind[st] == LOOM_STAGE_I ? g->pair_weight[g->pair[st]] : -1;
    if (w < 0 || i + 1 >= end || sched->order[i + 1] != w || sched->fill_hosts[w] != 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "schedule: %s is marked a full backward (fill_hosts %d); "
                              "expected an I stage followed on its rank by its own W",
                              loom_stage_name(g, st, a, sizeof a), LOOM_FILL_FULL_BACKWARD);
    return LOOM_OK;
}

/* Every fill is followed on its rank by as many hosts as it names, none
 * of them a fill; every full backward mark is an I before its W. */
static int validate_fills(const loom_stage_graph *g, const loom_schedule *sched,
                          loom_error *err)
{
    const int32_t *fill = loom_schedule_fills(sched);
    if (!fill)
        return LOOM_OK;
    char a[96], b[96];
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int32_t end = sched->rank_off[r + 1];
        for (int32_t i = sched->rank_off[r]; i < end; i++) {
            int32_t st = sched->order[i], k = fill[st];
            if (k == 0)
                continue;
            if (k == LOOM_FILL_FULL_BACKWARD) {
                int rc = validate_full_backward(g, sched, i, end, err);
                if (rc != LOOM_OK)
                    return rc;
                i++;
                continue;
            }
            if (k < 0 || k > end - i - 1)
                return loom_set_error(err, LOOM_EINVAL,
                                      "schedule: %s fills %d hosts, expected 1..%d (the "
                                      "stages after it on rank %d)",
                                      loom_stage_name(g, st, a, sizeof a), k, end - i - 1, r);
            for (int32_t j = i + 1; j <= i + k; j++)
                if (fill[sched->order[j]] != 0)
                    return loom_set_error(err, LOOM_EINVAL,
                                          "schedule: %s fills %d hosts, but %s among them "
                                          "is a fill itself",
                                          loom_stage_name(g, st, a, sizeof a), k,
                                          loom_stage_name(g, sched->order[j], b, sizeof b));
            i += k;
        }
    }
    return LOOM_OK;
}

/* Offsets in range first (nothing is read through them before), then
 * every stage exactly once, each in its own rank's list. */
static int validate(loom_sim_scratch *s, const loom_stage_graph *g,
                    const loom_schedule *sched, loom_error *err)
{
    if (sched->n_ranks != g->n_ranks)
        return loom_set_error(err, LOOM_EINVAL,
                              "schedule has %d ranks, the stage graph %d",
                              sched->n_ranks, g->n_ranks);
    if (!sched->rank_off || !sched->order)
        return loom_set_error(err, LOOM_EINVAL, "schedule has no rank_off or order array");
    for (int32_t r = 0; r < g->n_ranks; r++)
        if (sched->rank_off[r] < 0 || sched->rank_off[r] > sched->rank_off[r + 1] ||
            sched->rank_off[r + 1] > g->n_stages)
            return loom_set_error(err, LOOM_EINVAL,
                                  "schedule: rank_off[%d..%d] = %d..%d, expected "
                                  "non-decreasing offsets in 0..%d",
                                  r, r + 1, sched->rank_off[r], sched->rank_off[r + 1],
                                  g->n_stages);
    if (sched->rank_off[0] != 0 || sched->rank_off[g->n_ranks] != g->n_stages)
        return loom_set_error(err, LOOM_EINVAL,
                              "schedule holds %d stages, the stage graph %d",
                              sched->rank_off[g->n_ranks] - sched->rank_off[0],
                              g->n_stages);
    if (++s->stamp == 0x7fffffff) {
        memset(s->seen, 0, (size_t)s->cap_stages * sizeof(int32_t));
        s->stamp = 1;
    }
    char name[96];
    for (int32_t r = 0; r < g->n_ranks; r++) {
        for (int32_t i = sched->rank_off[r]; i < sched->rank_off[r + 1]; i++) {
            int32_t st = sched->order[i];
            if (st < 0 || st >= g->n_stages)
                return loom_set_error(err, LOOM_EINVAL,
                                      "schedule: rank %d lists stage %d, expected 0..%d",
                                      r, st, g->n_stages - 1);
            if (g->rank[st] != r)
                return loom_set_error(err, LOOM_EINVAL,
                                      "schedule: rank %d lists %s, which belongs to rank %d",
                                      r, loom_stage_name(g, st, name, sizeof name),
                                      g->rank[st]);
            if (s->seen[st] == s->stamp)
                return loom_set_error(err, LOOM_EINVAL,
                                      "schedule: %s is scheduled twice",
                                      loom_stage_name(g, st, name, sizeof name));
            s->seen[st] = s->stamp;
        }
    }
    return validate_fills(g, sched, err);
}

/* Names the blocked rank heads and what they wait for. */
static int deadlock(const loom_sim_scratch *s, const loom_stage_graph *g,
                    const loom_schedule *sched, loom_error *err)
{
    char msg[LOOM_ERROR_MSG_BYTES];
    size_t len = (size_t)snprintf(msg, sizeof msg, "schedule deadlocks:");
    int shown = 0;
    for (int32_t r = 0; r < g->n_ranks && shown < 4; r++) {
        if (s->cursor[r] >= sched->rank_off[r + 1])
            continue;
        int32_t st = sched->order[s->cursor[r]];
        int32_t waits = -1;
        for (int32_t e = g->pred_off[st]; e < g->pred_off[st + 1]; e++)
            if (!s->done[g->pred[e]]) {
                waits = g->pred[e];
                break;
            }
        char a[96], b[96];
        loom_stage_name(g, st, a, sizeof a);
        if (waits >= 0)
            loom_stage_name(g, waits, b, sizeof b);
        else
            snprintf(b, sizeof b, "nothing");
        if (len < sizeof msg)
            len += (size_t)snprintf(msg + len, sizeof msg - len,
                                    "%s rank %d blocked at %s waiting for %s",
                                    shown ? ";" : "", r, a, b);
        shown++;
    }
    return loom_set_error(err, LOOM_EDEADLOCK, "%s", msg);
}

int loom_metrics_check(const loom_metrics *m, const char *who, loom_error *err)
{
    if (!m)
        return loom_set_error(err, LOOM_EINVAL, "%s: no loom_metrics to fill", who);
    if (m->struct_size < LOOM_METRICS_SIZE_V1)
        return loom_set_error(err, LOOM_EABI,
                              "%s: loom_metrics struct_size is %u bytes, expected at least %u "
                              "(initialise it with LOOM_METRICS_INIT or loom_metrics_init())",
                              who, (unsigned)m->struct_size, (unsigned)LOOM_METRICS_SIZE_V1);
    return LOOM_OK;
}

/* When rank r's iteration ends: its last stage, or with a tail every
 * rank's gradient sync (the optimizer's gradient-norm all-reduce waits
 * for all of them), then its optimizer step and parameter all-gather. */
static double rank_end(const loom_sim_scratch *s, const loom_stage_graph *g, int32_t r,
                       double barrier)
{
    if (!g->tail_grad_sync_ms)
        return s->free_ms[r];
    return barrier + g->tail_optimizer_ms[r] + g->tail_param_gather_ms[r];
}

/* Adds d > 0 bytes to rank r's activations and its peak. */
static void mem_add(loom_sim_scratch *s, int32_t r, int64_t d)
{
    s->mem[r] += d;
    if (s->mem[r] > s->peak[r])
        s->peak[r] = s->mem[r];
}

/* Marks st done and wakes the ranks waiting on it; returns 1. */
static int32_t finish(loom_sim_scratch *s, int32_t st, int32_t *top)
{
    s->done[st] = 1;
    for (int32_t w = s->wait_head[st]; w >= 0;) {
        int32_t next = s->wait_next[w];
        s->stack[(*top)++] = w;
        w = next;
    }
    s->wait_head[st] = -1;
    return 1;
}

/* Checks the metrics and schedule structs, sizes the scratch, validates
 * the schedule and resets every rank to the start of its list, each one
 * pushed on the stack of ranks to advance (*top of them). */
static int sim_begin(loom_sim_scratch *s, const loom_stage_graph *g, const loom_schedule *sched,
                     const loom_metrics *m, int32_t *top, loom_error *err)
{
    int32_t n = g->n_stages, P = g->n_ranks;
    int rc = loom_metrics_check(m, "simulator", err);
    if (rc != LOOM_OK)
        return rc;
    if (sched->struct_size < LOOM_SCHEDULE_SIZE_V1)
        return loom_set_error(err, LOOM_EABI,
                              "simulator: loom_schedule struct_size is %u bytes, expected at "
                              "least %u (pass a schedule the host allocated)",
                              (unsigned)sched->struct_size, (unsigned)LOOM_SCHEDULE_SIZE_V1);
    if (reserve(s, n, P) != LOOM_OK)
        return loom_set_error(err, LOOM_ENOMEM, "simulator: out of memory");
    rc = validate(s, g, sched, err);
    if (rc != LOOM_OK)
        return rc;

    memset(s->done, 0, (size_t)n);
    for (int32_t i = 0; i < n; i++)
        s->wait_head[i] = -1;
    *top = 0;
    for (int32_t r = 0; r < P; r++) {
        s->cursor[r] = sched->rank_off[r];
        s->scan[r] = -1;
        s->ready_ms[r] = 0;
        s->raw_ms[r] = 0;
        s->busy_ms[r] = 0;
        s->p2p_ms[r] = 0;
        s->free_ms[r] = 0;
        s->first_ms[r] = -1;
        s->mem[r] = 0;
        s->peak[r] = 0;
        s->fill[r].stage = -1;
        s->stack[(*top)++] = r;
    }
    return loom_sim_gates(s, g, sched, err);
}

/* Reads the predecessors of rank r's next stage st that have ended into
 * its ready times (with and without P2P); returns 1 when all have, else 0
 * with r waiting on the first unfinished one. */
static int inputs_ready(loom_sim_scratch *s, const loom_stage_graph *g, int32_t r, int32_t st)
{
    if (s->scan[r] < 0) {
        s->scan[r] = g->pred_off[st];
        s->ready_ms[r] = 0;
        s->raw_ms[r] = 0;
    }
    int32_t e = s->scan[r], end = g->pred_off[st + 1];
    for (; e < end; e++) {
        int32_t p = g->pred[e];
        if (!s->done[p])
            break;
        double t = s->end_ms[p] + g->pred_p2p_ms[e];
        if (t > s->ready_ms[r])
            s->ready_ms[r] = t;
        if (s->end_ms[p] > s->raw_ms[r])
            s->raw_ms[r] = s->end_ms[p];
    }
    s->scan[r] = e;
    if (e < end) { /* wait on the unfinished predecessor */
        int32_t p = g->pred[e];
        s->wait_next[r] = s->wait_head[p];
        s->wait_head[p] = r;
        return 0;
    }
    return 1;
}

/* Rank r's next stage st, whose inputs have ended, waits for its chunk's
 * parameters when it is the chunk's first forward (loom_sim_gate). That
 * wait is DP sync; what the inputs' transfers added before it stays P2P
 * wait. */
static void wait_for_gate(loom_sim_scratch *s, const loom_stage_graph *g, int32_t r, int32_t st)
{
    double free_ms = s->free_ms[r];
    double before = free_ms > s->ready_ms[r] ? free_ms : s->ready_ms[r], start = before;
    double wait = loom_sim_gate(s, g, r, st, &start);
    if (!(wait > 0))
        return;
    double raw = free_ms > s->raw_ms[r] ? free_ms : s->raw_ms[r];
    s->p2p_ms[r] += before - raw;
    s->gate_wait_ms[r] += wait;
    s->ready_ms[r] = s->raw_ms[r] = start;
}

/* Rank r reaches fill st (n_hosts hosts): it waits for its inputs and runs
 * in its hosts; its memory is taken now. */
static void begin_fill(loom_sim_scratch *s, const loom_stage_graph *g, int32_t r, int32_t st,
                       int32_t n_hosts)
{
    double avail = s->free_ms[r] > s->ready_ms[r] ? s->free_ms[r] : s->ready_ms[r];
    s->fill[r] = (sim_fill){st, n_hosts, s->ready_ms[r], s->raw_ms[r], avail, avail, 0, 0, 0, 0};
    if (g->mem_delta_bytes[st] > 0)
        mem_add(s, r, g->mem_delta_bytes[st]);
    s->cursor[r]++;
    s->scan[r] = -1;
}

/* Host st of rank r's fill starts at `start` (after = when the rank was
 * free and the inputs had ended, without P2P): adds its exposed
 * communication and compute and the rank's idle time before it to the
 * fill; at the last host returns the extra time the host runs for what of
 * the fill did not fit (that idle time is then counted busy), else 0. */
static double host_fill(loom_sim_scratch *s, const loom_stage_graph *g, int32_t r, int32_t st,
                        double start, double after, int first_host, double *busy)
{
    sim_fill *fl = &s->fill[r];
    int32_t fs = fl->stage;
    double dur = g->duration_ms[st];
    double c = loom_stage_comm_ms(g, st);
    fl->comm += c;
    fl->compute += dur - c;
    /* the rank idles before this host: the fill runs there */
    double from = first_host ? fl->avail : s->free_ms[r];
    if (start > from) {
        fl->idle += start - from;
        double waits = start - (after > from ? after : from);
        fl->idle_p2p += waits > 0 ? waits : 0;
    } else if (first_host) {
        fl->start = start;
    }
    if (--fl->left != 0)
        return 0;
    /* the last host: what did not fit */
    double rest = loom_fill_left_ms(g->duration_ms[fs], loom_stage_comm_ms(g, fs), fl->comm,
                                    fl->compute);
    double used = rest < fl->idle ? rest : fl->idle;
    s->busy_ms[r] += used; /* idle time the fill ran in */
    *busy += used;
    s->p2p_ms[r] -= used < fl->idle_p2p ? used : fl->idle_p2p;
    return rest - used;
}

/* The last host of rank r's fill ended at fin: so does the fill, which
 * gives back the memory it frees. Returns 1 (one more stage done). */
static int32_t end_fill(loom_sim_scratch *s, const loom_stage_graph *g, loom_metrics *m,
                        int32_t r, double fin, int32_t *top)
{
    sim_fill *fl = &s->fill[r];
    int32_t fs = fl->stage;
    s->start_ms[fs] = fl->start;
    if (m->start_ms)
        m->start_ms[fs] = fl->start;
    s->end_ms[fs] = fin;
    if (g->mem_delta_bytes[fs] < 0)
        s->mem[r] += g->mem_delta_bytes[fs];
    fl->stage = -1;
    return finish(s, fs, top);
}

/* Runs rank r's next stage st, whose inputs have ended (inside a fill
 * when one is open: `fill` gives each fill's host count), and wakes the
 * ranks waiting on it. Returns the stages it completed (1, or 2 with a
 * fill's last host). */
static int32_t run_stage(loom_sim_scratch *s, const loom_stage_graph *g, const int32_t *fill,
                         loom_metrics *m, int32_t r, int32_t st, double *busy, int32_t *top)
{
    sim_fill *fl = &s->fill[r];
    int32_t fs = fl->stage;
    int first_host = fs >= 0 && fl->left == fill[fs];
    if (first_host) {
        if (fl->ready > s->ready_ms[r])
            s->ready_ms[r] = fl->ready;
        if (fl->raw > s->raw_ms[r])
            s->raw_ms[r] = fl->raw;
    }
    double start = s->free_ms[r] > s->ready_ms[r] ? s->free_ms[r] : s->ready_ms[r];
    double dur = g->duration_ms[st];
    /* idle before this stage that only the transfers caused */
    double after = s->free_ms[r] > s->raw_ms[r] ? s->free_ms[r] : s->raw_ms[r];
    if (start > after)
        s->p2p_ms[r] += start - after;
    if (fs >= 0)
        dur += host_fill(s, g, r, st, start, after, first_host, busy);
    double fin = start + dur;
    s->busy_ms[r] += dur;
    s->start_ms[st] = start;
    /* the peak is never below the memory held, so taking the max after a
     * release changes nothing; no branch on the delta's sign */
    int64_t held = s->mem[r] + g->mem_delta_bytes[st];
    s->mem[r] = held;
    s->peak[r] = held > s->peak[r] ? held : s->peak[r];
    if (s->first_ms[r] < 0)
        s->first_ms[r] = start;
    s->end_ms[st] = fin;
    s->free_ms[r] = fin;
    *busy += dur;
    if (m->start_ms)
        m->start_ms[st] = start;
    s->cursor[r]++;
    s->scan[r] = -1;
    int32_t completed = finish(s, st, top);
    if (fs >= 0 && fl->left == 0) /* the fill ends with its last host */
        completed += end_fill(s, g, m, r, fin, top);
    return completed;
}

/* Advances the ranks on the stack until none can move; returns the
 * stages completed, with their busy time added to *busy. */
static int32_t replay(loom_sim_scratch *s, const loom_stage_graph *g, const loom_schedule *sched,
                      loom_metrics *m, int32_t top, double *busy)
{
    const int32_t *fill = loom_schedule_fills(sched);
    int32_t completed = 0;
    while (top > 0) {
        int32_t r = s->stack[--top];
        while (s->cursor[r] < sched->rank_off[r + 1]) {
            int32_t st = sched->order[s->cursor[r]];
            if (!inputs_ready(s, g, r, st))
                break;
            if (s->gate_on)
                wait_for_gate(s, g, r, st);
            if (fill && fill[st] > 0)
                begin_fill(s, g, r, st, fill[st]);
            else
                completed += run_stage(s, g, fill, m, r, st, busy, &top);
        }
    }
    return completed;
}

/* Fills m from a finished replay (busy: the stages' busy time) and the
 * iteration tail: makespan, spans, peaks, cap violations, the per-rank
 * breakdown, bubble ratio, MFU and HFU. */
static void sim_metrics(const loom_sim_scratch *s, const loom_stage_graph *g, loom_metrics *m,
                        double busy)
{
    int32_t P = g->n_ranks;
    double makespan = 0, max_span = 0, tail_busy = 0;
    int64_t max_peak = 0;
    int32_t violations = 0;
    double barrier = 0;
    for (int32_t r = 0; r < P; r++)
        if (s->sync_end_ms[r] > barrier)
            barrier = s->sync_end_ms[r];
    for (int32_t r = 0; r < P; r++) {
        double end = rank_end(s, g, r, barrier);
        if (end > makespan)
            makespan = end;
    }
    int breakdown = LOOM_METRICS_HAS(m, bubble_ms);
    for (int32_t r = 0; r < P; r++) {
        double span = s->first_ms[r] < 0 ? 0 : s->free_ms[r] - s->first_ms[r];
        if (span > max_span)
            max_span = span;
        int64_t peak = g->static_bytes[r] + s->peak[r];
        if (peak > max_peak)
            max_peak = peak;
        if (g->memory_cap_bytes > 0 && (double)peak > g->memory_cap_bytes)
            violations++;
        double dp = 0, opt = 0;
        if (g->tail_grad_sync_ms) {
            dp = s->sync_end_ms[r] - s->free_ms[r] + g->tail_param_gather_ms[r] +
                 (s->gate_on ? s->gate_wait_ms[r] : 0);
            opt = g->tail_optimizer_ms[r];
        }
        tail_busy += dp + opt;
        if (m->span_ms)
            m->span_ms[r] = span;
        if (m->peak_bytes)
            m->peak_bytes[r] = peak;
        if (breakdown) {
            if (m->compute_ms)
                m->compute_ms[r] = s->busy_ms[r];
            if (m->p2p_wait_ms)
                m->p2p_wait_ms[r] = s->p2p_ms[r];
            if (m->dp_sync_ms)
                m->dp_sync_ms[r] = dp;
            if (m->optimizer_ms)
                m->optimizer_ms[r] = opt;
            if (m->bubble_ms) {
                double rest = makespan - s->busy_ms[r] - s->p2p_ms[r] - dp - opt;
                m->bubble_ms[r] = rest > 0 ? rest : 0;
            }
        }
    }
    if (m->end_ms)
        memcpy(m->end_ms, s->end_ms, (size_t)g->n_stages * sizeof(double));
    m->makespan_ms = makespan;
    m->max_span_ms = max_span;
    /* idle share of P x makespan; a rank never idles less than nothing,
     * so a sum that rounds above the product reads 0, not -2e-16 */
    double idle = makespan > 0 ? 1.0 - (busy + tail_busy) / ((double)P * makespan) : 0;
    m->bubble_ratio = idle > 0 ? idle : 0;
    m->max_peak_bytes = max_peak;
    m->cap_violations = violations;
    double denom = makespan / 1e3 * (double)P * g->peak_flops_per_rank;
    int known = g->total_flops > 0 && g->peak_flops_per_rank > 0 && makespan > 0;
    m->mfu = known ? g->total_flops / denom : -1;
    if (LOOM_METRICS_HAS(m, hfu))
        m->hfu = known ? (g->total_flops + g->recompute_flops) / denom : -1;
}

int loom_sim_run(loom_sim_scratch *s, const loom_stage_graph *g,
                 const loom_schedule *sched, loom_metrics *m, loom_error *err)
{
    int32_t top = 0;
    int rc = sim_begin(s, g, sched, m, &top, err);
    if (rc != LOOM_OK)
        return rc;
    double busy = 0;
    if (replay(s, g, sched, m, top, &busy) < g->n_stages)
        return deadlock(s, g, sched, err);
    rc = loom_sim_tail(s, g, err);
    if (rc != LOOM_OK)
        return rc;
    sim_metrics(s, g, m, busy);
    return LOOM_OK;
}

int loom_simulate(const loom_stage_graph *g, const loom_schedule *s,
                  loom_metrics *m, loom_error *err)
{
    loom_sim_scratch *scratch = loom_sim_scratch_new();
    if (!scratch)
        return loom_set_error(err, LOOM_ENOMEM, "simulator: out of memory");
    int rc = loom_sim_run(scratch, g, s, m, err);
    loom_sim_scratch_free(scratch);
    return rc;
}
