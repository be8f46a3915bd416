"""Matmul TileLang kernels (tilelang/gen.py lowers them): C = A.B, row-major,
fp16 in and out, fp32 accumulation; a 2-D grid of blocks, one a tile of C;
M, N and K compiled in (a kernel per preset).

  naive: the k loop by T.serial straight over global memory: each step a
         column of A and a row of B into a 64x64 fp32 tile of FMAs on the CUDA
         cores; no shared-memory tiles, no T.gemm (NOTC: no tensor cores; the
         column of A is a strided, uncoalesced read, RC1)
  fixed: TileLang's GEMM: 128x256x64 tiles copied into shared memory by T.copy
         in a 3-stage T.Pipelined loop, T.gemm on them; for sm_90a TileLang
         lowers this to TMA loads (descriptors the launcher makes from the
         host IR's tma_descriptor_args), WGMMA and a producer warpgroup
         (warp specialization: 384 threads), the output through shared memory
         and a TMA store; blocks in 10-wide panels for L2 reuse (T.use_swizzle)
"""

import tilelang.language as T

F32 = "float32"


def mnk(shape):
    """kgate's extents of a matmul shape: M x N x K."""
    return tuple(shape)


def matmul_naive(shape, dtype, threads):
    M, N, K = shape
    BM, BN = 64, 64

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(N // BN, M // BM, threads=threads) as (bx, by):
            acc = T.alloc_fragment((BM, BN), F32)
            T.clear(acc)
            for k in T.serial(K):  # straight from global memory, a step of k at a time
                for i, j in T.Parallel(BM, BN):
                    acc[i, j] += T.Cast(F32, A[by * BM + i, k]) * T.Cast(F32, B[k, bx * BN + j])
            T.copy(acc, C[by * BM, bx * BN])

    return main


def matmul_fast(shape, dtype, threads):
    M, N, K = shape
    BM, BN, BK = 128, 256, 64

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(N // BN, M // BM, threads=threads) as (bx, by):
            As = T.alloc_shared((BM, BK), dtype)
            Bs = T.alloc_shared((BK, BN), dtype)
            Cs = T.alloc_shared((BM, BN), dtype)
            acc = T.alloc_fragment((BM, BN), F32)
            T.use_swizzle(panel_size=10)
            T.clear(acc)
            for k in T.Pipelined(K // BK, num_stages=3):
                T.copy(A[by * BM, k * BK], As)
                T.copy(B[k * BK, bx * BN], Bs)
                T.gemm(As, Bs, acc)
            T.copy(acc, Cs)
            T.copy(Cs, C[by * BM, bx * BN])

    return main


MATMUL = ((1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192))
KERNELS = [
    ("matmul", "naive", "fp16", matmul_naive, {s: 128 for s in MATMUL}),
    ("matmul", "fast", "fp16", matmul_fast, {s: 256 for s in MATMUL}),
]

OPS = {
    "matmul": dict(
        ins=("A", "B"), out="C", extents=mnk,
        naive="TileLang as first written: the k loop by T.serial over global memory, a 64x64 fp32 tile "
              "of CUDA-core FMAs a block, no shared-memory tiles and no T.gemm; a column of A a step "
              "(NOTC, RC1)",
        fast="TileLang fixed: 128x256x64 tiles by T.copy into shared memory, a 3-stage T.Pipelined "
             "loop, T.gemm: TMA, WGMMA and a producer warpgroup on sm_90a, a TMA store"),
}
