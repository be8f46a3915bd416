// conv2d (NCHW: x[N,C,H,W], w[K,C/G,R,S] -> y[N,K,P,Q]) and conv2d_nhwc
// (x[N,H,W,C], w[K,R,S,C/G] -> y[N,P,Q,K]): forward 2-D convolution as
// cross-correlation, fp16/bf16 in and out, fp32 accumulate. Stride, padding
// and groups arrive as the scalars stride, pad, groups (bound to the shape:
// src/ops/conv2d.h); P = (H + 2 pad - R) / stride + 1, Q likewise.
//
// The fp64 references are src/ops/conv2d.cu.
//
// v1 naive (NOTC, RC1): direct convolution, one thread an output, fp32 FMA
//            on converted operands: no tensor cores, and each thread
//            gathers its window element by element (2-byte loads, strided
//            by the stride: the unvectorized window gathers of the paper's
//            RC1). Any geometry, groups and depthwise included.
// v2:        implicit GEMM on the tensor cores: rows m = (n, p, q), columns
//            the K output channels, reduction e = (r, s, c) over a
//            channels-last input. 16-byte cp.async gathers of the im2col
//            tile (zero-filled outside the image) and of the filter into a
//            4-stage shared-memory ring; ldmatrix, mma.sync m16n8k16 with
//            fp32 accumulators; 128x128x32 block tiles of four 64x64 warp
//            tiles; the epilogue stages the tile through shared memory for
//            16-byte (NHWC) or coalesced per-channel (NCHW) stores. NHWC x
//            with C % 8 == 0 is read in place; NCHW x (and NHWC with other
//            C) is first copied to channels-last with C padded to a
//            multiple of 8, w likewise to KRSC: one extra pass over x.
//            groups > 1 (depthwise included) falls back to v1, as do shapes
//            whose offsets would pass 2^31 elements.
// v3 fast:   Hopper (sm_90a) implicit GEMM with TMA and wgmma, the same rows
//            (n, p, q) x channels k over (r, s, c), on channels-last x
//            (NCHW x, and its KCRS w, are first copied as v2 copies them).
//            A block tile is 128 output pixels x BN = 256 channels (128 when
//            K % 256 != 0); its pixels are BH output rows of BW columns of
//            one image (BW BH = 128), so that the A operand of reduction
//            step (r, s, 64-channel block) is ONE 4-D TMA box of x viewed as
//            [N][H][W][C]: {64 channels, BW U columns, BH U rows, 1 image}
//            at signed coordinates (c0, q0 U + s - pad, p0 U + r - pad, n),
//            element strides {1, U, U, 1} for stride U; TMA's zero fill
//            outside x is the padding. It lands as the [128][64] K-major,
//            128-byte-swizzled tile the GEMMs' descriptors read. B is a
//            {64, BN} box of the filter as [K][R S C]. A persistent grid (one
//            block an SM) walks the tiles: a producer warpgroup (one thread
//            issuing the TMA copies into a 4-stage mbarrier ring that runs on
//            across tiles) and two consumer warpgroups of 64 pixels each,
//            four wgmma m64nBNk16 a step (A and B K-major), one wgmma group
//            in flight. Epilogue through a per-warpgroup 64x64 shared chunk:
//            16-byte stores along K (NHWC) or along q (NCHW: a tile's pixels
//            are consecutive in one image, so a channel's 128 outputs are
//            contiguous). Taken when groups == 1, C % 64 == 0,
//            K % 128 == 0, Q % 128 == 0 or (Q divides 128 and 128 / Q
//            divides P), stride <= 8 with boxes <= 256 elements, and x, w, y
//            16-byte aligned: the presets medium, large, f1x1, f5x5, f7x7
//            and s2. Everything else (small: Q = 56, K = 64; dw: groups)
//            runs v2 (and v2's own fallback, v1). The tiling and its index
//            functions are kernels/conv2d_v3.h, which tests/test_conv2d.c
//            runs on the CPU against the direct convolution.
#include <stdint.h>

#include <type_traits>

#include "common.cuh"
#include "conv2d_v3.h"
#include "sm90_tma.cuh"
#include "wgmma_m64n128k16.cuh"
#include "wgmma_m64n256k16.cuh"

// Geometry of one call, read from the tensors and the bound scalars.
struct CvGeo {
    int N, C, H, W, K, R, S, U, pad, G, P, Q;
};

