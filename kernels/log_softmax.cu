// log_softmax over the last dimension: y = x - max - log(sum(exp(x - max))).
//
// The fp64 reference is src/ops/log_softmax.cu.
//
// v1 naive (RC0a): serial row reduction: one thread per row walks its whole
//            row twice (the max, then the sum of exponentials), so a
//            4096-row problem runs on 4096 threads (32 blocks, a quarter of
//            the SMs) whose loads are one row apart; the block then writes
//            its rows coalesced.
// v2 fast:   one 512-thread block per row; the row is loaded once with 16-byte
//            streaming loads and stays packed in registers (8 x 16 bytes a
//            thread at 32768 fp16 columns); a block max, then one exponential
//            an element for the block sum, and the outputs x - max - log(sum)
//            need no exponential: one 16-byte store per 16 bytes of output.
//            (A first version reduced per-thread (max, sum) pairs with
//            rescaling and ran at rho 0.71 on the H200; this one follows
//            softmax v2's two plain reductions over the registers.) Rows that are not 16-byte
//            aligned or longer than 4096 vectors (fp32 beyond 16384 columns)
//            take a two-pass kernel: an online (max, sum) pass, then a pass
//            that re-reads the row (mostly from L2) and writes it.
//
// NaN/Inf: the pairs use fmaxf (a NaN never becomes the max) and let the NaN
// reach the sum through exp(NaN - max); +Inf makes exp(+Inf - +Inf) NaN; an
// all -Inf row keeps max -Inf and x - max is NaN; -Inf entries give -Inf.
#include "common.cuh"

// ---------------------------------------------------------------- helpers
// exp(a - m) for a <= m, where a == m gives exactly 1 (also -Inf == -Inf and
// +Inf == +Inf, where a - m would be NaN).
__device__ __forceinline__ float lsm_scale(float a, float m) { return a == m ? 1.f : __expf(a - m); }

// Combines two (max, sum of exp(x - max)) pairs into (m, s). A pair with max
// -Inf has sum 0 (or NaN when it saw a NaN), which the combination keeps.
// Symmetric bit for bit, so a butterfly leaves every lane the same result.
__device__ __forceinline__ void lsm_combine(float &m, float &s, float m2, float s2)
{
    const float mm = fmaxf(m, m2);
    s = s * lsm_scale(m, mm) + s2 * lsm_scale(m2, mm);
    m = mm;
}

// Block-wide combination of every thread's pair; every thread gets the
// result. red_m and red_s hold 32 floats each; blockDim.x is a multiple of 32.
__device__ __forceinline__ void lsm_block_combine(float &m, float &s, float *red_m, float *red_s)
{
    for (int o = 16; o > 0; o >>= 1)
        lsm_combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads(); // red_* may still be read by an earlier reduction
    if (lane == 0) {
        red_m[warp] = m;
        red_s[warp] = s;
    }
    __syncthreads();
    m = lane < nw ? red_m[lane] : -INFINITY;
    s = lane < nw ? red_s[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1)
        lsm_combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
}

// Packed maxima of 16-byte vectors (fmaxf's rule: a NaN loses to a number).
// Keeping the max pass packed leaves the unpacking to the exp pass alone, so
// that the compiler does not keep 64 unpacked values alive across passes.
template <typename T> __device__ __forceinline__ uint32_t lsm_max2(uint32_t a, uint32_t b);
template <> __device__ __forceinline__ uint32_t lsm_max2<float>(uint32_t a, uint32_t b)
{
    return __float_as_uint(fmaxf(__uint_as_float(a), __uint_as_float(b)));
}
template <> __device__ __forceinline__ uint32_t lsm_max2<__half>(uint32_t a, uint32_t b)
{
    __half2 r = __hmax2(*reinterpret_cast<const __half2 *>(&a),
                        *reinterpret_cast<const __half2 *>(&b));
    return *reinterpret_cast<const uint32_t *>(&r);
}
template <> __device__ __forceinline__ uint32_t lsm_max2<__nv_bfloat16>(uint32_t a, uint32_t b)
{
    __nv_bfloat162 r = __hmax2(*reinterpret_cast<const __nv_bfloat162 *>(&a),
                               *reinterpret_cast<const __nv_bfloat162 *>(&b));
    return *reinterpret_cast<const uint32_t *>(&r);
}

