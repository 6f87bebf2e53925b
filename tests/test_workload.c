/* test_workload.c - workload JSON Lines (reading, errors with line numbers,
 * writing and the round trip), the seeded generator (determinism and the
 * properties of every family) and `loom workload generate`. */
#include <dirent.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <loom/sys/json.h>
#include <loom/sys/problem.h>
#include "problem_inputs.h"
#include "testutil.h"

/* Writes w as JSON Lines into a malloc'd string. */
static char *to_jsonl(const loom_workload *w)
{
    char *buf = NULL;
    size_t len = 0;
    loom_error e;
    memset(&e, 0, sizeof e);
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(loom_workload_write(w, f, &e), LOOM_OK);
    fclose(f);
    return buf;
}

/* Generates a workload that must generate. */
static loom_workload *gen(const char *family, int32_t iterations, int32_t mb, uint64_t seed)
{
    loom_error e;
    loom_workload *w = NULL;
    memset(&e, 0, sizeof e);
    int rc = loom_workload_generate(family, iterations, mb, seed, &w, &e);
    ck_assert_msg(rc == LOOM_OK, "%s: %s", family, e.message);
    ck_assert_int_eq(w->n_iterations, iterations);
    return w;
}

/* Loads a workload file that must load. */
static loom_workload *must_load(const char *path)
{
    loom_error e;
    loom_workload *w = NULL;
    memset(&e, 0, sizeof e);
    int rc = loom_workload_load(path, &w, &e);
    ck_assert_msg(rc == LOOM_OK, "%s: %s", path, e.message);
    return w;
}

/* Asserts that JSONL `text` fails with EINVAL; `frag` follows the file name. */
static void expect_error(const char *text, const char *frag)
{
    loom_error e;
    loom_workload *w = NULL;
    memset(&e, 0, sizeof e);
    const char *path = loom_test_tmpfile(".jsonl", text);
    ck_assert_int_eq(loom_workload_load(path, &w, &e), LOOM_EINVAL);
    ck_assert_ptr_null(w);
    char want[1024];
    snprintf(want, sizeof want, "%s%s", path, frag);
    ck_assert_msg(strstr(e.message, want) != NULL, "message \"%s\" lacks \"%s\"", e.message,
                  want);
}

/* Asserts two workloads are identical (doubles bit for bit). */
static void workload_eq(const loom_workload *a, const loom_workload *b)
{
    ck_assert_int_eq(a->n_iterations, b->n_iterations);
    ck_assert_int_eq(a->n_samples, b->n_samples);
    for (int32_t i = 0; i < a->n_iterations; i++) {
        const loom_iteration *x = &a->iterations[i], *y = &b->iterations[i];
        ck_assert_int_eq(x->index, y->index);
        ck_assert_int_eq(x->n_samples, y->n_samples);
        for (int32_t k = 0; k < x->n_samples; k++) {
            const loom_sample *p = &x->samples[k], *q = &y->samples[k];
            ck_assert_int_eq(p->text_tokens, q->text_tokens);
            ck_assert_int_eq(p->images, q->images);
            ck_assert_int_eq(p->microbatch, q->microbatch);
            ck_assert_int_eq(memcmp(&p->video_seconds, &q->video_seconds, sizeof(double)), 0);
            ck_assert_int_eq(memcmp(&p->audio_seconds, &q->audio_seconds, sizeof(double)), 0);
        }
    }
}

/* ---- reading ---------------------------------------------------------------- */

START_TEST(test_load_small_example)
{
    loom_workload *w = must_load(loom_test_src("examples/workloads/small.jsonl"));
    ck_assert_int_eq(w->n_iterations, 3);
    ck_assert_int_eq(w->n_samples, 7);
    const loom_iteration *it = w->iterations;
    ck_assert_int_eq(it[0].index, 0);
    ck_assert_int_eq(it[0].n_samples, 3);
    ck_assert_int_eq(it[0].samples[0].text_tokens, 812);
    ck_assert_int_eq(it[0].samples[0].images, 3);
    ck_assert_int_eq(it[0].samples[0].microbatch, -1); /* absent */
    ck_assert_double_eq(it[0].samples[0].video_seconds, 0.0);
    ck_assert_int_eq(it[0].samples[2].images, 0);
    ck_assert_int_eq(it[1].index, 1);
    ck_assert_double_eq(it[1].samples[0].video_seconds, 4.5);
    ck_assert_double_eq(it[1].samples[1].audio_seconds, 12.25);
    ck_assert_int_eq(it[2].index, 2); /* absent: position among iterations */
    ck_assert_int_eq(it[2].samples[1].microbatch, 1);
    ck_assert_int_eq(it[2].samples[1].text_tokens, 6000);
    ck_assert_ptr_eq(it[1].samples, w->samples + 3);
    loom_workload_free(w);
}
END_TEST

