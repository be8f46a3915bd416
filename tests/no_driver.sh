#!/bin/sh
# On a machine without the NVIDIA driver (libcuda.so.1 does not load, as on
# CI), every command that needs a GPU says so in one line, exit 5: not the
# CUDA runtime's "driver version is insufficient". Skips (77) where the
# driver is there.
#   tests/no_driver.sh KGATE CANDIDATE.so (a C candidate: the sanitizer build cannot load nvcc's)
kgate=$1 cand=$2
if python3 -c 'import ctypes, sys; ctypes.CDLL("libcuda.so.1"); sys.exit(0)' 2>/dev/null; then
    echo "skip: libcuda.so.1 loads here"
    exit 77
fi
fails=0 n=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
for args in "devices" "peaks" "check $cand --shape small" "run --live"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    "$kgate" $args >"$t/out" 2>"$t/err"
    rc=$?
    if [ $rc = 5 ] && [ "$(wc -l <"$t/err")" = 1 ] &&
        grep -q '^kgate: no usable CUDA GPU: no NVIDIA driver on this machine (libcuda.so.1 does not load)' "$t/err"; then
        echo "ok: kgate $args: exit 5, $(cat "$t/err")"
    else
        echo "FAIL: kgate $args: exit $rc"
        cat "$t/err"
        fails=$((fails + 1))
    fi
done
# kgate run shows the recorded run shipped with it instead (sample-run.json,
# beside it in the build tree), says so at its end, and still writes the
# --json asked for, marked recorded
"$kgate" run --json "$t/run.json" >"$t/out" 2>"$t/err"
rc=$?
n=$((n + 1))
if [ $rc = 0 ] && tail -1 "$t/out" | grep -q '^That was the RECORDED run of ' &&
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not (d["recorded"].endswith("/sample-run.json") and d["results"]))' "$t/run.json"; then
    echo "ok: kgate run --json: the recorded run, said at the end, written marked recorded"
else
    echo "FAIL: kgate run --json: exit $rc"
    tail -2 "$t/out"
    fails=$((fails + 1))
fi
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
