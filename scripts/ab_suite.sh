#!/bin/sh
# The bundled optimized kernels under two packed builds (scripts/pack.sh) on
# one GPU: every kernel of each build's bundled candidates whose name marks
# it optimized (CUDA C v2 and later; TileLang's fixed ones), at SIZES
# (default large), A then B then A again (AB_ORDER, default "a1 b a2"), each
# `kgate check` timed from process start to exit; then `kgate compare` of B
# against each A run (the second A run says how far the same build moves
# between runs).
# Writes OUT/{a1,b,a2}.json, their tables and wall times (wall.txt), and the
# comparisons (compare-*.txt, compare-*.json). Both builds must take a list
# of kernels after the candidate (CAND.so:A,B: 9f2d08e and later).
#   scripts/ab_suite.sh OUT BUILD_A BUILD_B [SIZES]
set -u
out=${1:?usage: scripts/ab_suite.sh OUT BUILD_A BUILD_B [SIZES]}
a=${2:?build A}
b=${3:?build B}
sizes=${4:-large}
mkdir -p "$out"
# the optimized kernels of a candidate, comma-separated: each operator's
# bundled fast variant at the dtypes kgate run measures (`kgate ops`), and
# TileLang's fixed kernels (its table, read with ctypes)
names() {
    "$2/kgate" ops >"$out/ops.txt" 2>&1 || return 5
    python3 - "$1" "$out/ops.txt" <<'PY'
import ctypes, re, sys
want, op = set(), None
for line in open(sys.argv[2]):
    m = re.match(r"^(\w+): ", line)
    if m:
        op, dts = m.group(1), []
    elif line.strip().startswith("dtypes:"):
        dts = [d[:-1] for d in line.split(":", 1)[1].split() if d.endswith("*")]
    elif "bundled fast variant" in line:
        fast = line.rsplit("bundled fast variant", 1)[1].split()[0].rstrip(";")
        for d in dts:
            want |= {f"{fast}_{d}", f"{fast}_{d}_i32"}
lib = ctypes.CDLL(sys.argv[1])
lib.kgate_plugin_v2.restype = ctypes.c_void_p
p = lib.kgate_plugin_v2()
abi, size, n = (ctypes.c_uint32 * 3).from_address(p)
kernels = ctypes.c_void_p.from_address(p + 16).value
out = []
for i in range(n):
    name = ctypes.c_char_p.from_address(kernels + i * size).value.decode()
    if name in want or (name.startswith("tilelang_") and "naive" not in name):
        out.append(name)
print(",".join(out))
PY
}
: >"$out/wall.txt"
for side in ${AB_ORDER:-a1 b a2}; do
    case $side in b) build=$b ;; *) build=$a ;; esac
    set --
    for c in libkgate_bundled.so tilelang/libkgate_tilelang.so; do
        [ -f "$build/$c" ] || continue
        list=$(names "$build/$c" "$build") || exit 5
        [ -n "$list" ] && set -- "$@" "$build/$c:$list"
    done
    for spec in "$@"; do
        tag=$side-$(basename "${spec%%:*}" .so)
        t0=$(date +%s%N)
        "$build/kgate" check "$spec" --sizes "$sizes" --json "$out/$tag.json" >"$out/$tag.txt" 2>&1
        rc=$?
        t1=$(date +%s%N)
        echo "$tag $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s exit $rc" | tee -a "$out/wall.txt"
        [ $rc = 3 ] && echo "$tag: usage error: a build before 9f2d08e takes one kernel after ':', not a list" \
            "(kgate check --op OP for such a build)" | tee -a "$out/wall.txt"
    done
done
for c in libkgate_bundled tilelang/libkgate_tilelang; do
    c=$(basename "$c")
    [ -f "$out/b-$c.json" ] || continue
    for base in a1 a2; do
        [ -f "$out/$base-$c.json" ] || continue
        "$b/kgate" compare "$out/$base-$c.json" "$out/b-$c.json" --json "$out/compare-$base-$c.json" \
            >"$out/compare-$base-$c.txt" 2>&1
        echo "compare $base vs b ($c): exit $?"
    done
    if [ -f "$out/a2-$c.json" ]; then
        "$b/kgate" compare "$out/a1-$c.json" "$out/a2-$c.json" >"$out/compare-a1-a2-$c.txt" 2>&1
        echo "compare a1 vs a2 ($c): exit $?"
    fi
done
