// embedding: out[n, :] = table[idx[n], :] (torch.nn.functional.embedding(idx,
// table)), table[V,D], idx[N] (int64, or int32 for the _i32 variants),
// out[N,D]. Rows are copied bit for bit; an id outside [0, V) (PyTorch
// raises) gives a NaN row instead of a fault.
//
// The fp64 reference is src/ops/index_select.cu (the same row gather).
//
// v1 naive (RC0b): a dtype round trip through an fp32 buffer with scalar
//            accesses: a first kernel gathers the looked-up rows element by
//            element (one 2- or 4-byte load per thread, the row index
//            divided out of the flat element index) into an fp32 scratch
//            buffer of N x D floats, a second kernel converts that buffer
//            back to the output dtype. For 16-bit types the bytes moved are
//            about three times the essential ones (gather, write and re-read
//            an fp32 copy, write the output), all in 2-byte scalar accesses.
// v2 fast:   the row gather of gather.cuh (shared with index_select): a warp per
//            segment of an output row, 4 x 16-byte loads in flight per lane,
//            streaming stores; unaligned rows take a warp-per-row kernel.
#include "gather.cuh"

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

// ---------------------------------------------------------------- v2 fast (gather.cuh)
template <typename T, typename I>
static int emb_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    if (!emb_args_ok<T, I>(in, nin, out, nout))
        return kernel_fail(p, 1, "embedding v2: expected table[V,D], idx[N] -> out[N,D]");
    const int64_t n = in[1].shape[0], d = in[0].shape[1];
    if (n == 0 || d == 0)
        return 0;
    gather_v2((const T *)in[0].data, (const I *)in[1].data, (T *)out[0].data, in[0].shape[0], d, n,
              (cudaStream_t)st);
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
