/* test_cp_balance.c - Cornstarch's token-workload-balanced context
 * parallelism (core/cp_balance.c): the digest's Fig. 3.3 example in both
 * readings of Algorithm 1, mask tile counts for causal, prefix, packed and
 * bitfield masks, the zigzag baseline and the degenerate inputs. */
#include <stdlib.h>
#include <string.h>
#include <loom/algorithms/cp_balance.h>
#include "ctx.h"
#include "testutil.h"

static const int64_t fig33[8] = {1, 2, 2, 4, 5, 2, 2, 8};

/* Runs LPT and checks the loads. */
static void check_lpt(const int64_t *w, int n, int gpus, int sorted,
                      const int64_t *want_loads, int64_t want_makespan)
{
    int32_t assign[64];
    int64_t loads[16];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_cp_lpt(w, n, gpus, sorted, assign, loads, &err), LOOM_OK);
    for (int g = 0; g < gpus; g++)
        ck_assert_int_eq(loads[g], want_loads[g]);
    ck_assert_int_eq(loom_cp_makespan(loads, gpus), want_makespan);
    int64_t sum[16] = {0};
    for (int b = 0; b < n; b++)
        sum[assign[b]] += w[b];
    for (int g = 0; g < gpus; g++)
        ck_assert_int_eq(sum[g], loads[g]);
}

START_TEST(figure_3_3_example)
{
    /* sorted LPT over 4 GPUs: [8,6,6,6], makespan 8 = max w (optimal) */
    const int64_t s4[4] = {8, 6, 6, 6};
    check_lpt(fig33, 8, 4, 1, s4, 8);
    ck_assert_int_eq(loom_cp_lower_bound(fig33, 8, 4), 8);
    /* the listing without a sort: [6,12,4,4], makespan 12, and blocks b1
     * and b5 (1-based) share GPU 0 as Fig. 3.3b says */
    const int64_t u4[4] = {6, 12, 4, 4};
    check_lpt(fig33, 8, 4, 0, u4, 12);
    int32_t assign[8];
    int64_t loads[4];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_cp_lpt(fig33, 8, 4, 0, assign, loads, &err), LOOM_OK);
    ck_assert_int_eq(assign[0], 0);
    ck_assert_int_eq(assign[4], 0);
    /* two GPUs: unsorted [10,16], sorted [13,13] (optimal, total 26) */
    const int64_t u2[2] = {10, 16}, s2[2] = {13, 13};
    check_lpt(fig33, 8, 2, 0, u2, 16);
    check_lpt(fig33, 8, 2, 1, s2, 13);
}
END_TEST

/* Block workloads of `runs`. */
static int64_t *workloads(const loom_cp_run *runs, int n, int block,
                          int64_t *count)
{
    int64_t tokens = 0;
    for (int i = 0; i < n; i++)
        tokens += runs[i].tokens;
    *count = loom_cp_block_count(tokens, block);
    int64_t *w = calloc((size_t)*count, sizeof *w);
    loom_error err = {0, ""};
    ck_assert_msg(loom_cp_block_workloads(runs, n, block, w, &err) == LOOM_OK,
                  "%s", err.message);
    return w;
}

