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
    if (!strstr(err->message, plugin_id))
        loom_error_prefix_plugin(err, plugin_id);
    err->code = code;
    return code;
}
