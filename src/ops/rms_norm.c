/* rms_norm: y = x * rsqrt(mean(x^2) + eps) * weight over each row of
 * x[ROWS,COLS], as torch.nn.functional.rms_norm(x, (COLS,), weight, eps).
 * Inputs: x (data dtype, uniform in [-2, 3)), weight[COLS] (data dtype,
 * uniform in [0.5, 1.5)). Output: y[ROWS,COLS] (data dtype).
 * Scalars: eps (default 1e-6, required: one trial uses 0.5), added to the
 * mean square.
 * Work: x read and y written once, weight read once (the default model);
 * about 4 FLOPs an element (square, accumulate, two products) on the CUDA
 * cores. Baseline: the cuDNN graph API norm forward in RMS-norm mode
 * (inference).
 * Edge rows (PyTorch's formula, x times the reciprocal root): a NaN anywhere
 * in a row makes the whole row NaN; a +-Inf makes the mean square +Inf and
 * its reciprocal root 0, so the infinite entries give NaN (Inf x 0) and the
 * finite entries of that row give 0 (an all -Inf row is all NaN); a row of
 * equal values c gives weight x c / sqrt(c^2 + eps), about weight x sign(c);
 * a denormal row has a mean square of about 0 and gives x / sqrt(eps) x
 * weight (tiny values).
 * GPU reference: rms_norm.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_rms_norm_reference(const DLTensor *in, int n_in, double *const *ref,
                          const kgate_params *p, kgate_stream s);

static void rms_norm_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                         double *const *out)
{
    int64_t rows = s->d[0], cols = s->d[1];
    double eps = kgate_scalar_get(p, "eps", 1e-6);
    for (int64_t i = 0; i < rows; i++) {
        const double *x = in[0] + i * cols;
        double ss = 0;
        for (int64_t j = 0; j < cols; j++)
            ss += x[j] * x[j];
        double r = 1.0 / sqrt(ss / (double)cols + eps);
        for (int64_t j = 0; j < cols; j++)
            out[0][i * cols + j] = x[j] * r * in[1][j];
    }
}

const kg_op kg_op_rms_norm = {
    .name = "rms_norm",
    .summary = "row-wise root-mean-square normalization with weight",
    .family = KG_FAMILY_NORMALIZATION,
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_FP16, KG_BF16},
    .n_dtypes = 2,
    .n_suite_dtypes = 2,
    .presets = {{"small", {2, {1024, 1024}}},
                {"medium", {2, {4096, 4096}}},
                {"large", {2, {8192, 8192}}}},
    .n_presets = 3,
    .n_inputs = 2,
    .n_outputs = 1,
    .in = {{.name = "x", .rank = 2, .dim = {0, 1}, .lo = -2.0, .hi = 3.0},
           {.name = "weight", .rank = 1, .dim = {1}, .lo = 0.5, .hi = 1.5}},
    .out = {{.name = "y", .rank = 2, .dim = {0, 1}}},
    .scalars = {{"eps", 1e-6, 0.5, 1, 0, "added to the mean square"}},
    .n_scalars = 1,
    .dists = KG_D(OFFSET) | KG_D(WIDE) | KG_D(BLOCKS),
    .reduction = 1,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 4,
    .min_rows = 6,
    .cpu_reference = rms_norm_cpu,
    .reference = kg_rms_norm_reference,
    .baselines = {"cudnn-rmsnorm"},
    .fast = "v2",
    .edge_semantics = "a NaN in a row makes the row NaN; a +-Inf makes the mean square +Inf: "
                      "the infinite entries give NaN (Inf x 0) and the finite ones 0; equal rows "
                      "give about weight x sign; denormal rows give x / sqrt(eps) x weight",
    /* w = (0.5, 1.25), eps 1e-6. [1, 3]: mean square 5, r = 1/sqrt(5 + 1e-6)
     * = 0.44721355077860510, y = (0.5 r, 3.75 r); [NaN, 2]: NaN row;
     * [+Inf, 1]: mean square +Inf, r = 0, y = (Inf x 0, 1 x 0) = (NaN, 0) */
    .example = {{2, {3, 2}},
                {(const double[]){1, 3, NAN, 2, INFINITY, 1}, (const double[]){0.5, 1.25}},
                {(const double[]){0.22360677538930254, 1.6770508154197692, NAN, NAN, NAN, 0}}},
};
