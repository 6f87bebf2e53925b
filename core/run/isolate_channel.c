/* isolate_channel.c - the result channel of isolation: the fixed-size,
 * checksummed records a child writes to its pipe (or hands over directly
 * in-process), and the parent's collector that checks each record and
 * turns the sequence into results and failures. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "isolate_priv.h"

volatile int32_t *loom_channel_step_marker(loom_channel *ch)
{
    return ch ? ch->step_marker : NULL;
}

volatile int32_t *loom_channel_last_step_marker(loom_channel *ch)
{
    return ch ? ch->last_step_marker : NULL;
}

/* FNV-1a 64 over n bytes. */
static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int loom_iso_send(loom_channel *ch, rec *r)
{
    r->magic = REC_MAGIC;
    r->checksum = fnv1a(r, offsetof(rec, checksum));
    if (ch->fd < 0) {
        char why[128];
        return loom_iso_handle(ch->direct, r, why, sizeof why) == 0 ? LOOM_OK : LOOM_EINVAL;
    }
    const char *p = (const char *)r;
    size_t left = sizeof *r;
    while (left > 0) {
        ssize_t n = write(ch->fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return LOOM_EIO;
        p += n;
        left -= (size_t)n;
    }
    return LOOM_OK;
}

rec loom_iso_new_rec(uint32_t kind, int32_t index)
{
    rec r;
    memset(&r, 0, sizeof r);
    r.kind = kind;
    r.index = index;
    return r;
}

int loom_channel_info(loom_channel *ch, int32_t n_iterations, const char *manifest_name)
{
    rec r = loom_iso_new_rec(REC_INFO, n_iterations);
    snprintf(r.text, sizeof r.text, "%s", manifest_name ? manifest_name : "");
    return loom_iso_send(ch, &r);
}

int loom_channel_step(loom_channel *ch, int32_t step, const char *plugin_id)
{
    rec r = loom_iso_new_rec(REC_STEP, step);
    snprintf(r.text, sizeof r.text, "%.127s", plugin_id ? plugin_id : "");
    return loom_iso_send(ch, &r);
}

int loom_channel_begin(loom_channel *ch, int32_t iteration, double limit_ms)
{
    rec r = loom_iso_new_rec(REC_BEGIN, iteration);
    r.limit_ms = limit_ms;
    return loom_iso_send(ch, &r);
}

int loom_channel_result(loom_channel *ch, const loom_iter_result *res)
{
    rec r = loom_iso_new_rec(REC_RESULT, res->iteration);
    r.result = *res;
    return loom_iso_send(ch, &r);
}

int loom_channel_fail(loom_channel *ch, int32_t iteration, int status, const char *message)
{
    rec r = loom_iso_new_rec(REC_FAIL, iteration);
    r.status = status;
    snprintf(r.text, sizeof r.text, "%s", message ? message : "");
    return loom_iso_send(ch, &r);
}

int loom_channel_fd(const loom_channel *ch)
{
    return ch->fd;
}

int loom_isolate_memory_limit_supported(void)
{
    return !LOOM_ISOLATE_ASAN;
}

void loom_iso_stamp_failure(collector *c, loom_failure *f)
{
    f->iteration = c->current;
    if (c->current < 0)
        f->phase = LOOM_PHASE_OPEN;
    else
        f->phase = c->in_iteration ? LOOM_PHASE_ITERATION : LOOM_PHASE_AFTER;
}

void loom_iso_stamp_step(collector *c, loom_failure *f, int32_t step)
{
    f->step = step;
    f->plugin_id[0] = 0;
    f->last_step = -1;
    f->last_plugin_id[0] = 0;
    if (step >= 0 && step < c->n_steps) {
        snprintf(f->plugin_id, sizeof f->plugin_id, "%s", c->step_ids[step]);
        return;
    }
    int32_t last = c->last_marker ? *c->last_marker : -1;
    if (last >= 0 && last < c->n_steps) {
        f->last_step = last;
        snprintf(f->last_plugin_id, sizeof f->last_plugin_id, "%s", c->step_ids[last]);
    }
}

/* 1 when the text field holds a NUL-terminated string. */
static int text_ok(const rec *r)
{
    return memchr(r->text, 0, sizeof r->text) != NULL;
}

/* 1 when every number of a result is plausible. */
static int result_ok(const loom_iter_result *x)
{
    return isfinite(x->makespan_ms) && x->makespan_ms >= 0 && isfinite(x->bubble_ratio) &&
           isfinite(x->mfu) && isfinite(x->plan_time_ms) && x->plan_time_ms >= 0 &&
           x->peak_bytes >= 0 && x->ranks >= 0 && x->evaluations >= 0;
}

/* Appends a result to the output. */
static int push_result(collector *c, const loom_iter_result *x)
{
    loom_run_output *o = c->out;
    if (o->n_results == c->cap) {
        int32_t cap = c->cap ? c->cap * 2 : 16;
        loom_iter_result *p = realloc(o->results, (size_t)cap * sizeof *p);
        if (!p) {
            c->no_memory = 1;
            return -1;
        }
        o->results = p;
        c->cap = cap;
    }
    o->results[o->n_results++] = *x;
    return 0;
}

/* Remembers the plugin id of an announced step. */
static int push_step(collector *c, int32_t step, const char *id)
{
    if (step >= c->n_steps) {
        char (*p)[128] = realloc(c->step_ids, (size_t)(step + 1) * sizeof *p);
        if (!p) {
            c->no_memory = 1;
            return -1;
        }
        for (int32_t i = c->n_steps; i <= step; i++)
            p[i][0] = 0;
        c->step_ids = p;
        c->n_steps = step + 1;
    }
    snprintf(c->step_ids[step], sizeof c->step_ids[step], "%.127s", id);
    return 0;
}

int loom_iso_handle(collector *c, const rec *r, char *why, size_t why_size)
{
    loom_run_output *o = c->out;
    if (r->magic != REC_MAGIC || r->checksum != fnv1a(r, offsetof(rec, checksum))) {
        snprintf(why, why_size, "a record with a bad magic number or checksum");
        return -1;
    }
    if (r->kind < REC_INFO || r->kind >= REC_KIND_END || !text_ok(r) || c->ended) {
        snprintf(why, why_size, "a record of unknown kind %u or after the end", r->kind);
        return -1;
    }
    switch (r->kind) {
    case REC_INFO:
        if (r->index < 0)
            break;
        o->n_iterations = r->index;
        snprintf(o->manifest_name, sizeof o->manifest_name, "%.127s", r->text);
        return 0;
    case REC_STEP:
        if (r->index < 0 || r->index >= REC_MAX_STEPS)
            break;
        return push_step(c, r->index, r->text);
    case REC_BEGIN:
        if (c->in_iteration || r->index < 0 || !isfinite(r->limit_ms))
            break;
        c->current = r->index;
        c->in_iteration = 1;
        c->iter_limit_ms = r->limit_ms > 0 ? r->limit_ms : c->opts->timeout_ms;
        if (c->on_iter)
            c->on_iter(c->iter_user, r->index, o->n_iterations, 0);
        return 0;
    case REC_RESULT:
        if (!c->in_iteration || r->index != c->current || r->result.iteration != c->current ||
            !result_ok(&r->result))
            break;
        c->in_iteration = 0;
        if (push_result(c, &r->result))
            return 0;
        if (c->on_iter)
            c->on_iter(c->iter_user, r->index, o->n_iterations, 1);
        return 0;
    case REC_FAIL:
        if (r->status >= 0 || r->index < -1)
            break;
        if (o->failure.kind == LOOM_FAIL_NONE) {
            loom_failure *f = &o->failure;
            int limited = c->opts->isolate && c->opts->memory_limit_mb > 0 &&
                          loom_isolate_memory_limit_supported();
            f->kind = (r->status == LOOM_ENOMEM && limited) ? LOOM_FAIL_MEMORY : LOOM_FAIL_STATUS;
            f->limit_mb = f->kind == LOOM_FAIL_MEMORY ? c->opts->memory_limit_mb : 0;
            f->status = r->status;
            loom_iso_stamp_failure(c, f);
            if (r->index >= 0)
                f->iteration = r->index;
            loom_iso_stamp_step(c, f, -1);
            snprintf(f->message, sizeof f->message, "%s", r->text);
        }
        c->in_iteration = 0;
        return 0;
    case REC_END:
        if (c->in_iteration)
            break;
        c->ended = 1;
        o->body_status = r->status;
        return 0;
    default:
        break;
    }
    snprintf(why, why_size, "an out-of-sequence or inconsistent record (kind %u, index %d)",
             r->kind, r->index);
    return -1;
}
