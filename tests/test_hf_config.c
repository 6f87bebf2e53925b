/* test_hf_config.c - models from Hugging Face config.json files as
 * published (core/problem/hf_config.c): the layer shapes, image tokens and
 * module graph each supported family gives, the config classes' defaults
 * for omitted fields, parameter counts against the published sizes, and
 * the errors for unknown or broken configs. Fixtures: examples/models/hf/. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include <loom/sys/problem.h>
#include "problem_inputs.h"

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

/* Parameters of module m by the closed form the cost model uses per layer
 * (plugins/roofline/roofline_memory.c): QKV h(h + 2 kv h / heads), output
 * h^2, MLP 3hf (SwiGLU) or 2hf, two norms 4h; plus an untied embedding and
 * LM head of vocab x h each. Biases, patch embeddings and projectors are
 * not in it. */
static double params_of(const loom_model *m)
{
    double p = 0;
    for (int i = 0; i < m->n_modules; i++) {
        const loom_module *mod = &m->modules[i];
        for (int l = 0; l < mod->n_layers; l++) {
            const loom_layer *L = &mod->layers[l];
            double h = (double)L->hidden, f = (double)L->ffn_hidden;
            double kv = h * L->kv_heads / L->heads;
            p += h * (h + 2 * kv) + h * h + (L->gated_ffn ? 3 : 2) * h * f + 4 * h;
        }
        if (mod->vocab > 0)
            p += 2.0 * (double)mod->vocab * (double)mod->layers[0].hidden;
    }
    return p;
}

/* Asserts the closed-form count of fixture `name` is `exact`, and that it
 * plus `omitted` (what the loader does not model, in closed form at the
 * call) lies within half a unit of the published figure's last digit. */
static void params_are(const char *name, double exact, double omitted, double published,
                       double unit)
{
    loom_model_data *d = load(name);
    double p = params_of(loom_model_data_model(d));
    loom_model_data_free(d);
    ck_assert_msg(p == exact, "%s: %.0f parameters, expected %.0f", name, p, exact);
    ck_assert_msg(fabs(p + omitted - published) <= unit / 2, "%s: %.0f + %.0f omitted is not "
                  "%.3g within %.3g", name, p, omitted, published, unit / 2);
}

