// Device tensors: allocation, generation, edge planting, poisoning,
// checksums and the reference comparison.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <curand_kernel.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../catalog/op.h"
#include "check.h"
#include "tensors.h"

extern "C" kg_dtype kg_tensor_dtype(const DLTensor *t)
{
    if (t->dtype.code == kDLInt)
        return t->dtype.bits == 32 ? KG_I32 : KG_I64;
    if (t->dtype.code == kDLBfloat)
        return KG_BF16;
    if (t->dtype.bits == 16)
        return KG_FP16;
    return t->dtype.bits == 64 ? KG_FP64 : KG_FP32;
}

extern "C" int64_t kg_tensor_numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

extern "C" size_t kg_tensor_nbytes(const DLTensor *t)
{
    return (size_t)kg_tensor_numel(t) * (t->dtype.bits / 8);
}

// Guard regions: every tensor is allocated with KG_GUARD_BYTES before and
// after it, filled with one byte value; a write out of bounds changes them.
static unsigned char guard_byte = 0xA5;

extern "C" void kg_tensor_guard_pattern(unsigned char v) { guard_byte = v; }

extern "C" int kg_tensor_alloc(DLTensor *t, kg_dtype dt, int rank, const int64_t *ext, kg_err *err)
{
    char *base = NULL;
    memset(t, 0, sizeof *t);
    t->shape = (int64_t *)calloc((size_t)(rank ? rank : 1), sizeof(int64_t)); /* rank 0: a scalar */
    if (!t->shape)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    memcpy(t->shape, ext, sizeof(int64_t) * (size_t)rank);
    t->ndim = rank;
    t->device.device_type = kDLCUDA;
    t->device.device_id = 0;
    kg_dtype_dlpack(dt, &t->dtype.code, &t->dtype.bits);
    t->dtype.lanes = 1;
    {
        size_t n = kg_tensor_nbytes(t), padded = (n + 255) / 256 * 256;
        KG_CUDA(cudaMalloc((void **)&base, padded + 2 * KG_GUARD_BYTES));
        KG_CUDA(cudaMemset(base, guard_byte, KG_GUARD_BYTES));
        KG_CUDA(cudaMemset(base + KG_GUARD_BYTES + n, guard_byte, padded - n + KG_GUARD_BYTES));
        t->data = base + KG_GUARD_BYTES;
    }
    return 0;
out:
    if (base)
        cudaFree(base);
    free(t->shape);
    t->shape = NULL;
    return err->code;
}

extern "C" void kg_tensor_free(DLTensor *t)
{
    if (t->data)
        cudaFree((char *)t->data - KG_GUARD_BYTES);
    free(t->shape);
    memset(t, 0, sizeof *t);
}

__global__ void guard_count(const unsigned char *p, size_t n, unsigned char v, unsigned long long *bad)
{
    unsigned long long c = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        c += p[i] != v;
    for (int o = 16; o > 0; o >>= 1)
        c += __shfl_xor_sync(0xffffffffu, c, o);
    if (threadIdx.x % 32 == 0 && c)
        atomicAdd(bad, c);
}

extern "C" int kg_tensor_guard_check(const DLTensor *t, int64_t *before, int64_t *after, kgate_stream st,
                                     kg_err *err)
{
    cudaStream_t s = (cudaStream_t)st;
    unsigned long long *d = NULL, h[2] = {0, 0};
    size_t n = kg_tensor_nbytes(t), padded = (n + 255) / 256 * 256;
    const unsigned char *base = (const unsigned char *)t->data - KG_GUARD_BYTES;
    KG_CUDA(cudaMalloc(&d, 2 * sizeof *d));
    KG_CUDA(cudaMemsetAsync(d, 0, 2 * sizeof *d, s));
    guard_count<<<64, 256, 0, s>>>(base, KG_GUARD_BYTES, guard_byte, d);
    guard_count<<<64, 256, 0, s>>>(base + KG_GUARD_BYTES + n, padded - n + KG_GUARD_BYTES, guard_byte, d + 1);
    KG_CUDA(cudaGetLastError());
    KG_CUDA(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, s));
    KG_CUDA(cudaStreamSynchronize(s));
    *before = (int64_t)h[0];
    *after = (int64_t)h[1];
