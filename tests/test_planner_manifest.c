/* test_planner_manifest.c - planner manifests (fields, order rules, CLI
 * overrides) and opening them as pipelines over the fixture plugins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "pipeline.h"
#include "registry_priv.h"

/* Path of a fixture planner manifest in the build tree. */
static const char *planner(const char *name)
{
    char rel[128];
    snprintf(rel, sizeof rel, "tests/fixtures/planners/%s.json", name);
    return loom_test_bin(rel);
}

/* Loads a planner manifest, failing the test on error. */
static loom_planner_config *load_ok(const char *path)
{
    loom_planner_config *cfg = NULL;
    loom_error err = {0};
    int rc = loom_planner_config_load(path, &cfg, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    return cfg;
}

/* Loads pipeline JSON text expecting `code` and the exact "<file>: tail". */
static void load_fails(const char *text, int code, const char *tail)
{
    const char *path = loom_test_tmpfile(".json", text);
    loom_planner_config *cfg = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_planner_config_load(path, &cfg, &err), code);
    ck_assert_ptr_null(cfg);
    char want[4600];
    snprintf(want, sizeof want, "%s: %s", path, tail);
    ck_assert_str_eq(err.message, want);
    remove(path);
}

/* A planner document around the given pipeline steps. */
static const char *doc(const char *steps)
{
    static char buf[2048];
    snprintf(buf, sizeof buf, "{\"loom_planner\": 1, \"pipeline\": [%s]}", steps);
    return buf;
}

#define CM "{\"role\": \"cost_model\", \"use\": \"c\"}"
#define PA "{\"role\": \"partitioner\", \"use\": \"p\"}"
#define RA "{\"role\": \"ranker\", \"use\": \"r\"}"
#define IL "{\"role\": \"interleaver\", \"use\": \"i\"}"
#define MT "{\"role\": \"memory_tuner\", \"use\": \"m\"}"

START_TEST(good_manifest_fields)
{
    loom_planner_config *cfg = load_ok(planner("good"));
    ck_assert_str_eq(cfg->name, "good");
    ck_assert_str_eq(cfg->description, "test fixture: good");
    ck_assert_uint_eq(cfg->seed, 7);
    ck_assert_double_eq(cfg->budget_ms, 50);
    ck_assert_double_eq(cfg->memory_cap_bytes, 1073741824.0);
    ck_assert_int_eq(cfg->n_plugin_dirs, 1);
    char want[4200];
    snprintf(want, sizeof want, "%s/..", cfg->dir);
    ck_assert_str_eq(cfg->plugin_dirs[0], want);
    ck_assert_int_eq(cfg->n_steps, 5);
    ck_assert_str_eq(cfg->steps[0].role, "cost_model");
    ck_assert_str_eq(cfg->steps[0].use, "good-cost");
    ck_assert_ptr_null(cfg->steps[0].params);
    ck_assert_str_eq(cfg->steps[2].use, "fixture.good-rank");
    ck_assert_str_eq(cfg->steps[2].path, "pipeline[2]");
    ck_assert_int_eq(cJSON_GetObjectItem(cfg->steps[2].params, "budget_ms")->valueint, 250);
    ck_assert_str_eq(cfg->steps[4].role, "memory_tuner");
    loom_planner_config_free(cfg);
}
END_TEST

START_TEST(defaults)
{
    const char *path = loom_test_tmpfile(".json", doc(CM "," PA "," PA "," RA "," IL));
    loom_planner_config *cfg = load_ok(path);
    ck_assert_uint_eq(cfg->seed, 1);
    ck_assert_double_eq(cfg->budget_ms, 0);
    ck_assert_double_eq(cfg->memory_cap_bytes, 0);
    ck_assert_int_eq(cfg->n_plugin_dirs, 0);
    ck_assert_int_eq(cfg->n_steps, 5);
    ck_assert_ptr_nonnull(strstr(path, cfg->name)); /* file name without .json */
    ck_assert_ptr_null(strstr(cfg->name, ".json"));
    ck_assert_str_eq(cfg->dir, "/tmp");
    loom_planner_config_free(cfg);
    remove(path);
}
END_TEST