/* Generated examples and the arguments that reproduce them. */
static const struct {
    const char *file, *family;
    int32_t iterations, microbatches;
} generated[] = {
    {"examples/workloads/interleaved.jsonl", "interleaved", 8, 16},
    {"examples/workloads/rise-and-fall.jsonl", "rise-and-fall", 40, 16},
    {"examples/workloads/video.jsonl", "video", 8, 16},
    {"examples/workloads/image-pairs.jsonl", "image-pairs", 2, 16},
    {"examples/workloads/text.jsonl", "text", 4, 16},
};
#define N_GENERATED ((int)(sizeof generated / sizeof generated[0]))

START_TEST(test_examples_regenerate)
{
    for (int i = 0; i < N_GENERATED; i++) {
        char *file = NULL;
        loom_error e;
        memset(&e, 0, sizeof e);
        ck_assert_int_eq(loom_read_file(loom_test_src(generated[i].file), &file, NULL, &e),
                         LOOM_OK);
        loom_workload *w = gen(generated[i].family, generated[i].iterations,
                               generated[i].microbatches, 1);
        char *text = to_jsonl(w);
        ck_assert_msg(strcmp(text, file) == 0, "%s differs from its generator", generated[i].file);
        loom_workload *l = must_load(loom_test_src(generated[i].file));
        workload_eq(w, l);
        free(text);
        free(file);
        loom_workload_free(w);
        loom_workload_free(l);
    }
}
END_TEST

START_TEST(test_blank_lines_and_crlf)
{
    const char *path = loom_test_tmpfile(".jsonl",
        "\n   \n{\"iteration\": 5, \"samples\": [{\"text_tokens\": 3}]}\r\n\r\n\t\n"
        "{\"samples\": [{\"text_tokens\": 0, \"images\": 2}]}");
    loom_workload *w = must_load(path);
    ck_assert_int_eq(w->n_iterations, 2);
    ck_assert_int_eq(w->iterations[0].index, 5);
    ck_assert_int_eq(w->iterations[1].index, 1);
    ck_assert_int_eq(w->iterations[1].samples[0].images, 2);
    loom_workload_free(w);
}
END_TEST

#define OK_LINE "{\"samples\": [{\"text_tokens\": 1}]}\n"

START_TEST(test_load_errors)
{
    expect_error(OK_LINE "\n{\"samples\": [{\"text_tokens\": 1}, {\"text_tokens\": 1}, "
                 "{\"text_tokens\": 1}, {\"text_tokens\": 5, \"images\": -2}]}\n",
                 ":3: samples[3].images: expected an integer in [0, 1048576], found -2");
    expect_error(OK_LINE OK_LINE "{\"iteration\": 2, \"samples\": []}\n",
                 ":3: samples: expected at least one sample, found none");
    expect_error(OK_LINE "{\"samples\": [}\n", ":2:14: malformed JSON: unexpected '}'");
    expect_error(OK_LINE "{\"samples\": [\n", ":2:14: malformed JSON: unexpected end of line");
    expect_error(OK_LINE "{\"samples\": [{\"text_tokens\": 1}]} x\n",
                 ":2:35: malformed JSON: unexpected 'x'");
    expect_error("{\"samples\": [{\"text_tokens\": 1, \"image\": 2}]}",
                 ":1: samples[0]: unknown field \"image\"");
    expect_error("{\"iter\": 0, \"samples\": [{\"text_tokens\": 1}]}", ":1: unknown field \"iter\"");
    expect_error("{\"samples\": [{\"images\": 1}]}",
                 ":1: samples[0].text_tokens: expected an integer in [0, 4294967296], found "
                 "nothing (missing field)");
    expect_error("{\"samples\": [{\"text_tokens\": 2.5}]}",
                 ":1: samples[0].text_tokens: expected an integer in [0, 4294967296], found 2.5");
    expect_error("{\"samples\": [{\"text_tokens\": 0}]}",
                 ":1: samples[0]: expected a sample with text tokens, images, video or audio, "
                 "found an empty sample");
    expect_error("{\"samples\": [{\"text_tokens\": 1, \"microbatch\": 0}, {\"text_tokens\": 1}]}",
                 ":1: samples[1].microbatch: expected a microbatch index like samples[0], "
                 "found none");
    expect_error("{\"samples\": [{\"text_tokens\": 1}, {\"text_tokens\": 1, \"microbatch\": 0}]}",
                 ":1: samples[1].microbatch: expected no microbatch like samples[0], found one");
    expect_error("{\"samples\": [{\"text_tokens\": 1, \"microbatch\": 65536}]}",
                 ":1: samples[0].microbatch: expected an integer in [-1, 65535], found 65536");
    expect_error("{\"samples\": [{\"text_tokens\": 1, \"images\": 1, \"images\": 2}]}",
                 ":1: samples[0]: expected unique field names, found \"images\" twice");
    expect_error("{\"samples\": [{\"text_tokens\": 1}], \"samples\": []}",
                 ":1: expected unique field names, found \"samples\" twice");
    expect_error("[1, 2]", ":1: expected an iteration object");
    expect_error("{\"samples\": [3]}", ":1: samples[0]: expected a sample object, found 3");
    expect_error("{\"samples\": {}}", ":1: samples: expected an array, found an object");
    expect_error("{\"iteration\": -1, \"samples\": [{\"text_tokens\": 1}]}",
                 ":1: iteration: expected an integer in [0, 2147483647], found -1");
    expect_error("{\"samples\": [{\"text_tokens\": 1, \"video_seconds\": -0.5}]}",
                 ":1: samples[0].video_seconds: expected a number in [0, 1000000], found -0.5");
    expect_error("{\"samples\": [{\"text_tokens\": 1, \"audio_seconds\": 1e999}]}",
                 ":1: samples[0].audio_seconds: expected a number in [0, 1000000]");
    expect_error("{\"samples\": [{\"text_tokens\": 1, \"video_seconds\": \"4\"}]}",
                 ":1: samples[0].video_seconds: expected a number in [0, 1000000], found \"4\"");
    expect_error("", ": expected at least one iteration");
    expect_error("\n \n", ": expected at least one iteration");
}
END_TEST