out:
    if (d)
        cudaFree(d);
    return err->code;
}

template <typename T> __device__ __forceinline__ T cvt(double v);
template <> __device__ __forceinline__ __half cvt<__half>(double v) { return __double2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 cvt<__nv_bfloat16>(double v)
{
    return __double2bfloat16(v);
}
template <> __device__ __forceinline__ float cvt<float>(double v) { return (float)v; }
template <> __device__ __forceinline__ double cvt<double>(double v) { return v; }
template <> __device__ __forceinline__ int32_t cvt<int32_t>(double v) { return (int32_t)v; }
template <> __device__ __forceinline__ int64_t cvt<int64_t>(double v) { return (int64_t)v; }

__device__ __forceinline__ double as_d(__half v) { return (double)__half2float(v); }
__device__ __forceinline__ double as_d(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
__device__ __forceinline__ double as_d(float v) { return v; }
__device__ __forceinline__ double as_d(double v) { return v; }
__device__ __forceinline__ double as_d(int32_t v) { return (double)v; }
__device__ __forceinline__ double as_d(int64_t v) { return (double)v; }

template <typename T>
__global__ void fill_uniform(T *p, int64_t n, double lo, double hi, uint64_t seed)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    curandStatePhilox4_32_10_t st;
    curand_init(seed, (unsigned long long)i, 0, &st);
    for (; i < n; i += stride)
        p[i] = cvt<T>(lo + (hi - lo) * (double)curand_uniform(&st));
}

#define DISPATCH(t, KERNEL_CALL)                                                    \
    switch (kg_tensor_dtype(t)) {                                                   \
    case KG_FP16: { typedef __half T; KERNEL_CALL; } break;                          \
    case KG_BF16: { typedef __nv_bfloat16 T; KERNEL_CALL; } break;                   \
    case KG_FP32: { typedef float T; KERNEL_CALL; } break;                           \
    case KG_I32: { typedef int32_t T; KERNEL_CALL; } break;                          \
    case KG_I64: { typedef int64_t T; KERNEL_CALL; } break;                          \
    default: { typedef double T; KERNEL_CALL; } break;                               \
    }

// The `large` distribution's magnitude: far past where exp overflows in fp32
// (88) and in fp16 (11), within half of fp16's largest value, and small
// enough that x * log2(e) stays finite in fp32.
static constexpr double LARGE_MAG = 16384.0;

template <typename T>
__global__ void fill_dist(T *p, int64_t n, int dist, double lo, double hi, int64_t cols, uint64_t seed)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    curandStatePhilox4_32_10_t st;
    curand_init(seed, (unsigned long long)i, 0, &st);
    const double w = hi - lo, m = fmax(fabs(lo), fabs(hi)) / 4;
    const double big = LARGE_MAG / fmax(fabs(lo), fabs(hi));
    for (; i < n; i += stride) {
        double u = (double)curand_uniform(&st), v;
        int64_t c = i % cols;
        switch (dist) {
        case KG_DIST_OFFSET: v = lo + w * u + 16 * w; break;
        case KG_DIST_WIDE: v = (u < 0.5 ? -m : m) * exp2(-8 + 10 * (double)curand_uniform(&st)); break;
        case KG_DIST_LARGE: v = (lo + w * u) * big; break;
        case KG_DIST_SORTED: {
            // ascending, and skewed so that a row's mean is not the range's
            // middle (a symmetric range would give means near 0)
            double f = ((double)c + u) / (double)cols;
            v = lo + w * f * f;
            break;
        }
        case KG_DIST_BLOCKS: {
            // the block's value: a hash of (row, block), the same for its 16 columns
            unsigned long long h = (unsigned long long)(i / cols) * 0x9E3779B97F4A7C15ull ^
                                   (unsigned long long)(c / 16) * 0xBF58476D1CE4E5B9ull ^ seed;
            h ^= h >> 31;
            h *= 0x94D049BB133111EBull;
            h ^= h >> 29;
            v = lo + w * (double)(h >> 11) * (1.0 / 9007199254740992.0);
            break;
        }
        default: v = lo + w * u; break;
        }
        p[i] = cvt<T>(v);
    }
}

