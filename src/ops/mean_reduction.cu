// mean_reduction's GPU fp64 reference: one block per row, the fp64 row sum
// divided by COLS, as the CPU reference in mean_reduction.c.
#include "ref.cuh"

template <typename T> __global__ void mean_reduction_reference_kernel(const T *x, double *ref, int64_t cols)
{
    __shared__ double red[32];
    const T *xr = x + (int64_t)blockIdx.x * cols;
    double s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        s += ref_d(xr[j]);
    s = ref_block_sum(s, red);
    if (threadIdx.x == 0)
        ref[blockIdx.x] = s / (double)cols;
}

extern "C" int kg_mean_reduction_reference(const DLTensor *in, int n_in, double *const *ref,
                                           const kgate_params *p, kgate_stream st)
{
    (void)p;
    if (n_in != 1)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t rows = ref_rows(&in[0]), cols = in[0].shape[in[0].ndim - 1];
    REF_DISPATCH(&in[0], (mean_reduction_reference_kernel<T><<<(unsigned)rows, 256, 0, s>>>(
                             (const T *)in[0].data, ref[0], cols)));
    return REF_LAUNCHED();
}
