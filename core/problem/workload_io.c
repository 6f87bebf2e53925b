/* workload_io.c - workloads as JSON Lines: the bounded workload builder,
 * the line-by-line reader (errors carry file:LINE) and the writer whose
 * output reads back identically. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <loom/sys/json.h>
#include "problem_io_priv.h"

void loom_workload_free(loom_workload *w)
{
    if (!w)
        return;
    free(w->iterations);
    free(w->samples);
    free(w);
}

int loom_wb_init(loom_workload_builder *b, loom_error *err)
{
    memset(b, 0, sizeof *b);
    b->w = calloc(1, sizeof *b->w);
    if (!b->w)
        return loom_set_error(err, LOOM_ENOMEM, "workload: out of memory");
    return LOOM_OK;
}

int loom_wb_begin_iteration(loom_workload_builder *b, int32_t index, loom_error *err)
{
    loom_workload *w = b->w;
    if (w->n_iterations >= LOOM_MAX_ITERATIONS)
        return loom_set_error(err, LOOM_EINVAL,
                              "workload: expected at most %d iterations, found more",
                              LOOM_MAX_ITERATIONS);
    if (w->n_iterations == b->iterations_cap) {
        int32_t cap = b->iterations_cap ? 2 * b->iterations_cap : 64;
        if (cap > LOOM_MAX_ITERATIONS)
            cap = LOOM_MAX_ITERATIONS;
        loom_iteration *it = realloc(w->iterations, (size_t)cap * sizeof *it);
        if (!it)
            return loom_set_error(err, LOOM_ENOMEM, "workload: out of memory");
        w->iterations = it;
        b->iterations_cap = cap;
    }
    loom_iteration *it = &w->iterations[w->n_iterations++];
    memset(it, 0, sizeof *it);
    it->index = index;
    return LOOM_OK;
}

int loom_wb_add_sample(loom_workload_builder *b, const loom_sample *s, loom_error *err)
{
    loom_workload *w = b->w;
    loom_iteration *it = &w->iterations[w->n_iterations - 1];
    if (it->n_samples >= LOOM_MAX_SAMPLES_PER_ITERATION)
        return loom_set_error(err, LOOM_EINVAL,
                              "workload: iteration %d: expected at most %d samples, found more",
                              (int)it->index, LOOM_MAX_SAMPLES_PER_ITERATION);
    if (w->n_samples >= LOOM_MAX_SAMPLES_TOTAL)
        return loom_set_error(err, LOOM_EINVAL,
                              "workload: expected at most %d samples in total, found more",
                              LOOM_MAX_SAMPLES_TOTAL);
    if (w->n_samples == b->samples_cap) {
        int64_t cap = b->samples_cap ? 2 * b->samples_cap : 1024;
        if (cap > LOOM_MAX_SAMPLES_TOTAL)
            cap = LOOM_MAX_SAMPLES_TOTAL;
        loom_sample *ns = realloc(w->samples, (size_t)cap * sizeof *ns);
        if (!ns)
            return loom_set_error(err, LOOM_ENOMEM, "workload: out of memory");
        w->samples = ns;
        b->samples_cap = cap;
    }
    w->samples[w->n_samples++] = *s;
    it->n_samples++;
    return LOOM_OK;
}

void loom_wb_finish(loom_workload_builder *b, loom_workload **out)
{
    loom_workload *w = b->w;
    int64_t at = 0;
    for (int32_t i = 0; i < w->n_iterations; i++) {
        w->iterations[i].samples = w->samples + at;
        at += w->iterations[i].n_samples;
    }
    *out = w;
    b->w = NULL;
}

void loom_wb_abort(loom_workload_builder *b)
{
    loom_workload_free(b->w);
    b->w = NULL;
}

/* Rejects a field given twice in `obj` (whose keys all appear in `keys`,
 * at most 8 of them); linear in the number of members. */
