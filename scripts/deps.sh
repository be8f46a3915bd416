#!/bin/sh
# Installs what kgate builds with, when missing: Debian packages (as root, or
# prints the apt-get line; chromium renders kgate report's HTML in a test;
# openmpi-bin runs tests/batch.sh's 64-rank mpirun case, kgate links no MPI), NVML's header from PyPI's nvidia-nvml-dev wheel
# (the CUDA 13.0 toolkit here ships no nvml.h) into .deps/include, and the
# headers the TileLang candidate's generated kernels include (the list is
# tilelang/gen/headers.txt) from the tilelang wheel into .deps/tilelang.
set -e
cd "$(dirname "$0")/.."
pkgs=""
for p in cmake clang libclang-rt-14-dev libcjson-dev libcmocka-dev libdlpack-dev libseccomp-dev \
         python3-jsonschema chromium openmpi-bin \
         python3-pip unzip; do
    dpkg -s "$p" >/dev/null 2>&1 || pkgs="$pkgs $p"
done
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
    python3 -m pip download -q --no-deps "nvidia-nvml-dev==13.0.87" -d .deps/wheel
    unzip -o -q -j .deps/wheel/nvidia_nvml_dev-*.whl nvidia/cu13/include/nvml.h -d .deps/include
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
if [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "kgate needs the CUDA 13 toolkit in /usr/local/cuda (nvcc, cuBLASLt, cuDNN 9)" >&2
    exit 1
fi
