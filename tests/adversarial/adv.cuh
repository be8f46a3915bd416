// Shared by the adversarial candidates (tests/adversarial/*.cu): element
// conversions, block reductions, the honest kernels every cheat is built on,
// and the launch functions the table in adversarial.cu lists.
//
// The honest kernels are plain and obviously right (one block per row, fp32
// accumulation, the NaN/Inf semantics of the fp64 reference), so that each
// candidate is wrong only where its cheat is. KG_ADV_HONEST=1 in the
// environment turns every cheat off (the control run: every kernel must then
// be OK or SLOW, spin_forever and illegal_address included).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kgate/plugin.h>

#define ADV_THREADS 256

// ------------------------------------------------------------ conversions
__device__ __forceinline__ float adv_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float adv_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float adv_f(float v) { return v; }
template <typename T> __device__ __forceinline__ T adv_to(float v);
template <> __device__ __forceinline__ __half adv_to<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 adv_to<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ float adv_to<float>(float v) { return v; }

// splitmix64's finalizer: the replay caches' hashes (detect.cu, memo.cu).
__device__ __forceinline__ unsigned long long adv_mix(unsigned long long x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// ------------------------------------------------------------- reductions
__device__ __forceinline__ float adv_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float adv_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Block-wide sum / max (blockDim.x a multiple of 32); every thread gets the
// result. `red` holds 32 floats of shared memory.
__device__ __forceinline__ float adv_block_sum(float v, float *red)
{
    v = adv_warp_sum(v);
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = blockDim.x >> 5;
    __syncthreads(); // red may still be read by a previous reduction
    if (l == 0)
        red[w] = v;
    __syncthreads();
    return adv_warp_sum(l < nw ? red[l] : 0.f);
}
__device__ __forceinline__ float adv_block_max(float v, float *red)
{
    v = adv_warp_max(v);
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = blockDim.x >> 5;
    __syncthreads();
    if (l == 0)
        red[w] = v;
    __syncthreads();
    return adv_warp_max(l < nw ? red[l] : -INFINITY);
}

// --------------------------------------------------------- honest kernels
// Softmax of one row per block. A NaN or +Inf makes the sum NaN, so the row
// is NaN; -Inf entries give 0; an all -Inf row gives exp(NaN) = NaN: the
// reference's semantics. Q: round x to fp16 first (the fp16_compute cheat).
template <typename T, bool Q = false>
__global__ void adv_softmax_rows(const T *x, T *y, int64_t cols)
{
    __shared__ float red[32];
    const T *xr = x + blockIdx.x * cols;
    T *yr = y + blockIdx.x * cols;
    auto ld = [&](int64_t j) {
        float v = adv_f(xr[j]);
        return Q ? __half2float(__float2half_rn(v)) : v;
    };
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        m = fmaxf(m, ld(j));
    m = adv_block_max(m, red);
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        s += expf(ld(j) - m);
    const float inv = 1.f / adv_block_sum(s, red);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        yr[j] = adv_to<T>(expf(ld(j) - m) * inv);
}

// A slow but honest fp16 softmax: one warp a row (blockDim.x = 32), scalar
// loads, three passes; far from the roof at every preset. A block returns at
// once when *skip is set (a replay cache's hit: memo.cu); skip may be NULL.
template <typename I = int>
__global__ void adv_warp_softmax(const __half *x, __half *y, int64_t cols, const I *skip)
{
    if (skip && *skip)
        return;
    const __half *xr = x + blockIdx.x * cols;
    __half *yr = y + blockIdx.x * cols;
    float m = -INFINITY, s = 0.f;
    for (int64_t j = threadIdx.x; j < cols; j += 32)
        m = fmaxf(m, __half2float(xr[j]));
    m = adv_warp_max(m);
    for (int64_t j = threadIdx.x; j < cols; j += 32)
        s += expf(__half2float(xr[j]) - m);
    const float inv = 1.f / adv_warp_sum(s);
    for (int64_t j = threadIdx.x; j < cols; j += 32)
        yr[j] = __float2half_rn(expf(__half2float(xr[j]) - m) * inv);
}

// Layer norm of one row per block (blockIdx.x), two passes over the row in
// fp32; adv_layer_norm_rows is the kernel.
template <typename T>
__device__ void adv_layer_norm_row(const T *x, const T *w, const T *b, T *y, int64_t cols, float eps)
{
    __shared__ float red[32];
    const T *xr = x + blockIdx.x * cols;
    T *yr = y + blockIdx.x * cols;
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        s += adv_f(xr[j]);
    const float mean = adv_block_sum(s, red) / (float)cols;
    float q = 0.f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        const float d = adv_f(xr[j]) - mean;
        q += d * d;
    }
    const float rstd = rsqrtf(adv_block_sum(q, red) / (float)cols + eps);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        yr[j] = adv_to<T>((adv_f(xr[j]) - mean) * rstd * adv_f(w[j]) + adv_f(b[j]));
}
template <typename T>
__global__ void adv_layer_norm_rows(const T *x, const T *w, const T *b, T *y, int64_t cols, float eps)
{
    adv_layer_norm_row<T>(x, w, b, y, cols, eps);
}

// Fills n elements with v.
template <typename T> __global__ void adv_fill(T *y, int64_t n, float v)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = adv_to<T>(v);
}

// ------------------------------------------------------------ host helpers
static inline int64_t adv_rows(const DLTensor *t) { return t->shape[0]; }
static inline int64_t adv_cols(const DLTensor *t) { return t->ndim > 1 ? t->shape[t->ndim - 1] : 1; }
static inline int64_t adv_numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