START_TEST(test_load_missing_file)
{
    loom_error e;
    loom_workload *w = NULL;
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_workload_load("/nonexistent/w.jsonl", &w, &e), LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(e.message, "/nonexistent/w.jsonl: cannot open"));
}
END_TEST

/* ---- writing ---------------------------------------------------------------- */

START_TEST(test_round_trip)
{
    const char *const *fam = loom_workload_family_names();
    for (int f = 0; fam[f]; f++) {
        loom_workload *w = gen(fam[f], 3, 5, 11);
        char *text = to_jsonl(w);
        loom_workload *l = must_load(loom_test_tmpfile(".jsonl", text));
        workload_eq(w, l);
        char *again = to_jsonl(l);
        ck_assert_str_eq(text, again);
        free(text);
        free(again);
        loom_workload_free(w);
        loom_workload_free(l);
    }

    /* Awkward doubles and mixed microbatch use survive bit for bit. */
    loom_sample s[4];
    memset(s, 0, sizeof s);
    s[0] = (loom_sample){7, 0, -1, 0.1, 1.0 / 3.0};
    s[1] = (loom_sample){0, 0, -1, 1e-300, 0};
    s[2] = (loom_sample){4096, 48, 3, 123456.789, 999999.99999999988};
    s[3] = (loom_sample){1, 1, 0, 0, 2.0 / 7.0};
    loom_iteration its[2] = {{9, 2, s}, {2147483647, 2, s + 2}};
    loom_workload w = {2, its, 4, s};
    char *text = to_jsonl(&w);
    loom_workload *l = must_load(loom_test_tmpfile(".jsonl", text));
    workload_eq(&w, l);
    free(text);
    loom_workload_free(l);
}
END_TEST

START_TEST(test_write_error)
{
    loom_workload *w = gen("text", 1, 1, 1);
    FILE *f = fopen("/dev/full", "w");
    if (f) {
        loom_error e;
        memset(&e, 0, sizeof e);
        setvbuf(f, NULL, _IONBF, 0);
        ck_assert_int_eq(loom_workload_write(w, f, &e), LOOM_EIO);
        ck_assert_ptr_nonnull(strstr(e.message, "writing JSON Lines failed"));
        fclose(f);
    }
    loom_workload_free(w);
}
END_TEST

/* ---- generator ---------------------------------------------------------------- */

START_TEST(test_generate_arguments)
{
    loom_error e;
    loom_workload *w = NULL;
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_workload_generate("laion", 1, 1, 1, &w, &e), LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(e.message, "expected one of image-pairs, interleaved, video, "
                                            "rise-and-fall, text, found \"laion\""));
    ck_assert_int_eq(loom_workload_generate(NULL, 1, 1, 1, &w, &e), LOOM_ENOTFOUND);
    ck_assert_int_eq(loom_workload_generate("text", 0, 1, 1, &w, &e), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.message, "iterations: expected an integer in [1, 100000], found 0"));
    ck_assert_int_eq(loom_workload_generate("text", 100001, 1, 1, &w, &e), LOOM_EINVAL);
    ck_assert_int_eq(loom_workload_generate("text", 1, 65537, 1, &w, &e), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.message, "microbatches: expected an integer in [1, 65536], "
                                            "found 65537"));
    /* about 44 pairs per microbatch: more than a million samples in one iteration */
    ck_assert_int_eq(loom_workload_generate("image-pairs", 1, 65536, 1, &w, &e), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.message, "workload generate (image-pairs, 1 iterations of "
                                            "65536 microbatches): workload: iteration 0: "
                                            "expected at most 1000000 samples"));
    ck_assert_ptr_null(w);
}
END_TEST

