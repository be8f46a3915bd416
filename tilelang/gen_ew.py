"""Element-wise TileLang kernels (tilelang/gen.py lowers them): a 1-D grid over
the elements, the whole shape compiled in (a kernel per preset: N for add and
mul, ROWS x COLS for relu, leaky_relu and swiglu, whose tensors are
contiguous, so a block's tile is a run of whole rows or a slice of one).

Each operator has a naive form, written the way TileLang code is first
written by someone who thinks in CUDA threads, with one defect each, and a
fixed form: 4096 elements a block (256 threads, two 16-byte vectors a
thread), T.copy into fragments, the arithmetic on fragments, T.copy out.

  add      naive: one element a thread (T.Parallel over the block's threads,
                  a bounds check TileLang proves away), the sum in fp32:
                  2-byte loads and stores, few bytes in flight (RC0b)
  mul      naive: each thread a contiguous chunk of 64 elements by T.serial:
                  a warp's 32 loads 128 bytes apart (RC1)
  relu     naive: a fixed grid of 64 blocks that stride over the tensor with
                  T.serial, one element a thread a step (RC2a)
  leaky_relu naive: T.Parallel(cols, rows) over a tile, the row index
                  innermost: consecutive threads take rows COLS apart (RC1)
  swiglu   naive: one element a thread, as add's, silu(a) * b in fp32:
                  2-byte loads and stores (RC0b)
"""

import tilelang.language as T

F32 = "float32"
FIXED_THREADS = 256


def flat(n):
    """kgate's extents of a 1-D element-wise shape."""
    return (n,)


def grid2(shape):
    """kgate's extents of a ROWS x COLS shape."""
    return tuple(shape)


def tile_of(R, C, elems):
    """A block's tile of `elems` elements of an R x C tensor: (rows, cols),
    whole rows when a row is shorter than the tile, else a slice of one."""
    tc = min(C, elems)
    tr = elems // tc
    assert C % tc == 0 and R % tr == 0, (R, C, elems)
    return tr, tc


# ---------------------------------------------------------------- add, mul
def add_naive(N, dtype, threads):
    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), Z: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            for i in T.Parallel(threads):  # one element a thread
                if bx * threads + i < N:
                    Z[bx * threads + i] = T.Cast(dtype, T.Cast(F32, X[bx * threads + i]) +
                                                 T.Cast(F32, Y[bx * threads + i]))

    return main


