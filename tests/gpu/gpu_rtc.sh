#!/bin/sh
# CUDA source candidates on the GPU (the "cuda" provider, NVRTC at run time):
# the relu of tests/rtc/relu.cu is correct in fp16 and fp32 and judged
# against the library like any kernel; a wrong one is INCORRECT; one that
# does not compile is a CRASH whose reason is NVRTC's error.
. "$(dirname "$0")/common.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
t=$build/tests/rtc
mkdir -p "$t"
for f in relu wrong broken; do
    "$kgate" check "$src/tests/rtc/$f.cu" --shape large --json "$t/$f.json" >"$t/$f.txt" 2>&1
done
for k in rtc_relu_fp16 rtc_relu_fp32; do
    v=$(verdict "$t/relu.json" $k "")
    case $v in OK | SLOW) v=judged ;; esac
    expect "$k judged (correct)" judged "$v"
done
expect "rtc_relu_wrong_fp32" INCORRECT "$(verdict "$t/wrong.json" rtc_relu_wrong_fp32 "")"
expect "rtc_broken_fp32" CRASH "$(verdict "$t/broken.json" rtc_broken_fp32 "")"
expect "rtc_broken_fp32 says NVRTC's error" yes \
    "$(grep -q undeclared_name "$t/broken.json" && echo yes || echo no)"
finish