extern "C" int kg_tensor_fill_dist(DLTensor *t, int dist, double lo, double hi, int64_t cols,
                                   uint64_t seed, kgate_stream st, kg_err *err)
{
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = kg_tensor_numel(t);
    if (dist == KG_DIST_UNIFORM)
        return kg_tensor_fill_uniform(t, lo, hi, seed, st, err);
    if (kg_dtype_is_int(kg_tensor_dtype(t)) || cols < 1)
        return kg_err_set(err, KG_EXIT_USAGE, "a distribution for a floating tensor with rows");
    DISPATCH(t, (fill_dist<T><<<1056, 256, 0, s>>>((T *)t->data, n, dist, lo, hi, cols, seed)));
    KG_CUDA(cudaGetLastError());
    return 0;
out:
    return err->code;
}

// The bits of a float as a 16-bit or 32-bit floating element.
template <typename B> __device__ __forceinline__ B bits_of(float v);
template <> __device__ __forceinline__ unsigned short bits_of<unsigned short>(float v)
{
    return __half_as_ushort(__float2half_rn(v));
}
template <> __device__ __forceinline__ unsigned bits_of<unsigned>(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned short bf16_bits(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }

// Uniform values in [lo, lo + w) for a 16-bit (fp16, bf16) or 32-bit (fp32)
// floating tensor, 16 bytes a thread a step, as fast as the memory writes
// them (every timed call of a kernel gets inputs of its own: worker.c
// refill_cb). Philox4x32-10, counter-based: the 128 random bits of chunk c
// are a function of (seed, c) alone, split into the chunk's elements (16
// bits each for 16-bit types, the top 24 of 32 for fp32), so a tensor is
// the same for a seed however the grid runs. BF16: 16-bit elements, made
// with bf16 rounding.
template <typename B, bool BF16>
__global__ void fill_uniform16B(B *p, int64_t n, float lo, float w, uint64_t seed)
{
    constexpr int V = 16 / sizeof(B);
    const int64_t chunks = (n + V - 1) / V;
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < chunks;
         c += (int64_t)gridDim.x * blockDim.x) {
        curandStatePhilox4_32_10_t st;
        curand_init(seed, (unsigned long long)c, 0, &st);
        const uint4 r = curand4(&st);
        const unsigned words[4] = {r.x, r.y, r.z, r.w};
        B e[V];
#pragma unroll
        for (int k = 0; k < V; k++) {
            float u;
            if (sizeof(B) == 2)
                u = (float)((words[k / 2] >> (16 * (k % 2))) & 0xFFFFu) * (1.0f / 65536) + 0.5f / 65536;
            else
                u = (float)(words[k] >> 8) * (1.0f / 16777216) + 0.5f / 16777216;
            const float v = lo + w * u;
            if (BF16)
                e[k] = (B)bf16_bits(v);
            else
                e[k] = bits_of<B>(v);
        }
        if ((c + 1) * V <= n) {
            uint4 out;
            memcpy(&out, e, sizeof out);
            reinterpret_cast<uint4 *>(p)[c] = out;
        } else {
            for (int k = 0; k < V && c * V + k < n; k++)
                p[c * V + k] = e[k];
        }
    }
}