def mul_naive(N, dtype, threads):
    V = 64  # elements a thread

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), Z: T.Tensor((N,), dtype)):
        with T.Kernel(N // (threads * V), threads=threads) as bx:
            tx = T.get_thread_binding()
            for i in T.serial(V):  # each thread its own chunk, as a CUDA loop would
                Z[(bx * threads + tx) * V + i] = X[(bx * threads + tx) * V + i] * Y[(bx * threads + tx) * V + i]

    return main


def binary_fast(op):
    def build(N, dtype, threads):
        B = threads * 16

        @T.prim_func
        def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), Z: T.Tensor((N,), dtype)):
            with T.Kernel(N // B, threads=threads) as bx:
                x = T.alloc_fragment((B,), dtype)
                y = T.alloc_fragment((B,), dtype)
                T.copy(X[bx * B], x)
                T.copy(Y[bx * B], y)
                for i in T.Parallel(B):
                    x[i] = op(x[i], y[i])
                T.copy(x, Z[bx * B])

        return main

    build.__name__ = "%s_fast" % op.__name__
    return build


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


add_fast = binary_fast(add)
mul_fast = binary_fast(mul)


# ---------------------------------------------------------------- relu, leaky_relu
def relu_value(x, dtype):
    """relu(NaN) = NaN, relu(-Inf) = 0."""
    return T.if_then_else(x < T.Cast(dtype, 0), T.Cast(dtype, 0), x)


def leaky_value(x, slope, dtype):
    return T.if_then_else(x < T.Cast(dtype, 0), T.Cast(dtype, T.Cast(F32, x) * slope), x)


def relu_naive(shape, dtype, threads):
    R, C = shape
    G = 64  # blocks: a fixed grid, as a grid-stride CUDA loop would launch
    steps = R * C // (G * threads)

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R, C), dtype)):
        with T.Kernel(G, threads=threads) as bx:
            for t in T.serial(steps):
                for i in T.Parallel(threads):
                    Y[(t * G + bx) * threads // C, (t * G + bx) * threads % C + i] = relu_value(
                        X[(t * G + bx) * threads // C, (t * G + bx) * threads % C + i], dtype)

    return main


def relu_fast(shape, dtype, threads):
    R, C = shape
    TR, TC = tile_of(R, C, threads * 16)

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R, C), dtype)):
        with T.Kernel(R // TR * (C // TC), threads=threads) as bx:
            x = T.alloc_fragment((TR, TC), dtype)
            T.copy(X[bx // (C // TC) * TR, bx % (C // TC) * TC], x)
            for i, j in T.Parallel(TR, TC):
                x[i, j] = relu_value(x[i, j], dtype)
            T.copy(x, Y[bx // (C // TC) * TR, bx % (C // TC) * TC])

    return main


def leaky_relu_naive(shape, dtype, threads):
    R, C = shape
    TR, TC = threads, 16  # a tile of `threads` rows and 16 columns a block

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R, C), dtype), negative_slope: T.float32):
        with T.Kernel(R // TR * (C // TC), threads=threads) as bx:
            for j, i in T.Parallel(TC, TR):  # the row index innermost: a thread a row
                Y[bx // (C // TC) * TR + i, bx % (C // TC) * TC + j] = leaky_value(
                    X[bx // (C // TC) * TR + i, bx % (C // TC) * TC + j], negative_slope, dtype)

    return main


def leaky_relu_fast(shape, dtype, threads):
    R, C = shape
    TR, TC = tile_of(R, C, threads * 16)

    @T.prim_func
    def main(X: T.Tensor((R, C), dtype), Y: T.Tensor((R, C), dtype), negative_slope: T.float32):
        with T.Kernel(R // TR * (C // TC), threads=threads) as bx:
            x = T.alloc_fragment((TR, TC), dtype)
            T.copy(X[bx // (C // TC) * TR, bx % (C // TC) * TC], x)
            for i, j in T.Parallel(TR, TC):
                x[i, j] = leaky_value(x[i, j], negative_slope, dtype)
            T.copy(x, Y[bx // (C // TC) * TR, bx % (C // TC) * TC])

    return main


# ---------------------------------------------------------------- swiglu
def silu_mul(a, b):
    """a / (1 + exp(-a)) * b in fp32, as PyTorch's CUDA silu."""
    return a / (T.float32(1) + T.exp(-a)) * b


def silu_mul_rcp(a, b):
    """The same with MUFU.RCP's reciprocal for the IEEE division (about 30
    instructions an element fewer; -Inf still gives -Inf * 0 = NaN)."""
    return a * T.fast_rcp(T.float32(1) + T.exp(-a)) * b


def swiglu_naive(shape, dtype, threads):
    R, C = shape
    N = R * C

    @T.prim_func
    def main(A: T.Tensor((R, C), dtype), B: T.Tensor((R, C), dtype), Y: T.Tensor((R, C), dtype)):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            for i in T.Parallel(threads):  # one element a thread
                if bx * threads + i < N:
                    Y[(bx * threads + i) // C, (bx * threads + i) % C] = T.Cast(dtype, silu_mul(
                        T.Cast(F32, A[(bx * threads + i) // C, (bx * threads + i) % C]),
                        T.Cast(F32, B[(bx * threads + i) // C, (bx * threads + i) % C])))

    return main


def swiglu_fast(shape, dtype, threads):
    R, C = shape
    TR, TC = tile_of(R, C, threads * 16)

    @T.prim_func
    def main(A: T.Tensor((R, C), dtype), B: T.Tensor((R, C), dtype), Y: T.Tensor((R, C), dtype)):
        with T.Kernel(R // TR * (C // TC), threads=threads) as bx:
            a = T.alloc_fragment((TR, TC), dtype)
            b = T.alloc_fragment((TR, TC), dtype)
            T.copy(A[bx // (C // TC) * TR, bx % (C // TC) * TC], a)
            T.copy(B[bx // (C // TC) * TR, bx % (C // TC) * TC], b)
            for i, j in T.Parallel(TR, TC):
                a[i, j] = T.Cast(dtype, silu_mul_rcp(T.Cast(F32, a[i, j]), T.Cast(F32, b[i, j])))
            T.copy(a, Y[bx // (C // TC) * TR, bx % (C // TC) * TC])

    return main


# (op, variant, dtype, builder, {shape: threads}): the presets of `kgate ops`.
VECTOR = (1048576, 16777216, 67108864)
RELU = ((1024, 1024), (4096, 4096), (16384, 16384))
LEAKY = ((1024, 1024), (4096, 4096), (8192, 8192))
SWIGLU = ((1024, 4096), (4096, 8192), (4096, 32768))
KERNELS = [
    ("add", "naive", "fp16", add_naive, {n: 128 for n in VECTOR}),
    ("add", "fast", "fp16", add_fast, {n: FIXED_THREADS for n in VECTOR}),
    ("mul", "naive", "fp16", mul_naive, {n: 128 for n in VECTOR}),
    ("mul", "fast", "fp16", mul_fast, {n: FIXED_THREADS for n in VECTOR}),
    ("relu", "naive", "fp16", relu_naive, {s: 256 for s in RELU}),
    ("relu", "fast", "fp16", relu_fast, {s: FIXED_THREADS for s in RELU}),
    ("leaky_relu", "naive", "fp16", leaky_relu_naive, {s: 128 for s in LEAKY}),
    ("leaky_relu", "fast", "fp16", leaky_relu_fast, {s: FIXED_THREADS for s in LEAKY}),
    ("swiglu", "naive", "fp16", swiglu_naive, {s: 128 for s in SWIGLU}),
    ("swiglu", "fast", "fp16", swiglu_fast, {s: FIXED_THREADS for s in SWIGLU}),
]

FAST = ("TileLang fixed: 4096 elements a block, T.copy into fp16 fragments (16-byte loads), %s on "
        "the fragments, 16-byte stores")

# Per operator: tensors in kgate's order, extents of a key, scalar, summaries.
OPS = {
    "add": dict(
        ins=("X", "Y"), out="Z", extents=flat,
        naive="TileLang as first written: one element a thread, the sum in fp32: 2-byte loads and "
              "stores, 4 bytes in flight a thread (RC0b)",
        fast=FAST % "half2 adds"),
    "mul": dict(
        ins=("X", "Y"), out="Z", extents=flat,
        naive="TileLang as first written: each thread a contiguous chunk of 64 elements by T.serial: "
              "a warp's 2-byte loads 128 bytes apart (RC1)",
        fast=FAST % "half2 products"),
    "relu": dict(
        ins=("X",), out="Y", extents=grid2,
        naive="TileLang as first written: a fixed grid of 64 blocks striding over the tensor with "
              "T.serial, one 2-byte element a thread a step: far under one wave (RC2a)",
        fast=FAST % "the max with 0"),
    "leaky_relu": dict(
        ins=("X",), out="Y", extents=grid2, scalar=("negative_slope", 0.01),
        naive="TileLang as first written: T.Parallel(cols, rows) over a 128x16 tile, the row index "
              "innermost: consecutive threads take rows COLS apart, 2 bytes each (RC1)",
        fast=FAST % "x < 0 ? x * slope : x"),
    "swiglu": dict(
        ins=("A", "B"), out="Y", extents=grid2,
        naive="TileLang as first written: one element a thread, silu(a) * b in fp32: 2-byte loads "
              "and stores, 4 bytes in flight a thread (RC0b)",
        fast=FAST % "silu(a) * b in fp32 (a fast reciprocal)"),
}
