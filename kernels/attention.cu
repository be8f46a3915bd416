// attention: O = softmax(Q.K^T / sqrt(D) [causal mask]) . V over Q, K, V, O
// [B,H,S,D] (D innermost), fp16/bf16 in and out, fp32 accumulate and softmax.
// The scalar `causal` (0/1) masks keys j > i.
//
// The fp64 reference is src/ops/attention.cu.
//
// v1 naive (NOTC, RC4): the unfused algorithm of eager PyTorch: S = Q.K^T * scale
//            written to DRAM in fp32 ([B,H,S,S]: 4.3 GB at 8x32x2048x128), a
//            softmax pass over it (read, write P in place), then O = P.V reading
//            P again: the O(S^2) round trips a fused kernel never makes (RC4,
//            the algorithm the library does not use). Its two GEMMs are 64x64
//            tiles of fp32 FMAs on converted operands (no tensor cores, NOTC).
//            NOTC first, as measured by the single-fix ablation
//            (kernels/ablation/single_fix.cu, on the H200, fp16 large):
//            33.74 ms; the GEMMs alone on tensor cores 14.21 ms; the fused
//            algorithm alone on FMAs 20.11 ms. Handles every shape; v2's
//            fallback.
// v2:        FlashAttention-2's algorithm and layout, fused: one 128-thread
//            block per (batch, head, 128-query tile), four warps of 32 query
//            rows (two m16 row tiles) each. 64-key K and V tiles stream through
//            shared memory by cp.async (the V tile's copy overlaps Q.K^T, the
//            next K tile's overlaps P.V; rows padded by 16 bytes so ldmatrix is
//            conflict-free). S = Q.K^T and O += P.V run on mma.sync m16n8k16
//            (fp32 accumulate), each K and V fragment feeding both row tiles;
//            the online softmax keeps a running max and sum per row in
//            registers (exp2 with the scale folded in); P goes from the S
//            accumulators straight into the A fragments of P.V. Causal: key
//            tiles past a query tile are never loaded, warps skip tiles wholly
//            above their rows, heavy query tiles are scheduled first. D = 64
//            and 128 (any S: tails are zero-filled and masked); other D, or
//            unaligned tensors, take v1. Two blocks an SM (254 registers).
//            The kernel also takes 8 warps of 16 rows with the Q fragments
//            in registers (attn_fused<T, 8, 1>: one 256-thread block an SM,
//            1.6 times the shared-memory reads an mma); not exported.
// v3 Hopper: FlashAttention-3's structure on sm_90a (TMA, wgmma, warp
//            specialization, two consumers in turns). One 384-thread CTA per
//            (batch*head, 128-query tile), one CTA an SM (setmaxnreg: 40
//            registers for the producer, 232 for each consumer; 160 KB of
//            shared memory at D = 128, 80 KB at D = 64). Warpgroup 0
//            produces: one thread issues the TMA copies of the Q tile (once)
//            and of 128-key K and V tiles into two 2-stage rings, [128][64]
//            boxes with the 128-byte swizzle, each tile completing on its
//            mbarrier; the consumers free a stage by an mbarrier arrive each.
//            Warpgroups 1 and 2 consume, 64 query rows each: S = Q.K^T by
//            wgmma m64n128k16 with both operands K-major in shared memory;
//            the online softmax on the fp32 accumulators in registers (row
//            max over the quad by two shuffles, exp2 with the scale folded
//            in, v2's rules for -Inf, +Inf and NaN); P rounded to 16 bits
//            straight into the A fragments of O += P.V (wgmma m64nDk16 with A
//            in registers: the accumulator layout of S is, pairwise, the
//            A-fragment layout, so no data moves), V N-major through the
//            descriptor's transpose bit. The consumers take turns (named
//            barriers 1 and 2) to issue their GEMMs, P.V of one tile and
//            Q.K^T of the next as one wgmma group, so that one's softmax runs
//            under the other's GEMMs (FA3's ping-pong; its overlap within a
//            warpgroup is not done). Causal: key tiles past the query tile
//            are never loaded, the diagonal tile is masked, a head's heavy
//            query tiles run first. D = 64 and 128 with S a multiple of 128
//            and 16-byte aligned tensors; anything else takes v2. The index
//            math and the softmax steps live in attention_v3.h, which
//            tests/test_attention_v3.c runs on the host, emulating every CTA
//            of small problems against softmax(Q.K^T).V in double. Written
//            without a GPU, then verified on the H200 (every preset correct;
//            0.84-0.87 of cuDNN's SDPA at (8, 32, 2048, 128)): the operator's
//            fast variant (.fast), v2 an intermediate version.
#include <stdint.h>

#include <type_traits>

#include "attention_v3.h"
#include "common.cuh"
#include "sm90_tma.cuh"
#include "wgmma_m64n128k16.cuh"
#include "wgmma_rs.cuh"

