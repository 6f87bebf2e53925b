/* plugin_status.c - the one rule for the status of a failed plugin call,
 * and naming the plugin in its message. */
#include <stdio.h>
#include <string.h>
#include "ctx.h"

int loom_plugin_status(int rc)
{
    switch (rc) {
    case LOOM_EINVAL:
    case LOOM_ENOTFOUND:
    case LOOM_EIO:
    case LOOM_ENOMEM:
    case LOOM_EINFEASIBLE:
    case LOOM_EDEADLOCK:
    case LOOM_ETIMEOUT:
    case LOOM_EINTERRUPTED:
        return rc;
    default:
        return LOOM_EPLUGIN;
    }
}

int loom_plugin_fail(loom_error *err, int rc, const char *plugin_id)
{
    int code = loom_plugin_status(rc);
    if (!err)
        return code;
    err->message[sizeof err->message - 1] = 0; /* a plugin may have filled it all */
    /* A message that already names a plugin comes from the plugin that
     * failed first (an interleaver under a ranker's search): keep it. */
    if (!strstr(err->message, plugin_id) && strncmp(err->message, "plugin ", 7) != 0)
        loom_error_prefix_plugin(err, plugin_id);
    err->code = code;
    return code;
}
