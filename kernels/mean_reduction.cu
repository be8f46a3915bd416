// mean_reduction over the last dimension: y[r] = sum(x[r, :]) / COLS
// (torch.mean; IEEE sums, so NaN, or +Inf with -Inf, give NaN).
//
// The fp64 reference is src/ops/mean_reduction.cu.
//
// v1 naive (RC0a): serial row reduction: one thread per row adds its whole row
//            element by element (in fp64, so it is accurate, only slow): an
//            8192-row problem runs on 8192 threads, each with one 2- or
//            4-byte load in flight, and a warp's 32 loads fall in 32 rows.
// v2 fast:   a group of 32..512 threads per row (at most 16 vectors of 16
//            bytes a thread, more threads while the rows alone would not fill
//            the SMs; several rows per 256-thread block for short rows),
//            16-byte streaming loads, four independent loads in flight per
//            thread. Each 16-byte vector (and each group of four) is summed as
//            a tree in fp32 and added to the thread's fp32 sum (a few
//            additions a thread at the presets); the group's sums are combined
//            by a shuffle tree and shared memory and divided by COLS in fp64.
//            A row whose start is not 16-byte aligned (COLS not a multiple of
//            the vector) takes its first and last few elements one at a time.
#include <stdint.h>

#include "common.cuh"

// ---------------------------------------------------------------- helpers
// The sum of the elements of a 16-byte vector, as a tree.
template <typename T> __device__ __forceinline__ float mn_vsum(const uint4 &d);
template <> __device__ __forceinline__ float mn_vsum<__half>(const uint4 &d)
{
    const __half2 *h = reinterpret_cast<const __half2 *>(&d);
    const float2 a = __half22float2(h[0]), b = __half22float2(h[1]);
    const float2 c = __half22float2(h[2]), e = __half22float2(h[3]);
    return ((a.x + a.y) + (b.x + b.y)) + ((c.x + c.y) + (e.x + e.y));
}
template <> __device__ __forceinline__ float mn_vsum<__nv_bfloat16>(const uint4 &d)
{
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&d);
    const float2 a = __bfloat1622float2(h[0]), b = __bfloat1622float2(h[1]);
    const float2 c = __bfloat1622float2(h[2]), e = __bfloat1622float2(h[3]);
    return ((a.x + a.y) + (b.x + b.y)) + ((c.x + c.y) + (e.x + e.y));
}
template <> __device__ __forceinline__ float mn_vsum<float>(const uint4 &d)
{
    return (__uint_as_float(d.x) + __uint_as_float(d.y)) +
           (__uint_as_float(d.z) + __uint_as_float(d.w));
}

