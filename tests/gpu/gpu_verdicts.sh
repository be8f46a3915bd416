#!/bin/sh
# The paper's passes-but-slow, reproduced for every operator: at the large
# preset each naive bundled variant (v1) is correct and SLOW, each optimized
# one (v2) OK. Registry-driven through `kgate run --json` restricted to the
# bundled candidate (the run's own JSON, when given, is reused).
. "$(dirname "$0")/common.sh"
out=${KG_RUN_JSON:-$build/tests/gpu_verdicts.json}
if [ ! -f "$out" ]; then
    "$kgate" check "$build/libkgate_bundled.so" --timeout 300 --json "$out" \
        >"$build/tests/gpu_verdicts.txt" 2>&1
fi
python3 - "$out" <<'PY' >"$out.expect"
import json, sys
r = json.load(open(sys.argv[1]))["results"]
for x in r:
    if "libkgate_bundled" not in x["source"]:
        continue
    want = "SLOW" if "_v1_" in x["kernel"] else "OK"
    print(x["kernel"], x["shape"], want, x["verdict"])
PY
[ -s "$out.expect" ] || expect "bundled results in $out" present missing
while read -r k shape want got; do
    expect "$k $shape" "$want" "$got"
done <"$out.expect"
finish
