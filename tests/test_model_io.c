/* test_model_io.c - model presets, model.json parsing and its errors, the
 * parallel config string and parallel validation. */
#include <stdlib.h>
#include <string.h>
#include <loom/sys/problem.h>
#include "problem_inputs.h"
#include "testutil.h"

/* Loads model JSON text from a temporary file; returns the status and
 * leaves the message in *e. Frees the model on success. */
static int load_text(const char *json, loom_error *e)
{
    loom_model_data *m = NULL;
    memset(e, 0, sizeof *e);
    int rc = loom_model_load(loom_test_tmpfile(".json", json), &m, e);
    loom_model_data_free(m);
    return rc;
}

/* Asserts that `json` fails with EINVAL and a message containing `frag`. */
static void expect_error(const char *json, const char *frag)
{
    loom_error e;
    int rc = load_text(json, &e);
    ck_assert_int_eq(rc, LOOM_EINVAL);
    ck_assert_msg(strstr(e.message, frag) != NULL, "message \"%s\" lacks \"%s\"", e.message,
                  frag);
    ck_assert_msg(strstr(e.message, "/tmp/loom-test-") != NULL, "message \"%s\" lacks the file",
                  e.message);
}

/* Asserts two layers are identical field by field. */
static void layer_eq(const loom_layer *a, const loom_layer *b)
{
    ck_assert_int_eq(a->hidden, b->hidden);
    ck_assert_int_eq(a->ffn_hidden, b->ffn_hidden);
    ck_assert_int_eq(a->heads, b->heads);
    ck_assert_int_eq(a->kv_heads, b->kv_heads);
    ck_assert_int_eq(a->gated_ffn, b->gated_ffn);
    ck_assert_int_eq(a->causal, b->causal);
    ck_assert_int_eq(a->cross_attention, b->cross_attention);
}

/* Asserts two loaded models are identical, including parallel and family. */
static void model_eq(const loom_model_data *x, const loom_model_data *y)
{
    const loom_model *a = loom_model_data_model(x), *b = loom_model_data_model(y);
    ck_assert_str_eq(a->name, b->name);
    ck_assert_int_eq(a->n_modules, b->n_modules);
    for (int32_t i = 0; i < a->n_modules; i++) {
        const loom_module *p = &a->modules[i], *q = &b->modules[i];
        ck_assert_str_eq(p->name, q->name);
        ck_assert_int_eq(p->kind, q->kind);
        ck_assert_int_eq(p->modality, q->modality);
        ck_assert_int_eq(p->tokens_per_item, q->tokens_per_item);
        ck_assert_int_eq(p->vocab, q->vocab);
        ck_assert_int_eq(p->frozen, q->frozen);
        ck_assert_int_eq(p->n_inputs, q->n_inputs);
        for (int32_t k = 0; k < p->n_inputs; k++)
            ck_assert_int_eq(p->inputs[k], q->inputs[k]);
        ck_assert_int_eq(p->n_layers, q->n_layers);
        for (int32_t l = 0; l < p->n_layers; l++)
            layer_eq(&p->layers[l], &q->layers[l]);
    }
    const loom_parallel *pa = loom_model_data_parallel(x), *pb = loom_model_data_parallel(y);
    ck_assert_int_eq(pa == NULL, pb == NULL);
    if (pa) {
        ck_assert_int_eq(pa->tp, pb->tp);
        ck_assert_int_eq(pa->pp, pb->pp);
        ck_assert_int_eq(pa->dp, pb->dp);
        ck_assert_int_eq(pa->vpp, pb->vpp);
        ck_assert_int_eq(pa->microbatches, pb->microbatches);
    }
    const char *fa = loom_model_data_family(x), *fb = loom_model_data_family(y);
    ck_assert_int_eq(fa == NULL, fb == NULL);
    if (fa)
        ck_assert_str_eq(fa, fb);
}

