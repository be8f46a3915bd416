// mul's GPU fp64 reference: a grid-stride loop, z = x * y in double.
#include "ref.cuh"

template <typename T>
__global__ void mul_reference_kernel(const T *x, const T *y, double *ref, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        ref[i] = ref_d(x[i]) * ref_d(y[i]);
}

extern "C" int kg_mul_reference(const DLTensor *in, int n_in, double *const *ref,
                                const kgate_params *p, kgate_stream st)
{
    (void)p;
    if (n_in != 2)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = kg_tensor_numel(&in[0]);
    REF_DISPATCH(&in[0], (mul_reference_kernel<T><<<REF_GRID, REF_BLOCK, 0, s>>>(
                             (const T *)in[0].data, (const T *)in[1].data, ref[0], n)));
    return REF_LAUNCHED();
}