START_TEST(order_rules)
{
    load_fails(doc(PA "," RA "," IL), LOOM_EINVAL,
               "pipeline[0].role: expected \"cost_model\" (a pipeline starts with exactly "
               "one cost model), found \"partitioner\"");
    load_fails(doc(CM "," RA "," PA "," IL), LOOM_EINVAL,
               "pipeline[1].role: expected \"partitioner\", found \"ranker\"");
    load_fails(doc(CM "," PA "," RA "," RA "," IL), LOOM_EINVAL,
               "pipeline[3].role: expected \"interleaver\", found \"ranker\"");
    load_fails(doc(CM "," CM "," PA "," RA "," IL), LOOM_EINVAL,
               "pipeline[1].role: expected \"partitioner\", found \"cost_model\"");
    load_fails(doc(CM "," PA "," RA "," IL "," MT "," MT), LOOM_EINVAL,
               "pipeline[5].role: expected the end of the pipeline (at most one "
               "memory_tuner, last), found \"memory_tuner\"");
    load_fails(doc(CM "," PA "," RA "," MT "," IL), LOOM_EINVAL,
               "pipeline[3].role: expected \"interleaver\", found \"memory_tuner\"");
    load_fails(doc(CM "," PA "," RA), LOOM_EINVAL,
               "pipeline: expected \"interleaver\" after pipeline[2], found the end of the "
               "pipeline");
    load_fails(doc(""), LOOM_EINVAL,
               "pipeline: expected at least 4 steps (cost_model, partitioner, ranker, "
               "interleaver), found none");
    load_fails(doc(CM ", {\"role\": \"scheduler\", \"use\": \"x\"}"), LOOM_EINVAL,
               "pipeline[1].role: expected one of cost_model, partitioner, ranker, "
               "interleaver, memory_tuner, found \"scheduler\"");
}
END_TEST

START_TEST(field_errors)
{
    load_fails("{\"loom_planner\": 2}", LOOM_EINVAL,
               "loom_planner: expected 1 (the manifest format version), found 2");
    load_fails("{\"loom_planner\": 1, \"seed\": -1, \"pipeline\": []}", LOOM_EINVAL,
               "seed: expected an integer >= 0, found -1");
    load_fails("{\"loom_planner\": 1, \"budget_ms\": \"1s\", \"pipeline\": []}", LOOM_EINVAL,
               "budget_ms: expected a number in [0, 1000000000000], found \"1s\"");
    load_fails("{\"loom_planner\": 1, \"pipeline\": {}}", LOOM_EINVAL,
               "pipeline: expected an array, found an object");
    load_fails("{\"loom_planner\": 1}", LOOM_EINVAL,
               "pipeline: expected an array, found nothing (missing field)");
    load_fails("{\"loom_planner\": 1, \"stages\": []}", LOOM_EINVAL,
               "unknown field \"stages\" (expected one of: loom_planner, name, description, "
               "plugin_dirs, seed, budget_ms, max_evaluations, memory_cap_bytes, choose, "
               "pipeline)");
    load_fails("{\"loom_planner\": 1, \"choose\": \"once\", \"pipeline\": []}", LOOM_EINVAL,
               "choose: expected \"iteration\" or \"run\", found \"once\"");
    load_fails("{\"loom_planner\": 1, \"choose\": 1, \"pipeline\": []}", LOOM_EINVAL,
               "choose: expected a string, found 1");
    load_fails(doc(CM ", {\"role\": \"partitioner\", \"use\": \"p\", \"param\": {}}"), LOOM_EINVAL,
               "pipeline[1]: unknown field \"param\" (expected one of: role, use, params)");
    load_fails(doc(CM ", {\"role\": \"partitioner\", \"use\": \"p\", \"params\": [1]}"), LOOM_EINVAL,
               "pipeline[1].params: expected an object, found an array");
    load_fails(doc(CM ", {\"role\": \"partitioner\"}"), LOOM_EINVAL,
               "pipeline[1].use: expected a string, found nothing (missing field)");
    load_fails(doc(CM ", 5"), LOOM_EINVAL, "pipeline[1]: expected an object, found a number");
    load_fails("{\"loom_planner\": 1, \"plugin_dirs\": [\"no/such/dir\"], \"pipeline\": []}",
               LOOM_ENOTFOUND,
               "plugin_dirs[0]: expected an existing directory, found \"no/such/dir\" "
               "(/tmp/no/such/dir)");

    loom_planner_config *cfg = NULL;
    loom_error err = {0};
    const char *p = loom_test_tmpfile(".json", "{\"loom_planner\": 1,\n  \"pipeline\": [\n");
    ck_assert_int_eq(loom_planner_config_load(p, &cfg, &err), LOOM_EINVAL);
    char want[4200];
    snprintf(want, sizeof want, "%s:3:1: malformed JSON: unexpected end of input", p);
    ck_assert_str_eq(err.message, want);
    remove(p);
}
END_TEST

