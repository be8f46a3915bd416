"""TileLang kernels for kgate, lowered to CUDA C++ ahead of time.

    python3 tilelang/gen.py      (any python with tilelang==0.1.15)

lowers every kernel below for sm_90 (no GPU needed) and writes

    tilelang/gen/<name>.cu   the CUDA source TileLang generated, one kernel a file
    tilelang/gen/kernels.cu  includes them all: the one translation unit the build
                             compiles (tl_templates/cuda/debug.h defines functions
                             that are not inline, so two translation units that
                             include it do not link into one library)
    tilelang/gen/kernels.h   what a launcher needs: each kernel's host symbol, its
                             parameter order, block size and dynamic shared memory
                             (the grid is always (ROWS, 1, 1): T.Kernel(R))
    tilelang/gen/headers.txt the tl_templates and CUTLASS headers those sources
                             include, as paths inside the tilelang wheel
                             (scripts/deps.sh extracts exactly these into .deps/)

All of them are committed; the build compiles them with nvcc and never runs Python.
tilelang/kgate_tilelang.c wraps them as a kgate candidate.

Kernels (the paper "Correct but Slow", Figure 2 and Table IV). ROWS is a
dynamic extent (T.dynamic), so one kernel per COLS serves every row count; COLS
is compiled in. Each operator comes in a naive form, written the way the paper
describes TileLang code as first written, and a fixed form:

  layer_norm bf16, rms_norm fp16
    naive: x.float() into a per-row fp32 buffer (RC0b: the loop reads one bf16
           element at a time, a scalar load, and the fp32 copy lives in local
           memory), then the mean / variance / sum of squares accumulated by
           T.serial loops into one-element fragments (RC0a: every thread walks
           the whole row). The output loop reads x again, so it is spread over
           the block's threads.
    fixed: the row loaded once in its own dtype into a fragment (16-byte
           loads), T.reduce_sum (a block-wide allreduce), the result stored from
           a fragment in its own dtype.
  softmax fp16
    naive: the in-tree style: the whole row cached in shared memory as fp32,
           the max and the sum of exponentials by T.serial loops (RC0a).
    fixed: the row in fragments, T.reduce_max and T.reduce_sum.
"""

import os
import re
import shutil
import subprocess
import sys

import tilelang
import tilelang.language as T

TILELANG_VERSION = "0.1.15"
TARGET = {"kind": "cuda", "arch": "sm_90"}
HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "gen")
F32 = "float32"
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


# ---------------------------------------------------------------- layer_norm
def layer_norm_naive(C, dtype, threads):
    R = T.dynamic("R")

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), W: T.Tensor((C,), dtype), B: T.Tensor((C,), dtype),
             Y: T.Tensor((R, C), dtype), eps: T.float32):
        with T.Kernel(R, threads=threads) as row:
            xf = T.alloc_fragment((C,), F32)  # x.float()
            mean = T.alloc_fragment((1,), F32)
            rstd = T.alloc_fragment((1,), F32)
            for j in T.serial(C):
                xf[j] = T.Cast(F32, X[row, j])
            mean[0] = 0
            for j in T.serial(C):
                mean[0] += xf[j]
            mean[0] = mean[0] / C
            rstd[0] = 0
            for j in T.serial(C):
                rstd[0] += (xf[j] - mean[0]) * (xf[j] - mean[0])
            rstd[0] = T.rsqrt(rstd[0] / C + eps)
            for j in T.Parallel(C):
                Y[row, j] = T.Cast(dtype, (T.Cast(F32, X[row, j]) - mean[0]) * rstd[0] * T.Cast(F32, W[j]) +
                                   T.Cast(F32, B[j]))

    return main


def layer_norm_fast(C, dtype, threads):
    R = T.dynamic("R")

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), W: T.Tensor((C,), dtype), B: T.Tensor((C,), dtype),
             Y: T.Tensor((R, C), dtype), eps: T.float32):
        with T.Kernel(R, threads=threads) as row:
            x = T.alloc_fragment((1, C), dtype)
            xf = T.alloc_fragment((1, C), F32)
            sq = T.alloc_fragment((1, C), F32)
            mean = T.alloc_fragment((1,), F32)
            var = T.alloc_fragment((1,), F32)
            T.copy(X[row, 0], x)
            for i, j in T.Parallel(1, C):
                xf[i, j] = T.Cast(F32, x[i, j])
            T.reduce_sum(xf, mean, dim=1)
            for i in T.Parallel(1):
                mean[i] = mean[i] / C
            for i, j in T.Parallel(1, C):
                sq[i, j] = (xf[i, j] - mean[i]) * (xf[i, j] - mean[i])
            T.reduce_sum(sq, var, dim=1)
            for i in T.Parallel(1):
                var[i] = T.rsqrt(var[i] / C + eps)
            for i, j in T.Parallel(1, C):
                x[i, j] = T.Cast(dtype, (xf[i, j] - mean[i]) * var[i] * T.Cast(F32, W[j]) + T.Cast(F32, B[j]))
            T.copy(x, Y[row, 0])

    return main