namespace attn {

// ---------------------------------------------------------------- v1 naive

// C[z][m][n] = alpha * sum_k A[z][m][k] * B(z, k, n), where B(z, k, n) is
// Bm[z][n][k] (BT: the K rows, for Q.K^T) or Bm[z][k][n] (V, for P.V). One
// 64x64 tile of C a block, 4x4 outputs a thread, fp32 FMAs.
template <typename TA, typename TB, typename TC, bool BT>
__global__ __launch_bounds__(256) void v1_gemm(const TA *A, const TB *Bm, TC *C, int M, int N, int K,
                                               float alpha, int tiles_m, int tiles_n)
{
    __shared__ float As[16][64 + 1]; // [k][m]
    __shared__ float Bs[16][64 + 1]; // [k][n]
    const int64_t per_z = (int64_t)tiles_m * tiles_n;
    const int64_t z = blockIdx.x / per_z;
    const int rem = (int)(blockIdx.x % per_z);
    const int m0 = (rem / tiles_n) * 64, n0 = (rem % tiles_n) * 64;
    A += (size_t)z * M * K;
    Bm += (size_t)z * K * N;
    C += (size_t)z * M * N;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = threadIdx.x; i < 1024; i += 256) {
            const int r = i / 16, c = i % 16; // tile row r, k offset c: k runs along the warp
            As[c][r] = m0 + r < M && k0 + c < K ? to_f(A[(size_t)(m0 + r) * K + k0 + c]) : 0.f;
            if constexpr (BT) {
                Bs[c][r] = n0 + r < N && k0 + c < K ? to_f(Bm[(size_t)(n0 + r) * K + k0 + c]) : 0.f;
            } else {
                const int rb = i / 64, cb = i % 64;
                Bs[rb][cb] = k0 + rb < K && n0 + cb < N ? to_f(Bm[(size_t)(k0 + rb) * N + n0 + cb]) : 0.f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < 16; kk++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                a[i] = As[kk][ty * 4 + i];
                b[i] = Bs[kk][tx * 4 + i];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const int r = m0 + ty * 4 + i, c = n0 + tx * 4 + j;
            if (r < M && c < N)
                C[(size_t)r * N + c] = from_f<TC>(alpha * acc[i][j]);
        }
}

// Softmax of each row of the [rows, S] scores in place; row i of a head sees
// keys j < S, or j <= i when causal (the hidden ones become 0). The
// max-subtracted form: a NaN, +Inf or all -Inf row becomes NaN.
__global__ __launch_bounds__(256) void v1_softmax(float *sc, int64_t rows, int S, int causal)
{
    __shared__ float red[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        float *s = sc + (size_t)row * S;
        const int i = (int)(row % S);
        const int n = causal ? i + 1 : S;
        float m = -INFINITY, sum = 0.f;
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            m = fmaxf(m, s[j]);
        m = block_max(m, red);
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            sum += expf(s[j] - m);
        const float inv = 1.f / block_sum(sum, red);
        for (int j = threadIdx.x; j < S; j += blockDim.x)
            s[j] = j < n ? expf(s[j] - m) * inv : 0.f;
    }
}

static void *v1_buf;
static size_t v1_have;

// The three passes of v1 on the stream; 0, or a CUDA error / 2 (too large).
template <typename T>
static int v1_run(const T *Q, const T *Kt, const T *V, T *O, int64_t bh, int64_t S64, int64_t D64,
                  int causal, cudaStream_t s, const kgate_params *p)
{
    if (S64 > 0x7fffffff || D64 > 0x7fffffff)
        return kernel_fail(p, 2, "attention v1: S or D beyond int");
    const int S = (int)S64, D = (int)D64;
    const size_t need = (size_t)bh * (size_t)S * (size_t)S * sizeof(float);
    float *sc = (float *)scratch_get(&v1_buf, &v1_have, need);
    if (!sc)
        return kernel_fail(p, (int)cudaErrorMemoryAllocation,
                           "attention v1: cannot allocate the [B,H,S,S] fp32 score matrix");
    const int ts = (S + 63) / 64, td = (D + 63) / 64;
    const int64_t blocks_s = bh * ts * ts, blocks_o = bh * ts * td;
    if (blocks_s > 0x7fffffff || blocks_o > 0x7fffffff)
        return kernel_fail(p, 2, "attention v1: grid too large");
    v1_gemm<T, T, float, true><<<(unsigned)blocks_s, 256, 0, s>>>(Q, Kt, sc, S, S, D,
                                                                  (float)(1.0 / sqrt((double)D)), ts, ts);
    KG_KERNEL_LAUNCHED(p);
    const int64_t rows = bh * S;
    v1_softmax<<<wave_grid<v1_softmax, 256>(rows), 256, 0, s>>>(sc, rows, S, causal);
    KG_KERNEL_LAUNCHED(p);
    v1_gemm<float, T, T, false><<<(unsigned)blocks_o, 256, 0, s>>>(sc, V, O, S, D, S, 1.f, ts, td);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

template <typename T> static bool args_ok(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    if (nin != 3 || nout != 1)
        return false;
    for (int i = 0; i < 4; i++) {
        const DLTensor *t = i < 3 ? &in[i] : &out[0];
        if (!dl_is<T>(t, 4))
            return false;
        for (int d = 0; d < 4; d++)
            if (t->shape[d] != in[0].shape[d])
                return false;
    }
    return true;
}

template <typename T>
static int attn_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                   kgate_stream st)
{
    if (!args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "attention v1: expected Q, K, V [B,H,S,D] -> O [B,H,S,D]");
    const int64_t bh = in[0].shape[0] * in[0].shape[1];
    return v1_run<T>((const T *)in[0].data, (const T *)in[1].data, (const T *)in[2].data,
                     (T *)out[0].data, bh, in[0].shape[2], in[0].shape[3],
                     kgate_scalar_get(p, "causal", 0) != 0, (cudaStream_t)st, p);
}

// ---------------------------------------------------------------- v2
// One kernel, two layouts: WARPS warps of MT m16 row tiles each, so a block
// owns BM = 16 WARPS MT query rows. v2: 4 warps x 2, FlashAttention-2's layout
// (each K and V fragment feeds two row tiles; the Q fragments are re-read
// from shared memory, registers would not hold them); 8 warps x 1 keeps the
// Q fragments in registers (the header says why it is not exported).
namespace fa {
constexpr int BN = 64; // keys a tile

__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared, bypassing L1; zero-filled when !valid (the
// source address is then not read, but must still be a valid one).
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
                 "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

__device__ __forceinline__ void cp_async_wait_all()
{
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

// d (16x8 fp32) += a (16x16) . b (16x8), a row-major, b column-major.
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, __half)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                    __nv_bfloat16)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as one register of two 16-bit values, lo in the low half.
__device__ __forceinline__ uint32_t pack2(float lo, float hi, __half)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

__device__ __forceinline__ uint32_t pack2(float lo, float hi, __nv_bfloat16)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

template <int D> constexpr int LDP = D + 8; // a padded row: 16 bytes more

template <int D, int BM> constexpr size_t SMEM_BYTES = (size_t)(BM + 2 * BN) * LDP<D> * 2;

// Copies `rows` rows of D elements starting at row0 into dst (rows of
// LDP<D>) with NT threads; rows at or past S are zero-filled.
template <typename T, int D, int NT>
__device__ __forceinline__ void load_tile(T *dst, const T *src, int row0, int rows, int S)
{
    constexpr int CH = D / 8; // 16-byte chunks a row
    for (int c = threadIdx.x; c < rows * CH; c += NT) {
        const int r = c / CH, k = (c % CH) * 8;
        const bool ok = row0 + r < S;
        cp_async16(dst + r * LDP<D> + k, src + (size_t)(ok ? row0 + r : 0) * D + k, ok);
    }
}

template <typename T, int D, int WARPS, int MT>
__global__ __launch_bounds__(WARPS * 32, 8 / WARPS) void kernel(const T *Q, const T *K, const T *V, T *O, int S,
                                                                 int n_qt, float sl2, int causal)
{
    constexpr int NT = WARPS * 32, BM = WARPS * 16 * MT, WR = 16 * MT; // threads, rows a block, a warp
    constexpr int LD = LDP<D>, DT = D / 8, KS = D / 16;
    constexpr bool Q_IN_REGS = MT == 1;
    extern __shared__ __align__(16) unsigned char raw[];
    T *Qs = reinterpret_cast<T *>(raw); // BM x LD
    T *Ks = Qs + BM * LD;               // BN x LD
    T *Vs = Ks + BN * LD;               // BN x LD
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t4 = lane % 4; // the fragment row group and column pair
    const int mi = lane / 8, mr = lane % 8; // ldmatrix: the matrix and row this lane addresses
    const int64_t bh = blockIdx.x / n_qt;
    const int qt = n_qt - 1 - (int)(blockIdx.x % n_qt); // heavy (causal) tiles first
    const int q0 = qt * BM;
    const int wrow = q0 + warp * WR; // the warp's first query row
    const size_t base = (size_t)bh * (size_t)S * D;
    Q += base;
    K += base;
    V += base;
    O += base;
    // keys a causal tile sees end at its last row
    const int key_end = causal ? min(S, q0 + BM) : S;
    const int n_kt = (key_end + BN - 1) / BN;

    load_tile<T, D, NT>(Qs, Q, q0, BM, S);
    load_tile<T, D, NT>(Ks, K, 0, BN, S);
    cp_async_commit();

    uint32_t qf[Q_IN_REGS ? KS : 1][4];
    float acc[MT][DT][4];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int i = 0; i < DT; i++)
            acc[m][i][0] = acc[m][i][1] = acc[m][i][2] = acc[m][i][3] = 0.f;
    // per row tile m: the running max (raw scores) and this thread's part of
    // the running sum, for rows wrow + 16m + g and wrow + 16m + g + 8
    float m_run[MT][2], l_run[MT][2];
#pragma unroll
    for (int m = 0; m < MT; m++)
        m_run[m][0] = m_run[m][1] = -INFINITY, l_run[m][0] = l_run[m][1] = 0.f;

