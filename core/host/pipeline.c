/* pipeline.c - resolving a planner manifest into loaded, created steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline.h"

/* Calls the step's create() through its role vtable. */
static int step_create(loom_step *st, loom_error *err)
{
    const loom_host_api *host = loom_host_table();
    void *ps = st->plugin->plugin_state;
    switch (st->role) {
    case LOOM_ROLE_ID_COST_MODEL:
        return st->vt.cost_model.create(host, &st->ctx, ps, &st->instance, err);
    case LOOM_ROLE_ID_PARTITIONER:
        return st->vt.partitioner.create(host, &st->ctx, ps, &st->instance, err);
    case LOOM_ROLE_ID_RANKER:
        return st->vt.ranker.create(host, &st->ctx, ps, &st->instance, err);
    case LOOM_ROLE_ID_INTERLEAVER:
        return st->vt.interleaver.create(host, &st->ctx, ps, &st->instance, err);
    default:
        return st->vt.memory_tuner.create(host, &st->ctx, ps, &st->instance, err);
    }
}

/* Calls the step's destroy() when it has an instance. */
static void step_destroy(loom_step *st)
{
    if (!st->instance)
        return;
    switch (st->role) {
    case LOOM_ROLE_ID_COST_MODEL: st->vt.cost_model.destroy(st->instance); break;
    case LOOM_ROLE_ID_PARTITIONER: st->vt.partitioner.destroy(st->instance); break;
    case LOOM_ROLE_ID_RANKER: st->vt.ranker.destroy(st->instance); break;
    case LOOM_ROLE_ID_INTERLEAVER: st->vt.interleaver.destroy(st->instance); break;
    default: st->vt.memory_tuner.destroy(st->instance); break;
    }
    st->instance = NULL;
}

void loom_pipeline_close(loom_pipeline *p)
{
    if (!p)
        return;
    for (int i = p->n_steps - 1; i >= 0; i--) {
        loom_mark_step(p, i);
        step_destroy(&p->steps[i]);
        loom_mark_step(p, -1);
        loom_params_free(p->steps[i].params, p->steps[i].n_params);
    }
    free(p->steps);
    free(p->name);
    free(p->manifest_path);
    loom_progress_log_free(&p->progress);
    pthread_mutex_destroy(&p->progress.lock);
    pthread_mutex_destroy(&p->kept_lock);
    pthread_mutex_destroy(&p->create_lock);
    free(p);
}

/* Error for a `use` that names no plugin of the step's role: blamed on the
 * --use flag when the command line chose it, else on the manifest. */
static int not_found(loom_registry *reg, const loom_planner_config *cfg,
                     const loom_step_config *sc, loom_error *err)
{
    char where[320];
    if (sc->use_flag)
        snprintf(where, sizeof where, "%.300s", sc->use_flag);
    else
        snprintf(where, sizeof where, "%.250s: %.40s.use", cfg->path, sc->path);
    loom_plugin *other = loom_registry_find(reg, NULL, sc->use);
    if (other)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: expected a plugin with role %s, found "
                              "\"%s\" (%s), which has role %s",
                              where, sc->role, sc->use, other->m.id, other->m.role);
    char list[384];
    size_t n = 0;
    list[0] = 0;
    for (int i = 0; i < loom_registry_count(reg) && n < sizeof list; i++) {
        const loom_plugin *p = loom_registry_at(reg, i);
        if (strcmp(p->m.role, sc->role))
            continue;
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s (%s)", n ? ", " : "",
                              p->m.name, p->m.id);
    }
    if (!n)
        return loom_set_error(err, LOOM_ENOTFOUND,
                              "%s: no %s plugin \"%s\"; no %s plugins were "
                              "found (check LOOM_PLUGIN_PATH or plugin_dirs)",
                              where, sc->role, sc->use, sc->role);
    const char *names[128];
    int k = 0;
    for (int i = 0; i < loom_registry_count(reg) && k + 2 <= 128; i++) {
        const loom_plugin *p = loom_registry_at(reg, i);
        if (!strcmp(p->m.role, sc->role)) {
            names[k++] = p->m.name;
            names[k++] = p->m.id;
        }
    }
    const char *near = loom_closest_name(sc->use, names, k);
    if (near)
        return loom_set_error(err, LOOM_ENOTFOUND,
                              "%s: no %s plugin \"%s\"; did you mean \"%s\"? (available: %s)",
                              where, sc->role, sc->use, near, list);
    return loom_set_error(err, LOOM_ENOTFOUND, "%s: no %s plugin \"%s\" (available: %s)",
                          where, sc->role, sc->use, list);
}

