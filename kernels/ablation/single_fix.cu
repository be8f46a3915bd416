// Single-fix ablations of the naive variants that plant two defects: each
// kernel here repairs exactly one of its v1's two planted causes and keeps
// the other, so that timing it against v1 measures what that cause costs
// (the paper's Table II: a cause's contribution is the speedup its
// mitigation recovers). The cause whose fix recovers more is the v1's
// primary label, which the diagnosis's confusion matrix compares its top-1
// cause with (docs/diagnosis.md, "Which label comes first").
//
// Not part of the bundled suite (kernels/*.cu only): its own candidate,
// libkgate_ablation.so, judged with `kgate check` like any other
// (scripts/gpu.sh ablation).
//
// max_reduction v1 (RC0a, RC1): one thread per row, a warp's loads COLS apart.
//   max_reduction_fix_rc1:  coalesced, still one thread walking each row: a
//                           block of 64 rows stages 64 x 32 tiles through
//                           shared memory, each warp issuing all 32 loads of
//                           its 32 rows (32 consecutive elements each) before
//                           storing any, then each thread scans its row of the
//                           tile. Grid and work per thread as v1's.
//   max_reduction_fix_rc0a: cooperative, still uncoalesced: 32 threads per
//                           row, each scanning its own contiguous 1/32 of the
//                           row (a warp's loads COLS/32 elements apart),
//                           combined by shuffles.
// index_select v1 (RC2a, RC1): one thread per output row, I threads in all.
//   index_select_fix_rc1:   coalesced, same threads: a warp copies one row at
//                           a time, lanes on consecutive elements, each warp
//                           taking 32 rows in turn.
//   index_select_fix_rc2a:  enough threads, still uncoalesced: 64 threads per
//                           output row, consecutive threads on consecutive
//                           rows (lanes rows apart, as v1's), each copying its
//                           contiguous 1/64 of the row.
// All copy with four loads in flight before the stores and __restrict__
// pointers, as v1's compiled code does.
// attention v1 (NOTC, RC4): S = Q.K^T in DRAM in fp32, a softmax pass, P.V,
// both GEMMs on fp32 FMAs.
//   attention_fix_notc:     v1's three passes, the GEMMs on tensor cores
//                           (WMMA), P written in the inputs' dtype for them.
//   attention_fix_rc4:      the fused algorithm on fp32 FMAs, its loops
//                           tighter than v1's (an upper bound on the fix).
//
// Measured on the H200 (fp16, large preset; docs/diagnosis.md): max_reduction
// v1 2.134 ms, fix_rc1 2.038, fix_rc0a 1.066; index_select v1 838.0 us,
// fix_rc1 213.3, fix_rc2a 135.3; attention v1 33.74 ms, fix_notc 14.21,
// fix_rc4 20.11. So the v1s' labels read (RC0a, RC1), (RC2a, RC1) and (NOTC,
// RC4).
#include <math.h>
#include <stdint.h>

#include <mma.h>

#include <type_traits>

#include "../common.cuh"

// ---------------------------------------------------------------- max_reduction
template <typename T> __device__ __forceinline__ float ab_max(float m, T x)
{
    const float v = to_f(x);
    return v > m || v != v ? v : m; // keeps a NaN once seen
}

template <typename T> __device__ __forceinline__ float ab_max_nan(float a, float b)
{
    return b > a || b != b ? b : a;
}

template <typename T> __global__ void mx_fix_rc1(const T *__restrict__ x, T *__restrict__ y, int64_t rows, int64_t cols)
{
    __shared__ T tile[64][33];
    const int64_t r0 = (int64_t)blockIdx.x * 64;
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32; // 2 warps, 32 rows each
    float m = -INFINITY;
    for (int64_t c0 = 0; c0 < cols; c0 += 32) {
        // coalesced: a warp reads 32 consecutive elements of each of its 32 rows, all 32 loads
        // issued before any is stored (as many bytes in flight as v1's walk, not fewer)
        T v[32];
        const int64_t c = c0 + lane;
#pragma unroll
        for (int q = 0; q < 32; q++) {
            const int64_t r = r0 + w * 32 + q;
            v[q] = r < rows && c < cols ? x[r * cols + c] : from_f<T>(-INFINITY);
        }
#pragma unroll
        for (int q = 0; q < 32; q++)
            tile[w * 32 + q][lane] = v[q];
        __syncthreads();
        for (int j = 0; j < 32; j++) // one thread walks its row, as v1
            m = ab_max<T>(m, tile[threadIdx.x][j]);
        __syncthreads();
    }
    if (r0 + threadIdx.x < rows)
        y[r0 + threadIdx.x] = from_f<T>(m);
}