extern "C" int kg_tensor_fill_uniform(DLTensor *t, double lo, double hi, uint64_t seed,
                                      kgate_stream st, kg_err *err)
{
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = kg_tensor_numel(t);
    const kg_dtype dt = kg_tensor_dtype(t);
    const float flo = (float)lo, fw = (float)(hi - lo);
    if ((uintptr_t)t->data % 16 == 0 && (dt == KG_FP16 || dt == KG_BF16 || dt == KG_FP32)) {
        if (dt == KG_FP16)
            fill_uniform16B<unsigned short, false><<<1056, 256, 0, s>>>((unsigned short *)t->data, n, flo, fw, seed);
        else if (dt == KG_BF16)
            fill_uniform16B<unsigned short, true><<<1056, 256, 0, s>>>((unsigned short *)t->data, n, flo, fw, seed);
        else
            fill_uniform16B<unsigned, false><<<1056, 256, 0, s>>>((unsigned *)t->data, n, flo, fw, seed);
    } else {
        DISPATCH(t, (fill_uniform<T><<<1056, 256, 0, s>>>((T *)t->data, n, lo, hi, seed)));
    }
    KG_CUDA(cudaGetLastError());
    return 0;
out:
    return err->code;
}

template <typename T>
__global__ void fill_index(T *p, int64_t n, int64_t range, uint64_t seed)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    curandStatePhilox4_32_10_t st;
    curand_init(seed, (unsigned long long)i, 0, &st);
    for (; i < n; i += stride) {
        unsigned long long r = ((unsigned long long)curand(&st) << 32) | curand(&st);
        p[i] = (T)(r % (unsigned long long)range);
    }
}

extern "C" int kg_tensor_fill_index(DLTensor *t, int64_t range, uint64_t seed, kgate_stream st,
                                    kg_err *err)
{
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = kg_tensor_numel(t);
    if (range < 1)
        return kg_err_set(err, KG_EXIT_USAGE, "an index range of %lld", (long long)range);
    if (kg_tensor_dtype(t) == KG_I32)
        fill_index<int32_t><<<1056, 256, 0, s>>>((int32_t *)t->data, n, range, seed);
    else
        fill_index<int64_t><<<1056, 256, 0, s>>>((int64_t *)t->data, n, range, seed);
    KG_CUDA(cudaGetLastError());
    return 0;
out:
    return err->code;
}

template <typename T> __global__ void plant_index(T *p, int64_t n, int64_t range)
{
    // the first and the last valid index, then a run of duplicates
    if (threadIdx.x == 0 && n >= 6) {
        p[0] = 0;
        p[1] = (T)(range - 1);
        for (int k = 3; k < 6; k++)
            p[k] = p[2];
    }
}

extern "C" int kg_tensor_plant_index_edges(DLTensor *t, int64_t range, kgate_stream st, kg_err *err)
{
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = kg_tensor_numel(t);
    if (kg_tensor_dtype(t) == KG_I32)
        plant_index<int32_t><<<1, 32, 0, s>>>((int32_t *)t->data, n, range);
    else
        plant_index<int64_t><<<1, 32, 0, s>>>((int64_t *)t->data, n, range);
    KG_CUDA(cudaGetLastError());
    return 0;
out:
    return err->code;
}

// A subnormal of each format: 2^-20 in fp16, 2^-130 in bf16 and fp32.
template <typename T> struct subnormal { static constexpr double v = 0; };
template <> struct subnormal<__half> { static constexpr double v = 9.5367431640625e-07; };
template <> struct subnormal<__nv_bfloat16> { static constexpr double v = 7.346839692639297e-40; };
template <> struct subnormal<float> { static constexpr double v = 7.346839692639297e-40; };

