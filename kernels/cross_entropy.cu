// cross_entropy per row: loss[r] = logsumexp(logits[r,:]) - logits[r, target[r]],
// 0 where target[r] == ignore_index (the ignored row is not read).
//
// The fp64 reference is src/ops/cross_entropy.cu.
//
// v1 naive (RC0a): serial row reduction: one thread per row walks the whole
//            row twice (the max, then the sum of exponentials), so a
//            4096-row problem runs on 4096 threads (32 blocks) whose loads are
//            one row apart.
// v2 fast:   one warp per row, every row resident at once at the presets
//            (4096 warps, 31 an SM): one pass over the row with 16-byte
//            streaming loads, 8 of them in flight per lane, folded into an
//            online (max, sum of exp) pair in fp32 (a max per 8 vectors, one
//            rescale per batch), a warp-shuffle tree to combine the lanes'
//            pairs, and the target logit gathered once by lane 0. No shared
//            memory, no block barrier. Rows that are not 16-byte aligned
//            take the same kernel with scalar loads.
//
// NaN/Inf (as the reference): fmaxf keeps a NaN out of the max, and exp(NaN -
// max) carries it into the sum; a +Inf makes exp(+Inf - +Inf) NaN; an all
// -Inf row keeps max -Inf, and max - x[t] is NaN; a -Inf target logit gives
// max - x[t] = +Inf. A target outside [0, COLS) that is not ignore_index
// gives NaN (PyTorch raises).
#include "common.cuh"

// ---------------------------------------------------------------- helpers
// exp(a - m) for a <= m, where a == m gives exactly 1 (also -Inf == -Inf and
// +Inf == +Inf, where a - m would be NaN).
__device__ __forceinline__ float xent_scale(float a, float m) { return a == m ? 1.f : __expf(a - m); }

// Combines two (max, sum of exp(x - max)) pairs; symmetric bit for bit.
__device__ __forceinline__ void xent_combine(float &m, float &s, float m2, float s2)
{
    const float mm = fmaxf(m, m2);
    s = s * xent_scale(m, mm) + s2 * xent_scale(m2, mm);
    m = mm;
}

// Packed maxima of 16-byte vectors (fmaxf's rule: a NaN loses to a number).
// The max pass stays packed, so only the exp pass unpacks (no spills).
template <typename T> __device__ __forceinline__ uint32_t xent_max2(uint32_t a, uint32_t b);
template <> __device__ __forceinline__ uint32_t xent_max2<float>(uint32_t a, uint32_t b)
{
    return __float_as_uint(fmaxf(__uint_as_float(a), __uint_as_float(b)));
}
template <> __device__ __forceinline__ uint32_t xent_max2<__nv_bfloat16>(uint32_t a, uint32_t b)
{
    __nv_bfloat162 r = __hmax2(*reinterpret_cast<const __nv_bfloat162 *>(&a),
                               *reinterpret_cast<const __nv_bfloat162 *>(&b));
    return *reinterpret_cast<const uint32_t *>(&r);
}

template <typename T> __device__ __forceinline__ uint4 xent_vmax(uint4 a, uint4 b)
{
    return make_uint4(xent_max2<T>(a.x, b.x), xent_max2<T>(a.y, b.y), xent_max2<T>(a.z, b.z),
                      xent_max2<T>(a.w, b.w));
}

// The largest element of a vector, as a float.
template <typename T> __device__ __forceinline__ float xent_vmax_f(uint4 v)
{
    const uint32_t w = xent_max2<T>(xent_max2<T>(v.x, v.y), xent_max2<T>(v.z, v.w));
    if (sizeof(T) == 4)
        return __uint_as_float(w);
    const T *e = reinterpret_cast<const T *>(&w);
    return fmaxf(to_f(e[0]), to_f(e[1]));
}

// The loss from the row's pair and the target logit: -((xt - m) - log s).
__device__ __forceinline__ float xent_loss(float m, float s, float xt)
{
    return (m - xt) + logf(s);
}

// ---------------------------------------------------------------- v1 naive
template <typename T>
__global__ void xent_v1_kernel(const T *x, const int64_t *target, T *loss, int64_t rows,
                               int64_t cols, int64_t ignore)
{
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows)
        return;
    const int64_t t = target[row];
    if (t == ignore) {
        loss[row] = from_f<T>(0.f);
        return;
    }
    if (t < 0 || t >= cols) {
        loss[row] = from_f<T>(NAN);
        return;
    }
    const T *xr = x + row * cols;
    float m = -INFINITY;
    for (int64_t j = 0; j < cols; j++)
        m = fmaxf(m, to_f(xr[j]));
    float s = 0.f;
    for (int64_t j = 0; j < cols; j++)
        s += expf(to_f(xr[j]) - m);
    loss[row] = from_f<T>((m - to_f(xr[t])) + logf(s));
}

// logits[R,C] (T), target[R] (int64) -> loss[R] (T), on the GPU.
template <typename T>
static bool xent_args(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    return nin == 2 && nout == 1 && dl_is<T>(&in[0], 2) && dl_is<int64_t>(&in[1], 1) &&
           dl_is<T>(&out[0], 1) && in[1].shape[0] == in[0].shape[0] &&
           out[0].shape[0] == in[0].shape[0];
}

