/* cmd_plugins.c - `loom plugins list|inspect`: the plugins Loom can find,
 * their manifests, params and (with --load) whether they load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli.h"
#include <loom/sys/registry.h>
#include <loom/sys/util.h>

/* Options shared by both subcommands. */
typedef struct plugins_opts {
    int json;
    int load;
    const char *id; /* inspect only */
    const char **paths;
    int n_paths;
    int allow_untrusted;
} plugins_opts;

/* Prints the usage text. */
static void plugins_usage(FILE *out)
{
    fprintf(out,
            "usage: loom plugins list [--json] [--load] [--plugin-path DIR]... [--allow-untrusted-plugins]\n"
            "       loom plugins inspect ID|NAME [--json] [--load] [--plugin-path DIR]...\n"
            "                            [--allow-untrusted-plugins]\n"
            "\n"
            "Lists the plugins found in every --plugin-path DIR, then in LOOM_PLUGIN_PATH\n"
            "(colon-separated), then beside libloom (../plugins, loom/plugins).\n"
            "Listing reads manifests only; --load also loads each plugin (dlopen,\n"
            "handshake, init) and shows loaded or failed: <reason> as its status.\n"
            "\n"
            "  --json       machine-readable output\n"
            "  --load       load the plugins to check them\n"
            "  --plugin-path DIR  also search DIR (a plugin folder or a folder of them;\n"
            "               alias: --path)\n"
            "  --allow-untrusted-plugins  also list plugins others could have changed\n"
            "               (docs/security.md; skipped with a warning otherwise)\n"
            "\n"
            "exit codes: 0 ok, 2 usage error or unknown plugin, 3 a plugin failed to\n"
            "load (--load), or with list --load a manifest was skipped (malformed or\n"
            "untrusted)\n");
}

enum { OPT_JSON = 0x100, OPT_LOAD, OPT_UNTRUSTED, OPT_PATH };

static const loom_cli_option plugins_options[] = {
    {"json", 0, OPT_JSON},
    {"load", 0, OPT_LOAD},
    {"allow-untrusted-plugins", 0, OPT_UNTRUSTED},
    {"plugin-path", 1, OPT_PATH},
    {"path", 1, OPT_PATH},
    {NULL, 0, 0}};

/* What the handler fills: the options and whether an id is wanted. */
typedef struct plugins_parse {
    plugins_opts *o;
    int want_id;
    const char *cmd;
} plugins_parse;

/* One option or operand of `loom plugins list|inspect`. */
static int plugins_option(void *ctx, int key, const char *name, const char *v)
{
    plugins_parse *p = ctx;
    (void)name;
    switch (key) {
    case LOOM_CLI_OPERAND:
        if (!p->want_id || p->o->id) {
            loom_cli_error(p->cmd, "unexpected argument '%s'", v);
            return -1;
        }
        p->o->id = v;
        return 0;
    case OPT_JSON: p->o->json = 1; return 0;
    case OPT_LOAD: p->o->load = 1; return 0;
    case OPT_UNTRUSTED: p->o->allow_untrusted = 1; return 0;
    case OPT_PATH: p->o->paths[p->o->n_paths++] = v; return 0;
    default: return -1;
    }
}

/* Parses argv (argv[0] is the subcommand); returns -1 on success, else an
 * exit code. */
