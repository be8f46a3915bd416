"""Triton kernels gated by kgate through its C ABI (triton/kgate_triton.c).

Each kernel is written the way the Triton ecosystem writes it (the tutorials,
TritonBench, Liger, FlagGems): one program per row for the row-wise
operators, tl.max/tl.sum/tl.argmax over blocks, fp32 math. They are
compiled ahead of time by triton/build.sh (through triton/aot.py, which
needs no GPU) for sm_90a, one specialization per block size; kgate_triton.c
picks the specialization from the column count.

layer_norm_fwd:     one program per row, the row held in one block (BLOCK_N, a
                    power of two >= COLS), fp32 statistics, two-pass variance.
rms_norm_fwd:       one program per row, the row in one block:
                    y = x * rsqrt(mean(x^2) + eps) * w (Liger's forward).
log_softmax_row:    one program per row, the row in one block (the tutorial's
                    softmax with the log taken): max, sum of exp, x - max - log(sum).
log_softmax_online: one program per row for rows too long for one block:
                    a first pass over BLOCK_N chunks keeps the running max and
                    the rescaled running sum (online softmax), a second pass
                    writes x - max - log(sum).
mean_rows:          one program per row, a BLOCK_N-wide fp32 accumulator over
                    the chunks of the row, tl.sum at the end, / COLS.
argmax_tiles:       the argmax the paper measured (its ViperBench kernel, the
                    FlagGems layout): BLOCK_M = 128 rows a program, the row
                    walked in BLOCK_N = 128 chunks, elements addressed through a
                    runtime stride K (the reduced dimension of an N-d tensor),
                    so the compiler cannot prove contiguity and loads element by
                    element (RC1), and 8192 rows make only 64 programs on 132
                    SMs (RC2a). Slow, as the paper found (rho 0.10).
argmax_rows:        the same reduction one program per row with contiguous
                    rows: the fix.
matmul_kernel:      the tutorial's GEMM (grouped tile order, tl.dot).
linact_kernel:      the artifact's linear + activation, silu(x.W1^T) * (x.W3^T),
                    fused the way a Triton author fuses it: the tutorial GEMM
                    with two accumulators sharing the x tile (W1 and W3 read
                    as [BLOCK_K, BLOCK_N] views of their [N, K] rows) and the
                    gate applied in fp32 before the one store.
conv2d_nchw:        a direct convolution as TritonBench's conv is written: NCHW
                    in place, no im2col buffer; each program owns BLOCK_M
                    output pixels x BLOCK_N output channels and walks the
                    filter taps (r, s) and BLOCK_C-wide channel slices, a
                    gathered [BLOCK_M, BLOCK_C] x tile (channel stride H*W)
                    against a [BLOCK_C, BLOCK_N] w tile through tl.dot.
                    groups = 1 only.
matmul_kernel:      the Triton tutorial GEMM with a GROUP_M L2 swizzle; tl.dot
                    lowers to wgmma on sm_90. Tiles fixed at 128x256x64, 8 warps,
                    3 stages (compiled ahead of time: no autotuning).

Scalars such as eps travel as the BITS of an fp32 in an int32 argument:
Triton 3.6's AOT launcher declares fp32 kernel arguments as C doubles (its
ty_to_cpp maps fp32 to "double") and passes their address to cuLaunchKernel,
while the kernel's parameter is 4 bytes: a float argument would reach the
kernel as the low half of a double (docs/triton.md).
"""
import triton
import triton.language as tl

# The largest finite fp32: above every finite fp16 and bf16 value.
FP32_MAX = tl.constexpr(3.4028234663852886e38)


