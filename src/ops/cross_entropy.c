/* cross_entropy: loss[r] = logsumexp(logits[r,:]) - logits[r, target[r]] per
 * row of logits[ROWS,COLS], rows whose target equals ignore_index giving 0, as
 * torch.nn.functional.cross_entropy(logits, target, reduction='none',
 * ignore_index=ignore_index), i.e. -log_softmax(logits)[r, target[r]]
 * (nll_loss of log_softmax).
 * Inputs: logits (data dtype, uniform in [-4, 4)), target[ROWS] (int64, whole
 * numbers in [0, COLS)). Output: loss[ROWS] (data dtype).
 * Scalars: ignore_index (default -100, required: one trial uses 3). The
 * prepare hook (cross_entropy.cu) sets target[6] and target[7] to the call's
 * ignore_index so that every check has ignored rows.
 * Work: logits and targets read and losses written once (the default model);
 * about 4 FLOPs a logit on the CUDA cores. No library path: no vendor library
 * has a cross-entropy forward.
 * Edge rows (computed as PyTorch does, log_softmax then nll_loss, with the
 * max-subtracted formula): a NaN or a +Inf anywhere in the row gives a NaN
 * loss (exp(+Inf - +Inf) is NaN; PyTorch's F.cross_entropy gives NaN there
 * too, unlike torch.logsumexp, which would give +Inf); a -Inf target logit in
 * an otherwise finite row gives +Inf; an all -Inf row gives NaN; equal rows
 * give log(COLS); an ignored row gives 0 whatever its logits. A target
 * outside [0, COLS) that is not ignore_index (PyTorch raises) gives NaN.
 * GPU reference: cross_entropy.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_cross_entropy_reference(const DLTensor *in, int n_in, double *const *ref,
                               const kgate_params *p, kgate_stream s);
int kg_cross_entropy_prepare(DLTensor *in, int n_in, const kg_shape *shape,
                             const kgate_params *p, kgate_stream s);

static void cross_entropy_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                              double *const *out)
{
    int64_t rows = s->d[0], cols = s->d[1];
    double ignore = kgate_scalar_get(p, "ignore_index", -100);
    for (int64_t i = 0; i < rows; i++) {
        const double *x = in[0] + i * cols;
        double t = in[1][i];
        if (t == ignore) {
            out[0][i] = 0;
            continue;
        }
        if (!(t >= 0 && t < (double)cols)) {
            out[0][i] = NAN;
            continue;
        }
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++)
            mx = x[j] > mx || x[j] != x[j] ? x[j] : mx;
        for (int64_t j = 0; j < cols; j++)
            sum += exp(x[j] - mx);
        out[0][i] = -((x[(int64_t)t] - mx) - log(sum));
    }
}

const kg_op kg_op_cross_entropy = {
    .name = "cross_entropy",
    .summary = "per-row cross-entropy loss of logits against class targets",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "ROWSxCOLS",
    .n_dims = 2,
    .dtypes = {KG_FP32, KG_BF16},
    .n_dtypes = 2,
    .presets = {{"small", {2, {1024, 4096}}},
                {"medium", {2, {4096, 8192}}},
                {"large", {2, {4096, 32768}}}},
    .n_presets = 3,
    .n_inputs = 2,
    .n_outputs = 1,
    .in = {{.name = "logits", .rank = 2, .dim = {0, 1}, .lo = -4.0, .hi = 4.0},
           {.name = "target", .rank = 1, .dim = {0}, .type = KG_T_I64, .gen = KG_GEN_INDEX,
            .range_dim = 1}},
    .out = {{.name = "loss", .rank = 1, .dim = {0}}},
    .scalars = {{"ignore_index", -100, 3, 1, 1, "rows with this target give 0"}},
    .n_scalars = 1,
    .dists = KG_D(OFFSET) | KG_D(LARGE) | KG_D(WIDE) | KG_D(BLOCKS),
    .reduction = 1,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 4,
    .min_rows = 6,
    .cpu_reference = cross_entropy_cpu,
    .reference = kg_cross_entropy_reference,
    .prepare = kg_cross_entropy_prepare,
    .fast = "v2",
    .no_baseline_why = "no vendor library has a cross-entropy forward (cuDNN, cuBLASLt and CUB "
                       "do not)",
    .edge_semantics = "a NaN or +Inf in a row gives a NaN loss; a -Inf target logit gives +Inf; "
                      "an all -Inf row gives NaN; equal rows give log(COLS); rows whose target "
                      "is ignore_index give 0",
    /* [-inf, 0, ln 3] target 1: ln(0 + 1 + 3) - 0 = ln 4; [1, 1, 1] target 1:
     * ln 3; [0.5, -1.5, 2] target 2: ln(e^0.5 + e^-1.5 + e^2) - 2;
     * [2, NaN, 0] target 0: NaN; [NaN, 5, 7] target -100 (ignored): 0;
     * [-inf, 0, ln 3] target 0: +inf */
    .example = {{2, {6, 3}},
                {(const double[]){-INFINITY, 0, 1.0986122886681098, 1, 1, 1, 0.5, -1.5, 2, 2,
                                  NAN, 0, NAN, 5, 7, -INFINITY, 0, 1.0986122886681098},
                 (const double[]){1, 1, 2, 0, -100, 0}},
                {(const double[]){1.3862943611198906, 1.0986122886681098, 0.22580204923159933,
                                  NAN, 0, INFINITY}}},
};
