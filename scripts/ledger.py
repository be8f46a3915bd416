#!/usr/bin/env python3
"""results/ledger.jsonl: one line per recorded results file under results/
(schema kgate.results), append-only, oldest first: its path, GPU, commit,
date, command, kernel count and verdict counts, and whether it is a suite
run (`kgate run`). New files are appended in date order; lines already there
are never rewritten, and a line whose file is gone is an error.

    scripts/ledger.py [--check] [ROOT]

--check: exit 1, naming them, when files are missing from the ledger or
lines name files that are gone (tests/results_ledger.sh runs it in CI)."""
import glob
import json
import os
import sys


def entry(root, path):
    d = json.load(open(os.path.join(root, path)))
    verdicts = {}
    for r in d.get("results", []):
        verdicts[r.get("verdict", "?")] = verdicts.get(r.get("verdict", "?"), 0) + 1
    dev = d.get("device") or {}
    cmd = d.get("command", "")
    return {"path": path, "gpu": dev.get("name", ""), "uuid": dev.get("uuid", ""), "commit": d.get("commit", ""),
            "date": d.get("date", ""), "command": cmd, "suite": cmd.startswith("kgate run"),
            "kernels": len(d.get("results", [])), "verdicts": dict(sorted(verdicts.items()))}


def recorded(root):
    out = []
    for f in sorted(glob.glob(os.path.join(root, "results", "**", "*.json"), recursive=True)):
        try:
            with open(f) as fh:
                head = fh.read(4096)
        except OSError:
            continue
        if '"kgate.results/' in head:
            out.append(os.path.relpath(f, root))
    return out


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    path = os.path.join(root, "results", "ledger.jsonl")
    lines = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
    have = {l["path"] for l in lines}
    gone = [l["path"] for l in lines if not os.path.exists(os.path.join(root, l["path"]))]
    new = [entry(root, p) for p in recorded(root) if p not in have]
    new.sort(key=lambda e: (e["date"], e["path"]))
    for g in gone:
        print("ledger: %s: in results/ledger.jsonl, but the file is gone" % g)
    if check:
        for e in new:
            print("ledger: %s: a recorded results file missing from results/ledger.jsonl (scripts/ledger.py)" % e["path"])
        return 1 if gone or new else 0
    if gone:
        return 1
    with open(path, "a") as fh:
        for e in new:
            fh.write(json.dumps(e, sort_keys=True) + "\n")
    print("ledger: %d lines, %d appended" % (len(lines) + len(new), len(new)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
