// Helpers for the GPU fp64 references in src/ops/*.cu: loading any element
// type as a double, fp64 block reductions, and a dispatch over the data
// dtype. A reference favours being obviously right over being fast; it is
// written apart from the variants in kernels/ so that a bug cannot be shared.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "../catalog/op.h"
#include "../gpu/tensors.h"

__device__ __forceinline__ double ref_d(__half v) { return (double)__half2float(v); }
__device__ __forceinline__ double ref_d(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
__device__ __forceinline__ double ref_d(float v) { return (double)v; }
__device__ __forceinline__ double ref_d(double v) { return v; }
__device__ __forceinline__ double ref_d(int32_t v) { return (double)v; }
__device__ __forceinline__ double ref_d(int64_t v) { return (double)v; }

// NaN-propagating max (fmax would drop a NaN).
__device__ __forceinline__ double ref_max(double a, double b) { return a != a || a > b ? a : b; }

// Block-wide fp64 sum and max; every thread gets the result. `red` holds 32
// doubles; blockDim.x is a multiple of 32.
__device__ __forceinline__ double ref_block_sum(double v, double *red)
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

__device__ __forceinline__ double ref_block_max(double v, double *red)
{
    for (int o = 16; o > 0; o >>= 1)
        v = ref_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1)
        v = ref_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// The row count of an [R, C] view of a tensor whose last extent is C.
static inline int64_t ref_rows(const DLTensor *t)
{
    int64_t n = 1;
    for (int i = 0; i + 1 < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

// Runs CALL with T the element type of tensor t (fp16, bf16 or fp32).
#define REF_DISPATCH(t, CALL)                                                            \
    do {                                                                                 \
        if ((t)->dtype.code == kDLBfloat) {                                              \
            typedef __nv_bfloat16 T;                                                     \
            CALL;                                                                        \
        } else if ((t)->dtype.bits == 16) {                                              \
            typedef __half T;                                                            \
            CALL;                                                                        \
        } else {                                                                         \
            typedef float T;                                                             \
            CALL;                                                                        \
        }                                                                                \
    } while (0)

// Runs CALL with I the element type of index tensor t (int32 or int64).
#define REF_DISPATCH_INDEX(t, CALL)                                                      \
    do {                                                                                 \
        if ((t)->dtype.bits == 32) {                                                     \
            typedef int32_t I;                                                           \
            CALL;                                                                        \
        } else {                                                                         \
            typedef int64_t I;                                                           \
            CALL;                                                                        \
        }                                                                                \
    } while (0)

// Grid-stride loop bounds for elementwise references.
#define REF_GRID 1056
#define REF_BLOCK 256

// The launch status of the references: 0, or the CUDA error code.
#define REF_LAUNCHED() ((int)cudaGetLastError())
