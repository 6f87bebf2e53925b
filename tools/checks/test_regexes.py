#!/usr/bin/env python3
"""test_regexes.py - every PASS_REGULAR_EXPRESSION and FAIL_REGULAR_EXPRESSION
of the CMakeLists.txt files under ROOT (build trees left out) is one regex.

CMake stores a test property as a list, so a ";" inside the quoted value
splits it into several regexes, and the test passes when any one of them
matches: a check that can no longer fail. Use "." for a ";" of the output.

    test_regexes.py ROOT

Prints one "FAIL: FILE:LINE: ..." line per offending value and exits 1, or
"ok: N regular expressions in M files" and exits 0.
"""
import os
import re
import sys

PROPERTY = re.compile(r'(PASS|FAIL)_REGULAR_EXPRESSION\s+"((?:[^"\\]|\\.)*)"')


def cmake_files(root):
    """The CMakeLists.txt files under root, outside build trees and venvs."""
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs
                         if not d.startswith(('build', '.')) and d not in ('venv', 'node_modules'))
        if 'CMakeLists.txt' in files:
            yield os.path.join(here, 'CMakeLists.txt')


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: test_regexes.py ROOT (a source tree)")
    fails = regexes = files = 0
    for path in cmake_files(sys.argv[1]):
        files += 1
        text = open(path, encoding='utf-8').read()
        for m in PROPERTY.finditer(text):
            regexes += 1
            if ';' in m.group(2):
                line = text.count('\n', 0, m.start()) + 1
                print('FAIL: %s:%d: %s_REGULAR_EXPRESSION holds ";", which splits it into a list '
                      'of regexes any one of which passes the test; write "." for it'
                      % (path, line, m.group(1)))
                fails += 1
    if fails:
        sys.exit(1)
    print('ok: %d regular expressions in %d files' % (regexes, files))


if __name__ == '__main__':
    main()
