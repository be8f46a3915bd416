/* matrix_transpose: y[COLS,ROWS] = x[ROWS,COLS]^T made contiguous, as
 * x.t().contiguous().
 * Inputs: x (data dtype, uniform in [-2, 2)). Output: y[COLS,ROWS] (data
 * dtype).
 * Scalars: none.
 * Work: x read once and y written once (the default model); no arithmetic
 * (0 FLOPs: the roof is the memory's).
 * Baselines: cuBLASLt's matrix transform (cublasLtMatrixTransform with
 * CUBLAS_OP_T, alpha 1, beta 0) and cuDNN's tensor transform
 * (cudnnTransformTensor from a row-major view to the transposed strides).
 * Edge rows: values are moved, not computed: a NaN, +-Inf, the equal row and
 * the denormals of x reappear as they are in the matching column of y.
 * GPU reference: matrix_transpose.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_matrix_transpose_reference(const DLTensor *in, int n_in, double *const *ref,
                                  const kgate_params *p, kgate_stream s);

static void matrix_transpose_cpu(const double *const *in, const kg_shape *s,
                                 const kgate_params *p, double *const *out)
{
    (void)p;
    int64_t rows = s->d[0], cols = s->d[1];
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            out[0][j * rows + i] = in[0][i * cols + j];
}

const kg_op kg_op_matrix_transpose = {
    .name = "matrix_transpose",
    .summary = "out-of-place transpose of a row-major matrix",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_FP16, KG_BF16, KG_FP32},
    .n_dtypes = 3,
    .presets = {{"small", {2, {1024, 1024}}},
                {"medium", {2, {4096, 4096}}},
                {"large", {2, {16384, 16384}}}},
    .n_presets = 3,
    .n_inputs = 1,
    .n_outputs = 1,
    .in = {{.name = "x", .rank = 2, .dim = {0, 1}, .lo = -2.0, .hi = 2.0}},
    .out = {{.name = "y", .rank = 2, .dim = {1, 0}}},
    .n_scalars = 0,
    .dists = KG_D(WIDE) | KG_D(BLOCKS),
    .reduction = 0,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 0,
    .min_rows = 6,
    .cpu_reference = matrix_transpose_cpu,
    .reference = kg_matrix_transpose_reference,
    .baselines = {"cublaslt-transpose", "cudnn-transform"},
    .fast = "v2",
    .edge_semantics = "values are moved, not computed: NaN, +-Inf, equal and denormal values "
                      "reappear unchanged in the transposed position",
    /* [[1, NaN, -Inf], [4.5, 0.25, +Inf]] -> [[1, 4.5], [NaN, 0.25], [-Inf, +Inf]] */
    .example = {{2, {2, 3}},
                {(const double[]){1, NAN, -INFINITY, 4.5, 0.25, INFINITY}},
                {(const double[]){1, 4.5, NAN, 0.25, -INFINITY, INFINITY}}},
};
