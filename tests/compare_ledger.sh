#!/bin/sh
# kgate compare --ledger L B.json: A is the newest suite run on B's GPU that
# ledger L records (store/ledger.h), archive records of other files
# skipped; no such run, that run archived, a file that is not a ledger, or
# two results files beside --ledger are refused in one line.
#   tests/compare_ledger.sh KGATE SOURCE_DIR
kgate=$1 src=$2
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
run=$src/tests/data/recorded/run-h200-2.json # an H200 suite run (57 kernels)
mkdir -p "$t/results/old" "$t/results/new"
cp "$run" "$t/results/old/r.json"
cp "$run" "$t/results/new/r.json"
line() { printf '{"path": "results/%s/r.json", "gpu": "NVIDIA H200", "date": "%s", "suite": %s, "kernels": %s}\n' "$@"; }
{ line old 2026-12-01T00:00:00Z true 57; line new 2026-12-02T00:00:00Z true 57
  line old 2026-12-03T00:00:00Z false 57; line old 2026-12-04T00:00:00Z true 0; } >"$t/results/ledger.jsonl"
"$kgate" compare --ledger "$t/results/ledger.jsonl" "$run" --json "$t/c.json" >"$t/out.txt" 2>&1
expect "the newest suite run: exit" 0 $?
expect "... every kernel SAME" 1 "$(grep -c '^57 SAME; 0 regression' "$t/out.txt")"
expect "... A is the newest suite run with kernels (not a check, not an empty run)" new \
    "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["a"]["file"].split("/")[-2])' "$t/c.json")"
# the repository's ledger: A is the run docs/performance.md shows for the
# H200, in the tree (exit 0, or 1 where B, an older run, has a regression)
"$kgate" compare --ledger "$src/results/ledger.jsonl" "$run" --json "$t/repo.json" >/dev/null 2>&1
expect "the repository's ledger: compared (exit 0 or 1)" yes "$([ $? -le 1 ] && echo yes)"
shown=$(sed -n '/^## NVIDIA H200$/,/^## /s/^Commit .* (`\(results\/[^`]*\)`)\.$/\1/p' "$src/docs/performance.md")
expect "... A is the H200 run docs/performance.md shows" yes "$(python3 -c '
import json, os, sys
a = json.load(open(sys.argv[1]))["a"]["file"]
print("yes" if sys.argv[3] and os.path.samefile(a, os.path.join(sys.argv[2], sys.argv[3])) else a)' "$t/repo.json" "$src" "$shown")"
# archive records ({"archived": PATH, "commit": SHA}, scripts/ledger.py)
sha=1234567890abcdef1234567890abcdef12345678
archived() { printf '{"archived": "results/%s/r.json", "commit": "%s"}\n' "$1" "$2"; }
cp "$t/results/ledger.jsonl" "$t/entries.jsonl"
archived old $sha >>"$t/results/ledger.jsonl"
"$kgate" compare --ledger "$t/results/ledger.jsonl" "$run" --json "$t/c.json" >"$t/out.txt" 2>&1
expect "an older run archived: exit" 0 $?
expect "... A still the newest suite run" new \
    "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["a"]["file"].split("/")[-2])' "$t/c.json")"
archived new $sha >>"$t/results/ledger.jsonl"
"$kgate" compare --ledger "$t/results/ledger.jsonl" "$run" >"$t/out.txt" 2>&1
expect "the newest suite run archived: exit" 6 $?
expect "... one line, the git command that gives it" "1 1" "$(wc -l <"$t/out.txt" | tr -d ' ') $(grep -c \
    "results/new/r.json, left the tree (archived at commit 1234567890ab): git show $sha:results/new/r.json >A.json" "$t/out.txt")"
{ cat "$t/entries.jsonl"; archived old 1234567; } >"$t/short.jsonl"
"$kgate" compare --ledger "$t/short.jsonl" "$run" >"$t/out.txt" 2>&1
expect "an archive record whose commit is not 40 hex digits: exit" 6 $?
expect "... its line named" 1 "$(grep -c 'short.jsonl: line 5 is not a ledger entry' "$t/out.txt")"
cp "$t/entries.jsonl" "$t/results/ledger.jsonl"
sed 's/NVIDIA H200/NVIDIA H100 80GB HBM3/' "$run" >"$t/h100.json"
"$kgate" compare --ledger "$t/results/ledger.jsonl" "$t/h100.json" >"$t/out.txt" 2>&1
expect "no suite run on B's GPU: exit" 6 $?
expect "... named" 1 "$(grep -c 'no suite run on NVIDIA H100 80GB HBM3 to compare against' "$t/out.txt")"
printf 'not json\n' >"$t/bad.jsonl"
"$kgate" compare --ledger "$t/bad.jsonl" "$run" >"$t/out.txt" 2>&1
expect "not a ledger: exit" 6 $?
expect "... its line named" 1 "$(grep -c 'bad.jsonl: line 1 is not a ledger entry' "$t/out.txt")"
"$kgate" compare --ledger "$t/results/ledger.jsonl" "$run" "$run" >"$t/out.txt" 2>&1
expect "two results files beside --ledger: exit" 3 $?
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