/* Loads a model that must load. */
static loom_model_data *must_load(const char *spec)
{
    loom_error e;
    loom_model_data *m = NULL;
    memset(&e, 0, sizeof e);
    int rc = loom_model_load(spec, &m, &e);
    ck_assert_msg(rc == LOOM_OK, "%s: %s", spec, e.message);
    ck_assert_ptr_nonnull(m);
    return m;
}

START_TEST(test_every_preset_loads)
{
    const char *const *names = loom_model_preset_names();
    int n = 0;
    for (; names[n]; n++) {
        loom_model_data *m = must_load(names[n]);
        const loom_model *mm = loom_model_data_model(m);
        ck_assert_str_eq(mm->name, names[n]);
        ck_assert_int_ge(mm->n_modules, 1);
        for (int32_t i = 0; i < mm->n_modules; i++)
            ck_assert_int_ge(mm->modules[i].n_layers, 1);
        const loom_parallel *p = loom_model_data_parallel(m);
        if (p) {
            loom_error e;
            memset(&e, 0, sizeof e);
            ck_assert_msg(loom_parallel_validate(p, mm, &e) == LOOM_OK, "%s", e.message);
        }
        loom_model_data_free(m);
    }
    ck_assert_int_eq(n, 15);
}
END_TEST

START_TEST(test_preset_vlm_s)
{
    loom_model_data *m = must_load("VLM-S"); /* case-insensitive */
    const loom_model *mm = loom_model_data_model(m);
    ck_assert_int_eq(mm->n_modules, 2);
    const loom_module *vit = &mm->modules[0], *llm = &mm->modules[1];
    ck_assert_str_eq(vit->name, "vit");
    ck_assert_int_eq(vit->kind, LOOM_MODULE_ENCODER);
    ck_assert_int_eq(vit->modality, LOOM_MODALITY_IMAGE);
    ck_assert_int_eq(vit->tokens_per_item, 169);
    ck_assert_int_eq(vit->n_layers, 63);
    ck_assert_int_eq(vit->layers[62].hidden, 1792);
    ck_assert_int_eq(vit->layers[0].ffn_hidden, 15360);
    ck_assert_int_eq(vit->layers[0].heads, 16);
    ck_assert_int_eq(vit->layers[0].kv_heads, 16);
    ck_assert_int_eq(vit->layers[0].gated_ffn, 0);
    ck_assert_int_eq(vit->n_inputs, 0);
    ck_assert_str_eq(llm->name, "llm");
    ck_assert_int_eq(llm->kind, LOOM_MODULE_BACKBONE);
    ck_assert_int_eq(llm->modality, LOOM_MODALITY_TEXT);
    ck_assert_int_eq(llm->vocab, 128256);
    ck_assert_int_eq(llm->n_layers, 32);
    ck_assert_int_eq(llm->layers[31].hidden, 4096);
    ck_assert_int_eq(llm->layers[0].ffn_hidden, 14336);
    ck_assert_int_eq(llm->layers[0].heads, 32);
    ck_assert_int_eq(llm->layers[0].kv_heads, 8);
    ck_assert_int_eq(llm->layers[0].gated_ffn, 1);
    ck_assert_int_eq(llm->layers[0].causal, 1);
    ck_assert_int_eq(llm->n_inputs, 1);
    ck_assert_int_eq(llm->inputs[0], 0);
    const loom_parallel *p = loom_model_data_parallel(m);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->tp, 4);
    ck_assert_int_eq(p->pp, 4);
    ck_assert_int_eq(p->dp, 1);
    ck_assert_int_eq(p->vpp, 1);
    ck_assert_int_eq(p->microbatches, 16);
    ck_assert_str_eq(loom_model_data_family(m), "interleaved");
    loom_model_data_free(m);
}
END_TEST

