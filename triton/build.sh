#!/bin/sh
# Builds the Triton candidate BUILD/triton/libkgate_triton.so (docs/triton.md).
#
#   triton/build.sh [BUILD]          (default BUILD: build)
#
# Compiles triton/kernels.py ahead of time for sm_90a with Triton's AOT
# compiler (python -m triton.tools.compile, run through triton/aot.py so that
# no GPU, driver or PyTorch is needed), which emits one C file per kernel
# specialization with the cubin embedded and a cuLaunchKernel launcher; then
# links those files with triton/kgate_triton.c (the ABI v2 table) against
# libcuda (the toolkit's stub at link time, the driver's at run time).
#
# Environment: TRITON_PY, a Python with Triton 3.6 (default: the first of
# python3 and python that imports triton); CUDA_HOME (default /usr/local/cuda)
# for cuda.h and the libcuda stub; CC (default cc); TRITON_AOT_ARCH (default
# 90). Also writes BUILD/triton/gen/*.cubin, the embedded cubins, for
# triton/sass.sh.
set -e
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "${1:-build}"
build=$(cd "${1:-build}" && pwd)
gen=$build/triton/gen
cuda=${CUDA_HOME:-/usr/local/cuda}
cc=${CC:-cc}

# (probed from /: in the repository root, `import triton` finds this folder)
has_triton() { (cd / && "$1" -c "import triton.tools.compile" >/dev/null 2>&1); }
py=${TRITON_PY:-}
case $py in */*) py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py") ;; esac
if [ -z "$py" ]; then
    for c in python3 python; do
        if command -v "$c" >/dev/null 2>&1 && has_triton "$c"; then
            py=$(command -v "$c")
            break
        fi
    done
fi
if [ -z "$py" ] || ! has_triton "$py"; then
    echo "triton/build.sh: no Python with Triton found; set TRITON_PY (e.g. TRITON_PY=/path/venv/bin/python)" >&2
    exit 1
fi
ver=$(cd / && "$py" -c "import triton; print(triton.__version__)")
case $ver in
3.6.*) ;;
*) echo "triton/build.sh: warning: written for Triton 3.6, found $ver (the AOT launcher may differ)" >&2 ;;
esac
[ -f "$cuda/include/cuda.h" ] || { echo "triton/build.sh: no $cuda/include/cuda.h (set CUDA_HOME)" >&2; exit 1; }

rm -rf "$gen" && mkdir -p "$gen"
# Triton's compile cache lives beside the build, not in $HOME.
export TRITON_CACHE_DIR="$build/triton/cache"
n=0
aot() { # aot OUT_NAME KERNEL SIGNATURE GRID WARPS STAGES
    "$py" "$here/aot.py" "$here/kernels.py" -n "$2" -s "$3" -g "$4" -w "$5" -ns "$6" \
        -on "$1" -o "$gen/$1"
    n=$((n + 1))
}
warps_for() { # the warps of a one-row-in-one-block kernel of BLOCK_N $1
    if [ "$1" -le 1024 ]; then echo 4; elif [ "$1" -ge 16384 ]; then echo 16; else echo 8; fi
}

# Row-in-one-block kernels: one specialization per BLOCK_N (rows of at most
# BLOCK_N columns), pointers 16-byte aligned and COLS a multiple of 16.
for bn in 1024 4096 8192 16384; do
    w=$(warps_for $bn)
    aot "ln_bf16_$bn" layer_norm_fwd "*bf16:16, *bf16:16, *bf16:16, *bf16:16, i32, i32:16, i32, $bn" "M,1,1" $w 1
    for t in fp16 bf16; do
        aot "rms_${t}_$bn" rms_norm_fwd "*$t:16, *$t:16, *$t:16, i32, i32:16, i32, $bn" "M,1,1" $w 1
    done
done
for bn in 1024 2048 4096 8192; do
    aot "lsm_fp16_$bn" log_softmax_row "*fp16:16, *fp16:16, i32, i32:16, $bn" "M,1,1" "$(warps_for $bn)" 1
done
# Chunked kernels (any COLS): a fast specialization (aligned, COLS % 16 == 0)
# and a generic one without the hints.
aot lsm_fp16_online log_softmax_online "*fp16:16, *fp16:16, i32, i32:16, 4096" "M,1,1" 8 1
aot lsm_fp16_online_any log_softmax_online "*fp16, *fp16, i32, i32, 4096" "M,1,1" 8 1
aot mean_fp32 mean_rows "*fp32:16, *fp32:16, i32, i32:16, 4096" "M,1,1" 8 1
aot mean_fp32_any mean_rows "*fp32, *fp32, i32, i32, 4096" "M,1,1" 8 1
aot argmax_tiles_fp16 argmax_tiles "*fp16, *i64, i32, i32, i32, 128, 128" "(M+127)/128,1,1" 4 1
aot argmax_fp16 argmax_rows "*fp16:16, *i64:16, i32, i32:16, 4096" "M,1,1" 8 1
aot argmax_fp16_any argmax_rows "*fp16, *i64, i32, i32, 4096" "M,1,1" 8 1
for t in fp16 bf16; do
    # linear_activation: two 128x128 fp32 accumulators (8 warps), 3 stages of x, W1 and W3 tiles
    aot "linact_$t" linact_kernel "*$t:16, *$t:16, *$t:16, *$t:16, i32:16, i32:16, i32:16, 128, 128, 64, 8" \
        "((M+127)/128)*((N+127)/128),1,1" 8 3
    # conv2d NCHW, groups 1: 64 pixels x 64 channels a program, 32-channel slices
    aot "conv_$t" conv2d_nchw "*$t:16, *$t:16, *$t:16, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, 64, 64, 32" \
        "(N*P*Q+63)/64,(K+63)/64,1" 4 2
done
for t in fp16 bf16; do
    aot "mm_$t" matmul_kernel "*$t:16, *$t:16, *$t:16, i32:16, i32:16, i32:16, 128, 256, 64, 8" \
        "((M+127)/128)*((N+255)/256),1,1" 8 3
done

# The tuned GEMM's configuration space (kgate tune, docs/tune.md), fp16: every
# BLOCK_M x BLOCK_N x BLOCK_K x GROUP_M x num_stages x num_warps of the grid
# below whose operand tiles fit the 227 KiB of shared memory, and the eight
# configurations of the Triton tutorial's autotune list (the paper's narrow
# space). Compiled two at a time; BUILD/triton/gen/tune_mm.inc lists them for kgate_triton.c.
tune=$gen/tune_mm.txt
: >"$tune"
for bm in 64 128 256; do for bn in 64 128 256; do for bk in 32 64; do
    for gm in 1 8; do for st in 3 4; do for w in 4 8; do
        [ $(((bm * bk + bk * bn) * 2 * st)) -le 232448 ] && echo "wide $bm $bn $bk $gm $st $w" >>"$tune"
    done; done; done
done; done; done
i=0
for c in "128 256 64 8 3 8" "64 256 32 8 4 4" "128 128 32 8 4 4" "128 64 32 8 4 4" "64 128 32 8 4 4" \
         "128 32 32 8 4 4" "64 32 32 8 5 2" "32 64 32 8 5 2"; do
    echo "tutorial$i $c" >>"$tune"
    i=$((i + 1))
done
awk '{print $2, $3, $4, $5, $6, $7}' "$tune" | sort -u | while read -r bm bn bk gm st w; do
    aot "mmt_${bm}_${bn}_${bk}_${gm}_${st}_${w}" matmul_kernel \
        "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, $bm, $bn, $bk, $gm" \
        "((M+$((bm - 1)))/$bm)*((N+$((bn - 1)))/$bn),1,1" "$w" "$st" &
    [ $((n % 2)) = 1 ] && wait
    n=$((n + 1))
done
wait
n=$((n + $(awk '{print $2, $3, $4, $5, $6, $7}' "$tune" | sort -u | wc -l)))
{
    echo "/* generated by triton/build.sh: the compiled configurations of the tuned GEMM */"
    for kind in wide tutorial; do
        echo "static const struct mm_cfg mm_$kind[] = {"
        grep "^$kind" "$tune" | while read -r _ bm bn bk gm st w; do
            echo "    {$bm, $bn, $bk, $gm, $st, $w, TT_mmt_${bm}_${bn}_${bk}_${gm}_${st}_${w}},"
        done
        echo "};"
    done
} >"$gen/tune_mm.inc"

