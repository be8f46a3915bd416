#!/bin/sh
# TileLang's JIT through the Python route (issue 9's target): the kernels of
# tilelang/gen.py compiled by TileLang at run time from Python
# (tests/python/tilelang_jit.py) get the same verdicts as the same kernels
# lowered ahead of time into libkgate_tilelang.so; the times of both routes
# are written (tl-jit-*.json, tl-aot-*.json) for scripts/python_route.py.
# Needs python3 with torch and tilelang==0.1.15 (on the GPU machine:
# scripts/tilelang_wheels.sh install DIR, DIR on PYTHONPATH) and the .so.
. "$(dirname "$0")/common.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
py=${KGATE_PYTHON:-python3}
if ! "$py" -c 'import torch, tilelang' 2>/dev/null; then
    echo "SKIP: $py lacks torch or tilelang ($("$py" -c 'import tilelang' 2>&1 | tail -1))"
    exit 77
fi
[ -f "$build/tilelang/libkgate_tilelang.so" ] || { echo "SKIP: $build/tilelang/libkgate_tilelang.so not built"; exit 77; }
export KGATE_PYTHON=$py
t=$build/tests/python
mkdir -p "$t"
get() { # get JSON KERNEL FIELD
    python3 -c "import json,sys; r=[x for x in json.load(open('$1'))['results'] if x['kernel']=='$2']; print(r[0].get('$3') if r else 'MISSING')"
}
for shape in small large; do
    # the first call of a column count compiles (seconds): the timeout allows it
    "$kgate" check "$src/tests/python/tilelang_jit.py" --shape $shape --timeout 300 --json "$t/tl-jit-$shape.json" \
        >"$t/tl-jit-$shape.txt" 2>&1
    "$kgate" check "$build/tilelang/libkgate_tilelang.so" --shape $shape --json "$t/tl-aot-$shape.json" \
        >"$t/tl-aot-$shape.txt" 2>&1
    for k in layer_norm_naive_bf16 layer_norm_bf16 rms_norm_naive_fp16 rms_norm_fp16 softmax_naive_fp16 softmax_fp16; do
        expect "jit_tilelang_$k at $shape, as tilelang_$k" "$(get "$t/tl-aot-$shape.json" "tilelang_$k" verdict)" \
            "$(get "$t/tl-jit-$shape.json" "jit_tilelang_$k" verdict)"
    done
done
finish
