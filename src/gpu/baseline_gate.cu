/* The pointwise gate of the unfused linear_activation library path:
 * out = silu(a) * b over the two GEMM results (baseline_gate.h). A grid of
 * at most 16 blocks of 256 threads an SM walks the elements, four a thread
 * where vectors fit. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "baseline_gate.h"

namespace {

__device__ __forceinline__ float gate_f(float v) { return v; }
__device__ __forceinline__ float gate_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float gate_f(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ __forceinline__ T gate_to(float v);
template <> __device__ __forceinline__ __half gate_to<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 gate_to<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

/* a / (1 + exp(-a)) * b: a = -Inf gives -Inf / Inf = NaN, as the reference. */
__device__ __forceinline__ float silu_gate(float a, float b) { return a / (1.f + expf(-a)) * b; }

/* Four elements of In as one vector: 16 bytes of fp32, 8 of a 16-bit type. */
template <class In> struct Vec4 { typedef uint2 type; };
template <> struct Vec4<float> { typedef float4 type; };

template <class In, class Out, bool VEC>
__global__ void gate_kernel(const In *a, const In *b, Out *out, int64_t n)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (VEC) {
        typedef typename Vec4<In>::type V;
        for (; i < n / 4; i += stride) {
            V va = reinterpret_cast<const V *>(a)[i], vb = reinterpret_cast<const V *>(b)[i];
            const In *ea = reinterpret_cast<const In *>(&va), *eb = reinterpret_cast<const In *>(&vb);
            union {
                Out o[4];
                uint2 u;
            } r;
#pragma unroll
            for (int j = 0; j < 4; j++)
                r.o[j] = gate_to<Out>(silu_gate(gate_f(ea[j]), gate_f(eb[j])));
            reinterpret_cast<uint2 *>(out)[i] = r.u;
        }
    } else {
        for (; i < n; i += stride)
            out[i] = gate_to<Out>(silu_gate(gate_f(a[i]), gate_f(b[i])));
    }
}

int gate_blocks(int64_t work)
{
    static int cap = 0;
    if (!cap) {
        int dev = 0, sms = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
            sms < 1) {
            cudaGetLastError();
            sms = 132;
        }
        cap = 16 * sms;
    }
    int64_t need = (work + 255) / 256;
    return (int)(need < cap ? (need > 0 ? need : 1) : cap);
}

template <class In, class Out>
cudaError_t gate_t(const void *a, const void *b, void *out, int64_t n, cudaStream_t s)
{
    const size_t va = sizeof(typename Vec4<In>::type);
    bool vec = n % 4 == 0 && (uintptr_t)a % va == 0 && (uintptr_t)b % va == 0 &&
               (uintptr_t)out % 8 == 0;
    if (vec)
        gate_kernel<In, Out, true><<<gate_blocks(n / 4), 256, 0, s>>>((const In *)a, (const In *)b,
                                                                      (Out *)out, n);
    else
        gate_kernel<In, Out, false><<<gate_blocks(n), 256, 0, s>>>((const In *)a, (const In *)b,
                                                                   (Out *)out, n);
    return cudaGetLastError();
}

template <class Out>
cudaError_t gate_in(kg_dtype in_dt, const void *a, const void *b, void *out, int64_t n,
                    cudaStream_t s)
{
    switch (in_dt) {
    case KG_FP32:
        return gate_t<float, Out>(a, b, out, n, s);
    case KG_FP16:
        return gate_t<__half, Out>(a, b, out, n, s);
    case KG_BF16:
        return gate_t<__nv_bfloat16, Out>(a, b, out, n, s);
    default:
        return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" cudaError_t kg_silu_gate(kg_dtype in_dt, const void *a, const void *b, kg_dtype out_dt,
                                    void *out, int64_t n, kgate_stream st)
{
    cudaStream_t s = (cudaStream_t)st;
    if (out_dt == KG_FP16)
        return gate_in<__half>(in_dt, a, b, out, n, s);
    if (out_dt == KG_BF16)
        return gate_in<__nv_bfloat16>(in_dt, a, b, out, n, s);
    return cudaErrorInvalidValue;
}
