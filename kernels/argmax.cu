// argmax over the last dimension: i[r] = the index of the largest x[r, :]
// (PyTorch's rule: a NaN is larger than everything, so a row with a NaN gives
// the index of a NaN). Ties go to the smallest index, in both variants.
//
// The fp64 reference is src/ops/argmax.cu.
//
// v1 naive (RC0a): serial row reduction: one thread per row walks its whole
//            row element by element, so an 8192-row problem runs on 8192
//            threads, each with one 2- or 4-byte load in flight, and a warp's
//            32 loads fall in 32 rows (COLS elements apart).
// v2 fast:   a group of 32..512 threads per row (at most 16 vectors of 16
//            bytes a thread, more threads while the rows alone would not fill
//            the SMs; several rows per 256-thread block for short rows),
//            16-byte streaming loads, four independent loads in flight per
//            thread. Each thread keeps its best 16-byte vector (by the vector's
//            NaN-propagating maximum, from packed max.NaN instructions) with
//            selects, no branch, and searches it for the element's index once
//            at the end. The (value, index) pairs are combined by warp
//            shuffles and shared memory with NaN-wins and the smallest index
//            on ties, so the result is deterministic. A row whose start is not
//            16-byte aligned (COLS not a multiple of the vector) takes its
//            first and last few elements one at a time.
#include <stdint.h>

#include "common.cuh"

// ---------------------------------------------------------------- helpers
// NaN-propagating maximum (fmaxf would drop a NaN).
__device__ __forceinline__ float am_fmax_nan(float a, float b)
{
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

// The NaN-propagating maximum of the elements of a 16-byte vector.
template <typename T> __device__ __forceinline__ float am_vmax(const uint4 &d);
template <> __device__ __forceinline__ float am_vmax<__half>(const uint4 &d)
{
    const __half2 *h = reinterpret_cast<const __half2 *>(&d);
    __half2 a = __hmax2_nan(__hmax2_nan(h[0], h[1]), __hmax2_nan(h[2], h[3]));
    return __half2float(__hmax_nan(__low2half(a), __high2half(a)));
}
template <> __device__ __forceinline__ float am_vmax<__nv_bfloat16>(const uint4 &d)
{
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&d);
    __nv_bfloat162 a = __hmax2_nan(__hmax2_nan(h[0], h[1]), __hmax2_nan(h[2], h[3]));
    return __bfloat162float(__hmax_nan(__low2bfloat16(a), __high2bfloat16(a)));
}
template <> __device__ __forceinline__ float am_vmax<float>(const uint4 &d)
{
    return am_fmax_nan(am_fmax_nan(__uint_as_float(d.x), __uint_as_float(d.y)),
                       am_fmax_nan(__uint_as_float(d.z), __uint_as_float(d.w)));
}

// A thread's running state. Elements arrive in increasing index order, so a
// strictly greater value (or a first NaN) replaces the best and ties keep the
// first index. Whole 16-byte vectors only keep the best vector itself (its
// maximum, first index and data, by selects: no branch, no divergence); it is
// searched for its element once, in finish(). Single elements (the unaligned
// head and tail of a row) update the (value, index) pair directly. Index -1:
// nothing above -Inf seen.
template <typename T> struct am_acc {
    float m;       // the best single element or, after finish(), the best of all
    long long i;
    float vm;      // the best vector's maximum
    long long vj;  // its first element's index
    uint4 vd;      // its data

    __device__ __forceinline__ void one(float v, long long j)
    {
        if (v > m || (v != v && m == m)) {
            m = v;
            i = j;
        }
    }

    __device__ __forceinline__ void vec(const uint4 &d, long long j)
    {
        const float x = am_vmax<T>(d);
        const bool take = x > vm || (x != x && vm == vm);
        vm = take ? x : vm;
        vj = take ? j : vj;
        vd.x = take ? d.x : vd.x;
        vd.y = take ? d.y : vd.y;
        vd.z = take ? d.z : vd.z;
        vd.w = take ? d.w : vd.w;
    }

    // Takes (m2, i2) when it wins: a NaN beats a number, then the larger
    // value, then (equal values, or two NaNs) the smaller index.
    __device__ __forceinline__ void merge(float m2, long long i2)
    {
        bool take;
        if (i2 < 0)
            take = false;
        else if (i < 0)
            take = true;
        else if (m2 != m2)
            take = m == m || i2 < i;
        else
            take = m == m && (m2 > m || (m2 == m && i2 < i));
        if (take) {
            m = m2;
            i = i2;
        }
    }

    // Finds the best vector's first element equal to its maximum (its first
    // NaN when the maximum is NaN) and merges it with the single elements.
    __device__ __forceinline__ void finish()
    {
        constexpr int E = 16 / sizeof(T);
        if (vj < 0)
            return;
        const T *e = reinterpret_cast<const T *>(&vd);
        int k = 0;
#pragma unroll
        for (int q = E - 1; q >= 0; q--) {
            const float f = to_f(e[q]);
            if (vm != vm ? f != f : f == vm)
                k = q;
        }
        merge(vm, vj + k);
    }
};

// Feeds row[0, cols) to a in increasing index order: the elements before the
// first 16-byte boundary one at a time, the aligned body as 16-byte vectors
// (U loads in flight), and the remaining tail one at a time. Thread t of a
// group of n threads (n >= 32) takes vectors t, t + n, ...
template <typename T, int U, typename A>
__device__ __forceinline__ void am_scan(const T *row, int64_t cols, int t, int n, A &a)
{
    constexpr int E = 16 / sizeof(T);
    int64_t head = (int64_t)(((16 - ((uintptr_t)row & 15)) & 15) / sizeof(T));
    if (head > cols)
        head = cols;
    if (t < head)
        a.one(to_f(row[t]), t);
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
            a.vec(d[u], head + (k + (int64_t)u * n) * E);
    }
    for (; k < nvec; k += n)
        a.vec(__ldcs(v + k), head + k * E);
    const int64_t tail = head + nvec * E + t; // fewer than E elements remain
    if (tail < cols)
        a.one(to_f(row[tail]), tail);
}

