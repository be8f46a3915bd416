#!/bin/sh
# kgate tune without a GPU: a kernel's space is listed and validated by the
# worker (a broken tunables table is a bad candidate, exit 4, one line), a
# kernel without one and a budget or shape that cannot be used are usage
# errors (3); with a valid space tune gets as far as the GPU (5 here). A
# table of 1024 kernels lists whole.
kgate=$1 plugins=$2
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
run() { out=$("$kgate" "$@" 2>&1); rc=$?; }
run tune "$plugins/libcand_tunable0.so:relu_tuned" --shape small
if "$kgate" devices >/dev/null 2>&1; then
    expect "a valid space: judged on the GPU" yes "$([ $rc -le 2 ] && echo yes || echo "no: $rc $out")"
else
    expect "a valid space: validated, then no GPU" 5 "$rc"
fi
run tune "$plugins/libcand_tunable0.so:relu_plain"
expect "a kernel without a space: exit" 3 "$rc"
expect "a kernel without a space: said" 1 "$(echo "$out" | grep -c "exposes no configuration space")"
run tune "$plugins/libcand_tunable0.so"
expect "two kernels, none named: exit" 3 "$rc"
run tune "$plugins/libcand_tunable0.so:relu_tuned" --sizes small,large
expect "two shapes: exit" 3 "$rc"
for d in 1:"knob 'block' appears twice" 2:"names no kernel of the table ('relu_missing')" 3:"knob 'passes' has 0 values" \
         4:"tunables of version 2"; do
    run tune "$plugins/libcand_tunable${d%%:*}.so:relu_tuned"
    expect "broken tunables ${d%%:*}: exit" 4 "$rc"
    expect "broken tunables ${d%%:*}: one line naming it" 1 "$(echo "$out" | grep -c "${d#*:}")"
done
# --knob: a subspace of the listed space; a knob or value the space lacks is
# a usage error naming it, before any GPU work
run tune "$plugins/libcand_tunable0.so:relu_tuned" --shape small --knob passes=1,2 --knob block=256
if "$kgate" devices >/dev/null 2>&1; then
    expect "--knob: a subspace, judged" 1 "$(echo "$out" | grep -c '2 configuration(s) of 2 (the subspace --knob leaves)')"
else
    expect "--knob: a valid subspace, then no GPU" 5 "$rc"
fi
run tune "$plugins/libcand_tunable0.so:relu_tuned" --knob stages=3
expect "--knob: an unknown knob, exit" 3 "$rc"
expect "--knob: ... named with the space's knobs" 1 "$(echo "$out" | grep -c "no knob 'stages' (its knobs: block, passes)")"
run tune "$plugins/libcand_tunable0.so:relu_tuned" --knob passes=3
expect "--knob: a value the knob lacks, exit" 3 "$rc"
expect "--knob: ... named with its values" 1 "$(echo "$out" | grep -c "does not take 3 (its values: 1,2,4,8)")"
run check "$plugins/libcand_tunable0.so" --knob passes=1
expect "--knob outside tune, exit" 3 "$rc"
run check "$plugins/libcand_tunable1.so"
expect "a broken tunables table is refused by check too" 4 "$rc"
# a table of 1024 kernels, the ABI's most (80-byte names, 255-byte
# summaries of quotes and backslashes): listed whole in one table event, as
# tune's count of the kernels says; 1025 is refused in one line
run tune "$plugins/libcand_bigtable1024.so"
expect "1024 kernels: listed, then tune asks for one, exit" 3 "$rc"
expect "1024 kernels: ... all of them listed" 1 "$(echo "$out" | grep -c "has 1024 matching kernels")"
run tune "$plugins/libcand_bigtable1024.so:big_1023_nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
expect "1024 kernels: the last one found by name" 1 "$(echo "$out" | grep -c "exposes no configuration space")"
run tune "$plugins/libcand_bigtable1025.so"
expect "1025 kernels: refused, exit" 4 "$rc"
expect "1025 kernels: one line saying so" 1 "$(echo "$out" | grep -c "1025 kernels (at most 1024)")"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
