// max_reduction over the last dimension: y[r] = max(x[r, :]), a NaN in a row
// giving NaN (torch.amax).
//
// The fp64 reference is src/ops/max_reduction.cu.
//
// v1 naive (RC0a, RC1): one thread per row walks it serially, consecutive
//            threads on consecutive rows, so the 32 loads of a warp
//            instruction are also COLS elements apart (32 different cache
//            lines, a few bytes used of each per instruction) and each thread
//            has one 2- or 4-byte load in flight. The labels' order is
//            measured (kernels/ablation/single_fix.cu, on the H200, fp16
//            8192 x 32768): v1 2.134 ms; coalesced but still a thread a
//            row 2.038 ms; 32 threads a row but still uncoalesced 1.066 ms, so
//            the serial walk (RC0a) costs more than the access pattern (RC1).
// v2 fast:   a group of 32..512 threads per row (at most 16 vectors of 16
//            bytes a thread, more threads while the rows alone would not fill
//            the SMs; several rows per 256-thread block for short rows),
//            16-byte streaming loads, four independent loads in flight per
//            thread; each 16-byte vector is reduced with packed max.NaN
//            instructions (__hmax2_nan for fp16/bf16), and the group combines
//            by warp shuffles and shared memory. A row whose start is not
//            16-byte aligned (COLS not a multiple of the vector) takes its
//            first and last few elements one at a time.
#include <stdint.h>

#include "common.cuh"

// ---------------------------------------------------------------- helpers
// NaN-propagating maximum (fmaxf would drop a NaN).
__device__ __forceinline__ float mx_fmax_nan(float a, float b)
{
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

// The NaN-propagating maximum of the elements of a 16-byte vector.
template <typename T> __device__ __forceinline__ float mx_vmax(const uint4 &d);
template <> __device__ __forceinline__ float mx_vmax<__half>(const uint4 &d)
{
    const __half2 *h = reinterpret_cast<const __half2 *>(&d);
    __half2 a = __hmax2_nan(__hmax2_nan(h[0], h[1]), __hmax2_nan(h[2], h[3]));
    return __half2float(__hmax_nan(__low2half(a), __high2half(a)));
}
template <> __device__ __forceinline__ float mx_vmax<__nv_bfloat16>(const uint4 &d)
{
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&d);
    __nv_bfloat162 a = __hmax2_nan(__hmax2_nan(h[0], h[1]), __hmax2_nan(h[2], h[3]));
    return __bfloat162float(__hmax_nan(__low2bfloat16(a), __high2bfloat16(a)));
}
template <> __device__ __forceinline__ float mx_vmax<float>(const uint4 &d)
{
    return mx_fmax_nan(mx_fmax_nan(__uint_as_float(d.x), __uint_as_float(d.y)),
                       mx_fmax_nan(__uint_as_float(d.z), __uint_as_float(d.w)));
}