    for (int kt = 0; kt < n_kt; kt++) {
        const int j0 = kt * BN;
        // warps whose rows all lie above this tile see none of its keys
        const bool active = !causal || j0 <= wrow + WR - 1;
        cp_async_wait_all();
        __syncthreads(); // K tile kt (and Q) landed; every warp is done with V tile kt-1
        load_tile<T, D, NT>(Vs, V, j0, BN, S);
        cp_async_commit();
        if (Q_IN_REGS && kt == 0) {
#pragma unroll
            for (int ks = 0; ks < KS; ks++)
                ldsm_x4(qf[Q_IN_REGS ? ks : 0], Qs + (warp * 16 + (mi & 1) * 8 + mr) * LD + ks * 16 + (mi >> 1) * 8);
        }
        float s[MT][BN / 8][4];
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int n = 0; n < BN / 8; n++)
                s[m][n][0] = s[m][n][1] = s[m][n][2] = s[m][n][3] = 0.f;
        if (active) {
            // S = Q . K^T: K rows are the columns of K^T, so plain ldmatrix gives
            // B fragments (n-tiles n and n+1, k halves 0 and 1)
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                uint32_t qa[MT][4];
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    if constexpr (Q_IN_REGS) {
#pragma unroll
                        for (int i = 0; i < 4; i++)
                            qa[m][i] = qf[Q_IN_REGS ? ks : 0][i];
                    } else {
                        ldsm_x4(qa[m], Qs + (warp * WR + m * 16 + (mi & 1) * 8 + mr) * LD + ks * 16 + (mi >> 1) * 8);
                    }
                }
#pragma unroll
                for (int n = 0; n < BN / 8; n += 2) {
                    uint32_t b[4];
                    ldsm_x4(b, Ks + (n * 8 + (mi >> 1) * 8 + mr) * LD + ks * 16 + (mi & 1) * 8);
#pragma unroll
                    for (int m = 0; m < MT; m++) {
                        mma(s[m][n], qa[m], b[0], b[1], T());
                        mma(s[m][n + 1], qa[m], b[2], b[3], T());
                    }
                }
            }
            // hidden keys: past S, or (causal) past the row
            if (j0 + BN > S || (causal && j0 + BN - 1 > wrow)) {
#pragma unroll
                for (int m = 0; m < MT; m++)
#pragma unroll
                    for (int n = 0; n < BN / 8; n++)
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            const int j = j0 + n * 8 + 2 * t4 + (e & 1), i = wrow + m * 16 + g + (e >> 1) * 8;
                            if (j >= S || (causal && j > i))
                                s[m][n][e] = -INFINITY;
                        }
            }
