#!/bin/sh
# Every bundled variant is correct at every preset (quick timing).
. "$(dirname "$0")/common.sh"
out=$build/tests/gpu_variants.json
"$kgate" check "$build/libkgate_bundled.so" --sizes small,medium,large --max-time 1 --min-time 0.02 \
    --json "$out" >"$build/tests/gpu_variants.txt" 2>&1
cat "$build/tests/gpu_variants.txt"
for k in matmul_v1_fp16 matmul_v2_fp16 matmul_v1_bf16 matmul_v2_bf16 layer_norm_v1_bf16 \
         layer_norm_v2_bf16 softmax_v1_fp16 softmax_v2_fp16; do
    v=$(verdict "$out" $k "")
    case "$v" in *INCORRECT*|*CRASH*|*TIMEOUT*|*IMPOSSIBLE*|MISSING) got=bad ;; *) got=correct ;; esac
    expect "$k at small, medium, large ($v)" correct $got
done
finish
