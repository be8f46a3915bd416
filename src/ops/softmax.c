/* softmax: y = exp(x - max) / sum(exp(x - max)) over the last dim of
 * x[ROWS,COLS], fp16 in and out.
 * Work: x read and y written once; about 5 FLOPs an element on the CUDA
 * cores. Baseline: cudnnSoftmaxForward (accurate, instance mode).
 * Edge rows (the max-subtracted formula, as PyTorch and cuDNN): NaN or +Inf
 * in a row gives a NaN row; -Inf entries give 0; equal rows give 1/COLS;
 * denormal rows give 1/COLS. */
#include <math.h>

#include "../core/op.h"
#include "../gpu/baseline.h"

int kg_softmax_reference(const DLTensor *in, int n_in, double *ref, const kgate_params *p,
                         kgate_stream s);

static void softmax_work(const kg_shape *s, kg_dtype dt, kg_work *w)
{
    double r = (double)s->d[0], c = (double)s->d[1];
    w->bytes = 2.0 * r * c * (double)kg_dtype_size(dt);
    w->flops = 5.0 * r * c;
}

static void softmax_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                        double *out)
{
    (void)p;
    int64_t rows = s->d[0], cols = s->d[1];
    for (int64_t i = 0; i < rows; i++) {
        const double *x = in[0] + i * cols;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++)
            mx = x[j] > mx || x[j] != x[j] ? x[j] : mx;
        for (int64_t j = 0; j < cols; j++)
            sum += exp(x[j] - mx);
        for (int64_t j = 0; j < cols; j++)
            out[i * cols + j] = exp(x[j] - mx) / sum;
    }
}

const kg_op kg_op_softmax = {
    .name = "softmax",
    .summary = "softmax over the last dimension",
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_FP16},
    .n_dtypes = 1,
    .presets = {{"small", {2, {1024, 4096}}},
                {"medium", {2, {4096, 8192}}},
                {"large", {2, {4096, 32768}}}},
    .n_presets = 3,
    .n_inputs = 1,
    .n_outputs = 1,
    .in = {{"x", 2, {0, 1, 0}, -4.0, 4.0}},
    .out = {{"y", 2, {0, 1, 0}, 0, 0}},
    .reduction = 1,
    .unit = KG_UNIT_FP32,
    .eps = 0,
    .min_rows = 5,
    .work = softmax_work,
    .cpu_reference = softmax_cpu,
    .reference = kg_softmax_reference,
    .baseline = &kg_baseline_cudnn_softmax,
    .fallback = "softmax_v2_fp16",
    .edge_semantics = "NaN or +Inf in a row gives a NaN row; -Inf entries give 0; equal and "
                      "denormal rows give 1/COLS",
};
