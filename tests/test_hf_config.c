/* test_hf_config.c - models from Hugging Face config.json files
 * (core/problem/hf_config.c): the layer shapes, image tokens and module
 * graph each supported family gives, and the errors for unknown or broken
 * configs. Fixtures: examples/models/hf/. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include <loom/sys/problem.h>

/* Loads examples/models/hf/<name>.json; asserts success. */
static loom_model_data *load(const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "examples/models/hf/%s.json", name);
    loom_model_data *m = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_model_load(loom_test_src(rel), &m, &err) == LOOM_OK, "%s: %s", name,
                  err.message);
    return m;
}

/* Asserts module i's kind, modality, layer count and first layer's shape. */
static void module_is(const loom_model *m, int i, const char *name, int kind, int modality,
                      int32_t layers, int64_t hidden, int64_t ffn, int32_t heads,
                      int32_t kv, int gated, int causal, int64_t tokens_per_item)
{
    const loom_module *mod = &m->modules[i];
    ck_assert_str_eq(mod->name, name);
    ck_assert_int_eq(mod->kind, kind);
    ck_assert_int_eq(mod->modality, modality);
    ck_assert_int_eq(mod->n_layers, layers);
    ck_assert_int_eq(mod->layers[0].hidden, hidden);
    ck_assert_int_eq(mod->layers[0].ffn_hidden, ffn);
    ck_assert_int_eq(mod->layers[0].heads, heads);
    ck_assert_int_eq(mod->layers[0].kv_heads, kv);
    ck_assert_int_eq(mod->layers[0].gated_ffn, gated);
    ck_assert_int_eq(mod->layers[0].causal, causal);
    ck_assert_int_eq(mod->tokens_per_item, tokens_per_item);
}

START_TEST(decoder_only_language_models)
{
    loom_model_data *d = load("llama-3-8b");
    const loom_model *m = loom_model_data_model(d);
    ck_assert_int_eq(m->n_modules, 1);
    module_is(m, 0, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 32, 4096, 14336, 32, 8,
              1, 1, 1);
    ck_assert_int_eq(m->modules[0].vocab, 128256);
    loom_model_data_free(d);

    d = load("qwen2-7b");
    m = loom_model_data_model(d);
    module_is(m, 0, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 28, 3584, 18944, 28, 4,
              1, 1, 1);
    ck_assert_int_eq(m->modules[0].vocab, 152064);
    loom_model_data_free(d);
}
END_TEST

/* Mixtral 8x7B as a dense model of the 2 experts a token runs through. */
START_TEST(moe_as_dense_active_experts)
{
    loom_model_data *d = load("mixtral-8x7b");
    const loom_model *m = loom_model_data_model(d);
    module_is(m, 0, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 32, 4096, 2 * 14336, 32,
              8, 1, 1, 1);
    loom_model_data_free(d);
}
END_TEST

/* LLaVA-1.5: CLIP ViT-L/14 at 336 px gives (336/14)^2 = 576 patch tokens
 * (no class token), feeding a Llama text model. */
START_TEST(llava_vision_tower_feeds_the_llm)
{
    loom_model_data *d = load("llava-1.5-7b");
    const loom_model *m = loom_model_data_model(d);
    ck_assert_int_eq(m->n_modules, 2);
    module_is(m, 0, "vision", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 24, 1024, 4096, 16, 16,
              0, 0, 576);
    module_is(m, 1, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 32, 4096, 11008, 32, 32,
              1, 1, 1);
    ck_assert_int_eq(m->modules[1].n_inputs, 1);
    ck_assert_int_eq(m->modules[1].inputs[0], 0);
    ck_assert_int_eq(m->modules[1].vocab, 32064);
    loom_model_data_free(d);
}
END_TEST

/* Qwen2-VL: 32 blocks of width 1280, MLP 4x; a 448-px image is 32x32
 * patches of 14 px, which the blocks run on, merged 2x2 into 256 tokens
 * for the language model. */
