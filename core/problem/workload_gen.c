/* workload_gen.c - the seeded synthetic workload generator: dataset
 * families after PipeWeaver §2.2 and §8 (LAION-like image-caption pairs,
 * OBELICS-like interleaved documents, short captioned video clips, the
 * §8.1 rise-and-fall image counts, plain text), packed into microbatches.
 *
 * Determinism: xoshiro256** seeded through splitmix64, integer arithmetic
 * only (video durations are whole frames at 16 FPS, exact in binary), so
 * the same arguments give the same samples on every platform. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "problem_io_priv.h"

#define SEQ_TOKENS LOOM_DEFAULT_SEQUENCE_TOKENS    /* packed sequence of the VLM backbone */
#define IMAGE_TOKENS LOOM_DEFAULT_TOKENS_PER_IMAGE /* ViT tokens per 768 px image */
#define MIN_SEQ_TOKENS 2048 /* the longest text-length bucket starts here */
#define MAX_SEQ_TOKENS (1 << 20)
#define FPS 16              /* video frame rate */
#define MAX_CLIP_FRAMES (16 * FPS) /* 16 s per clip and per microbatch */
#define MAX_CLIPS 8         /* clips per video microbatch */
#define PATTERN 20          /* rise-and-fall period in iterations */

static const char *const family_names[] = {"image-pairs", "interleaved", "video",
                                           "rise-and-fall", "text", NULL};

const char *const *loom_workload_family_names(void)
{
    return family_names;
}

/* ---- random numbers ------------------------------------------------------ */

typedef struct rng {
    uint64_t s[4];
} rng;

/* Seeds the four xoshiro words from splitmix64(seed). */
static void rng_seed(rng *r, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = loom_splitmix64(&st);
}

/* Rotates x left by k bits (0 < k < 64). */
static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* Next xoshiro256** output. */
static uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform integer in [lo, hi] (lo <= hi), without modulo bias. */
static int64_t rng_range(rng *r, int64_t lo, int64_t hi)
{
    uint64_t n = (uint64_t)(hi - lo) + 1;
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = rng_next(r);
    while (x >= limit);
    return lo + (int64_t)(x % n);
}

/* A range [lo, hi] drawn with relative weight w. */
typedef struct bucket {
    int64_t lo, hi;
    int64_t w;
} bucket;

/* Picks a bucket by weight, then a uniform value inside it. */
static int64_t draw_bucket(rng *r, const bucket *b, int n)
{
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        total += b[i].w;
    int64_t x = rng_range(r, 0, total - 1);
    int i = 0;
    while (x >= b[i].w) {
        x -= b[i].w;
        i++;
    }
    return rng_range(r, b[i].lo, b[i].hi);
}

#define NB(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- sample draws -------------------------------------------------------- */

/* Text-only document lengths (tokens): mostly short, a long tail up to
 * the sequence length (the last bucket's upper end, set per run). */
static const bucket text_doc_tokens[] = {
    {16, 127, 35}, {128, 511, 35}, {512, 2047, 22}, {2048, SEQ_TOKENS, 8}};

/* The sequence a microbatch packs into: its length and what one image
 * takes of it; max_images = (seq - 1) / image, so a text token always
 * fits; text_docs are text_doc_tokens with the tail ending at seq. */
typedef struct packing {
    int64_t seq, image, max_images;
    bucket text_docs[NB(text_doc_tokens)];
} packing;

/* A text-only document length for the packing's sequences. */
static int64_t draw_text_tokens(rng *r, const packing *p)
{
    return draw_bucket(r, p->text_docs, NB(p->text_docs));
}

/* Images per OBELICS-like document: many with none or one, a few with many. */
static const bucket doc_images[] = {
    {0, 0, 30}, {1, 1, 22}, {2, 2, 14}, {3, 5, 16}, {6, 12, 11}, {13, 30, 5}, {31, 48, 2}};

/* Text tokens per image in tenths: spread from 0.4 to 3115 tokens/image. */
static const bucket doc_ratio_tenths[] = {
    {4, 19, 6}, {20, 99, 12}, {100, 499, 22}, {500, 1999, 30}, {2000, 7999, 20},
    {8000, 31150, 10}};

/* Clip durations in frames (1..16 s at 16 FPS), skewed to short clips. */
static const bucket clip_frames[] = {
    {16, 63, 40}, {64, 127, 30}, {128, 191, 15}, {192, MAX_CLIP_FRAMES, 15}};

/* LAION-like pair: one image with a short caption (6..26 tokens, mean 16). */
static void draw_pair(rng *r, const packing *p, loom_sample *s)
{
    (void)p;
    s->images = 1;
    s->text_tokens = 6 + rng_range(r, 0, 10) + rng_range(r, 0, 10);
}

/* OBELICS-like document, truncated to fit one packed sequence (its
 * images first, to the sequence's max_images, then its text). */
