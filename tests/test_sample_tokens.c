/* test_sample_tokens.c - the one rule for how many tokens a sample gives a
 * module (<loom/tokens.h>): exact values for images, fractional video and
 * audio seconds (rounded to nearest, halves up) and a text module with
 * upstream modules, and the core shape builder agreeing with it. */
#include <string.h>
#include <loom/tokens.h>
#include <loom/sample_groups.h>
#include "testutil.h"
#include "engine_api.h"

static const loom_layer layer = {64, 256, 4, 4, 0, 0, 0, 0};
static const int32_t text_inputs[3] = {0, 1, 2};
/* image (169 tokens per image), video (3 per second), audio (25 per
 * second), and a text backbone fed by all three */
static const loom_module mods[4] = {
    {"vit", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 1, &layer, 169, 0, 0, 0, NULL, 0},
    {"video", LOOM_MODULE_ENCODER, LOOM_MODALITY_VIDEO, 1, &layer, 3, 0, 0, 0, NULL, 0},
    {"audio", LOOM_MODULE_ENCODER, LOOM_MODALITY_AUDIO, 1, &layer, 25, 0, 0, 0, NULL, 0},
    {"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 1, &layer, 1, 0, 0, 3, text_inputs, 0},
};
static const loom_model model = {"tokens", 4, mods};

/* text_tokens, images, microbatch, video_seconds, audio_seconds */
static const loom_sample samples[4] = {
    {10, 3, -1, 0.5, 0.5},   /* video 1.5 -> 2, audio 12.5 -> 13 */
    {0, 0, -1, 0.1, 0.0},    /* video 0.3 -> 0: no tokens at all */
    {7, 1, -1, 2.5, 0.3},    /* video 7.5 -> 8, audio 7.5 -> 8 */
    {100, 0, -1, 1.25, 0.02} /* video 3.75 -> 4, audio 0.5 -> 1 */
};

START_TEST(exact_tokens_per_module)
{
    static const int64_t image[4] = {507, 0, 169, 0};
    static const int64_t video[4] = {2, 0, 8, 4};
    static const int64_t audio[4] = {13, 0, 8, 1};
    static const int64_t text[4] = {532, 0, 192, 105};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(loom_sample_tokens(&model, 0, &samples[i]), image[i]);
        ck_assert_int_eq(loom_sample_tokens(&model, 1, &samples[i]), video[i]);
        ck_assert_int_eq(loom_sample_tokens(&model, 2, &samples[i]), audio[i]);
        ck_assert_int_eq(loom_sample_tokens(&model, 3, &samples[i]), text[i]);
        /* what a text module downstream of the backbone would append */
        ck_assert_int_eq(loom_sample_output_tokens(&mods[3], &samples[i]),
                         samples[i].text_tokens);
    }
    ck_assert_int_eq(loom_round_tokens(2.5), 3);
    ck_assert_int_eq(loom_round_tokens(2.4999), 2);
    ck_assert_int_eq(loom_round_tokens(0.0), 0);
    ck_assert_int_eq(loom_round_tokens(-3.0), 0);
}
END_TEST

/* A model problem of m at tp = pp = dp = vpp = 1, one microbatch. */
static loom_problem problem_of(const loom_model *m)
{
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = (uint32_t)sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    pb.model = m;
    pb.parallel = (loom_parallel){1, 1, 1, 1, 1, 0};
    return pb;
}

START_TEST(shape_builder_uses_the_rule)
{
    loom_problem pb = problem_of(&model);
    loom_iteration it = {0, 4, samples};
    loom_shape s = LOOM_SHAPE_INIT;
    /* text: 532 + 0 + 192 + 105 tokens, three sequences */
    loom_shape_for(&pb, 3, &it, NULL, 1, 0, 1, &s);
    ck_assert_int_eq(s.tokens, 829);
    ck_assert_double_eq(s.seq_sq_sum, 532.0 * 532 + 192.0 * 192 + 105.0 * 105);
    ck_assert_int_eq(s.sequences, 3);
    /* video: one sequence per sample with tokens */
    loom_shape_for(&pb, 1, &it, NULL, 1, 0, 1, &s);
    ck_assert_int_eq(s.tokens, 14);
    ck_assert_double_eq(s.seq_sq_sum, 84);
    ck_assert_int_eq(s.sequences, 3);
    /* audio */
    loom_shape_for(&pb, 2, &it, NULL, 1, 0, 1, &s);
    ck_assert_int_eq(s.tokens, 22);
    ck_assert_double_eq(s.seq_sq_sum, 234);
    /* images: one sequence of 169 tokens per image */
    loom_shape_for(&pb, 0, &it, NULL, 1, 0, 1, &s);
    ck_assert_int_eq(s.tokens, 676);
    ck_assert_double_eq(s.seq_sq_sum, 4.0 * 169 * 169);
    ck_assert_int_eq(s.sequences, 4);
}
END_TEST