# The entry points carry a hash in their names: map them to fixed ones.
{
    echo "/* generated by triton/build.sh */"
    for h in "$gen"/*.h; do
        name=$(sed -n 's#^// tt-linker: \([^:]*\):.*#\1#p' "$h")
        base=$(basename "$h" | cut -d. -f1)
        echo "#include \"$(basename "$h")\""
        echo "#define TT_$base $name"
    done
} >"$gen/entries.tmp"
mv "$gen/entries.tmp" "$gen/entries.h"

# The embedded cubins, one file per specialization, for inspection (sass.sh).
"$py" - "$gen"/*.c <<'EOF'
import os, re, sys
for path in sys.argv[1:]:
    text = open(path).read()
    m = re.search(r"unsigned char CUBIN_NAME\[(\d+)\] = \{ ([^}]*) \};", text)
    data = bytes(int(b, 16) for b in m.group(2).split(", "))
    assert len(data) == int(m.group(1)), path
    name = os.path.basename(path).split(".")[0]
    open(os.path.join(os.path.dirname(path), name + ".cubin"), "wb").write(data)
EOF

inc="-I$gen -I$here/../include -I$build/include -I$cuda/include"
# Triton's generated code is compiled as it comes (-w); ours with -Werror.
# Everything is hidden but kgate_plugin_v2.
for c in "$gen"/*.c; do
    $cc -O2 -fPIC -fvisibility=hidden -w $inc -c "$c" -o "${c%.c}.o"
done
for c in kgate_triton cuda_driver; do
    $cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -DKG_TRITON_ARCH="${TRITON_AOT_ARCH:-90}" \
        -Wall -Wextra -Werror -fPIC -fvisibility=hidden $inc -c "$here/$c.c" -o "$gen/$c.o"
done
# No -lcuda: cuda_driver.c takes the driver's functions from libcuda.so.1 at
# the first launch, so the library loads (and kgate validates its table)
# where there is no driver.
$cc -shared -Wl,--no-undefined "$gen"/*.o -o "$build/triton/libkgate_triton.so" -ldl -lpthread
echo "built $build/triton/libkgate_triton.so ($n Triton kernels for sm_${TRITON_AOT_ARCH:-90}a, Triton $ver)"