START_TEST(use_override)
{
    loom_planner_config *cfg = load_ok(planner("good"));
    loom_error err = {0};
    ck_assert_int_eq(loom_planner_config_use(cfg, "ranker=other", &err), LOOM_OK);
    ck_assert_str_eq(cfg->steps[2].use, "other");
    ck_assert_ptr_null(cfg->steps[2].params); /* params belonged to the old plugin */
    ck_assert_int_eq(cfg->n_steps, 5);
    ck_assert_int_eq(loom_planner_config_use(cfg, "ranker", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "--use ranker: expected ROLE=NAME");
    ck_assert_int_eq(loom_planner_config_use(cfg, "ranker=", &err), LOOM_EINVAL);
    ck_assert_int_eq(loom_planner_config_use(cfg, "sched=x", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "--use sched=x: expected a role of cost_model, partitioner, "
                                  "ranker, interleaver, memory_tuner, found \"sched\"");
    loom_planner_config_free(cfg);

    /* Inserting an absent role at its legal position. */
    const char *path = loom_test_tmpfile(".json", doc(CM "," PA "," RA "," IL));
    cfg = load_ok(path);
    ck_assert_int_eq(loom_planner_config_use(cfg, "memory_tuner=knap", &err), LOOM_OK);
    ck_assert_int_eq(cfg->n_steps, 5);
    ck_assert_str_eq(cfg->steps[4].role, "memory_tuner");
    ck_assert_str_eq(cfg->steps[4].use, "knap");
    ck_assert_str_eq(cfg->steps[4].path, "pipeline[4]");
    ck_assert_int_eq(loom_planner_config_check(cfg, &err), LOOM_OK);
    loom_planner_config_free(cfg);
    remove(path);

    /* A hand-made config missing its ranker gets it after the partitioners. */
    path = loom_test_tmpfile(".json", doc(CM "," PA "," PA "," RA "," IL));
    cfg = load_ok(path);
    free(cfg->steps[3].role);
    free(cfg->steps[3].use);
    memmove(&cfg->steps[3], &cfg->steps[4], sizeof cfg->steps[3]);
    cfg->n_steps = 4;
    ck_assert_int_eq(loom_planner_config_check(cfg, &err), LOOM_EINVAL);
    ck_assert_int_eq(loom_planner_config_use(cfg, "ranker=fifo", &err), LOOM_OK);
    ck_assert_int_eq(cfg->n_steps, 5);
    ck_assert_str_eq(cfg->steps[3].role, "ranker");
    ck_assert_str_eq(cfg->steps[3].use, "fifo");
    ck_assert_str_eq(cfg->steps[4].role, "interleaver");
    ck_assert_str_eq(cfg->steps[4].path, "pipeline[4]");
    ck_assert_int_eq(loom_planner_config_check(cfg, &err), LOOM_OK);
    loom_planner_config_free(cfg);
    remove(path);
}
END_TEST

START_TEST(param_override)
{
    loom_planner_config *cfg = load_ok(planner("good"));
    loom_error err = {0};
    ck_assert_int_eq(loom_planner_config_param(cfg, "ranker.budget_ms=99", &err), LOOM_OK);
    cJSON *p = cfg->steps[2].params;
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(p, "budget_ms")));
    ck_assert_double_eq(cJSON_GetObjectItem(p, "budget_ms")->valuedouble, 99);
    ck_assert_str_eq(cJSON_GetObjectItem(p, "mode")->valuestring, "exact"); /* kept */
    ck_assert_int_eq(loom_planner_config_param(cfg, "ranker.file=a b.txt", &err), LOOM_OK);
    ck_assert_str_eq(cJSON_GetObjectItem(p, "file")->valuestring, "a b.txt");
    ck_assert_int_eq(loom_planner_config_param(cfg, "ranker.deterministic=false", &err), LOOM_OK);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(p, "deterministic")));
    ck_assert_int_eq(loom_planner_config_param(cfg, "ranker.list=[1,2]", &err), LOOM_OK);
    ck_assert(cJSON_IsArray(cJSON_GetObjectItem(p, "list")));
    ck_assert_int_eq(loom_planner_config_param(cfg, "ranker.x=1e999", &err), LOOM_OK);
    ck_assert(cJSON_IsString(cJSON_GetObjectItem(p, "x")));
    ck_assert_int_eq(loom_planner_config_param(cfg, "cost_model.k=1", &err), LOOM_OK);
    ck_assert_ptr_nonnull(cfg->steps[0].params);
    ck_assert_int_eq(loom_planner_config_param(cfg, "ranker=5", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "--param ranker=5: expected ROLE.KEY=VALUE");
    ck_assert_int_eq(loom_planner_config_param(cfg, "sched.k=5", &err), LOOM_EINVAL);
    loom_planner_config_free(cfg);

    const char *path = loom_test_tmpfile(".json", doc(CM "," PA "," RA "," IL));
    cfg = load_ok(path);
    ck_assert_int_eq(loom_planner_config_param(cfg, "memory_tuner.k=1", &err), LOOM_ENOTFOUND);
    ck_assert_str_eq(err.message, "--param memory_tuner.k=1: the pipeline has no memory_tuner step");
    loom_planner_config_free(cfg);
    remove(path);
}
END_TEST

