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


# The fixed softmax and log_softmax keep the row in shared memory in its own
# dtype (64 KiB at 32768 columns: three rows an SM) and reduce it as the
# reductions below do: per-slot accumulators over slices of the row, then
# T.reduce; the output is computed from the shared row.
@T.macro
def row_max_sum(xs, C, S, acc, mx, sm):
    """mx = max of the fp16 row xs (NaN skipped: exp carries it into sm),
    sm = sum of exp(xs - mx); acc is a fragment of S slots."""
    T.fill(acc, -T.infinity(F32))
    for k in T.unroll(C // S):
        for j in T.Parallel(S):
            acc[j] = T.max(acc[j], T.Cast(F32, xs[k * S + j]))
    T.reduce_max(acc, mx, dim=0)
    T.clear(acc)
    for k in T.unroll(C // S):
        for j in T.Parallel(S):
            acc[j] += T.exp(T.Cast(F32, xs[k * S + j]) - mx[0])
    T.reduce_sum(acc, sm, dim=0)


def softmax_fast(C, dtype, threads):
    R = T.dynamic("R")
    S = min(C, threads * 8)

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R, C), dtype)):
        with T.Kernel(R, threads=threads) as row:
            xs = T.alloc_shared((C,), dtype)
            acc = T.alloc_fragment((S,), F32)
            mx = T.alloc_fragment((1,), F32)
            sm = T.alloc_fragment((1,), F32)
            T.copy(X[row, 0], xs)
            row_max_sum(xs, C, S, acc, mx, sm)
            for i in T.Parallel(1):
                sm[i] = T.float32(1) / sm[i]  # a product per element, not a division
            for j in T.Parallel(C):
                Y[row, j] = T.Cast(dtype, T.exp(T.Cast(F32, xs[j]) - mx[0]) * sm[0])

    return main


# The fixed reductions stream the row through registers a tile at a time:
# each thread keeps a running value for each element slot of the tile
# (acc, a fragment of the tile's shape) and the block reduces the slots once
# at the end (T.reduce). No row stays resident, so a 256-thread block holds
# few registers (at most 64: T.annotate_min_blocks_per_sm(4), or nvcc
# unrolls the tile loop and hoists every load) and an SM keeps 4 rows in
# flight, each with the loads of up to 4 tiles issued ahead (#pragma unroll 4).
def tile(dtype, threads):
    """Columns a tile: two 16-byte vectors a thread."""
    return threads * (16 if dtype in ("float16", "bfloat16") else 8)


# ---------------------------------------------------------------- argmax
def first_max(v, best):
    """v replaces the running max: larger, or the first NaN. Summed as
    integers, not joined by || and &&, which nvcc compiles to branches that
    keep the next tile's loads from running ahead."""
    i32 = "int32"
    return T.Cast(i32, v > best) + T.Cast(i32, T.isnan(v)) * (1 - T.Cast(i32, T.isnan(best))) > 0


def argmax_naive(C, dtype, threads):
    R = T.dynamic("R")

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R,), "int64")):
        with T.Kernel(R, threads=threads) as row:
            best = T.alloc_fragment((1,), F32)
            arg = T.alloc_fragment((1,), "int32")
            best[0] = -T.infinity(F32)
            arg[0] = 0
            for j in T.serial(C):  # every thread walks the row, one element a load
                v = T.Cast(F32, X[row, j])
                if first_max(v, best[0]):
                    best[0] = v
                    arg[0] = j
            Y[row] = T.Cast("int64", arg[0])

    return main


