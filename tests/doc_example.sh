#!/bin/sh
# The example in docs/abi.md is executed: extracted, compiled with nvcc, and
# checked by kgate (validation only without a GPU: exit 5 after the table
# passed; with one, it must be correct: OK or SLOW).
kgate=$1 doc=$2 out=$3
mkdir -p "$out"
sed -n '/^```cuda$/,/^```$/p' "$doc" | sed '1d;$d' >"$out/my_softmax.cu"
lines=$(wc -l <"$out/my_softmax.cu")
[ "$lines" -ge 10 ] || { echo "FAIL: no cuda example in $doc"; exit 1; }
/usr/local/cuda/bin/nvcc -arch=native -shared -Xcompiler -fPIC -I"$(dirname "$doc")/../include" \
    -I"$(dirname "$kgate")/include" "$out/my_softmax.cu" -o "$out/my_softmax.so" || exit 1
"$kgate" check "$out/my_softmax.so" --shape small --max-time 1 >"$out/my_softmax.txt" 2>&1
rc=$?
cat "$out/my_softmax.txt"
if "$kgate" devices >/dev/null 2>&1; then
    case $rc in 0|1) echo "1 passed, 0 failed"; exit 0 ;; esac
else
    [ $rc = 5 ] && grep -q "no usable CUDA GPU\|no CUDA GPU" "$out/my_softmax.txt" && { echo "1 passed, 0 failed"; exit 0; }
fi
echo "FAIL: exit $rc"
exit 1
