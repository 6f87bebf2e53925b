/* parallel_io.c - the parallel config string ("tp=4,pp=4,mb=16") and the
 * checks every parallel config passes. */
#include <string.h>
#include "problem_io_priv.h"

static const char *const parallel_keys[] = {"tp", "pp", "dp", "vpp", "mb", "microbatches", "cp",
                                            NULL};

/* Field index (0 tp, 1 pp, 2 dp, 3 vpp, 4 microbatches, 5 cp) of a key,
 * or -1. */
static int key_field(const char *key, size_t len)
{
    static const int field[] = {0, 1, 2, 3, 4, 4, 5};
    for (int i = 0; parallel_keys[i]; i++)
        if (strlen(parallel_keys[i]) == len && memcmp(parallel_keys[i], key, len) == 0)
            return field[i];
    return -1;
}

/* Parses a decimal integer in [1, LOOM_MAX_PARALLEL_DEGREE] from s[0..len). */
static int parse_degree(const char *s, size_t len, int32_t *out)
{
    int64_t v = 0;
    if (len == 0 || len > 6)
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || v > LOOM_MAX_PARALLEL_DEGREE)
        return 0;
    *out = (int32_t)v;
    return 1;
}

/* Shrinks [*s, *s + *len) past leading and trailing blanks. */
static void trim(const char **s, size_t *len)
{
    while (*len && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*len)--;
    }
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
        (*len)--;
}

int loom_parallel_parse(const char *spec, loom_parallel *inout, loom_error *err)
{
    int32_t v[6] = {inout->tp, inout->pp, inout->dp, inout->vpp, inout->microbatches,
                     loom_parallel_cp(inout)};
    int seen[6] = {0};
    char list[96];
    loom_join_names(parallel_keys, list, sizeof list);
    if (!spec || strspn(spec, " \t") == strlen(spec))
        return loom_set_error(err, LOOM_EINVAL,
                              "parallel config: expected key=value pairs like tp=4,pp=4 "
                              "(keys %s), found an empty string", list);
    const char *p = spec;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *item = p;
        trim(&item, &len);
        const char *eq = memchr(item, '=', len);
        if (!eq)
            return loom_set_error(err, LOOM_EINVAL,
                                  "parallel config \"%.100s\": expected key=value, found \"%.*s\"",
                                  spec, (int)(len > 60 ? 60 : len), item);
        const char *key = item, *val = eq + 1;
        size_t klen = (size_t)(eq - item), vlen = len - klen - 1;
        trim(&key, &klen);
        trim(&val, &vlen);
        int f = key_field(key, klen);
        if (f < 0)
            return loom_set_error(err, LOOM_EINVAL,
                                  "parallel config \"%.100s\": expected a key among %s, "
                                  "found \"%.*s\"", spec, list, (int)(klen > 40 ? 40 : klen), key);
        if (seen[f])
            return loom_set_error(err, LOOM_EINVAL,
                                  "parallel config \"%.100s\": expected each key once, "
                                  "found \"%.*s\" again", spec, (int)(klen > 40 ? 40 : klen), key);
        seen[f] = 1;
        if (!parse_degree(val, vlen, &v[f]))
            return loom_set_error(err, LOOM_EINVAL,
                                  "parallel config \"%.100s\": %.*s: expected an integer in "
                                  "[1, %d], found \"%.*s\"", spec, (int)(klen > 40 ? 40 : klen),
                                  key, LOOM_MAX_PARALLEL_DEGREE, (int)(vlen > 40 ? 40 : vlen), val);
        if (!comma)
            break;
        p = comma + 1;
    }
    inout->tp = v[0];
    inout->pp = v[1];
    inout->dp = v[2];
    inout->vpp = v[3];
    inout->microbatches = v[4];
    inout->cp = v[5];
    return LOOM_OK;
}

/* Checks the model-dependent conditions: layers present, tp | heads, the
 * layer costs of one iteration bounded. */
