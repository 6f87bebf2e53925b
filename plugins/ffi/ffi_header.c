/* ffi_header.c - checks a declared signature against the function's
 * prototype in a C header: comments and preprocessor lines are dropped,
 * the text is split into tokens, the prototype `... symbol ( ... )` is
 * found and its return and parameter types are classified (LP64). */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ffi_model.h"

#define HEADER_MAX_BYTES (4u << 20)
#define MAX_WORDS 16

/* What a C type is, as far as a call through libffi is concerned. */
enum cclass {
    C_INT64, C_DOUBLE, C_INT32, C_FLOAT, /* same order as loom_ffi_ctype */
    C_SMALL_INT, C_LONG_DOUBLE, C_VOID, C_POINTER, C_UNKNOWN
};

typedef struct token {
    const char *s;
    int len;
    int line;
} token;

typedef struct tokens {
    token *t;
    int n, cap;
} tokens;

/* Reads a whole file (NUL-terminated) into *out; caller frees. */
static int read_text(const char *path, char **out, char *msg, size_t size)
{
    /* O_NONBLOCK: a FIFO must not block the open; only regular files */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        snprintf(msg, size, "params.header: \"%s\" is not a regular file", path);
        return -1;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        snprintf(msg, size, "params.header: cannot open \"%s\"", path);
        return -1;
    }
    char *buf = malloc(HEADER_MAX_BYTES + 1);
    size_t n = buf ? fread(buf, 1, HEADER_MAX_BYTES + 1, f) : 0;
    fclose(f);
    if (!buf || n > HEADER_MAX_BYTES) {
        free(buf);
        snprintf(msg, size, "params.header: \"%s\" is %s", path,
                 buf ? "larger than 4 MiB" : "too large to read (out of memory)");
        return -1;
    }
    buf[n] = 0;
    *out = buf;
    return 0;
}

/* Blanks out comments and preprocessor lines, keeping newlines. */
static void strip(char *s)
{
    int line_start = 1;
    for (char *p = s; *p;) {
        if (p[0] == '/' && p[1] == '*') {
            char *e = strstr(p + 2, "*/");
            char *end = e ? e + 2 : p + strlen(p);
            for (; p < end; p++)
                if (*p != '\n')
                    *p = ' ';
            continue;
        }
        if ((p[0] == '/' && p[1] == '/') || (line_start && *p == '#')) {
            int cont = 0;
            for (; *p && (*p != '\n' || cont); p++) {
                cont = *p == '\\' || (cont && *p == '\r');
                if (*p != '\n')
                    *p = ' ';
            }
            continue;
        }
        if (*p == '\n')
            line_start = 1;
        else if (!isspace((unsigned char)*p))
            line_start = 0;
        p++;
    }
}

/* Splits text into identifiers and one-character punctuation tokens. */
static int tokenize(const char *s, tokens *out)
{
    int line = 1;
    for (const char *p = s; *p;) {
        if (*p == '\n') {
            line++;
            p++;
            continue;
        }
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        int len = 1;
        if (isalnum((unsigned char)*p) || *p == '_')
            while (isalnum((unsigned char)p[len]) || p[len] == '_')
                len++;
        else if (*p == '"' || *p == '\'')
            while (p[len] && p[len] != *p && p[len] != '\n')
                len += p[len] == '\\' && p[len + 1] ? 2 : 1;
        if (out->n == out->cap) {
            int cap = out->cap ? out->cap * 2 : 1024;
            token *t = realloc(out->t, (size_t)cap * sizeof *t);
            if (!t)
                return -1;
            out->t = t;
            out->cap = cap;
        }
        out->t[out->n++] = (token){p, len, line};
        p += len + ((*p == '"' || *p == '\'') && p[len] ? 1 : 0);
    }
    return 0;
}

/* 1 when token t spells `word`. */
static int is(const token *t, const char *word)
{
    return (int)strlen(word) == t->len && !strncmp(t->s, word, (size_t)t->len);
}

/* 1 when token t is an identifier. */
static int is_ident(const token *t)
{
    return isalpha((unsigned char)t->s[0]) || t->s[0] == '_';
}

