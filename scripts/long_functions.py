#!/usr/bin/env python3
"""Functions in src/ longer than a limit (default 120 lines), longest first:
the house rule's habit, not a gate. A function here is a body that opens
with `{` alone at the start of a line and closes with `}` alone there (the
tree's clang-format style); its first line is the nearest line above that
starts with a name.

    scripts/long_functions.py [LIMIT] [ROOT]"""
import os
import re
import sys


def functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if line != "{":
            continue
        end = i
        while end < len(lines) and lines[end] != "}":
            end += 1
        start = i - 1
        while start > 0 and not re.match(r"^[A-Za-z_]", lines[start]):
            start -= 1
        yield end - start + 1, lines[start].strip()


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    root = sys.argv[2] if len(sys.argv) > 2 else "."
    found = []
    for d, _, files in os.walk(os.path.join(root, "src")):
        for f in files:
            if f.endswith((".c", ".cu", ".cuh", ".h")):
                p = os.path.join(d, f)
                found += [(n, os.path.relpath(p, root), head) for n, head in functions(p) if n > limit]
    for n, p, head in sorted(found, reverse=True):
        print(f"{n:5d}  {p}  {head[:90]}")
    print(f"{len(found)} function(s) over {limit} lines")


if __name__ == "__main__":
    main()
