// index_select's GPU fp64 reference: one thread per element of out in a
// grid-stride loop, out[i, j] = src[idx[i], j] (NaN for an index outside
// [0, S)), as the CPU reference in index_select.c. embedding uses it too
// (gather.h).
#include "ref.cuh"

template <typename T, typename I>
__global__ void index_select_reference_kernel(const T *src, const I *idx, double *ref,
                                              int64_t rows, int64_t d, int64_t n)
{
    const int64_t total = n * d;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = e / d, j = e % d, k = (int64_t)idx[i];
        ref[e] = k >= 0 && k < rows ? ref_d(src[k * d + j]) : (double)NAN;
    }
}

extern "C" int kg_index_select_reference(const DLTensor *in, int n_in, double *const *ref,
                                         const kgate_params *p, kgate_stream st)
{
    (void)p;
    if (n_in != 2)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], d = in[0].shape[1], n = in[1].shape[0];
    REF_DISPATCH(&in[0],
                 REF_DISPATCH_INDEX(&in[1], (index_select_reference_kernel<T, I>
                                             <<<REF_GRID, REF_BLOCK, 0, s>>>(
                                                 (const T *)in[0].data, (const I *)in[1].data,
                                                 ref[0], rows, d, n))));
    return REF_LAUNCHED();
}