START_TEST(causal_mask_and_zigzag)
{
    /* 1024 causal text tokens in blocks of 128: row block i has i+1 tiles;
     * zigzag over 4 GPUs gives every GPU 2*4+1 = 9 tiles */
    loom_cp_run run = {1024, LOOM_CP_TEXT_BIT | LOOM_CP_CAUSAL_BIT, 0, 0};
    int64_t n = 0;
    int64_t *w = workloads(&run, 1, 128, &n);
    ck_assert_int_eq(n, 8);
    for (int b = 0; b < 8; b++)
        ck_assert_int_eq(w[b], b + 1);
    int32_t assign[8];
    int64_t zz[4], lpt[4];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_cp_zigzag(w, 8, 4, assign, zz, &err), LOOM_OK);
    for (int g = 0; g < 4; g++)
        ck_assert_int_eq(zz[g], 9);
    ck_assert_int_eq(assign[0], 0);
    ck_assert_int_eq(assign[7], 0);
    ck_assert_int_eq(assign[3], 3);
    ck_assert_int_eq(assign[4], 3);
    /* LPT is at least as good as zigzag on a causal mask */
    ck_assert_int_eq(loom_cp_lpt(w, 8, 4, 1, assign, lpt, &err), LOOM_OK);
    ck_assert_int_le(loom_cp_makespan(lpt, 4), loom_cp_makespan(zz, 4));
    free(w);
    /* a ragged last block (1000 tokens): still 8 blocks, same counts */
    run.tokens = 1000;
    w = workloads(&run, 1, 128, &n);
    ck_assert_int_eq(n, 8);
    ck_assert_int_eq(w[7], 8);
    free(w);
}
END_TEST

START_TEST(multimodal_masks)
{
    /* prefix: 256 image tokens (encoder bit 1, bidirectional) then 256
     * text tokens that see every earlier token: [2, 2, 3, 4] */
    uint64_t img = LOOM_CP_ENCODER_BIT(1);
    uint64_t txt = LOOM_CP_TEXT_BIT | img | LOOM_CP_CAUSAL_BIT;
    loom_cp_run prefix[2] = {{256, img, 0, 0}, {256, txt, 0, 0}};
    int64_t n = 0;
    int64_t *w = workloads(prefix, 2, 128, &n);
    const int64_t want[4] = {2, 2, 3, 4};
    for (int b = 0; b < 4; b++)
        ck_assert_int_eq(w[b], want[b]);
    free(w);
    /* embedded: text, image, text - the image block sees only image keys,
     * also the later ones; the first text block only itself */
    loom_cp_run emb[3] = {{128, txt, 0, 0}, {128, img, 0, 0}, {128, txt, 0, 0}};
    w = workloads(emb, 3, 128, &n);
    ck_assert_int_eq(w[0], 1);
    ck_assert_int_eq(w[1], 1);
    ck_assert_int_eq(w[2], 3);
    free(w);
    /* two encoders: audio tokens never attend image tokens */
    uint64_t aud = LOOM_CP_ENCODER_BIT(2);
    loom_cp_run two[3] = {{128, img, 0, 0}, {128, aud, 0, 0},
                          {128, LOOM_CP_TEXT_BIT | img | aud | LOOM_CP_CAUSAL_BIT,
                           0, 0}};
    w = workloads(two, 3, 128, &n);
    ck_assert_int_eq(w[0], 1);
    ck_assert_int_eq(w[1], 1);
    ck_assert_int_eq(w[2], 3);
    free(w);
    /* packed documents never attend each other */
    loom_cp_run docs[2] = {{128, txt, 0, 0}, {128, txt, 1, 0}};
    w = workloads(docs, 2, 128, &n);
    ck_assert_int_eq(w[0], 1);
    ck_assert_int_eq(w[1], 1);
    free(w);
    /* tokens without modality bits attend nothing: W = 0 rows */
    loom_cp_run none[2] = {{128, 0, 0, 0}, {128, txt, 0, 0}};
    w = workloads(none, 2, 128, &n);
    ck_assert_int_eq(w[0], 0);
    ck_assert_int_eq(w[1], 1);
    free(w);
}
END_TEST

START_TEST(bitfield_runs)
{
    uint64_t bits[6] = {2, 2, 2, 7, 7, 2};
    loom_cp_run *runs = NULL;
    int32_t n = 0;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_cp_runs_from_bits(bits, 6, &runs, &n, &err), LOOM_OK);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(runs[0].tokens, 3);
    ck_assert_int_eq(runs[1].tokens, 2);
    ck_assert_int_eq((int64_t)runs[1].bits, 7);
    ck_assert_int_eq(runs[2].tokens, 1);
    free(runs);
    ck_assert_int_eq(loom_cp_runs_from_bits(bits, 0, &runs, &n, &err), LOOM_EINVAL);
}
END_TEST

