/* softmax: y = exp(x - max) / sum(exp(x - max)) over the last dim of
 * x[ROWS,COLS], as torch.softmax(x, dim=-1).
 * Scalars: dim (-1, fixed: kgate checks the last dimension).
 * Work: x read and y written once; about 5 FLOPs an element on the CUDA
 * cores. Baseline: cudnnSoftmaxForward (accurate, instance mode).
 * Edge rows (the max-subtracted formula, as PyTorch and cuDNN): NaN or +Inf
 * in a row gives a NaN row; -Inf entries give 0; a row of only -Inf gives
 * NaN; equal rows give 1/COLS; denormal rows give 1/COLS.
 * GPU reference: softmax.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_softmax_reference(const DLTensor *in, int n_in, double *const *ref, const kgate_params *p,
                         kgate_stream s);

static void softmax_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                        double *const *out)
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
            out[0][i * cols + j] = exp(x[j] - mx) / sum;
    }
}

const kg_op kg_op_softmax = {
    .name = "softmax",
    .summary = "softmax over the last dimension",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_FP16, KG_BF16, KG_FP32},
    .n_dtypes = 3,
    .presets = {{"small", {2, {1024, 4096}}},
                {"medium", {2, {4096, 8192}}},
                {"large", {2, {4096, 32768}}}},
    .n_presets = 3,
    .n_inputs = 1,
    .n_outputs = 1,
    .in = {{.name = "x", .rank = 2, .dim = {0, 1}, .lo = -4.0, .hi = 4.0}},
    .out = {{.name = "y", .rank = 2, .dim = {0, 1}}},
    .scalars = {{"dim", -1, NAN, 0, 1, "the reduced dimension (fixed: the last)"}},
    .n_scalars = 1,
    .dists = KG_D(OFFSET) | KG_D(LARGE) | KG_D(WIDE) | KG_D(SORTED) | KG_D(BLOCKS),
    .reduction = 1,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 5,
    .min_rows = 6,
    .cpu_reference = softmax_cpu,
    .reference = kg_softmax_reference,
    .baselines = {"cudnn-softmax"},
    .fast = "v2",
    .edge_semantics = "NaN or +Inf in a row gives a NaN row; -Inf entries give 0; an all -Inf "
                      "row gives NaN; equal and denormal rows give 1/COLS",
    /* [0, ln 3] -> [0.25, 0.75]; a row with a NaN is all NaN */
    .example = {{2, {2, 2}},
                {(const double[]){0, 1.0986122886681098, 1, NAN}},
                {(const double[]){0.25, 0.75, NAN, NAN}}},
};
