/* relu: y = max(x, 0) elementwise over x[ROWS,COLS], as torch.relu(x).
 * Scalars: none.
 * Work: x read once, y written once; 1 FLOP an element on the CUDA cores.
 * Baselines: cudnnActivationForward (CUDNN_ACTIVATION_RELU) and the cuDNN
 * graph API pointwise ReLU forward.
 * Edge semantics (PyTorch's): relu(NaN) = NaN (fmaxf(x, 0) would give 0:
 * wrong); relu(+Inf) = +Inf; relu(-Inf) = 0; positive denormals pass
 * unchanged (a kernel that flushes them is within the absolute tolerance);
 * the sign of a zero result is not compared.
 * GPU reference: relu.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_relu_reference(const DLTensor *in, int n_in, double *const *ref, const kgate_params *p,
                      kgate_stream s);

static void relu_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                     double *const *out)
{
    (void)p;
    int64_t n = s->d[0] * s->d[1];
    for (int64_t i = 0; i < n; i++)
        out[0][i] = in[0][i] < 0 ? 0.0 : in[0][i]; /* NaN < 0 is false: NaN stays */
}

const kg_op kg_op_relu = {
    .name = "relu",
    .summary = "elementwise rectified linear unit",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_FP16, KG_BF16, KG_FP32},
    .n_dtypes = 3,
    .n_suite_dtypes = 1,
    .presets = {{"small", {2, {1024, 1024}}},
                {"medium", {2, {4096, 4096}}},
                {"large", {2, {16384, 16384}}}},
    .n_presets = 3,
    .n_inputs = 1,
    .n_outputs = 1,
    .in = {{.name = "x", .rank = 2, .dim = {0, 1}, .lo = -2.0, .hi = 2.0}},
    .out = {{.name = "y", .rank = 2, .dim = {0, 1}}},
    .n_scalars = 0,
    .dists = KG_D(WIDE) | KG_D(SORTED) | KG_D(BLOCKS),
    .reduction = 0,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 1,
    .min_rows = 6,
    .cpu_reference = relu_cpu,
    .reference = kg_relu_reference,
    .baselines = {"cudnn-activation-relu", "cudnn-pointwise-relu"},
    .fast = "v2",
    .edge_semantics = "relu(NaN) = NaN, relu(+Inf) = +Inf, relu(-Inf) = 0; equal rows stay "
                      "equal; positive denormals pass unchanged",
    /* negatives and -Inf give 0; NaN and +Inf pass */
    .example = {{2, {2, 3}},
                {(const double[]){-1.5, 0, 2.5, NAN, INFINITY, -INFINITY}},
                {(const double[]){0, 0, 2.5, NAN, INFINITY, 0}}},
};
