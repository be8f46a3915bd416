/* argmax: i[ROWS] = the index of the largest value of each row of x[ROWS,COLS],
 * as torch.argmax(x, dim=-1) (int64 indices).
 * Scalars: dim (-1, fixed: kgate checks the last dimension).
 * Work: x read once, one int64 written per row; 1 FLOP (a compare) an element
 * on the CUDA cores. Baselines: CUB's segmented arg-max and cuDNN's reduce
 * tensor (max with indices).
 * Output compare (KG_CMP_ARG): the references write, per row, the row's
 * maximum VALUE (NaN when the row holds a NaN); a kernel's index passes when
 * x[row, index] equals it, so any index of a tied maximum is right.
 * Edge rows (PyTorch's rule: NaN is larger than everything): a row with a NaN
 * must give the index of a NaN; +Inf gives the index of the +Inf; an all -Inf
 * row may give any index; an equal row any index; denormal rows the index of
 * their largest denormal.
 * GPU reference: argmax.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_argmax_reference(const DLTensor *in, int n_in, double *const *ref, const kgate_params *p,
                        kgate_stream s);

static void argmax_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                       double *const *out)
{
    (void)p;
    int64_t rows = s->d[0], cols = s->d[1];
    for (int64_t i = 0; i < rows; i++) {
        const double *x = in[0] + i * cols;
        double mx = -INFINITY;
        for (int64_t j = 0; j < cols; j++)
            mx = x[j] > mx || x[j] != x[j] ? x[j] : mx;
        out[0][i] = mx; /* the value an index must point at (KG_CMP_ARG) */
    }
}

const kg_op kg_op_argmax = {
    .name = "argmax",
    .summary = "index of the row maximum over the last dimension",
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
    .out = {{.name = "i", .rank = 1, .dim = {0}, .type = KG_T_I64, .cmp = KG_CMP_ARG}},
    .scalars = {{"dim", -1, NAN, 0, 1, "the reduced dimension (fixed: the last)"}},
    .n_scalars = 1,
    .dists = KG_D(OFFSET) | KG_D(LARGE) | KG_D(WIDE) | KG_D(SORTED) | KG_D(BLOCKS),
    .reduction = 0,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 1,
    .min_rows = 6,
    .cpu_reference = argmax_cpu,
    .reference = kg_argmax_reference,
    .baselines = {"cub-argmax", "cudnn-reduce-argmax"},
    .fast = "v2",
    .edge_semantics = "a row with a NaN gives the index of a NaN; +Inf gives the index of the "
                      "+Inf; all -Inf, equal and denormal rows give any index of their maximum",
    /* the outputs are the values the index must point at (KG_CMP_ARG):
     * [1, 3, 3] -> 3 (index 1 or 2); [2, NaN, 5] -> NaN (index 1);
     * [-inf, -inf, -inf] -> -inf (any index); [-1, -0.5, -2] -> -0.5 (index 1);
     * [7, inf, NaN] -> NaN (index 2) */
    .example = {{2, {5, 3}},
                {(const double[]){1, 3, 3, 2, NAN, 5, -INFINITY, -INFINITY, -INFINITY, -1, -0.5,
                                  -2, 7, INFINITY, NAN}},
                {(const double[]){3, NAN, -INFINITY, -0.5, NAN}}},
};
