// rms_norm: y = x * rsqrt(mean(x^2) + eps) * weight, per row of x[ROWS,COLS]
// (torch.nn.functional.rms_norm(x, (COLS,), weight, eps)).
//
// The fp64 reference is src/ops/rms_norm.cu.
//
// v1 naive (RC0a): the paper's TileLang RMSNorm defects on purpose: x
//            round-trips through fp32 buffers (a conversion pass in, the
//            normalized row out to an fp32 buffer, a conversion pass back:
//            RC0b), and the sum of squares of each row is walked serially by
//            one thread while the rest of its block waits (RC0a: T.serial).
//            Correct, and many times slower than the hardware allows.
// v2 fast:   one 256-thread block per row; the row is loaded once with 16-byte
//            streaming loads and kept in registers (up to 8 vectors a thread,
//            rows of up to 16384 elements), the sum of squares comes from a
//            warp-shuffle block reduction over the registers in fp32, and the
//            output leaves in 16-byte streaming stores: one read and one
//            write of the tensor. Rows that are not a multiple of 8 elements,
//            unaligned pointers or longer rows take a plain two-pass kernel.
#include "common.cuh"

template <typename T>
static bool rms_args_ok(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    return nin == 2 && nout == 1 && dl_is<T>(&in[0], 2) && dl_is<T>(&in[1], 1) &&
           dl_is<T>(&out[0], 2) && in[1].shape[0] == in[0].shape[1] &&
           out[0].shape[0] == in[0].shape[0] && out[0].shape[1] == in[0].shape[1];
}

// ---------------------------------------------------------------- v1 naive
template <typename T> __global__ void rms_v1_to_fp32(const T *x, float *xf, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        xf[i] = to_f(x[i]);
}

template <typename T> __global__ void rms_v1_from_fp32(const float *yf, T *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = from_f<T>(yf[i]);
}

template <typename T>
__global__ void rms_v1_row(const float *xf, const T *w, float *yf, int64_t cols, float eps)
{
    __shared__ float inv_rms;
    const float *xr = xf + (int64_t)blockIdx.x * cols;
    float *yr = yf + (int64_t)blockIdx.x * cols;
    if (threadIdx.x == 0) { // one thread walks the whole row: the serial reduction
        float ss = 0.f;
        for (int64_t j = 0; j < cols; j++)
            ss += xr[j] * xr[j];
        inv_rms = rsqrtf(ss / (float)cols + eps);
    }
    __syncthreads();
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        yr[j] = xr[j] * inv_rms * to_f(w[j]);
}

static void *rms_v1_buf;
static size_t rms_v1_have;

template <typename T>
static int rms_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    if (!rms_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "rms_norm v1: expected x[R,C], weight[C] -> y[R,C]");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1], n = rows * cols;
    if (n == 0)
        return 0;
    if (rows > 0x7fffffff)
        return kernel_fail(p, 1, "rms_norm v1: more rows than a grid holds");
    float *xf = (float *)scratch_get(&rms_v1_buf, &rms_v1_have, 2 * (size_t)n * sizeof(float));
    if (!xf)
        return kernel_fail(p, 2, "rms_norm v1: out of device memory for the fp32 buffers");
    float *yf = xf + n;
    const float eps = (float)kgate_scalar_get(p, "eps", 1e-6);
    rms_v1_to_fp32<T><<<1024, 256, 0, s>>>((const T *)in[0].data, xf, n);
    rms_v1_row<T><<<(unsigned)rows, 128, 0, s>>>(xf, (const T *)in[1].data, yf, cols, eps);
    rms_v1_from_fp32<T><<<1024, 256, 0, s>>>(yf, (T *)out[0].data, n);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
#define RMS_BLOCK 256

template <typename T> __device__ __forceinline__ float rms_sumsq8(const uint4 &v)
{
    const T *e = reinterpret_cast<const T *>(&v);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        const float f = to_f(e[k]);
        s += f * f;
    }
    return s;
}