// The maximum of row[0, cols) seen by thread t of a group of n threads
// (n >= 32): the elements before the first 16-byte boundary one at a time,
// the aligned body as 16-byte vectors (U loads in flight), the tail one at a
// time.
template <typename T, int U>
__device__ __forceinline__ float mx_scan(const T *row, int64_t cols, int t, int n)
{
    constexpr int E = 16 / sizeof(T);
    float m = -INFINITY;
    int64_t head = (int64_t)(((16 - ((uintptr_t)row & 15)) & 15) / sizeof(T));
    if (head > cols)
        head = cols;
    if (t < head)
        m = to_f(row[t]);
    const int64_t nvec = (cols - head) / E;
    const uint4 *v = reinterpret_cast<const uint4 *>(row + head);
    int64_t k = t;
    for (; k + (int64_t)(U - 1) * n < nvec; k += (int64_t)U * n) {
        uint4 d[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            d[u] = __ldcs(v + k + (int64_t)u * n);
#pragma unroll
        for (int u = 0; u < U; u++)
            m = mx_fmax_nan(m, mx_vmax<T>(d[u]));
    }
    for (; k < nvec; k += n)
        m = mx_fmax_nan(m, mx_vmax<T>(__ldcs(v + k)));
    const int64_t tail = head + nvec * E + t; // fewer than E elements remain
    if (tail < cols)
        m = mx_fmax_nan(m, to_f(row[tail]));
    return m;
}

template <typename T>
static int mx_check(const DLTensor *in, int nin, const DLTensor *out, int nout,
                    const kgate_params *p)
{
    if (nin != 1 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<T>(&out[0], 1) ||
        out[0].shape[0] != in[0].shape[0])
        return kernel_fail(p, 1, "max_reduction: expected x[R,C] -> y[R]");
    if (in[0].shape[1] < 1 && in[0].shape[0] > 0)
        return kernel_fail(p, 1, "max_reduction: rows of no elements have no maximum");
    return 0;
}

// ---------------------------------------------------------------- v1 naive
template <typename T> __global__ void mx_v1_kernel(const T *x, T *y, int64_t rows, int64_t cols)
{
    const int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; // thread r: row r
    if (r >= rows)
        return;
    const T *xr = x + r * cols;
    float m = -INFINITY;
    for (int64_t j = 0; j < cols; j++) { // a warp's loads are COLS elements apart: RC1
        const float v = to_f(xr[j]);
        m = v > m || v != v ? v : m;     // keeps a NaN once seen
    }
    y[r] = from_f<T>(m);
}

template <typename T>
static int mx_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    int rc = mx_check<T>(in, nin, out, nout, p);
    if (rc)
        return rc;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    if (rows == 0)
        return 0;
    mx_v1_kernel<T><<<(unsigned)((rows + 63) / 64), 64, 0, (cudaStream_t)st>>>(
        (const T *)in[0].data, (T *)out[0].data, rows, cols);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
// TPR threads per row; a block of max(TPR, 256) threads holds 256/TPR rows
// when TPR < 256.
template <typename T, int TPR>
__global__ __launch_bounds__(TPR < 256 ? 256 : TPR) void mx_v2_kernel(const T *x, T *y,
                                                                       int64_t rows, int64_t cols)
{
    constexpr int BLOCK = TPR < 256 ? 256 : TPR, WPR = TPR / 32;
    __shared__ float red[BLOCK / 32];
    const int g = threadIdx.x / TPR, t = threadIdx.x % TPR, lane = threadIdx.x % 32;
    const int64_t row = (int64_t)blockIdx.x * (BLOCK / TPR) + g;
    float m = row < rows ? mx_scan<T, 4>(x + row * cols, cols, t, TPR) : -INFINITY;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        m = mx_fmax_nan(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (WPR > 1) {
        if (lane == 0)
            red[threadIdx.x / 32] = m;
        __syncthreads();
        if (t < 32) { // the group's first warp combines its warps' maxima
            m = lane < WPR ? red[g * WPR + lane] : -INFINITY;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                m = mx_fmax_nan(m, __shfl_xor_sync(0xffffffffu, m, o));
        }
    }
    if (t == 0 && row < rows)
        y[row] = from_f<T>(m);
}

template <typename T>
static int mx_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    int rc = mx_check<T>(in, nin, out, nout, p);
    if (rc)
        return rc;
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    if (rows == 0)
        return 0;
    const T *x = (const T *)in[0].data;
    T *y = (T *)out[0].data;
    launch_rows(rows, cols, sizeof(T), [&](auto tpr, unsigned grid, unsigned block) {
        mx_v2_kernel<T, decltype(tpr)::value><<<grid, block, 0, s>>>(x, y, rows, cols);
    });
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"max_reduction_v1_fp16", "max_reduction", "fp16", NULL, 1, 1, mx_v1<__half>,
     "one thread per row walking it, a warp's loads COLS apart (RC0a, RC1)", NULL, NULL},
    {"max_reduction_v2_fp16", "max_reduction", "fp16", NULL, 1, 1, mx_v2<__half>,
     "thread group per row, 16-byte loads, packed NaN-max, shuffle reduction", NULL, NULL},
    {"max_reduction_v1_bf16", "max_reduction", "bf16", NULL, 1, 1, mx_v1<__nv_bfloat16>,
     "one thread per row walking it, a warp's loads COLS apart (RC0a, RC1)", NULL, NULL},
    {"max_reduction_v2_bf16", "max_reduction", "bf16", NULL, 1, 1, mx_v2<__nv_bfloat16>,
     "thread group per row, 16-byte loads, packed NaN-max, shuffle reduction", NULL, NULL},
    {"max_reduction_v1_fp32", "max_reduction", "fp32", NULL, 1, 1, mx_v1<float>,
     "one thread per row walking it, a warp's loads COLS apart (RC0a, RC1)", NULL, NULL},
    {"max_reduction_v2_fp32", "max_reduction", "fp32", NULL, 1, 1, mx_v2<float>,
     "thread group per row, 16-byte loads, NaN-max, shuffle reduction", NULL, NULL},
};
KG_EXPORT_VARIANTS(max_reduction, variants)
