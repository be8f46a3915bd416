#!/bin/sh
# A short GPU verification of the hardening fixes (run after scripts/pack.sh):
# three adversarial kernels, the sandbox, and small and short kernels that a
# false timer-mismatch would hit. Logs under $OUT.
B=${BUILD:-.devbuild}
O=${OUT:-/tmp}
A=$B/tests/adversarial/libkgate_adversarial.so
export XDG_CACHE_HOME=$O/cache
for k in ref_tamper host_compute timer_hook; do
    timeout 60 "$B/kgate" check "$A:$k" --shape small --timeout 30 --max-time 1 --no-extra-shapes \
        --json "$O/adv-$k.json" >"$O/adv-$k.txt" 2>&1
    echo "$k: exit $? $(grep -E "^$k " "$O/adv-$k.txt" | tail -1 | cut -c1-160)"
done
timeout 60 tests/sandbox.sh "$B/kgate" "$B/tests/plugins" >"$O/sandbox.log" 2>&1
echo "sandbox.sh: exit $? $(tail -1 "$O/sandbox.log")"
timeout 90 "$B/kgate" check "$B/libkgate_bundled.so" --op layer_norm --shape small --sandbox --max-time 1 \
    --json "$O/sandbox-ln.json" >"$O/sandbox-ln.txt" 2>&1
echo "layer_norm small --sandbox: exit $?"; grep -E "^layer_norm" "$O/sandbox-ln.txt" | head -4
for a in "softmax small" "index_select large"; do
    set -- $a
    timeout 120 "$B/kgate" check "$B/libkgate_bundled.so" --op $1 --shape $2 --max-time 1 \
        --json "$O/short-$1.json" >"$O/short-$1.txt" 2>&1
    echo "$1 $2: exit $?"; grep -E "^$1_v" "$O/short-$1.txt" | head -8
done