static int parse_opts(int argc, char **argv, int want_id, plugins_opts *o)
{
    o->paths = calloc((size_t)argc + 1, sizeof *o->paths);
    if (!o->paths)
        return LOOM_EXIT_PLAN;
    plugins_parse p = {o, want_id, want_id ? "plugins inspect" : "plugins list"};
    loom_cli_spec spec = {p.cmd, plugins_options, NULL, NULL, plugins_option, &p};
    int parsed = loom_cli_parse(&spec, argc, argv);
    if (parsed != 0) {
        plugins_usage(parsed > 0 ? loom_cli_out() : stderr);
        return parsed > 0 ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    }
    if (want_id && !o->id) {
        fprintf(stderr, "loom plugins inspect: expected a plugin id or name\n");
        plugins_usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    return -1;
}

/* Builds the registry from --path dirs and the default search path. */
static int open_registry(const plugins_opts *o, loom_registry **out)
{
    loom_error err = {0};
    loom_registry *reg = NULL;
    int rc = loom_registry_open(o->paths, o->n_paths, o->allow_untrusted, &reg, &err);
    if (rc) {
        fprintf(stderr, "loom plugins: %s\n", err.message);
        return loom_cli_exit_for_status(rc);
    }
    *out = reg;
    return -1;
}

/* Loads a plugin (its constructors and init run), named to the exit guard. */
static void load_plugin(loom_registry *reg, loom_plugin *p)
{
    loom_cli_guard_loading(p->m.id);
    loom_plugin_load(reg, p, NULL);
    loom_cli_guard_loading(NULL);
}

/* Status text of a plugin: found, loaded or failed: <message>. */
static void status_text(const loom_plugin *p, char *buf, size_t size)
{
    if (p->state == LOOM_PLUGIN_LOADED)
        snprintf(buf, size, "loaded");
    else if (p->state == LOOM_PLUGIN_FAILED)
        snprintf(buf, size, "failed: %s", p->load_error.message);
    else
        snprintf(buf, size, "found");
}

/* Prints cJSON to stdout and frees it. */
static int print_json(cJSON *root)
{
    FILE *out = loom_cli_out();
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        fprintf(stderr, "loom plugins: out of memory\n");
        return LOOM_EXIT_PLAN;
    }
    fprintf(out, "%s\n", text);
    free(text);
    return LOOM_EXIT_OK;
}

/* `loom plugins list`. */
static int cmd_list(loom_registry *reg, const plugins_opts *o)
{
    FILE *out = loom_cli_out();
    int n = loom_registry_count(reg);
    char status[LOOM_ERROR_MSG_BYTES + 16];
    if (o->json) {
        cJSON *arr = cJSON_CreateArray();
        for (int i = 0; arr && i < n; i++) {
            const loom_plugin *p = loom_registry_at(reg, i);
            cJSON *obj = cJSON_CreateObject();
            status_text(p, status, sizeof status);
            cJSON_AddStringToObject(obj, "id", p->m.id);
            cJSON_AddStringToObject(obj, "role", p->m.role);
            cJSON_AddStringToObject(obj, "name", p->m.name);
            cJSON_AddStringToObject(obj, "version", p->m.version);
            cJSON_AddStringToObject(obj, "path", p->m.binary_path);
            cJSON_AddStringToObject(obj, "status", status);
            cJSON_AddItemToArray(arr, obj);
        }
        return print_json(arr);
    }
    int w_id = 2, w_role = 4, w_name = 4, w_ver = 7;
    for (int i = 0; i < n; i++) {
        const loom_plugin *p = loom_registry_at(reg, i);
        int l;
        if ((l = (int)strlen(p->m.id)) > w_id) w_id = l;
        if ((l = (int)strlen(p->m.role)) > w_role) w_role = l;
        if ((l = (int)strlen(p->m.name)) > w_name) w_name = l;
        if ((l = (int)strlen(p->m.version)) > w_ver) w_ver = l;
    }
    fprintf(out, "%-*s  %-*s  %-*s  %-*s  %s  %s\n", w_id, "ID", w_role, "ROLE", w_name,
            "NAME", w_ver, "VERSION", "PATH", "STATUS");
    for (int i = 0; i < n; i++) {
        const loom_plugin *p = loom_registry_at(reg, i);
        status_text(p, status, sizeof status);
        fprintf(out, "%-*s  %-*s  %-*s  %-*s  %s  %s\n", w_id, p->m.id, w_role, p->m.role,
                w_name, p->m.name, w_ver, p->m.version, p->m.binary_path, status);
    }
    if (n == 0)
        fprintf(out, "(no plugins found; use --path DIR or set LOOM_PLUGIN_PATH)\n");
    return LOOM_EXIT_OK;
}

/* With --load: names on stderr every plugin (or only `only`) that failed
 * to load; LOOM_EXIT_PLUGIN when one did, else LOOM_EXIT_OK. */