/* Words that qualify a type without changing its class. */
static int is_qualifier(const token *t)
{
    static const char *const q[] = {"const", "volatile", "register", "extern", "static",
                                    "inline", "__inline__", "__extension__", "restrict",
                                    "__restrict", "signed", "unsigned", NULL};
    for (int i = 0; q[i]; i++)
        if (is(t, q[i]))
            return 1;
    return 0;
}

/* 1 for an all-caps identifier, taken to be an export macro. */
static int is_macro(const token *t)
{
    if (t->len < 2)
        return 0;
    for (int i = 0; i < t->len; i++)
        if (!(isupper((unsigned char)t->s[i]) || isdigit((unsigned char)t->s[i]) || t->s[i] == '_'))
            return 0;
    return 1;
}

/* Class of a single type word, or -1 when it is not one. */
static int word_class(const token *t)
{
    static const struct {
        const char *w;
        int c;
    } words[] = {{"double", C_DOUBLE},      {"float", C_FLOAT},       {"void", C_VOID},
                 {"int", C_INT32},          {"long", C_INT64},        {"short", C_SMALL_INT},
                 {"char", C_SMALL_INT},     {"_Bool", C_SMALL_INT},   {"bool", C_SMALL_INT},
                 {"int64_t", C_INT64},      {"uint64_t", C_INT64},    {"size_t", C_INT64},
                 {"ssize_t", C_INT64},      {"ptrdiff_t", C_INT64},   {"intptr_t", C_INT64},
                 {"uintptr_t", C_INT64},    {"int32_t", C_INT32},     {"uint32_t", C_INT32},
                 {"int16_t", C_SMALL_INT},  {"uint16_t", C_SMALL_INT}, {"int8_t", C_SMALL_INT},
                 {"uint8_t", C_SMALL_INT}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (is(t, words[i].w))
            return words[i].c;
    return -1;
}

/* Classifies the tokens of one type: a return type, or a parameter with
 * its optional name (name_allowed). *unknown points at an unknown type
 * name when the result is C_UNKNOWN. */
static int classify(const token *t, int n, int name_allowed, const token **unknown)
{
    int idx[MAX_WORDS], n_words = 0, has_sign = 0;
    *unknown = NULL;
    for (int i = 0; i < n; i++) {
        if (is(&t[i], "*") || is(&t[i], "["))
            return C_POINTER;
        has_sign |= is(&t[i], "unsigned") || is(&t[i], "signed");
        if (is_ident(&t[i]) && !is_qualifier(&t[i]) && !is_macro(&t[i]) && n_words < MAX_WORDS)
            idx[n_words++] = i;
    }
    /* a parameter's name: the last word when it is no type word and a type
     * precedes it */
    if (name_allowed && n_words > 0 && word_class(&t[idx[n_words - 1]]) < 0 &&
        (n_words >= 2 || has_sign))
        n_words--;
    int longs = 0, found[C_UNKNOWN + 1] = {0};
    for (int k = 0; k < n_words; k++) {
        int c = word_class(&t[idx[k]]);
        if (c < 0) {
            *unknown = &t[idx[k]];
            return C_UNKNOWN;
        }
        longs += is(&t[idx[k]], "long");
        found[c] = 1;
    }
    if (found[C_DOUBLE])
        return longs ? C_LONG_DOUBLE : C_DOUBLE;
    if (found[C_FLOAT])
        return C_FLOAT;
    if (found[C_VOID])
        return C_VOID;
    if (found[C_INT64])
        return C_INT64; /* long, long long, int64_t, size_t, ... */
    if (found[C_SMALL_INT])
        return C_SMALL_INT;
    if (found[C_INT32] || has_sign)
        return C_INT32;
    return C_UNKNOWN;
}

/* A C-ish name for a class in messages. */
static const char *class_name(int c)
{
    static const char *const names[] = {"a 64-bit integer", "double", "a 32-bit int", "float",
                                        "a short or char integer", "long double", "void",
                                        "a pointer", "an unknown type"};
    return (c >= 0 && c <= C_UNKNOWN) ? names[c] : "?";
}

/* Index of the first prototype `symbol (` preceded by a type, or -1. */
static int find_prototype(const tokens *tk, const char *symbol)
{
    for (int i = 1; i + 1 < tk->n; i++) {
        const token *prev = &tk->t[i - 1];
        if (is(&tk->t[i], symbol) && is(&tk->t[i + 1], "(") &&
            (is(prev, "*") || (is_ident(prev) && !is(prev, "return"))))
            return i;
    }
    return -1;
}

/* First token of the return type of the prototype at `at`. */
static int return_type_start(const tokens *tk, int at)
{
    int i = at - 1;
    while (i >= 0) {
        const token *t = &tk->t[i];
        if (is_ident(t) || is(t, "*")) {
            i--;
            continue;
        }
        if (is(t, ")")) { /* an attribute group: skip it and its keyword */
            int depth = 0;
            for (; i >= 0; i--) {
                depth += is(&tk->t[i], ")") - is(&tk->t[i], "(");
                if (depth == 0)
                    break;
            }
            i -= 2;
            continue;
        }
        break;
    }
    return i + 1;
}

/* Compares the prototype at `at` with fn. */
static int compare(const tokens *tk, int at, const char *path, const loom_ffi_fn *fn, char *msg,
                   size_t size)
{
    const char *file = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int line = tk->t[at].line;
    int start = return_type_start(tk, at);
    const token *unknown;
    int ret = classify(&tk->t[start], at - start, 0, &unknown);
    if (ret != fn->ret) {
        snprintf(msg, size,
                 "params.%s: %s returns %s in %s:%d, the signature declares %s", fn->param,
                 fn->symbol, unknown ? "an unknown type" : class_name(ret), file, line,
                 loom_ffi_ctype_name(fn->ret));
        return -1;
    }
    int i = at + 2, depth = 1, n_params = 0, begin = i;
    int kinds[LOOM_FFI_MAX_ARGS + 1];
    const token *unk[LOOM_FFI_MAX_ARGS + 1];
    for (; i < tk->n && depth > 0; i++) {
        const token *t = &tk->t[i];
        depth += is(t, "(") - is(t, ")");
        if ((depth == 1 && is(t, ",")) || depth == 0) {
            if (i > begin && n_params <= LOOM_FFI_MAX_ARGS) {
                kinds[n_params] = classify(&tk->t[begin], i - begin, 1, &unk[n_params]);
                n_params++;
            }
            begin = i + 1;
        }
    }
    if (depth != 0) {
        snprintf(msg, size, "params.header: %s:%d: the prototype of %s is not closed", file, line,
                 fn->symbol);
        return -1;
    }
    if (n_params == 1 && kinds[0] == C_VOID)
        n_params = 0;
    if (n_params != fn->n_args) {
        snprintf(msg, size,
                 "params.%s: %s takes %d parameter%s in %s:%d, the signature passes %d argument%s",
                 fn->param, fn->symbol, n_params, n_params == 1 ? "" : "s", file, line,
                 fn->n_args, fn->n_args == 1 ? "" : "s");
        return -1;
    }
    for (int k = 0; k < n_params; k++) {
        if (kinds[k] == fn->args[k].type)
            continue;
        char what[80];
        if (kinds[k] == C_UNKNOWN && unk[k])
            snprintf(what, sizeof what, "of unknown type \"%.*s\"", unk[k]->len > 40 ? 40 : unk[k]->len,
                     unk[k]->s);
        else
            snprintf(what, sizeof what, "%s", class_name(kinds[k]));
        snprintf(msg, size,
                 "params.%s: parameter %d of %s is %s in %s:%d, the signature passes %s as %s "
                 "(use int64_t or double parameters)",
                 fn->param, k + 1, fn->symbol, what, file, line,
                 loom_ffi_field_name(fn->args[k].field), loom_ffi_ctype_name(fn->args[k].type));
        return -1;
    }
    return 0;
}

int loom_ffi_check_header(const char *path, const loom_ffi_fn *fn, char *msg, size_t msg_size)
{
    char *text = NULL;
    if (read_text(path, &text, msg, msg_size))
        return -1;
    strip(text);
    tokens tk = {NULL, 0, 0};
    int rc = -1;
    if (tokenize(text, &tk)) {
        snprintf(msg, msg_size, "params.header: out of memory reading \"%s\"", path);
    } else {
        int at = find_prototype(&tk, fn->symbol);
        if (at < 0)
            snprintf(msg, msg_size, "params.%s: no prototype of %s in the header \"%s\"",
                     fn->param, fn->symbol, path);
        else
            rc = compare(&tk, at, path, fn, msg, msg_size);
    }
    free(tk.t);
    free(text);
    return rc;
}
