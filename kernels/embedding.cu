// embedding: out[n, :] = table[idx[n], :] (torch.nn.functional.embedding(idx,
// table)), table[V,D], idx[N] (int64, or int32 for the _i32 variants),
// out[N,D]. Rows are copied bit for bit; an id outside [0, V) (PyTorch
// raises) gives a NaN row instead of a fault.
//
// The fp64 reference is src/ops/embedding.cu.
//
// v1 naive (RC0b): a dtype round trip through an fp32 buffer with scalar
//            accesses: a first kernel gathers the looked-up rows element by
//            element (one 2- or 4-byte load per thread, the row index
//            divided out of the flat element index) into an fp32 scratch
//            buffer of N x D floats, a second kernel converts that buffer
//            back to the output dtype. For 16-bit types the bytes moved are
//            about three times the essential ones (gather, write and re-read
//            an fp32 copy, write the output), all in 2-byte scalar accesses.
// v2 fast:   one warp per segment of an output row (up to 128 16-byte chunks,
//            2 KiB), 8 warps a block, as many blocks as segments need: each
//            lane has up to 4 independent 16-byte loads in flight before it
//            stores them with streaming hints, every warp access is 512
//            contiguous bytes, and the id is read once per segment. Rows
//            whose byte length is not a multiple of 16, or pointers not
//            16-byte aligned, take a warp-per-row kernel with scalar (still
//            coalesced) accesses.
#include "common.cuh"

template <typename T, typename I>
static bool emb_args_ok(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    return nin == 2 && nout == 1 && dl_is<T>(&in[0], 2) && dl_is<I>(&in[1], 1) &&
           dl_is<T>(&out[0], 2) && out[0].shape[0] == in[1].shape[0] &&
           out[0].shape[1] == in[0].shape[1];
}

// ---------------------------------------------------------------- v1 naive
template <typename T, typename I>
__global__ void emb_v1_gather_fp32(const T *table, const I *idx, float *buf, int64_t vocab,
                                   int64_t d, int64_t total)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t n = e / d, j = e - n * d, k = (int64_t)idx[n];
        buf[e] = k >= 0 && k < vocab ? to_f(table[k * d + j]) : NAN;
    }
}

template <typename T> __global__ void emb_v1_from_fp32(const float *buf, T *out, int64_t total)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x)
        out[e] = from_f<T>(buf[e]);
}

static void *emb_v1_buf;
static size_t emb_v1_have;

template <typename T, typename I>
static int emb_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    if (!emb_args_ok<T, I>(in, nin, out, nout))
        return kernel_fail(p, 1, "embedding v1: expected table[V,D], idx[N] -> out[N,D]");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t vocab = in[0].shape[0], d = in[0].shape[1], n = in[1].shape[0],
                  total = n * d;
    if (total == 0)
        return 0;
    float *buf = (float *)scratch_get(&emb_v1_buf, &emb_v1_have, (size_t)total * sizeof(float));
    if (!buf)
        return kernel_fail(p, 2, "embedding v1: out of device memory for the fp32 buffer");
    emb_v1_gather_fp32<T, I><<<1024, 256, 0, s>>>((const T *)in[0].data, (const I *)in[1].data,
                                                  buf, vocab, d, total);
    emb_v1_from_fp32<T><<<1024, 256, 0, s>>>(buf, (T *)out[0].data, total);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
#define EMB_BLOCK 256
#define EMB_WARPS (EMB_BLOCK / 32)
#define EMB_UNROLL 4
#define EMB_SEG (32 * EMB_UNROLL) // 16-byte chunks a warp copies per unit

// A 16-byte vector of NaNs of type T.
template <typename T> __device__ __forceinline__ uint4 emb_nan_vec()
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
__global__ __launch_bounds__(EMB_BLOCK) void emb_v2_vec(const uint4 *__restrict__ table,
                                                        const I *__restrict__ idx,
                                                        uint4 *__restrict__ out, int64_t vocab,
                                                        int64_t dv, int64_t segs, int64_t units)
{
    const int lane = threadIdx.x % 32;
    const int64_t nwarps = (int64_t)gridDim.x * EMB_WARPS;
    for (int64_t u = blockIdx.x * (int64_t)EMB_WARPS + threadIdx.x / 32; u < units;
         u += nwarps) {
        const int64_t n = u / segs, c0 = (u - n * segs) * EMB_SEG + lane;
        const int64_t k = (int64_t)__ldg(idx + n); // one address for the warp: a broadcast
        const bool ok = k >= 0 && k < vocab;
        const uint4 *r = table + (ok ? k : 0) * dv;
        uint4 *o = out + n * dv;
        uint4 v[EMB_UNROLL];
#pragma unroll
        for (int q = 0; q < EMB_UNROLL; q++) {
            const int64_t c = c0 + q * 32;
            v[q] = emb_nan_vec<T>();
            if (ok && c < dv)
                v[q] = __ldg(r + c);
        }
#pragma unroll
        for (int q = 0; q < EMB_UNROLL; q++) {
            const int64_t c = c0 + q * 32;
            if (c < dv)
                __stcs(o + c, v[q]);
        }
    }
}

