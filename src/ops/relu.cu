// relu's GPU fp64 reference: a grid-stride loop, y = x < 0 ? 0 : x in double
// (a NaN fails the compare and passes through, as torch.relu).
#include "ref.cuh"

template <typename T> __global__ void relu_reference_kernel(const T *x, double *ref, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        double v = ref_d(x[i]);
        ref[i] = v < 0 ? 0.0 : v;
    }
}

extern "C" int kg_relu_reference(const DLTensor *in, int n_in, double *const *ref,
                                 const kgate_params *p, kgate_stream st)
{
    (void)p;
    if (n_in != 1)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = kg_tensor_numel(&in[0]);
    REF_DISPATCH(&in[0], (relu_reference_kernel<T>
                          <<<REF_GRID, REF_BLOCK, 0, s>>>((const T *)in[0].data, ref[0], n)));
    return REF_LAUNCHED();
}
