/*
 * table_data.h - profiled per-layer costs read from a CSV or JSON file,
 * and their interpolation in tokens (the `table` cost model's data).
 *
 * Ownership: loom_table_load() returns a table the caller frees with
 * loom_table_free(); rows and their strings belong to the table. Pointers
 * handed out by loom_table_lookup() point into it.
 * Units: milliseconds and bytes, as measured per GPU.
 */
#ifndef LOOM_TABLE_DATA_H
#define LOOM_TABLE_DATA_H

#include <loom/loom.h>

/* Column names, in CSV header order (also the JSON row fields). */
#define LOOM_TABLE_HEADER                                                      \
    "module,layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,"             \
    "activation_bytes,param_bytes"

/* Layer value of a row that applies to every layer of its module ("*"). */
#define LOOM_TABLE_ANY_LAYER (-1)

/* One measured row. */
typedef struct loom_table_row {
    char *module;             /* module name (owned) */
    int32_t layer;            /* layer index, or LOOM_TABLE_ANY_LAYER */
    int32_t source;           /* CSV line (1-based) or JSON rows[] index */
    int64_t tokens;           /* > 0 */
    double forward_ms;
    double input_grad_ms;
    double weight_grad_ms;
    double activation_bytes;  /* stored with no recomputation */
    double param_bytes;
} loom_table_row;

/* A distinct module named by the rows, with its largest layer index. */
typedef struct loom_table_module {
    const char *name;    /* points at a row's module string */
    int32_t max_layer;   /* LOOM_TABLE_ANY_LAYER when only "*" rows */
    int32_t source;      /* its earliest row in the file, for messages */
} loom_table_module;

typedef struct loom_table {
    char *file;                  /* the path as given (owned) */
    int is_json;                 /* 1: rows come from JSON */
    loom_table_row *rows;        /* sorted by module, layer, tokens */
    int32_t n_rows, cap_rows;
    loom_table_module *modules;  /* distinct modules, sorted by name */
    int32_t n_modules;
} loom_table;

/* Values interpolated at one token count. */
typedef struct loom_table_point {
    double forward_ms, input_grad_ms, weight_grad_ms;
    double activation_bytes, param_bytes;
} loom_table_point;

/* Reads `path` (JSON when it ends in ".json" or starts with '{', else
 * CSV), sorts the rows and rejects duplicates. Errors: LOOM_EIO when the
 * file cannot be read, LOOM_EINVAL naming the file, line (CSV) or JSON
 * path, what was expected and what was found; LOOM_ENOMEM. */
int loom_table_load(const char *path, loom_table **out, loom_error *err);

/* Frees a table from loom_table_load(); NULL is a no-op. */
void loom_table_free(loom_table *t);

/* Parsers behind loom_table_load(): append rows to `t` (t->file names
 * the file in messages). `text` is NUL-terminated, `len` bytes long. */
int loom_table_parse_csv(loom_table *t, const char *text, loom_error *err);
int loom_table_parse_json(loom_table *t, const char *text, size_t len,
                          loom_error *err);

/* Appends a copy of `row` (its module string copied). */
int loom_table_add_row(loom_table *t, const loom_table_row *row,
                       loom_error *err);

/* Sorts rows, rejects duplicate (module, layer, tokens) and builds the
 * distinct module list. */
int loom_table_finish(loom_table *t, loom_error *err);

/* "line 7" or "rows[6]" for a row's source, into buf. */
void loom_table_where(const loom_table *t, int32_t source, char *buf,
                      size_t size);

/* The rows for (module, layer), sorted by tokens: the rows of that exact
 * layer when there are any, else the module's "*" rows. Sets *first and
 * *count (0 when none). */
void loom_table_lookup(const loom_table *t, const char *module, int32_t layer,
                       const loom_table_row **first, int32_t *count);

/* Interpolates rows[0..n-1] (sorted by tokens, n >= 1) at `tokens`:
 * linear between the two rows around it, extrapolated from the two
 * nearest rows outside their range, clamped at 0; one row scales
 * proportionally (value * tokens / row tokens). param_bytes is not a
 * function of tokens: it is taken from the row nearest in tokens. */
void loom_table_interpolate(const loom_table_row *rows, int32_t n,
                            double tokens, loom_table_point *out);

#endif
