/*
 * oobleck_job.c - `loom replan` jobs: reads an Oobleck job (nodes, GPUs
 * per node, f, n0, the global batch in microbatches, per-layer forward
 * and backward times, optionally the running pipelines), plans the
 * templates, runs the reconfiguration and reports it as JSON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base.h"
#include <loom/algorithms/oobleck.h>
#include <loom/api.h>
#include <loom/sys/replan.h>

/* A parsed job and what was planned from it. */
typedef struct job {
    int64_t nodes, gpus, f, n0, microbatches, max_stages;
    int pow2;
    double eff;
    int32_t n_layers;
    double *fw, *bw;             /* per layer on one GPU */
    loom_oobleck_template *t;    /* n_templates */
    loom_oobleck_state st;
    const cJSON *pipelines;      /* borrowed from the parsed tree */
} job;

/* Frees a job's arrays, templates and pipelines. */
static void job_free(job *j)
{
    free(j->fw);
    free(j->bw);
    for (int32_t i = 0; j->t && i < j->st.n_templates; i++)
        loom_oobleck_template_clear(&j->t[i]);
    free(j->t);
    loom_oobleck_state_clear_pipelines(&j->st);
}

/* Reads "layers": {count, forward_ms, backward_ms} or a list of
 * {forward_ms, backward_ms}. */
static int job_layers(const char *name, const cJSON *root, job *j,
                      loom_error *err)
{
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (!layers)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: layers: expected an object or an array, "
                              "found nothing", name);
    static const char *const lkeys[] = {"count", "forward_ms", "backward_ms", NULL};
    static const char *const ekeys[] = {"forward_ms", "backward_ms", NULL};
    int rc;
    if (cJSON_IsObject(layers)) {
        int64_t count = 0;
        double f = 0, b = 0;
        if ((rc = loom_json_check_keys(name, layers, "layers", lkeys, err)) ||
            (rc = loom_json_get_int(name, layers, "layers", "count", 1, 1,
                                    LOOM_OOBLECK_MAX_LAYERS, &count, err)) ||
            (rc = loom_json_get_double(name, layers, "layers", "forward_ms", 1,
                                       0, 1e9, &f, err)) ||
            (rc = loom_json_get_double(name, layers, "layers", "backward_ms", 1,
                                       0, 1e9, &b, err)))
            return rc;
        j->n_layers = (int32_t)count;
        j->fw = malloc((size_t)count * sizeof *j->fw);
        j->bw = malloc((size_t)count * sizeof *j->bw);
        if (!j->fw || !j->bw)
            return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", name);
        for (int32_t l = 0; l < j->n_layers; l++) {
            j->fw[l] = f;
            j->bw[l] = b;
        }
        return LOOM_OK;
    }
    if (!cJSON_IsArray(layers))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: layers: expected an object or an array, "
                              "found %s", name, loom_json_type_name(layers));
    int n = cJSON_GetArraySize(layers);
    if (n < 1 || n > LOOM_OOBLECK_MAX_LAYERS)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: layers: expected 1 to %d layers, found %d",
                              name, LOOM_OOBLECK_MAX_LAYERS, n);
    j->n_layers = n;
    j->fw = malloc((size_t)n * sizeof *j->fw);
    j->bw = malloc((size_t)n * sizeof *j->bw);
    if (!j->fw || !j->bw)
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", name);
    for (int l = 0; l < n; l++) {
        const cJSON *e = cJSON_GetArrayItem(layers, l);
        char path[64];
        loom_json_path_index(path, sizeof path, "layers", l);
        if (!cJSON_IsObject(e))
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s: expected an object, found %s", name,
                                  path, loom_json_type_name(e));
        if ((rc = loom_json_check_keys(name, e, path, ekeys, err)) ||
            (rc = loom_json_get_double(name, e, path, "forward_ms", 1, 0, 1e9,
                                       &j->fw[l], err)) ||
            (rc = loom_json_get_double(name, e, path, "backward_ms", 1, 0, 1e9,
                                       &j->bw[l], err)))
            return rc;
    }
    return LOOM_OK;
}

