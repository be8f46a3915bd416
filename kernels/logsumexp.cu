// logsumexp over the last dimension: y[r] = log(sum(exp(x[r, :]))), as
// torch.logsumexp: m + log(sum(exp(x - m))) with m the row maximum.
//
// The fp64 reference is src/ops/logsumexp.cu.
//
// v1 naive (RC3): register spill / local memory: a 64-thread block per row,
//            each thread first copies its slice of the row (up to 256 values
//            at a time) into a float[256] array that it indexes with a
//            run-time counter, so the array lives in local memory: every
//            element is written to local memory and read back twice (the
//            maximum, then the sum of exponentials). The kernel also takes
//            255 registers (and spills), so an SM holds 4 blocks (256
//            threads), too few to hide the local and global latencies.
// v2 fast:   one pass: a group of 32..512 threads per row (at most 16
//            vectors of 16 bytes a thread, more threads while the rows alone
//            would not fill the SMs; several rows per 256-thread block for
//            short rows), 16-byte streaming loads, four independent loads in
//            flight per thread. Each thread keeps an online (max, sum of
//            exp(x - max)) pair: per 16-byte vector, the vector maximum
//            rescales the sum when it raises the running max, then the vector
//            adds exp2(x*log2e - max*log2e) (one FMA and one ex2.approx an
//            element) as a tree. The group combines the pairs by warp shuffles
//            and shared memory and writes max + log(sum). A row whose start is
//            not 16-byte aligned (COLS not a multiple of the vector) takes its
//            first and last few elements one at a time.
//
// NaN/Inf (PyTorch's results): the maxima use fmaxf (a NaN never becomes the
// max) and the NaN reaches the sum through exp(NaN - max), so a row with a
// NaN gives NaN. While the running max is infinite, exp(a - max) is taken as
// 1 where a equals the max: a +Inf row gives +Inf + log(count) = +Inf, an all
// -Inf row -Inf + log(COLS) = -Inf, and -Inf entries under a finite max add 0.
#include <stdint.h>

#include "common.cuh"

// ---------------------------------------------------------------- helpers
#define LS_LOG2E 1.4426950408889634f

__device__ __forceinline__ float ls_ex2(float v)
{
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}

// exp(a - m) for a <= m, exactly 1 where a == m (also where both are +Inf or
// both -Inf, where a - m would be NaN).
__device__ __forceinline__ float ls_scale(float a, float m) { return a == m ? 1.f : __expf(a - m); }

// Adds E values to the running pair (m, s).
template <int E> __device__ __forceinline__ void ls_add(float &m, float &s, const float *f)
{
    float vm = f[0];
#pragma unroll
    for (int k = 1; k < E; k++)
        vm = fmaxf(vm, f[k]);
    if (vm > m) { // a larger max: rescale the sum (exp(-Inf) = 0 when m was -Inf)
        s *= ls_scale(m, vm);
        m = vm;
    }
    float p[E];
    if (fabsf(m) != INFINITY) {
        const float ml = m * LS_LOG2E;
#pragma unroll
        for (int k = 0; k < E; k++)
            p[k] = ls_ex2(fmaf(f[k], LS_LOG2E, -ml));
    } else {
#pragma unroll
        for (int k = 0; k < E; k++)
            p[k] = ls_scale(f[k], m);
    }
#pragma unroll
    for (int w = 1; w < E; w *= 2)
#pragma unroll
        for (int k = 0; k + w < E; k += 2 * w)
            p[k] += p[k + w];
    s += p[0];
}

// Combines the pair (m2, s2) into (m, s).
__device__ __forceinline__ void ls_merge(float &m, float &s, float m2, float s2)
{
    const float mm = fmaxf(m, m2);
    s = s * ls_scale(m, mm) + s2 * ls_scale(m2, mm);
    m = mm;
}

template <typename T> __device__ __forceinline__ void ls_unpack(const uint4 &d, float *f)
{
    const T *e = reinterpret_cast<const T *>(&d);
#pragma unroll
    for (int k = 0; k < (int)(16 / sizeof(T)); k++)
        f[k] = to_f(e[k]);
}

