#!/bin/sh
# kgate explain on recorded H200 data, no GPU needed: Nsight Compute's CSV of
# layer_norm v1 (the serial reduction, RC0a), the saved suite run with
# --diagnose (its causes re-ranked), a threshold that silences a rule, and
# the rules' listing.
kgate=$1 src=$2
fails=0 n=0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
check() { # check NAME FILE PATTERN: the output holds a line matching PATTERN
    n=$((n + 1))
    if grep -qE "$3" "$2"; then echo "ok: $1"; else echo "FAIL: $1: no line matching '$3' in:"; head -20 "$2"; fails=$((fails + 1)); fi
}
status() { # status NAME WANT GOT
    n=$((n + 1))
    if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi
}
run=$src/tests/data/recorded/run-h200-diagnose.json

"$kgate" explain --from-ncu "$src/tests/data/ncu/h200_layer_norm_v1.csv" --op layer_norm --shape medium >"$out/ncu.txt" 2>&1
status "explain --from-ncu: exit" 0 $?
check "ncu CSV: 15 rows, 3 kernels" "$out/ncu.txt" "3 kernel\(s\), as layer_norm"
check "ncu CSV: top cause RC0a in ln_v1_row" "$out/ncu.txt" "^  why: RC0a .* in ln_v1_row: serial reduction"
check "ncu CSV: repeated calls said" "$out/ncu.txt" "12 row\(s\) of kernels already seen"

"$kgate" explain "$run" --json "$out/rerank.json" >"$out/run.txt" 2>&1
status "explain RESULT.json: exit" 0 $?
check "saved run: layer_norm v1 is RC0a" "$out/run.txt" "^layer_norm_v1_bf16 bf16 8192x8192: SLOW"
check "saved run: logsumexp v1 is RC3" "$out/run.txt" "^  why: RC3 .* in ls_v1_kernel"
check "saved run: matmul v1 has no tensor cores" "$out/run.txt" "^  why: NOTC .* in mm_v1_kernel"
status "explain --json: written" yes "$([ -s "$out/rerank.json" ] && echo yes)"

# busy_max=0: memory counts as busy, so no latency-bound serial reduction is
# called; TileLang's naive norms still are, on their own evidence (a local
# array of a whole row per thread), which does not read busy_max
"$kgate" explain "$run" --diag-set busy_max=0 >"$out/busy.txt" 2>&1
status "explain --diag-set: exit" 0 $?
n=$((n + 1))
if grep "^  why: RC0a" "$out/busy.txt" | grep -qv " in tl_"; then
    echo "FAIL: busy_max=0 still names RC0a beyond the whole-row kernels"; fails=$((fails + 1))
else
    echo "ok: busy_max=0 silences the latency-bound RC0a"
fi
status "busy_max=0: the whole-row RC0a stays" 2 "$(grep -c "^  why: RC0a .* in tl_" "$out/busy.txt")"

"$kgate" explain --rules >"$out/rules.txt" 2>&1
status "explain --rules: exit" 0 $?
check "rules: every cause listed" "$out/rules.txt" "^  NOTC "
check "rules: thresholds listed" "$out/rules.txt" "^  stall_min "
check "rules: the counter set, comma-separated" "$out/rules.txt" "^counters \(default\): gpu__time_duration.sum,"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