// Any row length and alignment: one warp per output row, lanes on
// consecutive elements.
template <typename T, typename I>
__global__ __launch_bounds__(EMB_BLOCK) void emb_v2_scalar(const T *__restrict__ table,
                                                           const I *__restrict__ idx,
                                                           T *__restrict__ out, int64_t vocab,
                                                           int64_t d, int64_t n)
{
    const int lane = threadIdx.x % 32;
    const int64_t nwarps = (int64_t)gridDim.x * EMB_WARPS;
    for (int64_t i = blockIdx.x * (int64_t)EMB_WARPS + threadIdx.x / 32; i < n; i += nwarps) {
        const int64_t k = (int64_t)__ldg(idx + i);
        const bool ok = k >= 0 && k < vocab;
        const T *r = table + (ok ? k : 0) * d;
        T *o = out + i * d;
        for (int64_t j = lane; j < d; j += 32)
            o[j] = ok ? r[j] : from_f<T>(NAN);
    }
}

// Blocks of EMB_WARPS warps for `units` warp-sized pieces of work: one piece
// a warp (the block scheduler balances the SMs), capped far above any
// preset; the kernels loop when capped.
static unsigned emb_blocks(int64_t units)
{
    int64_t b = (units + EMB_WARPS - 1) / EMB_WARPS;
    return (unsigned)(b < (1 << 24) ? b : (1 << 24));
}

template <typename T, typename I>
static int emb_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    if (!emb_args_ok<T, I>(in, nin, out, nout))
        return kernel_fail(p, 1, "embedding v2: expected table[V,D], idx[N] -> out[N,D]");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t vocab = in[0].shape[0], d = in[0].shape[1], n = in[1].shape[0];
    const T *table = (const T *)in[0].data;
    const I *idx = (const I *)in[1].data;
    T *o = (T *)out[0].data;
    if (n == 0 || d == 0)
        return 0;
    const bool vec = (d * (int64_t)sizeof(T)) % 16 == 0 &&
                     (((uintptr_t)table | (uintptr_t)o) & 15) == 0;
    if (vec) {
        const int64_t dv = d * (int64_t)sizeof(T) / 16, segs = (dv + EMB_SEG - 1) / EMB_SEG;
        emb_v2_vec<T, I><<<emb_blocks(n * segs), EMB_BLOCK, 0, s>>>(
            (const uint4 *)table, idx, (uint4 *)o, vocab, dv, segs, n * segs);
    } else {
        emb_v2_scalar<T, I><<<emb_blocks(n), EMB_BLOCK, 0, s>>>(table, idx, o, vocab, d, n);
    }
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

#define EMB_V1_SUM "element-by-element gather into an fp32 buffer, then a conversion pass (RC0b)"
#define EMB_V2_SUM "a warp per row segment, 4 x 16-byte loads in flight per lane, streaming stores"
static const kgate_kernel variants[] = {
    {"embedding_v1_fp16", "embedding", "fp16", NULL, 2, 1, emb_v1<__half, int64_t>, EMB_V1_SUM,
     NULL, NULL},
    {"embedding_v2_fp16", "embedding", "fp16", NULL, 2, 1, emb_v2<__half, int64_t>, EMB_V2_SUM,
     NULL, NULL},
    {"embedding_v2_fp16_i32", "embedding", "fp16", "int32", 2, 1, emb_v2<__half, int32_t>,
     EMB_V2_SUM, NULL, NULL},
    {"embedding_v1_bf16", "embedding", "bf16", NULL, 2, 1, emb_v1<__nv_bfloat16, int64_t>,
     EMB_V1_SUM, NULL, NULL},
    {"embedding_v2_bf16", "embedding", "bf16", NULL, 2, 1, emb_v2<__nv_bfloat16, int64_t>,
     EMB_V2_SUM, NULL, NULL},
    {"embedding_v2_bf16_i32", "embedding", "bf16", "int32", 2, 1,
     emb_v2<__nv_bfloat16, int32_t>, EMB_V2_SUM, NULL, NULL},
    {"embedding_v1_fp32", "embedding", "fp32", NULL, 2, 1, emb_v1<float, int64_t>, EMB_V1_SUM,
     NULL, NULL},
    {"embedding_v2_fp32", "embedding", "fp32", NULL, 2, 1, emb_v2<float, int64_t>, EMB_V2_SUM,
     NULL, NULL},
    {"embedding_v2_fp32_i32", "embedding", "fp32", "int32", 2, 1, emb_v2<float, int32_t>,
     EMB_V2_SUM, NULL, NULL},
};
KG_EXPORT_VARIANTS(embedding, variants)
