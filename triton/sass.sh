#!/bin/sh
# Summarizes the SASS of the cubins triton/build.sh embedded in the Triton
# candidate (BUILD/triton/gen/*.cubin): one line per specialization with the
# target, registers, local memory (spills), dynamic shared memory, and how
# many of the instructions that matter it holds (HGMMA: wgmma tensor cores;
# LDGSTS: cp.async; LDG/STG.E.128: 16-byte loads/stores; SHFL: warp
# reductions; MUFU: exp/rsqrt). With -v NAME it prints that kernel's SASS.
#
#   triton/sass.sh [BUILD] [-v NAME]
#
# cuobjdump: $CUOBJDUMP, else the one in Triton's wheel (TRITON_PY as in
# build.sh), else $CUDA_HOME/bin/cuobjdump.
set -e
build=${1:-build}
gen=$build/triton/gen
[ -d "$gen" ] || { echo "triton/sass.sh: no $gen (run triton/build.sh $build first)" >&2; exit 1; }
cuo=${CUOBJDUMP:-}
if [ -z "$cuo" ]; then
    for py in ${TRITON_PY:-} python3 python; do
        d=$(cd / && "$py" -c "import os, triton; print(os.path.dirname(triton.__file__))" 2>/dev/null) || continue
        [ -x "$d/backends/nvidia/bin/cuobjdump" ] && cuo=$d/backends/nvidia/bin/cuobjdump && break
    done
fi
[ -n "$cuo" ] || cuo=${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump
if [ "$2" = "-v" ]; then
    exec "$cuo" -sass "$gen/$3.cubin"
fi
printf '%-22s %-7s %4s %5s %7s  %s\n' kernel target regs local dynsmem "instructions"
for f in "$gen"/*.cubin; do
    name=$(basename "$f" .cubin)
    sass=$("$cuo" -sass "$f")
    target=$(printf '%s\n' "$sass" | sed -n 's/.*code for \(sm_[0-9a-z]*\).*/\1/p' | head -1)
    res=$("$cuo" -res-usage "$f" | grep 'REG:')
    regs=$(printf '%s' "$res" | sed -n 's/.*REG:\([0-9]*\).*/\1/p')
    local=$(printf '%s' "$res" | sed -n 's/.*LOCAL:\([0-9]*\).*/\1/p')
    smem=$(sed -n 's/^ *int shared = \([0-9]*\);/\1/p' "$gen/$name".*.c)
    ops=$(printf '%s\n' "$sass" | sed -n 's#^ */\*[0-9a-f]*\*/ *\(@!*U*P[0-9T]* \)*\([A-Z][A-Za-z0-9._]*\).*#\2#p' |
        awk '/^HGMMA/ {n["HGMMA"]++} /^LDGSTS/ {n["LDGSTS"]++} /^LDG/ && !/^LDGSTS|^LDGDEPBAR/ {n[$0]++}
             /^STG/ {n[$0]++} /^SHFL/ {n["SHFL"]++} /^MUFU/ {n[$0]++}
             END {for (k in n) printf "%s:%d ", k, n[k]}' | tr ' ' '\n' | sort | tr '\n' ' ')
    printf '%-22s %-7s %4s %5s %7s  %s\n' "$name" "$target" "$regs" "$local" "$smem" "$ops"
done
