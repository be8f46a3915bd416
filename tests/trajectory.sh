#!/bin/sh
# kgate trajectory on the CPU: a loop's iterations from kgate serve's
# answers (tests/fake_check.sh as each check), from iteration folders in
# natural order and from one results file; and its bad inputs.
#   trajectory.sh KGATE REPO
kgate=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") src=$(cd "$2" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
cd "$t" || exit 1
: >a.so
: >c_slow.so
: >c_wrong.so

# 1. a service's answers: one iteration a line, a refused request with its error
{
    echo '{"id":"it-1","candidate":"c_wrong.so"}'
    echo '{"id":"it-2","candidate":"c_slow.so"}'
    echo '{"id":"it-3"}'
    echo '{"id":"it-4","candidate":"a.so"}'
} | KG_BATCH_RUNNER="$src/tests/fake_check.sh" "$kgate" serve --stdio >answers.jsonl 2>/dev/null
"$kgate" trajectory answers.jsonl >out1.txt 2>&1
expect "answers: exit" 0 "$?"
expect "answers: iterations in order with their verdicts" "1:INCORRECT 2:SLOW 3:- 4:OK" \
    "$(awk 'NR > 1 && $1 ~ /^[0-9]+$/ {printf "%s%s:%s", sep, $1, $5; sep=" "}' out1.txt)"
expect "answers: the refused request's row says why" 1 "$(grep -c "^   3  line 3 .*exit 3: line 3: no 'candidate'" out1.txt)"
expect "answers: no E_best recorded: the fastest correct iteration" 1 "$(grep -c '^best: iteration 2 (it-2), the fastest at 100.0 us (no E_best recorded)' out1.txt)"

# 2. iteration folders in natural order (it-2 before it-10), each folder's results files together
mkdir -p loop/it-10 loop/it-2 loop/it-1
cp "$src/tests/data/recorded/run-h200-1.json" loop/it-2/r.json
cp "$src/tests/data/recorded/run-h200-2.json" loop/it-10/a.json
cp "$src/tests/data/recorded/run-h200-1.json" loop/it-10/b.json
cp "$src/tests/data/recorded/run-h200-diagnose.json" loop/it-1/run.json
"$kgate" trajectory loop >out2.txt 2>&1
expect "folders: exit" 0 "$?"
expect "folders: natural order" "it-1 it-2 it-10" \
    "$(awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $2}' out2.txt | uniq | tr '\n' ' ' | sed 's/ $//')"
expect "folders: it-10's two files make one iteration" 114 "$(awk '$2 == "it-10"' out2.txt | wc -l | tr -d ' ')"
expect "folders: the top cause of a diagnosed SLOW kernel" 1 "$(grep -c '^   1  it-1 .*add_v1_fp16 .*SLOW.*RC0b 0.37$' out2.txt)"

# 3. one results file is one iteration
"$kgate" trajectory "$src/tests/data/recorded/run-h200-1.json" >out3.txt 2>&1
expect "one file: exit, every row iteration 1" "0 57" "$? $(awk '$1 == 1' out3.txt | wc -l | tr -d ' ')"

# 3b. the page: the plot, its legend, a marker an iteration, labels escaped
mkdir -p "loop/it-<b>11"
cp "$src/tests/data/recorded/run-h200-1.json" "loop/it-<b>11/r.json"
"$kgate" trajectory loop -o page.html >/dev/null 2>&1
expect "page: exit" 0 "$?"
expect "page: the plot and its legend" "1 1" "$(grep -c '<svg id="trajectory"' page.html) $(grep -c '<p id="legend">' page.html)"
expect "page: an E_best marker an iteration" 4 "$(grep -o '<circle class="it"' page.html | wc -l | tr -d ' ')"
expect "page: the OK band" 1 "$(grep -c 'class="ok-band"' page.html)"
expect "page: a folder's name is escaped (two titles, a cell)" "0 3" "$(grep -c 'it-<b>11' page.html) $(grep -c 'it-&lt;b&gt;11' page.html)"
expect "page: it loads nothing" 0 "$(grep -ci 'src=\|href=' page.html)"
"$kgate" trajectory loop -o page.txt >/dev/null 2>err3.txt
expect "page: -o without .html: exit 3, said" "3 1" "$? $(grep -c 'name it .html' err3.txt)"
cp answers.jsonl in.html
"$kgate" trajectory in.html -o in.html >/dev/null 2>err3.txt
expect "page: -o one of its inputs: exit 6, nothing overwritten" "6 same" "$? $(cmp -s in.html answers.jsonl && echo same)"

# 4. bad inputs
"$kgate" trajectory >/dev/null 2>err4.txt
expect "no path: exit 3, said" "3 1" "$? $(grep -c 'give the loop' err4.txt)"
"$kgate" trajectory nope.json >/dev/null 2>err4.txt
expect "a missing path: exit 6, named" "6 1" "$? $(grep -c 'nope.json' err4.txt)"
mkdir empty
"$kgate" trajectory empty >/dev/null 2>err4.txt
expect "an empty folder: exit 6, said" "6 1" "$? $(grep -c 'no iteration' err4.txt)"
echo '{"schema":"kgate.batch/1","id":"x"}' >other.jsonl
echo '{"schema":"other/1"}' >>other.jsonl
"$kgate" trajectory other.jsonl >/dev/null 2>err4.txt
expect "a line of another schema: exit 6, naming the line" "6 1" "$? $(grep -c 'other.jsonl:2: schema other/1' err4.txt)"
"$kgate" trajectory --json x.json a.json >/dev/null 2>err4.txt
expect "an option it does not take: exit 3" 3 "$?"

echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
