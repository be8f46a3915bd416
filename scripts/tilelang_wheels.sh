#!/bin/sh
# TileLang for the GPU machine's Python (3.12), which has torch and Triton but
# not TileLang: its three wheels (tilelang 0.1.15, apache-tvm-ffi, z3-solver;
# 82 MB) are more than one device call carries (64 MiB), so they travel in
# two folders, one per call, while the machine stays warm:
#   .cache/tl-wheels/a   z3-solver and apache-tvm-ffi (32 MB)
#   .cache/tl-wheels/b   tilelang (50 MB)
#
#   scripts/tilelang_wheels.sh fetch            (here: downloads into .cache/tl-wheels)
#   scripts/tilelang_wheels.sh install DEST     (there: unpacks every wheel found into DEST,
#                                                a folder for PYTHONPATH)
set -eu
W=.cache/tl-wheels
case ${1:-} in
fetch)
    py=${PYTHON:-python3}
    mkdir -p "$W/a" "$W/b"
    get() { # get DIR SPEC...
        d=$1
        shift
        "$py" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
            --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
            -d "$d" "$@"
    }
    get "$W/a" z3-solver==4.15.4.0 apache-tvm-ffi==0.1.12
    get "$W/b" tilelang==0.1.15
    du -sh "$W/a" "$W/b"
    ;;
install)
    dest=${2:?install DEST}
    mkdir -p "$dest"
    n=0
    for w in "$W"/*/*.whl; do
        [ -f "$w" ] || continue
        # a wheel is a zip; its .data folder (z3's headers and tools) is not needed
        python3 -c 'import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for m in z.infolist():
    if m.filename.split("/")[0].endswith(".data"):
        continue
    path = z.extract(m, sys.argv[2])
    mode = m.external_attr >> 16
    if mode & 0o111:
        os.chmod(path, mode & 0o777)' "$w" "$dest"
        n=$((n + 1))
    done
    echo "unpacked $n wheel(s) into $dest"
    [ "$n" -ge 3 ]
    ;;
*)
    echo "usage: scripts/tilelang_wheels.sh fetch | install DEST" >&2
    exit 3
    ;;
esac
