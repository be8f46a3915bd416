#!/bin/sh
# Every bundled variant (and the Triton and TileLang candidates when built)
# is correct at every preset of its operator: --verify-only checks the random
# trials (one with the required scalars at their second value), the edge
# rows and the index edges, without timing. Registry-driven: the kernels come
# from the candidates' own tables.
. "$(dirname "$0")/common.sh"
for cand in "$build/libkgate_bundled.so" "$build/triton/libkgate_triton.so" "$build/tilelang/libkgate_tilelang.so"; do
    [ -f "$cand" ] || { echo "note: $cand not built"; continue; }
    name=$(basename "$cand" .so)
    out=$build/tests/gpu_variants-$name.json
    "$kgate" check "$cand" --sizes "${KG_VARIANT_SIZES:-all}" --verify-only --timeout 300 \
        --json "$out" >"$build/tests/gpu_variants-$name.txt" 2>&1
    rc=$?
    tail -5 "$build/tests/gpu_variants-$name.txt"
    [ -f "$out" ] || { expect "$name: a result file (exit $rc)" yes no; continue; }
    # one line per kernel: correct at every preset it ran at
    python3 - "$out" <<'PY' >"$out.verdicts"
import json, sys
r = json.load(open(sys.argv[1]))["results"]
by = {}
for x in r:
    by.setdefault(x["kernel"], []).append(x)
for k, xs in by.items():
    bad = [f'{x["shape"]}: {x["verdict"]} ({x["reason"]} {x["detail"]})' for x in xs if x["verdict"] != "SKIPPED"]
    print(k, len(xs), "correct" if not bad else "bad", "; ".join(bad)[:600])
PY
    while read -r k nshapes got why; do
        [ "$got" = correct ] || echo "  $k: $why"
        expect "$k at $nshapes presets" correct "$got"
    done <"$out.verdicts"
done
finish
