// matrix_transpose's GPU fp64 reference: one thread per element of y in a
// grid-stride loop, y[j, i] = x[i, j], as the CPU reference in
// matrix_transpose.c.
#include "ref.cuh"

template <typename T>
__global__ void matrix_transpose_reference_kernel(const T *x, double *ref, int64_t rows,
                                                  int64_t cols)
{
    const int64_t n = rows * cols;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = e / rows, i = e % rows; // e indexes y[COLS, ROWS]
        ref[e] = ref_d(x[i * cols + j]);
    }
}

extern "C" int kg_matrix_transpose_reference(const DLTensor *in, int n_in, double *const *ref,
                                             const kgate_params *p, kgate_stream st)
{
    (void)p;
    if (n_in != 1)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    REF_DISPATCH(&in[0], (matrix_transpose_reference_kernel<T><<<REF_GRID, REF_BLOCK, 0, s>>>(
                             (const T *)in[0].data, ref[0], rows, cols)));
    return REF_LAUNCHED();
}