START_TEST(test_determinism)
{
    const char *const *fam = loom_workload_family_names();
    int n = 0;
    for (int f = 0; fam[f]; f++, n++) {
        loom_workload *a = gen(fam[f], 4, 8, 42), *b = gen(fam[f], 4, 8, 42);
        loom_workload *c = gen(fam[f], 4, 8, 43);
        char *ta = to_jsonl(a), *tb = to_jsonl(b), *tc = to_jsonl(c);
        ck_assert_str_eq(ta, tb);
        ck_assert_msg(strcmp(ta, tc) != 0, "%s: seeds 42 and 43 give the same workload", fam[f]);
        free(ta);
        free(tb);
        free(tc);
        loom_workload_free(a);
        loom_workload_free(b);
        loom_workload_free(c);
    }
    ck_assert_int_eq(n, 5);
}
END_TEST

/* Per-microbatch totals of one iteration. */
typedef struct mb_stats {
    int64_t tokens, images, frames, clips, samples;
    const loom_sample *first;
} mb_stats;

/* Sums the samples of `it` per microbatch (0..m-1), an image counting
 * `image` tokens, after checking that samples are ordered by microbatch
 * and every microbatch is non-empty. */
static void collect(const loom_iteration *it, int32_t m, int64_t image, mb_stats *st)
{
    memset(st, 0, (size_t)m * sizeof *st);
    int32_t prev = 0;
    for (int32_t k = 0; k < it->n_samples; k++) {
        const loom_sample *s = &it->samples[k];
        ck_assert_int_ge(s->microbatch, prev);
        ck_assert_int_lt(s->microbatch, m);
        prev = s->microbatch;
        mb_stats *x = &st[s->microbatch];
        if (!x->first)
            x->first = s;
        x->tokens += s->text_tokens + image * (int64_t)s->images;
        x->images += s->images;
        x->frames += (int64_t)(s->video_seconds * 16);
        x->clips += s->video_seconds > 0;
        x->samples++;
    }
    for (int32_t i = 0; i < m; i++)
        ck_assert_int_ge(st[i].samples, 1);
}

/* Checks the packing limits of every microbatch (sequences of `seq`
 * tokens, `image` per image, at most (seq - 1) / image images) and that
 * each microbatch was closed only because the next sample in the stream
 * did not fit. */
static void check_packing_of(const loom_workload *w, int32_t m, int64_t seq, int64_t image)
{
    mb_stats st[64];
    mb_stats prev = {0};
    int have_prev = 0;
    int64_t max_images = (seq - 1) / image;
    ck_assert_int_le(m, 64);
    for (int32_t i = 0; i < w->n_iterations; i++) {
        ck_assert_int_eq(w->iterations[i].index, i);
        collect(&w->iterations[i], m, image, st);
        for (int32_t k = 0; k < m; k++) {
            ck_assert_int_le(st[k].tokens, seq);
            ck_assert_int_le(st[k].images, max_images);
            ck_assert_int_le(st[k].frames, 256);
            ck_assert_int_le(st[k].clips, 8);
            if (have_prev) {
                const loom_sample *s = st[k].first;
                int fits = prev.tokens + s->text_tokens + image * (int64_t)s->images <= seq &&
                           prev.images + s->images <= max_images &&
                           prev.frames + (int64_t)(s->video_seconds * 16) <= 256 &&
                           prev.clips + (s->video_seconds > 0) <= 8;
                ck_assert_msg(!fits, "iteration %d microbatch %d: its first sample would have "
                              "fit the previous microbatch", (int)i, (int)k);
            }
            prev = st[k];
            have_prev = 1;
        }
    }
}

/* check_packing_of with the default packing: 8192 tokens, 169 per image. */
static void check_packing(const loom_workload *w, int32_t m)
{
    check_packing_of(w, m, 8192, 169);
}

START_TEST(test_family_image_pairs)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        loom_workload *w = gen("image-pairs", 3, 16, seed);
        check_packing(w, 16);
        int64_t text = 0;
        for (int64_t k = 0; k < w->n_samples; k++) {
            ck_assert_int_eq(w->samples[k].images, 1);
            ck_assert_int_ge(w->samples[k].text_tokens, 6);
            ck_assert_int_le(w->samples[k].text_tokens, 26);
            text += w->samples[k].text_tokens;
        }
        /* LAION-like: about 16 caption tokens per image */
        ck_assert_int_le(text, 17 * w->n_samples);
        ck_assert_int_ge(text, 15 * w->n_samples);
        loom_workload_free(w);
    }
}
END_TEST

