// leaky_relu's GPU fp64 reference: a grid-stride loop,
// y = x >= 0 ? x : negative_slope * x in double (NaN fails the compare and
// stays NaN through the product).
#include "ref.cuh"

template <typename T>
__global__ void leaky_relu_reference_kernel(const T *x, double *ref, int64_t n, double slope)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        double v = ref_d(x[i]);
        ref[i] = v >= 0 ? v : slope * v;
    }
}

extern "C" int kg_leaky_relu_reference(const DLTensor *in, int n_in, double *const *ref,
                                       const kgate_params *p, kgate_stream st)
{
    if (n_in != 1)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = kg_tensor_numel(&in[0]);
    double slope = kgate_scalar_get(p, "negative_slope", 0.01);
    REF_DISPATCH(&in[0], (leaky_relu_reference_kernel<T><<<REF_GRID, REF_BLOCK, 0, s>>>(
                             (const T *)in[0].data, ref[0], n, slope)));
    return REF_LAUNCHED();
}