/* loom_group_samples: each microbatch's samples alone, in order, own
 * microbatches kept and the even spread for the rest, those past the
 * count left out; a group's shape as one microbatch is the whole
 * iteration's shape of that microbatch. */
START_TEST(samples_grouped_by_microbatch)
{
    loom_sample mixed[7];
    for (int i = 0; i < 7; i++)
        mixed[i] = samples[i % 4];
    mixed[1].microbatch = 2; /* own microbatches: 2, 0 and 5 (past 3) */
    mixed[4].microbatch = 0;
    mixed[6].microbatch = 5;
    loom_iteration it = {3, 7, mixed};
    /* the spread of the rest over 3: i * 3 / 7 -> 0 0 _ 1 _ 2 _ */
    int32_t off[4];
    loom_sample out[7];
    loom_group_samples(&it, 3, off, out);
    static const int32_t want_off[4] = {0, 3, 4, 6};
    ck_assert_mem_eq(off, want_off, sizeof want_off);
    static const int from[6] = {0, 2, 4, 3, 1, 5}; /* mb 0: 0 2 4; 1: 3; 2: 1 5 */
    for (int k = 0; k < 6; k++) {
        ck_assert_int_eq(out[k].microbatch, -1);
        ck_assert_int_eq(out[k].text_tokens, mixed[from[k]].text_tokens);
        ck_assert(out[k].video_seconds == mixed[from[k]].video_seconds);
    }
    loom_problem pb = problem_of(&model);
    for (int32_t mb = 0; mb < 3; mb++)
        for (int32_t m = 0; m < 4; m++) {
            loom_iteration own = {3, off[mb + 1] - off[mb], out + off[mb]};
            loom_shape a = LOOM_SHAPE_INIT, b = LOOM_SHAPE_INIT;
            loom_shape_for(&pb, m, &it, NULL, 3, mb, 1, &a);
            loom_shape_for(&pb, m, &own, NULL, 1, 0, 1, &b);
            ck_assert_mem_eq(&a, &b, sizeof a);
        }
}
END_TEST

/* A vision tower that runs each image as 2916 patches and hands 169
 * merged tokens downstream: its own shape counts patches, the text
 * backbone counts merged tokens. */
START_TEST(patches_inside_the_encoder)
{
    static const int32_t vit_input[1] = {0};
    static const loom_module pm[2] = {
        {"vit", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 1, &layer, 169, 0, 0, 0, NULL, 2916},
        {"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 1, &layer, 1, 0, 0, 1, vit_input, 0},
    };
    static const loom_model pmodel = {"patches", 2, pm};
    ck_assert_int_eq(loom_module_patches(&pm[0]), 2916);
    ck_assert_int_eq(loom_module_patches(&pm[1]), 1);
    ck_assert_int_eq(loom_sample_tokens(&pmodel, 0, &samples[0]), 3 * 2916);
    ck_assert_int_eq(loom_sample_output_tokens(&pm[0], &samples[0]), 3 * 169);
    ck_assert_int_eq(loom_sample_tokens(&pmodel, 1, &samples[0]), 10 + 3 * 169);
    loom_problem pb = problem_of(&pmodel);
    loom_iteration it = {0, 4, samples};
    loom_shape s = LOOM_SHAPE_INIT;
    loom_shape_for(&pb, 0, &it, NULL, 1, 0, 1, &s);
    ck_assert_int_eq(s.tokens, 4 * 2916);
    ck_assert_double_eq(s.seq_sq_sum, 4.0 * 2916 * 2916);
    ck_assert_int_eq(s.sequences, 4);
    loom_shape_for(&pb, 1, &it, NULL, 1, 0, 1, &s);
    ck_assert_int_eq(s.tokens, 10 + 7 + 100 + 4 * 169);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("sample_tokens");
    TCase *tc = tcase_create("tokens");
    tcase_add_test(tc, exact_tokens_per_module);
    tcase_add_test(tc, shape_builder_uses_the_rule);
    tcase_add_test(tc, patches_inside_the_encoder);
    tcase_add_test(tc, samples_grouped_by_microbatch);
    suite_add_tcase(su, tc);
    return loom_test_main(su);
}