template <typename T> __global__ void plant(T *p, int64_t rows, int64_t cols)
{
    const double tiny = subnormal<T>::v;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        p[3 * cols + j] = cvt<T>(1.25);
        p[4 * cols + j] = cvt<T>(tiny * (double)(1 + (j % 7)));
        if (rows >= 6)
            p[5 * cols + j] = cvt<T>(-INFINITY);
    }
    if (threadIdx.x == 0) {
        p[0 * cols + (1 % cols)] = cvt<T>(NAN);
        p[1 * cols + (2 % cols)] = cvt<T>(INFINITY);
        p[2 * cols + (3 % cols)] = cvt<T>(-INFINITY);
    }
}

extern "C" int kg_tensor_plant_edges(DLTensor *t, int64_t rows, int64_t cols, kgate_stream st,
                                     kg_err *err)
{
    cudaStream_t s = (cudaStream_t)st;
    if (rows < 5)
        return kg_err_set(err, KG_EXIT_USAGE, "edge cases need at least 5 rows, shape has %lld",
                          (long long)rows);
    if (kg_dtype_is_int(kg_tensor_dtype(t)))
        return kg_err_set(err, KG_EXIT_USAGE, "edge rows go in a floating-point tensor");
    DISPATCH(t, (plant<T><<<1, 256, 0, s>>>((T *)t->data, rows, cols)));
    KG_CUDA(cudaGetLastError());
    return 0;
out:
    return err->code;
}

extern "C" int kg_tensor_poison(DLTensor *t, kgate_stream st, kg_err *err)
{
    KG_CUDA(cudaMemsetAsync(t->data, 0xFF, kg_tensor_nbytes(t), (cudaStream_t)st));
    return 0;
out:
    return err->code;
}

__global__ void checksum_kernel(const uint32_t *p, int64_t n, unsigned long long *out)
{
    unsigned long long acc = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        acc += (unsigned long long)p[i] * (2654435761ull + 2ull * (unsigned long long)i);
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0)
        atomicAdd(out, acc);
}

extern "C" int kg_tensor_checksum(const DLTensor *t, uint64_t *sum, kgate_stream st, kg_err *err)
{
    cudaStream_t s = (cudaStream_t)st;
    unsigned long long *d = NULL, h = 0;
    size_t bytes = kg_tensor_nbytes(t);
    KG_CUDA(cudaMalloc(&d, sizeof *d));
    KG_CUDA(cudaMemsetAsync(d, 0, sizeof *d, s));
    checksum_kernel<<<1056, 256, 0, s>>>((const uint32_t *)t->data, (int64_t)(bytes / 4), d);
    KG_CUDA(cudaGetLastError());
    KG_CUDA(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s));
    KG_CUDA(cudaStreamSynchronize(s));
    *sum = h + (bytes % 4); // sizes are whole words in practice
out:
    if (d)
        cudaFree(d);
    return err->code;
}

struct dev_cmp {
    unsigned long long n_fail, n_nan, n_inf, n_first;
    double sq_err, sq_ref;
    unsigned long long max_abs_bits, max_scaled_bits;
    long long idx[KG_CMP_FIRST];
    double out[KG_CMP_FIRST], ref[KG_CMP_FIRST];
};

