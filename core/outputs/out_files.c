/* out_files.c - the output set: the files every plan gets, one row per
 * format (file, writer, the option of `loom plan` that writes it), then
 * the runtime exports (out_exports.c); the writers of a set
 * (loom_write_outputs, loom_write_outputs_at, below) and the folder code
 * that knows which entries are Loom's (out_dir.c) read the set. Each
 * format's writer lives in the format's own file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include "output.h"

const loom_out_format loom_out_plain_files[] = {
    /* name          writer                   (no exports key, no check) */
    {"plan.json",    loom_write_plan_json,    NULL, NULL, "--out"},
    {"trace.json",   loom_write_trace_json,   NULL, NULL, "--out"},
    {"timeline.svg", loom_write_svg,          NULL, NULL, "--out"},
    {"summary.txt",  loom_write_summary,      NULL, NULL, "--out"},
    {"report.html",  loom_write_html_report,  NULL, NULL, "--out"},
};

const size_t loom_out_n_plain_files = sizeof loom_out_plain_files / sizeof loom_out_plain_files[0];

size_t loom_out_set_size(void)
{
    return loom_out_n_plain_files + loom_out_n_runtime_exports;
}

const loom_out_format *loom_out_set_format(size_t i)
{
    if (i < loom_out_n_plain_files)
        return &loom_out_plain_files[i];
    i -= loom_out_n_plain_files;
    return i < loom_out_n_runtime_exports ? &loom_out_runtime_exports[i] : NULL;
}

/* ---- the output set of a plan ------------------------------------------- */

/* loom_write_atomic's callback for one file of the set (ctx: put_ctx). */
struct put_ctx {
    const loom_plan *plan;
    const loom_out_format *file;
};

static int put_file(void *ctx, FILE *out, loom_error *err)
{
    const struct put_ctx *p = ctx;
    return p->file->write(p->plan, out, err);
}

int loom_write_outputs_at(const loom_plan *plan, int dirfd, const char *shown,
                          loom_error *err)
{
    char path[4200];
    int rc = LOOM_OK;
    unsigned mode = 0666u & ~loom_out_umask();
    for (size_t i = 0; rc == LOOM_OK && i < loom_out_set_size(); i++) {
        const loom_out_format *f = loom_out_set_format(i);
        snprintf(path, sizeof path, "%s/%s", shown, f->name);
        int fits = 1;
        char reason[LOOM_OUT_REASON_MAX];
        if (f->fits && (rc = f->fits(plan, &fits, reason, err)) != LOOM_OK)
            break;
        if (!fits) {
            /* the consumer cannot take the plan: no file, and no stale one */
            if (unlinkat(dirfd, f->name, 0) != 0 && errno != ENOENT)
                rc = loom_set_error(err, LOOM_EIO, "cannot remove %s: %s", path,
                                    strerror(errno));
            continue;
        }
        struct put_ctx ctx = {plan, f};
        rc = loom_write_atomic_at(dirfd, f->name, path, mode, put_file, &ctx, err);
    }
    return rc;
}

int loom_write_outputs(const loom_plan *plan, const char *dir, loom_error *err)
{
    if (!dir || !*dir)
        return loom_set_error(err, LOOM_EINVAL, "outputs: no directory given");
    int rc = loom_out_make_dirs_upto(dir, strlen(dir), err);
    if (rc != LOOM_OK)
        return rc;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return loom_set_error(err, LOOM_EIO, "cannot write %s: %s", dir, strerror(errno));
    size_t len = strlen(dir);
    char shown[4096];
    snprintf(shown, sizeof shown, "%.*s", (int)(len > 1 && dir[len - 1] == '/' ? len - 1 : len),
             dir);
    rc = loom_write_outputs_at(plan, fd, shown, err);
    close(fd);
    return rc;
}
