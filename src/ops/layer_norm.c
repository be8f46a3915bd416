/* layer_norm: y = (x - mean) / sqrt(var + eps) * weight + bias over each row
 * of x[ROWS,COLS] (biased variance), bf16 in and out, eps 1e-5.
 * Work: x read and y written once, weight and bias read once; about 8 FLOPs
 * an element on the CUDA cores. Baseline: cuDNN graph API norm forward in
 * layer-norm mode (inference); if the engine is unsupported, the bundled
 * optimized kernel stands in, flagged baseline-fallback.
 * Edge rows: a NaN or +-Inf anywhere in a row makes the whole row NaN; a row
 * of equal values gives bias exactly (zero variance); denormal rows give bias. */
#include <math.h>

#include "../core/op.h"
#include "../gpu/baseline.h"

int kg_layer_norm_reference(const DLTensor *in, int n_in, double *ref, const kgate_params *p,
                            kgate_stream s);

static void layer_norm_work(const kg_shape *s, kg_dtype dt, kg_work *w)
{
    double r = (double)s->d[0], c = (double)s->d[1];
    w->bytes = (2.0 * r * c + 2.0 * c) * (double)kg_dtype_size(dt);
    w->flops = 8.0 * r * c;
}

static void layer_norm_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                           double *out)
{
    int64_t rows = s->d[0], cols = s->d[1];
    for (int64_t i = 0; i < rows; i++) {
        const double *x = in[0] + i * cols;
        double mean = 0, var = 0;
        for (int64_t j = 0; j < cols; j++)
            mean += x[j];
        mean /= (double)cols;
        for (int64_t j = 0; j < cols; j++)
            var += (x[j] - mean) * (x[j] - mean);
        var /= (double)cols;
        double rstd = 1.0 / sqrt(var + p->eps);
        for (int64_t j = 0; j < cols; j++)
            out[i * cols + j] = (x[j] - mean) * rstd * in[1][j] + in[2][j];
    }
}

const kg_op kg_op_layer_norm = {
    .name = "layer_norm",
    .summary = "row-wise layer normalization with weight and bias",
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_BF16},
    .n_dtypes = 1,
    .presets = {{"small", {2, {1024, 1024}}},
                {"medium", {2, {4096, 4096}}},
                {"large", {2, {8192, 8192}}}},
    .n_presets = 3,
    .n_inputs = 3,
    .n_outputs = 1,
    .in = {{"x", 2, {0, 1, 0}, -2.0, 3.0},
           {"weight", 1, {1, 0, 0}, 0.5, 1.5},
           {"bias", 1, {1, 0, 0}, -0.5, 0.5}},
    .out = {{"y", 2, {0, 1, 0}, 0, 0}},
    .reduction = 1,
    .unit = KG_UNIT_FP32,
    .eps = 1e-5,
    .min_rows = 5,
    .work = layer_norm_work,
    .cpu_reference = layer_norm_cpu,
    .reference = kg_layer_norm_reference,
    .baseline = &kg_baseline_cudnn_layer_norm,
    .fallback = "layer_norm_v2_bf16",
    .edge_semantics = "a NaN or +-Inf in a row makes the row NaN; equal rows give bias; "
                      "denormal rows give bias",
};