// Fills g from the call; false when tensors and scalars do not describe one
// convolution of dtype T in this layout.
template <typename T>
static bool cv_geo(const DLTensor *in, int nin, const DLTensor *out, int nout, bool nhwc,
                   const kgate_params *p, CvGeo *g)
{
    if (nin != 2 || nout != 1 || !dl_is<T>(&in[0], 4) || !dl_is<T>(&in[1], 4) || !dl_is<T>(&out[0], 4))
        return false;
    const int64_t *x = in[0].shape, *w = in[1].shape, *y = out[0].shape;
    const double lim = 2147483647.0;
    double u = kgate_scalar_get(p, "stride", 0), pd = kgate_scalar_get(p, "pad", -1),
           gr = kgate_scalar_get(p, "groups", 0);
    if (!(u >= 1 && u <= lim && pd >= 0 && pd <= lim && gr >= 1 && gr <= lim))
        return false;
    for (int i = 0; i < 4; i++)
        if (x[i] < 1 || x[i] > lim || w[i] < 1 || w[i] > lim || y[i] < 1 || y[i] > lim)
            return false;
    int64_t C = nhwc ? x[3] : x[1], Cg = nhwc ? w[3] : w[1];
    int64_t H = nhwc ? x[1] : x[2], W = nhwc ? x[2] : x[3], R = nhwc ? w[1] : w[2], S = nhwc ? w[2] : w[3];
    int64_t U = (int64_t)u, pad = (int64_t)pd, G = (int64_t)gr, K = w[0];
    if (Cg * G != C || K % G || H + 2 * pad < R || W + 2 * pad < S)
        return false;
    int64_t P = (H + 2 * pad - R) / U + 1, Q = (W + 2 * pad - S) / U + 1;
    int64_t want[4] = {x[0], nhwc ? P : K, nhwc ? Q : P, nhwc ? K : Q};
    for (int i = 0; i < 4; i++)
        if (y[i] != want[i])
            return false;
    *g = {(int)x[0], (int)C, (int)H, (int)W, (int)K, (int)R, (int)S, (int)U, (int)pad, (int)G, (int)P, (int)Q};
    return true;
}

static const char *cv_usage(bool nhwc)
{
    return nhwc ? "conv2d_nhwc: expected x[N,H,W,C], w[K,R,S,C/groups] -> y[N,P,Q,K] of the kernel's "
                  "dtype and the scalars stride, pad, groups"
                : "conv2d: expected x[N,C,H,W], w[K,C/groups,R,S] -> y[N,K,P,Q] of the kernel's dtype "
                  "and the scalars stride, pad, groups";
}

// ---------------------------------------------------------------- v1 naive
template <typename T, bool NHWC>
__global__ __launch_bounds__(256) void cv_v1_kernel(const T *x, const T *w, T *y, CvGeo g)
{
    const int64_t total = (int64_t)g.N * g.K * g.P * g.Q;
    const int Cg = g.C / g.G, Kg = g.K / g.G;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int n, k, p, q; // i is y's own element index in either layout
        if (NHWC) {
            k = (int)(i % g.K);
            q = (int)(i / g.K % g.Q);
            p = (int)(i / ((int64_t)g.K * g.Q) % g.P);
            n = (int)(i / ((int64_t)g.K * g.Q * g.P));
        } else {
            q = (int)(i % g.Q);
            p = (int)(i / g.Q % g.P);
            k = (int)(i / ((int64_t)g.Q * g.P) % g.K);
            n = (int)(i / ((int64_t)g.Q * g.P * g.K));
        }
        const int c0 = k / Kg * Cg, h0 = p * g.U - g.pad, w0 = q * g.U - g.pad;
        float acc = 0.f;
        if (NHWC) {
            for (int r = 0; r < g.R; r++) {
                const int h = h0 + r;
                if (h < 0 || h >= g.H)
                    continue;
                for (int s = 0; s < g.S; s++) {
                    const int v = w0 + s;
                    if (v < 0 || v >= g.W)
                        continue;
                    const T *xp = x + (((int64_t)n * g.H + h) * g.W + v) * g.C + c0;
                    const T *wp = w + (((int64_t)k * g.R + r) * g.S + s) * Cg;
                    for (int c = 0; c < Cg; c++)
                        acc = fmaf(to_f(xp[c]), to_f(wp[c]), acc);
                }
            }
        } else {
            for (int c = 0; c < Cg; c++) {
                const T *xc = x + ((int64_t)n * g.C + c0 + c) * g.H * g.W;
                const T *wc = w + ((int64_t)k * Cg + c) * g.R * g.S;
                for (int r = 0; r < g.R; r++) {
                    const int h = h0 + r;
                    if (h < 0 || h >= g.H)
                        continue;
                    for (int s = 0; s < g.S; s++) {
                        const int v = w0 + s;
                        if (v >= 0 && v < g.W)
                            acc = fmaf(to_f(xc[(int64_t)h * g.W + v]), to_f(wc[r * g.S + s]), acc);
                    }
                }
            }
        }
        y[i] = from_f<T>(acc);
    }
}

