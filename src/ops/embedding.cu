// embedding's GPU fp64 reference: one thread per element of out in a
// grid-stride loop, out[n, j] = table[idx[n], j] (NaN for an id outside
// [0, V)), as the CPU reference in embedding.c.
#include "ref.cuh"

template <typename T, typename I>
__global__ void embedding_reference_kernel(const T *table, const I *idx, double *ref,
                                           int64_t vocab, int64_t d, int64_t n)
{
    const int64_t total = n * d;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = e / d, j = e % d, k = (int64_t)idx[i];
        ref[e] = k >= 0 && k < vocab ? ref_d(table[k * d + j]) : (double)NAN;
    }
}

extern "C" int kg_embedding_reference(const DLTensor *in, int n_in, double *const *ref,
                                      const kgate_params *p, kgate_stream st)
{
    (void)p;
    if (n_in != 2)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    const int64_t vocab = in[0].shape[0], d = in[0].shape[1], n = in[1].shape[0];
    REF_DISPATCH(&in[0],
                 REF_DISPATCH_INDEX(&in[1], (embedding_reference_kernel<T, I>
                                             <<<REF_GRID, REF_BLOCK, 0, s>>>(
                                                 (const T *)in[0].data, (const I *)in[1].data,
                                                 ref[0], vocab, d, n))));
    return REF_LAUNCHED();
}