template <typename T>
static int xent_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                   kgate_stream st)
{
    if (!xent_args<T>(in, nin, out, nout))
        return kernel_fail(p, 1,
                           "cross_entropy v1: expected logits[R,C], target[R] (int64) -> loss[R]");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    const int64_t ignore = (int64_t)kgate_scalar_get(p, "ignore_index", -100);
    if (rows == 0)
        return 0;
    xent_v1_kernel<T><<<(unsigned)((rows + 127) / 128), 128, 0, s>>>(
        (const T *)in[0].data, (const int64_t *)in[1].data, (T *)out[0].data, rows, cols, ignore);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
#define XENT_WARPS 4 // warps (rows) a block
#define XENT_U 8     // 16-byte loads in flight a lane

template <typename T, bool VEC>
__global__ __launch_bounds__(32 * XENT_WARPS, 8) void xent_v2_kernel(const T *x,
                                                                     const int64_t *target,
                                                                     T *loss, int64_t rows,
                                                                     int64_t cols, int64_t ignore)
{
    constexpr int E = 16 / sizeof(T);
    const int lane = threadIdx.x % 32;
    const int64_t row = (int64_t)blockIdx.x * XENT_WARPS + threadIdx.x / 32;
    if (row >= rows) // the same for the whole warp
        return;
    const int64_t t = target[row];
    if (t == ignore) {
        if (lane == 0)
            loss[row] = from_f<T>(0.f);
        return;
    }
    const bool valid = t >= 0 && t < cols;
    const T *xr = x + row * cols;
    float xt = NAN;
    if (lane == 0 && valid)
        xt = to_f(xr[t]); // issued first, its latency hides behind the row
    float m = -INFINITY, s = 0.f;
    if (VEC) {
        const uint4 *xv = reinterpret_cast<const uint4 *>(xr);
        const int64_t nvec = cols / E;
        int64_t c = lane;
        for (; c + (XENT_U - 1) * 32 < nvec; c += XENT_U * 32) {
            uint4 d[XENT_U];
#pragma unroll
            for (int u = 0; u < XENT_U; u++)
                d[u] = __ldcs(xv + c + u * 32);
            uint4 pm = d[0];
#pragma unroll
            for (int u = 1; u < XENT_U; u++)
                pm = xent_vmax<T>(pm, d[u]);
            const float mn = fmaxf(m, xent_vmax_f<T>(pm));
            const float base = mn == -INFINITY ? 0.f : mn; // all -Inf (or NaN) so far
            float acc = 0.f;
#pragma unroll
            for (int u = 0; u < XENT_U; u++) {
                const T *e = reinterpret_cast<const T *>(&d[u]);
                float a = 0.f; // a short partial sum a vector: a shallower tree
#pragma unroll
                for (int k = 0; k < E; k++)
                    a += __expf(to_f(e[k]) - base);
                acc += a;
            }
            s = s * xent_scale(m, mn) + acc;
            m = mn;
        }
        for (; c < nvec; c += 32) {
            const uint4 v = __ldcs(xv + c);
            const T *e = reinterpret_cast<const T *>(&v);
            const float mn = fmaxf(m, xent_vmax_f<T>(v));
            const float base = mn == -INFINITY ? 0.f : mn;
            float acc = 0.f;
#pragma unroll
            for (int k = 0; k < E; k++)
                acc += __expf(to_f(e[k]) - base);
            s = s * xent_scale(m, mn) + acc;
            m = mn;
        }
    } else {
        for (int64_t j = lane; j < cols; j += 32) {
            const float v = to_f(xr[j]);
            const float mn = fmaxf(m, v);
            const float base = mn == -INFINITY ? 0.f : mn;
            s = s * xent_scale(m, mn) + __expf(v - base);
            m = mn;
        }
    }
    for (int o = 16; o > 0; o >>= 1)
        xent_combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    if (lane == 0)
        loss[row] = from_f<T>(valid ? xent_loss(m, s, xt) : NAN);
}

template <typename T>
static int xent_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                   kgate_stream st)
{
    if (!xent_args<T>(in, nin, out, nout))
        return kernel_fail(p, 1,
                           "cross_entropy v2: expected logits[R,C], target[R] (int64) -> loss[R]");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    const int64_t ignore = (int64_t)kgate_scalar_get(p, "ignore_index", -100);
    if (rows == 0)
        return 0;
    const T *x = (const T *)in[0].data;
    constexpr int E = 16 / sizeof(T);
    const bool aligned = cols % E == 0 && ((uintptr_t)x & 15) == 0;
    const unsigned grid = (unsigned)((rows + XENT_WARPS - 1) / XENT_WARPS);
    if (aligned)
        xent_v2_kernel<T, true><<<grid, 32 * XENT_WARPS, 0, s>>>(
            x, (const int64_t *)in[1].data, (T *)out[0].data, rows, cols, ignore);
    else
        xent_v2_kernel<T, false><<<grid, 32 * XENT_WARPS, 0, s>>>(
            x, (const int64_t *)in[1].data, (T *)out[0].data, rows, cols, ignore);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

#define XENT_V1_SUM "one thread per row walks it serially for max and sum (RC0a)"
#define XENT_V2_SUM "warp per row, one pass, 16-byte loads, online (max, sum) in fp32"

static const kgate_kernel variants[] = {
    {"cross_entropy_v1_fp32", "cross_entropy", "fp32", NULL, 2, 1, xent_v1<float>, XENT_V1_SUM,
     "ignore_index", NULL},
    {"cross_entropy_v2_fp32", "cross_entropy", "fp32", NULL, 2, 1, xent_v2<float>, XENT_V2_SUM,
     "ignore_index", NULL},
    {"cross_entropy_v1_bf16", "cross_entropy", "bf16", NULL, 2, 1, xent_v1<__nv_bfloat16>,
     XENT_V1_SUM, "ignore_index", NULL},
    {"cross_entropy_v2_bf16", "cross_entropy", "bf16", NULL, 2, 1, xent_v2<__nv_bfloat16>,
     XENT_V2_SUM, "ignore_index", NULL},
};
KG_EXPORT_VARIANTS(cross_entropy, variants)