static void draw_document(rng *r, const packing *p, loom_sample *s)
{
    int64_t k = draw_bucket(r, doc_images, NB(doc_images));
    int64_t text;
    if (k == 0) {
        text = draw_text_tokens(r, p);
    } else {
        int64_t tenths = draw_bucket(r, doc_ratio_tenths, NB(doc_ratio_tenths));
        text = (k * tenths + 5) / 10;
        if (k > p->max_images)
            k = p->max_images;
        if (text < 1)
            text = 1;
        if (text > p->seq - p->image * k)
            text = p->seq - p->image * k;
    }
    s->images = (int32_t)k;
    s->text_tokens = text;
}

/* Captioned clip: 1..16 s of video and a 20..120-token caption. */
static void draw_clip(rng *r, const packing *p, loom_sample *s)
{
    (void)p;
    int64_t frames = draw_bucket(r, clip_frames, NB(clip_frames));
    s->video_seconds = (double)frames / FPS;
    s->text_tokens = rng_range(r, 20, 120);
}

/* Plain text document. */
static void draw_text(rng *r, const packing *p, loom_sample *s)
{
    s->text_tokens = draw_text_tokens(r, p);
}

/* ---- packing --------------------------------------------------------------- */

typedef struct gen {
    rng r;
    loom_workload_builder b;
    packing p;
    void (*draw)(rng *r, const packing *p, loom_sample *s);
    int32_t window;      /* samples drawn ahead (1: next-fit) */
    int32_t n_pending;   /* drawn samples no microbatch took yet, in draw order */
    loom_sample *pending; /* window entries */
} gen;

/* Fills microbatch `mb` greedily: samples are added while the sequence
 * stays within its tokens (text + tokens per image; 8192 and 169 by
 * default), max_images images (48), 8 clips and 16 s of video. The
 * microbatch takes, in draw order, the first of the `window` samples drawn
 * ahead that fits (the first one whatever its size when the microbatch is
 * empty), and closes when none does; with a window of 1 the first sample
 * that does not fit opens the next microbatch (next-fit). */
static int pack_microbatch(gen *g, int32_t mb, loom_error *err)
{
    int64_t tokens = 0, images = 0, frames = 0, clips = 0, count = 0;
    for (;;) {
        while (g->n_pending < g->window) {
            loom_sample *s = &g->pending[g->n_pending++];
            memset(s, 0, sizeof *s);
            g->draw(&g->r, &g->p, s);
        }
        int32_t k = 0;
        int64_t t = 0, f = 0, c = 0;
        for (; k < g->n_pending; k++) {
            const loom_sample *s = &g->pending[k];
            t = s->text_tokens + g->p.image * s->images;
            f = (int64_t)(s->video_seconds * FPS);
            c = f > 0;
            if (count == 0 || (tokens + t <= g->p.seq && images + s->images <= g->p.max_images &&
                               frames + f <= MAX_CLIP_FRAMES && clips + c <= MAX_CLIPS))
                break;
        }
        if (k == g->n_pending)
            return LOOM_OK;
        loom_sample add = g->pending[k];
        add.microbatch = mb;
        int rc = loom_wb_add_sample(&g->b, &add, err);
        if (rc)
            return rc;
        memmove(&g->pending[k], &g->pending[k + 1],
                (size_t)(g->n_pending - k - 1) * sizeof *g->pending);
        g->n_pending--;
        tokens += t;
        images += add.images;
        frames += f;
        clips += c;
        count++;
    }
}

/* Image-count bounds of iteration `index` in the §8.1 rise-and-fall
 * pattern: over iterations 1-5 of each 20 the lower bound rises 0..16 with
 * the upper bound at 32, then both fall linearly to 0 at iteration 20. */
static void rise_and_fall_bounds(int32_t index, int64_t *lo, int64_t *hi)
{
    int64_t it = index % PATTERN + 1;
    if (it <= 5) {
        *lo = 4 * (it - 1);
        *hi = 32;
    } else {
        *lo = (2 * 16 * (PATTERN - it) + 15) / 30;
        *hi = (2 * 32 * (PATTERN - it) + 15) / 30;
    }
}

/* One rise-and-fall microbatch: n images in the iteration's bounds (both
 * capped at the sequence's max_images), the rest of the sequence text. */
static int rise_and_fall_microbatch(gen *g, int32_t index, int32_t mb, loom_error *err)
{
    int64_t lo, hi;
    rise_and_fall_bounds(index, &lo, &hi);
    lo = lo < g->p.max_images ? lo : g->p.max_images;
    hi = hi < g->p.max_images ? hi : g->p.max_images;
    loom_sample s;
    memset(&s, 0, sizeof s);
    s.images = (int32_t)rng_range(&g->r, lo, hi);
    s.text_tokens = g->p.seq - g->p.image * s.images;
    s.microbatch = mb;
    return loom_wb_add_sample(&g->b, &s, err);
}

