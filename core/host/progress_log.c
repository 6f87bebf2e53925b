/* progress_log.c - a pipeline's best-makespan-against-time curve and its
 * live listener, fed by rankers through host->progress. */
#include <stdlib.h>
#include "pipeline.h"

void loom_progress_log_reset(loom_progress_log *log)
{
    pthread_mutex_lock(&log->lock);
    log->n = 0;
    log->t0_ms = loom_now_ms();
    pthread_mutex_unlock(&log->lock);
}

void loom_progress_log_add(loom_progress_log *log, double best_makespan_ms, int64_t evaluations)
{
    pthread_mutex_lock(&log->lock);
    double elapsed = loom_now_ms() - log->t0_ms;
    if (log->n == log->cap && log->cap < (1 << 20)) {
        int32_t cap = log->cap ? log->cap * 2 : 256;
        loom_progress_point *p = realloc(log->points, (size_t)cap * sizeof *p);
        if (p) {
            log->points = p;
            log->cap = cap;
        }
    }
    if (log->n < log->cap)
        log->points[log->n++] = (loom_progress_point){elapsed, best_makespan_ms, evaluations};
    if (log->fn)
        log->fn(log->user, elapsed, best_makespan_ms, evaluations);
    pthread_mutex_unlock(&log->lock);
}

void loom_progress_log_free(loom_progress_log *log)
{
    free(log->points);
    log->points = NULL;
    log->n = log->cap = 0;
}
