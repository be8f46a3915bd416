#!/usr/bin/env python3
"""The include graph of src/ against kgate's layers: every #include "..."
between modules (a module is a .c/.cu file with its header: supervise/job is
job.c and job.h), checked for arrows up or across the layers

    app -> gpu, ops -> report -> supervise, store -> protocol
        -> diagnose -> judge -> catalog, measure -> base -> include/kgate

(include/kgate holds the public API and the candidate ABI; within a layer,
only a directory's own modules include each other). cli includes nothing
of src/: it uses only include/kgate/kgate.h, as curl's tool uses libcurl

and for cycles between modules. A header implemented under another name
counts as that file's module (ALIASES). What breaks a rule today and is not
yet fixed is listed in KNOWN, each with its reason; anything else fails, and
so does a KNOWN entry that no longer occurs (remove it). Prints every
arrow that breaks a rule; exit 0 when all are known, 1 otherwise.
    scripts/include_graph.py [SRC_DIR]"""
import collections
import os
import re
import sys

LAYERS = {"base": 1, "catalog": 2, "measure": 2, "judge": 3, "diagnose": 4, "protocol": 5, "store": 6,
          "supervise": 6, "report": 7, "ops": 8, "gpu": 8, "app": 9, "cli": 10}
# a header implemented under other names: op.h by catalog.c; kg.h, the
# vocabulary, by base's files of each subject
ALIASES = {"catalog/op": "catalog/catalog", "base/dtype": "base/kg", "base/files": "base/kg",
           "base/random": "base/kg", "base/procs": "base/kg"}
KNOWN = {
    ("ops/ref", "gpu/tensors"): "the operators' references fill kgate's device tensors",
}


def module(path, src):
    rel = os.path.relpath(path, src)
    m = os.path.splitext(rel)[0].replace(os.sep, "/")
    m = m.split("/")[0] + "/" + os.path.basename(m)
    return ALIASES.get(m, m)


def graph(src):
    edges = collections.defaultdict(set)
    for d, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".cu", ".cuh")):
                continue
            path = os.path.join(d, f)
            a = module(path, src)
            for line in open(path, encoding="utf-8", errors="replace"):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                for base in (d, src):
                    t = os.path.normpath(os.path.join(base, m.group(1)))
                    if os.path.exists(t) and os.path.commonpath([os.path.abspath(t), os.path.abspath(src)]) == os.path.abspath(src):
                        b = module(t, src)
                        if b != a:
                            edges[a].add(b)
                        break
    return edges


def cycles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(" ".join(sorted(comp)))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def broken(edges):
    """Arrows up or across layers, any arrow from cli (it uses only the public
    include/kgate/kgate.h, outside src/), and cycles."""
    found = []
    for a in sorted(edges):
        la = a.split("/")[0]
        for b in sorted(edges[a]):
            lb = b.split("/")[0]
            if LAYERS[lb] > LAYERS[la] or (LAYERS[lb] == LAYERS[la] and la != lb) or la == "cli":
                found.append((a, b))
    found += [("cycle", c) for c in cycles(edges)]
    return found


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    found = broken(graph(src))
    bad = [f for f in found if f not in KNOWN]
    gone = [k for k in KNOWN if k not in found]
    for a, b in found:
        print(("known: " if (a, b) in KNOWN else "NEW: ") + a + " -> " + b + ("  (" + KNOWN[(a, b)] + ")" if (a, b) in KNOWN else ""))
    for a, b in gone:
        print("FIXED, remove from KNOWN: " + a + " -> " + b)
    print("%d arrows break a rule: %d known, %d new; %d known ones gone" % (len(found), len(found) - len(bad), len(bad), len(gone)))
    return 1 if bad or gone else 0


if __name__ == "__main__":
    sys.exit(main())
