#!/bin/sh
# Issue 6's library paths on the GPU: each finds an engine or algorithm that
# runs and passes the reference check (status ok), and says which: the cuDNN
# convolution's timed search over every engine config the heuristics offer
# (NCHW and NHWC), cuDNN's fused attention graph (causal and not), cuBLASLt
# strided-batched, and the two-GEMM linear_activation path.
. "$(dirname "$0")/common.sh"
t=$build/tests/baselines
mkdir -p "$t"
lib() { # lib JSON KERNEL PATH -> "status|note"
    python3 -c "
import json, sys
r = [x for x in json.load(open('$1'))['results'] if x['kernel'] == '$2']
l = [p for p in (r[0].get('libraries', []) if r else []) if p['name'] == '$3']
print((l[0]['status'] + '|' + l[0].get('note', '')) if l else 'MISSING|')"
}
run() { # run NAME OP SHAPE [PARAM]
    "$kgate" check "$build/libkgate_bundled.so" --op "$2" --dtype fp16 --shape "$3" ${4:+--param "$4"} \
        --json "$t/$1.json" >"$t/$1.txt" 2>&1
}
run conv conv2d small
run conv_nhwc conv2d_nhwc small
run attn attention small
run attn_causal attention small causal=1
run bmm batched_matmul small
run linact linear_activation small
for c in "conv conv2d_v2_fp16 cudnn-conv engine config" "conv_nhwc conv2d_nhwc_v2_fp16 cudnn-conv-nhwc engine config" \
         "attn attention_v2_fp16 cudnn-sdpa engine config" "attn_causal attention_v2_fp16 cudnn-sdpa engine config" \
         "bmm batched_matmul_v2_fp16 cublaslt-batched heuristic" "linact linear_activation_v2_fp16 cublaslt-linact heuristic"; do
    set -- $c
    got=$(lib "$t/$1.json" "$2" "$3")
    case $got in "ok|"*"$4"*) ok=yes ;; *) ok="no: $got" ;; esac
    expect "$3 runs and passes at $1" yes "$ok"
done
finish