def argmax_fast(C, dtype, threads):
    R = T.dynamic("R")
    BC = min(C, tile(dtype, threads))

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R,), "int64")):
        with T.Kernel(R, threads=threads) as row:
            T.annotate_min_blocks_per_sm(4)
            x = T.alloc_fragment((1, BC), dtype)
            best = T.alloc_fragment((1, BC), dtype)  # per slot: the first largest value (NaN first)
            arg = T.alloc_fragment((1, BC), "int32")  # and its column
            mx = T.alloc_fragment((1,), dtype)
            first = T.alloc_fragment((1,), "int32")
            T.fill(best, -T.infinity(dtype))
            T.fill(arg, 0)
            for k in T.unroll(C // BC, unroll_factor=4):  # loads of 4 tiles in flight
                T.copy(X[row, k * BC], x)
                for i, j in T.Parallel(1, BC):  # selects, not branches: the loads run ahead
                    arg[i, j] = T.if_then_else(first_max(x[i, j], best[i, j]), k * BC + j, arg[i, j])
                    best[i, j] = T.if_then_else(first_max(x[i, j], best[i, j]), x[i, j], best[i, j])
            T.reduce_max(best, mx, dim=1, annotations={"nan_propagate": True})
            for i, j in T.Parallel(1, BC):  # the first column among the slots that hold the max
                arg[i, j] = T.if_then_else(best[i, j] == mx[i] or T.isnan(best[i, j]), arg[i, j], C)
            T.reduce_min(arg, first, dim=1)
            Y[row] = T.Cast("int64", first[0])

    return main


# ---------------------------------------------------------------- max_reduction
def max_reduction_naive(C, dtype, threads):
    R = T.dynamic("R")

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R,), dtype)):
        with T.Kernel(R, threads=threads) as row:
            xs = T.alloc_shared((C,), F32)  # the whole row, cached as fp32
            mx = T.alloc_fragment((1,), F32)
            for j in T.Parallel(C):
                xs[j] = T.Cast(F32, X[row, j])
            mx[0] = -T.infinity(F32)
            for j in T.serial(C):
                mx[0] = T.if_then_else(xs[j] > mx[0] or T.isnan(xs[j]), xs[j], mx[0])
            Y[row] = T.Cast(dtype, mx[0])

    return main


def max_reduction_fast(C, dtype, threads):
    R = T.dynamic("R")
    BC = min(C, tile(dtype, threads))

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R,), dtype)):
        with T.Kernel(R, threads=threads) as row:
            T.annotate_min_blocks_per_sm(4)
            x = T.alloc_fragment((1, BC), dtype)
            acc = T.alloc_fragment((1, BC), dtype)
            mx = T.alloc_fragment((1,), dtype)
            T.fill(acc, -T.infinity(dtype))
            for k in T.unroll(C // BC, unroll_factor=4):  # loads of 4 tiles in flight
                T.copy(X[row, k * BC], x)
                for i, j in T.Parallel(1, BC):  # a NaN, once seen, stays
                    acc[i, j] = T.if_then_else(x[i, j] > acc[i, j] or T.isnan(x[i, j]), x[i, j], acc[i, j])
            T.reduce_max(acc, mx, dim=1, annotations={"nan_propagate": True})  # exact in the input's dtype
            Y[row] = mx[0]

    return main


# ---------------------------------------------------------------- mean_reduction
def mean_reduction_naive(C, dtype, threads):
    R = T.dynamic("R")

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R,), dtype)):
        with T.Kernel(R, threads=threads) as row:
            s = T.alloc_fragment((1,), "float64")  # a long serial sum: accumulated in fp64
            s[0] = 0
            for j in T.serial(C):  # every thread walks the row, one element a load
                s[0] += T.Cast("float64", X[row, j])
            Y[row] = T.Cast(dtype, s[0] / C)

    return main