# ---------------------------------------------------------------- rms_norm
def rms_norm_naive(C, dtype, threads):
    R = T.dynamic("R")

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), W: T.Tensor((C,), dtype), Y: T.Tensor((R, C), dtype),
             eps: T.float32):
        with T.Kernel(R, threads=threads) as row:
            xf = T.alloc_fragment((C,), F32)  # x.float()
            rstd = T.alloc_fragment((1,), F32)
            for j in T.serial(C):
                xf[j] = T.Cast(F32, X[row, j])
            rstd[0] = 0
            for j in T.serial(C):
                rstd[0] += xf[j] * xf[j]
            rstd[0] = T.rsqrt(rstd[0] / C + eps)
            for j in T.Parallel(C):
                Y[row, j] = T.Cast(dtype, T.Cast(F32, X[row, j]) * rstd[0] * T.Cast(F32, W[j]))

    return main


def rms_norm_fast(C, dtype, threads):
    R = T.dynamic("R")

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), W: T.Tensor((C,), dtype), Y: T.Tensor((R, C), dtype),
             eps: T.float32):
        with T.Kernel(R, threads=threads) as row:
            x = T.alloc_fragment((1, C), dtype)
            sq = T.alloc_fragment((1, C), F32)
            ms = T.alloc_fragment((1,), F32)
            T.copy(X[row, 0], x)
            for i, j in T.Parallel(1, C):
                sq[i, j] = T.Cast(F32, x[i, j]) * T.Cast(F32, x[i, j])
            T.reduce_sum(sq, ms, dim=1)
            for i in T.Parallel(1):
                ms[i] = T.rsqrt(ms[i] / C + eps)
            for i, j in T.Parallel(1, C):
                x[i, j] = T.Cast(dtype, T.Cast(F32, x[i, j]) * ms[i] * T.Cast(F32, W[j]))
            T.copy(x, Y[row, 0])

    return main


# ---------------------------------------------------------------- softmax
def softmax_naive(C, dtype, threads):
    R = T.dynamic("R")

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R, C), dtype)):
        with T.Kernel(R, threads=threads) as row:
            xs = T.alloc_shared((C,), F32)  # the whole row, cached as fp32
            mx = T.alloc_fragment((1,), F32)
            sm = T.alloc_fragment((1,), F32)
            for j in T.Parallel(C):
                xs[j] = T.Cast(F32, X[row, j])
            mx[0] = -T.infinity(F32)
            for j in T.serial(C):
                mx[0] = T.max(mx[0], xs[j])
            sm[0] = 0
            for j in T.serial(C):
                sm[0] += T.exp(xs[j] - mx[0])
            for j in T.Parallel(C):
                Y[row, j] = T.Cast(dtype, T.exp(xs[j] - mx[0]) / sm[0])

    return main


def softmax_fast(C, dtype, threads):
    R = T.dynamic("R")

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R, C), dtype)):
        with T.Kernel(R, threads=threads) as row:
            x = T.alloc_fragment((1, C), dtype)
            e = T.alloc_fragment((1, C), F32)
            mx = T.alloc_fragment((1,), F32)
            sm = T.alloc_fragment((1,), F32)
            T.copy(X[row, 0], x)
            for i, j in T.Parallel(1, C):
                e[i, j] = T.Cast(F32, x[i, j])
            T.reduce_max(e, mx, dim=1)
            for i, j in T.Parallel(1, C):
                e[i, j] = T.exp(e[i, j] - mx[i])
            T.reduce_sum(e, sm, dim=1)
            for i, j in T.Parallel(1, C):
                x[i, j] = T.Cast(dtype, e[i, j] / sm[i])
            T.copy(x, Y[row, 0])

    return main


