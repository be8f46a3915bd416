// rms_norm's GPU fp64 reference: one block per row, the sum of squares, then
// y = x * (1 / sqrt(mean square + eps)) * weight, as the CPU reference in
// rms_norm.c.
#include "ref.cuh"

template <typename T>
__global__ void rms_norm_reference_kernel(const T *x, const T *w, double *ref, int64_t cols,
                                          double eps)
{
    __shared__ double red[32];
    const T *xr = x + (size_t)blockIdx.x * cols;
    double *rr = ref + (size_t)blockIdx.x * cols;
    double q = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        double v = ref_d(xr[j]);
        q += v * v;
    }
    double r = 1.0 / sqrt(ref_block_sum(q, red) / (double)cols + eps);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        rr[j] = ref_d(xr[j]) * r * ref_d(w[j]);
}

extern "C" int kg_rms_norm_reference(const DLTensor *in, int n_in, double *const *ref,
                                     const kgate_params *p, kgate_stream st)
{
    if (n_in != 2)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    double eps = kgate_scalar_get(p, "eps", 1e-6);
    REF_DISPATCH(&in[0], (rms_norm_reference_kernel<T><<<(unsigned)rows, 256, 0, s>>>(
                             (const T *)in[0].data, (const T *)in[1].data, ref[0], cols, eps)));
    return REF_LAUNCHED();
}
