"""Triton kernels gated by kgate through its C ABI.

layer_norm_fwd: one program per row, the row held in one block (BLOCK_N, a
                power of two >= COLS), fp32 statistics, two-pass variance.
matmul_kernel:  the Triton tutorial GEMM with a GROUP_M L2 swizzle; tl.dot
                lowers to wgmma on sm_90. Tiles fixed at 128x256x64, 8 warps,
                3 stages (compiled ahead of time: no autotuning).
Compiled by triton/build.sh with `python3 -m triton.tools.compile`.
"""
import triton
import triton.language as tl


@triton.jit
def layer_norm_fwd(X, W, B, Y, M, N, eps_bits, BLOCK_N: tl.constexpr):
    # eps arrives as the bits of an fp32: Triton 3.6's AOT launcher declares
    # fp32 arguments as C doubles and passes their address, so a float
    # argument would reach the kernel as the low half of a double.
    eps = eps_bits.to(tl.float32, bitcast=True)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row.to(tl.int64) * N + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(Y + row.to(tl.int64) * N + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def matmul_kernel(A, Bm, C, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + offs_am[:, None].to(tl.int64) * K + offs_k[None, :]
    b_ptrs = Bm + offs_k[:, None].to(tl.int64) * N + offs_bn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = C + offs_cm[:, None].to(tl.int64) * N + offs_cn[None, :]
    mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=mask)
