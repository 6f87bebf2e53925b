/* sizes.c - byte counts with units, as users write them ("80GiB", "80GB",
 * "1.5TiB", "85899345920"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "base.h"

int loom_parse_bytes(const char *text, double *out)
{
    static const struct {
        const char *unit;
        double scale;
    } units[] = {
        {"", 1},         {"B", 1},        {"KB", 1e3},    {"MB", 1e6},
        {"GB", 1e9},     {"TB", 1e12},    {"KiB", 1024.0}, {"MiB", 1048576.0},
        {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    };
    if (!text || !*text)
        return -1;
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || !(v >= 0) || !isfinite(v))
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcasecmp(end, units[i].unit) && (units[i].unit[0] || !*end)) {
            double b = v * units[i].scale;
            if (!(b <= 1e18))
                return -1;
            *out = b;
            return 0;
        }
    return -1;
}
