#!/bin/sh
# Every command that writes a file refuses, before anything runs, an output
# path that is empty, a directory, a special file (a FIFO, a device) or one
# of its own inputs (by device and inode, whatever the name): exit 6, one
# line naming it, the input untouched, nothing measured. No GPU needed.
kgate=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") plug=$(cd "$2" && pwd) src=$(cd "$3" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
cd "$t" || exit 1
mkdir adir
mkfifo fifo
cp "$plug/libcand_good.so" cand.so
ln -s cand.so link.so
cp "$src/tests/data/recorded/run-h200-1.json" r.json
cp r.json r2.json
sum() { cksum <"$1"; }
cand_sum=$(sum cand.so) r_sum=$(sum r.json) r2_sum=$(sum r2.json)
# $1: what the message must hold; the rest: the command. Exit 6, one line
# on stderr starting "kgate", naming the problem, nothing on stdout, and
# quickly (no listing, no GPU wait: the timeout is a regression's hang)
refused() {
    want=$1
    shift
    timeout 60 "$@" >out.txt 2>err.txt
    rc=$?
    expect "$* : exit, one line, saying so" "6 1 1 0" \
        "$rc $(wc -l <err.txt) $(grep -c "^kgate.*$want" err.txt) $(wc -c <out.txt)"
}
refused "a directory" "$kgate" check cand.so --json adir
refused "a directory" "$kgate" check cand.so --json adir/
refused "a directory" "$kgate" check cand.so --json nosuch/
refused "an empty path" "$kgate" check cand.so --json ""
refused "not a regular file (a FIFO)" "$kgate" check cand.so --json fifo
refused "not a regular file (a device)" "$kgate" check cand.so --json /dev/null
refused "the same file as the input" "$kgate" check cand.so --json cand.so
refused "the same file as the input" "$kgate" check cand.so:noop --json ./cand.so
refused "the same file as the input" "$kgate" check link.so --json cand.so
refused "the same file as the input" "$kgate" tune cand.so:noop --json cand.so
refused "a directory" "$kgate" check cand.so --events adir
refused "the candidate itself" "$kgate" check cand.so --events cand.so
timeout 60 "$kgate" check cand.so --events - -q >out.txt 2>err.txt
expect "--events -: standard output, no file named '-' (then no GPU: exit 5)" "5 no" \
    "$? $([ -e ./- ] && echo yes || echo no)"
refused "a directory" "$kgate" run --json adir
refused "a directory" "$kgate" peaks --json adir
refused "the same file as the input" "$kgate" report r.json -o r.json
refused "the same file as the input" "$kgate" report r2.json r.json -o ./r.json
refused "a directory" "$kgate" report r.json -o adir
refused "an empty path" "$kgate" report r.json -o ""
refused "the same file as the input" "$kgate" compare r.json r2.json --json r.json
refused "the same file as the input" "$kgate" compare r.json r2.json --json "$t/r2.json"
refused "a directory" "$kgate" compare r.json r2.json --json adir
refused "the same file as the input" "$kgate" explain r.json --json r.json
echo '{"candidate":"cand.so"}' >m.jsonl
: >done.jsonl
refused "the same file as the input" "$kgate" batch m.jsonl -o m.jsonl
refused "the same file as the input" "$kgate" batch m.jsonl -o done.jsonl --done done.jsonl
refused "a directory" "$kgate" batch m.jsonl -o adir
refused "an empty path" "$kgate" batch m.jsonl -o ""
refused "the same file as the input" "$kgate" batch --merge -o done.jsonl done.jsonl
expect "the inputs are untouched" "$cand_sum $r_sum $r2_sum" "$(sum cand.so) $(sum r.json) $(sum r2.json)"
expect "nothing written beside them" "adir cand.so done.jsonl err.txt fifo link.so m.jsonl out.txt r.json r2.json" \
    "$(ls | paste -sd' ')"
expect "the FIFO is still one" yes "$([ -p fifo ] && echo yes || echo no)"
if command -v python3 >/dev/null; then
    mkdir probs sols
    : >probs/1_a.py
    : >sols/1_a.py
    refused "the same file as the input" "$kgate" kernelbench probs sols --json sols/1_a.py
    refused "a directory" "$kgate" kernelbench probs/1_a.py sols/1_a.py --json probs
fi
# "-" is standard output: the JSON alone there (its text on stderr), for
# compare, rejudge and explain; report without -o writes Markdown there
json_on_stdout() { python3 -c 'import json, sys; json.load(sys.stdin); print("json")' 2>/dev/null; }
expect "compare --json -: JSON on stdout" "json" "$("$kgate" compare r.json r2.json --json - 2>/dev/null | json_on_stdout)"
expect "rejudge --json -: JSON on stdout" "json" "$("$kgate" rejudge r.json --json - 2>/dev/null | json_on_stdout)"
cp "$src/tests/data/recorded/run-h200-diagnose.json" d.json
expect "explain --json -: JSON on stdout" "json" "$("$kgate" explain d.json --json - 2>/dev/null | json_on_stdout)"
expect "no file named -" no "$([ -e ./- ] && echo yes || echo no)"
expect "report without -o: Markdown on stdout" 1 "$("$kgate" report r.json 2>/dev/null | grep -c '^| kernel | op |')"
"$kgate" report r.json -o r.txt >out.txt 2>err.txt
expect "report -o r.txt: exit, one line, nothing written" "3 1 no" \
    "$? $(grep -c 'not .html, .md or .csv: give --format' err.txt) $([ -e r.txt ] && echo yes || echo no)"
"$kgate" report r.json -o r.txt --format md >out.txt 2>err.txt
expect "report -o r.txt --format md: written" "0 1" "$? $(grep -c '^| kernel | op |' r.txt)"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
