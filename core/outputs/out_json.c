/* out_json.c - JSON text and the names every writer prints: strings and
 * numbers as JSON, module names, stage kinds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "output.h"

void loom_out_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

void loom_out_json_number(FILE *out, double v)
{
    if (!isfinite(v)) {
        fputs("null", out);
        return;
    }
    if (v == 0) {
        fputc('0', out);
        return;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, out);
}

const char *loom_out_module_name(const loom_plan *plan, int32_t module)
{
    if (module < 0 || !plan->problem || !plan->problem->model ||
        module >= plan->problem->model->n_modules)
        return NULL;
    return plan->problem->model->modules[module].name;
}

char loom_out_kind_char(int kind)
{
    return kind >= 0 && kind < 4 ? "FBIW"[kind] : '?';
}