START_TEST(decoder_only_language_models)
{
    loom_model_data *d = load("llama-3-8b");
    const loom_model *m = loom_model_data_model(d);
    ck_assert_int_eq(m->n_modules, 1);
    ck_assert_str_eq(m->name, "llama"); /* no _name_or_path as published */
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

/* LLaVA-1.5 as llava-hf publishes it: CLIP ViT-L/14 at 336 px runs on
 * (336/14)^2 = 576 patches and the class token, and hands the 576 patch
 * features to the LM; text_config gives only vocab_size, so the Llama
 * shape is LlamaConfig's defaults (4096, 11008, 32 layers, 32 heads, no
 * GQA). */
START_TEST(llava_vision_tower_feeds_the_llm)
{
    loom_model_data *d = load("llava-1.5-7b");
    const loom_model *m = loom_model_data_model(d);
    ck_assert_int_eq(m->n_modules, 2);
    module_is(m, 0, "vision", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 24, 1024, 4096, 16, 16,
              0, 0, 576);
    ck_assert_int_eq(loom_module_patches(&m->modules[0]), 577);
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

/* Qwen2.5-VL: the tower's width is vision_config.hidden_size (1280) and its
 * MLP a SwiGLU of 3420; the same 1024 patches and 256 tokens per image. */
START_TEST(qwen2_5_vl)
{
    loom_model_data *d = load("qwen2.5-vl-7b");
    const loom_model *m = loom_model_data_model(d);
    module_is(m, 0, "vision", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 32, 1280, 3420, 16, 16,
              1, 0, 256);
    ck_assert_int_eq(loom_module_patches(&m->modules[0]), 1024);
    module_is(m, 1, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 28, 3584, 18944, 28, 4, 1,
              1, 1);
    ck_assert_int_eq(m->modules[1].vocab, 152064);
    loom_model_data_free(d);
}
END_TEST

/* InternVL2.5-8B: InternViT-300M at 448 px runs on 32^2 = 1024 patches and
 * the class token; pixel shuffle at downsample_ratio 0.5 hands 256 tokens
 * to InternLM2.5-7B (picked by llm_config.architectures[0]). */
START_TEST(internvl_chat)
{
    loom_model_data *d = load("internvl2.5-8b");
    const loom_model *m = loom_model_data_model(d);
    module_is(m, 0, "vision", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 24, 1024, 4096, 16, 16,
              0, 0, 256);
    ck_assert_int_eq(loom_module_patches(&m->modules[0]), 1025);
    module_is(m, 1, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 32, 4096, 14336, 32, 8, 1,
              1, 1);
    ck_assert_int_eq(m->modules[1].vocab, 92553);
    loom_model_data_free(d);
}
END_TEST

/* SigLIP so400m/14 at 384 px (the published "siglip" config; its
 * text_config is not read): floor(384/14)^2 = 27^2 = 729 patches, the
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

/* Loads a config given as text; asserts success. */
static loom_model_data *load_text(const char *json)
{
    loom_model_data *m = NULL;
    loom_error err = {0, ""};
    const char *f = loom_test_tmpfile(".json", json);
    ck_assert_msg(loom_model_load(f, &m, &err) == LOOM_OK, "%s: %s", json, err.message);
    return m;
}

/* A config of nothing but its model_type is the config class's defaults,
 * as AutoConfig builds it (hf_defaults.c). */
START_TEST(omitted_fields_take_the_class_defaults)
{
    loom_model_data *d = load_text("{\"model_type\": \"llama\"}");
    const loom_model *m = loom_model_data_model(d);
    module_is(m, 0, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 32, 4096, 11008, 32, 32, 1,
              1, 1);
    ck_assert_int_eq(m->modules[0].vocab, 32000);
    loom_model_data_free(d);

    d = load_text("{\"model_type\": \"qwen2\", \"num_key_value_heads\": null, "
                  "\"head_dim\": 128}");
    m = loom_model_data_model(d);
    module_is(m, 0, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 32, 4096, 22016, 32, 32, 1,
              1, 1);
    ck_assert_int_eq(m->modules[0].vocab, 151936);
    loom_model_data_free(d);

    d = load_text("{\"model_type\": \"mixtral\", \"num_local_experts\": 4}");
    m = loom_model_data_model(d);
    module_is(m, 0, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 32, 4096, 2 * 14336, 32, 8,
              1, 1, 1);
    loom_model_data_free(d);

    /* Qwen2-MoE: 4 of 60 experts of 1408 plus the 5632 shared expert */
    d = load_text("{\"model_type\": \"qwen2_moe\"}");
    m = loom_model_data_model(d);
    module_is(m, 0, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 24, 2048, 4 * 1408 + 5632,
              16, 16, 1, 1, 1);
    loom_model_data_free(d);

    /* LlavaConfig without sub-configs: its CLIP ViT-L/14-336 and LlamaConfig */
    d = load_text("{\"model_type\": \"llava\"}");
    m = loom_model_data_model(d);
    module_is(m, 0, "vision", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 24, 1024, 4096, 16, 16,
              0, 0, 576);
    module_is(m, 1, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 32, 4096, 11008, 32, 32, 1,
              1, 1);
    loom_model_data_free(d);

    /* ... but a vision_config given is CLIPVisionConfig's defaults: ViT-B/32
     * at 224 px, 7^2 = 49 patches, the class token kept under "full" */
    d = load_text("{\"model_type\": \"llava\", \"vision_config\": {}, "
                  "\"vision_feature_select_strategy\": \"full\", "
                  "\"text_config\": {\"model_type\": \"mistral\"}}");
    m = loom_model_data_model(d);
    module_is(m, 0, "vision", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 12, 768, 3072, 12, 12,
              0, 0, 50);
    module_is(m, 1, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 32, 4096, 14336, 32, 8, 1,
              1, 1);
    loom_model_data_free(d);

    /* Qwen2.5-VL's 72B defaults; its vision hidden_size defaults to 3584 */
    d = load_text("{\"model_type\": \"qwen2_5_vl\"}");
    m = loom_model_data_model(d);
    module_is(m, 0, "vision", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 32, 3584, 3420, 16, 16,
              1, 0, 256);
    module_is(m, 1, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 80, 8192, 29568, 64, 8, 1,
              1, 1);
    loom_model_data_free(d);

    /* InternVLChatConfig: InternViT-6B at 224 px ((224/14)^2 = 256 patches
     * + class token, 64 tokens after pixel shuffle) and InternLM2 */
    d = load_text("{\"model_type\": \"internvl_chat\"}");
    m = loom_model_data_model(d);
    module_is(m, 0, "vision", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 48, 3200, 12800, 25, 25,
              0, 0, 64);
    ck_assert_int_eq(loom_module_patches(&m->modules[0]), 257);
    module_is(m, 1, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 32, 4096, 11008, 32, 32, 1,
              1, 1);
    ck_assert_int_eq(m->modules[1].vocab, 103168);
    loom_model_data_free(d);

    /* an InternVL whose llm_config names Qwen2 by architectures[0] */
    d = load_text("{\"model_type\": \"internvl_chat\", \"llm_config\": "
                  "{\"architectures\": [\"Qwen2ForCausalLM\"], \"num_hidden_layers\": 24}}");
    m = loom_model_data_model(d);
    module_is(m, 1, "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 24, 4096, 22016, 32, 32, 1,
              1, 1);
    ck_assert_int_eq(m->modules[1].vocab, 151936);
    loom_model_data_free(d);
}
END_TEST

/* Each fixture's parameters against the size its publisher states. The
 * omitted parts are given in closed form: LLaVA's projector (1024x4096 and
 * 4096x4096 with biases), the Qwen-VL patch merger (LN, 5120x5120,
 * 5120x3584 with biases), InternVL's mlp1 (LN 4096, two 4096x4096 with
 * biases) and InternViT's patch and position embeddings. */
START_TEST(parameter_counts_match_the_published_sizes)
{
    params_are("llama-3-8b", 8030519296.0, 0, 8.03e9, 0.01e9);
    params_are("qwen2-7b", 7615684608.0, 0, 7.62e9, 0.01e9);
    /* Mixtral: the 12.9 B parameters a token runs through (46.7 B held) */
    params_are("mixtral-8x7b", 12879134720.0, 0, 12.9e9, 0.1e9);
    params_are("llava-1.5-7b", 7041286144.0, 1024.0 * 4096 + 4096 + 4096.0 * 4096 + 4096,
               7.06e9, 0.01e9);
    double merger = 2 * 1280 + 5120.0 * 5120 + 5120 + 5120.0 * 3584 + 3584;
    params_are("qwen2-vl-7b", 8244994048.0, merger, 8.29e9, 0.01e9);
    params_are("qwen2.5-vl-7b", 8245813248.0, merger - 1280, 8.29e9, 0.01e9);
    double mlp1 = 2 * 4096 + 2 * (4096.0 * 4096 + 4096);
    double vit_embed = 3 * 14 * 14 * 1024 + 1024 + 1025 * 1024 + 1024;
    params_are("internvl2.5-8b", 8040128512.0, mlp1 + vit_embed, 8.08e9, 0.01e9);
}
END_TEST

/* Expects loading `json` to fail with every fragment in `frags` (NULL
 * terminated) in the message. */
static void refused(const char *json, const char *const *frags)
{
    loom_model_data *m = NULL;
    loom_error err = {0, ""};
    const char *f = loom_test_tmpfile(".json", json);
    ck_assert_int_eq(loom_model_load(f, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_null(m);
    for (; *frags; frags++)
        ck_assert_msg(strstr(err.message, *frags), "\"%s\" not in: %s", *frags, err.message);
}

/* Errors name the file and the JSON path, expected vs found, and list the
 * supported types. */
START_TEST(unknown_and_broken_configs)
{
    refused("{\"model_type\": \"gpt_neox\", \"hidden_size\": 4096}",
            (const char *const[]){": model_type: expected a supported Hugging Face "
                                  "architecture (llama, mistral, mixtral, qwen2, qwen2_moe, "
                                  "internlm2, llava, qwen2_vl, qwen2_5_vl, internvl_chat, clip, "
                                  "siglip, clip_vision_model, siglip_vision_model), found "
                                  "\"gpt_neox\"", NULL});
    refused("{\"model_type\": \"llama\", \"hidden_size\": \"4096\"}",
            (const char *const[]){": hidden_size: expected an integer in [1, 1048576], found "
                                  "\"4096\"", NULL});
    refused("{\"model_type\": \"llava\", \"text_config\": {\"num_hidden_layers\": 32.5}}",
            (const char *const[]){": text_config.num_hidden_layers: expected an integer in "
                                  "[1, 100000], found 32.5", NULL});
    refused("{\"model_type\": \"llava\", \"text_config\": {\"model_type\": \"phi3\"}}",
            (const char *const[]){": text_config.model_type: expected a supported language "
                                  "model (llama, mistral, mixtral, qwen2, qwen2_moe, internlm2)"
                                  ", found \"phi3\"", NULL});
    refused("{\"model_type\": \"llava\", \"vision_config\": {\"hidden_size\": 1024, "
            "\"num_attention_heads\": 7}}",
            (const char *const[]){"vision_config.num_attention_heads: expected a divisor of "
                                  "hidden_size (1024), found 7", NULL});
    refused("{\"model_type\": \"qwen2_5_vl\", \"vision_config\": []}",
            (const char *const[]){": vision_config: expected an object", NULL});
    refused("{\"model_type\": \"internvl_chat\", \"downsample_ratio\": \"0.5\"}",
            (const char *const[]){": downsample_ratio: expected a number", NULL});
    refused("{\"model_type\": \"qwen2_moe\", \"decoder_sparse_step\": 2}",
            (const char *const[]){": decoder_sparse_step: expected every layer sparse", NULL});
    refused("{\"model_type\": \"qwen2\", \"num_key_value_heads\": 5}",
            (const char *const[]){"num_attention_heads: expected a multiple of "
                                  "num_key_value_heads (5)", NULL});
    /* Mistral-Nemo's 128-wide heads on a 5120 / 32 = 160 split */
    refused("{\"model_type\": \"mistral\", \"hidden_size\": 5120, \"head_dim\": 128}",
            (const char *const[]){": head_dim: expected hidden_size / num_attention_heads = 160 "
                                  "(Loom models no other head width), found 128", NULL});
    refused("{\"architectures\": [\"X\"]}", (const char *const[]){"model_type", NULL});
}
END_TEST

/* Every fixture plans end to end through the CLI, as published. */
START_TEST(plans_from_the_cli)
{
    static const char *const names[] = {"llama-3-8b", "qwen2-7b", "mixtral-8x7b",
                                        "llava-1.5-7b", "qwen2-vl-7b", "qwen2.5-vl-7b",
                                        "internvl2.5-8b", "siglip-so400m"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char cmd[2048], rel[256], *out = NULL;
        snprintf(rel, sizeof rel, "examples/models/hf/%s.json", names[i]);
        snprintf(cmd, sizeof cmd, "'%s' plan --model '%s' --parallel tp=4,pp=4 --iterations 1 "
                 "--json 2>&1", loom_test_bin("bin/loom"), loom_test_src(rel));
        ck_assert_msg(loom_test_run(cmd, &out) == 0, "%s: %s", names[i], out);
        ck_assert_ptr_nonnull(strstr(out, "\"makespan_ms\""));
        free(out);
    }
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
    tcase_add_test(tc, qwen2_5_vl);
    tcase_add_test(tc, internvl_chat);
    tcase_add_test(tc, siglip_encoder_alone);
    tcase_add_test(tc, omitted_fields_take_the_class_defaults);
    tcase_add_test(tc, parameter_counts_match_the_published_sizes);
    tcase_add_test(tc, unknown_and_broken_configs);
    tcase_add_test(tc, plans_from_the_cli);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(hf_suite());
}
