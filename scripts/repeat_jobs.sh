#!/bin/sh
# The manifest of many candidates of a few operators that batch_bench.sh's
# lib phase and ab_bench.sh judge: softmax, layer_norm, add and matmul fp16
# at the small preset, naive and fast, three copies each (24 jobs), the
# candidates those of the packed build BUILD.
#   scripts/repeat_jobs.sh BUILD >MANIFEST.jsonl
b=${1:?usage: scripts/repeat_jobs.sh BUILD}
for op in softmax layer_norm add matmul; do
    for v in v1 v2; do
        for copy in a b c; do
            echo "{\"id\":\"${op}_$v-$copy\",\"candidate\":\"$b/libkgate_bundled.so\",\"kernel\":\"${op}_${v}_fp16\",\"shape\":\"small\"}"
        done
    done
done
