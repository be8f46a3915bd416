#!/bin/sh
# Packs what the GPU machine needs from a build into a small folder that
# travels with a device call (the whole build is too large to carry): the
# CLI, the candidates (bundled, Triton, TileLang, test and adversarial ones),
# the GPU test program, and the non-CUDA libraries beside them.
#   scripts/pack.sh [BUILD] [DEST]     (default: build .devbuild)
set -e
B=${1:-build}
D=${2:-.devbuild}
rm -rf "$D"
mkdir -p "$D/tests/plugins" "$D/tests/adversarial" "$D/triton" "$D/tilelang" "$D/include"
cp "$B/kgate" "$B"/lib*.so* "$D/" 2>/dev/null || true
rm -f "$D/libkgate.a"
cp "$B/tests/gpu_references" "$D/tests/"
cp "$B"/tests/plugins/*.so "$D/tests/plugins/"
[ -d "$B/tests/adversarial" ] && cp "$B"/tests/adversarial/*.so "$D/tests/adversarial/" 2>/dev/null || true
[ -f "$B/triton/libkgate_triton.so" ] && cp "$B/triton/libkgate_triton.so" "$D/triton/"
[ -f "$B/tilelang/libkgate_tilelang.so" ] && cp "$B/tilelang/libkgate_tilelang.so" "$D/tilelang/"
cp -r "$B/include/." "$D/include/"
# host debug info is most of the size and is not needed there (device code is
# in .nv_fatbin, which --strip-debug keeps)
find "$D" -type f \( -name kgate -o -name '*.so' \) -exec strip --strip-debug {} + 2>/dev/null || true
du -sh "$D"