template <typename T>
__global__ void compare_kernel(const T *o, const double *r, int64_t n, kg_tol tol, dev_cmp *res)
{
    double se = 0, sr = 0, mx = 0, ms = 0;
    unsigned long long nf = 0, nn = 0, ni = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        double out = as_d(o[i]), ref = r[i];
        int c = kg_cmp_elem(out, ref, &tol);
        if (isfinite(out) && isfinite(ref)) {
            double d = out - ref;
            se += d * d;
            sr += ref * ref;
            mx = fmax(mx, fabs(d));
            ms = fmax(ms, fabs(d) / (1.0 + fabs(ref)));
        } else if (isfinite(ref) || (isnan(ref) != isnan(out)) || (!isnan(ref) && out != ref)) {
            ms = INFINITY; /* a NaN or Inf where the reference has none (or another one) */
        }
        if (c != KG_CMP_PASS) {
            nf++;
            nn += c == KG_CMP_NAN;
            ni += c == KG_CMP_INF;
            unsigned long long slot = atomicAdd(&res->n_first, 1ull);
            if (slot < KG_CMP_FIRST) {
                res->idx[slot] = i;
                res->out[slot] = out;
                res->ref[slot] = ref;
            }
        }
    }
    for (int k = 16; k > 0; k >>= 1) {
        se += __shfl_xor_sync(0xffffffffu, se, k);
        sr += __shfl_xor_sync(0xffffffffu, sr, k);
        mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, k));
        ms = fmax(ms, __shfl_xor_sync(0xffffffffu, ms, k));
        nf += __shfl_xor_sync(0xffffffffu, nf, k);
        nn += __shfl_xor_sync(0xffffffffu, nn, k);
        ni += __shfl_xor_sync(0xffffffffu, ni, k);
    }
    if (threadIdx.x % 32 == 0) {
        atomicAdd(&res->sq_err, se);
        atomicAdd(&res->sq_ref, sr);
        atomicMax(&res->max_abs_bits, (unsigned long long)__double_as_longlong(mx));
        atomicMax(&res->max_scaled_bits, (unsigned long long)__double_as_longlong(ms));
        if (nf) {
            atomicAdd(&res->n_fail, nf);
            atomicAdd(&res->n_nan, nn);
            atomicAdd(&res->n_inf, ni);
        }
    }
}

static int cmp_idx(const void *a, const void *b)
{
    const int64_t *x = (const int64_t *)a, *y = (const int64_t *)b;
    return (*x > *y) - (*x < *y);
}

extern "C" int kg_tensor_compare(const DLTensor *out, const double *ref, const kg_tol *tol,
                                 kg_cmp *res, kgate_stream st, kg_err *err)
{
    cudaStream_t s = (cudaStream_t)st;
    dev_cmp *d = NULL, h;
    int64_t n = kg_tensor_numel(out);
    memset(res, 0, sizeof *res);
    KG_CUDA(cudaMalloc(&d, sizeof *d));
    KG_CUDA(cudaMemsetAsync(d, 0, sizeof *d, s));
    DISPATCH(out, (compare_kernel<T><<<1056, 256, 0, s>>>((const T *)out->data, ref, n, *tol, d)));
    KG_CUDA(cudaGetLastError());
    KG_CUDA(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s));
    KG_CUDA(cudaStreamSynchronize(s));
    res->n = n;
    res->n_fail = (int64_t)h.n_fail;
    res->n_nan = (int64_t)h.n_nan;
    res->n_inf = (int64_t)h.n_inf;
    res->sq_err = h.sq_err;
    res->sq_ref = h.sq_ref;
    memcpy(&res->max_abs_err, &h.max_abs_bits, sizeof(double));
    memcpy(&res->max_scaled_err, &h.max_scaled_bits, sizeof(double));
    res->n_first = h.n_first < KG_CMP_FIRST ? (int)h.n_first : KG_CMP_FIRST;
    {
        // Report the recorded mismatches in index order.
        struct { int64_t i; double o, r; } rows[KG_CMP_FIRST];
        for (int k = 0; k < res->n_first; k++) {
            rows[k].i = h.idx[k];
            rows[k].o = h.out[k];
            rows[k].r = h.ref[k];
        }
        qsort(rows, (size_t)res->n_first, sizeof rows[0], cmp_idx);
        for (int k = 0; k < res->n_first; k++) {
            res->first_idx[k] = rows[k].i;
            res->first_out[k] = rows[k].o;
            res->first_ref[k] = rows[k].r;
        }
    }
    kg_cmp_finish(res, tol);
out:
    if (d)
        cudaFree(d);
    return err->code;
}