/* Reads the job's scalars and layers. */
static int job_parse(const char *name, const cJSON *root, job *j,
                     loom_error *err)
{
    static const char *const keys[] = {"nodes", "gpus_per_node", "fault_tolerance",
                                       "min_nodes", "microbatches", "pow2_gpus",
                                       "max_stages", "tp_efficiency", "layers",
                                       "pipelines", NULL};
    if (!cJSON_IsObject(root))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: expected a job object, found %s", name,
                              loom_json_type_name(root));
    int rc;
    j->gpus = 1;
    j->f = 1;
    j->n0 = 1;
    j->pow2 = 1;
    j->eff = 1;
    if ((rc = loom_json_check_keys(name, root, "job", keys, err)) ||
        (rc = loom_json_get_int(name, root, "job", "nodes", 1, 1,
                                LOOM_OOBLECK_MAX_NODES, &j->nodes, err)) ||
        (rc = loom_json_get_int(name, root, "job", "gpus_per_node", 0, 1,
                                LOOM_OOBLECK_MAX_GPUS_PER_NODE, &j->gpus, err)) ||
        (rc = loom_json_get_int(name, root, "job", "fault_tolerance", 0, 0,
                                LOOM_OOBLECK_MAX_NODES, &j->f, err)) ||
        (rc = loom_json_get_int(name, root, "job", "min_nodes", 0, 1,
                                LOOM_OOBLECK_MAX_NODES, &j->n0, err)) ||
        (rc = loom_json_get_int(name, root, "job", "microbatches", 1, 1,
                                LOOM_OOBLECK_MAX_MICROBATCHES, &j->microbatches,
                                err)) ||
        (rc = loom_json_get_int(name, root, "job", "max_stages", 0, 0,
                                LOOM_OOBLECK_MAX_LAYERS, &j->max_stages, err)) ||
        (rc = loom_json_get_bool(name, root, "job", "pow2_gpus", 0, &j->pow2, err)) ||
        (rc = loom_json_get_double(name, root, "job", "tp_efficiency", 0, 1e-6, 1,
                                   &j->eff, err)) ||
        (rc = job_layers(name, root, j, err)))
        return rc;
    j->pipelines = cJSON_GetObjectItemCaseSensitive(root, "pipelines");
    return LOOM_OK;
}

/* Threads for the divide and conquer: the online CPUs, at most 8 (the
 * templates do not depend on it). */
static int32_t replan_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (int32_t)n;
}

