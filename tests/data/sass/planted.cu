/* Kernels that plant one SASS signature each, for tests/test_sass.c.
 * planted.sass was made from this file on a machine without a GPU (CUDA 13.0
 * nvcc; cuobjdump 12.8 from Triton's wheel, as that toolkit had none) by, in
 * the repository root:
 *   /usr/local/cuda/bin/nvcc -arch=sm_90 -cubin -o /tmp/planted.cubin tests/data/sass/planted.cu
 *   $TRITON_SITE/triton/backends/nvidia/bin/cuobjdump \
 *       -sass /tmp/planted.cubin > tests/data/sass/planted.sass
 * ($TRITON_SITE: the site-packages of a Python with Triton 3.6. cuobjdump
 * warns on stderr "Disassembling Std Elf to Old format ... not supported
 * yet"; harmless.) bundled_excerpt.sass holds four functions, with
 * their fatbin headers, cut unchanged from `cuobjdump -sass
 * build/libkgate_bundled.so` (CUDA 13.0 build, sm_90a).
 * The counts the test asserts were read off planted.sass; a different
 * compiler may change them, so re-record and re-check them together.
 *   v4_copy:    float4 copy of const __restrict__ data (LDG.E.128.CONSTANT, STG.E.128)
 *   half_copy:  one __half per thread (LDG.E.U16.CONSTANT, STG.E.U16: narrow)
 *   f2_copy:    one float2 per thread (LDG.E.64, STG.E.64)
 *   local_buf:  a float[64] stored to at a runtime index lives in local memory (LDL, STL.128, STL)
 *   wmma_tile:  one 16x16x16 half wmma tile, fp32 accumulate (HMMA.16816.F32)
 *   cp_async:   cp.async.cg of 16 bytes into shared memory (LDGSTS.E.BYPASS.128)
 *   tail_sum:   two bounds-checked loads that come out predicated (@!P0 LDG.E),
 *               and a zeroed register set by HFMA2.MMA (a move, not tensor-core work)
 *   consts:     a float4 of constants: more HFMA2.MMA moves, no HMMA */
#include <cuda_fp16.h>
#include <mma.h>

__global__ void v4_copy(const float4 *__restrict__ x, float4 *__restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
}

__global__ void half_copy(const __half *__restrict__ x, __half *__restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
}

__global__ void f2_copy(const float2 *x, float2 *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
}

__global__ void __launch_bounds__(1024) local_buf(const float *x, const int *idx, float *y, int n)
{
    float buf[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    for (int k = 0; k < 64; k++)
        buf[k] = x[i * 64 + k];
    buf[idx[i] & 63] += 1.0f; /* a store at a runtime index keeps buf out of registers */
    y[i] = buf[idx[n + i] & 63];
}

__global__ void wmma_tile(const __half *a, const __half *b, float *c)
{
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

__global__ void cp_async(const float4 *x, float4 *y)
{
    __shared__ float4 s[128];
    unsigned dst = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x]);
    const float4 *src = x + blockIdx.x * 128 + threadIdx.x;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.wait_group 0;\n" ::);
    __syncthreads();
    y[blockIdx.x * 128 + threadIdx.x] = s[127 - threadIdx.x];
}

__global__ void tail_sum(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 0;
    if (i < n)
        v = x[i];
    if (i + 4096 < n)
        v += x[i + 4096];
    y[i] = v;
}

__global__ void consts(float4 *y)
{
    y[threadIdx.x] = make_float4(0.0f, 1.0f, 2.0f, 0.0f);
}