START_TEST(test_family_interleaved)
{
    loom_workload *w = gen("interleaved", 20, 16, 3);
    check_packing(w, 16);
    int none = 0, many = 0;
    double lo = 1e9, hi = 0;
    for (int64_t k = 0; k < w->n_samples; k++) {
        const loom_sample *s = &w->samples[k];
        ck_assert_int_ge(s->text_tokens, 1);
        ck_assert_double_eq(s->video_seconds, 0);
        none += s->images == 0;
        many += s->images >= 13;
        if (s->images > 0) {
            double r = (double)s->text_tokens / s->images;
            lo = r < lo ? r : lo;
            hi = r > hi ? r : hi;
        }
    }
    ck_assert_int_gt(none, w->n_samples / 10); /* many documents without images */
    ck_assert_int_gt(many, 0);                 /* and some with many */
    ck_assert_double_lt(lo, 2.0);              /* OBELICS spans 0.4 .. 3115 tokens/image */
    ck_assert_double_gt(hi, 1000.0);
    ck_assert_double_le(hi, 3115.0);
    loom_workload_free(w);
}
END_TEST

START_TEST(test_family_video)
{
    loom_workload *w = gen("video", 6, 16, 5);
    check_packing(w, 16);
    for (int64_t k = 0; k < w->n_samples; k++) {
        const loom_sample *s = &w->samples[k];
        ck_assert_double_ge(s->video_seconds, 1.0);
        ck_assert_double_le(s->video_seconds, 16.0);
        double frames = s->video_seconds * 16;
        ck_assert_double_eq(frames, (double)(int64_t)frames); /* whole frames at 16 FPS */
        ck_assert_int_ge(s->text_tokens, 20);
        ck_assert_int_le(s->text_tokens, 120);
        ck_assert_int_eq(s->images, 0);
    }
    loom_workload_free(w);
}
END_TEST

START_TEST(test_family_rise_and_fall)
{
    /* §8.1: iterations 1-5 raise the lower bound 0..16 under an upper bound
     * of 32; iterations 6-20 lower both bounds linearly to 0 (rounded). */
    static const int bounds[20][2] = {
        {0, 32}, {4, 32}, {8, 32}, {12, 32}, {16, 32}, {15, 30}, {14, 28}, {13, 26},
        {12, 23}, {11, 21}, {10, 19}, {9, 17}, {7, 15}, {6, 13}, {5, 11}, {4, 9},
        {3, 6}, {2, 4}, {1, 2}, {0, 0}};
    loom_workload *w = gen("rise-and-fall", 40, 16, 7);
    for (int32_t i = 0; i < 40; i++) {
        const loom_iteration *it = &w->iterations[i];
        ck_assert_int_eq(it->index, i);
        ck_assert_int_eq(it->n_samples, 16);
        for (int32_t k = 0; k < 16; k++) {
            const loom_sample *s = &it->samples[k];
            ck_assert_int_eq(s->microbatch, k);
            ck_assert_int_ge(s->images, bounds[i % 20][0]);
            ck_assert_int_le(s->images, bounds[i % 20][1]);
            ck_assert_int_eq(s->text_tokens + 169 * (int64_t)s->images, 8192);
        }
    }
    loom_workload_free(w);
}
END_TEST

START_TEST(test_family_text)
{
    loom_workload *w = gen("text", 4, 8, 9);
    check_packing(w, 8);
    for (int64_t k = 0; k < w->n_samples; k++) {
        ck_assert_int_eq(w->samples[k].images, 0);
        ck_assert_double_eq(w->samples[k].video_seconds, 0);
        ck_assert_int_ge(w->samples[k].text_tokens, 16);
    }
    loom_workload_free(w);
}
END_TEST

/* Generates with an explicit packing; the workload must generate. */
static loom_workload *gen_windowed(const char *family, int32_t iterations, int32_t mb,
                                   int64_t seq, int64_t image, int32_t window)
{
    loom_error e;
    loom_workload *w = NULL;
    memset(&e, 0, sizeof e);
    loom_workload_packing pk = {sizeof pk, seq, image, window, 0};
    int rc = loom_workload_generate_packed(family, iterations, mb, 5, &pk, &w, &e);
    ck_assert_msg(rc == LOOM_OK, "%s: %s", family, e.message);
    return w;
}

/* gen_windowed with next-fit packing (the default window). */
static loom_workload *gen_packed(const char *family, int32_t iterations, int32_t mb,
                                 int64_t seq, int64_t image)
{
    return gen_windowed(family, iterations, mb, seq, image, 0);
}

/* Mean sequence fill (text + image tokens over seq) and the smallest
 * microbatch's tokens of w (m microbatches an iteration). */
