/* progress.c - a progress bar on a terminal, periodic plain lines
 * elsewhere, nothing when quiet. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>
#include <loom/sys/util.h>
#include "progress.h"

#define TICK_MS 250

struct loom_progress {
    pthread_mutex_t lock;   /* guards everything below */
    pthread_cond_t wake;    /* signals the ticker to stop */
    pthread_t ticker;
    int ticking, stop;
    FILE *out;
    int quiet;
    int terminal;
    double line_interval_ms;
    double t0_ms;
    double last_draw_ms;    /* < 0: never drawn */
    int drawn;              /* a bar is on screen */
    int64_t total, done;
    char label[96];
    int32_t iteration, n_iterations;
    double best_ms;
    int64_t evaluations;
};

loom_progress *loom_progress_new(FILE *out, int quiet)
{
    loom_progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    p->out = out;
    p->quiet = quiet || !out;
    p->terminal = out && isatty(fileno(out));
    p->line_interval_ms = LOOM_PROGRESS_LINE_INTERVAL_MS;
    p->t0_ms = loom_now_ms();
    p->last_draw_ms = -1;
    p->best_ms = -1;
    p->iteration = -1;
    return p;
}

void loom_progress_configure(loom_progress *p, int terminal, double line_interval_ms)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->terminal = terminal != 0;
    p->line_interval_ms = line_interval_ms;
    pthread_mutex_unlock(&p->lock);
}

void loom_progress_set_total(loom_progress *p, int64_t total)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->total = total > 0 ? total : 0;
    pthread_mutex_unlock(&p->lock);
}

char *loom_progress_duration(char *buf, size_t size, double ms)
{
    if (!(ms >= 0))
        ms = 0;
    double s = ms / 1000.0;
    if (s < 59.95) {
        snprintf(buf, size, "%.1f s", s);
    } else if (s < 3600) {
        long t = (long)(s + 0.5);
        snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
    } else {
        long t = (long)(s / 60 + 0.5);
        snprintf(buf, size, "%ldh%02ldm", t / 60, t % 60);
    }
    return buf;
}