/* Plans the templates n0..N-f*n0 from the per-layer costs. */
static int job_templates(const char *name, job *j, loom_error *err)
{
    int32_t first = 0, last = 0;
    int rc = loom_oobleck_node_spec((int32_t)j->nodes, (int32_t)j->f,
                                    (int32_t)j->n0, &first, &last, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t L = j->n_layers, M = (int32_t)j->gpus;
    /* refuse a job whose templates would take too long before planning any */
    loom_error werr = {0, ""};
    rc = loom_oobleck_check_work(L, M, last, (int32_t)j->max_stages, &werr);
    if (rc != LOOM_OK)
        return loom_set_error(err, rc, "%s: %s", name, werr.message);
    double *f = malloc((size_t)L * (size_t)M * sizeof *f);
    double *b = malloc((size_t)L * (size_t)M * sizeof *b);
    j->t = calloc((size_t)(last - first + 1), sizeof *j->t);
    if (!f || !b || !j->t) {
        free(f);
        free(b);
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", name);
    }
    for (int32_t d = 1; d <= M; d++)
        for (int32_t l = 0; l < L; l++) {
            double scale = d > 1 ? 1.0 / (d * j->eff) : 1.0;
            f[(size_t)(d - 1) * L + l] = j->fw[l] * scale;
            b[(size_t)(d - 1) * L + l] = j->bw[l] * scale;
        }
    loom_oobleck_costs c = {L, M, f, b};
    loom_oobleck_planner *pl = NULL;
    rc = loom_oobleck_planner_new(&c, M, j->pow2, &pl, err);
    if (rc == LOOM_OK)
        loom_oobleck_planner_set_threads(pl, replan_threads());
    for (int32_t n = first; rc == LOOM_OK && n <= last; n++) {
        rc = loom_oobleck_plan_template(pl, n, (int32_t)j->max_stages,
                                        &j->t[n - first], err);
        if (rc == LOOM_OK)
            j->st.n_templates++;
    }
    loom_oobleck_planner_free(pl);
    free(f);
    free(b);
    j->st.f = (int32_t)j->f;
    j->st.n_layers = L;
    j->st.templates = j->t;
    j->st.microbatches = (int32_t)j->microbatches;
    return rc;
}

/* Takes the job's "pipelines" (lists of node ids) as the running state. */
static int job_pipelines(const char *name, job *j, loom_error *err)
{
    if (!cJSON_IsArray(j->pipelines))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: pipelines: expected an array of node id "
                              "lists, found %s", name,
                              loom_json_type_name(j->pipelines));
    int n = cJSON_GetArraySize(j->pipelines);
    unsigned char *seen = calloc((size_t)j->nodes, 1);
    j->st.pipelines = calloc((size_t)n + 1, sizeof *j->st.pipelines);
    if (!seen || !j->st.pipelines) {
        free(seen);
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", name);
    }
    int rc = LOOM_OK;
    int32_t n0 = j->t[0].nodes, n_max = n0 + j->st.n_templates - 1;
    for (int i = 0; i < n && rc == LOOM_OK; i++) {
        const cJSON *p = cJSON_GetArrayItem(j->pipelines, i);
        char path[64];
        loom_json_path_index(path, sizeof path, "pipelines", i);
        int k = cJSON_IsArray(p) ? cJSON_GetArraySize(p) : -1;
        if (k < n0 || k > n_max) {
            rc = loom_set_error(err, LOOM_EINVAL,
                                "%s: %s: expected a list of %d to %d node ids "
                                "(the template sizes), found %s", name, path,
                                n0, n_max,
                                k < 0 ? loom_json_type_name(p) : "another size");
            break;
        }
        loom_oobleck_pipeline *q = &j->st.pipelines[j->st.n_pipelines++];
        q->template_index = k - n0;
        q->n_nodes = k;
        q->nodes = malloc((size_t)k * sizeof *q->nodes);
        if (!q->nodes) {
            rc = loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", name);
            break;
        }
        for (int m = 0; m < k; m++) {
            const cJSON *id = cJSON_GetArrayItem(p, m);
            double v = cJSON_IsNumber(id) ? id->valuedouble : -1;
            if (v < 0 || v >= (double)j->nodes || v != floor(v) || seen[(int)v]) {
                rc = loom_set_error(err, LOOM_EINVAL,
                                    "%s: %s[%d]: expected a node id in [0, %lld) "
                                    "used once, found %s", name, path, m,
                                    (long long)j->nodes,
                                    cJSON_IsNumber(id) ? "a repeated or out-of-range id"
                                                       : loom_json_type_name(id));
                break;
            }
            seen[(int)v] = 1;
            q->nodes[m] = (int32_t)v;
        }
    }
    free(seen);
    if (rc == LOOM_OK) {
        double ms = 0;
        rc = loom_oobleck_redistribute(&j->st, &ms, err);
    }
    return rc;
}