/* Opens a fixture planner over a registry of the fixtures only (plus its
 * plugin_dirs); expects `code`, returns the message (static). */
static const char *open_fails(const char *name, int code)
{
    static loom_error err;
    memset(&err, 0, sizeof err);
    loom_planner_config *cfg = load_ok(planner(name));
    loom_registry *reg = loom_registry_new();
    loom_pipeline *p = NULL;
    int rc = loom_pipeline_open(reg, cfg, &p, &err);
    ck_assert_msg(rc == code, "%s: %s", name, err.message);
    ck_assert_ptr_null(p);
    loom_registry_free(reg);
    loom_planner_config_free(cfg);
    return err.message;
}

START_TEST(open_good_pipeline)
{
    loom_planner_config *cfg = load_ok(planner("good"));
    loom_registry *reg = loom_registry_new();
    loom_pipeline *p = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_planner_config_param(cfg, "ranker.alpha=2", &err), LOOM_OK);
    int rc = loom_pipeline_open(reg, cfg, &p, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(p->n_steps, 5);
    ck_assert_int_eq(p->cost_model, 0);
    ck_assert_int_eq(p->first_partitioner, 1);
    ck_assert_int_eq(p->n_partitioners, 1);
    ck_assert_int_eq(p->ranker, 2);
    ck_assert_int_eq(p->interleaver, 3);
    ck_assert_int_eq(p->memory_tuner, 4);
    ck_assert_uint_eq(p->seed, 7);
    ck_assert_double_eq(p->budget_ms, 50);
    ck_assert_ptr_eq(p->registry, reg);
    for (int i = 0; i < 5; i++) {
        loom_step *st = &p->steps[i];
        ck_assert_int_eq(st->role, i);
        ck_assert_ptr_nonnull(st->instance);
        ck_assert_int_eq(st->plugin->state, LOOM_PLUGIN_LOADED);
        ck_assert_str_eq(st->ctx.plugin_id, st->plugin->m.id);
        char label[32];
        snprintf(label, sizeof label, "pipeline[%d]", i);
        ck_assert_str_eq(st->ctx.label, label);
        ck_assert_double_eq(st->ctx.deadline_ms, -1);
        ck_assert_ptr_eq(st->ctx.pipeline, p);
        uint64_t mix = 7 * 0x9E3779B97F4A7C15ull + (uint64_t)(i + 1);
        ck_assert_uint_eq(st->ctx.seed, loom_splitmix64(&mix));
        ck_assert_uint_eq(st->vt.header.struct_size, loom_role_vtable_bytes(i));
    }
    ck_assert_uint_ne(p->steps[0].ctx.seed, p->steps[1].ctx.seed);
    ck_assert(p->steps[3].vt.interleaver.wants_split_backward == NULL);
    ck_assert(p->steps[3].vt.interleaver.interleave != NULL);

    /* The ranker sees its resolved params through the host API. */
    loom_step *r = &p->steps[2];
    ck_assert_int_eq(r->n_params, 6);
    ck_assert_int_eq(r->params[0].i, 250);
    ck_assert_str_eq(r->params[1].s, "exact");
    loom_stage_graph g;
    memset(&g, 0, sizeof g);
    g.n_groups = 2;
    const loom_stage_graph *graphs[1] = {&g};
    float prio[2];
    loom_ranking out;
    out = (loom_ranking)LOOM_RANKING_INIT;
    out.cap_priorities = 2;
    out.priorities = prio;
    ck_assert_int_eq(r->vt.ranker.rank(r->instance, graphs, 1, &out, &err), LOOM_OK);
    ck_assert_double_eq(out.best_makespan_ms, 250);
    ck_assert_float_eq(prio[1], 4.0f);

    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    loom_pipeline_describe(p, mem);
    fclose(mem);
    ck_assert_ptr_nonnull(strstr(text, "pipeline good ("));
    ck_assert_ptr_nonnull(strstr(text, "seed 7, budget_ms 50, memory_cap_bytes 1073741824"));
    ck_assert_ptr_nonnull(strstr(text, "  [2] ranker       fixture.good-rank 1.2.0 "));
    ck_assert_ptr_nonnull(strstr(text, "fixture-good-rank.so params: budget_ms=250 mode=exact "
                                       "alpha=2 deterministic=true file=\"\" fail_create=no\n"));
    ck_assert_ptr_nonnull(strstr(text, "  [0] cost_model   fixture.good-cost 1.0.0 "));
    ck_assert_ptr_nonnull(strstr(text, "params: (none)"));
    free(text);
    loom_pipeline_close(p);
    loom_registry_free(reg);
    loom_planner_config_free(cfg);
}
END_TEST