START_TEST(test_preset_t2v_and_xl)
{
    loom_model_data *m = must_load("t2v-l");
    const loom_model *mm = loom_model_data_model(m);
    ck_assert_str_eq(mm->modules[0].name, "text_encoder");
    ck_assert_int_eq(mm->modules[0].kind, LOOM_MODULE_ENCODER);
    ck_assert_int_eq(mm->modules[0].modality, LOOM_MODALITY_TEXT);
    ck_assert_int_eq(mm->modules[0].n_layers, 64);
    ck_assert_int_eq(mm->modules[0].layers[0].hidden, 5120);
    ck_assert_int_eq(mm->modules[0].layers[0].heads, 40);
    ck_assert_int_eq(mm->modules[0].vocab, 152064);
    const loom_module *dit = &mm->modules[1];
    ck_assert_str_eq(dit->name, "dit");
    ck_assert_int_eq(dit->kind, LOOM_MODULE_DECODER);
    ck_assert_int_eq(dit->modality, LOOM_MODALITY_VIDEO);
    ck_assert_int_eq(dit->tokens_per_item, 4608); /* 16 FPS / 8 * (768/8/2)^2 */
    ck_assert_int_eq(dit->n_layers, 48);
    ck_assert_int_eq(dit->layers[0].hidden, 6144);
    ck_assert_int_eq(dit->layers[0].cross_attention, 1);
    ck_assert_int_eq(dit->layers[0].causal, 0);
    ck_assert_int_eq(dit->inputs[0], 0);
    ck_assert_int_eq(loom_model_data_parallel(m)->pp, 8);
    ck_assert_int_eq(loom_model_data_parallel(m)->microbatches, 32);
    ck_assert_str_eq(loom_model_data_family(m), "video");
    loom_model_data_free(m);

    m = must_load("vlm-xl");
    mm = loom_model_data_model(m);
    ck_assert_int_eq(mm->modules[1].n_layers, 96);
    ck_assert_int_eq(mm->modules[1].layers[0].hidden, 12288);
    ck_assert_int_eq(mm->modules[1].layers[0].ffn_hidden, 49152);
    ck_assert_int_eq(mm->modules[1].vocab, 50257);
    ck_assert_int_eq(mm->modules[0].n_layers, 48);
    ck_assert_int_eq(loom_model_data_parallel(m)->dp, 128);
    ck_assert_int_eq(loom_model_data_parallel(m)->tp, 8);
    ck_assert_int_eq(loom_model_data_parallel(m)->pp, 8);
    loom_model_data_free(m);

    m = must_load("t2v-xl");
    ck_assert_int_eq(loom_model_data_parallel(m)->dp, 96);
    ck_assert_int_eq(loom_model_data_parallel(m)->pp, 4);
    ck_assert_int_eq(loom_model_data_parallel(m)->microbatches, 16);
    ck_assert_int_eq(loom_model_data_model(m)->modules[0].n_layers, 80);
    loom_model_data_free(m);
}
END_TEST

START_TEST(test_single_model_presets)
{
    loom_model_data *m = must_load("llama3-8b");
    const loom_model *mm = loom_model_data_model(m);
    ck_assert_int_eq(mm->n_modules, 1);
    ck_assert_int_eq(mm->modules[0].kind, LOOM_MODULE_BACKBONE);
    ck_assert_ptr_null(loom_model_data_parallel(m));
    ck_assert_ptr_null(loom_model_data_family(m));
    loom_model_data_free(m);

    m = must_load("qwen2-72b");
    mm = loom_model_data_model(m);
    ck_assert_int_eq(mm->modules[0].n_layers, 80);
    ck_assert_int_eq(mm->modules[0].layers[0].ffn_hidden, 29568);
    ck_assert_int_eq(mm->modules[0].layers[0].heads, 64);
    ck_assert_int_eq(mm->modules[0].layers[0].kv_heads, 8);
    loom_model_data_free(m);

    m = must_load("dit-5b");
    mm = loom_model_data_model(m);
    ck_assert_int_eq(mm->modules[0].n_layers, 28);
    ck_assert_int_eq(mm->modules[0].layers[0].hidden, 3584);
    ck_assert_int_eq(mm->modules[0].layers[0].ffn_hidden, 10240);
    ck_assert_int_eq(mm->modules[0].layers[0].heads, 28);
    ck_assert_str_eq(loom_model_data_family(m), "video");
    loom_model_data_free(m);

    m = must_load("vit-22b");
    mm = loom_model_data_model(m);
    ck_assert_int_eq(mm->modules[0].kind, LOOM_MODULE_ENCODER);
    ck_assert_int_eq(mm->modules[0].layers[0].ffn_hidden, 24576);
    loom_model_data_free(m);
}
END_TEST