static int load_failures(loom_registry *reg, const loom_plugin *only)
{
    int failed = 0;
    for (int i = 0; i < loom_registry_count(reg); i++) {
        const loom_plugin *p = loom_registry_at(reg, i);
        if ((only && p != only) || p->state != LOOM_PLUGIN_FAILED)
            continue;
        fprintf(stderr, "loom plugins: %s failed to load: %s\n", p->m.id,
                p->load_error.message);
        failed++;
    }
    return failed ? LOOM_EXIT_PLUGIN : LOOM_EXIT_OK;
}

/* Writes a param's default value as text. */
static void default_text(const loom_param_spec *ps, char *buf, size_t size)
{
    switch (ps->type) {
    case LOOM_PARAM_INT: snprintf(buf, size, "%lld", (long long)ps->def.i); break;
    case LOOM_PARAM_DOUBLE: snprintf(buf, size, "%.15g", ps->def.d); break;
    case LOOM_PARAM_BOOL: snprintf(buf, size, "%s", ps->def.i ? "true" : "false"); break;
    case LOOM_PARAM_STRING: snprintf(buf, size, "\"%s\"", ps->def.s); break;
    default: snprintf(buf, size, "%s", ps->def.s); break;
    }
}

/* Writes a param's bounds or values as text ("" when unconstrained). */
static void limits_text(const loom_param_spec *ps, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
    if (ps->type == LOOM_PARAM_ENUM) {
        n = (size_t)snprintf(buf, size, "values");
        for (int k = 0; k < ps->n_values && n < size; k++)
            n += (size_t)snprintf(buf + n, size - n, "%s %s", k ? "," : "", ps->values[k]);
    } else if (ps->has_min && ps->has_max) { /* as the manifest's keys */
        snprintf(buf, size, "min %.15g, max %.15g", ps->min, ps->max);
    } else if (ps->has_min) {
        snprintf(buf, size, "min %.15g", ps->min);
    } else if (ps->has_max) {
        snprintf(buf, size, "max %.15g", ps->max);
    }
}

/* A param spec as a JSON object. */
static cJSON *param_json(const loom_param_spec *ps)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", ps->name);
    cJSON_AddStringToObject(o, "type", loom_param_type_name(ps->type));
    switch (ps->type) {
    case LOOM_PARAM_INT: cJSON_AddNumberToObject(o, "default", (double)ps->def.i); break;
    case LOOM_PARAM_DOUBLE: cJSON_AddNumberToObject(o, "default", ps->def.d); break;
    case LOOM_PARAM_BOOL: cJSON_AddBoolToObject(o, "default", ps->def.i != 0); break;
    default: cJSON_AddStringToObject(o, "default", ps->def.s); break;
    }
    if (ps->has_min)
        cJSON_AddNumberToObject(o, "min", ps->min);
    if (ps->has_max)
        cJSON_AddNumberToObject(o, "max", ps->max);
    if (ps->type == LOOM_PARAM_ENUM) {
        cJSON *vals = cJSON_AddArrayToObject(o, "values");
        for (int k = 0; k < ps->n_values; k++)
            cJSON_AddItemToArray(vals, cJSON_CreateString(ps->values[k]));
    }
    cJSON_AddStringToObject(o, "doc", ps->doc);
    return o;
}

