// The fast row gather shared by index_select and embedding, which copy
// the same rows (out[i, :] = src[idx[i], :]) and differ only in their names
// and naive variants. An index outside [0, rows) gives a NaN row.
//
// One warp per segment of an output row (up to 128 16-byte chunks, 2 KiB),
// 8 warps a block, as many blocks as segments need: each lane has up to 4
// independent 16-byte loads in flight before it stores them with streaming
// hints, every warp access is 512 contiguous bytes, and the index is read
// once per segment. Rows whose byte length is not a multiple of 16, or
// pointers not 16-byte aligned, take a warp-per-row kernel with scalar
// (still coalesced) accesses.
#pragma once

#include "common.cuh"

#define GATHER_BLOCK 256
#define GATHER_WARPS (GATHER_BLOCK / 32)
#define GATHER_UNROLL 4
#define GATHER_SEG (32 * GATHER_UNROLL) // 16-byte chunks a warp copies per unit

// A 16-byte vector of NaNs of type T.
template <typename T> __device__ __forceinline__ uint4 gather_nan_vec()
{
    uint4 v;
    T *e = reinterpret_cast<T *>(&v);
#pragma unroll
    for (int k = 0; k < (int)(16 / sizeof(T)); k++)
        e[k] = from_f<T>(NAN);
    return v;
}

// Rows of dv 16-byte chunks; a unit is segment u % segs of output row u / segs.
template <typename T, typename I>
__global__ __launch_bounds__(GATHER_BLOCK) void gather_v2_vec(const uint4 *__restrict__ src,
                                                              const I *__restrict__ idx,
                                                              uint4 *__restrict__ out,
                                                              int64_t rows, int64_t dv,
                                                              int64_t segs, int64_t units)
{
    const int lane = threadIdx.x % 32;
    const int64_t nwarps = (int64_t)gridDim.x * GATHER_WARPS;
    for (int64_t u = blockIdx.x * (int64_t)GATHER_WARPS + threadIdx.x / 32; u < units;
         u += nwarps) {
        const int64_t i = u / segs, c0 = (u - i * segs) * GATHER_SEG + lane;
        const int64_t k = (int64_t)__ldg(idx + i); // one address for the warp: a broadcast
        const bool ok = k >= 0 && k < rows;
        const uint4 *r = src + (ok ? k : 0) * dv;
        uint4 *o = out + i * dv;
        uint4 v[GATHER_UNROLL];
#pragma unroll
        for (int q = 0; q < GATHER_UNROLL; q++) {
            const int64_t c = c0 + q * 32;
            v[q] = gather_nan_vec<T>();
            if (ok && c < dv)
                v[q] = __ldg(r + c);
        }
#pragma unroll
        for (int q = 0; q < GATHER_UNROLL; q++) {
            const int64_t c = c0 + q * 32;
            if (c < dv)
                __stcs(o + c, v[q]);
        }
    }
}

// Any row length and alignment: one warp per output row, lanes on
// consecutive elements.
template <typename T, typename I>
__global__ __launch_bounds__(GATHER_BLOCK) void gather_v2_scalar(const T *__restrict__ src,
                                                                 const I *__restrict__ idx,
                                                                 T *__restrict__ out, int64_t rows,
                                                                 int64_t d, int64_t n)
{
    const int lane = threadIdx.x % 32;
    const int64_t nwarps = (int64_t)gridDim.x * GATHER_WARPS;
    for (int64_t i = blockIdx.x * (int64_t)GATHER_WARPS + threadIdx.x / 32; i < n; i += nwarps) {
        const int64_t k = (int64_t)__ldg(idx + i);
        const bool ok = k >= 0 && k < rows;
        const T *r = src + (ok ? k : 0) * d;
        T *o = out + i * d;
        for (int64_t j = lane; j < d; j += 32)
            o[j] = ok ? r[j] : from_f<T>(NAN);
    }
}

// Blocks of GATHER_WARPS warps for `units` warp-sized pieces of work: one
// piece a warp (the block scheduler balances the SMs), capped far above any
// preset; the kernels loop when capped.
static unsigned gather_blocks(int64_t units)
{
    int64_t b = (units + GATHER_WARPS - 1) / GATHER_WARPS;
    return (unsigned)(b < (1 << 24) ? b : (1 << 24));
}

// Enqueues the gather of n rows of d elements from src[rows, d] on s.
template <typename T, typename I>
static void gather_v2(const T *src, const I *idx, T *o, int64_t rows, int64_t d, int64_t n,
                      cudaStream_t s)
{
    const bool vec = (d * (int64_t)sizeof(T)) % 16 == 0 &&
                     (((uintptr_t)src | (uintptr_t)o) & 15) == 0;
    if (vec) {
        const int64_t dv = d * (int64_t)sizeof(T) / 16, segs = (dv + GATHER_SEG - 1) / GATHER_SEG;
        gather_v2_vec<T, I><<<gather_blocks(n * segs), GATHER_BLOCK, 0, s>>>(
            (const uint4 *)src, idx, (uint4 *)o, rows, dv, segs, n * segs);
    } else {
        gather_v2_scalar<T, I><<<gather_blocks(n), GATHER_BLOCK, 0, s>>>(src, idx, o, rows, d, n);
    }
}