START_TEST(qwen2_vl)
{
    loom_model_data *d = load("qwen2-vl-7b");
    const loom_model *m = loom_model_data_model(d);
    module_is(m, 0, "vision", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 32, 1280, 5120, 16, 16,
              0, 0, 256);
    module_is(m, 1, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 28, 3584, 18944, 28, 4, 1,
              1, 1);
    ck_assert_int_eq(loom_module_patches(&m->modules[0]), 1024);
    ck_assert_int_eq(loom_module_patches(&m->modules[1]), 1);
    loom_model_data_free(d);
}
END_TEST

/* SigLIP so400m/14 at 384 px: floor(384/14)^2 = 27^2 = 729 patches, the
 * encoder alone as the model. */
START_TEST(siglip_encoder_alone)
{
    loom_model_data *d = load("siglip-so400m");
    const loom_model *m = loom_model_data_model(d);
    ck_assert_int_eq(m->n_modules, 1);
    module_is(m, 0, "vision", LOOM_MODULE_BACKBONE, LOOM_MODALITY_IMAGE, 27, 1152, 4304, 16,
              16, 0, 0, 729);
    loom_model_data_free(d);
}
END_TEST

/* Errors name the file and the field, and list the supported families. */
START_TEST(unknown_and_broken_configs)
{
    loom_model_data *m = NULL;
    loom_error err = {0, ""};
    const char *f = loom_test_tmpfile(".json", "{\"model_type\": \"gpt_neox\", "
                                               "\"hidden_size\": 4096}");
    ck_assert_int_eq(loom_model_load(f, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, ": model_type: expected a supported Hugging "
                                              "Face architecture (llama, mistral, qwen2, "
                                              "mixtral, llava, qwen2_vl, clip, "));
    ck_assert_ptr_nonnull(strstr(err.message, "found \"gpt_neox\""));

    f = loom_test_tmpfile(".json", "{\"model_type\": \"llama\", \"hidden_size\": 4096, "
                                   "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                                   "\"vocab_size\": 32000}");
    ck_assert_int_eq(loom_model_load(f, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "intermediate_size"));

    f = loom_test_tmpfile(".json", "{\"model_type\": \"llava\", \"text_config\": {}, "
                                   "\"vision_config\": {\"hidden_size\": 1024, "
                                   "\"intermediate_size\": 4096, \"num_hidden_layers\": 24, "
                                   "\"num_attention_heads\": 7}}");
    ck_assert_int_eq(loom_model_load(f, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "vision_config.num_attention_heads: expected a "
                                              "divisor of hidden_size (1024), found 7"));

    f = loom_test_tmpfile(".json", "{\"architectures\": [\"X\"]}");
    ck_assert_int_eq(loom_model_load(f, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "model_type"));
    ck_assert_ptr_null(m);
}
END_TEST

/* A config plans end to end through the CLI. */
START_TEST(plans_from_the_cli)
{
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "'%s' plan --model '%s' --parallel tp=4,pp=4 --iterations 1 "
             "--json 2>&1", loom_test_bin("bin/loom"),
             loom_test_src("examples/models/hf/llava-1.5-7b.json"));
    ck_assert_msg(loom_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "\"makespan_ms\""));
    free(out);
}
END_TEST

static Suite *hf_suite(void)
{
    Suite *s = suite_create("hf_config");
    TCase *tc = tcase_create("families");
    tcase_add_test(tc, decoder_only_language_models);
    tcase_add_test(tc, moe_as_dense_active_experts);
    tcase_add_test(tc, llava_vision_tower_feeds_the_llm);
    tcase_add_test(tc, qwen2_vl);
    tcase_add_test(tc, siglip_encoder_alone);
    tcase_add_test(tc, unknown_and_broken_configs);
    tcase_add_test(tc, plans_from_the_cli);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(hf_suite());
}