// KG_CMP_ARG: out[row] must index a value of x's row equal to ref[row].
template <typename I, typename T>
__global__ void compare_arg_kernel(const I *o, const T *x, const double *r, int64_t rows,
                                   int64_t cols, dev_cmp *res)
{
    unsigned long long nf = 0, nn = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows;
         i += (int64_t)gridDim.x * blockDim.x) {
        long long idx = (long long)o[i];
        double want = r[i], got = NAN;
        bool ok = idx >= 0 && idx < cols;
        if (ok) {
            got = as_d(x[i * cols + idx]);
            ok = (got == want) || (got != got && want != want);
        }
        if (!ok) {
            nf++;
            nn += want != want;
            unsigned long long slot = atomicAdd(&res->n_first, 1ull);
            if (slot < KG_CMP_FIRST) {
                res->idx[slot] = i;
                res->out[slot] = (double)idx;
                res->ref[slot] = want;
            }
        }
    }
    for (int k = 16; k > 0; k >>= 1) {
        nf += __shfl_xor_sync(0xffffffffu, nf, k);
        nn += __shfl_xor_sync(0xffffffffu, nn, k);
    }
    if (threadIdx.x % 32 == 0 && nf) {
        atomicAdd(&res->n_fail, nf);
        atomicAdd(&res->n_nan, nn);
    }
}

extern "C" int kg_tensor_compare_arg(const DLTensor *out, const DLTensor *x, const double *ref,
                                     kg_cmp *res, kgate_stream st, kg_err *err)
{
    cudaStream_t s = (cudaStream_t)st;
    dev_cmp *d = NULL, h;
    int64_t rows = kg_tensor_numel(out), cols = x->shape[x->ndim - 1];
    memset(res, 0, sizeof *res);
    if (kg_tensor_numel(x) != rows * cols)
        return kg_err_set(err, KG_EXIT_USAGE, "an index output of %lld rows for an input of %lld",
                          (long long)rows, (long long)(kg_tensor_numel(x) / cols));
    KG_CUDA(cudaMalloc(&d, sizeof *d));
    KG_CUDA(cudaMemsetAsync(d, 0, sizeof *d, s));
    if (kg_tensor_dtype(out) == KG_I32) {
        DISPATCH(x, (compare_arg_kernel<int32_t, T><<<264, 256, 0, s>>>(
                        (const int32_t *)out->data, (const T *)x->data, ref, rows, cols, d)));
    } else {
        DISPATCH(x, (compare_arg_kernel<int64_t, T><<<264, 256, 0, s>>>(
                        (const int64_t *)out->data, (const T *)x->data, ref, rows, cols, d)));
    }
    KG_CUDA(cudaGetLastError());
    KG_CUDA(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s));
    KG_CUDA(cudaStreamSynchronize(s));
    res->n = rows;
    res->n_fail = (int64_t)h.n_fail;
    res->n_nan = (int64_t)h.n_nan;
    res->n_first = h.n_first < KG_CMP_FIRST ? (int)h.n_first : KG_CMP_FIRST;
    for (int k = 0; k < res->n_first; k++) {
        res->first_idx[k] = h.idx[k];
        res->first_out[k] = h.out[k];
        res->first_ref[k] = h.ref[k];
    }
    res->rel_l2 = 0;
    res->pass = res->n_fail == 0;
out:
    if (d)
        cudaFree(d);
    return err->code;
}

template <typename T> __global__ void to_double(const T *p, double *o, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        o[i] = as_d(p[i]);
}

extern "C" int kg_tensor_to_host(const DLTensor *t, double *host, kg_err *err)
{
    int64_t n = kg_tensor_numel(t);
    double *d = NULL;
    KG_CUDA(cudaMalloc(&d, sizeof(double) * (size_t)n));
    DISPATCH(t, (to_double<T><<<256, 256>>>((const T *)t->data, d, n)));
    KG_CUDA(cudaGetLastError());
    KG_CUDA(cudaMemcpy(host, d, sizeof(double) * (size_t)n, cudaMemcpyDeviceToHost));
out:
    if (d)
        cudaFree(d);
    return err->code;
}
