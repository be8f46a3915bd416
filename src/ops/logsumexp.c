/* logsumexp: y[ROWS] = log(sum(exp(x))) over each row of x[ROWS,COLS], as
 * torch.logsumexp(x, dim=-1), computed (as PyTorch does) with the row maximum
 * m as a shift: m + log(sum(exp(x - m))), where an infinite m shifts by 0.
 * Scalars: dim (-1, fixed: kgate checks the last dimension).
 * Work: x read once, y written once; about 4 FLOPs an element (a subtract,
 * an exponential, an add, a compare) on the CUDA cores. Baseline: CUB's
 * segmented reduction with a (max, sum) pair operator.
 * Edge rows: a row with a NaN gives NaN; a +Inf (without a NaN) gives +Inf;
 * -Inf entries add 0; an all -Inf row gives -Inf (log 0); an equal row
 * gives v + log(COLS); a denormal row about log(COLS).
 * GPU reference: logsumexp.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_logsumexp_reference(const DLTensor *in, int n_in, double *const *ref,
                           const kgate_params *p, kgate_stream s);

static void logsumexp_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                          double *const *out)
{
    (void)p;
    int64_t rows = s->d[0], cols = s->d[1];
    for (int64_t i = 0; i < rows; i++) {
        const double *x = in[0] + i * cols;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++)
            mx = x[j] > mx || x[j] != x[j] ? x[j] : mx;
        double shift = isinf(mx) ? 0.0 : mx; /* PyTorch: an infinite max shifts by 0 */
        for (int64_t j = 0; j < cols; j++)
            sum += exp(x[j] - shift);
        out[0][i] = log(sum) + shift;
    }
}

const kg_op kg_op_logsumexp = {
    .name = "logsumexp",
    .summary = "log of the sum of exponentials over the last dimension",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_FP32, KG_FP16, KG_BF16},
    .n_dtypes = 3,
    .presets = {{"small", {2, {1024, 4096}}},
                {"medium", {2, {4096, 8192}}},
                {"large", {2, {8192, 16384}}}},
    .n_presets = 3,
    .n_inputs = 1,
    .n_outputs = 1,
    .in = {{.name = "x", .rank = 2, .dim = {0, 1}, .lo = -4.0, .hi = 4.0}},
    .out = {{.name = "y", .rank = 1, .dim = {0}}},
    .scalars = {{"dim", -1, NAN, 0, 1, "the reduced dimension (fixed: the last)"}},
    .n_scalars = 1,
    .dists = KG_D(OFFSET) | KG_D(LARGE) | KG_D(WIDE) | KG_D(BLOCKS),
    .reduction = 1,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 4,
    .min_rows = 6,
    .cpu_reference = logsumexp_cpu,
    .reference = kg_logsumexp_reference,
    .baselines = {"cub-logsumexp"},
    .fast = "v2",
    .edge_semantics = "a row with a NaN gives NaN; a +Inf (without NaN) gives +Inf; -Inf entries "
                      "add nothing; an all -Inf row gives -Inf; equal rows give v + log(COLS); "
                      "denormal rows about log(COLS)",
    /* [0, ln 2, ln 5] -> ln(1 + 2 + 5) = ln 8; [-inf, -inf, -inf] -> -inf;
     * [1, inf, 2] -> inf; [2, NaN, 0] -> NaN; [-inf, 0, 0] -> ln 2;
     * [inf, NaN, 1] -> NaN */
    .example = {{2, {6, 3}},
                {(const double[]){0, 0.69314718055994531, 1.6094379124341003, -INFINITY,
                                  -INFINITY, -INFINITY, 1, INFINITY, 2, 2, NAN, 0, -INFINITY, 0,
                                  0, INFINITY, NAN, 1}},
                {(const double[]){2.0794415416798357, -INFINITY, INFINITY, NAN,
                                  0.69314718055994531, NAN}}},
};