#pragma unroll
            for (int m = 0; m < MT; m++) {
                // online softmax: the new max of each row over its quad
                float mx[2] = {m_run[m][0], m_run[m][1]};
#pragma unroll
                for (int n = 0; n < BN / 8; n++) {
                    mx[0] = fmaxf(mx[0], fmaxf(s[m][n][0], s[m][n][1]));
                    mx[1] = fmaxf(mx[1], fmaxf(s[m][n][2], s[m][n][3]));
                }
                float ms[2], alpha[2], rs[2] = {0.f, 0.f};
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
                    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
                    // a row with no score above -Inf yet subtracts 0, so that its
                    // hidden keys weigh exp2(-Inf) = 0, not exp2(-Inf + Inf) = NaN;
                    // +Inf and NaN scores still make NaN, as the reference does
                    ms[r] = mx[r] == -INFINITY ? 0.f : mx[r] * sl2;
                    alpha[r] = exp2f(m_run[m][r] * sl2 - ms[r]);
                    m_run[m][r] = mx[r];
                }
#pragma unroll
                for (int n = 0; n < BN / 8; n++) {
                    s[m][n][0] = exp2f(fmaf(s[m][n][0], sl2, -ms[0]));
                    s[m][n][1] = exp2f(fmaf(s[m][n][1], sl2, -ms[0]));
                    s[m][n][2] = exp2f(fmaf(s[m][n][2], sl2, -ms[1]));
                    s[m][n][3] = exp2f(fmaf(s[m][n][3], sl2, -ms[1]));
                    rs[0] += s[m][n][0] + s[m][n][1];
                    rs[1] += s[m][n][2] + s[m][n][3];
                }
                l_run[m][0] = l_run[m][0] * alpha[0] + rs[0];
                l_run[m][1] = l_run[m][1] * alpha[1] + rs[1];