template <typename T> __global__ void mx_fix_rc0a(const T *__restrict__ x, T *__restrict__ y, int64_t rows, int64_t cols)
{
    const int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    float m = -INFINITY;
    if (r < rows) {
        const int64_t per = (cols + 31) / 32, j0 = lane * per, j1 = j0 + per < cols ? j0 + per : cols;
        const T *xr = x + r * cols;
        for (int64_t j = j0; j < j1; j++) // lanes `per` elements apart: uncoalesced, as v1
            m = ab_max<T>(m, xr[j]);
    }
    for (int o = 16; o > 0; o >>= 1)
        m = ab_max_nan<T>(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0 && r < rows)
        y[r] = from_f<T>(m);
}

template <typename T, int FIX>
static int mx_ab(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p, kgate_stream st)
{
    if (nin != 1 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<T>(&out[0], 1) ||
        out[0].shape[0] != in[0].shape[0])
        return kernel_fail(p, 1, "max_reduction ablation: expected x[R,C] -> y[R]");
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    if (rows == 0)
        return 0;
    if (cols == 0)
        return kernel_fail(p, 1, "max_reduction: rows of no elements have no maximum");
    cudaStream_t s = (cudaStream_t)st;
    const T *x = (const T *)in[0].data;
    T *y = (T *)out[0].data;
    if (FIX == 1)
        mx_fix_rc1<T><<<(unsigned)((rows + 63) / 64), 64, 0, s>>>(x, y, rows, cols);
    else
        mx_fix_rc0a<T><<<(unsigned)((rows * 32 + 255) / 256), 256, 0, s>>>(x, y, rows, cols);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- index_select
template <typename T, typename I>
__device__ __forceinline__ void isel_span(const T *__restrict__ src, const I *__restrict__ idx, T *__restrict__ out,
                                          int64_t rows, int64_t d, int64_t i, int64_t j0, int64_t j1, int64_t step)
{
    const int64_t k = (int64_t)idx[i];
    T *o = out + i * d;
    if (k < 0 || k >= rows) {
        for (int64_t j = j0; j < j1; j += step)
            o[j] = from_f<T>(NAN);
        return;
    }
    const T *r = src + k * d;
    int64_t j = j0;
    for (; j + 3 * step < j1; j += 4 * step) { // four loads in flight before the stores, as v1's code has
        const T a = r[j], b = r[j + step], c = r[j + 2 * step], e = r[j + 3 * step];
        o[j] = a, o[j + step] = b, o[j + 2 * step] = c, o[j + 3 * step] = e;
    }
    for (; j < j1; j += step)
        o[j] = r[j];
}

template <typename T, typename I>
__global__ void isel_fix_rc1(const T *__restrict__ src, const I *__restrict__ idx, T *__restrict__ out, int64_t rows,
                             int64_t d, int64_t n)
{
    // v1's threads (one per output row), regrouped: warp w copies rows 32w..32w+31, coalesced
    const int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    for (int64_t i = w * 32; i < n && i < w * 32 + 32; i++)
        isel_span<T, I>(src, idx, out, rows, d, i, lane, d, 32);
}

template <typename T, typename I>
__global__ void isel_fix_rc2a(const T *__restrict__ src, const I *__restrict__ idx, T *__restrict__ out, int64_t rows,
                              int64_t d, int64_t n)
{
    // 64 threads a row; consecutive threads on consecutive rows (t % n), so that a warp's lanes
    // are rows apart, as v1's
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, i = t % n, part = t / n;
    if (part >= 64)
        return;
    const int64_t per = (d + 63) / 64, j0 = part * per, j1 = j0 + per < d ? j0 + per : d;
    isel_span<T, I>(src, idx, out, rows, d, i, j0, j1, 1);
}

template <typename T, int FIX>
static int isel_ab(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p, kgate_stream st)
{
    if (nin != 2 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<int64_t>(&in[1], 1) || !dl_is<T>(&out[0], 2) ||
        out[0].shape[0] != in[1].shape[0] || out[0].shape[1] != in[0].shape[1])
        return kernel_fail(p, 1, "index_select ablation: expected src[S,D], idx[I] -> out[I,D]");
    const int64_t rows = in[0].shape[0], d = in[0].shape[1], n = in[1].shape[0];
    if (n == 0 || d == 0)
        return 0;
    cudaStream_t s = (cudaStream_t)st;
    const T *src = (const T *)in[0].data;
    const int64_t *idx = (const int64_t *)in[1].data;
    T *o = (T *)out[0].data;
    if (FIX == 1) // v1's grid: n threads, 256 a block
        isel_fix_rc1<T, int64_t><<<(unsigned)((n + 255) / 256), 256, 0, s>>>(src, idx, o, rows, d, n);
    else
        isel_fix_rc2a<T, int64_t><<<(unsigned)((n * 64 + 255) / 256), 256, 0, s>>>(src, idx, o, rows, d, n);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}


// ---------------------------------------------------------------- attention
// v1 (NOTC, RC4): S = Q.K^T to DRAM in fp32, a softmax pass, O = P.V, both
// GEMMs on fp32 FMAs. Q, K, V, O are [B,H,S,D]; these take S a multiple of
// 64 and D of 64 or 128 (the presets), and fail any other shape.

// A softmax pass as v1's, P written in place in fp32 as v1 writes it, and
// in the inputs' dtype (what the tensor cores read) to p: row i of a head
// sees keys j < S, or j <= i when causal.
template <typename T>
__global__ __launch_bounds__(256) void at_softmax_to(float *__restrict__ sc, T *__restrict__ p, int64_t rows, int S,
                                                     int causal)
{
    __shared__ float red[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        float *s = sc + (size_t)row * S;
        T *o = p + (size_t)row * S;
        const int i = (int)(row % S), n = causal ? i + 1 : S;
        float m = -INFINITY, sum = 0.f;
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            m = fmaxf(m, s[j]);
        m = block_max(m, red);
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            sum += expf(s[j] - m);
        const float inv = 1.f / block_sum(sum, red);
        for (int j = threadIdx.x; j < S; j += blockDim.x) {
            const float v = j < n ? expf(s[j] - m) * inv : 0.f;
            s[j] = v; /* in place, as v1 writes it: the ablation moves no fewer bytes than v1 */
            o[j] = from_f<T>(v);
        }
    }
}

// C[z] (M x N) = alpha * A[z] (M x K, row-major) . B(z), on tensor cores (WMMA
// m16n16k16, fp32 accumulate): B(z) is Bm[z] as [N][K] row-major (BT: K's
// rows, for Q.K^T) or [K][N] row-major (V, for P.V). A 64x64 tile of C a
// block of 4 warps, 32x32 a warp; operands read straight from global memory.
template <typename T, typename TC, bool BT>
__global__ __launch_bounds__(128) void at_wmma(const T *__restrict__ A, const T *__restrict__ Bm, TC *__restrict__ C,
                                               int M, int N, int K, float alpha, int tiles_n)
{
    using namespace nvcuda;
    const int64_t per_z = (int64_t)(M / 64) * tiles_n;
    const int64_t z = blockIdx.x / per_z;
    const int rem = (int)(blockIdx.x % per_z), w = threadIdx.x / 32;
    const int m0 = (rem / tiles_n) * 64 + (w / 2) * 32, n0 = (rem % tiles_n) * 64 + (w % 2) * 32;
    A += (size_t)z * M * K;
    Bm += (size_t)z * K * N;
    C += (size_t)z * M * N;
    using BL = typename std::conditional<BT, wmma::col_major, wmma::row_major>::type;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            wmma::fill_fragment(acc[i][j], 0.f);
    for (int k0 = 0; k0 < K; k0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, BL> b[2];
        for (int i = 0; i < 2; i++)
            wmma::load_matrix_sync(a[i], A + (size_t)(m0 + 16 * i) * K + k0, K);
        for (int j = 0; j < 2; j++) {
            if constexpr (BT)
                wmma::load_matrix_sync(b[j], Bm + (size_t)(n0 + 16 * j) * K + k0, K);
            else
                wmma::load_matrix_sync(b[j], Bm + (size_t)k0 * N + n0 + 16 * j, N);
        }
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __shared__ float st[4][16 * 16];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            for (int e = 0; e < acc[i][j].num_elements; e++)
                acc[i][j].x[e] *= alpha;
            if constexpr (std::is_same<TC, float>::value) {
                wmma::store_matrix_sync(C + (size_t)(m0 + 16 * i) * N + n0 + 16 * j, acc[i][j], N,
                                        wmma::mem_row_major);
            } else {
                wmma::store_matrix_sync(st[w], acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = threadIdx.x % 32; e < 256; e += 32)
                    C[(size_t)(m0 + 16 * i + e / 16) * N + n0 + 16 * j + e % 16] = from_f<TC>(st[w][e]);
                __syncwarp();
            }
        }
}

static void *at_buf_s, *at_buf_p;
static size_t at_have_s, at_have_p;

// attention_fix_notc: v1's algorithm (S in DRAM in fp32, a softmax pass, P
// read again), its GEMMs on tensor cores (P in the inputs' dtype for them).
template <typename T>
static int at_fix_notc(const T *Q, const T *Kt, const T *V, T *O, int64_t bh, int S, int D, int causal,
                       cudaStream_t s, const kgate_params *p)
{
    float *sc = (float *)scratch_get(&at_buf_s, &at_have_s, (size_t)bh * S * S * sizeof(float));
    T *pm = (T *)scratch_get(&at_buf_p, &at_have_p, (size_t)bh * S * S * sizeof(T));
    if (!sc || !pm)
        return kernel_fail(p, (int)cudaErrorMemoryAllocation, "attention ablation: no room for S and P");
    const int ts = S / 64, td = D / 64;
    at_wmma<T, float, true><<<(unsigned)(bh * ts * ts), 128, 0, s>>>(Q, Kt, sc, S, S, D,
                                                                     (float)(1.0 / sqrt((double)D)), ts);
    KG_KERNEL_LAUNCHED(p);
    const int64_t rows = bh * S;
    at_softmax_to<T><<<wave_grid<at_softmax_to<T>, 256>(rows), 256, 0, s>>>(sc, pm, rows, S, causal);
    KG_KERNEL_LAUNCHED(p);
    at_wmma<T, T, false><<<(unsigned)(bh * ts * td), 128, 0, s>>>(pm, V, O, S, D, S, 1.f, td);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// attention_fix_rc4: the fused algorithm (FlashAttention's: 64 queries a
// block, 64-key tiles of K and V through shared memory, an online softmax,
// nothing of S in DRAM), its products on fp32 FMAs as v1's: 256 threads,
// each 4 rows x 4 keys of S and 4 rows x D/16 columns of O. Its FMA loops
// are tighter than v1_gemm's (whole tiles between barriers, 16-byte shared
// reads without bank conflicts), so what it recovers is an upper bound on
// what the fused algorithm alone recovers; attention_fix_notc's WMMA GEMMs
// read their fragments straight from memory, unpipelined, a lower bound on
// what tensor cores alone recover. NOTC is first only if it wins even so.
template <typename T, int D>
__global__ __launch_bounds__(256) void at_fused_fma(const T *__restrict__ Q, const T *__restrict__ K,
                                                    const T *__restrict__ V, T *__restrict__ O, int S, int causal,
                                                    float scale)
{
    extern __shared__ float sm[];
    float *Qs = sm;              // [D][64]: Qs[d][row]
    float *Ks = Qs + D * 64;     // [D][64]: Ks[d][key]
    float *Vs = Ks + D * 64;     // [64][D]: Vs[key][d]
    float *Ps = Vs + 64 * D;     // [64][65]: Ps[key][row]
    constexpr int DC = D / 16;   // O columns a thread: 4 in each 64-column group, interleaved
    // Qs and Ks are written with consecutive threads on consecutive d: an XOR
    // swizzle of the row by d spreads those stores over 8 banks instead of 1
#define SW(d) (((d) & 7) << 2)
    // thread tx's O and V columns: 4 contiguous in each group of 64 (16-byte reads, no bank conflict)
#define COL(c) (((c) / 4) * 64 + tx * 4 + (c) % 4)
    const int nq = S / 64, tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t z = blockIdx.x / nq;
    const int q0 = (int)(blockIdx.x % nq) * 64;
    Q += (size_t)z * S * D, K += (size_t)z * S * D, V += (size_t)z * S * D, O += (size_t)z * S * D;
    for (int e = threadIdx.x; e < 64 * D; e += 256) {
        const int r = e / D, d = e % D;
        Qs[d * 64 + (r ^ SW(d))] = to_f(Q[(size_t)(q0 + r) * D + d]);
    }
    float o[4][DC] = {}, m[4], l[4];
    for (int i = 0; i < 4; i++)
        m[i] = -INFINITY, l[i] = 0.f;
    const int kend = causal ? q0 + 64 : S;
    for (int k0 = 0; k0 < kend; k0 += 64) {
        __syncthreads(); // the previous tile's P.V is done with Ks, Vs, Ps
        for (int e = threadIdx.x; e < 64 * D; e += 256) {
            const int r = e / D, d = e % D;
            Ks[d * 64 + (r ^ SW(d))] = to_f(K[(size_t)(k0 + r) * D + d]);
            Vs[r * D + d] = to_f(V[(size_t)(k0 + r) * D + d]);
        }
        __syncthreads();
        float sc[4][4] = {};
        for (int d = 0; d < D; d++) {
            float a[4], b[4];
            for (int i = 0; i < 4; i++) /* (4t + i) ^ SW(d) = 4 (t ^ (d & 7)) + i */
                a[i] = Qs[d * 64 + (ty ^ (d & 7)) * 4 + i], b[i] = Ks[d * 64 + (tx ^ (d & 7)) * 4 + i];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    sc[i][j] = fmaf(a[i], b[j], sc[i][j]);
        }
        for (int i = 0; i < 4; i++) {
            const int row = q0 + ty * 4 + i;
            float tmax = -INFINITY;
            for (int j = 0; j < 4; j++) {
                const int key = k0 + tx * 4 + j;
                sc[i][j] = causal && key > row ? -INFINITY : sc[i][j] * scale;
                tmax = fmaxf(tmax, sc[i][j]);
            }
            for (int off = 8; off > 0; off >>= 1) // a row's 16 threads: lanes (ty & 1) * 16.. of a warp
                tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, off));
            const float mn = fmaxf(m[i], tmax);
            const float alpha = mn == -INFINITY ? 1.f : expf(m[i] - mn);
            float rs = 0.f;
            for (int j = 0; j < 4; j++) {
                const float pv = mn == -INFINITY ? 0.f : expf(sc[i][j] - mn);
                Ps[(tx * 4 + j) * 65 + ty * 4 + i] = pv;
                rs += pv;
            }
            for (int off = 8; off > 0; off >>= 1)
                rs += __shfl_xor_sync(0xffffffffu, rs, off);
            l[i] = l[i] * alpha + rs;
            m[i] = mn;
            for (int c = 0; c < DC; c++)
                o[i][c] *= alpha;
        }
        __syncthreads();
        for (int key = 0; key < 64; key++) {
            float a[4], b[DC];
            for (int i = 0; i < 4; i++)
                a[i] = Ps[key * 65 + ty * 4 + i];
            for (int c = 0; c < DC; c++)
                b[c] = Vs[key * D + COL(c)];
            for (int i = 0; i < 4; i++)
                for (int c = 0; c < DC; c++)
                    o[i][c] = fmaf(a[i], b[c], o[i][c]);
        }
    }
    for (int i = 0; i < 4; i++)
        for (int c = 0; c < DC; c++)
            O[(size_t)(q0 + ty * 4 + i) * D + COL(c)] = from_f<T>(o[i][c] / l[i]);
}