START_TEST(open_failures)
{
    const char *m = open_fails("bad-param-type", LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(m, "bad-param-type.json: pipeline[2].params.budget_ms: expected "
                                    "an integer in [0, 3600000], found \"fast\""));
    /* load and create failures name the manifest and the step */
    m = open_fails("abi", LOOM_EABI);
    ck_assert_ptr_nonnull(strstr(m, "abi.json: pipeline["));
    ck_assert_ptr_nonnull(strstr(m, "]: fixture.abi: "));
    ck_assert_ptr_nonnull(strstr(m, "host ABI 1, plugin ABI 2"));
    m = open_fails("missing-member", LOOM_EPLUGIN);
    ck_assert_ptr_nonnull(strstr(m, "interleaver vtable member interleave is NULL"));
    m = open_fails("create-fails", LOOM_EPLUGIN);
    ck_assert_ptr_nonnull(strstr(m, "/planners/create-fails.json: pipeline[2]: plugin "
                                    "fixture.good-rank: create refused: fail_create is internal"));
    m = open_fails("create-input", LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(m, "/planners/create-input.json: pipeline[2]: plugin "
                                    "fixture.good-rank: create refused: fail_create is input"));
    m = open_fails("undefined-symbol", LOOM_EPLUGIN);
    ck_assert_ptr_nonnull(strstr(m, "undefined symbol: loom_fixture_symbol_nobody_defines"));
    m = open_fails("unknown-plugin", LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(m, "unknown-plugin.json: pipeline[3].use: no interleaver plugin "
                                    "\"nope\" (available: good-inter (fixture.good-inter), "
                                    "hostile-inter (fixture.hostile-inter), "
                                    "missing-member (fixture.missing-member))"));
}
END_TEST

START_TEST(open_role_mismatch)
{
    loom_planner_config *cfg = load_ok(planner("good"));
    loom_error err = {0};
    ck_assert_int_eq(loom_planner_config_use(cfg, "interleaver=good-rank", &err), LOOM_OK);
    loom_registry *reg = loom_registry_new();
    loom_pipeline *p = NULL;
    ck_assert_int_eq(loom_pipeline_open(reg, cfg, &p, &err), LOOM_EINVAL);
    /* --use chose it: the error names the flag typed */
    ck_assert_ptr_nonnull(strstr(err.message, "--use interleaver=good-rank: expected a plugin "
                                              "with role interleaver, found \"good-rank\" "
                                              "(fixture.good-rank), which has role ranker"));
    /* Params are validated before anything is loaded. */
    ck_assert_int_eq(loom_registry_find(reg, NULL, "fixture.good-cost")->state, LOOM_PLUGIN_FOUND);
    loom_registry_free(reg);
    loom_planner_config_free(cfg);
}
END_TEST

