#!/usr/bin/env python3
"""ceremony.py PLUGIN.c [ROLE_FUNCTION...] - lines of ceremony in a plugin
source: the non-blank lines outside comments that are not the bodies of the
named role-logic functions (default: the template's reverse_rank and
reverse_score). Prints the count."""
import re
import sys


def main():
    path = sys.argv[1]
    logic = tuple("static int %s(" % f for f in (sys.argv[2:] or ["reverse_rank", "reverse_score"]))
    text = re.sub(r"/\*.*?\*/", "", open(path, encoding="utf-8").read(), flags=re.S)
    lines = text.split("\n")
    count, i = 0, 0
    while i < len(lines):
        if lines[i].startswith(logic):
            while not lines[i].startswith("}"):
                i += 1
            i += 1
            continue
        count += bool(lines[i].strip())
        i += 1
    print(count)


if __name__ == "__main__":
    main()
