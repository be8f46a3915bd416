// swiglu's GPU fp64 reference: a grid-stride loop, y = a / (1 + exp(-a)) * b
// in double (a = -Inf gives -Inf / Inf = NaN, as the CPU reference).
#include "ref.cuh"

template <typename T>
__global__ void swiglu_reference_kernel(const T *a, const T *b, double *ref, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        double v = ref_d(a[i]);
        ref[i] = v / (1.0 + exp(-v)) * ref_d(b[i]);
    }
}

extern "C" int kg_swiglu_reference(const DLTensor *in, int n_in, double *const *ref,
                                   const kgate_params *p, kgate_stream st)
{
    (void)p;
    if (n_in != 2)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = kg_tensor_numel(&in[0]);
    REF_DISPATCH(&in[0], (swiglu_reference_kernel<T><<<REF_GRID, REF_BLOCK, 0, s>>>(
                             (const T *)in[0].data, (const T *)in[1].data, ref[0], n)));
    return REF_LAUNCHED();
}