/* The tooling calls `loom validate` makes: --use/--param applied in that
 * order, a registry of given folders, a pipeline opened, described and
 * closed in one call. */
START_TEST(apply_open_and_check)
{
    loom_planner_config *cfg = load_ok(planner("good"));
    loom_error err = {0};
    const char *uses[] = {"interleaver=good-inter"};
    const char *params[] = {"ranker.alpha=3", "interleaver.k=1"};
    ck_assert_int_eq(loom_planner_config_apply(cfg, uses, 1, params, 2, &err), LOOM_OK);
    ck_assert_double_eq(cJSON_GetObjectItem(cfg->steps[2].params, "alpha")->valuedouble, 3);
    /* --use first: the interleaver's new params are the --param's only */
    ck_assert_int_eq(cJSON_GetArraySize(cfg->steps[3].params), 1);
    ck_assert_double_eq(cJSON_GetObjectItem(cfg->steps[3].params, "k")->valuedouble, 1);
    const char *bad_use[] = {"interleaver"};
    ck_assert_int_eq(loom_planner_config_apply(cfg, bad_use, 1, params, 2, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "--use interleaver: expected ROLE=NAME");
    ck_assert_int_eq(loom_planner_config_apply(cfg, NULL, 0, NULL, 0, &err), LOOM_OK);
    cJSON_DeleteItemFromObject(cfg->steps[3].params, "k"); /* good-inter declares no k */

    loom_registry *reg = NULL;
    const char *missing[] = {"no-such-plugin-dir"};
    ck_assert_int_eq(loom_registry_open(missing, 1, 0, &reg, &err), LOOM_ENOTFOUND);
    ck_assert_ptr_null(reg);
    ck_assert_str_eq(err.message, "plugin directory no-such-plugin-dir: expected a directory, "
                                  "found nothing");
    const char *dirs[] = {loom_test_bin("tests/fixtures")};
    ck_assert_int_eq(loom_registry_open(dirs, 1, 0, &reg, &err), LOOM_OK);
    ck_assert_ptr_nonnull(loom_registry_find(reg, NULL, "fixture.good-rank"));

    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    int n_steps = -1;
    int rc = loom_pipeline_check(reg, cfg, NULL, mem, &n_steps, &err);
    fclose(mem);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(n_steps, 5);
    ck_assert_ptr_nonnull(strstr(text, "seed 7, budget_ms 50, memory_cap_bytes 1073741824\n"));
    ck_assert_ptr_nonnull(strstr(text, "  [2] ranker       fixture.good-rank 1.2.0 "));
    ck_assert_ptr_nonnull(strstr(text, "alpha=3 "));
    ck_assert_ptr_nonnull(strstr(text, "  [3] interleaver  fixture.good-inter "));
    free(text);
    /* the plugins stay loaded in the registry; the pipeline is gone */
    ck_assert_int_eq(loom_registry_find(reg, NULL, "fixture.good-rank")->state,
                     LOOM_PLUGIN_LOADED);
    loom_planner_config_free(cfg);

    cfg = load_ok(planner("unknown-plugin"));
    n_steps = -1;
    ck_assert_int_eq(loom_pipeline_check(reg, cfg, NULL, NULL, &n_steps, &err), LOOM_ENOTFOUND);
    ck_assert_int_eq(n_steps, 0);
    ck_assert_ptr_nonnull(strstr(err.message, "unknown-plugin.json: pipeline[3].use: no "
                                              "interleaver plugin \"nope\""));
    loom_registry_free(reg);
    loom_planner_config_free(cfg);
}
END_TEST

/* Builds the suite. */
static Suite *planner_suite(void)
{
    Suite *s = suite_create("planner_manifest");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, good_manifest_fields);
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, order_rules);
    tcase_add_test(tc, field_errors);
    tcase_add_test(tc, use_override);
    tcase_add_test(tc, param_override);
    suite_add_tcase(s, tc);
    TCase *pc = tcase_create("pipeline");
    tcase_add_test(pc, open_good_pipeline);
    tcase_add_test(pc, open_failures);
    tcase_add_test(pc, open_role_mismatch);
    tcase_add_test(pc, apply_open_and_check);
    suite_add_tcase(s, pc);
    return s;
}

int main(void)
{
    return loom_test_main(planner_suite());
}