/* A resolve error about a param a --param flag set names that flag:
 * "<file>: <json_path>.<key>: why" becomes "--param ROLE.KEY=V: why", and a
 * key the plugin does not declare says so. */
static int blame_param_flag(const loom_step_config *sc, const loom_plugin *pl,
                            const char *file, const char *json_path, loom_error *err)
{
    for (int k = 0; k < sc->n_param_flags; k++) {
        const char *flag = sc->param_flags[k];
        const char *dot = strchr(flag, '.'), *eq = dot ? strchr(dot, '=') : NULL;
        if (!dot || !eq)
            continue;
        char key[128], prefix[512];
        snprintf(key, sizeof key, "%.*s", (int)(eq - dot - 1), dot + 1);
        int declared_key = 0;
        for (int i = 0; i < pl->m.n_params; i++)
            declared_key |= !strcmp(pl->m.params[i].name, key);
        if (!declared_key) {
            char names[300];
            size_t n = 0;
            names[0] = 0;
            for (int i = 0; i < pl->m.n_params && n < sizeof names; i++)
                n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "",
                                      pl->m.params[i].name);
            return loom_set_error(err, LOOM_EINVAL,
                                  "%.200s: plugin %s has no param \"%s\" (%s%s)", flag,
                                  pl->m.id, key, n ? "its params: " : "it declares none",
                                  names);
        }
        snprintf(prefix, sizeof prefix, "%s: %s.%s: ", file, json_path, key);
        size_t plen = strlen(prefix);
        if (!strncmp(err->message, prefix, plen)) {
            char rest[LOOM_ERROR_MSG_BYTES];
            snprintf(rest, sizeof rest, "%s", err->message + plen);
            return loom_set_error(err, err->code, "%.200s: %s", flag, rest);
        }
    }
    return err->code;
}

/* Records the step index of each role in p. */
static void index_roles(loom_pipeline *p)
{
    p->cost_model = p->ranker = p->interleaver = p->memory_tuner = -1;
    p->first_partitioner = -1;
    p->n_partitioners = 0;
    for (int i = 0; i < p->n_steps; i++) {
        switch (p->steps[i].role) {
        case LOOM_ROLE_ID_COST_MODEL: p->cost_model = i; break;
        case LOOM_ROLE_ID_RANKER: p->ranker = i; break;
        case LOOM_ROLE_ID_INTERLEAVER: p->interleaver = i; break;
        case LOOM_ROLE_ID_MEMORY_TUNER: p->memory_tuner = i; break;
        default:
            if (p->first_partitioner < 0)
                p->first_partitioner = i;
            p->n_partitioners++;
            break;
        }
    }
}

/* 1 when the plugin's manifest declares param `key`. */
static const loom_param_spec *declared(const loom_plugin *pl, const char *key)
{
    for (int i = 0; i < pl->m.n_params; i++)
        if (!strcmp(pl->m.params[i].name, key))
            return &pl->m.params[i];
    return NULL;
}

/* Evaluation mode for the ranker of step st: its reserved params
 * (<loom/ranker.h>) max_evaluations = `evals`, budget_ms raised to
 * loom_ranker_safety_budget_ms and deterministic = true, each where the
 * ranker declares it. */
static int evaluation_mode(loom_step *st, int64_t evals, const char *file, loom_error *err)
{
    char text[64];
    int rc = LOOM_OK;
    const loom_param_spec *spec = declared(st->plugin, LOOM_RANKER_PARAM_MAX_EVALUATIONS);
    if (spec) {
        snprintf(text, sizeof text, "%lld", (long long)evals);
        rc = loom_params_set_from_string(&st->plugin->m, st->params, st->n_params,
                                         LOOM_RANKER_PARAM_MAX_EVALUATIONS, text, err);
    }
    if (!rc && (spec = declared(st->plugin, LOOM_RANKER_PARAM_BUDGET_MS))) {
        double now = 0;
        for (int i = 0; i < st->n_params; i++)
            if (!strcmp(st->params[i].name, LOOM_RANKER_PARAM_BUDGET_MS))
                now = st->params[i].d;
        double cap = loom_ranker_safety_budget_ms(now, spec->has_max ? spec->max : HUGE_VAL);
        snprintf(text, sizeof text, "%.0f", cap);
        rc = loom_params_set_from_string(&st->plugin->m, st->params, st->n_params,
                                         LOOM_RANKER_PARAM_BUDGET_MS, text, err);
    }
    if (!rc && declared(st->plugin, LOOM_RANKER_PARAM_DETERMINISTIC))
        rc = loom_params_set_from_string(&st->plugin->m, st->params, st->n_params,
                                         LOOM_RANKER_PARAM_DETERMINISTIC, "true", err);
    if (rc)
        return loom_error_prefix(err, rc, file);
    return LOOM_OK;
}

