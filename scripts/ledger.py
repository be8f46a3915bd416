#!/usr/bin/env python3
"""results/ledger.jsonl: one line per recorded results file under results/
(schema kgate.results), append-only, oldest first: its path, GPU, commit,
date, command, kernel count and verdict counts, and whether it is a suite
run (`kgate run`). New files are appended in date order; lines already there
are never rewritten, and a line whose file is gone is an error unless an
archive record names it.

An archive record, {"archived": PATH, "commit": SHA}, says that the file of
an earlier line left the tree and that commit SHA (full, in this
repository's history) still holds it: `git show SHA:PATH`. The newest suite
run of each GPU (docs/performance.md, `kgate compare --ledger`) is never
archived.

    scripts/ledger.py [--check] [ROOT]
    scripts/ledger.py --archive COMMIT [ROOT]

--check: exit 1, naming them, when files are missing from the ledger, lines
name files that are gone and not archived, or an archive record's commit
lacks its file or is not in the repository (tests/results_ledger.sh runs it
in CI); in a shallow clone that lacks the commit, or a tree outside git,
the records are said and not checked.
--archive COMMIT: appends an archive record at COMMIT for each listed file
that is gone from the tree, once COMMIT holds every one of them."""
import glob
import json
import os
import re
import subprocess
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


def read(root):
    """The ledger's entries (lines with "path") and its archive records as
    {path: commit}; raises ValueError naming a line that is neither."""
    path = os.path.join(root, "results", "ledger.jsonl")
    entries, archived = [], {}
    if not os.path.exists(path):
        return entries, archived
    for n, text in enumerate(open(path), 1):
        line = json.loads(text)
        if isinstance(line.get("path"), str):
            entries.append(line)
        elif isinstance(line.get("archived"), str) and re.fullmatch(r"[0-9a-f]{40}", str(line.get("commit"))):
            archived[line["archived"]] = line["commit"]
        else:
            raise ValueError("results/ledger.jsonl: line %d is neither an entry (path) nor an archive record "
                             "(archived, commit: 40 hex digits)" % n)
    return entries, archived


def newest_suites(entries):
    """{gpu: entry} of the newest suite run with kernels on each GPU (the
    last line of the greatest date: what kgate compare --ledger takes)."""
    newest = {}
    for e in entries:
        if e["suite"] and e["kernels"] and (e["gpu"] not in newest or e["date"] >= newest[e["gpu"]]["date"]):
            newest[e["gpu"]] = e
    return newest


def generated(path, text, check, who):
    """Writes a page generated from the ledger to path; with check, writes
    nothing and says (who: the page's name) when the committed page is not
    the generator's output. The exit code: 0, or 1 for a stale page."""
    if check:
        old = open(path).read() if os.path.exists(path) else ""
        if old != text:
            print("%s: docs/%s is not what scripts/%s_md.py generates: run it" % (who, os.path.basename(path), who))
            return 1
        return 0
    with open(path, "w") as f:
        f.write(text)
    return 0


def git(root, *args, stdin=None):
    try:
        return subprocess.run(["git", "-C", root] + list(args), input=stdin, capture_output=True, text=True)
    except OSError as e:  # no git
        return subprocess.CompletedProcess(args, 127, "", str(e))


def not_held(root, commit, paths):
    """The paths commit does not hold, or None when the commit is not here."""
    if git(root, "cat-file", "-e", commit + "^{commit}").returncode != 0:
        return None
    out = git(root, "cat-file", "--batch-check", stdin="".join("%s:%s\n" % (commit, p) for p in paths)).stdout
    return [p for p, line in zip(paths, out.splitlines()) if line.endswith(" missing")]


def check_archived(root, archived):
    """Problems with the archive records: each names a file the ledger
    lists (checked by the caller) that its commit, in this repository,
    holds. A shallow clone or a tree outside git cannot tell: said."""
    problems = []
    by_commit = {}
    for p, c in archived.items():
        by_commit.setdefault(c, []).append(p)
    shallow = git(root, "rev-parse", "--is-shallow-repository").stdout.strip()
    for c, paths in sorted(by_commit.items()):
        missing = not_held(root, c, paths)
        if missing is None and shallow != "false":
            print("note: commit %s is not in this clone (%s): %d archived files not checked"
                  % (c, "a shallow clone" if shallow == "true" else "not a git checkout", len(paths)))
        elif missing is None:
            problems.append("ledger: %d archived files: commit %s is not in this repository (rebased away?)"
                            % (len(paths), c))
        else:
            problems += ["ledger: %s: archived at %s, which does not hold it" % (p, c) for p in missing]
    return problems


def archive(root, path, entries, archived, commit):
    sha = git(root, "rev-parse", "--verify", "--quiet", commit + "^{commit}").stdout.strip()
    if not sha:
        print("ledger: %s: not a commit of this repository" % commit)
        return 1
    newest = {e["path"]: gpu for gpu, e in newest_suites(entries).items()}
    gone = [e["path"] for e in entries
            if e["path"] not in archived and not os.path.exists(os.path.join(root, e["path"]))]
    bad = ["ledger: %s: the newest suite run on %s: keep it in the tree" % (p, newest[p]) for p in gone if p in newest]
    bad += ["ledger: %s: commit %s does not hold it" % (p, sha[:12]) for p in not_held(root, sha, gone)]
    for b in bad:
        print(b)
    if bad:
        return 1
    with open(path, "a") as fh:
        for p in gone:
            fh.write(json.dumps({"archived": p, "commit": sha}, sort_keys=True) + "\n")
    print("ledger: %d files archived at %s" % (len(gone), sha[:12]))
    return 0


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    commit = None
    if "--archive" in args:
        i = args.index("--archive")
        if i + 1 >= len(args):
            print("usage: scripts/ledger.py --archive COMMIT [ROOT]")
            return 3
        commit = args[i + 1]
        del args[i:i + 2]
    if any(a.startswith("-") for a in args) or len(args) > 1 or (args and not os.path.isdir(args[0])):
        print("usage: scripts/ledger.py [--check] [ROOT]\n       scripts/ledger.py --archive COMMIT [ROOT]")
        return 3
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    path = os.path.join(root, "results", "ledger.jsonl")
    try:
        entries, archived = read(root)
    except ValueError as e:
        print("ledger: %s" % e)
        return 1
    have = {e["path"] for e in entries}
    if commit:
        return archive(root, path, entries, archived, commit)
    gone = [e["path"] for e in entries
            if e["path"] not in archived and not os.path.exists(os.path.join(root, e["path"]))]
    new = [entry(root, p) for p in recorded(root) if p not in have]
    new.sort(key=lambda e: (e["date"], e["path"]))
    for g in gone:
        print("ledger: %s: in results/ledger.jsonl, but the file is gone (and not archived)" % g)
    if check:
        for e in new:
            print("ledger: %s: a recorded results file missing from results/ledger.jsonl (scripts/ledger.py)" % e["path"])
        problems = ["ledger: %s: archived, but no line of the ledger lists it" % p for p in archived if p not in have]
        problems += check_archived(root, archived)
        for p in problems:
            print(p)
        return 1 if gone or new or problems else 0
    if gone:
        return 1
    with open(path, "a") as fh:
        for e in new:
            fh.write(json.dumps(e, sort_keys=True) + "\n")
    print("ledger: %d entries, %d appended" % (len(entries) + len(new), len(new)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
