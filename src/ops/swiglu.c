/* swiglu: y = silu(a) * b = a / (1 + exp(-a)) * b elementwise over
 * a[ROWS,COLS] and b[ROWS,COLS]: the SwiGLU forward of Liger Kernel and
 * TritonBench (torch.nn.functional.silu(a) * b).
 * Scalars: none.
 * Work: a and b read once, y written once; about 6 FLOPs an element
 * (negate, exp, add, divide, multiply) on the CUDA cores.
 * Baseline: none (no vendor library has a SwiGLU forward).
 * Edge semantics: the formula a / (1 + exp(-a)) * b, which is what
 * PyTorch's CUDA silu kernel computes: silu(NaN) = NaN; silu(+Inf) =
 * +Inf / 1 = +Inf, so +Inf * b is a signed Inf (NaN when b = 0);
 * silu(-Inf) = -Inf / (1 + Inf) = -Inf / Inf = NaN, so a = -Inf gives NaN
 * (x * sigmoid(x), as Liger's Triton kernel, gives -Inf * 0 = NaN too);
 * denormal a gives about a/2 * b. Edge rows are planted in a only.
 * GPU reference: swiglu.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_swiglu_reference(const DLTensor *in, int n_in, double *const *ref, const kgate_params *p,
                        kgate_stream s);

static void swiglu_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                       double *const *out)
{
    (void)p;
    int64_t n = s->d[0] * s->d[1];
    for (int64_t i = 0; i < n; i++) {
        double a = in[0][i];
        out[0][i] = a / (1.0 + exp(-a)) * in[1][i];
    }
}

const kg_op kg_op_swiglu = {
    .name = "swiglu",
    .summary = "SwiGLU forward: silu(a) * b elementwise",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_FP16, KG_BF16},
    .n_dtypes = 2,
    .n_suite_dtypes = 1,
    .presets = {{"small", {2, {1024, 4096}}},
                {"medium", {2, {4096, 8192}}},
                {"large", {2, {4096, 32768}}}},
    .n_presets = 3,
    .n_inputs = 2,
    .n_outputs = 1,
    .in = {{.name = "a", .rank = 2, .dim = {0, 1}, .lo = -4.0, .hi = 4.0},
           {.name = "b", .rank = 2, .dim = {0, 1}, .lo = -2.0, .hi = 2.0}},
    .out = {{.name = "y", .rank = 2, .dim = {0, 1}}},
    .n_scalars = 0,
    .dists = KG_D(OFFSET) | KG_D(WIDE),
    .reduction = 0,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 6,
    .min_rows = 6,
    .cpu_reference = swiglu_cpu,
    .reference = kg_swiglu_reference,
    .baselines = {NULL},
    .no_baseline_why = "no vendor library has a SwiGLU forward (cuDNN, cuBLASLt and CUB do not)",
    .fast = "v2",
    .edge_semantics = "a / (1 + exp(-a)) * b as PyTorch's CUDA silu: a = NaN gives NaN; "
                      "a = +Inf gives Inf * b (NaN when b = 0); a = -Inf gives -Inf / Inf = NaN; "
                      "denormal a gives about a/2 * b",
    /* silu(0) = 0; silu(1) * 2 = 2 / (1 + e^-1); silu(-1) * 0.5 = -0.5 / (1 + e);
     * silu(2) * -1 = -2 / (1 + e^-2); silu(-2) * 1 = -2 / (1 + e^2);
     * NaN -> NaN; +Inf * 2 = +Inf; -Inf -> NaN (computed in double) */
    .example = {{2, {2, 4}},
                {(const double[]){0, 1, -1, 2, -2, NAN, INFINITY, -INFINITY},
                 (const double[]){3, 2, 0.5, -1, 1, 1, 2, 1}},
                {(const double[]){0, 1.4621171572600098, -0.13447071068499755, -1.7615941559557646,
                                  -0.2384058440442351, NAN, INFINITY, NAN}}},
};
