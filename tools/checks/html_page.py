#!/usr/bin/env python3
"""html_page.py SRC_DIR [--check] - writes core/outputs/out_html_page.h, the
style sheet and script report.html inlines, from
core/outputs/report_page/report.css and report.js: each becomes an array
of C string literals, each element under the 4095 characters C11
guarantees. With --check it writes nothing and exits 1 when the header
differs from what the two files give (a ctest guard: edit the .css/.js,
then run this script).
"""
import os
import sys

HEADER = '''/*
 * out_html_page.h - the style sheet and the script of report.html, inlined
 * into every report (no network, no external files). Written by
 * tools/checks/html_page.py from core/outputs/report_page/report.css and
 * report.js: edit those and run the script (ctest guard_html_page checks
 * the two agree). Each array element is one string literal under the 4095
 * characters C11 guarantees; out_html.c writes them in order. The script
 * reads the plan from the page's <script type="application/json"
 * id="loom-data"> element (docs/outputs.md) and draws the timeline (with
 * its overview), the memory chart and the tooltips; when it finishes it
 * sets data-loom-report="ok" on <html>.
 */
#ifndef LOOM_OUT_HTML_PAGE_H
#define LOOM_OUT_HTML_PAGE_H

'''


def literal(line):
    return '"' + line.replace("\\", "\\\\").replace('"', '\\"') + '\\n"'


def array(name, path):
    chunks, cur, n = [], [], 0
    for line in open(path, encoding="utf-8").read().rstrip("\n").split("\n"):
        if n + len(line) + 1 > 3000 and cur:
            chunks.append(cur)
            cur, n = [], 0
        cur.append("    " + literal(line))
        n += len(line) + 1
    if cur:
        chunks.append(cur)
    return ("static const char *const %s[] = {\n" % name +
            ",\n".join("\n".join(c) for c in chunks) + ",\n};\n")


def main():
    src = sys.argv[1]
    page = os.path.join(src, "core", "outputs", "report_page")
    text = (HEADER + array("loom_html_css", os.path.join(page, "report.css")) + "\n" +
            array("loom_html_js", os.path.join(page, "report.js")) + "\n#endif\n")
    target = os.path.join(src, "core", "outputs", "out_html_page.h")
    if "--check" in sys.argv[2:]:
        current = open(target, encoding="utf-8").read()
        if current != text:
            print("html_page: %s differs from core/outputs/report_page/report.css and "
                  "report.js; run python3 tools/checks/html_page.py %s" % (target, src))
            return 1
        print("html_page: out_html_page.h matches report.css and report.js")
        return 0
    open(target, "w", encoding="utf-8").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