START_TEST(test_example_files_equal_presets)
{
    static const char *const combos[] = {"vlm-s", "vlm-m", "vlm-l", "t2v-s",
                                         "t2v-l", "vlm-xl", "t2v-xl", NULL};
    for (int i = 0; combos[i]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "examples/models/%s.json", combos[i]);
        loom_model_data *f = must_load(loom_test_src(rel));
        loom_model_data *p = must_load(combos[i]);
        model_eq(f, p);
        loom_model_data_free(f);
        loom_model_data_free(p);
    }
}
END_TEST

START_TEST(test_groups_order_and_defaults)
{
    const char *json =
        "{\"name\": \"tiny\", \"parallel\": {\"pp\": 2},\n"
        " \"modules\": [\n"
        "  {\"name\": \"llm\", \"kind\": \"backbone\", \"inputs\": [\"enc\"], \"frozen\": true,\n"
        "   \"layers\": [{\"count\": 2, \"hidden\": 64, \"ffn_hidden\": 256, \"heads\": 4},\n"
        "              {\"count\": 3, \"hidden\": 128, \"ffn_hidden\": 512, \"heads\": 8,\n"
        "               \"kv_heads\": 2, \"gated_ffn\": true, \"causal\": true}]},\n"
        "  {\"name\": \"enc\", \"kind\": \"encoder\", \"modality\": \"audio\",\n"
        "   \"tokens_per_item\": 50, \"patches_per_item\": 200,\n"
        "   \"layers\": {\"count\": 1, \"hidden\": 32, \"ffn_hidden\": 64, \"heads\": 2,\n"
        "              \"cross_attention\": true}}]}\n";
    loom_model_data *m = must_load(loom_test_tmpfile(".json", json));
    const loom_model *mm = loom_model_data_model(m);
    ck_assert_int_eq(mm->n_modules, 2);
    /* topological order: the encoder comes first although listed second */
    ck_assert_str_eq(mm->modules[0].name, "enc");
    ck_assert_int_eq(mm->modules[0].modality, LOOM_MODALITY_AUDIO);
    ck_assert_int_eq(mm->modules[0].tokens_per_item, 50);
    ck_assert_int_eq(mm->modules[0].patches_per_item, 200);
    ck_assert_int_eq(mm->modules[1].patches_per_item, 0); /* absent: tokens_per_item */
    ck_assert_int_eq(mm->modules[0].layers[0].kv_heads, 2); /* defaults to heads */
    ck_assert_int_eq(mm->modules[0].layers[0].cross_attention, 1);
    const loom_module *llm = &mm->modules[1];
    ck_assert_str_eq(llm->name, "llm");
    ck_assert_int_eq(llm->modality, LOOM_MODALITY_TEXT);  /* default */
    ck_assert_int_eq(llm->tokens_per_item, 1);             /* default */
    ck_assert_int_eq(llm->vocab, 0);
    ck_assert_int_eq(llm->frozen, 1);
    ck_assert_int_eq(llm->n_inputs, 1);
    ck_assert_int_eq(llm->inputs[0], 0);
    ck_assert_int_eq(llm->n_layers, 5);
    ck_assert_int_eq(llm->layers[0].hidden, 64);
    ck_assert_int_eq(llm->layers[1].hidden, 64);
    ck_assert_int_eq(llm->layers[1].kv_heads, 4);
    ck_assert_int_eq(llm->layers[2].hidden, 128);
    ck_assert_int_eq(llm->layers[4].kv_heads, 2);
    ck_assert_int_eq(llm->layers[4].gated_ffn, 1);
    ck_assert_int_eq(llm->layers[4].causal, 1);
    const loom_parallel *p = loom_model_data_parallel(m);
    ck_assert_int_eq(p->tp, 1);
    ck_assert_int_eq(p->pp, 2);
    ck_assert_int_eq(p->dp, 1);
    ck_assert_int_eq(p->vpp, 1);
    ck_assert_int_eq(p->microbatches, 8); /* 4 * pp */
    ck_assert_ptr_null(loom_model_data_family(m)); /* text and audio only */
    loom_model_data_free(m);
}
END_TEST