/* Appends printf output to buf at *used, never past size. */
static void add(char *buf, size_t size, size_t *used, const char *fmt, ...) LOOM_PRINTF(4, 5);
static void add(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
    if (*used >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, size - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used += (size_t)n;
    if (*used >= size)
        *used = size - 1;
}

char *loom_progress_format(char *buf, size_t size, const loom_progress_view *v, int bar_width)
{
    size_t used = 0;
    char el[24], eta[24];
    if (!size)
        return buf;
    buf[0] = 0;
    double frac = v->total > 0 ? (double)v->done / (double)v->total : 0;
    if (frac > 1)
        frac = 1;
    if (bar_width > 0) {
        int fill = (int)(frac * bar_width + 1e-9);
        add(buf, size, &used, "[");
        for (int i = 0; i < bar_width; i++)
            add(buf, size, &used, "%c", i < fill ? '#' : '.');
        add(buf, size, &used, "] ");
    } else {
        add(buf, size, &used, "loom: ");
    }
    if (v->total > 0)
        add(buf, size, &used, "%3d%% (%lld/%lld) ", (int)(frac * 100 + 1e-9),
            (long long)v->done, (long long)v->total);
    if (v->label && v->label[0])
        add(buf, size, &used, "%s ", v->label);
    if (v->n_iterations > 0 && v->iteration >= 0)
        add(buf, size, &used, "iteration %d/%d ", v->iteration + 1, v->n_iterations);
    if (v->best_makespan_ms >= 0)
        add(buf, size, &used, "best %.3f ms (%lld evaluations) ", v->best_makespan_ms,
            (long long)v->evaluations);
    add(buf, size, &used, "elapsed %s", loom_progress_duration(el, sizeof el, v->elapsed_ms));
    if (v->total > 0 && v->done > 0 && v->done < v->total) {
        double left = v->elapsed_ms / (double)v->done * (double)(v->total - v->done);
        add(buf, size, &used, ", estimate %s left", loom_progress_duration(eta, sizeof eta, left));
    }
    return buf;
}

/* Draws now when the throttle allows it (or `force`); lock held. */
static void draw(loom_progress *p, int force)
{
    if (p->quiet)
        return;
    double now = loom_now_ms();
    double gap = p->terminal ? LOOM_PROGRESS_REDRAW_MS : p->line_interval_ms;
    if (!force) {
        if (p->last_draw_ms < 0 && !p->terminal && now - p->t0_ms < gap)
            return; /* quick runs print no lines */
        if (p->last_draw_ms >= 0 && now - p->last_draw_ms < gap)
            return;
    }
    loom_progress_view v = {p->label, p->iteration, p->n_iterations, p->done, p->total,
                            now - p->t0_ms, p->best_ms, p->evaluations};
    char line[320];
    if (p->terminal) {
        loom_progress_format(line, sizeof line, &v, 24);
        fprintf(p->out, "\r%s\033[K", line);
        p->drawn = 1;
    } else {
        loom_progress_format(line, sizeof line, &v, 0);
        fprintf(p->out, "%s\n", line);
    }
    fflush(p->out);
    p->last_draw_ms = now;
}

/* Ticker thread: redraws until told to stop. */
static void *tick_main(void *arg)
{
    loom_progress *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += TICK_MS * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        int rc = pthread_cond_timedwait(&p->wake, &p->lock, &t);
        if (rc == ETIMEDOUT && !p->stop && p->iteration >= 0)
            draw(p, 0);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

void loom_progress_start_ticker(loom_progress *p)
{
    if (!p || p->quiet)
        return;
    pthread_mutex_lock(&p->lock);
    if (!p->ticking) {
        p->stop = 0;
        p->ticking = pthread_create(&p->ticker, NULL, tick_main, p) == 0;
    }
    pthread_mutex_unlock(&p->lock);
}

/* Stops the ticker thread, if any (lock not held). */
static void stop_ticker(loom_progress *p)
{
    pthread_mutex_lock(&p->lock);
    int ticking = p->ticking;
    p->stop = 1;
    p->ticking = 0;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    if (ticking)
        pthread_join(p->ticker, NULL);
}

void loom_progress_update(loom_progress *p, const char *label, int32_t iteration,
                          int32_t n_iterations, int64_t done)
{
    if (!p || p->quiet)
        return;
    pthread_mutex_lock(&p->lock);
    int changed = strncmp(p->label, label ? label : "", sizeof p->label - 1) != 0;
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    if (iteration != p->iteration)
        p->best_ms = -1;
    p->iteration = iteration;
    p->n_iterations = n_iterations;
    p->done = done;
    draw(p, changed && p->terminal);
    pthread_mutex_unlock(&p->lock);
}

void loom_progress_search(loom_progress *p, double best_makespan_ms, int64_t evaluations)
{
    if (!p || p->quiet)
        return;
    pthread_mutex_lock(&p->lock);
    p->best_ms = best_makespan_ms;
    p->evaluations = evaluations;
    draw(p, 0);
    pthread_mutex_unlock(&p->lock);
}

void loom_progress_clear(loom_progress *p)
{
    if (!p || p->quiet)
        return;
    pthread_mutex_lock(&p->lock);
    if (p->terminal && p->drawn) {
        fputs("\r\033[K", p->out);
        fflush(p->out);
        p->drawn = 0;
        p->last_draw_ms = -1;
    }
    pthread_mutex_unlock(&p->lock);
}

void loom_progress_finish(loom_progress *p)
{
    if (!p)
        return;
    stop_ticker(p);
    loom_progress_clear(p);
}

void loom_progress_free(loom_progress *p)
{
    if (!p)
        return;
    stop_ticker(p);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