START_TEST(degenerate_inputs)
{
    int32_t assign[4];
    int64_t loads[4];
    loom_error err = {0, ""};
    /* fewer blocks than GPUs: the others stay idle */
    const int64_t two[2] = {3, 5};
    ck_assert_int_eq(loom_cp_lpt(two, 2, 4, 1, assign, loads, &err), LOOM_OK);
    ck_assert_int_eq(loads[0], 5);
    ck_assert_int_eq(loads[1], 3);
    ck_assert_int_eq(loads[2], 0);
    ck_assert_int_eq(loads[3], 0);
    /* zero-workload blocks are still assigned */
    const int64_t zero[3] = {0, 0, 4};
    ck_assert_int_eq(loom_cp_lpt(zero, 3, 2, 1, assign, loads, &err), LOOM_OK);
    ck_assert_int_ge(assign[0], 0);
    ck_assert_int_ge(assign[1], 0);
    ck_assert_int_eq(loom_cp_makespan(loads, 2), 4);
    /* errors */
    ck_assert_int_eq(loom_cp_lpt(two, 2, 0, 1, assign, loads, &err), LOOM_EINVAL);
    const int64_t neg[2] = {1, -1};
    ck_assert_int_eq(loom_cp_lpt(neg, 2, 2, 1, assign, loads, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "block 1"));
    ck_assert_int_eq(loom_cp_block_count(0, 128), -1);
    /* near INT64_MAX the count does not overflow (found by fuzzing) */
    ck_assert_int_eq(loom_cp_block_count(INT64_MAX, 4), INT64_MAX / 4 + 1);
    loom_cp_run two_huge[2] = {{INT64_MAX, 1, 0, 0}, {INT64_MAX, 1, 0, 0}};
    int64_t w1[1];
    ck_assert_int_eq(loom_cp_block_workloads(two_huge, 2, 1, w1, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "more than 4294967296 tokens"));
    loom_cp_run bad = {-5, 1, 0, 0};
    int64_t w[1];
    ck_assert_int_eq(loom_cp_block_workloads(&bad, 1, 128, w, &err), LOOM_EINVAL);
}
END_TEST

/* The mask's definition, tile by tile: 1 when some query position of
 * block b attends some key position of block c (O(tokens^2): tests only). */
static int64_t reference_workload(const loom_cp_run *runs, int n, int64_t tokens, int block,
                                  int64_t b, const int32_t *run_of)
{
    int64_t count = 0, nb = loom_cp_block_count(tokens, block);
    for (int64_t c = 0; c < nb; c++) {
        int hit = 0;
        for (int64_t q = b * block; q < (b + 1) * block && q < tokens && !hit; q++)
            for (int64_t k = c * block; k < (c + 1) * block && k < tokens && !hit; k++) {
                const loom_cp_run *rq = &runs[run_of[q]], *rk = &runs[run_of[k]];
                uint64_t mq = rq->bits & ~LOOM_CP_CAUSAL_BIT, mk = rk->bits & ~LOOM_CP_CAUSAL_BIT;
                if (rq->doc != rk->doc)
                    continue;
                if (rq->bits & LOOM_CP_CAUSAL_BIT)
                    hit = (mq & mk) != 0 && k <= q;
                else
                    hit = mq != 0 && mq == mk;
            }
        count += hit;
    }
    (void)n;
    return count;
}

