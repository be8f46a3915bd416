// index_select: out[i, :] = src[idx[i], :] (torch.index_select(src, 0, idx)),
// src[S,D], idx[I] (int64, or int32 for the _i32 variants), out[I,D]. Rows
// are copied bit for bit; an index outside [0, S) (PyTorch raises) gives a
// NaN row instead of a fault.
//
// The fp64 reference is src/ops/index_select.cu.
//
// v1 naive (RC2a, RC1): one thread per output row copies its D elements one
//            at a time, so only I threads exist (a few blocks for the
//            presets), and at each step the 32 lanes of a warp touch 32 rows,
//            D elements apart in out and scattered in src: every warp access
//            is 32 separate sectors for 64 or 128 useful bytes. The labels'
//            order is measured (kernels/ablation/single_fix.cu, on the H200,
//            fp16 65536 x 2048, 4096 rows): v1 838.0 us; coalesced
//            with as many threads 213.3 us; 64 threads a row but still
//            uncoalesced 135.3 us, so the launch configuration (RC2a) costs
//            more than the access pattern (RC1).
// v2 fast:   the row gather of gather.cuh (shared with embedding): a warp per
//            segment of an output row, 4 x 16-byte loads in flight per lane,
//            streaming stores; unaligned rows take a warp-per-row kernel.
#include "gather.cuh"

template <typename T, typename I>
static bool isel_args_ok(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    return nin == 2 && nout == 1 && dl_is<T>(&in[0], 2) && dl_is<I>(&in[1], 1) &&
           dl_is<T>(&out[0], 2) && out[0].shape[0] == in[1].shape[0] &&
           out[0].shape[1] == in[0].shape[1];
}

// ---------------------------------------------------------------- v1 naive
template <typename T, typename I>
__global__ void isel_v1_rows(const T *__restrict__ src, const I *__restrict__ idx,
                             T *__restrict__ out, int64_t rows, int64_t d, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t k = (int64_t)idx[i];
        T *o = out + i * d;
        if (k < 0 || k >= rows) {
            for (int64_t j = 0; j < d; j++)
                o[j] = from_f<T>(NAN);
            continue;
        }
        const T *r = src + k * d;
        for (int64_t j = 0; j < d; j++) // lanes are D elements apart at every step
            o[j] = r[j];
    }
}

template <typename T, typename I>
static int isel_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                   kgate_stream st)
{
    if (!isel_args_ok<T, I>(in, nin, out, nout))
        return kernel_fail(p, 1, "index_select v1: expected src[S,D], idx[I] -> out[I,D]");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], d = in[0].shape[1], n = in[1].shape[0];
    if (n == 0 || d == 0)
        return 0;
    int64_t blocks = (n + 255) / 256;
    if (blocks > (1 << 24))
        blocks = 1 << 24;
    isel_v1_rows<T, I><<<(unsigned)blocks, 256, 0, s>>>(
        (const T *)in[0].data, (const I *)in[1].data, (T *)out[0].data, rows, d, n);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast (gather.cuh)
template <typename T, typename I>
static int isel_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                   kgate_stream st)
{
    if (!isel_args_ok<T, I>(in, nin, out, nout))
        return kernel_fail(p, 1, "index_select v2: expected src[S,D], idx[I] -> out[I,D]");
    const int64_t n = in[1].shape[0], d = in[0].shape[1];
    if (n == 0 || d == 0)
        return 0;
    gather_v2((const T *)in[0].data, (const I *)in[1].data, (T *)out[0].data, in[0].shape[0], d, n,
              (cudaStream_t)st);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

#define ISEL_V1_SUM "one thread an output row, element by element: only as many threads as rows, lanes D apart (RC2a, RC1)"
#define ISEL_V2_SUM "a warp per row segment, 4 x 16-byte loads in flight per lane, streaming stores"
static const kgate_kernel variants[] = {
    {"index_select_v1_fp16", "index_select", "fp16", NULL, 2, 1, isel_v1<__half, int64_t>,
     ISEL_V1_SUM, NULL, NULL},
    {"index_select_v2_fp16", "index_select", "fp16", NULL, 2, 1, isel_v2<__half, int64_t>,
     ISEL_V2_SUM, NULL, NULL},
    {"index_select_v2_fp16_i32", "index_select", "fp16", "int32", 2, 1,
     isel_v2<__half, int32_t>, ISEL_V2_SUM, NULL, NULL},
    {"index_select_v1_bf16", "index_select", "bf16", NULL, 2, 1,
     isel_v1<__nv_bfloat16, int64_t>, ISEL_V1_SUM, NULL, NULL},
    {"index_select_v2_bf16", "index_select", "bf16", NULL, 2, 1,
     isel_v2<__nv_bfloat16, int64_t>, ISEL_V2_SUM, NULL, NULL},
    {"index_select_v2_bf16_i32", "index_select", "bf16", "int32", 2, 1,
     isel_v2<__nv_bfloat16, int32_t>, ISEL_V2_SUM, NULL, NULL},
    {"index_select_v1_fp32", "index_select", "fp32", NULL, 2, 1, isel_v1<float, int64_t>,
     ISEL_V1_SUM, NULL, NULL},
    {"index_select_v2_fp32", "index_select", "fp32", NULL, 2, 1, isel_v2<float, int64_t>,
     ISEL_V2_SUM, NULL, NULL},
    {"index_select_v2_fp32_i32", "index_select", "fp32", "int32", 2, 1, isel_v2<float, int32_t>,
     ISEL_V2_SUM, NULL, NULL},
};
KG_EXPORT_VARIANTS(index_select, variants)