# (op, variant, dtype, builder, {COLS: threads}). The naive kernels use
# TileLang's customary 128 threads. The fixed ones hold the row in registers:
# 256 threads keep 3 rows of 8192 (80 registers a thread) resident on an SM,
# where 512 would keep 2; 1024 threads hold a 32768-column row at 64 registers.
NORM_COLS = (1024, 4096, 8192)
KERNELS = [
    ("layer_norm", "naive", "bf16", layer_norm_naive, {c: 128 for c in NORM_COLS}),
    ("layer_norm", "fast", "bf16", layer_norm_fast, {1024: 128, 4096: 256, 8192: 256}),
    ("rms_norm", "naive", "fp16", rms_norm_naive, {c: 128 for c in NORM_COLS}),
    ("rms_norm", "fast", "fp16", rms_norm_fast, {1024: 128, 4096: 256, 8192: 256}),
    ("softmax", "naive", "fp16", softmax_naive, {4096: 128, 8192: 128, 32768: 128}),
    ("softmax", "fast", "fp16", softmax_fast, {4096: 256, 8192: 256, 32768: 1024}),
]

# Kernel parameters by name, as the launcher fills them.
ROLES = {"X": "TL_X", "W": "TL_W", "B": "TL_B", "Y": "TL_Y", "R": "TL_ROWS", "eps": "TL_EPS"}


