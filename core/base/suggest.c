/* suggest.c - "did you mean" for names a user mistyped: the closest of a
 * list of names (plugin ids, presets, shipped manifests) and the closest
 * file beside a path that does not exist. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include "base.h"

#define SUGGEST_MAX_LEN 64

/* Lower-case ASCII letter of c. */
static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive Levenshtein distance of a and b (both at most
 * SUGGEST_MAX_LEN bytes; longer ones count as far apart). */
static int distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > SUGGEST_MAX_LEN || m > SUGGEST_MAX_LEN)
        return 1 << 20;
    int row[SUGGEST_MAX_LEN + 1];
    for (size_t j = 0; j <= m; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int up = row[j];
            int sub = diag + (lower(a[i - 1]) != lower(b[j - 1]));
            int best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            diag = up;
        }
    }
    return row[m];
}

/* The largest distance still worth suggesting for a name of len bytes:
 * a third of it, at least 2 (one or two typos in a short name). */
static int tolerance(size_t len)
{
    int t = (int)(len / 3);
    return t < 2 ? 2 : t;
}

const char *loom_closest_name(const char *want, const char *const *names, int n)
{
    const char *best = NULL;
    int best_d = tolerance(strlen(want)) + 1;
    for (int i = 0; want && i < n; i++) {
        if (!names[i])
            continue;
        int d = distance(want, names[i]);
        if (d > 0 && d < best_d) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}

int loom_closest_file(const char *path, char *buf, size_t size)
{
    if (!path || !*path || !size)
        return 0;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char dir[4096];
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else
        snprintf(dir, sizeof dir, ".");
    DIR *d = opendir(slash && slash == path ? "/" : dir);
    if (!d)
        return 0;
    char best[256] = "";
    int best_d = tolerance(strlen(base)) + 1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        int dd = distance(base, e->d_name);
        if (dd > 0 && dd < best_d && strlen(e->d_name) < sizeof best) {
            snprintf(best, sizeof best, "%s", e->d_name);
            best_d = dd;
        }
    }
    closedir(d);
    if (!best[0])
        return 0;
    snprintf(buf, size, "%.*s%s", slash ? (int)(slash - path + 1) : 0, path, best);
    return 1;
}