static int validate_model(const loom_parallel *p, const loom_model *model,
                          const unsigned char *skip, loom_error *err)
{
    int64_t layers = 0;
    for (int32_t i = 0; i < model->n_modules; i++)
        layers += model->modules[i].n_layers;
    if (layers * p->microbatches > LOOM_MAX_LAYER_MICROBATCHES)
        return loom_set_error(err, LOOM_EINVAL,
                              "parallel.microbatches: expected layers*microbatches <= %d (the "
                              "layer costs of one iteration), found %lld*%d = %lld; use fewer "
                              "microbatches", LOOM_MAX_LAYER_MICROBATCHES, (long long)layers,
                              (int)p->microbatches, (long long)(layers * p->microbatches));
    for (int32_t i = 0; i < model->n_modules; i++) {
        const loom_module *m = &model->modules[i];
        if (m->n_layers < 1)
            return loom_set_error(err, LOOM_EINVAL,
                                  "model: modules[%d].layers (module \"%s\"): expected at least "
                                  "1 layer, found %d", (int)i, m->name, (int)m->n_layers);
        for (int32_t l = 0; l < m->n_layers && !(skip && skip[i]); l++)
            if (m->layers[l].heads % p->tp != 0)
                return loom_set_error(err, LOOM_EINVAL,
                                      "parallel.tp: expected a divisor of every layer's attention "
                                      "heads, found %d (module \"%s\" layer %d has %d heads)",
                                      (int)p->tp, m->name, (int)l, (int)m->layers[l].heads);
    }
    return LOOM_OK;
}

int loom_parallel_validate(const loom_parallel *p, const loom_model *model,
                           loom_error *err)
{
    return loom_parallel_validate_skip(p, model, NULL, err);
}

int loom_parallel_validate_skip(const loom_parallel *p, const loom_model *model,
                                const unsigned char *skip, loom_error *err)
{
    static const char *const names[] = {"tp", "pp", "dp", "vpp", "microbatches"};
    const int32_t v[5] = {p->tp, p->pp, p->dp, p->vpp, p->microbatches};
    for (int i = 0; i < 5; i++)
        if (v[i] < 1 || v[i] > LOOM_MAX_PARALLEL_DEGREE)
            return loom_set_error(err, LOOM_EINVAL,
                                  "parallel.%s: expected an integer in [1, %d], found %d",
                                  names[i], LOOM_MAX_PARALLEL_DEGREE, (int)v[i]);
    if (p->cp < 0 || p->cp > LOOM_MAX_PARALLEL_DEGREE)
        return loom_set_error(err, LOOM_EINVAL,
                              "parallel.cp: expected an integer in [1, %d], found %d",
                              LOOM_MAX_PARALLEL_DEGREE, (int)p->cp);
    int64_t gpus = (int64_t)p->tp * p->pp * p->dp * loom_parallel_cp(p);
    if (gpus > LOOM_MAX_GPUS)
        return loom_set_error(err, LOOM_EINVAL,
                              "parallel: expected tp*pp*dp*cp <= %d GPUs, found %lld (tp %d, "
                              "pp %d, dp %d, cp %d)", LOOM_MAX_GPUS, (long long)gpus, (int)p->tp,
                              (int)p->pp, (int)p->dp, (int)loom_parallel_cp(p));
    int64_t stages = (int64_t)p->pp * p->vpp * p->microbatches;
    if (stages > LOOM_MAX_FORWARD_STAGES)
        return loom_set_error(err, LOOM_EINVAL,
                              "parallel: expected pp*vpp*microbatches <= %d forward stages, "
                              "found %d*%d*%d = %lld", LOOM_MAX_FORWARD_STAGES, (int)p->pp,
                              (int)p->vpp, (int)p->microbatches, (long long)stages);
    return model ? validate_model(p, model, skip, err) : LOOM_OK;
}