def mean_reduction_fast(C, dtype, threads):
    R = T.dynamic("R")
    BC = min(C, tile(dtype, threads))

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R,), dtype)):
        with T.Kernel(R, threads=threads) as row:
            T.annotate_min_blocks_per_sm(4)
            x = T.alloc_fragment((1, BC), dtype)
            acc = T.alloc_fragment((1, BC), F32)
            s = T.alloc_fragment((1,), F32)
            T.clear(acc)
            for k in T.unroll(C // BC, unroll_factor=4):  # loads of 4 tiles in flight
                T.copy(X[row, k * BC], x)
                for i, j in T.Parallel(1, BC):
                    acc[i, j] += T.Cast(F32, x[i, j])
            T.reduce_sum(acc, s, dim=1)
            Y[row] = T.Cast(dtype, s[0] / C)

    return main


# ---------------------------------------------------------------- logsumexp
# max(x) shifts the exponentials unless it is infinite: a +Inf row gives
# +Inf, an all -Inf row -Inf, a NaN (which the max skips) NaN through exp.
def logsumexp_naive(C, dtype, threads):
    R = T.dynamic("R")

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R,), dtype)):
        with T.Kernel(R, threads=threads) as row:
            mx = T.alloc_fragment((1,), F32)
            s = T.alloc_fragment((1,), F32)
            mx[0] = -T.infinity(F32)
            for j in T.serial(C):  # every thread walks the row, twice
                mx[0] = T.max(mx[0], T.Cast(F32, X[row, j]))
            mx[0] = T.if_then_else(T.isinf(mx[0]), T.float32(0), mx[0])
            s[0] = 0
            for j in T.serial(C):
                s[0] += T.exp(T.Cast(F32, X[row, j]) - mx[0])
            Y[row] = T.Cast(dtype, T.log(s[0]) + mx[0])

    return main


def scale(a, m):
    """exp(a - m) for a <= m, exactly 1 where a == m (also -Inf == -Inf and
    +Inf == +Inf, where a - m is NaN)."""
    return T.if_then_else(a == m, T.float32(1), T.exp(a - m))


@T.macro
def online_lse(X, row, C, BC, x, m, s, M, S):
    """Streams row `row` of X: per slot an online (max m, sum s of exp(x - m));
    then M = the row's max, S = the sum of exp(x - M) (M skips NaN, which
    makes S NaN)."""
    T.fill(m, -T.infinity(F32))
    T.clear(s)
    for k in T.unroll(C // BC, unroll_factor=4):  # loads of 4 tiles in flight
        T.copy(X[row, k * BC], x)
        for i, j in T.Parallel(1, BC):
            s[i, j] = s[i, j] * scale(m[i, j], T.max(m[i, j], x[i, j])) + scale(x[i, j], T.max(m[i, j], x[i, j]))
            m[i, j] = T.max(m[i, j], x[i, j])
    T.reduce_max(m, M, dim=1)
    for i, j in T.Parallel(1, BC):
        s[i, j] = s[i, j] * scale(m[i, j], M[i])
    T.reduce_sum(s, S, dim=1)


def logsumexp_fast(C, dtype, threads):
    R = T.dynamic("R")
    BC = min(C, tile(dtype, threads))

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R,), dtype)):
        with T.Kernel(R, threads=threads) as row:
            T.annotate_min_blocks_per_sm(4)
            x = T.alloc_fragment((1, BC), dtype)
            m = T.alloc_fragment((1, BC), F32)
            s = T.alloc_fragment((1, BC), F32)
            M = T.alloc_fragment((1,), F32)
            S = T.alloc_fragment((1,), F32)
            online_lse(X, row, C, BC, x, m, s, M, S)
            Y[row] = T.Cast(dtype, M[0] + T.log(S[0]))

    return main


# ---------------------------------------------------------------- log_softmax
def log_softmax_naive(C, dtype, threads):
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
                Y[row, j] = T.Cast(dtype, xs[j] - mx[0] - T.log(sm[0]))

    return main


def log_softmax_fast(C, dtype, threads):
    R = T.dynamic("R")
    S = min(C, threads * 8)

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R, C), dtype)):
        with T.Kernel(R, threads=threads) as row:
            xs = T.alloc_shared((C,), dtype)
            acc = T.alloc_fragment((S,), F32)
            mx = T.alloc_fragment((1,), F32)
            sm = T.alloc_fragment((1,), F32)
            T.copy(X[row, 0], xs)
            row_max_sum(xs, C, S, acc, mx, sm)
            for j in T.Parallel(C):
                Y[row, j] = T.Cast(dtype, T.Cast(F32, xs[j]) - mx[0] - T.log(sm[0]))

    return main


