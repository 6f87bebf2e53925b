/* session_handle.c - the session as the tools see it: an opaque handle
 * that loom_session_open allocates and loom_session_close frees, and
 * loom_session_info_get for what it holds (session.c opens and plans). */
#include <stdlib.h>
#include <loom/sys/util.h>
#include "run_priv.h"

int loom_session_open(loom_session **out, const loom_session_args *a, loom_error *err)
{
    *out = NULL;
    loom_session *s = malloc(sizeof *s);
    if (!s)
        return loom_set_error(err, LOOM_ENOMEM, "session: out of memory");
    int rc = loom_session_init(s, a, err);
    if (rc != LOOM_OK) {
        loom_session_release(s);
        free(s);
        return rc;
    }
    *out = s;
    return LOOM_OK;
}

void loom_session_info_get(loom_session *s, loom_session_info *info)
{
    *info = (loom_session_info){&s->problem,     s->n_iterations,     s->manifest_name,
                                s->cfg,          s->pl,               s->global_batch,
                                s->micro_batch_size, s->seq_len,      s->workload_desc};
}

void loom_session_close(loom_session *s)
{
    if (!s)
        return;
    loom_session_release(s);
    free(s);
}
