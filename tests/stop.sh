#!/bin/sh
# kgate check stopped by a signal (GPU): SIGTERM or SIGINT, early (before any
# kernel is judged) or late (after some), ends it with exit 7 and a --json
# file that is valid and marked `incomplete`, holding every kernel judged
# before the signal. Without a GPU it skips (77).
#   tests/stop.sh KGATE BUNDLED.so
kgate=$1 bundled=$2
"$kgate" devices >/dev/null 2>&1 || { echo "skip: no GPU"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
# stopped SIG WHEN (seconds, or `judged`): kgate check's exit code, then the JSON's "incomplete" and its result count
stopped() {
    "$kgate" check "$bundled" --op layer_norm --sizes small,large --json "$t/r.json" >"$t/out.txt" 2>&1 &
    pid=$!
    if [ "$2" = judged ]; then # once the checkpoint holds a result (at most 300 s)
        i=0
        while [ $i -lt 600 ] && ! grep -q '"kernel"' "$t/r.json" 2>/dev/null; do sleep 0.5; i=$((i + 1)); done
    else
        sleep "$2"
    fi
    kill -"$1" $pid
    wait $pid
    echo "$?"
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
print(bool(d.get("incomplete")), len(d["results"]))' "$t/r.json" 2>&1
}
for sig in TERM INT; do
    rm -f "$t/r.json"
    set -- $(stopped $sig 2)
    expect "SIG$sig before any kernel: exit" 7 "$1"
    expect "SIG$sig before any kernel: the JSON is marked incomplete" True "$2"
    expect "SIG$sig before any kernel: it holds no result" 0 "$3"
done
rm -f "$t/r.json"
set -- $(stopped TERM judged)
expect "SIGTERM later: exit" 7 "$1"
expect "SIGTERM later: the JSON is marked incomplete" True "$2"
n=$((n + 1))
if [ "${3:-0}" -ge 1 ] 2>/dev/null; then echo "ok: SIGTERM later: $3 result(s) kept"; else echo "FAIL: SIGTERM later: results '$3'"; fails=$((fails + 1)); fi
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
