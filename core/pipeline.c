/* pipeline.c - resolves a planner manifest's steps to plugins, validates
 * their params against the plugins' manifests, loads them, keeps host
 * copies of their vtables and creates one instance per step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline.h"

/* "a, b, c": the ids of every plugin of `role` in the registry. */
static void list_role(loom_registry *reg, const char *role, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < loom_registry_count(reg) && len < size; i++) {
        const loom_plugin *p = loom_registry_at(reg, i);
        if (!strcmp(p->m.role, role))
            len += (size_t)snprintf(buf + len, size - len, "%s%s (%s)", len ? ", " : "", p->m.name,
                                    p->m.id);
    }
    if (!buf[0])
        snprintf(buf, size, "none");
}

/* Keeps input-shaped failures as they are; anything else is EPLUGIN. */
static int plugin_code(int rc)
{
    return (rc == LOOM_EINVAL || rc == LOOM_ENOTFOUND || rc == LOOM_EIO || rc == LOOM_ENOMEM)
               ? rc
               : LOOM_EPLUGIN;
}

static int open_step(loom_pipeline *pl, const loom_planner_config *cfg, int i, loom_error *err)
{
    const loom_step_config *sc = &cfg->steps[i];
    loom_step *st = &pl->steps[i];
    st->role = loom_role_index(sc->role);
    loom_plugin *plugin = loom_registry_find(pl->registry, sc->role, sc->use);
    if (!plugin) {
        loom_plugin *other = loom_registry_find(pl->registry, NULL, sc->use);
        if (other)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s.use: '%s' is a %s plugin, expected a %s", cfg->path,
                                  sc->path, sc->use, other->m.role, sc->role);
        char avail[320];
        list_role(pl->registry, sc->role, avail, sizeof avail);
        return loom_set_error(err, LOOM_ENOTFOUND,
                              "%s: %s.use: no %s plugin named '%s' was found (available: %s)",
                              cfg->path, sc->path, sc->role, sc->use, avail);
    }
    st->plugin = plugin;
    char ppath[64];
    snprintf(ppath, sizeof ppath, "%s.params", sc->path);
    int rc = loom_params_resolve(&plugin->m, sc->params, cfg->path, ppath, &st->params,
                                 &st->n_params, err);
    if (rc != LOOM_OK)
        return rc;
    rc = loom_plugin_load(pl->registry, plugin, err);
    if (rc != LOOM_OK)
        return rc;
    if (loom_role_copy_vtable(st->role, plugin->vtable, &st->vt))
        return loom_set_error(err, LOOM_EPLUGIN, "plugin %s: incomplete vtable", plugin->m.id);
    snprintf(st->ctx.plugin_id, sizeof st->ctx.plugin_id, "%s", plugin->m.id);
    snprintf(st->ctx.label, sizeof st->ctx.label, "%s", sc->path);
    st->ctx.params = st->params;
    st->ctx.n_params = st->n_params;
    uint64_t s = cfg->seed * 0x9E3779B97F4A7C15ull + (uint64_t)(i + 1);
    st->ctx.seed = loom_splitmix64(&s);
    st->ctx.deadline_ms = -1;
    st->ctx.pipeline = pl;
    rc = st->vt.cost_model.create(loom_host_table(), &st->ctx, plugin->plugin_state,
                                  &st->instance, err);
    if (rc != LOOM_OK) {
        st->instance = NULL;
        loom_error_prefix_plugin(err, plugin->m.id);
        err->code = plugin_code(rc);
        return err->code;
    }
    return LOOM_OK;
}

int loom_pipeline_open(loom_registry *reg, const loom_planner_config *cfg, loom_pipeline **out,
                       loom_error *err)
{
    *out = NULL;
    int rc = loom_planner_config_check(cfg, err);
    if (rc != LOOM_OK)
        return rc;
    for (int i = 0; i < cfg->n_plugin_dirs; i++)
        if ((rc = loom_registry_add_dir(reg, cfg->plugin_dirs[i], err)) != LOOM_OK)
            return rc;
    loom_pipeline *pl = calloc(1, sizeof *pl);
    if (!pl || !(pl->steps = calloc((size_t)cfg->n_steps, sizeof *pl->steps))) {
        free(pl);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    pl->n_steps = cfg->n_steps;
    pl->registry = reg;
    pl->seed = cfg->seed;
    pl->budget_ms = cfg->budget_ms;
    pl->memory_cap_bytes = cfg->memory_cap_bytes;
    pl->name = strdup(cfg->name ? cfg->name : "");
    pl->manifest_path = strdup(cfg->path ? cfg->path : "");
    pl->cost_model = pl->ranker = pl->interleaver = pl->memory_tuner = -1;
    pl->first_partitioner = -1;
    for (int i = 0; i < cfg->n_steps && rc == LOOM_OK; i++) {
        rc = open_step(pl, cfg, i, err);
        switch (pl->steps[i].role) {
        case LOOM_ROLE_ID_COST_MODEL: pl->cost_model = i; break;
        case LOOM_ROLE_ID_RANKER: pl->ranker = i; break;
        case LOOM_ROLE_ID_INTERLEAVER: pl->interleaver = i; break;
        case LOOM_ROLE_ID_MEMORY_TUNER: pl->memory_tuner = i; break;
        default:
            if (pl->first_partitioner < 0)
                pl->first_partitioner = i;
            pl->n_partitioners++;
        }
    }
    if (rc != LOOM_OK) {
        loom_pipeline_close(pl);
        return rc;
    }
    *out = pl;
    return LOOM_OK;
}

void loom_pipeline_close(loom_pipeline *p)
{
    if (!p)
        return;
    for (int i = p->n_steps - 1; i >= 0; i--) {
        loom_step *st = &p->steps[i];
        if (st->instance && st->vt.cost_model.destroy)
            st->vt.cost_model.destroy(st->instance);
        loom_params_free(st->params, st->n_params);
    }
    free(p->steps);
    free(p->name);
    free(p->manifest_path);
    free(p);
}

void loom_pipeline_describe(const loom_pipeline *p, FILE *out)
{
    fprintf(out, "pipeline %s (%s)\n", p->name, p->manifest_path);
    for (int i = 0; i < p->n_steps; i++) {
        const loom_step *st = &p->steps[i];
        char params[512];
        loom_params_format(st->params, st->n_params, params, sizeof params);
        fprintf(out, "  [%d] %-12s %-28s %-8s %s%s%s\n", i, loom_role_name(st->role),
                st->plugin->m.id, st->plugin->m.version,
                st->plugin->is_static ? "(linked in)" : st->plugin->m.binary_path,
                params[0] ? "  " : "", params);
    }
}
