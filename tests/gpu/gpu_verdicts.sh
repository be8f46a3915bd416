#!/bin/sh
# The paper's passes-but-slow, reproduced: naive layer_norm and softmax are
# correct and SLOW at the large shape, the optimized ones OK.
. "$(dirname "$0")/common.sh"
out=$build/tests/gpu_verdicts.json
"$kgate" check "$build/libkgate_bundled.so" --op layer_norm --json "$out.ln" >/dev/null 2>&1
"$kgate" check "$build/libkgate_bundled.so" --op softmax --json "$out.sm" >/dev/null 2>&1
expect "layer_norm_v1 large" SLOW "$(verdict "$out.ln" layer_norm_v1_bf16 8192x8192)"
expect "layer_norm_v2 large" OK "$(verdict "$out.ln" layer_norm_v2_bf16 8192x8192)"
expect "softmax_v1 large" SLOW "$(verdict "$out.sm" softmax_v1_fp16 4096x32768)"
expect "softmax_v2 large" OK "$(verdict "$out.sm" softmax_v2_fp16 4096x32768)"
finish