template <typename T> __device__ __forceinline__ uint4 lsm_vmax(uint4 a, uint4 b)
{
    return make_uint4(lsm_max2<T>(a.x, b.x), lsm_max2<T>(a.y, b.y), lsm_max2<T>(a.z, b.z),
                      lsm_max2<T>(a.w, b.w));
}

// A vector of -Inf in T's format (the identity of the max).
template <typename T> struct lsm_neginf;
template <> struct lsm_neginf<float> { static constexpr uint32_t w = 0xff800000u; };
template <> struct lsm_neginf<__half> { static constexpr uint32_t w = 0xfc00fc00u; };
template <> struct lsm_neginf<__nv_bfloat16> { static constexpr uint32_t w = 0xff80ff80u; };
template <typename T> __device__ __forceinline__ uint4 lsm_vneginf()
{
    return make_uint4(lsm_neginf<T>::w, lsm_neginf<T>::w, lsm_neginf<T>::w, lsm_neginf<T>::w);
}

// The largest element of a vector, as a float.
template <typename T> __device__ __forceinline__ float lsm_vmax_f(uint4 v)
{
    const uint32_t w = lsm_max2<T>(lsm_max2<T>(v.x, v.y), lsm_max2<T>(v.z, v.w));
    if (sizeof(T) == 4)
        return __uint_as_float(w);
    const T *e = reinterpret_cast<const T *>(&w);
    return fmaxf(to_f(e[0]), to_f(e[1]));
}

// Adds the elements of a 16-byte vector to a running (max, sum) pair.
template <typename T> __device__ __forceinline__ void lsm_online_vec(float &m, float &s, uint4 v)
{
    constexpr int E = 16 / sizeof(T);
    const T *e = reinterpret_cast<const T *>(&v);
    const float mn = fmaxf(m, lsm_vmax_f<T>(v));
    const float base = mn == -INFINITY ? 0.f : mn; // all -Inf (or NaN) so far
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < E; k++)
        acc += __expf(to_f(e[k]) - base);
    s = s * lsm_scale(m, mn) + acc;
    m = mn;
}

__device__ __forceinline__ void lsm_online_one(float &m, float &s, float x)
{
    const float mn = fmaxf(m, x);
    const float base = mn == -INFINITY ? 0.f : mn;
    s = s * lsm_scale(m, mn) + __expf(x - base);
    m = mn;
}

// ---------------------------------------------------------------- v1 naive
// Thread t of block b owns row b * blockDim.x + t: it walks the row alone
// (RC0a). The stats go through shared memory so that the block can write its
// rows with coalesced stores.
template <typename T>
__global__ void lsm_v1_kernel(const T *x, T *y, int64_t rows, int64_t cols)
{
    __shared__ float st_m[128], st_l[128];
    const int64_t first = (int64_t)blockIdx.x * blockDim.x;
    const int64_t row = first + threadIdx.x;
    if (row < rows) {
        const T *xr = x + row * cols;
        float m = -INFINITY;
        for (int64_t j = 0; j < cols; j++)
            m = fmaxf(m, to_f(xr[j]));
        float s = 0.f;
        for (int64_t j = 0; j < cols; j++)
            s += expf(to_f(xr[j]) - m);
        st_m[threadIdx.x] = m;
        st_l[threadIdx.x] = logf(s);
    }
    __syncthreads();
    const int64_t n = rows - first < (int64_t)blockDim.x ? rows - first : (int64_t)blockDim.x;
    for (int64_t r = 0; r < n; r++) {
        const T *xr = x + (first + r) * cols;
        T *yr = y + (first + r) * cols;
        const float m = st_m[r], l = st_l[r];
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
            yr[j] = from_f<T>((to_f(xr[j]) - m) - l);
    }
}