#define LAYER "{\"count\": 2, \"hidden\": 64, \"ffn_hidden\": 256, \"heads\": 4}"
#define MOD(name, extra) "{\"name\": \"" name "\", \"kind\": \"encoder\", " extra \
    "\"layers\": " LAYER "}"

START_TEST(test_not_found)
{
    loom_error e;
    loom_model_data *m = NULL;
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_model_load("vlm-xxl", &m, &e), LOOM_ENOTFOUND);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(e.message, "\"vlm-xxl\""));
    ck_assert_ptr_nonnull(strstr(e.message, "vlm-s, vlm-m"));
    ck_assert_ptr_nonnull(strstr(e.message, "gpt-175b"));
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_model_load("/nonexistent/model.json", &m, &e), LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(e.message, "/nonexistent/model.json: cannot open"));
    ck_assert_ptr_nonnull(strstr(e.message, "model presets: vlm-s"));
}
END_TEST

START_TEST(test_syntax_and_fields)
{
    expect_error("{\"name\": \"x\",\n \"modules\": [}", ":2:14: malformed JSON");
    expect_error("{\"name\": \"x\", \"modles\": []}", "unknown field \"modles\"");
    expect_error("{\"name\": \"x\", \"modules\": [" MOD("a", "\"bogus\": 1, ") "]}",
                 "modules[0]: unknown field \"bogus\"");
    expect_error("{\"modules\": [" MOD("a", "") "]}",
                 "name: expected a string, found nothing (missing field)");
    expect_error("{\"name\": \"a b\", \"modules\": [" MOD("a", "") "]}",
                 "name: expected a name of 1 to 63 letters, digits");
    expect_error("{\"name\": \"x\", \"name\": \"y\", \"modules\": [" MOD("a", "") "]}",
                 "found \"name\" twice");
    expect_error("{\"name\": \"x\", \"modules\": []}", "modules: expected 1 to 64 modules, found 0");
    expect_error("{\"name\": \"x\", \"modules\": {}}", "modules: expected an array, found an object");
    expect_error("{\"name\": \"x\", \"workload_family\": \"pics\", \"modules\": [" MOD("a", "") "]}",
                 "workload_family: expected one of image-pairs, interleaved, video, "
                 "rise-and-fall, text, found \"pics\"");
}
END_TEST