#pragma unroll
                for (int d = 0; d < DT; d++) {
                    acc[m][d][0] *= alpha[0];
                    acc[m][d][1] *= alpha[0];
                    acc[m][d][2] *= alpha[1];
                    acc[m][d][3] *= alpha[1];
                }
            }
        }
        cp_async_wait_all();
        __syncthreads(); // V tile kt landed; every warp is done with K tile kt
        if (kt + 1 < n_kt)
            load_tile<T, D, NT>(Ks, K, j0 + BN, BN, S);
        cp_async_commit();
        if (active) {
            // O += P . V: the S accumulators of n-tiles 2k and 2k+1 are the A
            // fragment of k-step k; V rows are the k dimension, so
            // ldmatrix.trans gives B fragments (d n-tiles d and d+1)
#pragma unroll
            for (int ks = 0; ks < BN / 16; ks++) {
                uint32_t a[MT][4];
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    a[m][0] = pack2(s[m][2 * ks][0], s[m][2 * ks][1], T());
                    a[m][1] = pack2(s[m][2 * ks][2], s[m][2 * ks][3], T());
                    a[m][2] = pack2(s[m][2 * ks + 1][0], s[m][2 * ks + 1][1], T());
                    a[m][3] = pack2(s[m][2 * ks + 1][2], s[m][2 * ks + 1][3], T());
                }
#pragma unroll
                for (int d = 0; d < DT; d += 2) {
                    uint32_t b[4];
                    ldsm_x4_trans(b, Vs + (ks * 16 + (mi & 1) * 8 + mr) * LD + d * 8 + (mi >> 1) * 8);
#pragma unroll
                    for (int m = 0; m < MT; m++) {
                        mma(acc[m][d], a[m], b[0], b[1], T());
                        mma(acc[m][d + 1], a[m], b[2], b[3], T());
                    }
                }
            }
        }
    }
    cp_async_wait_all();
#pragma unroll
    for (int m = 0; m < MT; m++) {
        // the row sums over the quad; 1/0 (no visible finite score) makes NaN
        float inv[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            l_run[m][r] += __shfl_xor_sync(0xffffffffu, l_run[m][r], 1);
            l_run[m][r] += __shfl_xor_sync(0xffffffffu, l_run[m][r], 2);
            inv[r] = 1.f / l_run[m][r];
        }
        const int r0 = wrow + m * 16 + g;
#pragma unroll
        for (int d = 0; d < DT; d++) {
            const int c = d * 8 + 2 * t4;
            if (r0 < S)
                *reinterpret_cast<uint32_t *>(O + (size_t)r0 * D + c) =
                    pack2(acc[m][d][0] * inv[0], acc[m][d][1] * inv[0], T());
            if (r0 + 8 < S)
                *reinterpret_cast<uint32_t *>(O + (size_t)(r0 + 8) * D + c) =
                    pack2(acc[m][d][2] * inv[1], acc[m][d][3] * inv[1], T());
        }
    }
}

template <typename T, int D, int WARPS, int MT>
static int launch(const T *Q, const T *K, const T *V, T *O, int64_t bh, int S, int causal, cudaStream_t s,
                  const kgate_params *p)
{
    constexpr int BM = WARPS * 16 * MT;
    const size_t smem = SMEM_BYTES<D, BM>;
    static bool attr_set;
    if (!attr_set) {
        if (cudaFuncSetAttribute(kernel<T, D, WARPS, MT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)smem) != cudaSuccess)
            return kernel_fail(p, 3, "attention: cannot get the shared memory");
        attr_set = true;
    }
    const int n_qt = (S + BM - 1) / BM;
    const float sl2 = (float)(1.4426950408889634 / sqrt((double)D)); // log2(e) / sqrt(D)
    kernel<T, D, WARPS, MT><<<(unsigned)(bh * n_qt), WARPS * 32, smem, s>>>(Q, K, V, O, S, n_qt, sl2, causal);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}
} // namespace fa

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

// The fused kernel at D = 64 and 128 (any S), else v1.
template <typename T, int WARPS, int MT>
static int attn_fused(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                      kgate_stream st)
{
    if (!args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "attention: expected Q, K, V [B,H,S,D] -> O [B,H,S,D]");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t bh = in[0].shape[0] * in[0].shape[1], S = in[0].shape[2], D = in[0].shape[3];
    const int causal = kgate_scalar_get(p, "causal", 0) != 0;
    const T *Q = (const T *)in[0].data, *K = (const T *)in[1].data, *V = (const T *)in[2].data;
    T *O = (T *)out[0].data;
    constexpr int BM = WARPS * 16 * MT;
    const int64_t n_qt = (S + BM - 1) / BM;
    const bool fast = (D == 64 || D == 128) && S <= 0x7fffffff && bh * n_qt <= 0x7fffffff &&
                      aligned16(Q) && aligned16(K) && aligned16(V) && aligned16(O);
    if (!fast)
        return v1_run<T>(Q, K, V, O, bh, S, D, causal, s, p);
    if (D == 64)
        return fa::launch<T, 64, WARPS, MT>(Q, K, V, O, bh, (int)S, causal, s, p);
    return fa::launch<T, 128, WARPS, MT>(Q, K, V, O, bh, (int)S, causal, s, p);
}

