// The library fallback (docs/security.md, "Calling the library it is judged against"): a candidate that calls the
// vendor library it is judged against. calls_cublas computes matmul with
// cuBLAS (cublasGemmEx, fp32 accumulation) on the given stream: right, and as
// fast as the library, so only the names of the kernels it ran can tell;
// kgate must flag it library-kernels (kg_trace_vendor). In the control run
// (KG_ADV_HONEST=1) it calls cuBLAS too: that is what it is.
//
// With its default math mode, cuBLAS failed kgate's check on the H200 at an
// unaligned extra shape (1792x1175x1151: 3 elements of 2.1 million, about 7
// fp16 ulp off). cuBLAS may reduce split-K partial sums in the
// output type unless told not to, the likely cause, so it is told (not yet
// run on the H200 so).
#include <cublas_v2.h>

#include "adv.cuh"

extern "C" ADV_LAUNCH(adv_calls_cublas)
{
    ADV_EXPECT(2, 1);
    static cublasHandle_t h;
    if (!h) {
        if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
            h = NULL;
            return adv_fail(p, 2, "calls_cublas: cublasCreate failed");
        }
        if (cublasSetMathMode(h, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
                                                 CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) !=
            CUBLAS_STATUS_SUCCESS)
            return adv_fail(p, 2, "calls_cublas: cublasSetMathMode failed");
    }
    const int m = (int)in[0].shape[0], k = (int)in[0].shape[1], n = (int)in[1].shape[1];
    const float one = 1.f, zero = 0.f;
    // row-major C[m,n] = A[m,k] B[k,n] is column-major C^T = B^T A^T
    cublasStatus_t st = cublasSetStream(h, (cudaStream_t)stream);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, in[1].data, CUDA_R_16F, n, in[0].data,
                          CUDA_R_16F, k, &zero, out[0].data, CUDA_R_16F, n, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS)
        return adv_fail(p, 3, "calls_cublas: cublasGemmEx failed");
    return adv_launched(p);
}