# ---------------------------------------------------------------- cross_entropy
# loss = log(sum(exp(x - max))) - (x[t] - max); 0 where the target is
# ignore_index; NaN for a target outside [0, COLS) (PyTorch raises).
def cross_entropy_naive(C, dtype, threads):
    R = T.dynamic("R")

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Tgt: T.Tensor((R,), "int64"), Y: T.Tensor((R,), dtype),
             ignore_index: T.int64):
        with T.Kernel(R, threads=threads) as row:
            mx = T.alloc_fragment((1,), F32)
            s = T.alloc_fragment((1,), F32)
            mx[0] = -T.infinity(F32)
            for j in T.serial(C):  # every thread walks the row, twice
                mx[0] = T.max(mx[0], T.Cast(F32, X[row, j]))
            s[0] = 0
            for j in T.serial(C):
                s[0] += T.exp(T.Cast(F32, X[row, j]) - mx[0])
            t = Tgt[row]
            if t == ignore_index:
                Y[row] = T.Cast(dtype, 0)
            elif t >= 0 and t < C:
                Y[row] = T.Cast(dtype, T.log(s[0]) - (T.Cast(F32, X[row, t]) - mx[0]))
            else:
                Y[row] = T.Cast(dtype, T.float32(float("nan")))

    return main


def cross_entropy_fast(C, dtype, threads):
    R = T.dynamic("R")
    BC = min(C, tile(dtype, threads))

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Tgt: T.Tensor((R,), "int64"), Y: T.Tensor((R,), dtype),
             ignore_index: T.int64):
        with T.Kernel(R, threads=threads) as row:
            T.annotate_min_blocks_per_sm(4)
            x = T.alloc_fragment((1, BC), dtype)
            m = T.alloc_fragment((1, BC), F32)
            s = T.alloc_fragment((1, BC), F32)
            M = T.alloc_fragment((1,), F32)
            S = T.alloc_fragment((1,), F32)
            online_lse(X, row, C, BC, x, m, s, M, S)
            t = Tgt[row]
            if t == ignore_index:
                Y[row] = T.Cast(dtype, 0)
            elif t >= 0 and t < C and M[0] < T.infinity(F32):  # a +Inf logit: NaN, as PyTorch
                Y[row] = T.Cast(dtype, T.log(S[0]) - (T.Cast(F32, X[row, t]) - M[0]))
            else:
                Y[row] = T.Cast(dtype, T.float32(float("nan")))

    return main


def rows(cols):
    """kgate's extents (ROWS, COLS) of a row kernel: any row count."""
    return (-1, cols)


# (op, variant, dtype, builder, {COLS: threads}). The naive kernels use
# TileLang's customary 128 threads. The fixed norms hold the row in registers:
# 256 threads keep 3 rows of 8192 (80 registers a thread) resident on an SM,
# where 512 would keep 2. The other fixed kernels use 256 threads, a row
# streamed through registers or held in shared memory.
NORM_COLS = (1024, 4096, 8192)
WIDE = (4096, 8192, 32768)  # the presets of the softmax-like operators and reductions
NAIVE = {c: 128 for c in WIDE}
STREAM = {c: 256 for c in WIDE}  # the fixed ones: a tile or a slice of the row at a time
KERNELS = [
    ("layer_norm", "naive", "bf16", layer_norm_naive, {c: 128 for c in NORM_COLS}),
    ("layer_norm", "fast", "bf16", layer_norm_fast, {1024: 128, 4096: 256, 8192: 256}),
    ("rms_norm", "naive", "fp16", rms_norm_naive, {c: 128 for c in NORM_COLS}),
    ("rms_norm", "fast", "fp16", rms_norm_fast, {1024: 128, 4096: 256, 8192: 256}),
    ("softmax", "naive", "fp16", softmax_naive, NAIVE),
    ("softmax", "fast", "fp16", softmax_fast, STREAM),
    ("argmax", "naive", "fp16", argmax_naive, NAIVE),
    ("argmax", "fast", "fp16", argmax_fast, STREAM),
    ("max_reduction", "naive", "fp16", max_reduction_naive, NAIVE),
    ("max_reduction", "fast", "fp16", max_reduction_fast, STREAM),
    ("mean_reduction", "naive", "fp32", mean_reduction_naive, NAIVE),
    ("mean_reduction", "fast", "fp32", mean_reduction_fast, STREAM),
    ("logsumexp", "naive", "fp32", logsumexp_naive, {4096: 128, 8192: 128, 16384: 128}),
    ("logsumexp", "fast", "fp32", logsumexp_fast, {4096: 256, 8192: 256, 16384: 256}),
    ("log_softmax", "naive", "fp16", log_softmax_naive, NAIVE),
    ("log_softmax", "fast", "fp16", log_softmax_fast, STREAM),
    ("cross_entropy", "naive", "fp32", cross_entropy_naive, NAIVE),
    ("cross_entropy", "fast", "fp32", cross_entropy_fast, STREAM),
]