// ---------------------------------------------------------------- v3 Hopper
// FlashAttention-3's structure with its ping-pong of the two consumer
// warpgroups, without its overlap within a warpgroup: one CTA per
// (batch*head, 128 query rows), warpgroup 0 the producer (one thread issues
// every TMA copy), warpgroups 1 and 2 the consumers of 64 rows each. The
// index math and the online-softmax steps are in attention_v3.h, which
// tests/test_attention_v3.c runs on the host.
namespace fa3 {
using namespace sm90; // mbarriers, TMA loads, descriptors, the tensor-map encoder
constexpr int BM = ATT3_BM, BN = ATT3_BN, THREADS = 384;

template <typename T, int D> struct Smem {
    T q[BM * D];    // D/64 boxes of [128][64], 16 KB each
    T k[2][BN * D]; // the K ring
    T v[2][BN * D]; // the V ring
    uint64_t q_full, k_full[2], v_full[2], k_empty[2], v_empty[2];
};

// S (64 x 128 keys) = or += Q (64 x 16) . K^T (16 x 128): both K-major.
template <typename T, bool FIRST> __device__ __forceinline__ void mma_qk(float *d, uint64_t dq, uint64_t dk)
{
    constexpr bool BF = std::is_same<T, __nv_bfloat16>::value;
    if constexpr (BF && FIRST)
        KG_WGMMA_M64N128K16_SD("bf16", "0", "0", d, dq, dk);
    else if constexpr (BF)
        KG_WGMMA_M64N128K16_SD("bf16", "0", "1", d, dq, dk);
    else if constexpr (FIRST)
        KG_WGMMA_M64N128K16_SD("f16", "0", "0", d, dq, dk);
    else
        KG_WGMMA_M64N128K16_SD("f16", "0", "1", d, dq, dk);
}

// O (64 x D) += P (64 x 16, registers) . V (16 keys x D, MN-major).
template <typename T, int D> __device__ __forceinline__ void mma_pv(float *d, const uint32_t *p, uint64_t dv)
{
    if constexpr (D == 128) {
        if constexpr (std::is_same<T, __nv_bfloat16>::value)
            KG_WGMMA_RS_M64N128K16("bf16", d, p, dv);
        else
            KG_WGMMA_RS_M64N128K16("f16", d, p, dv);
    } else {
        if constexpr (std::is_same<T, __nv_bfloat16>::value)
            KG_WGMMA_RS_M64N64K16("bf16", d, p, dv);
        else
            KG_WGMMA_RS_M64N64K16("f16", d, p, dv);
    }
}

// S = Q . K^T over D (the first k-step overwrites S): warpgroup cw's rows.
template <typename T, int D> __device__ __forceinline__ void issue_qk(float *sc, const T *q, const T *k, int cw)
{
    mma_qk<T, true>(sc, desc(q + att3_q_off(cw, 0), 16, ATT3_SBO), desc(k + att3_k_off(0), 16, ATT3_SBO));
#pragma unroll
    for (int kk = 1; kk < D / 16; kk++)
        mma_qk<T, false>(sc, desc(q + att3_q_off(cw, kk), 16, ATT3_SBO), desc(k + att3_k_off(kk), 16, ATT3_SBO));
}

// O += P . V over the tile's keys.
template <typename T, int D> __device__ __forceinline__ void issue_pv(float *o, const uint32_t (*p)[4], const T *v)
{
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++)
        mma_pv<T, D>(o, p[kk], desc(v + att3_v_off(kk), ATT3_V_LBO, ATT3_SBO));
}

// The online softmax of key tile kt's scores in place: the mask on the
// diagonal, the quad's row max, exp2, the running sum; alpha the factor the
// O accumulators take.
__device__ __forceinline__ void softmax_scores(float *sc, float *m_run, float *l_run, float *alpha, int t, int cw,
                                               int qt, int kt, int causal, float sl2)
{
    if (att3_needs_mask(qt, kt, causal))
        att3_mask(sc, t, cw, qt, kt, causal);
    float mx[2];
    att3_row_max(sc, m_run, mx);
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
    att3_softmax(sc, mx, m_run, l_run, alpha, sl2);
}

// O rescaled, P packed into the A fragments of the next P.V.
template <typename T>
__device__ __forceinline__ void softmax_apply(const float *sc, float *o, int o_regs, uint32_t (*p)[4],
                                              const float *alpha)
{
    att3_rescale(o, o_regs, alpha);
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
        for (int r = 0; r < 4; r++)
            p[kk][r] = fa::pack2(sc[att3_p_acc(kk, r, 0)], sc[att3_p_acc(kk, r, 1)], T());
}

// The consumers' turns: named barrier 1 + cw (immediate ids, so that ptxas
// counts two), both consumer warpgroups (256 threads).
__device__ __forceinline__ void turn_wait(int cw)
{
    if (cw == 0)
        asm volatile("bar.sync 1, 256;" ::: "memory");
    else
        asm volatile("bar.sync 2, 256;" ::: "memory");
}

__device__ __forceinline__ void turn_pass(int cw)
{
    if (cw == 0)
        asm volatile("bar.arrive 1, 256;" ::: "memory");
    else
        asm volatile("bar.arrive 2, 256;" ::: "memory");
}

