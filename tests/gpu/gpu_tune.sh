#!/bin/sh
# kgate tune on the GPU finds the known best of a small space:
# tests/plugins/tunable.cu's relu does its work `passes` times, so the best
# configuration has passes = 1, the (512, 8) configuration is skipped as
# unable to run, and the default launch (4 passes) is slower than the best;
# a --knob subspace with no valid point is exit 2, said in one line.
. "$(dirname "$0")/common.sh"
out=$build/tests/gpu_tune.json
rm -f "$out.events"
"$kgate" tune "$build/tests/plugins/libcand_tunable0.so:relu_tuned" --shape large --json "$out" \
    --events "$out.events" >"$build/tests/gpu_tune.txt" 2>&1
expect "tune exit (the best is OK or SLOW)" yes "$([ $? -le 1 ] && echo yes || echo no)"
expect "tune --events: a line a configuration judged, the results' entries in order" yes "$(python3 -c "
import json, sys
key = lambda r: (r.get('kernel'), r.get('summary'), r.get('verdict'))
ev = [key(json.loads(l)['result']) for l in open(sys.argv[1])]
res = [key(r) for r in json.load(open(sys.argv[2]))['results']]
print('yes' if ev and ev == res else 'no: %d events, %d results' % (len(ev), len(res)))" "$out.events" "$out")"
expect "the best configuration" "passes=1" \
    "$(grep '^best:' "$build/tests/gpu_tune.txt" | grep -o 'passes=[0-9]*')"
expect "configurations timed, and skipped" "15 1" \
    "$(sed -n 's/.* \([0-9]*\) correct and timed, \([0-9]*\) cannot run this shape.*/\1 \2/p' "$build/tests/gpu_tune.txt")"
expect "the table printed once, then the summary" "1 yes" \
    "$(grep -c '^kernel ' "$build/tests/gpu_tune.txt") $(tail -1 "$build/tests/gpu_tune.txt" | grep -q '^default launch:' && echo yes)"
expect "the best beats the default launch" yes \
    "$(grep -q 'the best configuration is [1-9]' "$build/tests/gpu_tune.txt" && echo yes || echo no)"

# a space with no valid point: --knob leaves only (512, 8), which valid() refuses
"$kgate" tune "$build/tests/plugins/libcand_tunable0.so:relu_tuned" --shape large --knob block=512 --knob passes=8 \
    >"$build/tests/gpu_tune_none.txt" 2>&1
expect "no valid configuration: exit" 2 "$?"
expect "no valid configuration: said" 1 \
    "$(grep -c "no configuration of 'relu_tuned' ran this shape correctly" "$build/tests/gpu_tune_none.txt")"
expect "no valid configuration: counted as unable to run" "0 1" \
    "$(sed -n 's/.* \([0-9]*\) correct and timed, \([0-9]*\) cannot run this shape.*/\1 \2/p' "$build/tests/gpu_tune_none.txt")"

# --time-budget: no job starts after it; what ran is reported, marked incomplete
"$kgate" tune "$build/tests/plugins/libcand_tunable0.so:relu_tuned" --shape large --time-budget 1 \
    --json "$out.budget" >"$build/tests/gpu_tune_budget.txt" 2>&1
expect "a time budget: some configurations, not all, and incomplete" yes "$(python3 -c "
import json; d = json.load(open('$out.budget'))
print('yes' if 1 <= len(d['results']) < 17 and 'time-budget' in d.get('incomplete', '') else 'no')")"

# SIGTERM: the running worker is killed, what was measured is printed and written, exit 7
"$kgate" tune "$build/tests/plugins/libcand_tunable0.so:relu_tuned" --shape large \
    --json "$out.term" >"$build/tests/gpu_tune_term.txt" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$out.term" ] && break; sleep 0.2; done
kill -TERM $pid
wait $pid
rc=$?
expect "tune stopped by SIGTERM: exit" 7 "$rc"
expect "tune stopped by SIGTERM: results kept, marked incomplete" yes "$(python3 -c "
import json; d = json.load(open('$out.term'))
print('yes' if len(d['results']) >= 1 and 'stopped by' in d.get('incomplete', '') else 'no')")"
finish
