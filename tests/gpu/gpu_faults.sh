#!/bin/sh
# A crashing, a hanging, a wrong, an input-mutating and a stream-escaping
# candidate each get their verdict, and the candidate after them still runs;
# a kernel that returns an error is a CRASH with its message.
. "$(dirname "$0")/common.sh"
out=$build/tests/gpu_faults.json
"$kgate" check "$build/tests/plugins/libcand_faults.so" --shape small --timeout 20 --max-time 1 \
    --json "$out" >"$build/tests/gpu_faults.txt" 2>&1
rc=$?
cat "$build/tests/gpu_faults.txt"
expect "exit code" 2 $rc
expect illegal CRASH "$(verdict "$out" illegal "")"
expect spin TIMEOUT "$(verdict "$out" spin "")"
expect zeros INCORRECT "$(verdict "$out" zeros "")"
expect mutate INCORRECT "$(verdict "$out" mutate "")"
expect sidestream IMPOSSIBLE "$(verdict "$out" sidestream "")"
esc=$(python3 -c "import json; r=json.load(open('$out'))['results']; print(' '.join(f for x in r if x['kernel']=='sidestream' for f in x['flags']))")
case "$esc" in *escaped-stream*) esc=flagged ;; esac
expect "sidestream flags" flagged "$esc"
v=$(verdict "$out" simple ""); case "$v" in OK|SLOW) v=ran ;; esac
expect "simple (after the faults)" ran "$v"
"$kgate" check "$build/tests/plugins/libcand_good.so:errs" --shape small --json "$out.errs" >/dev/null 2>&1
expect "errs (returns 7)" CRASH "$(verdict "$out.errs" errs "")"
"$kgate" check "$build/tests/plugins/libcand_good.so:noop" --shape small --json "$out.noop" >/dev/null 2>&1
expect "noop (writes nothing)" INCORRECT "$(verdict "$out.noop" noop "")"
# --memcheck runs one checked call under compute-sanitizer: racy's race is
# named by racecheck, and a clean kernel says it was checked
"$kgate" check "$build/tests/plugins/libcand_faults.so:racy" --shape small --memcheck --verify-only \
    --json "$out.racy" >/dev/null 2>&1
expect "racy under --memcheck" INCORRECT "$(verdict "$out.racy" racy "")"
expect "racy: named by racecheck" 1 "$(python3 -c "import json; r=json.load(open('$out.racy'))['results'][0]; print(int('racecheck' in r['reason']))")"
"$kgate" check "$build/tests/plugins/libcand_faults.so:simple" --shape small --memcheck --verify-only \
    --json "$out.clean" >/dev/null 2>&1
expect "simple under --memcheck: says it was clean" 1 "$(python3 -c "import json; r=json.load(open('$out.clean'))['results'][0]; print(int('no errors' in r['detail']))")"
# an ABI version 1 candidate is refused with one line, exit 4 (docs/abi.md)
"$kgate" check "$build/tests/plugins/libcand_v1.so" --shape small >"$out.v1" 2>&1
rc=$?
expect "v1 candidate: exit code" 4 $rc
expect "v1 candidate: one line naming version 1" 1 "$(grep -c 'ABI version 1 candidate' "$out.v1")"
finish
