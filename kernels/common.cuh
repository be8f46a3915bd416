// Helpers shared by the bundled kernels: element conversions, DLPack
// argument checks, block reductions, and a lazily grown scratch buffer.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>

#include <kgate/plugin.h>

template <typename T> struct dl_code;
template <> struct dl_code<__half> { static const int code = kDLFloat; };
template <> struct dl_code<__nv_bfloat16> { static const int code = kDLBfloat; };
template <> struct dl_code<float> { static const int code = kDLFloat; };
template <> struct dl_code<int32_t> { static const int code = kDLInt; };
template <> struct dl_code<int64_t> { static const int code = kDLInt; };

__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ double to_d(__half v) { return (double)__half2float(v); }
__device__ __forceinline__ double to_d(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
__device__ __forceinline__ double to_d(float v) { return (double)v; }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }

// Fills params->error (when given) and returns code: the ABI's error path.
static inline int kernel_fail(const kgate_params *p, int code, const char *msg)
{
    if (p && p->error && p->error_size)
        snprintf(p->error, p->error_size, "%s", msg);
    return code;
}

// Checks that a tensor has dtype T, the rank and is on a CUDA device.
template <typename T> static inline bool dl_is(const DLTensor *t, int rank)
{
    return t->dtype.code == dl_code<T>::code && t->dtype.bits == 8 * sizeof(T) &&
           t->dtype.lanes == 1 && t->ndim == rank && t->device.device_type == kDLCUDA;
}

// Sum over the block; every thread gets the result. `red` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float *red)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads(); // red may still be read by a previous reduction
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float block_max(float v, float *red)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o)) ;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// A device buffer that grows on demand and is reused across launches (the
// first launch, a warm-up, pays the cudaMalloc). Not thread-safe.
static inline void *scratch_get(void **buf, size_t *have, size_t need)
{
    if (*have < need) {
        if (*buf)
            cudaFree(*buf);
        *buf = NULL;
        *have = 0;
        if (cudaMalloc(buf, need) != cudaSuccess)
            return NULL;
        *have = need;
    }
    return *buf;
}

// Block-wide fp64 sum (reference kernels). `red` holds 32 doubles.
__device__ __forceinline__ double block_sum_d(double v, double *red)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Exports a kernels/<op>.cu file's variant table to the bundled candidate:
// the build generates kernels/bundled.c from every kernels/*.cu, calling
// kg_variants_<op>() for each.
#define KG_EXPORT_VARIANTS(op, array)                                           \
    extern "C" const kgate_kernel *kg_variants_##op(unsigned *n)                \
    {                                                                           \
        *n = (unsigned)(sizeof(array) / sizeof((array)[0]));                    \
        return array;                                                           \
    }

#define KG_KERNEL_LAUNCHED(p)                                                   \
    do {                                                                        \
        cudaError_t e_ = cudaGetLastError();                                    \
        if (e_ != cudaSuccess)                                                  \
            return kernel_fail(p, (int)e_, cudaGetErrorString(e_));             \
    } while (0)
