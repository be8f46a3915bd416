#!/bin/sh
# results/ledger.jsonl lists every recorded results file (scripts/ledger.py),
# each in the tree or archived at a commit that holds it, and
# docs/performance.md is what scripts/performance_md.py generates from it;
# the ledger only grows (each committed version's runs begin today's); each
# check fails on a tree that breaks it (a file left out, a file gone and not
# archived, an archive record whose commit lacks the file, the newest suite
# run archived, a page edited).
#   tests/results_ledger.sh SOURCE_DIR
src=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
ledger() { python3 "$src/scripts/ledger.py" "$@"; }
# the runs a ledger lists (its entries' paths, not its archive records)
runs() { python3 -c 'import json, sys; [print(l["path"]) for l in map(json.loads, open(sys.argv[1])) if "path" in l]' "$1"; }
ledger --check "$src"
expect "the ledger lists every recorded file, each in the tree or archived: exit" 0 $?
python3 "$src/scripts/performance_md.py" --check "$src"
expect "docs/performance.md as generated: exit" 0 $?
mkdir -p "$t/results/x" "$t/docs"
cp "$src/results/ledger.jsonl" "$t/results/"
# every file of the ledger that is in the tree, then one more that it does
# not list (the archived ones: $t is no git checkout, said and not checked)
runs "$src/results/ledger.jsonl" >"$t/listed.txt"
while read -r p; do [ -e "$src/$p" ] && mkdir -p "$t/$(dirname "$p")" && cp "$src/$p" "$t/$p"; done <"$t/listed.txt"
first=$(while read -r p; do [ -e "$src/$p" ] && echo "$p" && break; done <"$t/listed.txt")
cp "$src/$first" "$t/results/x/new.json"
ledger --check "$t" >"$t/out.txt"
expect "a recorded file left out: exit" 1 $?
expect "... named" 1 "$(grep -c '^ledger: results/x/new.json: a recorded results file missing' "$t/out.txt")"
rm "$t/$first"
ledger --check "$t" >"$t/out.txt"
expect "a listed file gone: exit" 1 $?
expect "... named" 1 "$(grep -c "^ledger: $first: in results/ledger.jsonl, but the file is gone (and not archived)" "$t/out.txt")"
# append-only: the runs of every committed version of the ledger begin
# today's, in order (a line's fields may be corrected with its file; a run
# is never removed or moved)
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

# archive records ({"archived": PATH, "commit": SHA}), in a repository of
# two suite runs of one date (b.json, the later line, the newest)
if ! command -v git >/dev/null; then
    echo "note: no git: archive records not checked"
else
    g=$t/g
    mkdir -p "$g/results/r" "$g/docs"
    cp "$src/tests/data/recorded/run-h200-1.json" "$g/results/r/a.json"
    cp "$src/tests/data/recorded/run-h200-1.json" "$g/results/r/b.json"
    commit() { git -C "$g" add -A && git -C "$g" -c user.name=t -c user.email=t@t -c commit.gpgsign=false commit -qm "$1"; }
    git -C "$g" init -q && ledger "$g" >/dev/null && python3 "$src/scripts/performance_md.py" "$g" && commit runs
    one=$(git -C "$g" rev-parse HEAD)
    rm "$g/results/r/a.json"
    ledger --check "$g" >"$t/out.txt"
    expect "a file gone, no archive record: exit" 1 $?
    ledger --archive HEAD "$g" >"$t/out.txt"
    expect "ledger.py --archive HEAD: exit" 0 $?
    expect "... its record" "{\"archived\": \"results/r/a.json\", \"commit\": \"$one\"}" "$(tail -1 "$g/results/ledger.jsonl")"
    ledger --check "$g" >"$t/out.txt"
    expect "a file archived at a commit that holds it: exit" 0 $?
    commit archived && cp "$g/results/ledger.jsonl" "$t/good.jsonl"
    two=$(git -C "$g" rev-parse HEAD)
    printf '{"archived": "results/r/a.json", "commit": "%s"}\n' "$two" >>"$g/results/ledger.jsonl"
    ledger --check "$g" >"$t/out.txt"
    expect "archived at a commit that lacks the file: exit" 1 $?
    expect "... named" 1 "$(grep -c "^ledger: results/r/a.json: archived at $two, which does not hold it" "$t/out.txt")"
    git clone -q --depth 1 "file://$g" "$t/shallow" 2>/dev/null
    ledger --check "$t/shallow" >"$t/out.txt"
    expect "archived at a commit a shallow clone lacks: exit" 0 $?
    expect "... said" 1 "$(grep -c "^note: commit $one is not in this clone (a shallow clone): 1 archived files" "$t/out.txt")"
    cp "$t/good.jsonl" "$g/results/ledger.jsonl"
    printf '{"archived": "results/r/a.json", "commit": "%s"}\n' 1111111111111111111111111111111111111111 >>"$g/results/ledger.jsonl"
    ledger --check "$g" >"$t/out.txt"
    expect "archived at a commit the repository lacks (rebased away): exit" 1 $?
    expect "... named" 1 "$(grep -c '^ledger: 1 archived files: commit 1111111111111111111111111111111111111111 is not in this repository' "$t/out.txt")"
    cp "$t/good.jsonl" "$g/results/ledger.jsonl"
    printf '{"archived": "results/r/a.json"}\n' >>"$g/results/ledger.jsonl"
    ledger --check "$g" >"$t/out.txt"
    expect "an archive record without its commit: exit" 1 $?
    expect "... its line named" 1 "$(grep -c '^ledger: results/ledger.jsonl: line 4 is neither an entry' "$t/out.txt")"
    cp "$t/good.jsonl" "$g/results/ledger.jsonl"
    rm "$g/results/r/b.json"
    ledger --archive HEAD "$g" >"$t/out.txt"
    expect "ledger.py --archive of the newest suite run: exit" 1 $?
    expect "... refused" 1 "$(grep -c '^ledger: results/r/b.json: the newest suite run on NVIDIA H200: keep it in the tree' "$t/out.txt")"
    expect "... the ledger unchanged" same "$(cmp -s "$t/good.jsonl" "$g/results/ledger.jsonl" && echo same)"
    printf '{"archived": "results/r/b.json", "commit": "%s"}\n' "$one" >>"$g/results/ledger.jsonl"
    python3 "$src/scripts/performance_md.py" --check "$g" >"$t/out.txt"
    expect "docs/performance.md of an archived newest suite run: exit" 1 $?
    expect "... named" 1 "$(grep -c '^performance: results/r/b.json, the newest suite run on NVIDIA H200, is not in the tree (archived)' "$t/out.txt")"
fi
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
