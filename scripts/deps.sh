#!/bin/sh
# Installs what kgate needs, when missing: `deps.sh run` (make build, make
# run) what the main job needs; `deps.sh test` (make test) also what only the
# tests need. Debian packages are installed as root, else the apt-get line is
# printed and the script exits 1. NVML's header comes from PyPI's
# nvidia-nvml-dev wheel (the CUDA 13.0 toolkit here ships no nvml.h) into
# .deps/include; the headers the TileLang candidate's generated kernels
# include (tilelang/gen/headers.txt) from the tilelang wheel into
# .deps/tilelang, optional: offline, the TileLang candidate is skipped with
# one line; cuobjdump from its wheel into .deps/bin where the toolkit has
# none, optional too. KG_DEPS_DRY=1: print what would be installed, install
# nothing.
#   scripts/deps.sh [run|test]
set -e
cd "$(dirname "$0")/.."
mode=${1:-run}
# the main job: the build and libkgate's libraries, and the tools that fetch NVML's header
need="cmake libcjson-dev libdlpack-dev libseccomp-dev python3-pip unzip"
case $mode in
run) ;;
# the tests: cmocka (unit tests), clang and its runtime (ASan/UBSan, the fuzzers), the
# results schema's validator, chromium (the HTML report's render test), openmpi-bin
# (tests/batch.sh's 64-rank mpirun case; kgate links no MPI)
test) need="$need clang libclang-rt-14-dev libcmocka-dev python3-jsonschema chromium openmpi-bin" ;;
*)
    echo "usage: scripts/deps.sh [run|test]" >&2
    exit 3
    ;;
esac
pkgs=""
for p in $need; do
    dpkg -s "$p" >/dev/null 2>&1 || pkgs="$pkgs $p"
done
if [ -n "${KG_DEPS_DRY:-}" ]; then
    echo "kgate ($mode) would install:${pkgs:- nothing}"
    exit 0
fi
if [ -n "$pkgs" ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null
    else
        echo "kgate needs: sudo apt-get install -y$pkgs" >&2
        exit 1
    fi
fi
if [ ! -f .deps/include/nvml.h ]; then
    mkdir -p .deps/include .deps/wheel
    if ! python3 -m pip download -q --no-deps "nvidia-nvml-dev==13.0.87" -d .deps/wheel ||
        ! unzip -o -q -j .deps/wheel/nvidia_nvml_dev-*.whl nvidia/cu13/include/nvml.h -d .deps/include; then
        echo "kgate needs nvml.h: could not fetch PyPI's nvidia-nvml-dev 13.0.87 (offline?); put its" \
            "nvidia/cu13/include/nvml.h in .deps/include" >&2
        exit 1
    fi
fi
# Optional: without these headers CMake skips the TileLang candidate.
tl=$(grep -v '^#' tilelang/gen/headers.txt 2>/dev/null || true)
for h in $tl; do
    if [ ! -f ".deps/$h" ]; then
        mkdir -p .deps/wheel
        if python3 -m pip download -q --no-deps --only-binary=:all: "tilelang==0.1.15" -d .deps/wheel &&
            unzip -o -q .deps/wheel/tilelang-0.1.15-*.whl $tl -d .deps; then
            rm -f .deps/wheel/tilelang-0.1.15-*.whl
        else
            echo "kgate: could not fetch TileLang 0.1.15's headers; the TileLang candidate is skipped" >&2
        fi
        break
    fi
done
# Optional: cuobjdump (the CUDA 13.0 toolkit here ships none) from PyPI's
# nvidia-cuda-cuobjdump wheel into .deps/bin, for make sass and the test that
# the fat binaries hold every arch (tests/fatbin_archs.sh skips without it).
if [ ! -x /usr/local/cuda/bin/cuobjdump ] && [ ! -x .deps/bin/cuobjdump ]; then
    mkdir -p .deps/bin .deps/wheel
    if python3 -m pip download -q --no-deps --only-binary=:all: "nvidia-cuda-cuobjdump==13.2.51" -d .deps/wheel &&
        unzip -o -q -j .deps/wheel/nvidia_cuda_cuobjdump-13.2.51-*.whl nvidia/cu13/bin/cuobjdump -d .deps/bin; then
        chmod +x .deps/bin/cuobjdump
        rm -f .deps/wheel/nvidia_cuda_cuobjdump-13.2.51-*.whl
    else
        echo "kgate: could not fetch cuobjdump; the test of the fat binaries' archs is skipped" >&2
    fi
fi
if [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "kgate needs the CUDA 13 toolkit in /usr/local/cuda (nvcc, cuBLASLt, cuDNN 9)" >&2
    exit 1
fi