def lower(op, variant, dtype, builder, cols, threads):
    name = "tl_%s_%s_%s_%d" % (op, variant, dtype, cols)
    func = builder(cols, DTYPES[dtype], threads).with_attr("global_symbol", name)
    kernel = tilelang.compile(func, target=TARGET)
    fns = list(kernel.artifact.device_mod.functions.items())
    if len(fns) != 1:
        sys.exit("%s: TileLang made %d device functions, expected 1" % (name, len(fns)))
    gv, fn = fns[0]
    symbol = gv.name_hint
    ext = {str(k): v for k, v in fn.attrs["thread_extent"].items()}
    # The launcher's contract: grid (ROWS, 1, 1), block (threads, 1, 1).
    grid = ext.get("blockIdx.x")
    if not (hasattr(grid, "name") and grid.name.split("_")[0] == "R"):
        sys.exit("%s: grid.x is %s, expected the row count R" % (name, grid))
    for k in ("blockIdx.y", "blockIdx.z", "threadIdx.y", "threadIdx.z"):
        if k in ext and int(ext[k]) != 1:
            sys.exit("%s: %s = %s, expected 1" % (name, k, ext[k]))
    if int(ext["threadIdx.x"]) != threads:
        sys.exit("%s: block %s, expected %d" % (name, ext["threadIdx.x"], threads))
    smem = int(fn.attrs["dyn_shared_memory_buf"]) if "dyn_shared_memory_buf" in fn.attrs else 0
    params = []
    for p in fn.params:
        base = p.name.split("_")[0] if p.name.startswith("R_") else p.name
        if base not in ROLES:
            sys.exit("%s: unexpected kernel parameter %s" % (name, p.name))
        params.append((base, str(p.dtype)))
    source = kernel.get_kernel_source()
    # The parameter list as TileLang wrote it, checked against the IR's order.
    m = re.search(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?%s\(([^)]*)\)\s*\{' % symbol, source)
    if not m:
        sys.exit("%s: kernel %s not found in the generated source" % (name, symbol))
    decl = [a.strip() for a in m.group(1).split(",")]
    if [d.split()[-1] for d in decl] != [b for b, _ in params]:
        sys.exit("%s: source parameters %s differ from the IR's %s" % (name, decl, params))
    return dict(name=name, symbol=symbol, op=op, variant=variant, dtype=dtype, cols=cols,
                threads=threads, smem=smem, params=params, decl=decl, source=source)


def c_param(decl):
    """A generated parameter as plain C: pointers become void pointers."""
    name = decl.split()[-1]
    if "*" in decl:
        return ("const void *" if decl.startswith("const") else "void *") + name
    return decl.replace("__restrict__ ", "")


def include_closure(paths, tl_root):
    """Headers under the tilelang package the generated sources include."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cmd = [nvcc, "-std=c++17", "-arch=sm_90a", "-I" + os.path.join(tl_root, "src"),
           "-I" + os.path.join(tl_root, "3rdparty", "cutlass", "include"), "-M"] + paths
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    found = set()
    for tok in out.replace("\\\n", " ").split():
        full = os.path.realpath(tok)
        if full.startswith(tl_root + os.sep):
            found.add("tilelang/" + os.path.relpath(full, tl_root).replace(os.sep, "/"))
    return sorted(found)


def main():
    if tilelang.__version__.split("+")[0] != TILELANG_VERSION:
        sys.exit("gen.py wants tilelang==%s (scripts/deps.sh fetches its headers); this is %s" %
                 (TILELANG_VERSION, tilelang.__version__))
    tilelang.disable_cache()  # the artifact (device IR) comes only from a fresh compile
    os.makedirs(GEN, exist_ok=True)
    for f in os.listdir(GEN):
        os.remove(os.path.join(GEN, f))
    command = "python tilelang/gen.py (TileLang %s)" % TILELANG_VERSION
    done = []
    for op, variant, dtype, builder, by_cols in KERNELS:
        for cols, threads in sorted(by_cols.items()):
            k = lower(op, variant, dtype, builder, cols, threads)
            with open(os.path.join(GEN, k["name"] + ".cu"), "w") as f:
                f.write("// Generated by %s from %s in tilelang/gen.py; do not edit.\n" %
                        (command, builder.__name__))
                f.write(k["source"])
            done.append(k)
            print("%-36s block %4d  smem %6d  (%s)" % (k["symbol"], threads, k["smem"],
                                                       ", ".join(b for b, _ in k["params"])))
    tl_root = os.path.dirname(os.path.abspath(tilelang.__file__))
    headers = include_closure([os.path.join(GEN, k["name"] + ".cu") for k in done], tl_root)
    with open(os.path.join(GEN, "headers.txt"), "w") as f:
        f.write("# Generated by %s: the wheel's headers that tilelang/gen/*.cu include.\n" % command)
        f.write("".join(h + "\n" for h in headers))
    with open(os.path.join(GEN, "kernels.cu"), "w") as f:
        f.write("// Generated by %s; do not edit.\n" % command)
        f.write("// Every kernel in one translation unit: tl_templates/cuda/debug.h defines\n"
                "// functions that are not inline, which two translation units cannot share.\n")
        f.write("".join('#include "%s.cu"\n' % k["name"] for k in done))
    with open(os.path.join(GEN, "kernels.h"), "w") as f:
        f.write("/* Generated by %s; do not edit.\n" % command)
        f.write(" * The kernels of tilelang/gen/<name>.cu and how to launch them: grid (ROWS, 1, 1)\n"
                " * (T.Kernel(R)), block (threads, 1, 1), `smem` bytes of dynamic shared memory,\n"
                " * the arguments in the order `args` lists them. The declarations give each\n"
                " * kernel's host symbol for cudaLaunchKernel, pointers as void pointers. */\n")
        f.write("#ifndef KGATE_TILELANG_KERNELS_H\n#define KGATE_TILELANG_KERNELS_H\n\n")
        f.write("enum tl_arg { TL_X, TL_W, TL_B, TL_Y, TL_ROWS, TL_EPS };\n\n")
        f.write("typedef struct tl_kernel_info {\n"
                "    const char *op, *variant, *dtype;\n"
                "    int cols;             /* COLS compiled in */\n"
                "    const void *fn;       /* the kernel's host symbol */\n"
                "    unsigned threads;     /* block size */\n"
                "    unsigned smem;        /* dynamic shared memory, bytes */\n"
                "    int n_args;\n"
                "    enum tl_arg args[6];  /* parameter order */\n"
                "} tl_kernel_info;\n\n")
        for k in done:
            f.write("void %s(%s);\n" % (k["symbol"], ", ".join(c_param(d) for d in k["decl"])))
        f.write("\nstatic const tl_kernel_info tl_kernels[] = {\n")
        for k in done:
            f.write('    {"%s", "%s", "%s", %d, (const void *)%s, %d, %d, %d, {%s}},\n' %
                    (k["op"], k["variant"], k["dtype"], k["cols"], k["symbol"], k["threads"],
                     k["smem"], len(k["params"]), ", ".join(ROLES[b] for b, _ in k["params"])))
        f.write("};\n\n#endif\n")
    print("wrote %d kernels, kernels.cu, kernels.h and headers.txt (%d headers) to %s" %
          (len(done), len(headers), os.path.relpath(GEN)))


if __name__ == "__main__":
    main()