static double fill_of(const loom_workload *w, int32_t m, int64_t seq, int64_t image,
                      int64_t *smallest)
{
    mb_stats st[64];
    double sum = 0.0;
    *smallest = seq;
    for (int32_t i = 0; i < w->n_iterations; i++) {
        collect(&w->iterations[i], m, image, st);
        for (int32_t k = 0; k < m; k++) {
            sum += (double)st[k].tokens;
            *smallest = st[k].tokens < *smallest ? st[k].tokens : *smallest;
        }
    }
    return sum / ((double)w->n_iterations * m * (double)seq);
}

START_TEST(test_packing_window)
{
    /* a window of 0 or 1 is next-fit, the default: the same bytes */
    loom_workload *a = gen("interleaved", 3, 8, 5);
    char *ta = to_jsonl(a);
    for (int32_t win = 0; win <= 1; win++) {
        loom_workload *b = gen_windowed("interleaved", 3, 8, 8192, 169, win);
        char *tb = to_jsonl(b);
        ck_assert_str_eq(ta, tb);
        free(tb);
        loom_workload_free(b);
    }
    free(ta);
    loom_workload_free(a);

    /* documents of 1024-token images often leave a sequence nearly empty
     * under next-fit; first-fit over 3 samples drawn ahead fills them, and
     * every limit and the rule "a microbatch closes only on a sample that
     * does not fit" still hold */
    int64_t small1 = 0, small3 = 0;
    loom_workload *w1 = gen_windowed("interleaved", 10, 40, 8192, 1024, 1);
    loom_workload *w3 = gen_windowed("interleaved", 10, 40, 8192, 1024, 3);
    check_packing_of(w1, 40, 8192, 1024);
    check_packing_of(w3, 40, 8192, 1024);
    double fill1 = fill_of(w1, 40, 8192, 1024, &small1);
    double fill3 = fill_of(w3, 40, 8192, 1024, &small3);
    ck_assert_msg(fill1 < 0.8 && fill3 > fill1 + 0.1, "fill %.3f next-fit, %.3f window 3", fill1,
                  fill3);
    ck_assert_msg(small1 < 100 && small3 > 1000, "smallest %lld next-fit, %lld window 3",
                  (long long)small1, (long long)small3);
    loom_workload_free(w1);
    loom_workload_free(w3);

    /* out of range: named, with the range */
    loom_error e;
    memset(&e, 0, sizeof e);
    loom_workload_packing bad = {sizeof bad, 8192, 169, LOOM_MAX_PACKING_WINDOW + 1, 0};
    loom_workload *w = NULL;
    ck_assert_int_eq(loom_workload_generate_packed("text", 1, 1, 1, &bad, &w, &e), LOOM_EINVAL);
    ck_assert_ptr_null(w);
    ck_assert_str_eq(e.message, "workload packing: window: expected an integer in [0, 4096], "
                                "found 4097");
    bad.window = -1;
    ck_assert_int_eq(loom_workload_generate_packed("text", 1, 1, 1, &bad, &w, &e), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.message, "found -1"));
}
END_TEST

START_TEST(test_packing)
{
    /* the defaults, spelled out or not, give the same bytes */
    loom_workload *a = gen("interleaved", 3, 8, 5), *b = gen_packed("interleaved", 3, 8, 8192, 169);
    char *ta = to_jsonl(a), *tb = to_jsonl(b);
    ck_assert_str_eq(ta, tb);
    free(ta);
    free(tb);
    loom_workload_free(a);
    loom_workload_free(b);
    /* a struct_size that stops before both fields means the defaults too */
    loom_workload_packing short_pk = {(uint32_t)offsetof(loom_workload_packing, sequence_tokens),
                                      100, 100000, 0, 0};
    loom_error e;
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_workload_generate_packed("text", 1, 2, 5, &short_pk, &a, &e), LOOM_OK);
    loom_workload_free(a);

    /* 1024 tokens per image in 8192: at most 7 images, a text token left */
    const char *const fam[] = {"image-pairs", "interleaved", "rise-and-fall", "text"};
    for (int f = 0; f < 4; f++) {
        loom_workload *w = gen_packed(fam[f], 6, 16, 8192, 1024);
        check_packing_of(w, 16, 8192, 1024);
        int64_t most = 0;
        for (int64_t k = 0; k < w->n_samples; k++) {
            ck_assert_int_ge(w->samples[k].text_tokens, 1);
            most = w->samples[k].images > most ? w->samples[k].images : most;
        }
        ck_assert_int_le(most, 7);
        if (f != 3)
            ck_assert_int_ge(most, 1);
        loom_workload_free(w);
    }
    /* sequences of 2048 tokens: text documents up to 2048, 12 images of 169 */
    loom_workload *w = gen_packed("interleaved", 4, 16, 2048, 169);
    check_packing_of(w, 16, 2048, 169);
    loom_workload_free(w);
    w = gen_packed("text", 4, 16, 32768, 169);
    check_packing_of(w, 16, 32768, 169);
    int64_t longest = 0;
    for (int64_t k = 0; k < w->n_samples; k++)
        longest = w->samples[k].text_tokens > longest ? w->samples[k].text_tokens : longest;
    ck_assert_int_gt(longest, 8192); /* the long tail reaches past the default */
    loom_workload_free(w);

    /* out of range: named, with the range and what was found */
    loom_workload_packing bad = {sizeof bad, 1000, 169, 0, 0};
    w = NULL;
    ck_assert_int_eq(loom_workload_generate_packed("text", 1, 1, 1, &bad, &w, &e), LOOM_EINVAL);
    ck_assert_ptr_null(w);
    ck_assert_ptr_nonnull(strstr(e.message, "sequence_tokens: expected an integer in "
                                            "[2048, 1048576], found 1000"));
    bad.sequence_tokens = 8192;
    bad.tokens_per_image = 2049;
    ck_assert_int_eq(loom_workload_generate_packed("text", 1, 1, 1, &bad, &w, &e), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.message, "tokens_per_image: expected an integer in "
                                            "[1, 2048] (a quarter of the 8192-token sequence), "
                                            "found 2049"));
    bad.tokens_per_image = 0;
    ck_assert_int_eq(loom_workload_generate_packed("text", 1, 1, 1, &bad, &w, &e), LOOM_EINVAL);
    ck_assert_ptr_null(w);
}
END_TEST