template <typename T, bool NHWC>
static void cv_v1_launch(const T *x, const T *w, T *y, const CvGeo &g, cudaStream_t s)
{
    int64_t blocks = ((int64_t)g.N * g.K * g.P * g.Q + 255) / 256;
    cv_v1_kernel<T, NHWC><<<(unsigned)(blocks < (1 << 22) ? blocks : (1 << 22)), 256, 0, s>>>(x, w, y, g);
}

template <typename T, bool NHWC>
static int cv_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p, kgate_stream st)
{
    CvGeo g;
    if (!cv_geo<T>(in, nin, out, nout, NHWC, p, &g))
        return kernel_fail(p, 1, cv_usage(NHWC));
    cv_v1_launch<T, NHWC>((const T *)in[0].data, (const T *)in[1].data, (T *)out[0].data, g,
                          (cudaStream_t)st);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 (mma.sync)
namespace cv2 {
constexpr int BM = 128, BN = 128, BK = 32, STAGES = 4, THREADS = 128;
constexpr int LDS = BK + 8; // 80-byte rows: ldmatrix's eight row reads hit eight bank groups
constexpr int STAGE = (BM + BN) * LDS;
constexpr size_t SMEM = (size_t)STAGES * STAGE * 2;
constexpr int LDC_NHWC = BN + 8; // 272-byte rows: 16-byte aligned for the vector stores
constexpr int LDC_NCHW = BN + 2; // 65-word rows: a column read hits 32 banks

// What the GEMM kernel needs: a channels-last x [N][H][W][Cp] and w [K][R][S][Cp]
// (Cp % 8 == 0), y in the operator's layout.
template <typename T> struct Args {
    const T *x, *w;
    T *y;
    int N, H, W, Cp, K, R, S, U, pad, P, Q;
    int M, Kr;    // N P Q rows, R S Cp reduction
    int tiles_n;  // output-channel tiles
    bool vec_out; // NHWC y: 16-byte stores
};

__device__ __forceinline__ unsigned smem_u32(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared, or 16 zero bytes when !ok (nothing is read).
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
                 "r"(ok ? 16 : 0)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldsm_x4(uint32_t *r, const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p))
                 : "memory");
}

// d += a (16x16, row) . b (16x8, col), fp32 accumulators.
__device__ __forceinline__ void mma(float *d, const uint32_t *a, uint32_t b0, uint32_t b1, __half)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma(float *d, const uint32_t *a, uint32_t b0, uint32_t b1, __nv_bfloat16)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One block: output rows [m0, m0 + 128) x channels [n0, n0 + 128). Thread t
// loads rows t/4 + 32j (j < 4) of both tiles, 8 elements at column 8 (t%4).
template <typename T, bool NCHW_OUT>
__global__ __launch_bounds__(THREADS, 2) void igemm(const Args<T> a)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *sm = reinterpret_cast<T *>(smem_raw);
    const int tid = threadIdx.x, lane = tid % 32, wm = tid / 64, wn = tid / 32 % 2;
    const int n0 = (int)(blockIdx.x % a.tiles_n) * BN, m0 = (int)(blockIdx.x / a.tiles_n) * BM;
    const int PQ = a.P * a.Q, kc = tid % 4;

    // where this thread's four im2col rows and four filter rows start
    int a_nh[4], a_h0[4], a_w0[4];
    bool a_ok[4], b_ok[4];
    const T *b_src[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int m = m0 + tid / 4 + 32 * j, mm = m < a.M ? m : 0;
        const int n = mm / PQ, pq = mm - n * PQ, p = pq / a.Q, q = pq - p * a.Q;
        a_ok[j] = m < a.M;
        a_nh[j] = n * a.H;
        a_h0[j] = p * a.U - a.pad;
        a_w0[j] = q * a.U - a.pad;
        const int ko = n0 + tid / 4 + 32 * j;
        b_ok[j] = ko < a.K;
        b_src[j] = a.w + (int64_t)(ko < a.K ? ko : 0) * a.Kr;
    }

    // k-tile kt into ring slot `stage`: reduction index e = (r, s, c), the
    // 8 channels at e never cross an (r, s) since Cp % 8 == 0
    auto load = [&](int stage, int kt) {
        T *sa = sm + stage * STAGE, *sb = sa + BM * LDS;
        const int e = kt * BK + kc * 8, rs = e / a.Cp, c = e - rs * a.Cp, r = rs / a.S, s = rs - r * a.S;
        const bool e_ok = e < a.Kr;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int row = tid / 4 + 32 * j, h = a_h0[j] + r, v = a_w0[j] + s;
            const bool ok = e_ok && a_ok[j] && (unsigned)h < (unsigned)a.H && (unsigned)v < (unsigned)a.W;
            const T *src = ok ? a.x + ((int64_t)(a_nh[j] + h) * a.W + v) * a.Cp + c : a.x;
            cp_async16(sa + row * LDS + kc * 8, src, ok);
            const bool okb = e_ok && b_ok[j];
            cp_async16(sb + row * LDS + kc * 8, okb ? b_src[j] + e : a.w, okb);
        }
    };

    const int KT = (a.Kr + BK - 1) / BK;
