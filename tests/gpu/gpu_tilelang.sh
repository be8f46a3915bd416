#!/bin/sh
# The TileLang candidate at the large shapes (issue 33's target): every naive
# kernel of build/tilelang/libkgate_tilelang.so is SLOW and every fixed one
# OK, operator by operator (each kgate check call is one operator, so a
# batch's results survive a later timeout). Registry-driven: the operators
# come from the candidate's own table, read with ctypes; KG_TL_OPS="op op ..."
# checks only those (a whole run takes some 10 minutes: run it in parts where
# a call is capped).
# Writes $build/tests/gpu_tilelang-<op>.json and a line per kernel.
. "$(dirname "$0")/common.sh"
so=$build/tilelang/libkgate_tilelang.so
[ -f "$so" ] || { echo "SKIP: $so not built"; exit 77; }
t=$build/tests
mkdir -p "$t"
table_ops() { # the table's operators, in table order (kgate_plugin_v2: include/kgate/plugin.h)
    python3 - "$so" <<'PY'
import ctypes, sys
class K(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("op", ctypes.c_char_p)]
class P(ctypes.Structure):
    _fields_ = [("abi", ctypes.c_uint32), ("size", ctypes.c_uint32), ("n", ctypes.c_uint32),
                ("kernels", ctypes.c_void_p)]
lib = ctypes.CDLL(sys.argv[1])
lib.kgate_plugin_v2.restype = ctypes.POINTER(P)
p = lib.kgate_plugin_v2().contents
seen = []
for i in range(p.n):
    op = K.from_address(p.kernels + i * p.size).op.decode()
    if op not in seen:
        seen.append(op)
print(" ".join(seen))
PY
}
ops=${KG_TL_OPS:-$(table_ops)}
for op in $ops; do
    out=$t/gpu_tilelang-$op.json
    "$kgate" check "$so" --op "$op" --sizes large --json "$out" >"$t/gpu_tilelang-$op.txt" 2>&1
    echo "$op: exit $?"
    python3 - "$out" <<'PY' >"$out.verdicts"
import json, sys
try:
    r = json.load(open(sys.argv[1]))["results"]
except (OSError, ValueError, KeyError):
    r = []
for x in r:
    want = "SLOW" if "_naive_" in x["kernel"] else "OK"
    print(x["kernel"], x["shape"], want, x["verdict"], (x.get("reason") or "").replace(" ", "_")[:160])
PY
    [ -s "$out.verdicts" ] || expect "$op: results in $out" yes no
    while read -r k shape want got why; do
        expect "$k at $shape ($why)" "$want" "$got"
    done <"$out.verdicts"
done
finish