// Q, K, V are [B*H*S, D] tensor maps with [128][64] boxes; S % 128 == 0.
template <typename T, int D>
__global__ __launch_bounds__(THREADS, 1) void kernel(const __grid_constant__ CUtensorMap map_q,
                                                     const __grid_constant__ CUtensorMap map_k,
                                                     const __grid_constant__ CUtensorMap map_v, T *O, int S,
                                                     int n_qt, float sl2, int causal)
{
#if KG_SM90A
    constexpr uint32_t TILE_BYTES = BM * D * 2; // = BN * D * 2
    constexpr int BOXES = D / 64, O_REGS = D / 2;
    extern __shared__ __align__(1024) unsigned char raw[];
    Smem<T, D> &sm = *reinterpret_cast<Smem<T, D> *>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~(uintptr_t)1023);
    int bh, qt;
    att3_tile((int)blockIdx.x, n_qt, &bh, &qt);
    const int n_kt = att3_n_kt(qt, n_qt, causal);
    const int row0 = bh * S + qt * BM, key0 = bh * S; // rows of the [B*H*S, D] view
    const int wg = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        mbar_init(&sm.q_full, 1);
        for (int s = 0; s < 2; s++) {
            mbar_init(&sm.k_full[s], 1);
            mbar_init(&sm.v_full[s], 1);
            mbar_init(&sm.k_empty[s], 2);
            mbar_init(&sm.v_empty[s], 2);
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (wg == 0) {
        regs_producer();
        if (threadIdx.x == 0) {
            mbar_expect_tx(&sm.q_full, TILE_BYTES);
            for (int b = 0; b < BOXES; b++)
                tma_load_2d(sm.q + b * BM * 64, &map_q, &sm.q_full, b * 64, row0);
            for (int kt = 0; kt < n_kt; kt++) {
                const int s = kt & 1;
                // stage s last held tile kt - 2: both consumers must be done with it
                if (kt >= 2)
                    mbar_wait(&sm.k_empty[s], ((kt >> 1) - 1) & 1);
                mbar_expect_tx(&sm.k_full[s], TILE_BYTES);
                for (int b = 0; b < BOXES; b++)
                    tma_load_2d(sm.k[s] + b * BN * 64, &map_k, &sm.k_full[s], b * 64, key0 + kt * BN);
                if (kt >= 2)
                    mbar_wait(&sm.v_empty[s], ((kt >> 1) - 1) & 1);
                mbar_expect_tx(&sm.v_full[s], TILE_BYTES);
                for (int b = 0; b < BOXES; b++)
                    tma_load_2d(sm.v[s] + b * BN * 64, &map_v, &sm.v_full[s], b * 64, key0 + kt * BN);
            }
        }
        return;
    }
    regs_consumer();
    const int cw = wg - 1, t = threadIdx.x % 128;
    float o[O_REGS], sc[ATT3_S_REGS];
#pragma unroll
    for (int i = 0; i < O_REGS; i++)
        o[i] = 0.f;
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};
    uint32_t p[BN / 16][4];
    float alpha[2];
    // Turns (named barriers 1 and 2): the consumers issue their GEMMs in
    // alternation, so that one's softmax runs under the other's GEMMs.
    // Warpgroup 0 takes the first turn; each turn passes to the other one,
    // but warpgroup 1's last, which no turn waits for.
    if (cw == 1)
        turn_pass(0);
    mbar_wait(&sm.q_full, 0);
    turn_wait(cw);
    mbar_wait(&sm.k_full[0], 0);
    wgmma_fence();
    issue_qk<T, D>(sc, sm.q, sm.k[0], cw);
    wgmma_commit();
    turn_pass(1 - cw);
    wgmma_wait_all();
    if (t == 0)
        mbar_arrive(&sm.k_empty[0]);
    softmax_scores(sc, m_run, l_run, alpha, t, cw, qt, 0, causal, sl2);
    softmax_apply<T>(sc, o, O_REGS, p, alpha);
    // Each turn: O += P_kt . V_kt and S = Q . K_kt+1^T (one wgmma group),
    // then the softmax of S and the new P. (A second group for P.V, waited
    // for after the softmax, would not overlap them: ptxas 13.0 hoists that
    // wait above the softmax, whose P repacking it guards. Nor may a wgmma
    // sit on a conditional path: ptxas would serialize them all.)
    for (int kt = 0; kt + 1 < n_kt; kt++) {
        const int s = kt & 1, s1 = (kt + 1) & 1;
        turn_wait(cw);
        mbar_wait(&sm.v_full[s], (kt >> 1) & 1);
        mbar_wait(&sm.k_full[s1], ((kt + 1) >> 1) & 1);
        wgmma_fence();
        issue_pv<T, D>(o, p, sm.v[s]);
        issue_qk<T, D>(sc, sm.q, sm.k[s1], cw);
        wgmma_commit();
        turn_pass(1 - cw);
        wgmma_wait_all();
        if (t == 0) {
            mbar_arrive(&sm.v_empty[s]);
            mbar_arrive(&sm.k_empty[s1]);
        }
        softmax_scores(sc, m_run, l_run, alpha, t, cw, qt, kt + 1, causal, sl2);
        softmax_apply<T>(sc, o, O_REGS, p, alpha);
    }
    {
        // the last P.V (its V stage is not released: no load waits for it)
        const int kt = n_kt - 1;
        turn_wait(cw);
        mbar_wait(&sm.v_full[kt & 1], (kt >> 1) & 1);
        wgmma_fence();
        issue_pv<T, D>(o, p, sm.v[kt & 1]);
        wgmma_commit();
        if (cw == 0)
            turn_pass(1);
        wgmma_wait_all();
    }
    // the row sums over the quad; 1/0 (no visible finite score) makes NaN
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
        l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
        inv[r] = 1.f / l_run[r];
    }
    T *orow = O + ((size_t)row0 + cw * ATT3_WG_ROWS) * D;