START_TEST(test_module_errors)
{
    expect_error("{\"name\": \"x\", \"modules\": [{\"name\": \"a\", \"kind\": \"enc\", "
                 "\"layers\": " LAYER "}]}",
                 "modules[0].kind: expected one of encoder, backbone, decoder, found \"enc\"");
    expect_error("{\"name\": \"x\", \"modules\": [" MOD("a", "\"modality\": \"smell\", ") "]}",
                 "modules[0].modality: expected one of text, image, video, audio, found \"smell\"");
    expect_error("{\"name\": \"x\", \"modules\": [" MOD("a", "\"tokens_per_item\": 0, ") "]}",
                 "modules[0].tokens_per_item: expected an integer in [1, 16777216], found 0");
    expect_error("{\"name\": \"x\", \"modules\": [" MOD("a", "\"patches_per_item\": -3, ") "]}",
                 "modules[0].patches_per_item: expected an integer in [1, 16777216], found -3");
    expect_error("{\"name\": \"x\", \"modules\": [{\"name\": \"a\", \"kind\": \"encoder\"}]}",
                 "modules[0].layers: expected a layer group object or an array of them, "
                 "found nothing");
    expect_error("{\"name\": \"x\", \"modules\": [{\"name\": \"a\", \"kind\": \"encoder\", "
                 "\"layers\": 12}]}",
                 "modules[0].layers: expected a layer group object or an array of them, found 12");
    expect_error("{\"name\": \"x\", \"modules\": [{\"name\": \"a\", \"kind\": \"encoder\", "
                 "\"layers\": []}]}", "modules[0].layers: expected 1 to 100000 layer groups, found 0");
    expect_error("{\"name\": \"x\", \"modules\": [{\"name\": \"a\", \"kind\": \"encoder\", "
                 "\"layers\": {\"count\": 0, \"hidden\": 64, \"ffn_hidden\": 1, \"heads\": 1}}]}",
                 "modules[0].layers.count: expected an integer in [1, 100000], found 0");
    expect_error("{\"name\": \"x\", \"modules\": [{\"name\": \"a\", \"kind\": \"encoder\", "
                 "\"layers\": {\"count\": 1, \"hidden\": -5, \"ffn_hidden\": 1, \"heads\": 1}}]}",
                 "modules[0].layers.hidden: expected an integer in [1, 1048576], found -5");
    expect_error("{\"name\": \"x\", \"modules\": [{\"name\": \"a\", \"kind\": \"encoder\", "
                 "\"layers\": {\"count\": 1, \"hidden\": 64.5, \"ffn_hidden\": 1, \"heads\": 1}}]}",
                 "modules[0].layers.hidden: expected an integer in [1, 1048576], found 64.5");
    expect_error("{\"name\": \"x\", \"modules\": [{\"name\": \"a\", \"kind\": \"encoder\", "
                 "\"layers\": [" LAYER ", {\"count\": 1, \"hidden\": 64, \"ffn_hidden\": 1, "
                 "\"heads\": 32, \"kv_heads\": 7}]}]}",
                 "modules[0].layers[1].kv_heads: expected a divisor of heads (32), found 7");
    expect_error("{\"name\": \"x\", \"modules\": [{\"name\": \"a\", \"kind\": \"encoder\", "
                 "\"layers\": {\"count\": 1, \"hidden\": 100, \"ffn_hidden\": 1, \"heads\": 3}}]}",
                 "modules[0].layers.hidden: expected a multiple of heads (3), found 100");
    expect_error("{\"name\": \"x\", \"modules\": [{\"name\": \"a\", \"kind\": \"encoder\", "
                 "\"layers\": {\"count\": 1, \"hidden\": 64, \"ffn_hidden\": 1, \"heads\": 4, "
                 "\"causal\": 1}}]}",
                 "modules[0].layers.causal: expected true or false, found 1");
    expect_error("{\"name\": \"x\", \"modules\": [{\"name\": \"a\", \"kind\": \"encoder\", "
                 "\"layers\": [{\"count\": 60000, \"hidden\": 64, \"ffn_hidden\": 1, \"heads\": 4},"
                 "{\"count\": 60000, \"hidden\": 64, \"ffn_hidden\": 1, \"heads\": 4}]}]}",
                 "modules[0].layers: expected at most 100000 layers in total");
}
END_TEST