static inline int adv_fail(const kgate_params *p, int code, const char *msg)
{
    if (p && p->error && p->error_size)
        snprintf(p->error, p->error_size, "%s", msg);
    return code;
}

// The launch's return value: 0, or the pending CUDA error with its text.
static inline int adv_launched(const kgate_params *p)
{
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : adv_fail(p, (int)e, cudaGetErrorString(e));
}

// KG_ADV_HONEST=1: every cheat off (the control run).
static inline bool adv_honest(void)
{
    static int h = -1;
    if (h < 0) {
        const char *e = getenv("KG_ADV_HONEST");
        h = e && *e && strcmp(e, "0") != 0;
    }
    return h != 0;
}

// Whether stream s stays busy for hold_us, polled every poll_us: an
// evaluator that holds the stream behind a blocking kernel (kgate's blocker)
// is timing this call. Never while s is being captured (a query would break
// the capture).
static inline bool adv_stream_held(cudaStream_t s, int hold_us, int poll_us)
{
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &cap) != cudaSuccess || cap != cudaStreamCaptureStatusNone)
        return false;
    for (int waited_us = 0; cudaStreamQuery(s) == cudaErrorNotReady; waited_us += poll_us) {
        if (waited_us >= hold_us) {
            cudaGetLastError();
            return true;
        }
        struct timespec ts = {0, poll_us * 1000L};
        nanosleep(&ts, NULL);
    }
    cudaGetLastError();
    return false;
}

// The honest operators on stream s.
template <typename T, bool Q = false>
static inline int adv_softmax_on(const DLTensor *in, DLTensor *out, const kgate_params *p, cudaStream_t s)
{
    adv_softmax_rows<T, Q><<<(unsigned)adv_rows(&in[0]), ADV_THREADS, 0, s>>>(
        (const T *)in[0].data, (T *)out[0].data, adv_cols(&in[0]));
    return adv_launched(p);
}
template <typename T>
static inline int adv_layer_norm_on(const DLTensor *in, DLTensor *out, const kgate_params *p, cudaStream_t s,
                                    float eps)
{
    adv_layer_norm_rows<T><<<(unsigned)adv_rows(&in[0]), ADV_THREADS, 0, s>>>(
        (const T *)in[0].data, (const T *)in[1].data, (const T *)in[2].data, (T *)out[0].data,
        adv_cols(&in[0]), eps);
    return adv_launched(p);
}
static inline float adv_eps(const kgate_params *p) { return (float)kgate_scalar_get(p, "eps", 1e-5); }

// ------------------------------------------------------- the launch table
#define ADV_LAUNCH(name)                                                                          \
    int name(const DLTensor *in, int n_in, DLTensor *out, int n_out, const kgate_params *p,        \
             kgate_stream stream)

extern "C" {
// streams.cu
ADV_LAUNCH(adv_side_stream);
ADV_LAUNCH(adv_side_stream_join);
ADV_LAUNCH(adv_legacy_stream);
ADV_LAUNCH(adv_per_thread_stream);
ADV_LAUNCH(adv_graph_elsewhere);
ADV_LAUNCH(adv_host_thread);
ADV_LAUNCH(adv_deferred_thread);
ADV_LAUNCH(adv_named_flush);
// memory.cu
ADV_LAUNCH(adv_oob_after);
ADV_LAUNCH(adv_oob_before);
ADV_LAUNCH(adv_mutate);
ADV_LAUNCH(adv_pointer_cache);
ADV_LAUNCH(adv_stale_output);
ADV_LAUNCH(adv_ref_tamper);
ADV_LAUNCH(adv_ref_copy);
// numerics.cu
ADV_LAUNCH(adv_bf16_mean);
ADV_LAUNCH(adv_zeros);
ADV_LAUNCH(adv_constant);
ADV_LAUNCH(adv_ignores_eps);
ADV_LAUNCH(adv_fp16_compute);
ADV_LAUNCH(adv_tf32_compute);
ADV_LAUNCH(adv_fp16_mean);
ADV_LAUNCH(adv_hardcoded_shape);
ADV_LAUNCH(adv_no_tail);
// detect.cu
ADV_LAUNCH(adv_warmup_count);
ADV_LAUNCH(adv_held_stream);
ADV_LAUNCH(adv_persisting_l2);
ADV_LAUNCH(adv_content_cache);
// process.cu
ADV_LAUNCH(adv_host_compute);
ADV_LAUNCH(adv_illegal_address);
ADV_LAUNCH(adv_spin_forever);
ADV_LAUNCH(adv_forge_events);
ADV_LAUNCH(adv_setsid_child);
ADV_LAUNCH(adv_timer_hook);
ADV_LAUNCH(adv_cupti_off);
// library.cu
ADV_LAUNCH(adv_calls_cublas);
// memo.cu
ADV_LAUNCH(adv_content_memo_full);
ADV_LAUNCH(adv_content_memo_sampled);
ADV_LAUNCH(adv_late_skip);
ADV_LAUNCH(adv_phase_supports);
int adv_phase_supports_shape(const int64_t *extents, int n_extents);
// process.cu (more)
ADV_LAUNCH(adv_forged_unsupported);
ADV_LAUNCH(adv_zero_time);
}

// Every launch checks its tensor counts the same way.
#define ADV_EXPECT(nin, nout)                                                                     \
    do {                                                                                          \
        if (n_in != (nin) || n_out != (nout))                                                     \
            return adv_fail(p, 1, "adversarial: unexpected tensor count");                        \
    } while (0)