/* ---- CLI ---------------------------------------------------------------- */

/* Runs `loom <args>` and returns its exit status; *out gets the output. */
static int run_loom(const char *args, char **out)
{
    char cmd[2048];
    const char *bin = loom_test_bin("bin/loom");
    ck_assert_msg(access(bin, X_OK) == 0, "%s is missing", bin);
    snprintf(cmd, sizeof cmd, "%s %s", bin, args);
    return loom_test_run(cmd, out);
}

/* The mean_iteration_ms of `loom plan --json` output (plan times differ
 * from run to run, the plans do not). */
static double mean_iteration_ms(const char *json)
{
    const char *key = strstr(json, "\"mean_iteration_ms\": ");
    ck_assert_msg(key != NULL, "no mean_iteration_ms in: %s", json);
    return strtod(key + strlen("\"mean_iteration_ms\": "), NULL);
}

START_TEST(test_cli_generate)
{
    char *out = NULL;
    ck_assert_int_eq(run_loom("workload generate --family video --iterations 2 "
                              "--microbatches 4 --seed 9", &out), 0);
    loom_workload *w = gen("video", 2, 4, 9);
    char *want = to_jsonl(w);
    ck_assert_str_eq(out, want);
    free(out);

    char dir[] = "/tmp/loom-test-dir-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char args[512], path[256];
    snprintf(path, sizeof path, "%s/w.jsonl", dir);
    snprintf(args, sizeof args, "workload generate --family=video --iterations=2 "
             "--microbatches=4 --seed=9 --out %s", path);
    ck_assert_int_eq(run_loom(args, &out), 0);
    ck_assert_str_eq(out, "");
    free(out);
    char *file = NULL;
    loom_error e;
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_read_file(path, &file, NULL, &e), LOOM_OK);
    ck_assert_str_eq(file, want);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    mode_t mask = umask(0);
    umask(mask);
    ck_assert_int_eq(sb.st_mode & 0777, 0666 & ~mask);
    /* nothing but the output is left in the directory */
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *de; (de = readdir(d));)
        entries += de->d_name[0] != '.';
    closedir(d);
    ck_assert_int_eq(entries, 1);
    unlink(path);
    rmdir(dir);
    free(file);
    free(want);
    loom_workload_free(w);

    ck_assert_int_eq(run_loom("workload generate --family interleaved --iterations 3 "
                              "--microbatches 8 --seed 5 --sequence-tokens 8192 "
                              "--tokens-per-image 1024", &out), 0);
    w = gen_packed("interleaved", 3, 8, 8192, 1024);
    want = to_jsonl(w);
    ck_assert_str_eq(out, want);
    free(want);
    free(out);
    loom_workload_free(w);

    ck_assert_int_eq(run_loom("workload generate --family interleaved --iterations 3 "
                              "--microbatches 8 --seed 5 --tokens-per-image 1024 "
                              "--packing-window 3", &out), 0);
    w = gen_windowed("interleaved", 3, 8, 8192, 1024, 3);
    want = to_jsonl(w);
    ck_assert_str_eq(out, want);
    free(want);
    free(out);
    loom_workload_free(w);

    /* loom plan packs the workload it generates the same way */
    ck_assert_int_eq(run_loom("workload generate --family interleaved --iterations 2 "
                              "--microbatches 8 --seed 3 --packing-window 3 --out "
                              "/tmp/loom-test-window.jsonl", &out), 0);
    free(out);
    char *from_file = NULL, *planned_gen = NULL;
    ck_assert_int_eq(run_loom("plan --model vlm-s --parallel mb=8 --seed 3 --json --quiet "
                              "--workload /tmp/loom-test-window.jsonl", &from_file), 0);
    ck_assert_int_eq(run_loom("plan --model vlm-s --parallel mb=8 --seed 3 --json --quiet "
                              "--generate interleaved --iterations 2 --packing-window 3",
                              &planned_gen), 0);
    ck_assert_double_eq(mean_iteration_ms(planned_gen), mean_iteration_ms(from_file));
    free(planned_gen);
    free(from_file);
    ck_assert_int_eq(run_loom("plan --model vlm-s --parallel mb=8 --seed 3 --json --quiet "
                              "--generate interleaved --iterations 2", &planned_gen), 0);
    ck_assert_int_eq(run_loom("plan --model vlm-s --parallel mb=8 --seed 3 --json --quiet "
                              "--generate interleaved --iterations 2 --packing-window 1",
                              &from_file), 0);
    /* a window of 1 is next-fit, the default */
    ck_assert_double_eq(mean_iteration_ms(planned_gen), mean_iteration_ms(from_file));
    free(planned_gen);
    free(from_file);
    ck_assert_int_eq(run_loom("plan --model vlm-s --packing-window 3 "
                              "--workload /tmp/loom-test-window.jsonl", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--packing-window packs a generated workload; a --workload "
                                      "file is packed already"));
    free(out);
    unlink("/tmp/loom-test-window.jsonl");

    ck_assert_int_eq(run_loom("workload generate --family rise-and-fall --microbatches 2", &out), 0);
    int lines = 0;
    for (char *p = out; *p; p++)
        lines += *p == '\n';
    ck_assert_int_eq(lines, 40); /* the §8.1 default: two patterns of 20 */
    free(out);
}
END_TEST

