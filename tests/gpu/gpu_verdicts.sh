#!/bin/sh
# The paper's passes-but-slow, reproduced for every operator: at the large
# preset each naive bundled variant (v1) is correct and SLOW, and each
# operator's bundled fast variant (`kgate ops` names it) OK. A version between
# the two (conv2d's v2 where v3 is the fast one) must be correct: OK or SLOW.
# Registry-driven through `kgate run --json` restricted to the bundled
# candidate (the run's own JSON, when given, is reused).
. "$(dirname "$0")/common.sh"
out=${KG_RUN_JSON:-$build/tests/gpu_verdicts.json}
if [ ! -f "$out" ]; then
    "$kgate" check "$build/libkgate_bundled.so" --timeout 300 --json "$out" \
        >"$build/tests/gpu_verdicts.txt" 2>&1
fi
fast=$(fast_variants)
[ -n "$fast" ] || expect "kgate ops names each operator's fast variant" present missing
python3 - "$out" "$fast" <<'PY' >"$out.expect"
import json, sys
r = json.load(open(sys.argv[1]))["results"]
fast = sys.argv[2].split()  # op_vN, one per operator
for x in r:
    if "libkgate_bundled" not in x["source"]:
        continue
    k, got = x["kernel"], x["verdict"]
    if "_v1_" in k:
        want = "SLOW"
    elif any(k.startswith(f + "_") for f in fast):
        want = "OK"
    else:  # an intermediate version: correct, fast or not
        want, got = "correct", "correct" if got in ("OK", "SLOW") else got
    print(k, x["shape"], want, got)
PY
[ -s "$out.expect" ] || expect "bundled results in $out" present missing
while read -r k shape want got; do
    expect "$k $shape" "$want" "$got"
done <"$out.expect"
finish