/* Resolves the plugin and params of every step (no loading yet). */
static int resolve_steps(loom_pipeline *p, const loom_planner_config *cfg,
                         loom_error *err)
{
    for (int i = 0; i < cfg->n_steps; i++) {
        const loom_step_config *sc = &cfg->steps[i];
        loom_step *st = &p->steps[i];
        st->role = loom_role_index(sc->role);
        st->plugin = loom_registry_find(p->registry, sc->role, sc->use);
        if (!st->plugin)
            return not_found(p->registry, cfg, sc, err);
        char json_path[64];
        snprintf(json_path, sizeof json_path, "%s.params", sc->path);
        int rc = loom_params_resolve(&st->plugin->m, sc->params, cfg->path, json_path,
                                     &st->params, &st->n_params, err);
        if (rc && sc->n_param_flags)
            rc = blame_param_flag(sc, st->plugin, cfg->path, json_path, err);
        if (!rc && cfg->max_evaluations > 0 && st->role == LOOM_ROLE_ID_RANKER)
            rc = evaluation_mode(st, cfg->max_evaluations, cfg->path, err);
        if (rc)
            return rc;
    }
    return LOOM_OK;
}

/* Loads step i's plugin, copies its vtable, fills the ctx and creates the
 * instance. The step is marked while its plugin's code (constructors,
 * init, create) runs. */
static int start_step(loom_pipeline *p, int i, const loom_planner_config *cfg,
                      loom_error *err)
{
    loom_step *st = &p->steps[i];
    loom_plugin *pl = st->plugin;
    loom_mark_step(p, i);
    int rc = loom_plugin_load(p->registry, pl, err);
    loom_mark_step(p, -1);
    if (rc) { /* name the manifest and step that asked for the plugin */
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        return loom_set_error(err, rc, "%s: %s: %s", cfg->path, cfg->steps[i].path, why);
    }
    memset(&st->vt, 0, sizeof st->vt);
    const char *missing = loom_role_copy_vtable(st->role, pl->vtable, &st->vt);
    if (missing) /* the loader checked this already */
        return loom_set_error(err, LOOM_EPLUGIN, "%s: %s vtable member %s is NULL (required)",
                              pl->m.id, pl->m.role, missing);

    loom_ctx *c = &st->ctx;
    memset(c, 0, sizeof *c);
    snprintf(c->plugin_id, sizeof c->plugin_id, "%s", pl->m.id);
    snprintf(c->label, sizeof c->label, "%s", cfg->steps[i].path);
    c->params = st->params;
    c->n_params = st->n_params;
    uint64_t mix = cfg->seed * 0x9E3779B97F4A7C15ull + (uint64_t)(i + 1);
    c->seed = loom_splitmix64(&mix);
    c->deadline_ms = -1;
    c->pipeline = p;

    loom_error cerr = {0};
    loom_mark_step(p, i);
    rc = step_create(st, &cerr);
    loom_mark_step(p, -1);
    if (rc != LOOM_OK) {
        st->instance = NULL;
        if (!cerr.message[0])
            snprintf(cerr.message, sizeof cerr.message, "%s: create failed with %s",
                     cfg->steps[i].path, loom_status_name(rc));
        loom_error_prefix_plugin(&cerr, pl->m.id);
        return loom_set_error(err, loom_plugin_status(rc), "%s: %s: %s", cfg->path,
                              cfg->steps[i].path, cerr.message);
    }
    return LOOM_OK;
}

int loom_pipeline_open(loom_registry *reg, const loom_planner_config *cfg,
                       loom_pipeline **out, loom_error *err)
{
    return loom_pipeline_open_ex(reg, cfg, NULL, out, err);
}

