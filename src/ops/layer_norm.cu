// layer_norm's GPU fp64 reference: one block per row, two passes (mean,
// then centred squares), as the CPU reference in layer_norm.c.
#include "ref.cuh"

template <typename T>
__global__ void ln_reference(const T *x, const T *w, const T *b, double *ref, int64_t cols,
                             double eps)
{
    __shared__ double red[32];
    const T *xr = x + (size_t)blockIdx.x * cols;
    double *rr = ref + (size_t)blockIdx.x * cols;
    double s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        s += ref_d(xr[j]);
    double mean = ref_block_sum(s, red) / (double)cols;
    double q = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        double d = ref_d(xr[j]) - mean;
        q += d * d;
    }
    double var = ref_block_sum(q, red) / (double)cols;
    double rstd = 1.0 / sqrt(var + eps);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        rr[j] = (ref_d(xr[j]) - mean) * rstd * ref_d(w[j]) + ref_d(b[j]);
}

extern "C" int kg_layer_norm_reference(const DLTensor *in, int n_in, double *const *ref,
                                       const kgate_params *p, kgate_stream st)
{
    if (n_in != 3)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    double eps = kgate_scalar_get(p, "eps", 1e-5);
    REF_DISPATCH(&in[0], (ln_reference<T><<<(unsigned)rows, 256, 0, s>>>(
                             (const T *)in[0].data, (const T *)in[1].data, (const T *)in[2].data,
                             ref[0], cols, eps)));
    return REF_LAUNCHED();
}