static int check_unique(const char *where, const cJSON *obj, const char *path,
                        const char *const *keys, loom_error *err)
{
    int seen[8] = {0};
    for (const cJSON *m = obj->child; m; m = m->next) {
        for (int i = 0; keys[i] && i < 8; i++) {
            if (!m->string || strcmp(m->string, keys[i]) != 0)
                continue;
            if (seen[i]++)
                return loom_set_error(err, LOOM_EINVAL,
                                      "%s: %s%sexpected unique field names, found \"%s\" twice",
                                      where, path, *path ? ": " : "", keys[i]);
        }
    }
    return LOOM_OK;
}

int loom_sample_validate(const char *where, const char *path, const loom_sample *s,
                         loom_error *err)
{
    const char *w = where ? where : "sample";
    if (!s)
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected a sample, found nothing", w,
                              path);
    if (s->text_tokens < 0 || s->text_tokens > LOOM_MAX_SAMPLE_TEXT_TOKENS)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.text_tokens: expected an integer in [0, %lld], found %lld",
                              w, path, (long long)LOOM_MAX_SAMPLE_TEXT_TOKENS,
                              (long long)s->text_tokens);
    if (s->images < 0 || s->images > LOOM_MAX_SAMPLE_IMAGES)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.images: expected an integer in [0, %d], found %d", w, path,
                              LOOM_MAX_SAMPLE_IMAGES, (int)s->images);
    const double secs[2] = {s->video_seconds, s->audio_seconds};
    static const char *const names[2] = {"video_seconds", "audio_seconds"};
    for (int k = 0; k < 2; k++)
        if (!(secs[k] >= 0 && secs[k] <= LOOM_MAX_SAMPLE_SECONDS))
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s.%s: expected a number in [0, %.15g], found %.15g", w,
                                  path, names[k], LOOM_MAX_SAMPLE_SECONDS, secs[k]);
    if (s->microbatch < -1 || s->microbatch > LOOM_MAX_PARALLEL_DEGREE - 1)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.microbatch: expected an integer in [-1, %d], found %d", w,
                              path, LOOM_MAX_PARALLEL_DEGREE - 1, (int)s->microbatch);
    if (s->text_tokens == 0 && s->images == 0 && s->video_seconds == 0 && s->audio_seconds == 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected a sample with text tokens, images, video or "
                              "audio, found an empty sample", w, path);
    return LOOM_OK;
}

/* The packing rule of one iteration: sample i names its microbatch exactly
 * when samples[0] does. */
static int check_packing(const char *where, const char *path, const loom_sample *first,
                         const loom_sample *s, loom_error *err)
{
    int with_mb = first->microbatch >= 0;
    if (with_mb == (s->microbatch >= 0))
        return LOOM_OK;
    return loom_set_error(err, LOOM_EINVAL,
                          "%s: %s.microbatch: expected %s like samples[0], found %s",
                          where, path, with_mb ? "a microbatch index" : "no microbatch",
                          with_mb ? "none" : "one");
}

int loom_samples_validate(const char *where, const loom_sample *samples, int32_t n,
                          loom_error *err)
{
    const char *w = where ? where : "samples";
    if (!samples || n < 1 || n > LOOM_MAX_SAMPLES_PER_ITERATION)
        return loom_set_error(err, LOOM_EINVAL, "%s: expected 1 to %d samples, found %d", w,
                              LOOM_MAX_SAMPLES_PER_ITERATION, samples ? (int)n : 0);
    char path[64];
    for (int32_t i = 0; i < n; i++) {
        loom_json_path_index(path, sizeof path, "samples", (int)i);
        int rc = loom_sample_validate(w, path, &samples[i], err);
        if (rc == LOOM_OK)
            rc = check_packing(w, path, &samples[0], &samples[i], err);
        if (rc != LOOM_OK)
            return rc;
    }
    return LOOM_OK;
}

