// Helpers shared by the bundled kernels: element conversions, DLPack
// argument checks, block reductions, a lazily grown scratch buffer, and
// launch shapes (one wave of a grid-stride kernel, threads per row).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>

#include <type_traits>

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

// The device's SM count (132, the H200's, when it cannot be read).
static inline int sm_count(void)
{
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
            sms < 1) {
            cudaGetLastError();
            sms = 132;
        }
    }
    return sms;
}

// Blocks for a grid-stride launch of kernel K with BLOCK threads: one full
// wave (as many blocks as fit on every SM at once), fewer when there are
// fewer tiles. Measured once per kernel.
template <auto K, int BLOCK> static unsigned wave_grid(int64_t tiles)
{
    static int64_t wave = 0;
    if (wave <= 0) {
        int per_sm = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, K, BLOCK, 0) != cudaSuccess ||
            per_sm <= 0) {
            cudaGetLastError();
            per_sm = 4;
        }
        wave = (int64_t)sm_count() * per_sm;
    }
    return (unsigned)(tiles < wave ? tiles : wave);
}

// Threads per row of a row-wise reduction over `cols` elements of `elem`
// bytes: enough that a thread reads at most 16 vectors of 16 bytes, then more
// (down to 4 vectors a thread) while the rows alone would not give every SM
// 2048 threads; 32..512.
static inline int row_tpr(int64_t rows, int64_t cols, size_t elem)
{
    const int64_t nv = (cols * (int64_t)elem + 15) / 16; // 16-byte vectors a row
    int64_t tpr = 32;
    while (tpr < 512 && tpr * 16 < nv)
        tpr *= 2;
    while (tpr < 512 && tpr * 4 < nv && rows * tpr < (int64_t)sm_count() * 2048)
        tpr *= 2;
    return (int)tpr;
}

// Launches a row-wise reduction templated on its threads per row (row_tpr):
// launch(std::integral_constant<int, TPR>, grid, block). Below 256 threads a
// row, 256-thread blocks hold 256 / TPR rows; from 256 up, a block is a row.
template <typename L>
static inline void launch_rows(int64_t rows, int64_t cols, size_t elem, L launch)
{
    switch (row_tpr(rows, cols, elem)) {
    case 32:
        launch(std::integral_constant<int, 32>(), (unsigned)((rows + 7) / 8), 256u);
        break;
    case 64:
        launch(std::integral_constant<int, 64>(), (unsigned)((rows + 3) / 4), 256u);
        break;
    case 128:
        launch(std::integral_constant<int, 128>(), (unsigned)((rows + 1) / 2), 256u);
        break;
    case 256:
        launch(std::integral_constant<int, 256>(), (unsigned)rows, 256u);
        break;
    default:
        launch(std::integral_constant<int, 512>(), (unsigned)rows, 512u);
        break;
    }
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