START_TEST(test_graph_errors)
{
    expect_error("{\"name\": \"x\", \"modules\": [" MOD("vit", "") ", " MOD("vit", "") "]}",
                 "modules[1].name: expected a unique module name, found \"vit\" again "
                 "(also modules[0].name)");
    expect_error("{\"name\": \"x\", \"modules\": [" MOD("vit", "") ", "
                 MOD("llm", "\"inputs\": [\"vitt\"], ") "]}",
                 "modules[1].inputs[0]: expected the name of a module (vit, llm), found \"vitt\"");
    expect_error("{\"name\": \"x\", \"modules\": [" MOD("vit", "") ", "
                 MOD("llm", "\"inputs\": [\"vit\", \"vit\"], ") "]}",
                 "modules[1].inputs[1]: expected each input once, found \"vit\" twice");
    expect_error("{\"name\": \"x\", \"modules\": [" MOD("llm", "\"inputs\": [3], ") "]}",
                 "modules[0].inputs[0]: expected a module name, found 3");
    expect_error("{\"name\": \"x\", \"modules\": [" MOD("a", "\"inputs\": [\"c\"], ") ", "
                 MOD("b", "\"inputs\": [\"a\"], ") ", " MOD("c", "\"inputs\": [\"b\"], ") "]}",
                 "modules: expected an acyclic module graph (inputs), found the cycle "
                 "b -> c -> a -> b");
    expect_error("{\"name\": \"x\", \"modules\": [" MOD("z", "") ", "
                 MOD("vit", "\"inputs\": [\"vit\"], ") "]}", "found the cycle vit -> vit");
}
END_TEST

START_TEST(test_too_many_modules)
{
    char *json = malloc(65 * 160 + 64);
    size_t n = (size_t)sprintf(json, "{\"name\": \"x\", \"modules\": [");
    for (int i = 0; i < 65; i++)
        n += (size_t)sprintf(json + n, "%s{\"name\": \"m%d\", \"kind\": \"encoder\", "
                             "\"layers\": " LAYER "}", i ? ", " : "", i);
    sprintf(json + n, "]}");
    expect_error(json, "modules: expected 1 to 64 modules, found 65");
    free(json);
}
END_TEST

START_TEST(test_file_parallel_errors)
{
    expect_error("{\"name\": \"x\", \"parallel\": {\"tp\": 0}, \"modules\": [" MOD("a", "") "]}",
                 "parallel.tp: expected an integer in [1, 65536], found 0");
    expect_error("{\"name\": \"x\", \"parallel\": {\"pipeline\": 2}, \"modules\": [" MOD("a", "") "]}",
                 "parallel: unknown field \"pipeline\"");
    expect_error("{\"name\": \"x\", \"parallel\": {\"tp\": 1024, \"pp\": 1024, \"dp\": 2}, "
                 "\"modules\": [" MOD("a", "") "]}",
                 "parallel: expected tp*pp*dp*cp <= 1048576 GPUs, found 2097152");
    expect_error("{\"name\": \"x\", \"parallel\": {\"tp\": 8}, \"modules\": [" MOD("a", "") "]}",
                 "parallel.tp: expected a divisor of every layer's attention heads, found 8 "
                 "(module \"a\" layer 0 has 4 heads)");
}
END_TEST