template <typename T>
static int lsm_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    if (nin != 1 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<T>(&out[0], 2) ||
        out[0].shape[0] != in[0].shape[0] || out[0].shape[1] != in[0].shape[1])
        return kernel_fail(p, 1, "log_softmax v1: expected x[R,C] -> y[R,C]");
    cudaStream_t s = (cudaStream_t)st;
    int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    if (rows == 0 || cols == 0)
        return 0;
    unsigned blocks = (unsigned)((rows + 127) / 128);
    lsm_v1_kernel<T><<<blocks, 128, 0, s>>>((const T *)in[0].data, (T *)out[0].data, rows, cols);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
#define LSM_THREADS 512

// The row in registers: V 16-byte vectors a thread, read once, written once.
template <typename T, int V>
__global__ __launch_bounds__(LSM_THREADS) void lsm_v2_regs(const T *x, T *y, int64_t cols)
{
    __shared__ float red[32];
    constexpr int E = 16 / sizeof(T); // elements per 16-byte vector
    const int nvec = (int)(cols / E);
    const int64_t row = blockIdx.x;
    const uint4 *xv = reinterpret_cast<const uint4 *>(x + row * cols);
    uint4 *yv = reinterpret_cast<uint4 *>(y + row * cols);
    uint4 d[V];
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < V; i++) {
        const int c = threadIdx.x + i * LSM_THREADS;
        if (c < nvec) {
            d[i] = __ldcs(xv + c);
            const T *e = reinterpret_cast<const T *>(&d[i]);
#pragma unroll
            for (int k = 0; k < E; k++)
                m = fmaxf(m, to_f(e[k]));
        }
    }
    // the row's max for every thread, then one exponential an element (a
    // NaN, or exp(+Inf - +Inf), reaches the sum and makes the row NaN)
    m = block_max(m, red);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < V; i++) {
        const int c = threadIdx.x + i * LSM_THREADS;
        if (c < nvec) {
            const T *e = reinterpret_cast<const T *>(&d[i]);
#pragma unroll
            for (int k = 0; k < E; k++)
                s += __expf(to_f(e[k]) - m);
        }
    }
    const float l = logf(block_sum(s, red));
#pragma unroll
    for (int i = 0; i < V; i++) {
        const int c = threadIdx.x + i * LSM_THREADS;
        if (c < nvec) {
            const T *e = reinterpret_cast<const T *>(&d[i]);
            uint4 o;
            T *oe = reinterpret_cast<T *>(&o);
#pragma unroll
            for (int k = 0; k < E; k++)
                oe[k] = from_f<T>((to_f(e[k]) - m) - l);
            __stcs(yv + c, o);
        }
    }
}

template <typename T, bool VEC>
__global__ __launch_bounds__(LSM_THREADS) void lsm_v2_two_pass(const T *x, T *y, int64_t cols)
{
    __shared__ float red_m[32], red_s[32];
    constexpr int E = 16 / sizeof(T);
    const int64_t row = blockIdx.x;
    const T *xr = x + row * cols;
    T *yr = y + row * cols;
    float m = -INFINITY, s = 0.f;
    if (VEC) {
        const uint4 *xv = reinterpret_cast<const uint4 *>(xr);
        const int64_t nvec = cols / E;
        for (int64_t c = threadIdx.x; c < nvec; c += LSM_THREADS)
            lsm_online_vec<T>(m, s, __ldg(xv + c)); // kept in L2 for the second pass
    } else {
        for (int64_t j = threadIdx.x; j < cols; j += LSM_THREADS)
            lsm_online_one(m, s, to_f(xr[j]));
    }
    lsm_block_combine(m, s, red_m, red_s);
    const float l = logf(s);
    if (VEC) {
        const uint4 *xv = reinterpret_cast<const uint4 *>(xr);
        uint4 *yv = reinterpret_cast<uint4 *>(yr);
        const int64_t nvec = cols / E;
        for (int64_t c = threadIdx.x; c < nvec; c += LSM_THREADS) {
            const uint4 v = __ldcs(xv + c);
            const T *e = reinterpret_cast<const T *>(&v);
            uint4 o;
            T *oe = reinterpret_cast<T *>(&o);
#pragma unroll
            for (int k = 0; k < E; k++)
                oe[k] = from_f<T>((to_f(e[k]) - m) - l);
            __stcs(yv + c, o);
        }
    } else {
        for (int64_t j = threadIdx.x; j < cols; j += LSM_THREADS)
            yr[j] = from_f<T>((to_f(xr[j]) - m) - l);
    }
}