#pragma unroll
    for (int i = 0; i < O_REGS; i += 2) {
        const int r = (i >> 1) & 1;
        *reinterpret_cast<uint32_t *>(orow + (size_t)att3_acc_row(t, i) * D + att3_acc_col(t, i)) =
            fa::pack2(o[i] * inv[r], o[i + 1] * inv[r], T());
    }
#else
    kg_not_sm90a();
#endif
}

// Whether v3 takes the shape (else v2): D 64 or 128, whole 128-row tiles,
// rows of the [B*H*S, D] view within int (TMA coordinates), 16-byte
// aligned tensors (TMA).
static bool fits(int64_t bh, int64_t S, int64_t D, const void *Q, const void *K, const void *V, const void *O)
{
    return (D == 64 || D == 128) && S > 0 && S % BM == 0 && bh > 0 && bh * S <= 0x7fffffff &&
           aligned16(Q) && aligned16(K) && aligned16(V) && aligned16(O);
}

template <typename T, int D>
static int launch(const T *Q, const T *K, const T *V, T *O, int64_t bh, int S, int causal, cudaStream_t st,
                  const kgate_params *p)
{
    CUtensorMap mq, mk, mv;
    const int64_t rows = bh * S;
    if (make_map<T>(&mq, Q, rows, D, BM) || make_map<T>(&mk, K, rows, D, BN) || make_map<T>(&mv, V, rows, D, BN))
        return kernel_fail(p, 4, "attention v3: cuTensorMapEncodeTiled failed");
    const size_t smem = sizeof(Smem<T, D>) + 1024;
    if (!allow_smem<kernel<T, D>>(smem))
        return kernel_fail(p, 3, "attention v3: cannot get the shared memory");
    const int n_qt = S / BM;
    const float sl2 = (float)(1.4426950408889634 / sqrt((double)D)); // log2(e) / sqrt(D)
    kernel<T, D><<<(unsigned)(bh * n_qt), THREADS, smem, st>>>(mq, mk, mv, O, S, n_qt, sl2, causal);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}
} // namespace fa3

// v3 where it fits, else v2 (which takes v1 where it does not fit).
template <typename T>
static int attn_v3(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p, kgate_stream st)
{
    if (!args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "attention v3: expected Q, K, V [B,H,S,D] -> O [B,H,S,D]");
    if (int rc = need_sm90a(p, "attention v3"))
        return rc;
    const int64_t bh = in[0].shape[0] * in[0].shape[1], S = in[0].shape[2], D = in[0].shape[3];
    const T *Q = (const T *)in[0].data, *K = (const T *)in[1].data, *V = (const T *)in[2].data;
    T *O = (T *)out[0].data;
    if (!fa3::fits(bh, S, D, Q, K, V, O))
        return attn_fused<T, 4, 2>(in, nin, out, nout, p, st);
    const int causal = kgate_scalar_get(p, "causal", 0) != 0;
    if (D == 64)
        return fa3::launch<T, 64>(Q, K, V, O, bh, (int)S, causal, (cudaStream_t)st, p);
    return fa3::launch<T, 128>(Q, K, V, O, bh, (int)S, causal, (cudaStream_t)st, p);
}

} // namespace attn

#define ATTN_V1_SUM "S = Q.K^T written to DRAM in fp32, a softmax pass, then P.V: O(S^2) traffic (NOTC, RC4)"
#define ATTN_V2_SUM "fused FlashAttention-2: mma.sync m16n8k16, online softmax, cp.async K/V tiles, 4 warps x 32 rows"
#define ATTN_V3_SUM                                                                                                \
    "Hopper: TMA K/V ring, wgmma S = Q.K^T from shared memory, P.V with P in registers, 2 consumer warpgroups; "   \
    "v2 off the 128-row grid"

static const kgate_kernel variants[] = {
    {"attention_v1_fp16", "attention", "fp16", NULL, 3, 1, attn::attn_v1<__half>, ATTN_V1_SUM, "causal", NULL},
    {"attention_v2_fp16", "attention", "fp16", NULL, 3, 1, attn::attn_fused<__half, 4, 2>, ATTN_V2_SUM, "causal",
     NULL},
    {"attention_v1_bf16", "attention", "bf16", NULL, 3, 1, attn::attn_v1<__nv_bfloat16>, ATTN_V1_SUM, "causal",
     NULL},
    {"attention_v2_bf16", "attention", "bf16", NULL, 3, 1, attn::attn_fused<__nv_bfloat16, 4, 2>, ATTN_V2_SUM,
     "causal", NULL},
    {"attention_v3_fp16", "attention", "fp16", NULL, 3, 1, attn::attn_v3<__half>, ATTN_V3_SUM, "causal", NULL},
    {"attention_v3_bf16", "attention", "bf16", NULL, 3, 1, attn::attn_v3<__nv_bfloat16>, ATTN_V3_SUM, "causal",
     NULL},
};
KG_EXPORT_VARIANTS(attention, variants)