START_TEST(workloads_match_the_mask_definition)
{
    /* seeded random masks: runs of 0..9 tokens, 1..3 documents (repeated
     * out of order), bitfields from a few encoders, causal or not; every
     * block workload equals the tile-by-tile count */
    uint64_t s = 777;
    for (int trial = 0; trial < 3000; trial++) {
        int n = 1 + (int)(loom_splitmix64(&s) % 12);
        loom_cp_run runs[12];
        int64_t tokens = 0;
        for (int i = 0; i < n; i++) {
            uint64_t r = loom_splitmix64(&s);
            uint64_t bits = (r >> 8) & 7; /* text, encoder 1, encoder 2 */
            if (r & 1)
                bits |= LOOM_CP_CAUSAL_BIT;
            runs[i] = (loom_cp_run){(int64_t)((r >> 16) % 10), bits, (int32_t)((r >> 24) % 3), 0};
            tokens += runs[i].tokens;
        }
        if (tokens == 0)
            continue;
        int32_t run_of[128];
        for (int i = 0, at = 0; i < n; i++)
            for (int64_t t = 0; t < runs[i].tokens; t++)
                run_of[at++] = i;
        int block = 1 + (int)(loom_splitmix64(&s) % 5);
        int64_t nb = 0;
        int64_t *w = workloads(runs, n, block, &nb);
        for (int64_t b = 0; b < nb; b++) {
            int64_t want = reference_workload(runs, n, tokens, block, b, run_of);
            ck_assert_msg(w[b] == want, "trial %d: block %lld of %lld (block size %d, %d runs): "
                          "%lld, expected %lld", trial, (long long)b, (long long)nb, block, n,
                          (long long)w[b], (long long)want);
        }
        free(w);
    }
}
END_TEST

START_TEST(workloads_scale)
{
    /* one causal sequence of 10^6 tokens in blocks of 1: 10^6 blocks, block
     * b sees b + 1 key blocks (quadratic tile by tile; now one binary
     * search per block) */
    loom_cp_run run = {1000000, LOOM_CP_TEXT_BIT | LOOM_CP_CAUSAL_BIT, 0, 0};
    int64_t n = 0;
    int64_t *w = workloads(&run, 1, 1, &n);
    ck_assert_int_eq(n, 1000000);
    for (int64_t b = 0; b < n; b += 99991)
        ck_assert_int_eq(w[b], b + 1);
    ck_assert_int_eq(w[n - 1], n);
    free(w);
    /* 1024 alternating image and text segments of one document */
    loom_cp_run seg[LOOM_CP_MAX_SEGMENTS];
    char spec[LOOM_CP_MAX_SEGMENTS * 12];
    size_t at = 0;
    for (int i = 0; i < LOOM_CP_MAX_SEGMENTS; i++)
        at += (size_t)snprintf(spec + at, sizeof spec - at, "%s%s:977", i ? "," : "",
                               i % 2 ? "text" : "image");
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_cp_parse_segments(spec, seg, LOOM_CP_MAX_SEGMENTS, &err),
                     LOOM_CP_MAX_SEGMENTS);
    w = workloads(seg, LOOM_CP_MAX_SEGMENTS, 1, &n);
    ck_assert_int_eq(n, 977 * LOOM_CP_MAX_SEGMENTS);
    ck_assert_int_eq(w[0], 977 * LOOM_CP_MAX_SEGMENTS / 2); /* every image block */
    ck_assert_int_eq(w[n - 1], n);                          /* last text: every key */
    free(w);
    /* the work bound: 2^15 runs of one token, each its own class attending
     * every run of the document, need 2^30 comparisons */
    int32_t many = 1 << 15;
    loom_cp_run *r = malloc((size_t)many * sizeof *r);
    int64_t *w2 = malloc((size_t)many * sizeof *w2);
    for (int32_t i = 0; i < many; i++)
        r[i] = (loom_cp_run){1, LOOM_CP_TEXT_BIT | LOOM_CP_CAUSAL_BIT | ((uint64_t)i << 20), 0, 0};
    ck_assert_int_eq(loom_cp_block_workloads(r, many, 1, w2, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "need more than 134217728 steps"));
    free(r);
    free(w2);
}
END_TEST

