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
// v2 fast:   implicit GEMM on the tensor cores: rows m = (n, p, q), columns
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
#include <stdint.h>

#include "common.cuh"

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

// ---------------------------------------------------------------- v2 fast
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

#define CV_V1_WHY "direct convolution, one thread an output, fp32 FMA: no tensor cores, scalar window gathers (NOTC, RC1)"
#define CV_V2_WHY "implicit GEMM: mma.sync m16n8k16 + ldmatrix, 4-stage cp.async im2col gathers, 128x128x32 tiles"
static const kgate_kernel variants[] = {
    {"conv2d_v1_fp16", "conv2d", "fp16", NULL, 2, 1, cv_v1<__half, false>, CV_V1_WHY, "stride,pad,groups", NULL},
    {"conv2d_v2_fp16", "conv2d", "fp16", NULL, 2, 1, cv_v2<__half, false>,
     CV_V2_WHY "; x copied to channels-last first; groups > 1 run v1", "stride,pad,groups", NULL},
    {"conv2d_v1_bf16", "conv2d", "bf16", NULL, 2, 1, cv_v1<__nv_bfloat16, false>, CV_V1_WHY,
     "stride,pad,groups", NULL},
    {"conv2d_v2_bf16", "conv2d", "bf16", NULL, 2, 1, cv_v2<__nv_bfloat16, false>,
     CV_V2_WHY "; x copied to channels-last first; groups > 1 run v1", "stride,pad,groups", NULL},
    {"conv2d_nhwc_v1_fp16", "conv2d_nhwc", "fp16", NULL, 2, 1, cv_v1<__half, true>, CV_V1_WHY,
     "stride,pad,groups", NULL},
    {"conv2d_nhwc_v2_fp16", "conv2d_nhwc", "fp16", NULL, 2, 1, cv_v2<__half, true>,
     CV_V2_WHY "; x read in place when C % 8 == 0; groups > 1 run v1", "stride,pad,groups", NULL},
    {"conv2d_nhwc_v1_bf16", "conv2d_nhwc", "bf16", NULL, 2, 1, cv_v1<__nv_bfloat16, true>, CV_V1_WHY,
     "stride,pad,groups", NULL},
    {"conv2d_nhwc_v2_bf16", "conv2d_nhwc", "bf16", NULL, 2, 1, cv_v2<__nv_bfloat16, true>,
     CV_V2_WHY "; x read in place when C % 8 == 0; groups > 1 run v1", "stride,pad,groups", NULL},
};
KG_EXPORT_VARIANTS(conv2d, variants)