#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (st < KT)
            load(st, st);
        cp_async_commit();
    }
    float acc[4][8][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int k = 0; k < 4; k++)
                acc[i][j][k] = 0.f;

    for (int kt = 0; kt < KT; kt++) {
        // tile kt has landed (at most STAGES-2 younger groups in flight), and
        // every warp is done with the slot the next load overwrites
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (kt + STAGES - 1 < KT)
            load((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
        cp_async_commit();
        const T *sa = sm + (kt % STAGES) * STAGE, *sb = sa + BM * LDS;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            uint32_t af[4][4], bf[4][4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                ldsm_x4(af[i], sa + (wm * 64 + i * 16 + lane % 16) * LDS + kk + lane / 16 * 8);
#pragma unroll
            for (int j = 0; j < 4; j++)
                ldsm_x4(bf[j], sb + (wn * 64 + j * 16 + (lane & 7) + (lane >> 4 << 3)) * LDS + kk +
                                   ((lane >> 3) & 1) * 8);
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    mma(acc[i][j], af[i], bf[j / 2][j % 2 * 2], bf[j / 2][j % 2 * 2 + 1], T());
        }
    }
    cp_async_wait<0>();
    __syncthreads(); // the ring is free: the tile goes through it

    constexpr int LDC = NCHW_OUT ? LDC_NCHW : LDC_NHWC;
    T *tile = sm;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int row = wm * 64 + i * 16 + lane / 4, col = wn * 64 + j * 8 + lane % 4 * 2;
            tile[row * LDC + col] = from_f<T>(acc[i][j][0]);
            tile[row * LDC + col + 1] = from_f<T>(acc[i][j][1]);
            tile[(row + 8) * LDC + col] = from_f<T>(acc[i][j][2]);
            tile[(row + 8) * LDC + col + 1] = from_f<T>(acc[i][j][3]);
        }
    __syncthreads();
    if (NCHW_OUT) {
        // thread t writes output pixel m0 + t, channel by channel: a warp
        // stores 32 neighbouring pixels of one channel
        const int m = m0 + tid;
        if (m < a.M) {
            const int n = m / PQ, pq = m - n * PQ;
            T *yp = a.y + (int64_t)n * a.K * PQ + pq;
            for (int kl = 0; kl < BN && n0 + kl < a.K; kl++)
                yp[(int64_t)(n0 + kl) * PQ] = tile[tid * LDC + kl];
        }
    } else {
        // row m of the tile is 128 channels of one pixel, contiguous in y
        const int vec = tid % 16, k = n0 + vec * 8;
        for (int i = 0; i < BM / 8; i++) {
            const int ml = tid / 16 + 8 * i, m = m0 + ml;
            if (m >= a.M || k >= a.K)
                continue;
            T *dst = a.y + (int64_t)m * a.K + k;
            const T *src = tile + ml * LDC + vec * 8;
            if (a.vec_out && k + 8 <= a.K)
                *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
            else
                for (int c = 0; c < 8 && k + c < a.K; c++)
                    dst[c] = src[c];
        }
    }
}

// Channels-last copies with C padded to Cp (16-bit elements moved as bits;
// the padding is +0 in fp16 and bf16 alike).
// NCHW x -> [N][H*W][Cp]: 32x32 tiles of one image, transposed in shared memory.
__global__ __launch_bounds__(256) void nchw_to_cl(const uint16_t *x, uint16_t *xt, int C, int HW, int Cp)
{
    __shared__ uint16_t t[32][33];
    const int hw0 = blockIdx.x * 32, c0 = blockIdx.y * 32;
    const uint16_t *xn = x + (int64_t)blockIdx.z * C * HW;
    uint16_t *tn = xt + (int64_t)blockIdx.z * HW * Cp;
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int c = c0 + i, hw = hw0 + threadIdx.x;
        t[i][threadIdx.x] = c < C && hw < HW ? xn[(int64_t)c * HW + hw] : (uint16_t)0;
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int hw = hw0 + i, c = c0 + threadIdx.x;
        if (hw < HW && c < Cp)
            tn[(int64_t)hw * Cp + c] = t[threadIdx.x][i];
    }
}