// ---------------------------------------------------------------- v1 naive
template <typename T>
__global__ void am_v1_kernel(const T *x, int64_t *out, int64_t rows, int64_t cols)
{
    const int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const T *xr = x + r * cols;
    float m = to_f(xr[0]);
    int64_t idx = 0;
    for (int64_t j = 1; j < cols; j++) { // one thread walks the row: RC0a
        const float v = to_f(xr[j]);
        if (m == m && (v > m || v != v)) {
            m = v;
            idx = j;
        }
    }
    out[r] = idx;
}

template <typename T>
static int am_check(const DLTensor *in, int nin, const DLTensor *out, int nout,
                    const kgate_params *p)
{
    if (nin != 1 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<int64_t>(&out[0], 1) ||
        out[0].shape[0] != in[0].shape[0])
        return kernel_fail(p, 1, "argmax: expected x[R,C] -> i[R] (int64)");
    if (in[0].shape[1] < 1 && in[0].shape[0] > 0)
        return kernel_fail(p, 1, "argmax: rows of no elements have no maximum");
    return 0;
}

template <typename T>
static int am_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    int rc = am_check<T>(in, nin, out, nout, p);
    if (rc)
        return rc;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    if (rows == 0)
        return 0;
    am_v1_kernel<T><<<(unsigned)((rows + 63) / 64), 64, 0, (cudaStream_t)st>>>(
        (const T *)in[0].data, (int64_t *)out[0].data, rows, cols);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
// TPR threads per row; a block of max(TPR, 256) threads holds 256/TPR rows
// when TPR < 256.
template <typename T, int TPR>
__global__ __launch_bounds__(TPR < 256 ? 256 : TPR) void am_v2_kernel(const T *x, int64_t *out,
                                                                       int64_t rows, int64_t cols)
{
    constexpr int BLOCK = TPR < 256 ? 256 : TPR, WPR = TPR / 32;
    __shared__ float sm[BLOCK / 32];
    __shared__ long long si[BLOCK / 32];
    const int g = threadIdx.x / TPR, t = threadIdx.x % TPR, lane = threadIdx.x % 32;
    const int64_t row = (int64_t)blockIdx.x * (BLOCK / TPR) + g;
    am_acc<T> a{-INFINITY, -1, -INFINITY, -1, make_uint4(0, 0, 0, 0)};
    if (row < rows)
        am_scan<T, 4>(x + row * cols, cols, t, TPR, a);
    a.finish();
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, a.m, o);
        const long long i2 = __shfl_xor_sync(0xffffffffu, a.i, o);
        a.merge(m2, i2);
    }
    if (WPR > 1) {
        if (lane == 0) {
            sm[threadIdx.x / 32] = a.m;
            si[threadIdx.x / 32] = a.i;
        }
        __syncthreads();
        if (t < 32) { // the group's first warp combines its warps' pairs
            a.m = lane < WPR ? sm[g * WPR + lane] : -INFINITY;
            a.i = lane < WPR ? si[g * WPR + lane] : -1;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                const float m2 = __shfl_xor_sync(0xffffffffu, a.m, o);
                const long long i2 = __shfl_xor_sync(0xffffffffu, a.i, o);
                a.merge(m2, i2);
            }
        }
    }
    if (t == 0 && row < rows)
        out[row] = a.i < 0 ? 0 : a.i; // -1: the row holds only -Inf
}

template <typename T>
static int am_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    int rc = am_check<T>(in, nin, out, nout, p);
    if (rc)
        return rc;
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    if (rows == 0)
        return 0;
    const T *x = (const T *)in[0].data;
    int64_t *o = (int64_t *)out[0].data;
    launch_rows(rows, cols, sizeof(T), [&](auto tpr, unsigned grid, unsigned block) {
        am_v2_kernel<T, decltype(tpr)::value><<<grid, block, 0, s>>>(x, o, rows, cols);
    });
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"argmax_v1_fp16", "argmax", "fp16", NULL, 1, 1, am_v1<__half>,
     "one thread walks each row serially (RC0a)", NULL, NULL},
    {"argmax_v2_fp16", "argmax", "fp16", NULL, 1, 1, am_v2<__half>,
     "thread group per row, 16-byte loads, packed NaN-max, shuffle (value, index) pairs", NULL, NULL},
    {"argmax_v1_bf16", "argmax", "bf16", NULL, 1, 1, am_v1<__nv_bfloat16>,
     "one thread walks each row serially (RC0a)", NULL, NULL},
    {"argmax_v2_bf16", "argmax", "bf16", NULL, 1, 1, am_v2<__nv_bfloat16>,
     "thread group per row, 16-byte loads, packed NaN-max, shuffle (value, index) pairs", NULL, NULL},
    {"argmax_v1_fp32", "argmax", "fp32", NULL, 1, 1, am_v1<float>,
     "one thread walks each row serially (RC0a)", NULL, NULL},
    {"argmax_v2_fp32", "argmax", "fp32", NULL, 1, 1, am_v2<float>,
     "thread group per row, 16-byte loads, NaN-max, shuffle (value, index) pairs", NULL, NULL},
};
KG_EXPORT_VARIANTS(argmax, variants)
