/* isolate_failure.c - the words for what went wrong in an isolated run:
 * failure kinds, signal names, a failure's status and its one-line
 * description naming the plugin, the iteration and the likely cause. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "run_priv.h"

const char *loom_fail_kind_name(int kind)
{
    static const char *const names[] = {"none",    "status",  "signal", "timeout",
                                        "memory",  "garbage", "exit"};
    if (kind < 0 || kind > LOOM_FAIL_EXIT)
        return "unknown";
    return names[kind];
}

const char *loom_signal_name(int sig, char *buf, size_t size)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},
                 {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"},
                 {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGPIPE, "SIGPIPE"},
                 {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"},   {SIGXCPU, "SIGXCPU"},
                 {SIGXFSZ, "SIGXFSZ"}, {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig)
            return names[i].name;
    snprintf(buf, size, "signal %d", sig);
    return buf;
}

int loom_failure_status(const loom_failure *f)
{
    if (f->kind == LOOM_FAIL_NONE)
        return LOOM_OK;
    if (f->kind == LOOM_FAIL_STATUS)
        return f->status;
    return LOOM_EPLUGIN;
}

/* "at iteration 2", "after iteration 2" or "while opening the session". */
static void describe_when(const loom_failure *f, char *buf, size_t size)
{
    if (f->phase == LOOM_PHASE_OPEN || f->iteration < 0)
        snprintf(buf, size, "while opening the session");
    else if (f->phase == LOOM_PHASE_AFTER)
        snprintf(buf, size, "after iteration %d", f->iteration);
    else
        snprintf(buf, size, "at iteration %d", f->iteration);
}

/* After a crash, hang or broken channel in core code: names the plugin
 * that ran last as the likely cause, and why. */
static void blame_last_plugin(const loom_failure *f, char *buf, size_t size)
{
    int core_died = f->kind == LOOM_FAIL_SIGNAL || f->kind == LOOM_FAIL_TIMEOUT ||
                    f->kind == LOOM_FAIL_GARBAGE || f->kind == LOOM_FAIL_EXIT;
    size_t n = strlen(buf);
    if (!core_died || f->plugin_id[0] || !f->last_plugin_id[0] || n + 1 >= size)
        return;
    snprintf(buf + n, size - n, "; the likely cause is plugin %s (pipeline[%d]), the last "
             "whose call ran: plugin code shares the planning process and can corrupt its "
             "memory or close descriptors (such as the result pipe) that core code uses later",
             f->last_plugin_id, f->last_step);
}

void loom_failure_describe(const loom_failure *f, char *buf, size_t size)
{
    char who[192], when[64], sig[32];
    if (f->plugin_id[0])
        snprintf(who, sizeof who, "plugin %s (pipeline[%d])", f->plugin_id, f->step);
    else
        snprintf(who, sizeof who, "the core (no plugin running)");
    describe_when(f, when, sizeof when);
    switch (f->kind) {
    case LOOM_FAIL_NONE:
        snprintf(buf, size, "no failure");
        break;
    case LOOM_FAIL_STATUS:
        snprintf(buf, size, "%s %s: %s", loom_status_name(f->status), when, f->message);
        break;
    case LOOM_FAIL_SIGNAL:
        snprintf(buf, size, "%s was killed by signal %d (%s) %s", who, f->signal,
                 loom_signal_name(f->signal, sig, sizeof sig), when);
        break;
    case LOOM_FAIL_TIMEOUT:
        snprintf(buf, size, "%s exceeded the time limit of %.0f ms %s (timeout)", who,
                 f->limit_ms, when);
        break;
    case LOOM_FAIL_MEMORY:
        snprintf(buf, size, "out of memory under the %lld MiB address-space limit %s: %s",
                 (long long)f->limit_mb, when, f->message);
        break;
    case LOOM_FAIL_GARBAGE:
        snprintf(buf, size, "%s: %s %s", who, f->message, when);
        break;
    case LOOM_FAIL_EXIT:
        snprintf(buf, size, "%s: the planning process exited with status %d before finishing %s",
                 who, f->exit_code, when);
        break;
    default:
        snprintf(buf, size, "unknown failure");
        break;
    }
    blame_last_plugin(f, buf, size);
}
