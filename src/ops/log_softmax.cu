// log_softmax's GPU fp64 reference: one block per row: the NaN-propagating
// max, then the sum of exponentials, then (x - max) - log(sum), as the CPU
// reference in log_softmax.c.
#include "ref.cuh"

template <typename T> __global__ void lsm_reference(const T *x, double *ref, int64_t cols)
{
    __shared__ double red[32];
    const T *xr = x + (int64_t)blockIdx.x * cols;
    double *rr = ref + (int64_t)blockIdx.x * cols;
    double m = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        m = ref_max(m, ref_d(xr[j]));
    m = ref_block_max(m, red);
    double s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        s += exp(ref_d(xr[j]) - m);
    const double lse = log(ref_block_sum(s, red));
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        rr[j] = (ref_d(xr[j]) - m) - lse;
}

extern "C" int kg_log_softmax_reference(const DLTensor *in, int n_in, double *const *ref,
                                        const kgate_params *p, kgate_stream st)
{
    (void)p;
    if (n_in != 1)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t rows = ref_rows(&in[0]), cols = in[0].shape[in[0].ndim - 1];
    REF_DISPATCH(&in[0], (lsm_reference<T><<<(unsigned)rows, 256, 0, s>>>((const T *)in[0].data,
                                                                           ref[0], cols)));
    return REF_LAUNCHED();
}
