/* max_reduction: y[ROWS] = the largest value of each row of x[ROWS,COLS], as
 * torch.amax(x, dim=-1).
 * Scalars: dim (-1, fixed: kgate checks the last dimension).
 * Work: x read once, y written once; 1 FLOP (a compare) an element on the
 * CUDA cores. Baselines: CUB's segmented max and cuDNN's reduce tensor (max).
 * Edge rows (PyTorch's rule: NaN propagates): a row with a NaN gives NaN; a
 * +Inf gives +Inf; an all -Inf row gives -Inf; an equal row its value; a
 * denormal row its largest denormal.
 * GPU reference: max_reduction.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_max_reduction_reference(const DLTensor *in, int n_in, double *const *ref,
                               const kgate_params *p, kgate_stream s);

static void max_reduction_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                              double *const *out)
{
    (void)p;
    int64_t rows = s->d[0], cols = s->d[1];
    for (int64_t i = 0; i < rows; i++) {
        const double *x = in[0] + i * cols;
        double mx = -INFINITY;
        for (int64_t j = 0; j < cols; j++)
            mx = x[j] > mx || x[j] != x[j] ? x[j] : mx;
        out[0][i] = mx;
    }
}

const kg_op kg_op_max_reduction = {
    .name = "max_reduction",
    .summary = "row maximum over the last dimension",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_FP16, KG_BF16, KG_FP32},
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
    .dists = KG_D(OFFSET) | KG_D(LARGE) | KG_D(WIDE) | KG_D(SORTED) | KG_D(BLOCKS),
    .reduction = 1,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 1,
    .min_rows = 6,
    .cpu_reference = max_reduction_cpu,
    .reference = kg_max_reduction_reference,
    .baselines = {"cub-max", "cudnn-reduce-max"},
    .fast = "v2",
    .edge_semantics = "a row with a NaN gives NaN; +Inf gives +Inf; an all -Inf row gives -Inf; "
                      "equal rows give their value; denormal rows their largest denormal",
    /* [1, 3, 3] -> 3; [2, NaN, 5] -> NaN; [-inf, -inf, -inf] -> -inf;
     * [-1, -0.5, -2] -> -0.5; [7, inf, -inf] -> inf */
    .example = {{2, {5, 3}},
                {(const double[]){1, 3, 3, 2, NAN, 5, -INFINITY, -INFINITY, -INFINITY, -1, -0.5,
                                  -2, 7, INFINITY, -INFINITY}},
                {(const double[]){3, NAN, -INFINITY, -0.5, INFINITY}}},
};
