/* table_data.c - loading a cost table file: reading, format choice, row
 * storage, sorting and duplicate checks. */
#include "table_data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest cost table file read, in bytes. */
#define TB_MAX_FILE_BYTES (64L * 1024 * 1024)

/* "line N" for CSV rows, "rows[N]" for JSON rows. */
void loom_table_where(const loom_table *t, int32_t source, char *buf,
                      size_t size)
{
    if (t->is_json)
        snprintf(buf, size, "rows[%d]", (int)source);
    else
        snprintf(buf, size, "line %d", (int)source);
}

/* Reads the whole file into a NUL-terminated malloc'd buffer. */
static int tb_read_file(const char *path, char **text, size_t *len,
                        loom_error *err)
{
    /* O_NONBLOCK: a FIFO must not block the open; only regular files are
     * read (as the core's loom_open_input does) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return loom_error_format(err, LOOM_EIO, "table: %s: cannot open: %s",
                                path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0)
        st.st_mode = 0;
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return loom_error_format(err, LOOM_EIO, "table: %s: cannot read: expected a "
                                "regular file, found %s", path,
                                S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                                : S_ISDIR(st.st_mode) ? "a directory" : "a special file");
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return loom_error_format(err, LOOM_EIO, "table: %s: cannot open: %s",
                                path, strerror(errno));
    }
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return loom_error_format(err, LOOM_EIO, "table: %s: cannot read: %s",
                                path, strerror(errno));
    }
    if (size > TB_MAX_FILE_BYTES) {
        fclose(f);
        return loom_error_format(err, LOOM_EINVAL,
                                "table: %s: expected at most %ld bytes, "
                                "found %ld",
                                path, TB_MAX_FILE_BYTES, size);
    }
    char *buf = malloc((size_t)size + 1);
    if (!buf) {
        fclose(f);
        return loom_error_format(err, LOOM_ENOMEM, "table: out of memory");
    }
    size_t got = fread(buf, 1, (size_t)size, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || got != (size_t)size) {
        free(buf);
        return loom_error_format(err, LOOM_EIO, "table: %s: cannot read",
                                path);
    }
    buf[got] = 0;
    *text = buf;
    *len = got;
    return LOOM_OK;
}

/* 1 when the file is JSON: a ".json" name or a '{' first. */
static int tb_is_json(const char *path, const char *text)
{
    size_t n = strlen(path);
    if (n >= 5 && strcasecmp(path + n - 5, ".json") == 0)
        return 1;
    while (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n')
        text++;
    return *text == '{';
}

/* Reads, parses and checks a table file (see header). */
int loom_table_load(const char *path, loom_table **out, loom_error *err)
{
    *out = NULL;
    loom_table *t = calloc(1, sizeof *t);
    if (!t)
        return loom_error_format(err, LOOM_ENOMEM, "table: out of memory");
    size_t n = strlen(path) + 1;
    t->file = malloc(n);
    if (!t->file) {
        free(t);
        return loom_error_format(err, LOOM_ENOMEM, "table: out of memory");
    }
    memcpy(t->file, path, n);

    char *text = NULL;
    size_t len = 0;
    int rc = tb_read_file(path, &text, &len, err);
    if (rc == LOOM_OK) {
        t->is_json = tb_is_json(path, text);
        rc = t->is_json ? loom_table_parse_json(t, text, len, err)
                        : loom_table_parse_csv(t, text, err);
        free(text);
    }
    if (rc == LOOM_OK && t->n_rows == 0)
        rc = loom_error_format(err, LOOM_EINVAL,
                              "table: %s: expected at least one row, found "
                              "none",
                              path);
    if (rc == LOOM_OK)
        rc = loom_table_finish(t, err);
    if (rc != LOOM_OK) {
        loom_table_free(t);
        return rc;
    }
    *out = t;
    return LOOM_OK;
}

/* Frees the rows, their strings and the table. */
void loom_table_free(loom_table *t)
{
    if (!t)
        return;
    for (int32_t i = 0; i < t->n_rows; i++)
        free(t->rows[i].module);
    free(t->rows);
    free(t->modules);
    free(t->file);
    free(t);
}

/* Appends a copy of a row (see header). */
int loom_table_add_row(loom_table *t, const loom_table_row *row,
                       loom_error *err)
{
    if (t->n_rows == t->cap_rows) {
        int32_t cap = t->cap_rows ? 2 * t->cap_rows : 64;
        loom_table_row *grown = realloc(t->rows, (size_t)cap * sizeof *grown);
        if (!grown)
            return loom_error_format(err, LOOM_ENOMEM, "table: out of memory");
        t->rows = grown;
        t->cap_rows = cap;
    }
    size_t n = strlen(row->module) + 1;
    char *name = malloc(n);
    if (!name)
        return loom_error_format(err, LOOM_ENOMEM, "table: out of memory");
    memcpy(name, row->module, n);
    t->rows[t->n_rows] = *row;
    t->rows[t->n_rows].module = name;
    t->n_rows++;
    return LOOM_OK;
}

/* qsort order: module, then layer ("*" first), then tokens, then source. */
static int tb_row_cmp(const void *pa, const void *pb)
{
    const loom_table_row *a = pa, *b = pb;
    int c = strcmp(a->module, b->module);
    if (c)
        return c;
    if (a->layer != b->layer)
        return a->layer < b->layer ? -1 : 1;
    if (a->tokens != b->tokens)
        return a->tokens < b->tokens ? -1 : 1;
    return a->source < b->source ? -1 : a->source > b->source;
}

/* Sorts, rejects duplicates, lists the distinct modules (see header). */
int loom_table_finish(loom_table *t, loom_error *err)
{
    qsort(t->rows, (size_t)t->n_rows, sizeof t->rows[0], tb_row_cmp);
    free(t->modules);
    t->n_modules = 0;
    t->modules = calloc((size_t)t->n_rows + 1, sizeof *t->modules);
    if (!t->modules)
        return loom_error_format(err, LOOM_ENOMEM, "table: out of memory");
    for (int32_t i = 0; i < t->n_rows; i++) {
        const loom_table_row *r = &t->rows[i];
        if (i > 0) {
            const loom_table_row *p = &t->rows[i - 1];
            if (!strcmp(p->module, r->module) && p->layer == r->layer &&
                p->tokens == r->tokens) {
                char w1[48], w2[48], lay[24];
                loom_table_where(t, p->source, w1, sizeof w1);
                loom_table_where(t, r->source, w2, sizeof w2);
                if (r->layer == LOOM_TABLE_ANY_LAYER)
                    snprintf(lay, sizeof lay, "*");
                else
                    snprintf(lay, sizeof lay, "%d", (int)r->layer);
                return loom_error_format(
                    err, LOOM_EINVAL,
                    "table: %s: %s: expected one row per module, layer and "
                    "tokens, found a second row for module \"%s\" layer %s "
                    "at %lld tokens (first at %s)",
                    t->file, w2, r->module, lay, (long long)r->tokens, w1);
            }
        }
        loom_table_module *m =
            t->n_modules ? &t->modules[t->n_modules - 1] : NULL;
        if (!m || strcmp(m->name, r->module) != 0) {
            m = &t->modules[t->n_modules++];
            m->name = r->module;
            m->max_layer = r->layer;
            m->source = r->source;
        }
        if (r->layer > m->max_layer)
            m->max_layer = r->layer;
        if (r->source < m->source)
            m->source = r->source;
    }
    return LOOM_OK;
}
