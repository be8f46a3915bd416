#!/bin/sh
# kgate rejudge on a recorded H200 run, no GPU needed: under the thresholds
# it was recorded with (rho_ok 0.50) every verdict comes back as recorded;
# under the near-roof gate (rho_ok 0.80) the three kernels that only the old
# rho arm passed turn SLOW with judgment-band, and nothing else moves;
# --json writes the re-judged file; bad input is a usage error.
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

"$kgate" rejudge "$run" --rho-ok 0.5 >"$out/old.txt" 2>&1
status "rejudge at the recorded gate: exit" 0 $?
check "the recorded gate reproduces every verdict" "$out/old.txt" ": 0 of 57 judged result\(s\) change under e_ok 0.80, rho_ok 0.50"

"$kgate" rejudge "$run" --json "$out/new.json" >"$out/new.txt" 2>&1
status "rejudge at the default gate: exit" 0 $?
check "three change" "$out/new.txt" ": 3 of 57 judged result\(s\) change under e_ok 0.80, rho_ok 0.80 \(recorded with e_ok 0.80, rho_ok 0.50\)"
check "tilelang_softmax: E decides under rho 0.80" "$out/new.txt" \
    "^  tilelang_softmax_fp16 fp16 4096x32768: OK -> SLOW: E_best 0.55 < 0.80, rho 0.51 < 0.80 .*judgment-band"
check "triton_log_softmax" "$out/new.txt" "^  triton_log_softmax_fp16 fp16 4096x32768: OK -> SLOW"
check "triton_argmax_rows" "$out/new.txt" "^  triton_argmax_rows_fp16 fp16 8192x32768: OK -> SLOW"
status "only those" 3 "$(grep -c ' -> ' "$out/new.txt")"
python3 - "$out/new.json" >"$out/json.txt" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = {r["kernel"]: r["verdict"] for r in d["results"]}
print("gate", d["gate"]["rho_ok"], d["gate"]["rho_fair"], "tilelang_softmax_fp16", v["tilelang_softmax_fp16"],
      "layer_norm_v2_bf16", v["layer_norm_v2_bf16"])
PY
check "--json: the re-judged results" "$out/json.txt" "^gate 0.8 0.5 tilelang_softmax_fp16 SLOW layer_norm_v2_bf16 OK$"

"$kgate" rejudge >"$out/none.txt" 2>&1
status "rejudge without results: exit" 3 $?
"$kgate" rejudge "$run" "$run" --json "$out/two.json" >"$out/two.txt" 2>&1
status "rejudge --json with two inputs: exit" 3 $?
"$kgate" rejudge "$out/missing.json" >"$out/missing.txt" 2>&1
status "rejudge of a missing file: exit" 6 $?
cp "$run" "$out/own.json"
"$kgate" rejudge "$out/own.json" --json "$out/own.json" >"$out/own.txt" 2>&1
status "rejudge --json over its input: exit" 6 $?
cmp -s "$run" "$out/own.json"
status "... the input is unchanged" 0 $?

echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