// The pair of row[0, cols) seen by thread t of a group of n threads
// (n >= 32): the elements before the first 16-byte boundary one at a time,
// the aligned body as 16-byte vectors (U loads in flight), the tail one at a
// time.
template <typename T, int U>
__device__ __forceinline__ void ls_scan(const T *row, int64_t cols, int t, int n, float &m,
                                        float &s)
{
    constexpr int E = 16 / sizeof(T);
    int64_t head = (int64_t)(((16 - ((uintptr_t)row & 15)) & 15) / sizeof(T));
    if (head > cols)
        head = cols;
    if (t < head) {
        const float f = to_f(row[t]);
        ls_add<1>(m, s, &f);
    }
    const int64_t nvec = (cols - head) / E;
    const uint4 *v = reinterpret_cast<const uint4 *>(row + head);
    int64_t k = t;
    for (; k + (int64_t)(U - 1) * n < nvec; k += (int64_t)U * n) {
        uint4 d[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            d[u] = __ldcs(v + k + (int64_t)u * n);
#pragma unroll
        for (int u = 0; u < U; u++) {
            float f[E];
            ls_unpack<T>(d[u], f);
            ls_add<E>(m, s, f);
        }
    }
    for (; k < nvec; k += n) {
        float f[E];
        ls_unpack<T>(__ldcs(v + k), f);
        ls_add<E>(m, s, f);
    }
    const int64_t tail = head + nvec * E + t; // fewer than E elements remain
    if (tail < cols) {
        const float f = to_f(row[tail]);
        ls_add<1>(m, s, &f);
    }
}

template <typename T>
static int ls_check(const DLTensor *in, int nin, const DLTensor *out, int nout,
                    const kgate_params *p)
{
    if (nin != 1 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<T>(&out[0], 1) ||
        out[0].shape[0] != in[0].shape[0])
        return kernel_fail(p, 1, "logsumexp: expected x[R,C] -> y[R]");
    if (in[0].shape[1] < 1 && in[0].shape[0] > 0)
        return kernel_fail(p, 1, "logsumexp: rows of no elements");
    return 0;
}

// ---------------------------------------------------------------- v1 naive
#define LS_V1_THREADS 64
#define LS_V1_CHUNK 256

template <typename T> __global__ void ls_v1_kernel(const T *x, T *y, int64_t cols)
{
    __shared__ float rm[LS_V1_THREADS / 32], rs[LS_V1_THREADS / 32];
    float buf[LS_V1_CHUNK]; // indexed at run time: local memory (RC3)
    const T *xr = x + (int64_t)blockIdx.x * cols;
    float m = -INFINITY, s = 0.f;
    for (int64_t base = 0; base < cols; base += (int64_t)LS_V1_THREADS * LS_V1_CHUNK) {
        int n = 0;
        for (int64_t j = base + threadIdx.x; j < cols && n < LS_V1_CHUNK; j += LS_V1_THREADS)
            buf[n++] = to_f(xr[j]);
        float cm = m;
        for (int k = 0; k < n; k++)
            cm = fmaxf(cm, buf[k]);
        s *= cm == m ? 1.f : expf(m - cm);
        m = cm;
        for (int k = 0; k < n; k++)
            s += buf[k] == m ? 1.f : expf(buf[k] - m);
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        ls_merge(m, s, m2, s2);
    }
    if (threadIdx.x % 32 == 0) {
        rm[threadIdx.x / 32] = m;
        rs[threadIdx.x / 32] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < LS_V1_THREADS / 32; w++)
            ls_merge(m, s, rm[w], rs[w]);
        y[blockIdx.x] = from_f<T>(m + logf(s));
    }
}

template <typename T>
static int ls_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    int rc = ls_check<T>(in, nin, out, nout, p);
    if (rc)
        return rc;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    if (rows == 0)
        return 0;
    ls_v1_kernel<T><<<(unsigned)rows, LS_V1_THREADS, 0, (cudaStream_t)st>>>(
        (const T *)in[0].data, (T *)out[0].data, cols);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
// TPR threads per row; a block of max(TPR, 256) threads holds 256/TPR rows
// when TPR < 256.
template <typename T, int TPR>
__global__ __launch_bounds__(TPR < 256 ? 256 : TPR) void ls_v2_kernel(const T *x, T *y,
                                                                       int64_t rows, int64_t cols)
{
    constexpr int BLOCK = TPR < 256 ? 256 : TPR, WPR = TPR / 32;
    __shared__ float rm[BLOCK / 32], rs[BLOCK / 32];
    const int g = threadIdx.x / TPR, t = threadIdx.x % TPR, lane = threadIdx.x % 32;
    const int64_t row = (int64_t)blockIdx.x * (BLOCK / TPR) + g;
    float m = -INFINITY, s = 0.f;
    if (row < rows)
        ls_scan<T, 4>(x + row * cols, cols, t, TPR, m, s);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        ls_merge(m, s, m2, s2);
    }
    if (WPR > 1) {
        if (lane == 0) {
            rm[threadIdx.x / 32] = m;
            rs[threadIdx.x / 32] = s;
        }
        __syncthreads();
        if (t < 32) { // the group's first warp combines its warps' pairs
            m = lane < WPR ? rm[g * WPR + lane] : -INFINITY;
            s = lane < WPR ? rs[g * WPR + lane] : 0.f;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
                const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
                ls_merge(m, s, m2, s2);
            }
        }
    }
    if (t == 0 && row < rows)
        y[row] = from_f<T>(m + logf(s));
}

template <typename T>
static int ls_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    int rc = ls_check<T>(in, nin, out, nout, p);
    if (rc)
        return rc;
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    if (rows == 0)
        return 0;
    const T *x = (const T *)in[0].data;
    T *y = (T *)out[0].data;
    launch_rows(rows, cols, sizeof(T), [&](auto tpr, unsigned grid, unsigned block) {
        ls_v2_kernel<T, decltype(tpr)::value><<<grid, block, 0, s>>>(x, y, rows, cols);
    });
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"logsumexp_v1_fp32", "logsumexp", "fp32", NULL, 1, 1, ls_v1<float>,
     "row slices cached in a dynamically indexed local array (RC3)", NULL, NULL},
    {"logsumexp_v2_fp32", "logsumexp", "fp32", NULL, 1, 1, ls_v2<float>,
     "one pass, online (max, sum) pairs, 16-byte loads, shuffle reduction", NULL, NULL},
    {"logsumexp_v1_fp16", "logsumexp", "fp16", NULL, 1, 1, ls_v1<__half>,
     "row slices cached in a dynamically indexed local array (RC3)", NULL, NULL},
    {"logsumexp_v2_fp16", "logsumexp", "fp16", NULL, 1, 1, ls_v2<__half>,
     "one pass, online (max, sum) pairs, 16-byte loads, shuffle reduction", NULL, NULL},
    {"logsumexp_v1_bf16", "logsumexp", "bf16", NULL, 1, 1, ls_v1<__nv_bfloat16>,
     "row slices cached in a dynamically indexed local array (RC3)", NULL, NULL},
    {"logsumexp_v2_bf16", "logsumexp", "bf16", NULL, 1, 1, ls_v2<__nv_bfloat16>,
     "one pass, online (max, sum) pairs, 16-byte loads, shuffle reduction", NULL, NULL},
};
KG_EXPORT_VARIANTS(logsumexp, variants)