// NHWC x [pixels][C] -> [pixels][Cp].
__global__ __launch_bounds__(256) void cl_pad(const uint16_t *x, uint16_t *xt, int64_t pixels, int C, int Cp)
{
    const int64_t n = pixels * Cp;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int c = (int)(i % Cp);
        xt[i] = c < C ? x[i / Cp * C + c] : (uint16_t)0;
    }
}

// w (KCRS, or KRSC with C channels) -> [K][RS][Cp].
__global__ __launch_bounds__(256) void w_to_krsc(const uint16_t *w, uint16_t *wt, int K, int C, int RS, int Cp,
                                                 bool kcrs)
{
    const int64_t n = (int64_t)K * RS * Cp;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int c = (int)(i % Cp), rs = (int)(i / Cp % RS);
        const int64_t k = i / ((int64_t)Cp * RS);
        wt[i] = c >= C ? (uint16_t)0 : kcrs ? w[(k * C + c) * RS + rs] : w[(k * RS + rs) * C + c];
    }
}

static void *scratch;
static size_t scratch_have;

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }
} // namespace cv2

template <typename T, bool NHWC>
static int cv_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p, kgate_stream st)
{
    using namespace cv2;
    CvGeo g;
    if (!cv_geo<T>(in, nin, out, nout, NHWC, p, &g))
        return kernel_fail(p, 1, cv_usage(NHWC));
    cudaStream_t s = (cudaStream_t)st;
    const T *x = (const T *)in[0].data, *w = (const T *)in[1].data;
    T *y = (T *)out[0].data;
    const int64_t Cp = (g.C + 7) / 8 * 8, M = (int64_t)g.N * g.P * g.Q, Kr = (int64_t)g.R * g.S * Cp;
    const int64_t x_cl = (int64_t)g.N * g.H * g.W * Cp, w_cl = (int64_t)g.K * Kr;
    const int64_t tiles_n = (g.K + BN - 1) / BN, blocks = (M + BM - 1) / BM * tiles_n;
    const int64_t big = 2147483647 - 2 * BM;
    if (g.G != 1 || M > big || Kr > big || x_cl > big || w_cl > big || M * g.K > big || blocks > big ||
        g.N > 65535 || Cp / 32 + 1 > 65535) {
        cv_v1_launch<T, NHWC>(x, w, y, g, s);
        KG_KERNEL_LAUNCHED(p);
        return 0;
    }
    const T *xa = x, *wa = w;
    if (!(NHWC && g.C % 8 == 0 && aligned16(x) && aligned16(w))) {
        const size_t xb = ((size_t)x_cl * sizeof(T) + 255) / 256 * 256, wb = (size_t)w_cl * sizeof(T);
        char *buf = (char *)scratch_get(&scratch, &scratch_have, xb + wb);
        if (!buf)
            return kernel_fail(p, 2, "conv2d v2: out of device memory for the channels-last copy");
        uint16_t *xt = (uint16_t *)buf, *wt = (uint16_t *)(buf + xb);
        const uint16_t *x16 = (const uint16_t *)x, *w16 = (const uint16_t *)w;
        if (NHWC) {
            cl_pad<<<(unsigned)(x_cl / 256 + 1 < 4096 ? x_cl / 256 + 1 : 4096), 256, 0, s>>>(
                x16, xt, (int64_t)g.N * g.H * g.W, g.C, (int)Cp);
        } else {
            dim3 grid((unsigned)((g.H * g.W + 31) / 32), (unsigned)((Cp + 31) / 32), (unsigned)g.N);
            nchw_to_cl<<<grid, dim3(32, 8), 0, s>>>(x16, xt, g.C, g.H * g.W, (int)Cp);
        }
        w_to_krsc<<<(unsigned)(w_cl / 256 + 1 < 4096 ? w_cl / 256 + 1 : 4096), 256, 0, s>>>(
            w16, wt, g.K, g.C, g.R * g.S, (int)Cp, !NHWC);
        xa = (const T *)xt;
        wa = (const T *)wt;
    }
    static bool attr_set; // one per instantiation: the kernel below
    if (!attr_set) {
        if (cudaFuncSetAttribute(igemm<T, !NHWC>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM) !=
            cudaSuccess)
            return kernel_fail(p, 3, "conv2d v2: cannot get 80 KB of shared memory");
        attr_set = true;
    }
    Args<T> a = {xa,  wa,  y,   g.N, g.H, g.W, (int)Cp, g.K, g.R, g.S, g.U, g.pad,
                 g.P, g.Q, (int)M, (int)Kr, (int)tiles_n, NHWC && g.K % 8 == 0 && aligned16(y)};
    igemm<T, !NHWC><<<(unsigned)blocks, THREADS, SMEM, s>>>(a);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v3 fast (Hopper)
// The tiling and every index: kernels/conv2d_v3.h (the CPU test emulates
// the kernel with it). One block per SM walks tiles t = blockIdx.x +
// i gridDim.x: warpgroup 0's first thread issues the TMA copies of the A
// box (x) and B box (filter) of every reduction step of every tile into a
// 4-stage ring (full / empty mbarriers, the ring's phase running on across
// tiles, so the next tile's first boxes load during this one's epilogue);
// warpgroups 1 and 2 each own 64 of the tile's 128 pixels: per step four
// wgmma m64nBNk16 (A and B K-major, 128-byte swizzle), one group kept in
// flight (a slot is released once the step after it has been issued and
// the one before it has completed). The epilogue goes through a
// per-warpgroup 64x64 shared-memory chunk: NHWC rows of 64 channels
// (16-byte stores along K), NCHW columns of 64 pixels (16-byte stores
// along q).
namespace cv3 {
using namespace sm90;
constexpr int BM = CV3_BM, BK = CV3_BK, STAGES = 4, THREADS = 384;
constexpr int EP_LD = 64 + 8; // 144-byte chunk rows: conflict-free fragment writes

template <typename T, int BN> struct Smem {
    T a[STAGES][BM * BK]; // 16 KB a stage, 1024-aligned
    T b[STAGES][BN * BK]; // 32 (16) KB a stage
    T ep[2][64 * EP_LD];  // the consumers' epilogue chunks
    uint64_t full[STAGES], empty[STAGES];
};

template <typename T, int BN> constexpr size_t smem_bytes() { return sizeof(Smem<T, BN>) + 1024; }

// One k16 step of a consumer: 64 x BN += A (64x16) . B^T, B K-major.
template <typename T, int BN> __device__ __forceinline__ void mma_step(float *d, uint64_t da, uint64_t db)
{
    constexpr bool bf = std::is_same<T, __nv_bfloat16>::value;
    if constexpr (BN == 256) {
        if constexpr (bf)
            KG_WGMMA_M64N256K16_B("bf16", "0", d, da, db);
        else
            KG_WGMMA_M64N256K16_B("f16", "0", d, da, db);
    } else {
        if constexpr (bf)
            KG_WGMMA_M64N128K16("bf16", "0", d, da, db);
        else
            KG_WGMMA_M64N128K16("f16", "0", d, da, db);
    }
}

template <typename T, int BN, bool NCHW_OUT>
__global__ __launch_bounds__(THREADS, 1) void kernel(const __grid_constant__ CUtensorMap map_x,
                                                     const __grid_constant__ CUtensorMap map_w, T *y,
                                                     const cv3_plan pl)
{
#if KG_SM90A
    extern __shared__ __align__(1024) unsigned char raw[];
    Smem<T, BN> &sm = smem_aligned<Smem<T, BN>>(raw);
    const int wg = threadIdx.x / 128;
    if (threadIdx.x == 0)
        ring_init<STAGES>(sm.full, sm.empty);
    __syncthreads();

    if (wg == 0) {
        regs_producer();
        if (threadIdx.x == 0) {
            uint32_t it = 0; // ring steps so far (sm90_tma.cuh: the ring)
            for (int t = blockIdx.x; t < pl.tiles; t += gridDim.x) {
                const cv3_tile tl = cv3_tile_of(pl, t);
                for (int kt = 0; kt < pl.KT; kt++, it++) {
                    const int s = ring_acquire<STAGES>(sm.empty, it);
                    int ca[4], cb[2];
                    cv3_a_coord(pl, tl, kt, ca);
                    cv3_b_coord(pl, tl, kt, cb);
                    mbar_expect_tx(&sm.full[s], cv3_stage_bytes(BN));
                    tma_load_4d(sm.a[s], &map_x, &sm.full[s], ca[0], ca[1], ca[2], ca[3]);
                    tma_load_2d(sm.b[s], &map_w, &sm.full[s], cb[0], cb[1]);
                }
            }
        }
        return;
    }

    regs_consumer();
    const int cw = wg - 1, t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    T *ep = sm.ep[cw];
    float d[BN / 2];
    uint32_t it = 0;
    for (int tile = blockIdx.x; tile < pl.tiles; tile += gridDim.x) {
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            d[i] = 0.f;
        for (int kt = 0; kt < pl.KT; kt++, it++) {
            const int s = ring_wait_full<STAGES>(sm.full, it);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++)
                mma_step<T, BN>(d, desc(sm.a[s] + cw * 64 * BK + kk * 16, 16, 1024),
                                desc(sm.b[s] + kk * 16, 16, 1024));
            ring_step_issued<STAGES>(sm.empty, it, kt > 0 && t == 0);
        }
        ring_tile_done<STAGES, BN / 2>(sm.empty, it, t == 0, d);

        const cv3_tile tl = cv3_tile_of(pl, tile);
        const int fr = warp * 16 + lane / 4, fc = lane % 4 * 2;
#pragma unroll
        for (int cc = 0; cc < BN / 64; cc++) {
            bar_sync(1 + cw, 128); // the chunk's previous reads are done
            if (NCHW_OUT) { // ep [64 channels][64 pixels]: the fragments transposed
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const float *v = d + (cc * 8 + j) * 4;
                    const int col = j * 8 + fc;
                    ep[col * EP_LD + fr] = from_f<T>(v[0]);
                    ep[(col + 1) * EP_LD + fr] = from_f<T>(v[1]);
                    ep[col * EP_LD + fr + 8] = from_f<T>(v[2]);
                    ep[(col + 1) * EP_LD + fr + 8] = from_f<T>(v[3]);
                }
            } else { // ep [64 pixels][64 channels]
                chunk_rows<T, EP_LD>(ep, d + cc * 32, fr, fc);
            }
            bar_sync(1 + cw, 128);
            chunk_store<EP_LD>(ep, t, [&](int row, int v8) {
                return y + (NCHW_OUT ? cv3_y_index(pl, tl, 1, cw * 64 + v8, cc * 64 + row)
                                     : cv3_y_index(pl, tl, 0, cw * 64 + row, cc * 64 + v8));
            });
        }
    }
#else
    kg_not_sm90a();
#endif
}