/* `loom plugins inspect`. */
static int cmd_inspect(loom_registry *reg, const plugins_opts *o)
{
    loom_plugin *p = loom_registry_find(reg, NULL, o->id);
    if (!p) {
        const char *names[256];
        int k = 0;
        for (int i = 0; i < loom_registry_count(reg) && k + 2 <= 256; i++) {
            names[k++] = loom_registry_at(reg, i)->m.id;
            names[k++] = loom_registry_at(reg, i)->m.name;
        }
        const char *near = loom_closest_name(o->id, names, k);
        fprintf(stderr, "loom plugins inspect: no plugin \"%s\" (by id or name)", o->id);
        if (near)
            fprintf(stderr, "; did you mean \"%s\"?", near);
        fputs("; `loom plugins list` shows what was found\n", stderr);
        return LOOM_EXIT_USAGE;
    }
    if (o->load)
        load_plugin(reg, p);
    FILE *out = loom_cli_out();
    const loom_plugin_manifest *m = &p->m;
    char status[LOOM_ERROR_MSG_BYTES + 16], def[256], lim[512];
    status_text(p, status, sizeof status);
    if (o->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddStringToObject(obj, "id", m->id);
        cJSON_AddStringToObject(obj, "version", m->version);
        cJSON_AddStringToObject(obj, "description", m->description);
        cJSON_AddStringToObject(obj, "role", m->role);
        cJSON_AddNumberToObject(obj, "role_version", m->role_version);
        cJSON_AddStringToObject(obj, "name", m->name);
        cJSON_AddNumberToObject(obj, "abi", m->abi);
        cJSON_AddStringToObject(obj, "path", m->binary_path);
        cJSON_AddStringToObject(obj, "entry", m->entry);
        cJSON_AddStringToObject(obj, "manifest", m->manifest_path);
        cJSON_AddBoolToObject(obj, "thread_safe", m->thread_safe != 0);
        cJSON_AddStringToObject(obj, "status", status);
        cJSON *params = cJSON_AddArrayToObject(obj, "params");
        for (int i = 0; i < m->n_params; i++)
            cJSON_AddItemToArray(params, param_json(&m->params[i]));
        return print_json(obj);
    }
    fprintf(out, "id:           %s\n", m->id);
    fprintf(out, "version:      %s\n", m->version);
    fprintf(out, "description:  %s\n", m->description);
    fprintf(out, "role:         %s (role_version %u)\n", m->role, (unsigned)m->role_version);
    fprintf(out, "name:         %s\n", m->name);
    fprintf(out, "abi:          %d\n", m->abi);
    fprintf(out, "binary:       %s\n", m->binary_path);
    fprintf(out, "entry:        %s\n", m->entry);
    fprintf(out, "manifest:     %s\n", m->manifest_path);
    fprintf(out, "thread_safe:  %s\n", m->thread_safe ? "yes" : "no");
    fprintf(out, "status:       %s\n", status);
    fprintf(out, "params:%s\n", m->n_params ? "" : "       (none)");
    for (int i = 0; i < m->n_params; i++) {
        const loom_param_spec *ps = &m->params[i];
        default_text(ps, def, sizeof def);
        limits_text(ps, lim, sizeof lim);
        fprintf(out, "  %s (%s) default %s%s%s\n", ps->name, loom_param_type_name(ps->type),
                def, lim[0] ? ", " : "", lim);
        if (ps->doc[0])
            fprintf(out, "      %s\n", ps->doc);
    }
    return LOOM_EXIT_OK;
}

int loom_cmd_plugins(int argc, char **argv)
{
    if (argc < 2) {
        plugins_usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        plugins_usage(loom_cli_out());
        return LOOM_EXIT_OK;
    }
    int is_list = !strcmp(sub, "list"), is_inspect = !strcmp(sub, "inspect");
    if (!is_list && !is_inspect) {
        fprintf(stderr, "loom plugins: unknown subcommand '%s'\n", sub);
        plugins_usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    plugins_opts o;
    memset(&o, 0, sizeof o);
    int code = parse_opts(argc - 1, argv + 1, is_inspect, &o);
    loom_registry *reg = NULL;
    if (code < 0)
        code = open_registry(&o, &reg);
    if (code < 0) {
        if (is_list && o.load)
            for (int i = 0; i < loom_registry_count(reg); i++)
                load_plugin(reg, loom_registry_at(reg, i));
        code = is_list ? cmd_list(reg, &o) : cmd_inspect(reg, &o);
        if (o.load && code == LOOM_EXIT_OK)
            code = load_failures(reg, is_list ? NULL : loom_registry_find(reg, NULL, o.id));
        int skipped = loom_registry_skipped(reg);
        if (o.load && is_list && skipped > 0 && (code == LOOM_EXIT_OK || code == LOOM_EXIT_PLUGIN)) {
            /* a check fails when what it checks fails */
            fprintf(stderr, "loom plugins: %d plugin manifest(s) could not be checked: malformed "
                    "or untrusted (see the warnings above)\n", skipped);
            code = LOOM_EXIT_PLUGIN;
        }
    }
    loom_registry_free(reg);
    free(o.paths);
    return code;
}
