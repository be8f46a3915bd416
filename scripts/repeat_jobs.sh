#!/bin/sh
# The manifest of many candidates of a few operators that batch_bench.sh's
# lib phase and ab_bench.sh judge, at the small preset:
#   c (default): softmax, layer_norm, add and matmul fp16, naive and fast,
#     three copies each (24 jobs), the candidates those of the packed build
#     BUILD;
#   python: the Triton kernels of tests/python/triton_jit.py launched by
#     Triton's JIT (jit_layer_norm_bf16, jit_rms_norm_fp16, jit_argmax_fp16,
#     jit_matmul_fp16), three copies each (12 jobs): Python workers, whose
#     torch import runs before a job takes its GPU's lock.
#   scripts/repeat_jobs.sh BUILD [c|python] >MANIFEST.jsonl
b=${1:?usage: scripts/repeat_jobs.sh BUILD [c|python]}
case ${2:-c} in
c)
    for op in softmax layer_norm add matmul; do
        for v in v1 v2; do
            for copy in a b c; do
                echo "{\"id\":\"${op}_$v-$copy\",\"candidate\":\"$b/libkgate_bundled.so\",\"kernel\":\"${op}_${v}_fp16\",\"shape\":\"small\"}"
            done
        done
    done
    ;;
python)
    py=$(cd "$(dirname "$0")/../tests/python" && pwd)/triton_jit.py
    for k in layer_norm_bf16 rms_norm_fp16 argmax_fp16 matmul_fp16; do
        for copy in a b c; do
            echo "{\"id\":\"jit_$k-$copy\",\"candidate\":\"$py\",\"kernel\":\"jit_$k\",\"shape\":\"small\"}"
        done
    done
    ;;
*)
    echo "repeat_jobs.sh: '$2': the kinds are c and python" >&2
    exit 3
    ;;
esac
