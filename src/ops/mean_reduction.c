/* mean_reduction: y[ROWS] = the mean of each row of x[ROWS,COLS], as
 * torch.mean(x, dim=-1).
 * Scalars: dim (-1, fixed: kgate checks the last dimension).
 * Work: x read once, y written once; 1 FLOP (an add) an element on the CUDA
 * cores. Baselines: CUB's segmented sum (then a scale) and cuDNN's reduce
 * tensor (average).
 * Edge rows (IEEE sums, as PyTorch): a row with a NaN gives NaN; +Inf and
 * -Inf in one row give NaN; a +Inf alone gives +Inf, a -Inf alone -Inf; an
 * all -Inf row gives -Inf; an equal row its value; a denormal row the mean
 * of its denormals.
 * GPU reference: mean_reduction.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_mean_reduction_reference(const DLTensor *in, int n_in, double *const *ref,
                                const kgate_params *p, kgate_stream s);

static void mean_reduction_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                               double *const *out)
{
    (void)p;
    int64_t rows = s->d[0], cols = s->d[1];
    for (int64_t i = 0; i < rows; i++) {
        const double *x = in[0] + i * cols;
        double sum = 0;
        for (int64_t j = 0; j < cols; j++)
            sum += x[j];
        out[0][i] = sum / (double)cols;
    }
}

const kg_op kg_op_mean_reduction = {
    .name = "mean_reduction",
    .summary = "row mean over the last dimension",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_FP32, KG_FP16, KG_BF16},
    .n_dtypes = 3,
    .presets = {{"small", {2, {1024, 4096}}},
                {"medium", {2, {4096, 8192}}},
                {"large", {2, {8192, 32768}}}},
    .n_presets = 3,
    .n_inputs = 1,
    .n_outputs = 1,
    .in = {{.name = "x", .rank = 2, .dim = {0, 1}, .lo = -4.0, .hi = 4.0}},
    .out = {{.name = "y", .rank = 1, .dim = {0}}},
    .scalars = {{"dim", -1, NAN, 0, 1, "the reduced dimension (fixed: the last)"}},
    .n_scalars = 1,
    .dists = KG_D(OFFSET) | KG_D(WIDE) | KG_D(SORTED) | KG_D(BLOCKS),
    .reduction = 1,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 1,
    .min_rows = 6,
    .cpu_reference = mean_reduction_cpu,
    .reference = kg_mean_reduction_reference,
    .baselines = {"cub-mean", "cudnn-reduce-avg"},
    .fast = "v2",
    .edge_semantics = "a row with a NaN, or with both +Inf and -Inf, gives NaN; a lone +Inf gives "
                      "+Inf, a lone -Inf -Inf; an all -Inf row gives -Inf; equal rows give their "
                      "value; denormal rows the mean of their denormals",
    /* [1, 2, 4.5] -> 2.5; [inf, 1, -inf] -> NaN; [-inf, -inf, -inf] -> -inf;
     * [2, NaN, 0] -> NaN; [0.5, -1.5, 2] -> 1/3; [inf, 1, 2] -> inf */
    .example = {{2, {6, 3}},
                {(const double[]){1, 2, 4.5, INFINITY, 1, -INFINITY, -INFINITY, -INFINITY,
                                  -INFINITY, 2, NAN, 0, 0.5, -1.5, 2, INFINITY, 1, 2}},
                {(const double[]){2.5, NAN, -INFINITY, NAN, 0.33333333333333331, INFINITY}}},
};