template <typename T, int BN, bool NCHW_OUT>
static int launch(const T *x, const T *w, T *y, const cv3_plan &pl, cudaStream_t s, const char **why)
{
    uint64_t dims[4], strides[3];
    uint32_t box[4], estr[4];
    cv3_x_map(pl, dims, strides, box, estr);
    CUtensorMap mx, mw;
    if (make_map_nd<T>(&mx, x, 4, dims, strides, box, estr) ||
        make_map<T>(&mw, w, pl.K, (int64_t)pl.R * pl.S * pl.C, BN)) {
        *why = "conv2d v3: cuTensorMapEncodeTiled failed";
        return 4;
    }
    constexpr size_t smem = smem_bytes<T, BN>();
    if (!allow_smem<kernel<T, BN, NCHW_OUT>>(smem)) {
        *why = "conv2d v3: cannot get the shared memory (212 KB)";
        return 3;
    }
    const int grid = pl.tiles < sm_count() ? pl.tiles : sm_count();
    kernel<T, BN, NCHW_OUT><<<grid, THREADS, smem, s>>>(mx, mw, y, pl);
    return 0;
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }
} // namespace cv3

// v3 where its plan takes the geometry (kernels/conv2d_v3.h) and the
// tensors it reads or writes in place are 16-byte aligned; v2 otherwise.
template <typename T, bool NHWC>
static int cv_v3(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p, kgate_stream st)
{
    CvGeo g;
    if (!cv_geo<T>(in, nin, out, nout, NHWC, p, &g))
        return kernel_fail(p, 1, cv_usage(NHWC));
    if (int rc = need_sm90a(p, NHWC ? "conv2d_nhwc v3" : "conv2d v3"))
        return rc;
    const T *x = (const T *)in[0].data, *w = (const T *)in[1].data;
    T *y = (T *)out[0].data;
    cv3_plan pl;
    // NHWC: TMA reads x and w in place (16-byte aligned bases); NCHW: they
    // are copied first (the copy kernel: N and C / 32 within 65535, H W
    // within int)
    if (!cv3_plan_make(g.N, g.C, g.H, g.W, g.K, g.R, g.S, g.U, g.pad, g.G, &pl) || !cv3::aligned16(y) ||
        (NHWC && (!cv3::aligned16(x) || !cv3::aligned16(w))) ||
        (!NHWC && (g.N > 65535 || g.C / 32 > 65535 || (int64_t)g.H * g.W > 2147483647 - 32)))
        return cv_v2<T, NHWC>(in, nin, out, nout, p, st);
    cudaStream_t s = (cudaStream_t)st;
    const T *xa = x, *wa = w;
    if (!NHWC) { // x to [N][H][W][C], w to [K][R][S][C] in the scratch v2 uses
        const int64_t xn = (int64_t)g.N * g.H * g.W * g.C, wn = (int64_t)g.K * g.R * g.S * g.C;
        const size_t xb = ((size_t)xn * sizeof(T) + 255) / 256 * 256, wb = (size_t)wn * sizeof(T);
        char *buf = (char *)scratch_get(&cv2::scratch, &cv2::scratch_have, xb + wb);
        if (!buf)
            return kernel_fail(p, 2, "conv2d v3: out of device memory for the channels-last copy");
        uint16_t *xt = (uint16_t *)buf, *wt = (uint16_t *)(buf + xb);
        dim3 grid((unsigned)((g.H * g.W + 31) / 32), (unsigned)(g.C / 32), (unsigned)g.N);
        cv2::nchw_to_cl<<<grid, dim3(32, 8), 0, s>>>((const uint16_t *)x, xt, g.C, g.H * g.W, g.C);
        cv2::w_to_krsc<<<(unsigned)(wn / 256 + 1 < 4096 ? wn / 256 + 1 : 4096), 256, 0, s>>>(
            (const uint16_t *)w, wt, g.K, g.C, g.R * g.S, g.C, true);
        KG_KERNEL_LAUNCHED(p);
        xa = (const T *)xt;
        wa = (const T *)wt;
    }
    const char *why = "";
    const int rc = pl.BN == 256 ? cv3::launch<T, 256, !NHWC>(xa, wa, y, pl, s, &why)
                                : cv3::launch<T, 128, !NHWC>(xa, wa, y, pl, s, &why);
    if (rc)
        return kernel_fail(p, rc, why);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

#define CV_V1_WHY "direct convolution, one thread an output, fp32 FMA: no tensor cores, scalar window gathers (NOTC, RC1)"
#define CV_V2_WHY "implicit GEMM: mma.sync m16n8k16 + ldmatrix, 4-stage cp.async im2col gathers, 128x128x32 tiles"
#define CV_V3_WHY "implicit GEMM: 4-D TMA boxes of x (TMA zero fill pads), wgmma m64n256k16, 4-stage " \
                  "ring, producer + 2 consumer warpgroups, persistent 128x256 tiles"
static const kgate_kernel variants[] = {
    {"conv2d_v1_fp16", "conv2d", "fp16", NULL, 2, 1, cv_v1<__half, false>, CV_V1_WHY, "stride,pad,groups", NULL},
    {"conv2d_v2_fp16", "conv2d", "fp16", NULL, 2, 1, cv_v2<__half, false>,
     CV_V2_WHY "; x copied to channels-last first; groups > 1 run v1", "stride,pad,groups", NULL},
    {"conv2d_v3_fp16", "conv2d", "fp16", NULL, 2, 1, cv_v3<__half, false>,
     CV_V3_WHY "; x copied to channels-last first; other geometries run v2", "stride,pad,groups", NULL},
    {"conv2d_v1_bf16", "conv2d", "bf16", NULL, 2, 1, cv_v1<__nv_bfloat16, false>, CV_V1_WHY,
     "stride,pad,groups", NULL},
    {"conv2d_v2_bf16", "conv2d", "bf16", NULL, 2, 1, cv_v2<__nv_bfloat16, false>,
     CV_V2_WHY "; x copied to channels-last first; groups > 1 run v1", "stride,pad,groups", NULL},
    {"conv2d_v3_bf16", "conv2d", "bf16", NULL, 2, 1, cv_v3<__nv_bfloat16, false>,
     CV_V3_WHY "; x copied to channels-last first; other geometries run v2", "stride,pad,groups", NULL},
    {"conv2d_nhwc_v1_fp16", "conv2d_nhwc", "fp16", NULL, 2, 1, cv_v1<__half, true>, CV_V1_WHY,
     "stride,pad,groups", NULL},
    {"conv2d_nhwc_v2_fp16", "conv2d_nhwc", "fp16", NULL, 2, 1, cv_v2<__half, true>,
     CV_V2_WHY "; x read in place when C % 8 == 0; groups > 1 run v1", "stride,pad,groups", NULL},
    {"conv2d_nhwc_v3_fp16", "conv2d_nhwc", "fp16", NULL, 2, 1, cv_v3<__half, true>,
     CV_V3_WHY "; x read in place; other geometries run v2", "stride,pad,groups", NULL},
    {"conv2d_nhwc_v1_bf16", "conv2d_nhwc", "bf16", NULL, 2, 1, cv_v1<__nv_bfloat16, true>, CV_V1_WHY,
     "stride,pad,groups", NULL},
    {"conv2d_nhwc_v2_bf16", "conv2d_nhwc", "bf16", NULL, 2, 1, cv_v2<__nv_bfloat16, true>,
     CV_V2_WHY "; x read in place when C % 8 == 0; groups > 1 run v1", "stride,pad,groups", NULL},
    {"conv2d_nhwc_v3_bf16", "conv2d_nhwc", "bf16", NULL, 2, 1, cv_v3<__nv_bfloat16, true>,
     CV_V3_WHY "; x read in place; other geometries run v2", "stride,pad,groups", NULL},
};
KG_EXPORT_VARIANTS(conv2d, variants)
