#!/usr/bin/env python3
"""ceremony.py [--max N] PLUGIN.c [ROLE_FUNCTION...] - lines of ceremony in a
plugin source: the non-blank lines outside comments that are not the bodies
of the named role-logic functions (default: the template's reverse_rank and
reverse_score). Prints the count; with --max N, exits 1 when it is above N
(the guard_ceremony test runs it on the plugin template with --max 20)."""
import re
import sys


def count_ceremony(path, logic_names):
    """The ceremony lines of the source at `path`."""
    logic = tuple("static int %s(" % f for f in logic_names)
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
    return count


def main():
    args = sys.argv[1:]
    limit = None
    if args[:1] == ["--max"]:
        if len(args) < 3 or not args[1].isdigit():
            sys.exit("usage: ceremony.py [--max N] PLUGIN.c [ROLE_FUNCTION...]")
        limit, args = int(args[1]), args[2:]
    if not args:
        sys.exit("usage: ceremony.py [--max N] PLUGIN.c [ROLE_FUNCTION...]")
    count = count_ceremony(args[0], args[1:] or ["reverse_rank", "reverse_score"])
    print(count)
    if limit is not None and count > limit:
        print("ceremony.py: %s: %d lines of ceremony, expected at most %d"
              % (args[0], count, limit), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