/* Parses samples[i] of one line (`where` = "file:LINE"). */
static int parse_sample(const char *where, const cJSON *obj, const char *path,
                        loom_sample *s, loom_error *err)
{
    static const char *const keys[] = {"text_tokens", "images", "video_seconds",
                                       "audio_seconds", "microbatch", NULL};
    char found[80];
    int64_t text = 0, images = 0, mb = -1;
    double video = 0, audio = 0;
    if (!cJSON_IsObject(obj))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected a sample object, found %s",
                              where, path, loom_json_describe(obj, found, sizeof found));
    int rc = loom_json_check_keys(where, obj, path, keys, err);
    if (!rc)
        rc = check_unique(where, obj, path, keys, err);
    if (!rc)
        rc = loom_json_get_int(where, obj, path, "text_tokens", 1, 0,
                               LOOM_MAX_SAMPLE_TEXT_TOKENS, &text, err);
    if (!rc)
        rc = loom_json_get_int(where, obj, path, "images", 0, 0, LOOM_MAX_SAMPLE_IMAGES, &images,
                               err);
    if (!rc)
        rc = loom_json_get_double(where, obj, path, "video_seconds", 0, 0.0,
                                  LOOM_MAX_SAMPLE_SECONDS, &video, err);
    if (!rc)
        rc = loom_json_get_double(where, obj, path, "audio_seconds", 0, 0.0,
                                  LOOM_MAX_SAMPLE_SECONDS, &audio, err);
    if (!rc)
        rc = loom_json_get_int(where, obj, path, "microbatch", 0, -1,
                               LOOM_MAX_PARALLEL_DEGREE - 1, &mb, err);
    if (rc)
        return rc;
    memset(s, 0, sizeof *s);
    s->text_tokens = text;
    s->images = (int32_t)images;
    s->video_seconds = video;
    s->audio_seconds = audio;
    s->microbatch = (int32_t)mb;
    /* the rules the C API's samples pass too (the types and ranges above
     * are the same ones, read from JSON) */
    return loom_sample_validate(where, path, s, err);
}

/* Parses one JSON line into a new iteration of the builder. */
static int parse_line(const char *where, const cJSON *root, int32_t default_index,
                      loom_workload_builder *b, loom_error *err)
{
    static const char *const keys[] = {"iteration", "samples", NULL};
    char found[80], path[64];
    const cJSON *samples = NULL;
    int64_t index = default_index;
    if (!cJSON_IsObject(root))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: expected an iteration object {\"iteration\": ..., "
                              "\"samples\": [...]}, found %s", where,
                              loom_json_describe(root, found, sizeof found));
    int rc = loom_json_check_keys(where, root, "", keys, err);
    if (!rc)
        rc = check_unique(where, root, "", keys, err);
    if (!rc)
        rc = loom_json_get_int(where, root, "", "iteration", 0, 0, INT32_MAX, &index, err);
    if (!rc)
        rc = loom_json_get_array(where, root, "", "samples", 1, &samples, err);
    if (rc)
        return rc;
    int n = cJSON_GetArraySize(samples);
    if (n < 1)
        return loom_set_error(err, LOOM_EINVAL, "%s: samples: expected at least one sample, "
                              "found none", where);
    if (n > LOOM_MAX_SAMPLES_PER_ITERATION)
        return loom_set_error(err, LOOM_EINVAL, "%s: samples: expected at most %d samples, "
                              "found %d", where, LOOM_MAX_SAMPLES_PER_ITERATION, n);
    rc = loom_wb_begin_iteration(b, (int32_t)index, err);
    int i = 0;
    loom_sample first = {0};
    for (const cJSON *s = samples->child; s && !rc; s = s->next, i++) {
        loom_sample smp = {0};
        loom_json_path_index(path, sizeof path, "samples", i);
        rc = parse_sample(where, s, path, &smp, err);
        if (rc)
            break;
        if (i == 0)
            first = smp;
        else if ((rc = check_packing(where, path, &first, &smp, err)) != LOOM_OK)
            return rc;
        rc = loom_wb_add_sample(b, &smp, err);
        if (rc)
            return loom_error_prefix(err, rc, where);
    }
    return rc;
}