/* JSON array of ints. */
static cJSON *int_array(const int32_t *v, int32_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

/* The pipelines of a state (with actions when given) as JSON. */
static cJSON *state_json(const loom_oobleck_state *st, const int32_t *actions,
                         double iteration_ms)
{
    cJSON *o = cJSON_CreateObject(), *ps = cJSON_AddArrayToObject(o, "pipelines");
    for (int32_t i = 0; i < st->n_pipelines; i++) {
        const loom_oobleck_pipeline *p = &st->pipelines[i];
        cJSON *q = cJSON_CreateObject();
        cJSON_AddItemToObject(q, "nodes", int_array(p->nodes, p->n_nodes));
        cJSON_AddNumberToObject(q, "template_nodes", st->templates[p->template_index].nodes);
        if (actions)
            cJSON_AddStringToObject(q, "action", loom_oobleck_action_name(actions[i]));
        cJSON_AddNumberToObject(q, "microbatches", p->microbatches);
        cJSON_AddNumberToObject(q, "time_ms",
                                loom_oobleck_template_time_ms(&st->templates[p->template_index],
                                                              p->microbatches));
        cJSON_AddItemToArray(ps, q);
    }
    cJSON_AddNumberToObject(o, "iteration_ms", iteration_ms);
    return o;
}

/* The templates as JSON. */
static cJSON *templates_json(const job *j)
{
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; i < j->st.n_templates; i++) {
        const loom_oobleck_template *t = &j->t[i];
        cJSON *o = cJSON_CreateObject(), *ss = cJSON_CreateArray();
        cJSON_AddNumberToObject(o, "nodes", t->nodes);
        for (int32_t k = 0; k < t->n_stages; k++) {
            const loom_oobleck_stage *s = &t->stages[k];
            cJSON *x = cJSON_CreateObject();
            int32_t range[2] = {s->first_layer, s->first_layer + s->n_layers - 1};
            cJSON_AddItemToObject(x, "layers", int_array(range, 2));
            cJSON_AddNumberToObject(x, "gpus", s->gpus);
            cJSON_AddNumberToObject(x, "node", s->node);
            cJSON_AddNumberToObject(x, "first_gpu", s->first_gpu);
            cJSON_AddItemToArray(ss, x);
        }
        cJSON_AddItemToObject(o, "stages", ss);
        cJSON_AddNumberToObject(o, "iteration_ms", t->iteration_ms);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

int loom_oobleck_job_replan(const char *name, const char *text,
                            const int32_t *failed, int32_t n_failed, int full,
                            cJSON **report_out, loom_error *err)
{
    *report_out = NULL;
    cJSON *root = NULL;
    job j;
    memset(&j, 0, sizeof j);
    loom_oobleck_replan r;
    memset(&r, 0, sizeof r);
    int rc = loom_json_parse(name, text, strlen(text), &root, err);
    if (rc == LOOM_OK)
        rc = job_parse(name, root, &j, err);
    if (rc == LOOM_OK)
        rc = job_templates(name, &j, err);
    if (rc == LOOM_OK)
        rc = j.pipelines ? job_pipelines(name, &j, err)
                         : loom_oobleck_instantiate(&j.st, (int32_t)j.nodes, err);
    double before = 0;
    if (rc == LOOM_OK)
        rc = loom_oobleck_redistribute(&j.st, &before, err);
    if (rc == LOOM_OK && n_failed > 0)
        rc = loom_oobleck_replan_run(&j.st, failed, n_failed, full, &r, err);
    if (rc == LOOM_EINVAL && err && strncmp(err->message, name, strlen(name)) != 0) {
        /* an algorithm's input error (a bound) is about this job */
        char msg[LOOM_ERROR_MSG_BYTES];
        snprintf(msg, sizeof msg, "%s", err->message);
        loom_set_error(err, rc, "%s: %s", name, msg);
    }
    if (rc == LOOM_OK) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "nodes", (double)j.nodes);
        cJSON_AddNumberToObject(o, "gpus_per_node", (double)j.gpus);
        cJSON_AddNumberToObject(o, "fault_tolerance", (double)j.f);
        cJSON_AddNumberToObject(o, "min_nodes", (double)j.n0);
        cJSON_AddNumberToObject(o, "microbatches", (double)j.microbatches);
        cJSON_AddItemToObject(o, "templates", templates_json(&j));
        cJSON_AddItemToObject(o, "before", state_json(&j.st, NULL, before));
        cJSON_AddItemToObject(o, "failed_nodes", int_array(failed, n_failed));
        if (n_failed > 0) {
            cJSON *after = state_json(&r.next, r.actions, r.iteration_ms);
            cJSON_AddBoolToObject(after, "full_replan", r.full_replan);
            cJSON_AddItemToObject(o, "after", after);
            cJSON *cp = cJSON_AddArrayToObject(o, "copies");
            for (int32_t i = 0; i < r.n_copies; i++) {
                cJSON *c = cJSON_CreateObject();
                cJSON_AddNumberToObject(c, "layer", r.copies[i].layer);
                cJSON_AddNumberToObject(c, "to_node", r.copies[i].to_node);
                cJSON_AddNumberToObject(c, "from_node", r.copies[i].from_node);
                cJSON_AddItemToArray(cp, c);
            }
        }
        *report_out = o;
    }
    loom_oobleck_replan_clear(&r);
    job_free(&j);
    cJSON_Delete(root);
    return rc;
}

int loom_replan_json(const char *job_json, const int32_t *failed,
                     int32_t n_failed, int full, char **result_json,
                     loom_error *err)
{
    if (!result_json)
        return loom_set_error(err, LOOM_EINVAL, "replan: no place for the report");
    *result_json = NULL;
    if (!job_json || n_failed < 0 || (n_failed > 0 && !failed))
        return loom_set_error(err, LOOM_EINVAL,
                              "replan: expected a job and the failed nodes");
    cJSON *report = NULL;
    int rc = loom_oobleck_job_replan("job", job_json, failed, n_failed, full,
                                     &report, err);
    if (rc != LOOM_OK)
        return rc;
    *result_json = cJSON_PrintUnformatted(report);
    cJSON_Delete(report);
    return *result_json ? LOOM_OK
                        : loom_set_error(err, LOOM_ENOMEM, "replan: out of memory");
}
