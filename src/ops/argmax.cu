// argmax's GPU fp64 reference: one block per row; the NaN-propagating row
// maximum, as a double (the KG_CMP_ARG rule compares the value a kernel's
// index points at with it), as the CPU reference in argmax.c.
#include "ref.cuh"

template <typename T> __global__ void argmax_reference_kernel(const T *x, double *ref, int64_t cols)
{
    __shared__ double red[32];
    const T *xr = x + (int64_t)blockIdx.x * cols;
    double m = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        m = ref_max(m, ref_d(xr[j]));
    m = ref_block_max(m, red);
    if (threadIdx.x == 0)
        ref[blockIdx.x] = m;
}

extern "C" int kg_argmax_reference(const DLTensor *in, int n_in, double *const *ref,
                                   const kgate_params *p, kgate_stream st)
{
    (void)p;
    if (n_in != 1)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t rows = ref_rows(&in[0]), cols = in[0].shape[in[0].ndim - 1];
    REF_DISPATCH(&in[0], (argmax_reference_kernel<T><<<(unsigned)rows, 256, 0, s>>>(
                             (const T *)in[0].data, ref[0], cols)));
    return REF_LAUNCHED();
}