START_TEST(test_parallel_parse)
{
    loom_parallel p = {1, 1, 1, 1, 1, 0};
    loom_error e;
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_parallel_parse("tp=4,pp=4,dp=2,vpp=3,mb=16", &p, &e), LOOM_OK);
    ck_assert_int_eq(p.tp, 4);
    ck_assert_int_eq(p.pp, 4);
    ck_assert_int_eq(p.dp, 2);
    ck_assert_int_eq(p.vpp, 3);
    ck_assert_int_eq(p.microbatches, 16);
    ck_assert_int_eq(loom_parallel_parse(" microbatches = 7 , tp=8", &p, &e), LOOM_OK);
    ck_assert_int_eq(p.microbatches, 7);
    ck_assert_int_eq(p.tp, 8);
    ck_assert_int_eq(p.pp, 4); /* untouched */

    static const struct {
        const char *spec, *frag;
    } bad[] = {
        {"tp=0", "parallel config \"tp=0\": tp: expected an integer in [1, 65536], found \"0\""},
        {"pp=65537", "pp: expected an integer in [1, 65536], found \"65537\""},
        {"dp=-1", "dp: expected an integer in [1, 65536], found \"-1\""},
        {"tp=4x", "tp: expected an integer in [1, 65536], found \"4x\""},
        {"tp=", "tp: expected an integer in [1, 65536], found \"\""},
        {"tensor=2", "expected a key among tp, pp, dp, vpp, mb, microbatches, cp, found \"tensor\""},
        {"tp=2,tp=4", "expected each key once, found \"tp\" again"},
        {"mb=2,microbatches=4", "expected each key once, found \"microbatches\" again"},
        {"tp=2,,pp=2", "expected key=value, found \"\""},
        {"tp4", "expected key=value, found \"tp4\""},
        {"", "found an empty string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        loom_parallel q = p;
        memset(&e, 0, sizeof e);
        ck_assert_int_eq(loom_parallel_parse(bad[i].spec, &q, &e), LOOM_EINVAL);
        ck_assert_msg(strstr(e.message, bad[i].frag) != NULL, "\"%s\": \"%s\" lacks \"%s\"",
                      bad[i].spec, e.message, bad[i].frag);
        ck_assert_int_eq(memcmp(&q, &p, sizeof p), 0); /* unchanged on error */
    }
}
END_TEST

START_TEST(test_parallel_validate)
{
    loom_error e;
    loom_parallel p = {4, 4, 1, 1, 16, 0};
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_parallel_validate(&p, NULL, &e), LOOM_OK);
    p.vpp = 0;
    ck_assert_int_eq(loom_parallel_validate(&p, NULL, &e), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.message, "parallel.vpp: expected an integer in [1, 65536], found 0"));
    p.vpp = 1;
    p.microbatches = 65537;
    ck_assert_int_eq(loom_parallel_validate(&p, NULL, &e), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.message, "parallel.microbatches"));
    ck_assert_ptr_nonnull(strstr(e.message, "found 65537"));
    p.microbatches = 16;
    p.tp = 65536;
    p.pp = 65536;
    ck_assert_int_eq(loom_parallel_validate(&p, NULL, &e), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.message, "found 4294967296"));

    loom_model_data *m = must_load("t2v-s");
    p.tp = 8; /* DiT 5B has 28 heads */
    p.pp = 4;
    ck_assert_int_eq(loom_parallel_validate(&p, loom_model_data_model(m), &e), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.message, "(module \"dit\" layer 0 has 28 heads)"));
    p.tp = 4;
    ck_assert_int_eq(loom_parallel_validate(&p, loom_model_data_model(m), &e), LOOM_OK);
    loom_model_data_free(m);

    /* A hand-built model with an empty module. */
    loom_module mod;
    memset(&mod, 0, sizeof mod);
    mod.name = "empty";
    loom_model model = {"hand", 1, &mod};
    ck_assert_int_eq(loom_parallel_validate(&p, &model, &e), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.message, "modules[0].layers (module \"empty\"): expected at "
                                            "least 1 layer, found 0"));
}
END_TEST

/* Builds the suite. */
static Suite *model_io_suite(void)
{
    Suite *s = suite_create("model_io");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_every_preset_loads);
    tcase_add_test(tc, test_preset_vlm_s);
    tcase_add_test(tc, test_preset_t2v_and_xl);
    tcase_add_test(tc, test_single_model_presets);
    tcase_add_test(tc, test_example_files_equal_presets);
    tcase_add_test(tc, test_groups_order_and_defaults);
    tcase_add_test(tc, test_not_found);
    tcase_add_test(tc, test_syntax_and_fields);
    tcase_add_test(tc, test_module_errors);
    tcase_add_test(tc, test_graph_errors);
    tcase_add_test(tc, test_too_many_modules);
    tcase_add_test(tc, test_file_parallel_errors);
    tcase_add_test(tc, test_parallel_parse);
    tcase_add_test(tc, test_parallel_validate);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(model_io_suite());
}
