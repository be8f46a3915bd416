/* add: z = x + y elementwise over x[N] and y[N], as torch.add(x, y).
 * Scalars: none.
 * Work: x and y read once, z written once; 1 FLOP an element on the CUDA
 * cores. Baselines: cudnnOpTensor (CUDNN_OP_TENSOR_ADD), the cuDNN graph
 * API pointwise add, and cublasLtMatrixTransform as geam (1*x + 1*y).
 * Edge semantics (IEEE): NaN propagates; Inf + finite = Inf; -Inf + finite =
 * -Inf; denormals add as numbers (a kernel that flushes them is within the
 * absolute tolerance). Edge rows are planted in x only; y stays finite.
 * GPU reference: add.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_add_reference(const DLTensor *in, int n_in, double *const *ref, const kgate_params *p,
                     kgate_stream s);

static void add_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                    double *const *out)
{
    (void)p;
    int64_t n = s->d[0];
    for (int64_t i = 0; i < n; i++)
        out[0][i] = in[0][i] + in[1][i];
}

const kg_op kg_op_add = {
    .name = "add",
    .summary = "elementwise addition of two vectors",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "N",
    .n_dims = 1,
    .dtypes = {KG_FP16, KG_BF16, KG_FP32},
    .n_dtypes = 3,
    .n_suite_dtypes = 1,
    .presets = {{"small", {1, {1048576}}}, {"medium", {1, {16777216}}}, {"large", {1, {67108864}}}},
    .n_presets = 3,
    .n_inputs = 2,
    .n_outputs = 1,
    .in = {{.name = "x", .rank = 1, .dim = {0}, .lo = -2.0, .hi = 2.0},
           {.name = "y", .rank = 1, .dim = {0}, .lo = -2.0, .hi = 2.0}},
    .out = {{.name = "z", .rank = 1, .dim = {0}}},
    .n_scalars = 0,
    .dists = KG_D(OFFSET) | KG_D(WIDE) | KG_D(SORTED),
    .reduction = 0,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 1,
    .min_rows = 6,
    .cpu_reference = add_cpu,
    .reference = kg_add_reference,
    .baselines = {"cudnn-optensor-add", "cudnn-pointwise-add", "cublaslt-geam"},
    .fast = "v2",
    .edge_semantics = "IEEE addition: NaN propagates, +-Inf plus a finite value stays +-Inf, "
                      "equal and denormal values add as numbers",
    /* 1 + 0.5; -2 + 2 = 0; NaN + 1 = NaN; Inf + 1 = Inf */
    .example = {{1, {4}},
                {(const double[]){1, -2, NAN, INFINITY}, (const double[]){0.5, 2, 1, 1}},
                {(const double[]){1.5, 0, NAN, INFINITY}}},
};