// V vectors of 8 elements a thread: cols / 8 <= V * RMS_BLOCK.
template <typename T, int V>
__global__ __launch_bounds__(RMS_BLOCK) void rms_v2_kernel(const T *__restrict__ x,
                                                           const T *__restrict__ w,
                                                           T *__restrict__ y, int cols, float eps)
{
    __shared__ float red[32];
    const int nvec = cols / 8;
    const uint4 *xv = reinterpret_cast<const uint4 *>(x + (size_t)blockIdx.x * cols);
    uint4 *yv = reinterpret_cast<uint4 *>(y + (size_t)blockIdx.x * cols);
    uint4 d[V];
#pragma unroll
    for (int i = 0; i < V; i++) {
        const int c = threadIdx.x + i * RMS_BLOCK;
        d[i] = make_uint4(0, 0, 0, 0);
        if (c < nvec)
            d[i] = __ldcs(xv + c);
    }
    float sq = 0.f;
#pragma unroll
    for (int i = 0; i < V; i++)
        if (threadIdx.x + i * RMS_BLOCK < nvec)
            sq += rms_sumsq8<T>(d[i]);
    const float r = rsqrtf(block_sum(sq, red) / (float)cols + eps);
#pragma unroll
    for (int i = 0; i < V; i++) {
        const int c = threadIdx.x + i * RMS_BLOCK;
        if (c < nvec) {
            const uint4 wv = __ldg(reinterpret_cast<const uint4 *>(w) + c);
            const T *e = reinterpret_cast<const T *>(&d[i]);
            const T *we = reinterpret_cast<const T *>(&wv);
            uint4 o;
            T *oe = reinterpret_cast<T *>(&o);
#pragma unroll
            for (int k = 0; k < 8; k++)
                oe[k] = from_f<T>(to_f(e[k]) * r * to_f(we[k]));
            __stcs(yv + c, o);
        }
    }
}

// Any row length and alignment: two passes over the row, scalar accesses.
template <typename T>
__global__ __launch_bounds__(RMS_BLOCK) void rms_v2_generic(const T *__restrict__ x,
                                                            const T *__restrict__ w,
                                                            T *__restrict__ y, int64_t cols,
                                                            float eps)
{
    __shared__ float red[32];
    const T *xr = x + (int64_t)blockIdx.x * cols;
    T *yr = y + (int64_t)blockIdx.x * cols;
    float q = 0.f;
    for (int64_t j = threadIdx.x; j < cols; j += RMS_BLOCK) {
        const float f = to_f(xr[j]);
        q += f * f;
    }
    const float r = rsqrtf(block_sum(q, red) / (float)cols + eps);
    for (int64_t j = threadIdx.x; j < cols; j += RMS_BLOCK)
        yr[j] = from_f<T>(to_f(xr[j]) * r * to_f(w[j]));
}

template <typename T>
static int rms_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    static_assert(sizeof(T) == 2, "the vector path packs 8 elements in 16 bytes");
    if (!rms_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "rms_norm v2: expected x[R,C], weight[C] -> y[R,C]");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    const T *x = (const T *)in[0].data, *w = (const T *)in[1].data;
    T *y = (T *)out[0].data;
    if (rows == 0 || cols == 0)
        return 0;
    if (rows > 0x7fffffff)
        return kernel_fail(p, 1, "rms_norm v2: more rows than a grid holds");
    const float eps = (float)kgate_scalar_get(p, "eps", 1e-6);
    const int64_t nvec = cols / 8;
    const bool aligned =
        cols % 8 == 0 && (((uintptr_t)x | (uintptr_t)w | (uintptr_t)y) & 15) == 0;
    const unsigned grid = (unsigned)rows;
    if (!aligned || nvec > 8 * RMS_BLOCK)
        rms_v2_generic<T><<<grid, RMS_BLOCK, 0, s>>>(x, w, y, cols, eps);
    else if (nvec <= RMS_BLOCK)
        rms_v2_kernel<T, 1><<<grid, RMS_BLOCK, 0, s>>>(x, w, y, (int)cols, eps);
    else if (nvec <= 2 * RMS_BLOCK)
        rms_v2_kernel<T, 2><<<grid, RMS_BLOCK, 0, s>>>(x, w, y, (int)cols, eps);
    else if (nvec <= 4 * RMS_BLOCK)
        rms_v2_kernel<T, 4><<<grid, RMS_BLOCK, 0, s>>>(x, w, y, (int)cols, eps);
    else
        rms_v2_kernel<T, 8><<<grid, RMS_BLOCK, 0, s>>>(x, w, y, (int)cols, eps);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"rms_norm_v1_fp16", "rms_norm", "fp16", NULL, 2, 1, rms_v1<__half>,
     "one thread sums each row serially, fp32 round trip (RC0a)", "eps", NULL},
    {"rms_norm_v2_fp16", "rms_norm", "fp16", NULL, 2, 1, rms_v2<__half>,
     "row in registers, 16-byte I/O, shuffle reduction", "eps", NULL},
    {"rms_norm_v1_bf16", "rms_norm", "bf16", NULL, 2, 1, rms_v1<__nv_bfloat16>,
     "one thread sums each row serially, fp32 round trip (RC0a)", "eps", NULL},
    {"rms_norm_v2_bf16", "rms_norm", "bf16", NULL, 2, 1, rms_v2<__nv_bfloat16>,
     "row in registers, 16-byte I/O, shuffle reduction", "eps", NULL},
};
KG_EXPORT_VARIANTS(rms_norm, variants)