template <typename T>
static int lsm_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    if (nin != 1 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<T>(&out[0], 2) ||
        out[0].shape[0] != in[0].shape[0] || out[0].shape[1] != in[0].shape[1])
        return kernel_fail(p, 1, "log_softmax v2: expected x[R,C] -> y[R,C]");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    if (rows == 0 || cols == 0)
        return 0;
    if (rows > 0x7fffffff)
        return kernel_fail(p, 2, "log_softmax v2: more than 2^31 - 1 rows");
    const T *x = (const T *)in[0].data;
    T *y = (T *)out[0].data;
    constexpr int E = 16 / sizeof(T);
    const int64_t nvec = cols / E;
    const bool aligned = cols % E == 0 && (((uintptr_t)x | (uintptr_t)y) & 15) == 0;
    const unsigned grid = (unsigned)rows;
    if (!aligned)
        lsm_v2_two_pass<T, false><<<grid, LSM_THREADS, 0, s>>>(x, y, cols);
    else if (nvec > 8 * LSM_THREADS)
        lsm_v2_two_pass<T, true><<<grid, LSM_THREADS, 0, s>>>(x, y, cols);
    else if (nvec <= LSM_THREADS)
        lsm_v2_regs<T, 1><<<grid, LSM_THREADS, 0, s>>>(x, y, cols);
    else if (nvec <= 2 * LSM_THREADS)
        lsm_v2_regs<T, 2><<<grid, LSM_THREADS, 0, s>>>(x, y, cols);
    else if (nvec <= 4 * LSM_THREADS)
        lsm_v2_regs<T, 4><<<grid, LSM_THREADS, 0, s>>>(x, y, cols);
    else
        lsm_v2_regs<T, 8><<<grid, LSM_THREADS, 0, s>>>(x, y, cols);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

#define LSM_V1_SUM "one thread per row walks it serially for max and sum (RC0a)"
#define LSM_V2_SUM "row in registers, 16-byte I/O, one (max, sum) block reduction"

static const kgate_kernel variants[] = {
    {"log_softmax_v1_fp16", "log_softmax", "fp16", NULL, 1, 1, lsm_v1<__half>, LSM_V1_SUM, NULL, NULL},
    {"log_softmax_v2_fp16", "log_softmax", "fp16", NULL, 1, 1, lsm_v2<__half>, LSM_V2_SUM, NULL, NULL},
    {"log_softmax_v1_bf16", "log_softmax", "bf16", NULL, 1, 1, lsm_v1<__nv_bfloat16>, LSM_V1_SUM,
     NULL, NULL},
    {"log_softmax_v2_bf16", "log_softmax", "bf16", NULL, 1, 1, lsm_v2<__nv_bfloat16>, LSM_V2_SUM,
     NULL, NULL},
    {"log_softmax_v1_fp32", "log_softmax", "fp32", NULL, 1, 1, lsm_v1<float>, LSM_V1_SUM, NULL, NULL},
    {"log_softmax_v2_fp32", "log_softmax", "fp32", NULL, 1, 1, lsm_v2<float>, LSM_V2_SUM, NULL, NULL},
};
KG_EXPORT_VARIANTS(log_softmax, variants)