#undef SW
#undef COL

template <typename T, int D>
static int at_fix_rc4_d(const T *Q, const T *Kt, const T *V, T *O, int64_t bh, int S, int causal, cudaStream_t s,
                        const kgate_params *p)
{
    const size_t smem = sizeof(float) * (3 * 64 * D + 64 * 65);
    cudaError_t e = cudaFuncSetAttribute(at_fused_fma<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess)
        return kernel_fail(p, (int)e, cudaGetErrorString(e));
    at_fused_fma<T, D><<<(unsigned)(bh * (S / 64)), 256, smem, s>>>(Q, Kt, V, O, S, causal,
                                                                   (float)(1.0 / sqrt((double)D)));
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

template <typename T, int FIX>
static int at_ab(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p, kgate_stream st)
{
    bool ok = nin == 3 && nout == 1;
    for (int i = 0; ok && i < 4; i++) {
        const DLTensor *t = i < 3 ? &in[i] : &out[0];
        ok = dl_is<T>(t, 4);
        for (int d = 0; ok && d < 4; d++)
            ok = t->shape[d] == in[0].shape[d];
    }
    if (!ok)
        return kernel_fail(p, 1, "attention ablation: expected Q, K, V [B,H,S,D] -> O [B,H,S,D]");
    const int64_t bh = in[0].shape[0] * in[0].shape[1], S = in[0].shape[2], D = in[0].shape[3];
    if (S % 64 || S > (1 << 20) || (D != 64 && D != 128) || bh * (S / 64) * (S / 64) > 0x7fffffff)
        return kernel_fail(p, 2, "attention ablation: S a multiple of 64 and D of 64 or 128 only");
    const T *q = (const T *)in[0].data, *k = (const T *)in[1].data, *v = (const T *)in[2].data;
    T *o = (T *)out[0].data;
    const int causal = kgate_scalar_get(p, "causal", 0) != 0;
    cudaStream_t s = (cudaStream_t)st;
    if (FIX == 0)
        return at_fix_notc<T>(q, k, v, o, bh, (int)S, (int)D, causal, s, p);
    return D == 64 ? at_fix_rc4_d<T, 64>(q, k, v, o, bh, (int)S, causal, s, p)
                   : at_fix_rc4_d<T, 128>(q, k, v, o, bh, (int)S, causal, s, p);
}

static const kgate_kernel kernels[] = {
    {"max_reduction_fix_rc1_fp16", "max_reduction", "fp16", NULL, 1, 1, mx_ab<__half, 1>,
     "v1 with coalesced loads (64 x 32 tiles through shared memory, 32 loads in flight a lane), still one thread "
     "walking each row",
     NULL, NULL},
    {"max_reduction_fix_rc0a_fp16", "max_reduction", "fp16", NULL, 1, 1, mx_ab<__half, 0>,
     "v1 with 32 threads per row and a shuffle reduction, each thread's span contiguous (loads still COLS/32 "
     "apart)",
     NULL, NULL},
    {"index_select_fix_rc1_fp16", "index_select", "fp16", NULL, 2, 1, isel_ab<__half, 1>,
     "v1's threads regrouped: a warp copies a row at a time, coalesced; still I threads in all", NULL, NULL},
    {"index_select_fix_rc2a_fp16", "index_select", "fp16", NULL, 2, 1, isel_ab<__half, 0>,
     "64 threads per output row, each copying a contiguous 1/64, consecutive threads on consecutive rows (lanes "
     "rows apart)",
     NULL, NULL},
    {"attention_fix_notc_fp16", "attention", "fp16", NULL, 3, 1, at_ab<__half, 0>,
     "v1's algorithm (S in DRAM in fp32, a softmax pass, P read again), its GEMMs on tensor cores (WMMA)",
     "causal", NULL},
    {"attention_fix_rc4_fp16", "attention", "fp16", NULL, 3, 1, at_ab<__half, 1>,
     "the fused algorithm (64-key tiles, an online softmax, no S in DRAM), its products on fp32 FMAs as v1's",
     "causal", NULL},
};
static const kgate_plugin plugin = KGATE_PLUGIN(kernels);
extern "C" const kgate_plugin *kgate_plugin_v2(void) { return &plugin; }
