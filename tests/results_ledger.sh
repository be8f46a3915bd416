#!/bin/sh
# results/ledger.jsonl lists every recorded results file (scripts/ledger.py),
# and docs/performance.md is what scripts/performance_md.py generates from it;
# the ledger only grows (each committed version's runs begin today's); each check
# fails on a tree that breaks it (a file left out, a page edited).
#   tests/results_ledger.sh SOURCE_DIR
src=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
python3 "$src/scripts/ledger.py" --check "$src"
expect "the ledger lists every recorded file: exit" 0 $?
python3 "$src/scripts/performance_md.py" --check "$src"
expect "docs/performance.md as generated: exit" 0 $?
mkdir -p "$t/results/x" "$t/docs" "$t/scripts"
cp "$src/results/ledger.jsonl" "$t/results/"
# every file the ledger names, then one more that it does not
python3 -c 'import json, sys; [print(json.loads(l)["path"]) for l in open(sys.argv[1])]' "$src/results/ledger.jsonl" |
    while read -r p; do mkdir -p "$t/$(dirname "$p")" && cp "$src/$p" "$t/$p"; done
first=$(head -1 "$src/results/ledger.jsonl" | python3 -c 'import json, sys; print(json.load(sys.stdin)["path"])')
cp "$src/$first" "$t/results/x/new.json"
python3 "$src/scripts/ledger.py" --check "$t" >"$t/out.txt"
expect "a recorded file left out: exit" 1 $?
expect "... named" 1 "$(grep -c '^ledger: results/x/new.json: a recorded results file missing' "$t/out.txt")"
rm "$t/$first"
python3 "$src/scripts/ledger.py" --check "$t" >"$t/out.txt"
expect "a listed file gone: exit" 1 $?
expect "... named" 1 "$(grep -c "^ledger: $first: in results/ledger.jsonl, but the file is gone" "$t/out.txt")"
# append-only: the runs of every committed version of the ledger begin
# today's, in order (a line's fields may be corrected with its file; a run
# is never removed or moved)
runs() { python3 -c 'import json, sys; [print(json.loads(l)["path"]) for l in open(sys.argv[1])]' "$1"; }
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    bad=0
    runs "$src/results/ledger.jsonl" >"$t/now.txt"
    for c in $(git -C "$src" log --format=%H -- results/ledger.jsonl); do
        git -C "$src" show "$c:results/ledger.jsonl" >"$t/old.jsonl" 2>/dev/null || continue
        runs "$t/old.jsonl" >"$t/old.txt"
        head -n "$(wc -l <"$t/old.txt")" "$t/now.txt" | cmp -s - "$t/old.txt" || bad=$((bad + 1))
    done
    expect "every committed ledger's runs begin today's (append-only): commits whose do not" 0 "$bad"
else
    echo "note: not a git checkout: the ledger's history is not checked"
fi
cp "$src/docs/performance.md" "$t/docs/" && cp "$src/$first" "$t/$first" && echo "edited by hand" >>"$t/docs/performance.md"
python3 "$src/scripts/performance_md.py" --check "$t" >"$t/out.txt"
expect "docs/performance.md edited: exit" 1 $?
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