int loom_pipeline_open_ex(loom_registry *reg, const loom_planner_config *cfg,
                          const loom_pipeline_hooks *hooks, loom_pipeline **out,
                          loom_error *err)
{
    *out = NULL;
    int rc;
    (void)loom_log_level(); /* a mistyped LOOM_LOG warns now, not never */
    for (int i = 0; i < cfg->n_plugin_dirs; i++)
        if ((rc = loom_registry_add_dir(reg, cfg->plugin_dirs[i], err)))
            return rc;
    if ((rc = loom_planner_config_check(cfg, err)))
        return rc;
    loom_pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    pthread_mutex_init(&p->progress.lock, NULL);
    pthread_mutex_init(&p->kept_lock, NULL);
    pthread_mutex_init(&p->create_lock, NULL);
    p->steps = calloc((size_t)cfg->n_steps, sizeof *p->steps);
    p->name = strdup(cfg->name ? cfg->name : "");
    p->manifest_path = strdup(cfg->path ? cfg->path : "");
    if (!p->steps || !p->name || !p->manifest_path) {
        loom_pipeline_close(p);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    p->n_steps = cfg->n_steps;
    p->registry = reg;
    p->seed = cfg->seed;
    p->budget_ms = cfg->max_evaluations > 0 ? 0 : cfg->budget_ms; /* evaluations decide */
    p->max_evaluations = cfg->max_evaluations;
    p->fixed_candidate = -1;
    p->memory_cap_bytes = cfg->memory_cap_bytes;
    p->step_marker = hooks ? hooks->step_marker : NULL;
    p->last_step_marker = hooks ? hooks->last_step_marker : NULL;
    rc = resolve_steps(p, cfg, err);
    for (int i = 0; i < p->n_steps && !rc && hooks && hooks->on_step; i++)
        hooks->on_step(hooks->user, i, p->steps[i].plugin->m.id);
    for (int i = 0; i < p->n_steps && !rc; i++)
        rc = start_step(p, i, cfg, err);
    if (rc) {
        loom_pipeline_close(p);
        return rc;
    }
    index_roles(p);
    *out = p;
    return LOOM_OK;
}

void loom_pipeline_describe(const loom_pipeline *p, FILE *out)
{
    if (p->max_evaluations > 0)
        fprintf(out, "pipeline %s (%s): seed %llu, max_evaluations %lld (deterministic), "
                     "memory_cap_bytes %.15g\n",
                p->name, p->manifest_path, (unsigned long long)p->seed,
                (long long)p->max_evaluations, p->memory_cap_bytes);
    else
    fprintf(out, "pipeline %s (%s): seed %llu, budget_ms %.15g, memory_cap_bytes %.15g\n",
            p->name, p->manifest_path, (unsigned long long)p->seed, p->budget_ms,
            p->memory_cap_bytes);
    for (int i = 0; i < p->n_steps; i++) {
        const loom_step *st = &p->steps[i];
        const loom_plugin_manifest *m = &st->plugin->m;
        char params[1024];
        loom_params_format(st->params, st->n_params, params, sizeof params);
        fprintf(out, "  [%d] %-12s %s %s %s params: %s\n", i, m->role, m->id,
                m->version, st->plugin->is_static ? "(static)" : m->binary_path,
                st->n_params ? params : "(none)");
    }
}

/* See loom/sys/planner.h: open, describe, count, close. */
int loom_pipeline_check(loom_registry *reg, const loom_planner_config *cfg,
                        const loom_pipeline_hooks *hooks, FILE *out, int *n_steps,
                        loom_error *err)
{
    loom_pipeline *p = NULL;
    int rc = loom_pipeline_open_ex(reg, cfg, hooks, &p, err);
    if (rc == LOOM_OK && out)
        loom_pipeline_describe(p, out);
    if (n_steps)
        *n_steps = rc == LOOM_OK ? loom_pipeline_step_count(p) : 0;
    loom_pipeline_close(p);
    return rc;
}

int loom_pipeline_step_count(const loom_pipeline *p)
{
    return p ? p->n_steps : 0;
}

const char *loom_pipeline_step_plugin_id(const loom_pipeline *p, int i)
{
    if (!p || i < 0 || i >= p->n_steps)
        return NULL;
    return p->steps[i].ctx.plugin_id;
}