START_TEST(segment_and_workload_parsers)
{
    loom_cp_run runs[4];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_cp_parse_segments("image:256,text:256/enc7:3", runs, 4, &err), 3);
    ck_assert_int_eq(runs[0].tokens, 256);
    ck_assert(runs[0].bits == LOOM_CP_ENCODER_BIT(1));
    ck_assert(runs[1].bits == (LOOM_CP_TEXT_BIT | LOOM_CP_ENCODER_BIT(1) | LOOM_CP_CAUSAL_BIT));
    ck_assert_int_eq(runs[2].doc, 1);
    ck_assert(runs[2].bits == LOOM_CP_ENCODER_BIT(7));
    static const char *const bad[] = {"", "pixel:5", "text:0", "text:", "text:5,", "text:5x",
                                      "text:-3", "enc63:4", "text:4294967297", "image:2,,text:2",
                                      "enc1234567890:1", NULL};
    for (int i = 0; bad[i]; i++)
        ck_assert_msg(loom_cp_parse_segments(bad[i], runs, 4, &err) == -1 &&
                          err.code == LOOM_EINVAL,
                      "\"%s\" accepted", bad[i]);
    ck_assert_int_eq(loom_cp_parse_segments("text:1,text:1,text:1,text:1,text:1", runs, 4, &err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err.message, "at most 4 segments"));
    int64_t *w = NULL;
    int32_t n = 0;
    ck_assert_int_eq(loom_cp_parse_workloads("1,2,2,4", &w, &n, &err), LOOM_OK);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(w[3], 4);
    free(w);
    static const char *const badw[] = {"", ",", "1,", "1,,2", "-1", "1.5", "9223372036854775807",
                                       "1099511627777", NULL};
    for (int i = 0; badw[i]; i++) {
        ck_assert_msg(loom_cp_parse_workloads(badw[i], &w, &n, &err) == LOOM_EINVAL,
                      "\"%s\" accepted", badw[i]);
        ck_assert_ptr_null(w);
    }
    /* each block at most 2^40: the loads cannot overflow */
    const int64_t huge[2] = {LOOM_CP_MAX_WORKLOAD + 1, 1};
    int32_t assign[2];
    int64_t loads[1];
    ck_assert_int_eq(loom_cp_lpt(huge, 2, 1, 1, assign, loads, &err), LOOM_EINVAL);
}
END_TEST

START_TEST(lpt_bound_holds)
{
    /* worst case <= sum / G + max (the bound the text states), and never
     * below the lower bound, on seeded random inputs */
    uint64_t s = 12345;
    for (int trial = 0; trial < 200; trial++) {
        int64_t w[40];
        int n = 1 + (int)(loom_splitmix64(&s) % 40);
        int gpus = 1 + (int)(loom_splitmix64(&s) % 8);
        int64_t sum = 0, mx = 0;
        for (int b = 0; b < n; b++) {
            w[b] = (int64_t)(loom_splitmix64(&s) % 50);
            sum += w[b];
            mx = w[b] > mx ? w[b] : mx;
        }
        int32_t assign[40];
        int64_t loads[8];
        loom_error err = {0, ""};
        for (int sorted = 0; sorted < 2; sorted++) {
            ck_assert_int_eq(loom_cp_lpt(w, n, gpus, sorted, assign, loads, &err),
                             LOOM_OK);
            int64_t m = loom_cp_makespan(loads, gpus);
            ck_assert_int_le(m * gpus, sum + (int64_t)gpus * mx);
            ck_assert_int_ge(m, loom_cp_lower_bound(w, n, gpus));
        }
    }
}
END_TEST

/* The suite of this file. */
static Suite *cp_suite(void)
{
    Suite *s = suite_create("cp_balance");
    TCase *tc = tcase_create("cp");
    tcase_add_test(tc, figure_3_3_example);
    tcase_add_test(tc, causal_mask_and_zigzag);
    tcase_add_test(tc, multimodal_masks);
    tcase_add_test(tc, bitfield_runs);
    tcase_add_test(tc, degenerate_inputs);
    tcase_add_test(tc, lpt_bound_holds);
    tcase_add_test(tc, workloads_match_the_mask_definition);
    tcase_add_test(tc, workloads_scale);
    tcase_add_test(tc, segment_and_workload_parsers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(cp_suite());
}