/* Reports a JSON syntax error inside one line: "file:LINE:COL: ...". */
static int syntax_error(const char *path, int line, const char *text, size_t len,
                        const char *end, loom_error *err)
{
    size_t pos = (end && end >= text && end <= text + len) ? (size_t)(end - text) : len;
    if (pos >= len)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s:%d:%zu: malformed JSON: unexpected end of line", path, line,
                              pos + 1);
    unsigned char c = (unsigned char)text[pos];
    if (c >= 0x20 && c < 0x7f)
        return loom_set_error(err, LOOM_EINVAL, "%s:%d:%zu: malformed JSON: unexpected '%c'",
                              path, line, pos + 1, c);
    return loom_set_error(err, LOOM_EINVAL, "%s:%d:%zu: malformed JSON: unexpected byte 0x%02x",
                          path, line, pos + 1, c);
}

/* Parses one non-blank line `text[0..len)` (text[len] writable). */
static int load_line(const char *path, int line, char *text, size_t len,
                     loom_workload_builder *b, loom_error *err)
{
    char where[320];
    snprintf(where, sizeof where, "%.300s:%d", path, line);
    if (memchr(text, 0, len))
        return loom_set_error(err, LOOM_EINVAL, "%s: malformed JSON: unexpected NUL byte",
                              where);
    char saved = text[len];
    text[len] = 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
    text[len] = saved;
    if (!root)
        return syntax_error(path, line, text, len, end, err);
    int rc = parse_line(where, root, b->w->n_iterations, b, err);
    cJSON_Delete(root);
    return rc;
}

int loom_workload_parse(const char *name, char *text, size_t len, loom_workload **out,
                        loom_error *err)
{
    loom_workload_builder b;
    *out = NULL;
    int rc = loom_wb_init(&b, err);
    int line = 0;
    for (size_t at = 0; !rc && at < len;) {
        char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t n = end - at;
        line++;
        if (n && text[at + n - 1] == '\r')
            n--;
        if (strspn(text + at, " \t\r") < n)
            rc = load_line(name, line, text + at, n, &b, err);
        at = end + 1;
    }
    if (!rc && b.w->n_iterations == 0)
        rc = loom_set_error(err, LOOM_EINVAL, "%s: expected at least one iteration (one JSON "
                            "object per line), found none", name);
    if (rc) {
        loom_wb_abort(&b);
        return rc;
    }
    loom_wb_finish(&b, out);
    return LOOM_OK;
}

int loom_workload_load(const char *path, loom_workload **out, loom_error *err)
{
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    int rc = loom_read_file(path, &text, &len, err);
    if (rc)
        return rc;
    rc = loom_workload_parse(path, text, len, out, err);
    free(text);
    return rc;
}

/* Writes `v` with the fewest digits that read back to the same double. */
static int put_double(FILE *out, double v)
{
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return fputs(buf, out) < 0 ? -1 : 0;
}

/* Writes one sample object. */
static int put_sample(FILE *out, const loom_sample *s, int first)
{
    int bad = fprintf(out, "%s{\"text_tokens\": %lld, \"images\": %d", first ? "" : ", ",
                      (long long)s->text_tokens, (int)s->images) < 0;
    if (s->video_seconds != 0 || signbit(s->video_seconds)) {
        bad |= fputs(", \"video_seconds\": ", out) < 0;
        bad |= put_double(out, s->video_seconds);
    }
    if (s->audio_seconds != 0 || signbit(s->audio_seconds)) {
        bad |= fputs(", \"audio_seconds\": ", out) < 0;
        bad |= put_double(out, s->audio_seconds);
    }
    if (s->microbatch >= 0)
        bad |= fprintf(out, ", \"microbatch\": %d", (int)s->microbatch) < 0;
    bad |= fputc('}', out) == EOF;
    return bad ? -1 : 0;
}

int loom_workload_write(const loom_workload *w, FILE *out, loom_error *err)
{
    int bad = 0;
    for (int32_t i = 0; i < w->n_iterations && !bad; i++) {
        const loom_iteration *it = &w->iterations[i];
        bad |= fprintf(out, "{\"iteration\": %d, \"samples\": [", (int)it->index) < 0;
        for (int32_t k = 0; k < it->n_samples && !bad; k++)
            bad |= put_sample(out, &it->samples[k], k == 0);
        bad |= fputs("]}\n", out) < 0;
    }
    if (bad || ferror(out))
        return loom_set_error(err, LOOM_EIO, "workload: writing JSON Lines failed");
    return LOOM_OK;
}