int loom_workload_generate(const char *family, int32_t iterations, int32_t microbatches,
                           uint64_t seed, loom_workload **out, loom_error *err)
{
    return loom_workload_generate_packed(family, iterations, microbatches, seed, NULL, out,
                                         err);
}

int loom_workload_generate_packed(const char *family, int32_t iterations,
                                  int32_t microbatches, uint64_t seed,
                                  const loom_workload_packing *packing_in,
                                  loom_workload **out, loom_error *err)
{
    static void (*const draws[])(rng *, const packing *, loom_sample *) = {
        draw_pair, draw_document, draw_clip, NULL, draw_text};
    char list[96];
    int f = -1;
    *out = NULL;
    for (int i = 0; family && family_names[i]; i++)
        if (strcmp(family_names[i], family) == 0)
            f = i;
    if (f < 0) {
        loom_join_names(family_names, list, sizeof list);
        return loom_set_error(err, LOOM_ENOTFOUND,
                              "workload family: expected one of %s, found \"%.60s\"", list,
                              family ? family : "");
    }
    if (iterations < 1 || iterations > LOOM_MAX_ITERATIONS)
        return loom_set_error(err, LOOM_EINVAL,
                              "workload generate: iterations: expected an integer in [1, %d], "
                              "found %d", LOOM_MAX_ITERATIONS, (int)iterations);
    if (microbatches < 1 || microbatches > LOOM_MAX_PARALLEL_DEGREE)
        return loom_set_error(err, LOOM_EINVAL,
                              "workload generate: microbatches: expected an integer in [1, %d], "
                              "found %d", LOOM_MAX_PARALLEL_DEGREE, (int)microbatches);
    packing p = {SEQ_TOKENS, IMAGE_TOKENS, 0, {{0, 0, 0}}};
    if (packing_in && LOOM_STRUCT_HAS(packing_in, loom_workload_packing, sequence_tokens))
        p.seq = packing_in->sequence_tokens;
    if (packing_in && LOOM_STRUCT_HAS(packing_in, loom_workload_packing, tokens_per_image))
        p.image = packing_in->tokens_per_image;
    if (p.seq < MIN_SEQ_TOKENS || p.seq > MAX_SEQ_TOKENS)
        return loom_set_error(err, LOOM_EINVAL,
                              "workload packing: sequence_tokens: expected an integer in "
                              "[%d, %d], found %lld", MIN_SEQ_TOKENS, MAX_SEQ_TOKENS,
                              (long long)p.seq);
    if (p.image < 1 || p.image > p.seq / 4)
        return loom_set_error(err, LOOM_EINVAL,
                              "workload packing: tokens_per_image: expected an integer in "
                              "[1, %lld] (a quarter of the %lld-token sequence), found %lld",
                              (long long)(p.seq / 4), (long long)p.seq, (long long)p.image);
    int32_t window = packing_in && LOOM_STRUCT_HAS(packing_in, loom_workload_packing, window)
                         ? packing_in->window : 0;
    if (window < 0 || window > LOOM_MAX_PACKING_WINDOW)
        return loom_set_error(err, LOOM_EINVAL,
                              "workload packing: window: expected an integer in [0, %d], "
                              "found %d", LOOM_MAX_PACKING_WINDOW, (int)window);
    if (window == 0)
        window = 1; /* next-fit */
    p.max_images = (p.seq - 1) / p.image; /* 48 by default */
    memcpy(p.text_docs, text_doc_tokens, sizeof p.text_docs);
    p.text_docs[NB(p.text_docs) - 1].hi = p.seq;
    gen g;
    memset(&g, 0, sizeof g);
    rng_seed(&g.r, seed);
    g.p = p;
    g.draw = draws[f];
    g.window = window;
    g.pending = calloc((size_t)window, sizeof *g.pending);
    if (!g.pending)
        return loom_set_error(err, LOOM_ENOMEM, "workload generate: out of memory");
    int rc = loom_wb_init(&g.b, err);
    for (int32_t i = 0; !rc && i < iterations; i++) {
        rc = loom_wb_begin_iteration(&g.b, i, err);
        for (int32_t m = 0; !rc && m < microbatches; m++)
            rc = g.draw ? pack_microbatch(&g, m, err) : rise_and_fall_microbatch(&g, i, m, err);
    }
    free(g.pending);
    if (rc) {
        char what[128];
        snprintf(what, sizeof what, "workload generate (%s, %d iterations of %d microbatches)",
                 family, (int)iterations, (int)microbatches);
        loom_wb_abort(&g.b);
        return loom_error_prefix(err, rc, what);
    }
    loom_wb_finish(&g.b, out);
    return LOOM_OK;
}