START_TEST(test_cli_errors)
{
    /* arguments, exit status, a fragment of the output */
    static const struct {
        const char *args;
        int code;
        const char *frag;
    } cases[] = {
        {"workload --help", 0, "rise-and-fall"},
        {"workload --help", 0, "--microbatches"},
        {"workload generate --help", 0, "--seed"},
        {"workload generate --family laion", 2, "expected one of image-pairs, interleaved"},
        {"workload generate --family text --iterations 0", 2,
         "--iterations: expected an integer in [1, 100000], found '0'"},
        {"workload generate --family text --seed -3", 2,
         "--seed: expected an unsigned 64-bit integer"},
        {"workload generate --iterations 2", 2, "--family is required"},
        {"workload generate --family text --bogus", 2,
         "loom workload generate: unknown option '--bogus'"},
        {"workload generate --family text --out /nonexistent-dir/w.jsonl", 2,
         "/nonexistent-dir/w.jsonl"},
        {"workload generate --family text --tokens-per-image 4096", 2,
         "tokens_per_image: expected an integer in [1, 2048]"},
        {"workload generate --family text --sequence-tokens 8k", 2,
         "--sequence-tokens: expected a positive integer, found '8k'"},
        {"workload generate --family text --packing-window 0", 2,
         "--packing-window: expected an integer in [1, 4096], found '0'"},
        {"workload shuffle", 2, "unknown subcommand \"shuffle\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        ck_assert_msg(run_loom(cases[i].args, &out) == cases[i].code, "%s: %s", cases[i].args,
                      out);
        ck_assert_msg(strstr(out, cases[i].frag) != NULL, "%s: \"%s\" lacks \"%s\"",
                      cases[i].args, out, cases[i].frag);
        free(out);
    }
}
END_TEST

/* Builds the suite. */
static Suite *workload_suite(void)
{
    Suite *s = suite_create("workload");
    TCase *io = tcase_create("io");
    tcase_add_test(io, test_load_small_example);
    tcase_add_test(io, test_examples_regenerate);
    tcase_add_test(io, test_blank_lines_and_crlf);
    tcase_add_test(io, test_load_errors);
    tcase_add_test(io, test_load_missing_file);
    tcase_add_test(io, test_round_trip);
    tcase_add_test(io, test_write_error);
    suite_add_tcase(s, io);
    TCase *g = tcase_create("generator");
    tcase_add_test(g, test_generate_arguments);
    tcase_add_test(g, test_determinism);
    tcase_add_test(g, test_family_image_pairs);
    tcase_add_test(g, test_family_interleaved);
    tcase_add_test(g, test_family_video);
    tcase_add_test(g, test_family_rise_and_fall);
    tcase_add_test(g, test_family_text);
    tcase_add_test(g, test_packing);
    tcase_add_test(g, test_packing_window);
    suite_add_tcase(s, g);
    TCase *cli = tcase_create("cli");
    tcase_add_test(cli, test_cli_generate);
    tcase_add_test(cli, test_cli_errors);
    suite_add_tcase(s, cli);
    return s;
}

int main(void)
{
    return loom_test_main(workload_suite());
}
