#!/bin/sh
# KernelBench's problems (and its evaluator, for the comparison) for kgate's
# tests and measurements, fetched, not copied into this repository:
#   scripts/kernelbench.sh fetch [CHECKOUT]
# copies KernelBench/level1..3 and src/kernelbench at the pinned commit from a
# local checkout (CHECKOUT), or clones ScalingIntelligence/KernelBench, into
# .cache/kernelbench (ignored by git; scripts/gpu.sh carries it).
set -e
COMMIT=423217d  # the commit kgate's recorded KernelBench runs used
URL=https://github.com/ScalingIntelligence/KernelBench
dest=$(cd "$(dirname "$0")/.." && pwd)/.cache/kernelbench
case ${1:-} in
fetch)
    src=${2:-}
    tmp=$(mktemp -d)
    if [ -z "$src" ]; then
        git clone --quiet "$URL" "$tmp/kb"
        src=$tmp/kb
    fi
    rm -rf "$dest"
    mkdir -p "$dest"
    git -C "$src" archive "$COMMIT" KernelBench/level1 KernelBench/level2 KernelBench/level3 src/kernelbench LICENSE |
        tar -x -C "$dest"
    git -C "$src" rev-parse "$COMMIT" >"$dest/COMMIT"
    rm -rf "$tmp"
    echo "KernelBench $(cat "$dest/COMMIT") in $dest ($(ls "$dest/KernelBench/level1" | wc -l) level-1 problems)"
    ;;
*)
    echo "usage: scripts/kernelbench.sh fetch [CHECKOUT]" >&2
    exit 3
    ;;
esac
