/* cli_io.c - what `loom` does around every command: the command's own
 * standard output, kept apart from anything plugin code prints; a check
 * that every write to it reached its file; and the exit guard, which turns
 * exit() called by plugin code into exit code 3 naming the plugin. */
#define _GNU_SOURCE /* on_exit, F_DUPFD_CLOEXEC */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include <loom/sys/output.h>

#define GUARD_STEPS 256

static struct {
    pid_t pid;                /* the loom process (a fork of it is not) */
    const char *cmd;          /* "plan", ...; NULL before a command */
    int active;               /* a command is running */
    FILE *out;                /* the command's output stream */
    int out_fd;               /* its descriptor (a duplicate of fd 1), or -1 */
    int out_errno;            /* the first write error on it, 0 none */
    int stdout_closed;        /* fd 1 was closed when loom started */
    volatile int32_t *marker; /* the running pipeline step, or NULL */
    char ids[GUARD_STEPS][128]; /* plugin id per step ("" unknown) */
    char loading[128];        /* plugin being loaded outside a pipeline, or "" */
} io;

/* Reopens fd `fd` on `path` when it is closed. Returns 1 when it was. */
static int reopen_closed(int fd, const char *path, int flags)
{
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
        return 0;
    int got = open(path, flags);
    if (got >= 0 && got != fd) { /* a lower fd was closed too: cannot happen in order */
        dup2(got, fd);
        close(got);
    }
    return 1;
}

/* exit() while a command runs: it was not the command, which returns to
 * main; so plugin code (or a library it uses) called it. Ends the process
 * with exit code 3 and a message naming the plugin when a step runs. */
static void guard_on_exit(int status, void *arg)
{
    (void)arg;
    if (getpid() != io.pid) /* a process plugin code forked: leave quietly, */
        _exit(status);      /* without flushing buffers it inherited */
    if (!io.active)
        return;
    int32_t step = io.marker ? *io.marker : -1;
    if (io.out)
        fflush(io.out); /* keep what the command printed so far */
    const char *cmd = io.cmd ? io.cmd : "";
    if (step >= 0 && step < GUARD_STEPS && io.ids[step][0])
        fprintf(stderr, "loom %s: plugin %s called exit(%d) before the command finished "
                        "(pipeline[%d])\n", cmd, io.ids[step], status, step);
    else if (io.loading[0])
        fprintf(stderr, "loom %s: plugin %s called exit(%d) before the command finished "
                        "(while loading)\n", cmd, io.loading, status);
    else
        fprintf(stderr, "loom %s: exit(%d) was called by plugin code before the command "
                        "finished\n", cmd, status);
    fflush(stderr);
    loom_cli_reap_all();
    _exit(LOOM_EXIT_PLUGIN);
}

/* Writes of the command's output stream: all of buf to out_fd, the
 * first error kept for the message (stdio forgets it). */
static ssize_t out_write(void *cookie, const char *buf, size_t size)
{
    (void)cookie;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(io.out_fd, buf + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (!io.out_errno)
                io.out_errno = n < 0 ? errno : EIO;
            return 0; /* an error, for stdio */
        }
        done += (size_t)n;
    }
    return (ssize_t)size;
}

static int out_close(void *cookie)
{
    (void)cookie;
    return close(io.out_fd);
}

void loom_cli_io_begin(const char *cmd, int plugin_code)
{
    io.pid = getpid();
    io.cmd = cmd;
    /* Past a file size limit (ulimit -f) a write fails with EFBIG and
     * takes the output error path instead of killing Loom mid-write; the
     * umask is taken now, before plugin code could change it. */
    signal(SIGXFSZ, SIG_IGN);
    (void)loom_out_umask();
    if (plugin_code) {
        loom_cli_reap_begin();
        loom_cli_signals_begin();
    }
    /* A closed fd 0-2 would be handed to the next file Loom opens (an
     * output file would then receive the table); a closed stdout becomes
     * /dev/full, so writing to it fails. */
    reopen_closed(STDIN_FILENO, "/dev/null", O_RDONLY);
    io.stdout_closed = reopen_closed(STDOUT_FILENO, "/dev/full", O_WRONLY);
    if (io.stdout_closed && fcntl(STDOUT_FILENO, F_GETFD) == -1)
        reopen_closed(STDOUT_FILENO, "/dev/null", O_WRONLY);
    reopen_closed(STDERR_FILENO, "/dev/null", O_WRONLY);
    io.out = stdout;
    io.out_fd = -1;
    if (plugin_code) {
        int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        cookie_io_functions_t fns = {NULL, out_write, NULL, out_close};
        io.out_fd = fd;
        FILE *f = fd >= 0 ? fopencookie(NULL, "w", fns) : NULL;
        if (f) {
            if (isatty(fd))
                setvbuf(f, NULL, _IOLBF, 0);
            io.out = f;
            dup2(STDERR_FILENO, STDOUT_FILENO); /* plugin code prints to stderr */
            setvbuf(stdout, NULL, _IOLBF, 0);
        } else if (fd >= 0) {
            close(fd);
            io.out_fd = -1;
        }
    }
    on_exit(guard_on_exit, NULL);
    io.active = cmd != NULL;
}

char *loom_cli_absolute_path(const char *path)
{
    if (!path)
        return NULL;
    if (path[0] == '/' || !strcmp(path, "-"))
        return strdup(path);
    char *cwd = getcwd(NULL, 0);
    char *abs = cwd ? malloc(strlen(cwd) + strlen(path) + 2) : NULL;
    if (abs)
        sprintf(abs, "%s/%s", cwd, path);
    free(cwd);
    return abs;
}

FILE *loom_cli_out(void)
{
    return io.out ? io.out : stdout;
}

int loom_cli_io_check(int code)
{
    FILE *out = loom_cli_out();
    errno = 0;
    int failed = fflush(out) != 0;
    int e = errno;
    if (!failed && !ferror(out))
        return code;
    if (io.out_errno && out == io.out)
        e = io.out_errno;
    const char *why = io.stdout_closed ? "it is closed" : strerror(e ? e : EIO);
    fprintf(stderr, "loom%s%s: cannot write to standard output: %s\n", io.cmd ? " " : "",
            io.cmd ? io.cmd : "", why);
    clearerr(out);
    io.out_errno = 0;
    return LOOM_EXIT_USAGE;
}

int loom_cli_io_end(int code)
{
    io.active = 0;
    io.marker = NULL;
    loom_cli_reap_all(); /* nothing plugin code started outlives the command */
    code = loom_cli_io_check(code);
    fflush(stdout); /* what plugin code printed (to stderr) */
    return code;
}

void loom_cli_guard_marker(volatile int32_t *marker)
{
    io.marker = marker;
    memset(io.ids, 0, sizeof io.ids);
}

void loom_cli_guard_step(int32_t step, const char *plugin_id)
{
    if (step >= 0 && step < GUARD_STEPS)
        snprintf(io.ids[step], sizeof io.ids[step], "%s", plugin_id ? plugin_id : "");
}

void loom_cli_guard_loading(const char *plugin_id)
{
    snprintf(io.loading, sizeof io.loading, "%s", plugin_id ? plugin_id : "");
}

void loom_cli_guard_on_step(void *user, int32_t step, const char *plugin_id)
{
    (void)user;
    loom_cli_guard_step(step, plugin_id);
}
