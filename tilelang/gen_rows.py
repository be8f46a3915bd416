"""Row-wise TileLang kernels (tilelang/gen.py lowers them): one block a row,
ROWS a dynamic extent (T.dynamic, so one kernel per row length serves every
row count), COLS compiled in (a kernel per preset row length).

Each operator comes in a naive form, written the way the paper found TileLang
code written, and a fixed one (docs/tilelang.md):

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

import tilelang.language as T

F32 = "float32"


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


def rows(cols):
    """kgate's extents (ROWS, COLS) of a row kernel: any row count."""
    return (-1, cols)


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

# Per operator: the tensors in kgate's signature order (ins, out), kgate's
# extents of a key, the scalar the kernels read (name, default), and the
# summaries of the two variants (a naive one ends with its planted causes).
OPS = {
    "layer_norm": dict(
        ins=("X", "W", "B"), out="Y", extents=rows, scalar=("eps", 1e-5),
        naive="TileLang as first written: x.float() row copy by scalar loads (RC0b), mean and variance "
              "by T.serial into one-element fragments; on sm_90 the fragments spill (the paper's GH200 "
              "finding) (RC0a, RC3)",
        fast="TileLang fixed: the row in a bf16 fragment (16-byte loads), T.reduce_sum allreduce for mean "
             "and variance, bf16 out"),
    "rms_norm": dict(
        ins=("X", "W"), out="Y", extents=rows, scalar=("eps", 1e-6),
        naive="TileLang as first written: x.float() row copy by scalar loads (RC0b), sum of squares by "
              "T.serial into a one-element fragment; on sm_90 the fragments spill (RC0a, RC3)",
        fast="TileLang fixed: the row in an fp16 fragment (16-byte loads), T.reduce_sum allreduce, fp16 out"),
    "softmax": dict(
        ins=("X",), out="Y", extents=rows,
        naive="TileLang in-tree style: the whole row cached as fp32 in shared memory, max and sum by "
              "T.serial (RC0a)",
        fast="TileLang fixed: the row in fragments (16-byte loads), T.reduce_max and T.reduce_sum "
             "allreduces"),
}
