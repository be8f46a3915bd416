/* leaky_relu: y = x if x >= 0 else negative_slope * x, elementwise over
 * x[ROWS,COLS], as torch.nn.functional.leaky_relu(x, negative_slope).
 * Scalars: negative_slope (default 0.01, required: one trial uses 0.2).
 * Work: x read once, y written once; 2 FLOPs an element (compare, multiply)
 * on the CUDA cores. Baseline: the cuDNN graph API pointwise ReLU forward
 * with a lower-clip slope.
 * Edge semantics (PyTorch's): leaky_relu(NaN) = NaN; +Inf stays +Inf; -Inf
 * gives -Inf (slope > 0); positive denormals pass unchanged (a kernel that
 * flushes them is within the absolute tolerance).
 * GPU reference: leaky_relu.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_leaky_relu_reference(const DLTensor *in, int n_in, double *const *ref, const kgate_params *p,
                            kgate_stream s);

static void leaky_relu_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                           double *const *out)
{
    double slope = kgate_scalar_get(p, "negative_slope", 0.01);
    int64_t n = s->d[0] * s->d[1];
    for (int64_t i = 0; i < n; i++) {
        double v = in[0][i];
        out[0][i] = v >= 0 ? v : slope * v; /* NaN >= 0 is false: slope * NaN = NaN */
    }
}

const kg_op kg_op_leaky_relu = {
    .name = "leaky_relu",
    .summary = "elementwise leaky rectified linear unit",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_FP16, KG_BF16, KG_FP32},
    .n_dtypes = 3,
    .n_suite_dtypes = 1,
    .presets = {{"small", {2, {1024, 1024}}},
                {"medium", {2, {4096, 4096}}},
                {"large", {2, {8192, 8192}}}},
    .n_presets = 3,
    .n_inputs = 1,
    .n_outputs = 1,
    .in = {{.name = "x", .rank = 2, .dim = {0, 1}, .lo = -2.0, .hi = 2.0}},
    .out = {{.name = "y", .rank = 2, .dim = {0, 1}}},
    .scalars = {{"negative_slope", 0.01, 0.2, 1, 0, "the slope for negative inputs"}},
    .n_scalars = 1,
    .dists = KG_D(WIDE) | KG_D(SORTED) | KG_D(BLOCKS),
    .reduction = 0,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 2,
    .min_rows = 6,
    .cpu_reference = leaky_relu_cpu,
    .reference = kg_leaky_relu_reference,
    .baselines = {"cudnn-pointwise-leaky-relu"},
    .fast = "v2",
    .edge_semantics = "leaky_relu(NaN) = NaN, +Inf stays +Inf, -Inf gives -Inf; equal rows "
                      "stay equal; positive denormals pass unchanged",
    /* negative_slope 0.01: -1.5 -> -0.015; 0 and 2.5 pass; NaN, +-Inf stay */
    .example = {{2, {2, 3}},
                {(const double[]){-1.5, 0, 2.5, NAN, INFINITY, -INFINITY}},
                {(const double[]){-0.015, 0, 2.5, NAN, INFINITY, -INFINITY}}},
};