// The sum of row[0, cols) seen by thread t of a group of n threads (n >= 32):
// the elements before the first 16-byte boundary one at a time, the aligned
// body as 16-byte vectors (U loads in flight), the tail one at a time.
template <typename T, int U>
__device__ __forceinline__ float mn_scan(const T *row, int64_t cols, int t, int n)
{
    constexpr int E = 16 / sizeof(T);
    float s = 0.f;
    int64_t head = (int64_t)(((16 - ((uintptr_t)row & 15)) & 15) / sizeof(T));
    if (head > cols)
        head = cols;
    if (t < head)
        s = to_f(row[t]);
    const int64_t nvec = (cols - head) / E;
    const uint4 *v = reinterpret_cast<const uint4 *>(row + head);
    int64_t k = t;
    for (; k + (int64_t)(U - 1) * n < nvec; k += (int64_t)U * n) {
        uint4 d[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            d[u] = __ldcs(v + k + (int64_t)u * n);
        float p[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            p[u] = mn_vsum<T>(d[u]);
#pragma unroll
        for (int w = 1; w < U; w *= 2) // a tree over the U vectors too
#pragma unroll
            for (int u = 0; u + w < U; u += 2 * w)
                p[u] += p[u + w];
        s += p[0];
    }
    for (; k < nvec; k += n)
        s += mn_vsum<T>(__ldcs(v + k));
    const int64_t tail = head + nvec * E + t; // fewer than E elements remain
    if (tail < cols)
        s += to_f(row[tail]);
    return s;
}

template <typename T>
static int mn_check(const DLTensor *in, int nin, const DLTensor *out, int nout,
                    const kgate_params *p)
{
    if (nin != 1 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<T>(&out[0], 1) ||
        out[0].shape[0] != in[0].shape[0])
        return kernel_fail(p, 1, "mean_reduction: expected x[R,C] -> y[R]");
    if (in[0].shape[1] < 1 && in[0].shape[0] > 0)
        return kernel_fail(p, 1, "mean_reduction: rows of no elements have no mean");
    return 0;
}

// ---------------------------------------------------------------- v1 naive
template <typename T> __global__ void mn_v1_kernel(const T *x, T *y, int64_t rows, int64_t cols)
{
    const int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const T *xr = x + r * cols;
    double s = 0;
    for (int64_t j = 0; j < cols; j++) // one thread walks the row: RC0a
        s += to_d(xr[j]);
    y[r] = from_f<T>((float)(s / (double)cols));
}

template <typename T>
static int mn_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    int rc = mn_check<T>(in, nin, out, nout, p);
    if (rc)
        return rc;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    if (rows == 0)
        return 0;
    mn_v1_kernel<T><<<(unsigned)((rows + 63) / 64), 64, 0, (cudaStream_t)st>>>(
        (const T *)in[0].data, (T *)out[0].data, rows, cols);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
// TPR threads per row; a block of max(TPR, 256) threads holds 256/TPR rows
// when TPR < 256.
template <typename T, int TPR>
__global__ __launch_bounds__(TPR < 256 ? 256 : TPR) void mn_v2_kernel(const T *x, T *y,
                                                                       int64_t rows, int64_t cols)
{
    constexpr int BLOCK = TPR < 256 ? 256 : TPR, WPR = TPR / 32;
    __shared__ float red[BLOCK / 32];
    const int g = threadIdx.x / TPR, t = threadIdx.x % TPR, lane = threadIdx.x % 32;
    const int64_t row = (int64_t)blockIdx.x * (BLOCK / TPR) + g;
    float s = row < rows ? mn_scan<T, 4>(x + row * cols, cols, t, TPR) : 0.f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (WPR > 1) {
        if (lane == 0)
            red[threadIdx.x / 32] = s;
        __syncthreads();
        if (t < 32) { // the group's first warp combines its warps' sums
            s = lane < WPR ? red[g * WPR + lane] : 0.f;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                s += __shfl_xor_sync(0xffffffffu, s, o);
        }
    }
    if (t == 0 && row < rows)
        y[row] = from_f<T>((float)((double)s / (double)cols));
}

template <typename T>
static int mn_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    int rc = mn_check<T>(in, nin, out, nout, p);
    if (rc)
        return rc;
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    if (rows == 0)
        return 0;
    const T *x = (const T *)in[0].data;
    T *y = (T *)out[0].data;
    launch_rows(rows, cols, sizeof(T), [&](auto tpr, unsigned grid, unsigned block) {
        mn_v2_kernel<T, decltype(tpr)::value><<<grid, block, 0, s>>>(x, y, rows, cols);
    });
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"mean_reduction_v1_fp32", "mean_reduction", "fp32", NULL, 1, 1, mn_v1<float>,
     "one thread adds each row serially (RC0a)", NULL, NULL},
    {"mean_reduction_v2_fp32", "mean_reduction", "fp32", NULL, 1, 1, mn_v2<float>,
     "thread group per row, 16-byte loads, fp32 tree sums, shuffle reduction", NULL, NULL},
    {"mean_reduction_v1_fp16", "mean_reduction", "fp16", NULL, 1, 1, mn_v1<__half>,
     "one thread adds each row serially (RC0a)", NULL, NULL},
    {"mean_reduction_v2_fp16", "mean_reduction", "fp16", NULL, 1, 1, mn_v2<__half>,
     "thread group per row, 16-byte loads, fp32 tree sums, shuffle reduction", NULL, NULL},
    {"mean_reduction_v1_bf16", "mean_reduction", "bf16", NULL, 1, 1, mn_v1<__nv_bfloat16>,
     "one thread adds each row serially (RC0a)", NULL, NULL},
    {"mean_reduction_v2_bf16", "mean_reduction", "bf16", NULL, 1, 1, mn_v2<__nv_bfloat16>,
     "thread group per row, 16-byte loads, fp32 tree sums, shuffle reduction", NULL, NULL},
};
KG_EXPORT_VARIANTS(mean_reduction, variants)