@triton.jit
def layer_norm_fwd(X, W, B, Y, M, N, eps_bits, BLOCK_N: tl.constexpr):
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
def rms_norm_fwd(X, W, Y, M, N, eps_bits, BLOCK_N: tl.constexpr):
    eps = eps_bits.to(tl.float32, bitcast=True)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / N
    rstd = tl.rsqrt(mean_sq + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * N + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def log_softmax_row(X, Y, M, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=-float("inf")).to(tl.float32)
    row_max = tl.max(x, axis=0)
    # the masked lanes add 0 (exp(-inf - max) would be NaN for an all -inf row)
    e = tl.where(mask, tl.exp(x - row_max), 0.0)
    log_sum = tl.log(tl.sum(e, axis=0))
    y = (x - row_max) - log_sum
    tl.store(Y + row * N + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def log_softmax_online(X, Y, M, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * N
    y_row = Y + row * N
    cols = tl.arange(0, BLOCK_N)
    run_max = tl.full((), -float("inf"), tl.float32)
    run_sum = tl.full((), 0.0, tl.float32)
    for start in range(0, N, BLOCK_N):
        c = start + cols
        mask = c < N
        x = tl.load(x_row + c, mask=mask, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(run_max, tl.max(x, axis=0))
        # while every value so far is -inf, rescale around 0: -inf - -inf is NaN
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)
        e = tl.where(mask, tl.exp(x - shift), 0.0)
        run_sum = run_sum * tl.exp(run_max - shift) + tl.sum(e, axis=0)
        run_max = new_max
    log_sum = tl.log(run_sum)
    for start in range(0, N, BLOCK_N):
        c = start + cols
        mask = c < N
        x = tl.load(x_row + c, mask=mask, other=0.0).to(tl.float32)
        y = (x - run_max) - log_sum
        tl.store(y_row + c, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def mean_rows(X, Y, M, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * N
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        c = start + cols
        acc += tl.load(x_row + c, mask=c < N, other=0.0).to(tl.float32)
    tl.store(Y + row, tl.sum(acc, axis=0) / N)


@triton.jit
def argmax_tiles(X, I, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    best_val = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    best_idx = tl.full((BLOCK_M,), 0, tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        offs = rows[:, None].to(tl.int64) * N * K + cols[None, :] * K
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        x = tl.load(X + offs, mask=mask, other=-float("inf")).to(tl.float32)
        # NaN first, +inf next, as in argmax_rows (torch.argmax's semantics)
        key = tl.where(x != x, float("inf"), tl.where(x == float("inf"), FP32_MAX, x))
        chunk_max, chunk_idx = tl.max(key, axis=1, return_indices=True,
                                      return_indices_tie_break_left=True)
        take = chunk_max > best_val
        best_val = tl.where(take, chunk_max, best_val)
        best_idx = tl.where(take, start + chunk_idx, best_idx)
    tl.store(I + rows, best_idx.to(tl.int64), mask=rows < M)


@triton.jit
def argmax_rows(X, I, M, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * N
    cols = tl.arange(0, BLOCK_N)
    best_val = tl.full((), -float("inf"), tl.float32)
    best_idx = tl.full((), 0, tl.int32)
    for start in range(0, N, BLOCK_N):
        c = start + cols
        x = tl.load(x_row + c, mask=c < N, other=-float("inf")).to(tl.float32)
        # torch.argmax returns the index of a NaN when the row holds one, and
        # tl.max's comparisons never pick a NaN: rank NaN above +inf, and +inf
        # above every finite fp16/bf16 value, before reducing.
        key = tl.where(x != x, float("inf"), tl.where(x == float("inf"), FP32_MAX, x))
        chunk_max, chunk_idx = tl.max(key, axis=0, return_indices=True)
        take = chunk_max > best_val
        best_val = tl.where(take, chunk_max, best_val)
        best_idx = tl.where(take, start + chunk_idx, best_idx)
    tl.store(I + row, best_idx.to(tl.int64))


@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """The tutorial's tile order: program pid's (row, column) tile, GROUP_M
    row tiles visited together for L2 reuse of the column tiles."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def matmul_kernel(A, Bm, C, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
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


@triton.jit
def linact_kernel(X, W1, W3, Y, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = X + offs_am[:, None].to(tl.int64) * K + offs_k[None, :]
    # W [N, K] row-major: element (k, n) of W^T is W[n * K + k]
    w_off = offs_bn[None, :].to(tl.int64) * K + offs_k[:, None]
    w1_ptrs = W1 + w_off
    w3_ptrs = W3 + w_off
    acc1 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc3 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - k * BLOCK_K
        x = tl.load(x_ptrs, mask=offs_k[None, :] < left, other=0.0)
        w1 = tl.load(w1_ptrs, mask=offs_k[:, None] < left, other=0.0)
        w3 = tl.load(w3_ptrs, mask=offs_k[:, None] < left, other=0.0)
        acc1 = tl.dot(x, w1, acc1)
        acc3 = tl.dot(x, w3, acc3)
        x_ptrs += BLOCK_K
        w1_ptrs += BLOCK_K
        w3_ptrs += BLOCK_K
    # silu(a) * b = a / (1 + exp(-a)) * b, in fp32 (silu(-inf) is -inf / inf = NaN, as the formula)
    y = acc1 / (1.0 + tl.exp(-acc1)) * acc3
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    y_ptrs = Y + offs_cm[:, None].to(tl.int64) * N + offs_cn[None, :]
    tl.store(y_ptrs, y.to(Y.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def conv2d_nchw(X, Wt, Y, N, C, H, W, K, R, S, U, PAD, P, Q, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_C: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # output pixels, over N * P * Q
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)  # output channels
    m_ok = offs_m < N * P * Q
    n_ok = offs_n < K
    img = offs_m // (P * Q)
    pq = offs_m % (P * Q)
    p = pq // Q
    q = pq % Q
    hw = H.to(tl.int64) * W
    x_img = img.to(tl.int64) * C * hw
    w_row = offs_n.to(tl.int64) * C * R * S
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r in range(0, R):
        h = p * U - PAD + r
        for s in range(0, S):
            w = q * U - PAD + s
            pix_ok = m_ok & (h >= 0) & (h < H) & (w >= 0) & (w < W)
            x_pix = x_img + h * W + w
            for c0 in range(0, C, BLOCK_C):
                cs = c0 + tl.arange(0, BLOCK_C)
                c_ok = cs < C
                xt = tl.load(X + x_pix[:, None] + cs[None, :].to(tl.int64) * hw,
                             mask=pix_ok[:, None] & c_ok[None, :], other=0.0)
                wt = tl.load(Wt + w_row[None, :] + (cs[:, None] * R + r) * S + s,
                             mask=c_ok[:, None] & n_ok[None, :], other=0.0)
                acc = tl.dot(xt, wt, acc)
    y_off = (img.to(tl.int64) * K)[:, None] * P * Q + offs_n[None, :].to(tl.int64) * P * Q + pq[:, None]
    tl.store(Y + y_off, acc.to(Y.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])
