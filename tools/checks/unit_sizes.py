#!/usr/bin/env python3
"""unit_sizes.py SOURCE_DIR [--max-function N] [--max-file N] [--top K] - no
function in core/ longer than N lines (default 120) and no core/ file longer
than N lines (default 700).

Files: every *.c and *.h under core/, counted in lines (newline characters,
plus one for a last line without one).

Functions: a small scanner over each *.c file. Comments, string and
character literals and preprocessor lines are blanked first (newlines
kept); then braces are matched. A top-level `{` starts a function body when
the text since the previous top-level `;`, `}` or preprocessor line ends
with `)` and holds no `=` and does not begin with struct, union, enum or
typedef (an initialiser or a type is not a function). A function's length
runs from the first line of its signature to the line of its closing brace,
both included.

Prints the K longest functions and files (default 5), then every one over
its limit; exits 1 when there is one, 0 otherwise.
"""
import argparse
import os
import re
import sys

NOT_FUNCTION = re.compile(r"^(struct|union|enum|typedef)\b")


def blank(text):
    """text with comments, literals and preprocessor lines as spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a directive, with its continuation lines
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
            continue
        if c == "\n":
            line_start = True
        out.append(c)
        i += 1
    return "".join(out)


def functions(text):
    """[(name, first line, last line)] of the function bodies of a C file."""
    code = blank(text)
    found = []
    depth = 0
    start = 0  # offset where the current top-level item begins
    body = None  # (name, first line) of the function being read
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                header = code[start:i].strip()
                if header.endswith(")") and "=" not in header and not NOT_FUNCTION.match(header):
                    head_at = start + (len(code[start:i]) - len(code[start:i].lstrip()))
                    m = re.search(r"(\w+)\s*\(", header)
                    body = (m.group(1) if m else "?", code.count("\n", 0, head_at) + 1)
                else:
                    body = None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if body:
                    found.append((body[0], body[1], code.count("\n", 0, i) + 1))
                body = None
                start = i + 1
        elif c == ";" and depth == 0:
            start = i + 1
    return found


def line_count(text):
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--max-function", type=int, default=120)
    ap.add_argument("--max-file", type=int, default=700)
    ap.add_argument("--top", type=int, default=5)
    a = ap.parse_args()
    files, funcs = [], []
    core = os.path.join(a.src, "core")
    for root, _, names in os.walk(core):
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, a.src)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            files.append((line_count(text), rel))
            if name.endswith(".c"):
                for fn, first, last in functions(text):
                    funcs.append((last - first + 1, "%s:%d %s()" % (rel, first, fn)))
    if len(files) < 10 or not funcs:
        print("unit_sizes: found %d files and %d functions under %s, expected the whole core"
              % (len(files), len(funcs), core))
        return 1
    files.sort(key=lambda x: (-x[0], x[1]))
    funcs.sort(key=lambda x: (-x[0], x[1]))
    print("longest functions (limit %d lines):" % a.max_function)
    for n, what in funcs[:a.top]:
        print("  %5d  %s" % (n, what))
    print("longest files (limit %d lines):" % a.max_file)
    for n, what in files[:a.top]:
        print("  %5d  %s" % (n, what))
    over = ["function %s: %d lines, over %d" % (what, n, a.max_function)
            for n, what in funcs if n > a.max_function]
    over += ["file %s: %d lines, over %d" % (what, n, a.max_file)
             for n, what in files if n > a.max_file]
    for line in over:
        print("FAIL: " + line)
    print("%d functions in %d files; %d over the limits" % (len(funcs), len(files), len(over)))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
