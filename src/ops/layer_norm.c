/* layer_norm: y = (x - mean) / sqrt(var + eps) * weight + bias over each row
 * of x[ROWS,COLS] (biased variance), as torch.nn.functional.layer_norm.
 * Scalars: eps (default 1e-5, required: one trial uses 0.5).
 * Work: x read and y written once, weight and bias read once; about 8 FLOPs
 * an element on the CUDA cores. Baseline: cuDNN graph API norm forward in
 * layer-norm mode (inference).
 * Edge rows: a NaN or +-Inf anywhere in a row makes the whole row NaN; a row
 * of equal values gives bias exactly (zero variance); denormal rows give
 * bias. GPU reference: layer_norm.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_layer_norm_reference(const DLTensor *in, int n_in, double *const *ref,
                            const kgate_params *p, kgate_stream s);

static void layer_norm_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                           double *const *out)
{
    int64_t rows = s->d[0], cols = s->d[1];
    double eps = kgate_scalar_get(p, "eps", 1e-5);
    for (int64_t i = 0; i < rows; i++) {
        const double *x = in[0] + i * cols;
        double mean = 0, var = 0;
        for (int64_t j = 0; j < cols; j++)
            mean += x[j];
        mean /= (double)cols;
        for (int64_t j = 0; j < cols; j++)
            var += (x[j] - mean) * (x[j] - mean);
        var /= (double)cols;
        double rstd = 1.0 / sqrt(var + eps);
        for (int64_t j = 0; j < cols; j++)
            out[0][i * cols + j] = (x[j] - mean) * rstd * in[1][j] + in[2][j];
    }
}

const kg_op kg_op_layer_norm = {
    .name = "layer_norm",
    .summary = "row-wise layer normalization with weight and bias",
    .family = KG_FAMILY_NORMALIZATION,
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_BF16, KG_FP16},
    .n_dtypes = 2,
    .presets = {{"small", {2, {1024, 1024}}},
                {"medium", {2, {4096, 4096}}},
                {"large", {2, {8192, 8192}}}},
    .n_presets = 3,
    .n_inputs = 3,
    .n_outputs = 1,
    .in = {{.name = "x", .rank = 2, .dim = {0, 1}, .lo = -2.0, .hi = 3.0},
           {.name = "weight", .rank = 1, .dim = {1}, .lo = 0.5, .hi = 1.5},
           {.name = "bias", .rank = 1, .dim = {1}, .lo = -0.5, .hi = 0.5}},
    .out = {{.name = "y", .rank = 2, .dim = {0, 1}}},
    .scalars = {{"eps", 1e-5, 0.5, 1, 0, "variance epsilon"}},
    .n_scalars = 1,
    .dists = KG_D(OFFSET) | KG_D(WIDE) | KG_D(BLOCKS),
    .reduction = 1,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 8,
    .min_rows = 6,
    .cpu_reference = layer_norm_cpu,
    .reference = kg_layer_norm_reference,
    .baselines = {"cudnn-layernorm"},
    .fast = "v2",
    .edge_semantics = "a NaN or +-Inf in a row makes the row NaN; equal rows give bias; "
                      "denormal rows give bias",
    /* rows [1,3] and [2,2]: mean 2 and var 1, then var 0; w = (1,2), b = 0.5,
     * eps 1e-5: (-1,1)/sqrt(1+1e-5) * (1,2) + 0.5, and b exactly */
    .example = {{2, {2, 2}},
                {(const double[]){1, 3, 2, 2}, (const double[]){1, 2}, (const double[]){0.5, 0.5}},
                {(const double[]){0.5 - 0.99999500003749969, 0.5 + 2 * 0.99999500003749969, 0.5,
                                  0.5}}},
};
