#!/bin/sh
# This GPU against the build's code (catalog/arch.h). kgate devices says what
# every GPU gets and which bundled variants it cannot run; on GPU 0, where
# the Hopper variants run (an H100/H200 with a build holding sm_90a) matmul
# v2 and v3 are checked and correct, and where they do not, kgate check
# reports them SKIPPED "not on this GPU: needs sm_90a ..." without running
# them and judges v1; a copy of the bundled library (not read as the
# bundled one) gets the launch's own refusal, never the trap.
. "$(dirname "$0")/common.sh"
t=$build/tests/arch
mkdir -p "$t"
"$kgate" devices >"$t/devices.txt" 2>&1
expect "devices: exit" 0 $?
expect "devices: the build's line" 1 "$(grep -c '^this build: .* (KG_CUDA_ARCHS)$' "$t/devices.txt")"
expect "devices: a code line a GPU" "$(grep -c '^[0-9]' "$t/devices.txt")" \
    "$(grep -c '^   code: \(SASS\|PTX\) ' "$t/devices.txt")"
gpu0=$(awk '/^0 /{on=1; next} /^[0-9]/{on=0} on' "$t/devices.txt")
echo "$gpu0"
# kernel verdict reason, one line a result of the JSON
results() { python3 -c "import json; [print(r['kernel'], r['verdict'], r.get('reason', '')) for r in json.load(open('$1'))['results']]"; }
"$kgate" check "$build/libkgate_bundled.so" --op matmul --dtype fp16 --shape small --verify-only \
    --json "$t/mm.json" >"$t/mm.txt" 2>&1
results "$t/mm.json" >"$t/mm.results"
cat "$t/mm.results"
expect "matmul_v1_fp16 correct" 1 "$(grep -c '^matmul_v1_fp16 SKIPPED correct' "$t/mm.results")"
if echo "$gpu0" | grep -q '^   bundled variants: all run here$'; then
    for v in v2 v3; do
        expect "matmul_${v}_fp16 runs here, correct" 1 "$(grep -c "^matmul_${v}_fp16 SKIPPED correct" "$t/mm.results")"
    done
else
    expect "devices: the Hopper variants named" 1 \
        "$(echo "$gpu0" | grep -c '^   bundled variants: not here: .*matmul_v3 (needs sm_90a (wgmma, TMA): ')"
    for v in v2 v3; do
        expect "matmul_${v}_fp16 SKIPPED, not run" 1 \
            "$(grep -c "^matmul_${v}_fp16 SKIPPED not on this GPU: needs sm_90a (wgmma, TMA): " "$t/mm.results")"
    done
    cp "$build/libkgate_bundled.so" "$t/copy.so"
    "$kgate" check "$t/copy.so:matmul_v3_fp16" --shape small --verify-only --json "$t/copy.json" >"$t/copy.txt" 2>&1
    results "$t/copy.json" >"$t/copy.results"
    cat "$t/copy.results"
    expect "a copy's matmul_v3_fp16: the launch refuses" yes \
        "$(cat "$t/copy.txt" "$t/copy.json" | grep -q 'matmul v3 needs sm_90a (wgmma, TMA): an H100/H200 and a build with 90a' &&
            echo yes || echo no)"
fi
finish