WALK = ("every thread walks the row with T.serial, one element a load (the same address across "
        "the warp)")

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
        fast="TileLang fixed: the row cached in fp16 in shared memory (16-byte loads), per-thread "
             "partial max and sum over its slices, T.reduce_max and T.reduce_sum allreduces"),
    "argmax": dict(
        ins=("X",), out="Y", extents=rows,
        naive="TileLang as first written: %s, compared in fp32; no T.reduce (RC0a, RC1)" % WALK,
        fast="TileLang fixed: the row streamed in 4096-column tiles (16-byte loads), a running max and "
             "its column per slot, a NaN-propagating T.reduce_max, T.reduce_min over the slots' columns"),
    "max_reduction": dict(
        ins=("X",), out="Y", extents=rows,
        naive="TileLang in-tree style: the whole row cached as fp32 in shared memory, the max by "
              "T.serial (RC0a)",
        fast="TileLang fixed: the row streamed in 4096-column tiles (16-byte loads), a running max per "
             "slot, a NaN-propagating T.reduce_max allreduce"),
    "mean_reduction": dict(
        ins=("X",), out="Y", extents=rows,
        naive="TileLang as first written: %s, into an fp64 accumulator; no T.reduce (RC0a, RC1)" % WALK,
        fast="TileLang fixed: the row streamed in 2048-column tiles (16-byte loads), a running sum per "
             "slot, T.reduce_sum allreduce"),
    "logsumexp": dict(
        ins=("X",), out="Y", extents=rows,
        naive="TileLang as first written: %s, twice (the max, then the sum of exponentials); "
              "no T.reduce (RC0a, RC1)" % WALK,
        fast="TileLang fixed: the row streamed in 2048-column tiles (16-byte loads), an online max and "
             "sum of exponentials per slot, T.reduce_max and T.reduce_sum allreduces"),
    "log_softmax": dict(
        ins=("X",), out="Y", extents=rows,
        naive="TileLang in-tree style: the whole row cached as fp32 in shared memory, max and sum of "
              "exponentials by T.serial (RC0a)",
        fast="TileLang fixed: the row cached in fp16 in shared memory (16-byte loads), per-thread "
             "partial max and sum over its slices, T.reduce_max and T.reduce_sum allreduces"),
    "cross_entropy": dict(
        ins=("X", "Tgt"), out="Y", extents=rows, scalar=("ignore_index", -100),
        naive="TileLang as first written: %s, twice (the max, then the sum of exponentials); "
              "no T.reduce (RC0a, RC1)" % WALK,
        fast="TileLang fixed: the row streamed in 2048-column tiles (16-byte loads), an online max and "
             "sum of exponentials per slot, T.reduce_max and T.reduce_sum allreduces; the target logit "
             "read once"),
}
